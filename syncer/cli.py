"""Command line: `runtimeclass-syncer run | validate | policy | demo` (behaviour.md sections 6 and 7).

Exit status: 0 on success and on a clean stop (SIGTERM/SIGINT, also one that came while `run` was starting:
`EarlySignals`); 2 for an invalid configuration, policy
or command line (reported before any API request); 1 when `run` cannot bind its probe or metrics port, and
when `policy` cannot reach the host or the host shows a problem of the policy (an unusable default). `run` does
not exit for a kubeconfig it cannot read yet, an API server that is down or a lost lease (it campaigns again as a
follower): it waits, saying so in its log and in `/readyz` (syncer/startup.py). SIGHUP makes `run` read its policy
file and kubeconfig files again at once (`_handle_signals`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import math
import os
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syncer import __version__, logs

if TYPE_CHECKING:  # imported where used, once main() has turned the garbage collector off (see tune_gc)
    from syncer.config.model import SyncerConfig
    from syncer.config.policy import Policy
    from syncer.patches.apply import Patcher

log = logging.getLogger("syncer")

EXIT_OK, EXIT_FAILURE, EXIT_CONFIG = 0, 1, 2

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
CAUGHT_SIGNALS = (*STOP_SIGNALS, signal.SIGHUP)  # what EarlySignals notes, and `run` handles


class EarlySignals:
    """SIGTERM, SIGINT and SIGHUP noted from the start of the process until `run`'s event loop handles them.

    The kubelet sends SIGTERM to a sidecar that is still starting when its pod is deleted soon after it was
    created, and `run` imports for about a second before its event loop can handle a signal. Left to the default
    disposition, such a SIGTERM ended the process at once with status 143 and no log line (and as PID 1 of its
    container it was dropped, the process then running until the kubelet's SIGKILL); a SIGINT raised
    KeyboardInterrupt in the middle of an import, a SIGHUP ended the process (129). So these signals are noted
    here from the first line of `python -m syncer` (syncer/__main__.py, before any other import) or of `main`
    (the console script), and `run` acts on them once its loop handles signals (`_handle_signals`): a stop is
    logged and ends the process with status 0, a SIGHUP reads the configuration files again. The other commands
    get the usual handling back at once (`release`: Ctrl-C stops the demo), and any signal that came is raised
    again then.

    Args:
        received: the signals noted so far, in order (the handlers append to it); a new list when None.
        previous: per signal, the handler to give back.
    """

    def __init__(self, received: list[int] | None = None, previous: dict[signal.Signals, Any] | None = None) -> None:
        self.received = [] if received is None else received
        self.previous = {} if previous is None else previous

    @classmethod
    def catch(cls) -> EarlySignals:
        """Note CAUGHT_SIGNALS from now on (only the main thread can set signal handlers: elsewhere, nothing)."""
        early = cls()
        if threading.current_thread() is threading.main_thread():
            for sig in CAUGHT_SIGNALS:
                early.previous[sig] = signal.signal(sig, early.note)
        return early

    def note(self, signum: int, _frame: object) -> None:
        self.received.append(signum)

    def take(self) -> list[int]:
        """The signals noted so far, which are forgotten here."""
        taken = list(self.received)
        del self.received[:len(taken)]
        return taken

    def release(self, deliver: bool) -> None:
        """Give each signal its previous handler back; with `deliver`, raise the signals noted meanwhile again."""
        for sig, handler in self.previous.items():
            if handler is not None:  # None: a handler not set from Python, which cannot be set back
                signal.signal(sig, handler)
        self.previous = {}
        for noted in self.take() if deliver else ():
            signal.raise_signal(noted)


LOG_LEVELS = ("debug", "info", "warning", "error")
VCLUSTER_CONFIG_HELP = ("vcluster's configuration, the values it runs with: the keys the syncer shares with vcluster "
                        "are read from it and --config holds only sync.fromHost.runtimeClasses; refused while "
                        "vcluster's own pod or RuntimeClass sync is on (the README's install section)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="runtimeclass-syncer", description=(
        "Mirror host RuntimeClasses into a vcluster and sync virtual Pods to the host only when their "
        "runtimeClassName passes sync.fromHost.runtimeClasses.selector."))
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the syncer against a host and a virtual cluster")
    run.add_argument("--config", required=True, help="vcluster.yaml (sync.fromHost.runtimeClasses and the keys "
                                                     "vcluster's pod translator reads; the rest is ignored)")
    run.add_argument("--vcluster-config", help=VCLUSTER_CONFIG_HELP)
    run.add_argument("--virtual-kubeconfig", required=True, help="kubeconfig of the virtual cluster")
    run.add_argument("--virtual-server", type=_server_url,
                     help="API server URL to use instead of the virtual kubeconfig's own (its CA and credentials "
                          "stay), e.g. https://localhost:8443 beside vcluster in its pod")
    run.add_argument("--host-kubeconfig", help="kubeconfig of the host cluster (default: in-cluster config)")
    run.add_argument("--vcluster-name", required=True, type=_dns1123_label,
                     help="name of the vcluster (host pod names, labels)")
    run.add_argument("--host-namespace", required=True, type=_dns1123_label,
                     help="host namespace that receives the pods")
    run.add_argument("--health-probe-bind-address", default="", type=_bind_address,
                     help="serve /healthz and /readyz here, e.g. :8081 (every IPv4 and IPv6 address), "
                          "127.0.0.1:8081 or [::1]:8081 (default: off)")
    run.add_argument("--metrics-bind-address", default="", type=_bind_address,
                     help="serve /metrics here, e.g. :8090 (default: off)")
    run.add_argument("--log-format", choices=("text", "json"), default="text")
    run.add_argument("--log-level", choices=LOG_LEVELS, default="info",
                     help="info: one line per decision; warning and error: only what an operator must act on")
    run.add_argument("--pod-workers", type=_positive_int, default=4, help="concurrent pod reconciles (default 4)")
    run.add_argument("--token-lifetime", type=_token_lifetime, default=3600,
                     help="seconds the service-account tokens of host pods live, unless a projection asks for less "
                          "than an hour; renewed after 80%% (default 3600, at least 600; 0 keeps vcluster's ten-year "
                          "tokens, never renewed)")
    run.add_argument("--request-timeout", type=_positive_seconds, default=30.0,
                     help="seconds before a hung API request is abandoned and retried (default 30)")
    run.add_argument("--leader-elect", action="store_true",
                     help="campaign for a Lease in the host cluster and write only while leading (several replicas)")
    run.add_argument("--leader-election-id", help="Lease name (default: runtimeclass-syncer-<vcluster name>)")
    run.add_argument("--leader-election-namespace", help="Lease namespace (default: --host-namespace)")
    run.add_argument("--lease-duration", type=_positive_int, default=15, help="whole seconds (default 15)")
    run.add_argument("--renew-deadline", type=_positive_seconds, default=10.0, help="seconds (default 10)")
    run.add_argument("--retry-period", type=_positive_seconds, default=2.0, help="seconds (default 2)")
    run.add_argument("--patch-timeout", type=_positive_seconds, default=1.0,
                     help="seconds one patch expression may run before it is stopped (default 1)")
    run.add_argument("--patch-memory-limit", type=_positive_int, default=64,
                     help="MiB the JavaScript heap of the patches may use (default 64)")
    run.add_argument("--policy", help="runtime policy file: default class, strict mode, allowed handlers, per "
                                      "namespace (config/policy.schema.json)")

    val = sub.add_parser("validate", help="check a vcluster.yaml (and a policy file) and print every error")
    val.add_argument("--config", required=True, help="the vcluster.yaml to check")
    val.add_argument("--vcluster-config", help=VCLUSTER_CONFIG_HELP)
    val.add_argument("--policy", help="runtime policy file to check against the vcluster.yaml")

    pol = sub.add_parser("policy", help="print the effective runtime policy and, per entry, which host "
                                        "RuntimeClasses tenants may use and why not")
    pol.add_argument("--config", required=True, help="the vcluster.yaml the policy runs with")
    pol.add_argument("--vcluster-config", help=VCLUSTER_CONFIG_HELP)
    pol.add_argument("--policy", required=True, help="the runtime policy file to report on")
    pol.add_argument("--host-kubeconfig", help="kubeconfig of the host cluster (default: in-cluster config)")
    pol.add_argument("-o", "--output", choices=("table", "json"), default="table")

    demo = sub.add_parser("demo", help="run host and virtual API servers in-process, the syncer, and "
                                       "example RuntimeClasses and pods; no cluster needed")
    demo.add_argument("--config", help="vcluster.yaml to use (default: examples/vcluster-combined.yaml)")
    demo.add_argument("--examples", help="folder with the example manifests (default: the repo's examples/)")
    demo.add_argument("--workdir", help="where to write the kubeconfigs (default: a new temporary folder)")
    demo.add_argument("--no-wait", action="store_true", help="exit after the summary instead of serving "
                                                             "until Ctrl-C")
    return p


def _load(path: str, vcluster_path: str | None = None) -> SyncerConfig | None:
    from syncer.config.model import ConfigError
    from syncer.config.vcluster import load
    try:
        return load(path, vcluster_path)
    except ConfigError as e:
        for msg in e.errors:
            print(f"error: {msg}", file=sys.stderr)
        return None


def _load_policy(path: str | None, config: SyncerConfig) -> tuple[bool, Policy | None]:
    """(True, the policy or None without --policy), or (False, None) after printing every error."""
    if not path:
        return True, None
    from syncer.config.model import ConfigError
    from syncer.config.policy import load_policy
    try:
        return True, load_policy(path, config)
    except ConfigError as e:
        for msg in e.errors:
            print(f"error: {path}: {msg}", file=sys.stderr)
        return False, None


async def _compile_patches(config: SyncerConfig, vcluster_name: str, host_namespace: str,
                           timeout: float = 1.0, memory_mib: int = 64) -> tuple[bool, Patcher | None]:
    """Compile the patches (None without patches). (False, None) after printing every error."""
    from syncer.patches.apply import PatchConfigError, Patcher
    try:
        return True, await Patcher.create(config, vcluster_name=vcluster_name, host_namespace=host_namespace,
                                          timeout=timeout, memory_limit=memory_mib * 1024 * 1024)
    except PatchConfigError as e:
        for msg in e.errors:
            print(f"error: {msg}", file=sys.stderr)
        return False, None


async def _check_patches(config: SyncerConfig) -> bool:
    """`validate`: compile the expressions once (syntax errors are configuration errors)."""
    ok, patcher = await _compile_patches(config, "vcluster", "vcluster")
    if patcher is not None:
        await patcher.close()
    return ok


def _token_lifetime(text: str) -> int:
    """`--token-lifetime`: 0, or whole seconds of at least 600 (the API server refuses shorter TokenRequests)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of seconds: {text!r}") from None
    if value != 0 and value < 600:
        raise argparse.ArgumentTypeError(f"{value} s is shorter than the 600 s the API server allows for a token "
                                         "(0 keeps vcluster's ten-year tokens)")
    return value


def _dns1123_label(text: str) -> str:
    """`--vcluster-name`, `--host-namespace`: a DNS-1123 label, as a namespace name must be (apimachinery
    `IsDNS1123Label`; the vcluster's name is in every host pod's name and `vcluster.loft.sh/managed-by` label). An
    empty one (the pod's `release` label missing) or an unexpanded `$(VCLUSTER_NAME)` would otherwise start a syncer
    that waits for ever for objects no one can create, with `/readyz` green.

    Raises:
        argparse.ArgumentTypeError: the errors of `IsDNS1123Label`, with the value.
    """
    from syncer.config.selector import dns1123_label_errors

    errors = dns1123_label_errors(text)
    if errors:
        raise argparse.ArgumentTypeError(f"{text!r}: " + "; ".join(errors))
    return text


def _positive_int(text: str) -> int:
    """A count or whole seconds: an integer of at least 1 (`--pod-workers 0` would sync no pod at all)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_seconds(text: str) -> float:
    """Seconds: a finite number greater than 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of seconds greater than 0, not {text!r}")
    return value


def _bind_address(text: str) -> str:
    """`--health-probe-bind-address`, `--metrics-bind-address`: "" (off) or what `server.parse_bind_address`
    accepts; checked here so that a bad one is a command-line error (exit 2) before anything starts."""
    if text:
        from syncer.server import parse_bind_address
        try:
            parse_bind_address(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _server_url(text: str) -> str:
    """`--virtual-server`: an http(s) URL (kubeconfig's `server`)."""
    if not text.startswith(("https://", "http://")) or len(text) <= len("https://"):
        raise argparse.ArgumentTypeError(f"not an http(s) URL: {text!r}")
    return text


GC_THRESHOLDS = (20_000, 10, 10)  # CPython's defaults are (700, 10, 10)


def tune_gc() -> None:
    """Set CPython's cyclic garbage collector up for a long-running controller, once the imports are done
    (`main` keeps it off until then, `run` calls this after its imports): gen-0 threshold 20,000, what the
    imports made frozen, collection on.

    Imports and decoded JSON allocate containers by the hundred thousand, nearly all freed by reference
    counting. With the default gen-0 threshold of 700 allocations the collector ran about 200 times during
    the imports (about 0.05 s) and about 350 times in an initial sync of 5,000 objects, finding almost
    nothing (5% of the syncer's CPU, measured with `gc.callbacks`). 20,000 cuts that to a fraction.
    `gc.freeze()` moves the modules, classes and functions out of the collector's reach, as the CPython
    documentation suggests for long-lived processes, so full collections scan only the caches.
    """
    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()
    gc.enable()


def _handle_signals(args: argparse.Namespace, early: EarlySignals, stop: asyncio.Event,
                    rereads: dict[str, asyncio.Event]) -> None:
    """From now on the running loop handles SIGTERM and SIGINT (set `stop`) and SIGHUP (set each event of
    `rereads`, by what it reads again), each logged; then act on the signals `early` noted before.

    SIGHUP is a daemon's "read your configuration again": the files that are read again while running anyway
    are read at once by what watches them (`watch_policy`, `watch_kubeconfigs`, and at start the wait for them,
    `Startup.clients`). --config and --vcluster-config are read only at start (a restart applies them:
    deploy/vcluster-deployment.yaml's checksum annotation), and the log line says so.
    """
    loop = asyncio.get_running_loop()
    start_only = " and ".join(f"{flag} {path}" for flag, path in (("--config", args.config),
                                                                    ("--vcluster-config", args.vcluster_config))
                              if path)

    def stopping(sig: int, starting: bool = False) -> None:
        if not stop.is_set():
            log.info("%s received%s; stopping", signal.Signals(sig).name, " while starting" if starting else "")
        stop.set()

    def reread(sig: int, starting: bool = False) -> None:
        names = list(rereads)
        log.info("SIGHUP received%s: reading %s again now (%s %s read only at start: a restart applies %s)",
                 " while starting" if starting else "",
                 ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0], start_only,
                 "are" if args.vcluster_config else "is", "them" if args.vcluster_config else "it")
        for event in rereads.values():
            event.set()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stopping, sig)
    loop.add_signal_handler(signal.SIGHUP, reread, signal.SIGHUP)
    for noted in early.take():  # noted while the process started: after the handlers, so that none is missed
        (reread if noted == signal.SIGHUP else stopping)(noted, True)


