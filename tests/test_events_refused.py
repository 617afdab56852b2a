"""An event write that fails never fails the reconcile it reports on (client-go k8s.io/client-go/tools/record/event.go
`recordEvent`: a `StatusError`, the API server's refusal, is dropped at once, NamespaceTerminating silently; other
errors are retried, at most `maxTriesPerEvent` = 12 times). A ResourceQuota on `count/events`, a terminating
namespace or a webhook that denies events is the tenant's: the pod is synced and its status copied all the same, and
`/readyz` does not report the syncer's RBAC; a 403 that is the syncer's RBAC is shown, and blocks nothing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from syncer.config.model import parse_config
from syncer.config.policy import parse_policy
from syncer.kube.client import DEFAULT_USER_AGENT, ApiError
from syncer.kube.clock import FakeClock
from syncer.kube.controller import rbac_denial, refusal_cause
from syncer.kube.events import EventRecorder
from syncer.kube.resources import EVENTS, PODS, RUNTIMECLASSES, APIResource
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}
# kube-apiserver's words (plugin/pkg/admission/resourcequota: "exceeded quota: %s, requested: %s, used: %s,
# limited: %s"; NamespaceLifecycle: "unable to create new content in namespace %s because it is being terminated";
# apiserver admission webhooks: `admission webhook %q denied the request: %s`; RBAC: `User %q cannot %s resource %q
# in API group %q in the namespace %q`)
QUOTA = ('events "plain.1" is forbidden: exceeded quota: tenant-quota, requested: count/events=1, used: '
         "count/events=100, limited: count/events=100")
TERMINATING = ('events "wasm.1" is forbidden: unable to create new content in namespace default because it is being '
               "terminated")
WEBHOOK = 'admission webhook "events.policy.example.com" denied the request: no events from sidecars'
RBAC = ('events is forbidden: User "system:serviceaccount:vcluster:syncer" cannot create resource "events" in API '
        'group "" in the namespace "default"')


def pod_errors(syncer: Any) -> float:
    return float(syncer.metrics.registry.get_sample_value("controller_runtime_reconcile_errors_total",
                                                          {"controller": "pod"}) or 0)


def event_logs(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "syncer.kube.events" and r.levelno == level]


async def test_a_quota_on_events_neither_blocks_the_pod_nor_reads_as_missing_rbac(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # the audit's reproduction: the policy's default gives the pod a RuntimeClassDefaulted event after its host
    # pod's create; the namespace's quota refuses it. The pod's status must still be copied.
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    document = rc_config(DEV)
    policy = parse_policy({"defaultRuntimeClassName": "gvisor"}, parse_config(document), "policy.yaml")
    async with running_syncer(clusters, document, policy=policy) as syncer:
        quota = clusters.virtual_server.faults.fail(403, verb="create", resource="events", times=10**6,
                                                    message=QUOTA, agent=DEFAULT_USER_AGENT)
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await host_pods(clusters, lambda o: hname("plain") in o, "plain synced")
        await clusters.host.patch(PODS, hname("plain"), {"status": {"phase": "Running"}}, HOST_NS,
                                  subresource="status")
        await wait_for(clusters.virtual, PODS, lambda o: (o.get("default/plain", {}).get("status") or {}).get(
            "phase") == "Running", namespace="default", timeout=10, what="the host pod's status copied")
        await syncer.wait_idle()
        assert (syncer.ready, syncer.readiness_detail()) == (True, [])
        assert pod_errors(syncer) == 0
    assert quota.hits == 1  # refused: dropped at once, never retried
    assert event_logs(caplog, logging.WARNING) == [
        "event RuntimeClassDefaulted on Pod default/plain not recorded: the virtual cluster refused it (exceeded "
        "quota); refused events are not retried, and this cause is logged once for namespace default until an "
        f"event is written there: {QUOTA}"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(("status", "message", "warned"), [(403, TERMINATING, False), (400, WEBHOOK, True)],
                         ids=["namespace_terminating", "webhook_denial"])
async def test_a_refused_warning_is_dropped_and_the_reconcile_succeeds(
        clusters: Clusters, caplog: pytest.LogCaptureFixture, status: int, message: str, warned: bool) -> None:
    caplog.set_level(logging.DEBUG, logger="syncer.kube.events")
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        refused = clusters.virtual_server.faults.fail(status, verb="create", resource="events", times=10**6,
                                                      message=message, agent=DEFAULT_USER_AGENT)
        for name in ("wasm", "wasi"):  # two pods the gate refuses: a SyncWarning each, both refused
            await clusters.virtual.create(PODS, pod(name, "wasm"), "default")
            await eventually(lambda n=name: syncer.virtual_pods.get(f"default/{n}") is not None, f"{name} cached")
            await syncer.wait_idle()
        assert (syncer.ready, pod_errors(syncer), refused.hits) == (True, 0, 2)  # each tried once, no retry
        assert (await clusters.virtual.list(EVENTS, "default"))["items"] == []
    warnings = event_logs(caplog, logging.WARNING)
    if warned:  # once for the namespace and cause, naming the first event's reason and object
        assert [w.split(": ", 1)[0] for w in warnings] == [
            "event SyncWarning on Pod default/wasm not recorded"]
    else:  # a terminating namespace: dropped silently, as client-go (V(5))
        assert warnings == []
    assert len(event_logs(caplog, logging.DEBUG)) == 2 - len(warnings)


async def test_missing_rbac_on_events_is_shown_and_blocks_nothing(clusters: Clusters,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        denied = clusters.virtual_server.faults.fail(403, verb="create", resource="events", times=10**6,
                                                     message=RBAC, agent=DEFAULT_USER_AGENT)
        await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
        await eventually(lambda: denied.hits == 1, "the SyncWarning refused")
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await host_pods(clusters, lambda o: hname("plain") in o, "plain synced though events are forbidden")
        await syncer.wait_idle()
        assert not syncer.ready and pod_errors(syncer) == 0
        assert syncer.readiness_detail() == [f"forbidden to create events on the virtual cluster: {RBAC}"]
        clusters.virtual_server.faults.clear()  # RBAC fixed
        await clusters.virtual.patch(PODS, "wasm", {"metadata": {"labels": {"v": "2"}}}, "default")
        await eventually(lambda: syncer.ready, "ready once an event is written")
    assert event_logs(caplog, logging.ERROR) == [
        "pod-syncer: forbidden to create events (group core) on the virtual cluster; check the RBAC of the syncer: "
        + RBAC]


# ------------------------------------------------------------------ the recorder alone, with an injected clock

class Events:
    """A stand-in for the virtual API server's events: each write takes the next outcome of `failures` (an
    ApiError raised, or None: written)."""

    cluster = "virtual"

    def __init__(self, *failures: ApiError | None) -> None:
        self.failures = list(failures)
        self.stored: dict[str, Obj] = {}
        self.calls: list[str] = []

    def _next(self, verb: str) -> None:
        self.calls.append(verb)
        if self.failures:
            failure = self.failures.pop(0)
            if failure is not None:
                raise failure

    async def create(self, res: APIResource, body: Obj, namespace: str) -> Obj:
        self._next("create")
        self.stored[body["metadata"]["name"]] = body
        return body

    async def patch(self, res: APIResource, name: str, body: Obj, namespace: str) -> Obj:
        self._next("patch")
        self.stored[name] = {**self.stored[name], **body}
        return self.stored[name]

    async def get(self, res: APIResource, name: str, namespace: str) -> Obj:
        return self.stored[name]


def recorder(events: Events) -> EventRecorder:
    return EventRecorder(events, "pod-syncer", "pod-syncer-a", lambda: "2026-01-01T00:00:00Z",  # type: ignore[arg-type]
                         clock=FakeClock())


def vpod(name: str = "web") -> Obj:
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": "1"}}


def no_answer() -> ApiError:
    return ApiError(0, "ConnectionError", "connection refused", cluster="virtual", verb="create", resource="events")


async def test_a_write_without_answer_is_tried_12_times_then_dropped(caplog: pytest.LogCaptureFixture) -> None:
    events = Events(*[no_answer() for _ in range(13)])
    r = recorder(events)
    for _ in range(11):  # the caller's reconcile retries: tries 1 to 11 raise
        with pytest.raises(ApiError):
            await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")
    assert await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod") is None  # maxTriesPerEvent = 12
    assert [m.split(": ", 1)[0] for m in event_logs(caplog, logging.WARNING)] == [
        "event SyncWarning on Pod default/web not recorded"]
    with pytest.raises(ApiError):  # the next occurrence is an event of its own, tried again
        await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")
    stored = await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")
    # the dropped occurrence is counted (the correlator counts before it writes), the retried one once
    assert stored is not None and stored["count"] == 2
    assert events.calls == ["create"] * 14


async def test_a_refusal_is_dropped_at_once_and_a_retry_is_not_a_new_occurrence() -> None:
    quota = ApiError(403, "Forbidden", QUOTA, cluster="virtual", verb="create", resource="events")
    throttled = ApiError(429, "TooManyRequests", "slow down", cluster="virtual", verb="create", resource="events")
    events = Events(quota, throttled, None)
    r = recorder(events)
    assert await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod") is None  # no raise: dropped
    with pytest.raises(ApiError):
        await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")
    stored = await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod")  # the retry of the second
    assert stored is not None and stored["count"] == 2
    assert r.forbidden == {}


# k8s.io/apiserver pkg/admission/plugin/policy/validating/dispatcher.go: a ValidatingAdmissionPolicy's denial,
# `ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s`, with reason Forbidden (403) by default
POLICY = ("events \"plain.1\" is forbidden: ValidatingAdmissionPolicy 'no-sidecar-events' with binding "
          "'no-sidecar-events-binding' denied request: failed expression: object.source.component != 'pod-syncer'")


@pytest.mark.parametrize(("message", "cause"), [
    (QUOTA, "exceeded quota"), (TERMINATING, "namespace terminating"), (WEBHOOK, "admission webhook denial"),
    (POLICY, "admission policy denial"), (RBAC, None)])
def test_a_403_is_the_syncers_rbac_only_when_it_names_no_other_cause(message: str, cause: str | None) -> None:
    e = ApiError(403, "Forbidden", message, cluster="virtual", verb="create", resource="events")
    assert (refusal_cause(e), rbac_denial(e)) == (cause, cause is None)


async def test_an_rbac_refusal_of_events_leaves_readiness_once_no_event_is_refused_for_ten_minutes() -> None:
    # A refused event is dropped, not retried: nothing would tell that the RBAC was fixed if no other event came,
    # and /readyz would stay red for good. Shown for 600 s after its last refusal; a new refusal shows it again.
    rbac = ApiError(403, "Forbidden", RBAC, cluster="virtual", verb="create", resource="events")
    events = Events(rbac, rbac)
    r = recorder(events)
    clock = r.spam.clock
    assert isinstance(clock, FakeClock)
    assert await r.record(PODS, vpod(), "Warning", "SyncWarning", "m", "SyncPod") is None
    assert r.forbidden == {("virtual", "create", "events"): RBAC}
    clock.advance(600)
    assert r.forbidden == {("virtual", "create", "events"): RBAC}
    clock.advance(1)
    assert r.forbidden == {}
    assert await r.record(PODS, vpod("api"), "Warning", "SyncWarning", "m", "SyncPod") is None
    assert r.forbidden == {("virtual", "create", "events"): RBAC}
