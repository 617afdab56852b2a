"""Runtime policy resolution for one pod (pure): which class it runs with, or why it is refused
(behaviour.md section 6). The pod reconciler asks this before the gate of section 3; the gate is applied
here to the class the policy resolved.

Order: the pod's own `runtimeClassName`; else the namespace's default; else, when the policy is strict or
has a handler list, refused (a forced `sync.toHost.pods.runtimeClassName` satisfies "a class"). The
resolved class passes the gate; then the class the host pod will run with (the forced one when set)
passes the handler list. Never a silent downgrade to another class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.policy import Effective
from syncer.controllers import gate
from syncer.controllers.refusal import Refusal, Why

Obj = Mapping[str, Any]  # a host RuntimeClass (cached or whole)
DEFAULTED_REASON = "RuntimeClassDefaulted"


@dataclass(frozen=True)
class Resolution:
    """The outcome for one pod.

    Attributes:
        allowed: whether the pod may sync.
        runtime_class: the class the pod resolved to ("" = none; the pod's own or the default).
        defaulted: the class is the namespace's default (the host pod gets it; a Normal event says so).
        refusal: why not, when refused (refusal.py renders it; `refusal.metric` labels the metric).
        pod: the pod's name, for `message`.
    """

    allowed: bool
    runtime_class: str = ""
    defaulted: bool = False
    refusal: Refusal | None = None
    pod: str = ""

    @property
    def message(self) -> str:
        """The SyncWarning text when refused ("" when allowed)."""
        return self.refusal.message(self.pod) if self.refusal is not None else ""


def defaulted_message(pod: str, runtime_class: str) -> str:
    """The text of the Normal `RuntimeClassDefaulted` event (behaviour.md section 6)."""
    return f'synced pod "{pod}" to host with the default runtime class "{runtime_class}"'


def handler_of(rc: Obj | None) -> str | None:
    """The handler of a host RuntimeClass (None when the class or its handler is missing)."""
    h = (rc or {}).get("handler")
    return h if isinstance(h, str) else None


def usable_classes(config: SyncerConfig, policy: Effective, host_rcs: Iterable[Obj]) -> list[str] | None:
    """The host classes a pod in this namespace may name: they pass the gate and the handler list. None with
    `sync.fromHost.runtimeClasses.enabled: false`: the gate judges no class then (and the host's are not read), so a
    pod may name any."""
    if not config.enabled:
        return None
    out = []
    for rc in host_rcs:
        name = (rc.get("metadata") or {}).get("name")
        if not isinstance(name, str):
            continue
        if gate.evaluate(config, "", name, rc).allowed and (
                policy.handlers is None or handler_of(rc) in policy.handlers):
            out.append(name)
    return sorted(out)


def resolve(config: SyncerConfig, policy: Effective, pod: str, named: str, host_rc: Callable[[str], Obj | None],
            usable: Callable[[], list[str] | None]) -> Resolution:
    """Resolve pod `pod`, which names class `named` ("" = none), under the namespace's effective policy.

    Args:
        host_rc: looks up a host RuntimeClass by name (the cache).
        usable: the classes a pod may name here, None for any (only called for the message of a refusal).
    """
    rc, defaulted = named, False
    if not rc and policy.default:
        rc, defaulted = policy.default, True
    forced = config.forced_runtime_class
    if not rc and not forced and (policy.require or policy.handlers is not None):
        allowed = usable()
        return Resolution(False, "", False, Refusal(Why.NO_CLASS, allowed=None if allowed is None else tuple(allowed)),
                          pod)
    decision = gate.evaluate(config, pod, rc, host_rc(rc) if rc else None)
    if decision.refusal is not None:
        return Resolution(False, rc, defaulted, replace(decision.refusal, default=defaulted), pod)
    runs_with = forced or rc
    if policy.handlers is not None and runs_with:
        handler = handler_of(host_rc(runs_with))
        if handler not in policy.handlers:
            subject_default = defaulted and not forced  # a forced class is the subject when there is one
            refusal = Refusal(Why.HANDLER if handler is not None else Why.HANDLER_UNKNOWN,
                              rc if subject_default else runs_with, subject_default, handler or "",
                              tuple(policy.handlers))
            return Resolution(False, rc, defaulted, refusal, pod)
    return Resolution(True, rc, defaulted, pod=pod)
