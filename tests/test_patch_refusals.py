"""Patched RuntimeClasses the virtual API server would refuse, and the syncer's own writes of patched copies
(behaviour.md sections 2 and 5), over real HTTP against kubesim."""

from __future__ import annotations

import json
from typing import Any

from syncer.kube.resources import EVENTS, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from tests.conftest import Clusters, rc
from tests.test_patches import patched_syncer, with_patches

Obj = dict[str, Any]
DEV = {"environment": "development"}
SCHED = {"nodeSelector": {"sandbox": "kata"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]}
# class -> (its scheduling/overhead, patch path, the value the patch gives once the host class is labelled bad,
# the reason in the PatchFailed event). Rules: kubernetes pkg/apis/node/validation/validation.go ValidateRuntimeClass
# (validateScheduling: ValidateLabels of the nodeSelector, core ValidateTolerations; validateOverhead: core
# ValidateContainerResourceRequirements of podFixed), apimachinery pkg/api/resource/quantity.go ParseQuantity.
REFUSED: dict[str, tuple[Obj, str, Any, str]] = {
    "selector-value": ({"scheduling": SCHED}, 'scheduling.nodeSelector["sandbox"]', "not valid!",
                       'the result at scheduling.nodeSelector["sandbox"] is not a valid label value "not valid!": a '
                       "valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                       "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                       "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    "operator": ({"scheduling": SCHED}, "scheduling.tolerations[0].operator", "Sometimes",
                 'the result at scheduling.tolerations[0].operator is not supported "Sometimes": supported values: '
                 '"Equal", "Exists"'),
    "exists-value": ({"scheduling": SCHED}, 'scheduling.tolerations[0]["value"]', "x",
                     "the result at scheduling.tolerations[0].value must be empty when `operator` is 'Exists', "
                     'got "x"'),
    "seconds": ({"scheduling": SCHED}, 'scheduling.tolerations[0]["tolerationSeconds"]', 30,
                "the result at scheduling.tolerations[0].effect must be 'NoExecute' when `tolerationSeconds` is set, "
                'got ""'),
    "effect": ({"scheduling": SCHED}, 'scheduling.tolerations[0]["effect"]', "Sometimes",
               'the result at scheduling.tolerations[0].effect is not supported "Sometimes": supported values: '
               '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
    "cpu-negative": ({"overhead": {"podFixed": {"cpu": "250m"}}}, 'overhead.podFixed["cpu"]', "-1",
                     'the result at overhead.podFixed["cpu"] must be greater than or equal to 0, got "-1"'),
    "cpu-text": ({"overhead": {"podFixed": {"memory": "1Mi"}}}, 'overhead.podFixed["memory"]', "lots",
                 'the result at overhead.podFixed["memory"] is not a quantity "lots": quantities must match the '
                 "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    "extended": ({"overhead": {"podFixed": {"example.com/gpu": "1"}}}, 'overhead.podFixed["example.com/gpu"]', "0.5",
                 'the result at overhead.podFixed["example.com/gpu"] must be an integer, got "0.5"'),
}


def rc_writes(c: Clusters) -> list[tuple[str, str, str]]:
    """The writes of virtual RuntimeClasses the virtual API server has had."""
    return [r for r in c.virtual_server.requests if r[0] in ("POST", "PUT", "PATCH", "DELETE")
            and "runtimeclasses" in r[1]]


def by_name(events: dict[str, Obj]) -> dict[str, Obj]:
    return {e["involvedObject"]["name"]: e for e in events.values()}


async def test_a_schedule_or_overhead_the_api_server_refuses_is_a_patch_failure_and_the_copy_kept(
        clusters: Clusters) -> None:
    # Regression: only metadata and handler were checked. A nodeSelector or toleration kubesim refuses was a 422
    # retried for good with no PatchFailed event; an overhead quantity (kubesim does not check it, a real API server
    # does) was written.
    paths: dict[str, dict[str, Any]] = {}
    for name, (fields, path, bad, _) in REFUSED.items():
        await clusters.host.create(RUNTIMECLASSES, rc(name, "runsc", DEV, **fields))
        paths.setdefault(path, {})[name] = bad
    doc = with_patches(*({"path": path, "expression": f"var t = {json.dumps(table)}, n = context.hostObject.metadata"
                          ".name; context.hostObject.metadata.labels.bad && n in t ? t[n] : value"}
                         for path, table in paths.items()))
    async with patched_syncer(clusters, doc) as syncer:
        good = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: set(REFUSED) <= set(o), what="synced")
        for name in REFUSED:
            await clusters.host.patch(RUNTIMECLASSES, name, {"metadata": {"labels": {"bad": "1"}}})
        events = await wait_for(clusters.virtual, EVENTS, lambda o: set(by_name(o)) >= set(REFUSED),
                                namespace="default", what="a PatchFailed event per class")
        await syncer.wait_idle()
        after = {o["metadata"]["name"]: o for o in (await clusters.virtual.list(RUNTIMECLASSES))["items"]}
    for name, (_, path, _, reason) in REFUSED.items():
        e = by_name(events)[name]
        assert (e["type"], e["reason"]) == ("Warning", "PatchFailed")
        assert e["message"] == f'runtime class "{name}": patch "{path}" failed: {reason}', name
        # the last good copy, never written
        assert after[name]["metadata"]["resourceVersion"] == good[name]["metadata"]["resourceVersion"], name


async def test_a_handler_change_with_a_refused_patch_result_keeps_the_old_copy(clusters: Clusters) -> None:
    # Regression: on a host handler change the copy was deleted, then every create was refused (422): the class
    # was gone for virtual pods. The handler changes while no syncer runs, so the restart sees it in one reconcile.
    kata = rc("kata", "kata-qemu", DEV, scheduling={"nodeSelector": {"sandbox": "kata"}})
    await clusters.host.create(RUNTIMECLASSES, kata)
    doc = with_patches({"path": 'scheduling.nodeSelector["sandbox"]',
                        "expression": "context.hostObject.handler === 'kata-fc' ? 'not valid!' : value"})
    async with patched_syncer(clusters, doc):
        good = (await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "kata" in o, what="synced"))["kata"]
    await clusters.host.delete(RUNTIMECLASSES, "kata")
    await clusters.host.create(RUNTIMECLASSES, {**kata, "handler": "kata-fc"})
    before = len(rc_writes(clusters))
    async with patched_syncer(clusters, doc) as syncer:
        events = await wait_for(clusters.virtual, EVENTS, bool, namespace="default", what="PatchFailed")
        await syncer.wait_idle()
        kept = await clusters.virtual.get(RUNTIMECLASSES, "kata")
    assert rc_writes(clusters)[before:] == []
    assert (kept["handler"], kept["metadata"]["resourceVersion"]) == ("kata-qemu", good["metadata"]["resourceVersion"])
    (event,) = events.values()
    assert event["message"] == (  # apimachinery IsValidLabelValue, via ValidateLabels of scheduling.nodeSelector
        'runtime class "kata": patch "scheduling.nodeSelector["sandbox"]" failed: the result at '
        'scheduling.nodeSelector["sandbox"] is not a valid label value "not valid!": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