async def _serve(args: argparse.Namespace, config: SyncerConfig, policy: Policy | None = None,
                 early: EarlySignals | None = None) -> int:
    """`run`: check what waiting cannot fix (exit 2), serve the probes, wait until both clusters' configurations
    can be used (syncer/startup.py), then run the syncer until SIGTERM/SIGINT (also one `early` noted while the
    process started). SIGHUP reads the policy and the kubeconfig files again at once (`_handle_signals`)."""
    from syncer.kube.client import DEFAULT_USER_AGENT, KubeClient, sleep_or_stop
    from syncer.kube.informer import Backoff
    from syncer.kube.leader import LeaderElector
    from syncer.manager import Options, Syncer
    from syncer.metrics import Metrics
    from syncer.server import ProbeServer
    from syncer.startup import Loader, Startup, watch_kubeconfigs

    tune_gc()  # the imports are done
    # mistakes of the command line, before anything is served or read (waiting would not fix them)
    if args.leader_elect:
        try:
            LeaderElector.check_timing(args.lease_duration, args.renew_deadline, args.retry_period)
        except ValueError as e:
            print(f"error: invalid leader election timing: {e}", file=sys.stderr)
            return EXIT_CONFIG
    if not args.host_kubeconfig and not (os.environ.get("KUBERNETES_SERVICE_HOST")
                                         and os.environ.get("KUBERNETES_SERVICE_PORT")):
        print("error: no --host-kubeconfig, and not in a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
              "are not set), so there is no in-cluster configuration either: pass --host-kubeconfig",
              file=sys.stderr)
        return EXIT_CONFIG
    ok, patcher = await _compile_patches(config, args.vcluster_name, args.host_namespace, args.patch_timeout,
                                         args.patch_memory_limit)
    if not ok:
        return EXIT_CONFIG  # before any API request
    async with contextlib.AsyncExitStack() as cleanup:
        if patcher is not None:
            cleanup.push_async_callback(patcher.close)
        stop = asyncio.Event()
        reread_kubeconfigs, reread_policy = asyncio.Event(), asyncio.Event()  # set by SIGHUP
        rereads = {f"the virtual kubeconfig {args.virtual_kubeconfig}": reread_kubeconfigs}
        if args.host_kubeconfig:  # in-cluster: the client reads the service account's token again every minute
            rereads[f"the host kubeconfig {args.host_kubeconfig}"] = reread_kubeconfigs
        if policy is not None:
            rereads[f"the policy {args.policy}"] = reread_policy
        _handle_signals(args, early or EarlySignals(), stop, rereads)
        if stop.is_set():  # SIGTERM/SIGINT while the process started: nothing is served or read yet
            log.info("stopped")
            return EXIT_OK
        startup = Startup(Metrics())
        probes = ProbeServer(startup, args.health_probe_bind_address or None, args.metrics_bind_address or None)
        try:
            await probes.start()
        except (OSError, ValueError) as e:
            log.error("cannot serve probes/metrics: %s", e)
            return EXIT_FAILURE
        cleanup.push_async_callback(probes.stop)
        identity = f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        agent, timeout = f"{DEFAULT_USER_AGENT} ({identity})", args.request_timeout

        async def in_cluster() -> KubeClient:
            return KubeClient.in_cluster("host", request_timeout=timeout, user_agent=agent)

        loaders: dict[str, Loader] = {
            "virtual": lambda: KubeClient.from_kubeconfig(args.virtual_kubeconfig, "virtual", request_timeout=timeout,
                                                          user_agent=agent, server=args.virtual_server),
            "host": (lambda: KubeClient.from_kubeconfig(args.host_kubeconfig, "host", request_timeout=timeout,
                                                        user_agent=agent)) if args.host_kubeconfig else in_cluster}
        in_force: list[Policy | None] = [policy]  # the policy in force, for the syncer of each start
        if policy is not None:
            from syncer.config.reload import watch_policy

            def apply_policy(new: Policy) -> None:
                in_force[0] = new
                if startup.syncer is not None:
                    startup.syncer.set_policy(new)
                else:  # between two syncers: the next one starts with it
                    startup.metrics.policy_reloads.labels("applied").inc()

            reload = asyncio.create_task(watch_policy(
                Path(args.policy), config, apply_policy, stop, in_force=policy.text,
                rejected=lambda _: startup.metrics.policy_reloads.labels("invalid").inc(), wake=reread_policy))
            cleanup.push_async_callback(_finish, reload)
        # the wait before campaigning again after a lost lease: the retry period, doubled per loss of a syncer that
        # never got ready (an election that fails at once must not loop on both API servers' lists)
        rejoin = Backoff(initial=args.retry_period, cap=60.0)
        while True:  # once, and again after a kubeconfig changed or a lost lease
            # waits (probes served) until both can be used
            clients = await startup.clients(loaders, stop, wake=reread_kubeconfigs)
            if clients is None:
                log.info("stopped while waiting for the cluster configurations")
                return EXIT_OK
            halt = asyncio.Event()  # stop, or a kubeconfig changed
            async with contextlib.AsyncExitStack() as started:
                virtual, host = clients["virtual"], clients["host"]
                started.push_async_callback(virtual.close)
                started.push_async_callback(host.close)
                elector = None
                if args.leader_elect:
                    elector = LeaderElector(host, args.leader_election_namespace or args.host_namespace,
                                            args.leader_election_id or f"runtimeclass-syncer-{args.vcluster_name}",
                                            identity, lease_duration=args.lease_duration,
                                            renew_deadline=args.renew_deadline, retry_period=args.retry_period)
                syncer = Syncer(config, host, virtual, Options(vcluster_name=args.vcluster_name,
                                                               host_namespace=args.host_namespace,
                                                               pod_workers=args.pod_workers,
                                                               token_lifetime=args.token_lifetime),
                                metrics=startup.metrics, patcher=patcher, policy=in_force[0])
                startup.syncer = syncer  # the probes report the syncer from now on
                for task in (asyncio.create_task(watch_kubeconfigs(clients, halt, wake=reread_kubeconfigs)),
                             asyncio.create_task(_relay(stop, halt))):
                    started.push_async_callback(_finish, task)
                log.info("runtimeclass-syncer %s: vcluster %r, host namespace %r, runtime class sync %s, selector %r",
                         __version__, args.vcluster_name, args.host_namespace,
                         "enabled" if config.enabled else "disabled", str(config.selector) or "<everything>")
                await syncer.run(halt, elector)
            startup.syncer = None
            if stop.is_set():
                break
            if syncer.lost_leadership:  # every writer stopped: campaign again in this process, as a follower
                # An exit would take the vcluster pod out of its Service until the kubelet restarted the sidecar
                # (with CrashLoopBackOff's growing wait if it repeats); the identity is kept, so no other replica
                # having taken the Lease meanwhile, this one leads again as soon as the host answers.
                if syncer.ready_event.is_set():
                    rejoin.reset()
                delay = rejoin.next()
                log.error("leadership lost: every controller stopped; campaigning again as a follower in %.1f s",
                          delay)
                if await sleep_or_stop(delay, stop):
                    break
    log.info("stopped")
    return EXIT_OK


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    """Set `target` once `source` is set."""
    await source.wait()
    target.set()


