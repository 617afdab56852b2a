"""Patched RuntimeClasses the virtual API server would refuse, and the syncer's own writes of patched copies
(behaviour.md sections 2 and 5), over real HTTP against kubesim."""

from __future__ import annotations

import asyncio
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


async def test_a_patched_copy_the_api_server_refuses_for_a_rule_the_syncer_lacks_is_a_patch_failure(
        clusters: Clusters) -> None:
    # The backstop: a rule the syncer cannot know, such as a ValidatingAdmissionPolicy of the virtual cluster, whose
    # denial is a 422 (kube-apiserver's policy/validating admission: reason Invalid unless the policy says otherwise).
    # A 400/422 on a write of a patched copy is a patch failure: the event, the copy kept.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", DEV))
    good = await clusters.virtual.create(RUNTIMECLASSES, rc("gvisor", "runsc", DEV))  # the last good copy
    denial = ("runtimeclasses.node.k8s.io \"gvisor\" is forbidden: ValidatingAdmissionPolicy 'no-patched' with "
              "binding 'no-patched' denied request: failed expression: !has(object.metadata.annotations.patched)")
    clusters.virtual_server.faults.fail(422, verb="update", resource="runtimeclasses", times=1000, message=denial)
    doc = with_patches({"path": 'metadata.annotations["patched"]', "expression": '"yes"'})
    async with patched_syncer(clusters, doc):
        events = await wait_for(clusters.virtual, EVENTS, bool, namespace="default", what="PatchFailed")
        kept = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    (event,) = events.values()
    assert (event["type"], event["reason"], event["involvedObject"]["name"]) == ("Warning", "PatchFailed", "gvisor")
    assert event["message"] == ('runtime class "gvisor": patches failed: the virtual API server refused the patched '
                                f"copy: {denial}")
    assert kept["metadata"]["resourceVersion"] == good["metadata"]["resourceVersion"]



async def test_a_new_handlers_copy_refused_for_a_rule_the_syncer_lacks_keeps_the_old_copy(clusters: Clusters) -> None:
    # A handler change deletes the copy and creates the new one (the field is immutable): the new one is created as
    # a dry run first, which the API server admits and validates before finding the name taken (a 409 then means it
    # passed), so a ValidatingAdmissionPolicy's 422 keeps the old copy for the virtual pods that name it.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", DEV))
    denial = ("runtimeclasses.node.k8s.io \"gvisor\" is forbidden: ValidatingAdmissionPolicy 'handlers' with "
              "binding 'handlers' denied request: failed expression: object.handler != 'runsc-debug'")
    doc = with_patches({"path": 'metadata.annotations["patched"]', "expression": '"yes"'})
    async with patched_syncer(clusters, doc) as syncer:
        await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: (o.get("gvisor") or {}).get("metadata", {}).get(
            "annotations", {}).get("patched") == "yes", what="the patched copy")
        await syncer.wait_idle()
    good = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    # the host's handler changed while the syncer was away (a handler is immutable: the host class made anew)
    await clusters.host.delete(RUNTIMECLASSES, "gvisor")
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc-debug", DEV))
    clusters.virtual_server.faults.fail(422, verb="create", resource="runtimeclasses", times=1000, message=denial)
    async with patched_syncer(clusters, doc):
        events = await wait_for(clusters.virtual, EVENTS, bool, namespace="default", what="PatchFailed")
        kept = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    (event,) = events.values()
    assert event["message"] == ('runtime class "gvisor": patches failed: the virtual API server refused the patched '
                                f"copy: {denial}")
    assert (kept["handler"], kept["metadata"]["uid"]) == ("runsc", good["metadata"]["uid"])

async def test_an_expression_with_a_new_value_each_time_writes_once_per_change(clusters: Clusters) -> None:
    # Regression: each reconcile evaluated again and wrote, and the echo of that write was the next reconcile:
    # String(Math.random()) wrote thousands of times a second.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", DEV))
    doc = with_patches({"path": 'metadata.annotations["synced-at"]', "expression": "String(Math.random())"})
    async with patched_syncer(clusters, doc) as syncer:
        await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o, what="synced")
        await asyncio.sleep(0.5)
        await syncer.wait_idle()
        # the create, then the copy patched once with itself in scope (test_patches
        # test_a_created_copy_is_patched_again_with_itself_in_scope), then quiet
        assert [r[0] for r in rc_writes(clusters)] == ["POST", "PUT"]
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"tier": "1"}}})
        await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: o["gvisor"]["metadata"]["labels"].get("tier")
                       == "1", what="the host change")
        await asyncio.sleep(0.5)
        await syncer.wait_idle()
        assert [r[0] for r in rc_writes(clusters)] == ["POST", "PUT", "PUT"]  # one write for the host change


async def test_a_copy_as_the_api_server_stores_it_is_not_written_again(clusters: Clusters) -> None:
    # A real API server stores a quantity canonically (apimachinery resource.Quantity: "0.5" as "500m") and drops
    # omitempty fields that are empty (node/v1 Scheduling.nodeSelector, .tolerations; core/v1 Toleration.value).
    # The copy the syncer computes has the patch's forms; compared as they are, every reconcile wrote.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", DEV, overhead={"podFixed": {"cpu": "250m"}},
                                                  scheduling={"nodeSelector": {"a": "b"}, "tolerations": [
                                                      {"key": "sandbox", "operator": "Exists", "value": ""}]}))
    doc = with_patches({"path": 'overhead.podFixed["cpu"]', "expression": '"0.5"'},
                       {"path": 'scheduling.nodeSelector["a"]', "expression": "null"},
                       {"path": "scheduling.tolerations[*].value", "expression": '""'})
    stored = rc("gvisor", "runsc", DEV, overhead={"podFixed": {"cpu": "500m"}},
                scheduling={"tolerations": [{"key": "sandbox", "operator": "Exists"}]})
    stored["metadata"]["annotations"] = {}
    await clusters.virtual.create(RUNTIMECLASSES, stored)
    before = len(rc_writes(clusters))
    async with patched_syncer(clusters, doc) as syncer:
        await syncer.wait_idle()
        syncer.rc_queue.add("gvisor")
        await syncer.wait_idle()
    assert rc_writes(clusters)[before:] == []
