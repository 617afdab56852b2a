"""Start-up that waits instead of crashing (issue 23): the process as its probes see it before the syncer runs.

The sidecar starts with the vcluster pod, usually before vcluster has written the virtual cluster's kubeconfig,
and it may not be allowed to read that file until the pod is set up right (`/data/vcluster/admin.conf` is
written by vcluster, root-owned, mode 0600). A process that exited would crash-loop, and a crash-looping
container makes the whole vcluster pod unready, which takes the tenants' API server out of its Service. So
`run` serves its probes first and then loads the cluster configurations, retrying with backoff
(`INITIAL_DELAY` doubling to `MAX_DELAY` seconds, on the injected clock) until each can be used:

- `/healthz` is 200 while it waits (the waiting loop runs; the liveness probe must not restart it);
- `/readyz` is 503 with one line per configuration it waits for, as the log says it:
  `waiting for the virtual kubeconfig /data/vcluster/admin.conf: [Errno 13] Permission denied`;
- the log has a line per change of reason (info), and once the wait has lasted `WARN_AFTER` seconds the
  current reasons again at warning (an operator must act), not one per retry;
- then the syncer starts and the probes report it. An API server that is down is not waited for here: the
  syncer's informers retry their lists with backoff and `/readyz` names them meanwhile.

Once running, the kubeconfig files the clients came from are watched (`watch_kubeconfigs`: an in-place write,
an atomic rename, a Secret volume's symlink swap). A file whose content changed and loads (a rotated
certificate or token, another server) makes `run` stop the syncer and start a new one with new clients: the
caches are listed again and `/readyz` is 503 until the first reconcile is done again. A changed file that
cannot be used is logged, and the clients in use are kept. The in-cluster service account needs no watch:
its token file is read again every minute.

Configuration mistakes that waiting cannot fix (an invalid vcluster.yaml, policy or flag) still exit 2
before any of this.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping

from syncer.kube.client import KubeClient, KubeconfigError, sleep_or_stop
from syncer.kube.clock import Clock, RealClock
from syncer.manager import Syncer
from syncer.metrics import Metrics

log = logging.getLogger(__name__)

INITIAL_DELAY = 0.5  # seconds before the first retry; doubled after each failed round
MAX_DELAY = 5.0  # seconds between retries at most: a file that appears is used within this long
WARN_AFTER = 30.0  # seconds of waiting after which the reasons are logged at warning

READY_MS = 1000  # watchfiles' wait in its thread (milliseconds): the first wake-up comes at most this late

Loader = Callable[[], Awaitable[KubeClient]]


class Startup:
    """The process while it waits for its clusters' configurations, then the syncer it started.

    Args:
        metrics: the registry `/metrics` serves from the start (the syncer is then built with it).
        clock: what the backoff waits on (default the real one; tests pass a FakeClock).
    Attributes:
        waiting: per cluster (`virtual`, `host`), the error that keeps it waiting (what and why, as `/readyz`
            shows it).
        syncer: the running syncer once every configuration could be loaded (set by the caller).
    """

    def __init__(self, metrics: Metrics, clock: Clock | None = None) -> None:
        self.metrics = metrics
        self.clock = clock or RealClock()
        self.waiting: dict[str, KubeconfigError] = {}
        self.syncer: Syncer | None = None

    @property
    def healthy(self) -> bool:
        """True while waiting (the loop runs), then the syncer's own health."""
        return self.syncer.healthy if self.syncer is not None else True

    @property
    def ready(self) -> bool:
        """Never while waiting; then the syncer's readiness."""
        return self.syncer is not None and self.syncer.ready

    def readiness_detail(self) -> list[str]:
        """Why not ready: each configuration waited for (`waiting for <what>: <why>`), then the syncer's reasons."""
        if self.syncer is not None:
            return self.syncer.readiness_detail()
        return [f"waiting for {e}" for e in self.waiting.values()] or ["loading the cluster configurations"]

    async def clients(self, loaders: Mapping[str, Loader], stop: asyncio.Event) -> dict[str, KubeClient] | None:
        """Load a client per cluster, retrying those that raise KubeconfigError with backoff until each works.

        Args:
            loaders: per cluster name, what builds its client (KubeClient.from_kubeconfig or in_cluster);
                one that raises KubeconfigError is retried; any other error is raised.
            stop: set on SIGTERM/SIGINT: the wait ends at once.
        Returns:
            the clients by cluster name, or None when `stop` was set first (clients already built are closed).
        """
        loaded: dict[str, KubeClient] = {}
        logged: dict[str, tuple[str, bool]] = {}  # what was logged per cluster: the text, and at warning
        started, delay = self.clock.now(), INITIAL_DELAY
        while True:
            for name, load in loaders.items():
                if name in loaded:
                    continue
                try:
                    loaded[name] = await load()
                except KubeconfigError as e:
                    self.waiting[name] = e
                    continue
                if name in self.waiting:
                    log.info("%s can be used now", self.waiting.pop(name).source)
            if len(loaded) == len(loaders):
                return loaded
            late = self.clock.now() - started >= WARN_AFTER
            for name, error in self.waiting.items():
                text = str(error)
                if logged.get(name) != (text, late):
                    logged[name] = (text, late)
                    if late:
                        log.warning("waiting for %s (for %.0f s now; retrying every %.0f s)", text,
                                    self.clock.now() - started, MAX_DELAY)
                    else:
                        log.info("waiting for %s (retrying with backoff)", text)
            if await sleep_or_stop(delay, stop, self.clock):
                for client in loaded.values():
                    await client.close()
                return None
            delay = min(delay * 2, MAX_DELAY)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _folders(paths: list[str]) -> tuple[list[str], list[str]]:
    """The folders of `paths`: those this process may list (inotify needs that), and the others."""
    folders = sorted({os.path.dirname(os.path.abspath(path)) for path in paths})
    return ([f for f in folders if os.access(f, os.R_OK | os.X_OK)],
            [f for f in folders if not os.access(f, os.R_OK | os.X_OK)])