async def _policy_report(args: argparse.Namespace, config: SyncerConfig, policy: Policy) -> int:
    """`policy`: read the host RuntimeClasses, print the report; 0, or 1 when a default is unusable."""
    import json

    from syncer.controllers.policyreport import render, report
    from syncer.kube.client import KubeClient
    from syncer.kube.resources import RUNTIMECLASSES

    try:
        host = (await KubeClient.from_kubeconfig(args.host_kubeconfig, "host") if args.host_kubeconfig
                else KubeClient.in_cluster("host"))
    except Exception as e:
        print(f"error: cannot set up the host cluster client: {e}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        classes = (await host.list(RUNTIMECLASSES))["items"]
    except Exception as e:
        print(f"error: cannot list the host RuntimeClasses: {e}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        await host.close()
    doc = report(config, policy, classes)
    print(json.dumps(doc, indent=2) if args.output == "json" else render(doc))
    return EXIT_FAILURE if doc["problems"] else EXIT_OK


async def _finish(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _run(args: argparse.Namespace, early: EarlySignals) -> int:
    """`run`: the configuration (exit 2 before any API request), then the syncer until SIGTERM/SIGINT."""
    logs.setup(args.log_format, getattr(logging, args.log_level.upper()))
    config = _load(args.config, args.vcluster_config)  # before any API request
    if config is None:
        return EXIT_CONFIG
    ok, policy = _load_policy(args.policy, config)
    if not ok:
        return EXIT_CONFIG
    return asyncio.run(_serve(args, config, policy, early))


def main(argv: Sequence[str] | None = None, *, early: EarlySignals | None = None) -> int:
    """Entry point of the console script and `python -m syncer`. Returns the exit status.

    Args:
        early: the signals noted since the process started (syncer/__main__.py); None: noted from here on.
    """
    if early is None:
        early = EarlySignals.catch()
    gc.disable()  # during the imports and the configuration; `run` sets the collector up after (tune_gc)
    try:
        args = _parser().parse_args(argv)
    except SystemExit:
        early.release(deliver=True)
        raise
    if args.command == "run":
        try:
            return _run(args, early)
        finally:  # what came was handled by `run`, or it ended first (a configuration error: exit 2)
            early.release(deliver=False)
    gc.enable()
    early.release(deliver=True)  # the usual handling of the signals for the other commands
    if args.command == "validate":
        config = _load(args.config, args.vcluster_config)
        policy_ok, policy = _load_policy(args.policy, config) if config is not None else (False, None)
        if config is None or (config.rc.patches and not asyncio.run(_check_patches(config))) or not policy_ok:
            return EXIT_CONFIG
        print(f"{args.config}: valid (runtime class sync {'enabled' if config.enabled else 'disabled'}, "
              f"selector: {str(config.selector) or '<everything>'})")
        if args.vcluster_config:
            print(f"{args.vcluster_config}: the syncer can run beside it (vcluster's own pod and RuntimeClass sync "
                  "off, one host namespace)")
        if policy is not None:
            print(f"{args.policy}: valid")
            from syncer.config.policy import system_pod_problems
            for problem in system_pod_problems(config, policy):  # valid, but vcluster's own DNS would be refused
                print(f"warning: {args.policy}: {problem}", file=sys.stderr)
        return EXIT_OK
    if args.command == "policy":
        config = _load(args.config, args.vcluster_config)
        if config is None:
            return EXIT_CONFIG
        ok, policy = _load_policy(args.policy, config)
        if not ok or policy is None:
            return EXIT_CONFIG
        return asyncio.run(_policy_report(args, config, policy))
    from kubesim.demo import main as demo_main
    return demo_main(args)
