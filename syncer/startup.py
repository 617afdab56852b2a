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

Once running, the kubeconfig files the clients came from are read again every `CHECK_INTERVAL` seconds
(`watch_kubeconfigs`: an in-place write, an atomic rename, a Secret volume's symlink swap). A file whose
content changed and loads (a rotated certificate or token, another server) makes `run` stop the syncer and
start a new one with new clients, in the same process: the caches are listed again and `/readyz` is 503
until the first reconcile is done again. A changed file that cannot be used is logged, and the clients in
use are kept. The in-cluster service account needs no watch: the client library reads its token file again
every minute. SIGHUP (`wake`) ends the wait of either loop at once: the files are read again now.

Configuration mistakes that waiting cannot fix (an invalid vcluster.yaml, policy or flag) still exit 2
before any of this.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from syncer.kube.client import KubeClient, KubeconfigError, kubeconfig_fingerprint, sleep_or_stop
from syncer.kube.clock import Clock, RealClock
from syncer.manager import Syncer
from syncer.metrics import Metrics

log = logging.getLogger(__name__)

INITIAL_DELAY = 0.5  # seconds before the first retry; doubled after each failed round
MAX_DELAY = 5.0  # seconds between retries at most: a file that appears is used within this long
WARN_AFTER = 30.0  # seconds of waiting after which the reasons are logged at warning

CHECK_INTERVAL = 5.0  # seconds between two reads of the kubeconfig files while running

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

    async def clients(self, loaders: Mapping[str, Loader], stop: asyncio.Event,
                      wake: asyncio.Event | None = None) -> dict[str, KubeClient] | None:
        """Load a client per cluster, retrying those that raise KubeconfigError with backoff until each works.

        Args:
            loaders: per cluster name, what builds its client (KubeClient.from_kubeconfig or in_cluster);
                one that raises KubeconfigError is retried; any other error is raised.
            stop: set on SIGTERM/SIGINT: the wait ends at once.
            wake: set on SIGHUP: the next try is made at once (this clears it; set before the first try: nothing
                more, that try reads the files anyway).
        Returns:
            the clients by cluster name, or None when `stop` was set first (clients already built are closed).
        """
        loaded: dict[str, KubeClient] = {}
        logged: dict[str, tuple[str, bool]] = {}  # what was logged per cluster: the text, and at warning
        started, delay = self.clock.now(), INITIAL_DELAY
        if wake is not None:
            wake.clear()
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
            if await _pause(delay, stop, wake, self.clock):
                for client in loaded.values():
                    await client.close()
                return None
            delay = min(delay * 2, MAX_DELAY)


async def _pause(delay: float, stop: asyncio.Event, wake: asyncio.Event | None, clock: Clock | None) -> bool:
    """`sleep_or_stop`, also ended by `wake` (which this clears). Returns True when stopped."""
    if wake is None:
        return await sleep_or_stop(delay, stop, clock)
    waits = [asyncio.ensure_future(sleep_or_stop(delay, stop, clock)), asyncio.ensure_future(wake.wait())]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
    wake.clear()
    return stop.is_set()


async def watch_kubeconfigs(clients: Mapping[str, KubeClient], halt: asyncio.Event, clock: Clock | None = None,
                            *, interval: float = CHECK_INTERVAL, wake: asyncio.Event | None = None) -> None:
    """Read the kubeconfig files `clients` were loaded from (KubeClient.kubeconfig), and the certificate files
    they name (`kubeconfig_fingerprint`), every `interval` seconds (on `clock`) until `halt` is set, and at once
    when `wake` is set (SIGHUP; this clears it).

    The first file whose content (or that of a certificate file it names) differs from what its client was
    loaded from, and that loads, sets `halt` and ends the watch (the caller starts again with new clients). A
    changed file that cannot be used (half written, invalid, unreadable) is logged at warning once per content,
    and the clients in use are kept. A rotated `tokenFile` or an `exec` plugin's credential is refreshed in place
    by the client (`client.CREDENTIAL_REFRESH`), with no restart.

    Reading a small file every few seconds, rather than an inotify watch: it sees an in-place write, an atomic
    rename and a Secret volume's `..data` symlink swap alike, needs no right to list the folder, and costs
    nothing measurable, where a watchfiles watch wakes the interpreter 20 times a second to look at its stop
    event (0.02 to 0.1% of a core measured here, against an idle budget of 0.1%). controller-runtime's
    certwatcher reads its files again on a timer too (pkg/certwatcher/certwatcher.go, defaultWatchInterval
    10 s, beside an fsnotify watch).
    """
    files = {name: c.kubeconfig for name, c in clients.items() if c.kubeconfig is not None}
    refused: dict[str, bytes] = {}
    while files and not await _pause(interval, halt, wake, clock):
        for name, (path, loaded) in files.items():
            try:
                text = await asyncio.to_thread(kubeconfig_fingerprint, path)
            except OSError:
                text = b""  # gone or unreadable: tried below, which says why
            if text == loaded or refused.get(name) == text:
                continue
            try:
                trial = await KubeClient.from_kubeconfig(path, name)
            except KubeconfigError as e:
                refused[name] = text
                log.warning("waiting for %s to be usable again: %s (the configuration read before stays in use)",
                            e.source, e.reason)
                continue
            await trial.close()
            log.info("the %s kubeconfig %s changed; starting the syncer again with it", name, path)
            halt.set()
            return
    await halt.wait()