async def watch_kubeconfigs(clients: Mapping[str, KubeClient], halt: asyncio.Event, *, debounce_ms: int = 200) -> None:
    """Watch the kubeconfig files `clients` were loaded from (KubeClient.kubeconfig) until `halt` is set.

    The first file whose content differs from what its client was loaded from, and that loads, sets `halt` and
    ends the watch (the caller starts again with new clients). A changed file that cannot be used (half
    written, invalid, unreadable) is logged at warning once per content, and the watch goes on; the clients in
    use are kept. Each file's folder is watched, not recursively, with watchfiles (inotify): an in-place write,
    an atomic rename and a Secret volume's `..data` symlink swap all change it; changes to other files there
    (vcluster's data folder holds more) wake nothing. As in config/reload.py, the files are read once more at
    the first wake-up, so a change made while the watch was being set up is seen. A folder that cannot be
    watched (the process may enter it but not list it) is logged at info and left out.
    """
    files = {name: c.kubeconfig for name, c in clients.items() if c.kubeconfig is not None}
    if not files:
        await halt.wait()
        return
    from watchfiles import awatch

    folders, hidden = _folders([path for path, _ in files.values()])
    for folder in hidden:
        log.info("not watching %s for changes (this process may not list it): a changed kubeconfig there is used "
                 "after a restart", folder)
    if not folders:
        await halt.wait()
        return
    names = {os.path.basename(path) for path, _ in files.values()}

    def ours(_: object, changed: str) -> bool:  # the files, or a Secret volume's `..data` and timestamped folders
        name = os.path.basename(changed)
        return name in names or name.startswith("..")

    refused: dict[str, bytes] = {}
    up = False
    try:
        async for changes in awatch(*folders, stop_event=halt, debounce=debounce_ms, recursive=False,
                                    watch_filter=ours, yield_on_timeout=True, rust_timeout=READY_MS):
            if not changes and up:
                continue
            up = True
            for name, (path, loaded) in files.items():
                try:
                    text = await asyncio.to_thread(_read, path)
                except OSError:
                    text = b""  # gone or unreadable: tried below, which says why
                if text == loaded or refused.get(name) == text:
                    continue
                try:
                    trial = await KubeClient.from_kubeconfig(path, name)
                except KubeconfigError as e:
                    refused[name] = text
                    log.warning("waiting for %s to be usable again: %s (the configuration read before stays in "
                                "use)", e.source, e.reason)
                    continue
                await trial.close()
                log.info("the %s kubeconfig %s changed; starting the syncer again with it", name, path)
                halt.set()
                return
    except OSError as e:  # gone, or no inotify watches left
        log.info("not watching %s for changes (%s): a changed kubeconfig is used after a restart",
                 ", ".join(folders), e)
        await halt.wait()
