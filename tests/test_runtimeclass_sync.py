"""RuntimeClass sync host -> virtual: every row of behaviour.md section 2, over real HTTP."""

from __future__ import annotations

import asyncio
import logging

import pytest

from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import RUNTIMECLASSES
from syncer.kube.wait import wait_for
from tests.conftest import Clusters, eventually, hold_watch_down, rc, rc_config, running_syncer, virtual_rc_names

DEV = {"matchLabels": {"environment": "development"}}


async def test_matching_class_is_copied_without_server_fields(clusters: Clusters) -> None:
    h = clusters.host
    host_rc = await h.create(RUNTIMECLASSES, rc(
        "gvisor", "runsc", {"environment": "development"}, overhead={"podFixed": {"cpu": "50m"}},
        scheduling={"nodeSelector": {"sandbox": "gvisor"},
                    "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}))
    await h.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"annotations": {"team": "platform"},
                                                          "finalizers": ["example.com/keep"]}})
    host_rc = await h.get(RUNTIMECLASSES, "gvisor")
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced")
        v = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    assert v["handler"] == "runsc" and v["overhead"] == host_rc["overhead"] and v["scheduling"] == host_rc["scheduling"]
    assert v["metadata"]["labels"] == {"environment": "development"}
    assert v["metadata"]["annotations"] == {"team": "platform"}
    assert v["metadata"]["uid"] != host_rc["metadata"]["uid"]
    assert "finalizers" not in v["metadata"]
    # the host object is never written: same resourceVersion as before the syncer ran
    after = await h.get(RUNTIMECLASSES, "gvisor")
    assert after["metadata"]["resourceVersion"] == host_rc["metadata"]["resourceVersion"]


async def test_virtual_drift_is_overwritten_and_host_wins(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        await clusters.virtual.patch(RUNTIMECLASSES, "gvisor", {
            "metadata": {"labels": {"tenant-added": "yes"}, "annotations": {"x": "y"}},
            "overhead": {"podFixed": {"cpu": "1"}}})
        objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o and (
            o["gvisor"]["metadata"].get("labels") == {"environment": "development"}
            and not o["gvisor"]["metadata"].get("annotations") and "overhead" not in o["gvisor"]),
            what="virtual gvisor restored from the host")
    assert objs["gvisor"]["handler"] == "runsc"


async def test_host_changes_flow_through_and_handler_change_recreates(clusters: Clusters) -> None:
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("kata", "kata-qemu", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "kata" in n, "kata synced")
        first_uid = (await clusters.virtual.get(RUNTIMECLASSES, "kata"))["metadata"]["uid"]
        await h.patch(RUNTIMECLASSES, "kata", {"metadata": {"labels": {"tier": "gold"}},
                                               "scheduling": {"nodeSelector": {"kata": "true"}}})
        await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "kata" in o and o["kata"].get("scheduling") == {
            "nodeSelector": {"kata": "true"}} and o["kata"]["metadata"]["labels"].get("tier") == "gold",
            what="host update copied")
        assert (await clusters.virtual.get(RUNTIMECLASSES, "kata"))["metadata"]["uid"] == first_uid
        # handler is immutable: the host class is replaced, so the virtual one is re-created
        await h.delete(RUNTIMECLASSES, "kata")
        await h.create(RUNTIMECLASSES, rc("kata", "kata-fc", {"environment": "development"}))
        objs = await wait_for(clusters.virtual, RUNTIMECLASSES,
                              lambda o: "kata" in o and o["kata"]["handler"] == "kata-fc", what="new handler")
    assert objs["kata"]["metadata"]["uid"] != first_uid


async def test_non_matching_class_is_not_synced_and_logged(clusters: Clusters,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
        assert await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced") == {"gvisor"}
        await syncer.wait_idle()
    assert ("did not sync runtime class \"kata-qemu\" because it does not match the selector under "
            "'sync.fromHost.runtimeClasses.selector'") in caplog.messages


async def test_relabelled_class_is_removed_then_restored(clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        await h.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "production"}}})
        await virtual_rc_names(clusters, lambda n: "gvisor" not in n, "gvisor removed after relabel")
        await h.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "development"}}})
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor restored after relabel")


async def test_host_deletion_removes_virtual(clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        await clusters.host.delete(RUNTIMECLASSES, "gvisor")
        await virtual_rc_names(clusters, lambda n: not n, "gvisor removed")
    assert "delete virtual runtime class gvisor, because physical object is missing" in caplog.messages


async def test_locally_created_virtual_classes_are_deleted(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(RUNTIMECLASSES, rc("tenant-made"))
        await clusters.virtual.create(RUNTIMECLASSES, rc("kata-qemu"))  # exists on the host, but does not match
        await virtual_rc_names(clusters, lambda n: not n, "local classes deleted")


async def test_user_deleted_synced_class_is_recreated(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        uid = (await clusters.virtual.get(RUNTIMECLASSES, "gvisor"))["metadata"]["uid"]
        await clusters.virtual.delete(RUNTIMECLASSES, "gvisor")
        objs = await wait_for(clusters.virtual, RUNTIMECLASSES,
                              lambda o: "gvisor" in o and o["gvisor"]["metadata"]["uid"] != uid, what="re-created")
    assert objs["gvisor"]["handler"] == "gvisor"


async def test_restart_with_drift_converges(clusters: Clusters) -> None:
    h, v = clusters.host, clusters.virtual
    for name, env in (("gvisor", "development"), ("youki", "development"), ("kata", "production")):
        await h.create(RUNTIMECLASSES, rc(name, labels={"environment": env}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: n == {"gvisor", "youki"}, "initial sync")
    # while the syncer is down: host changes, and tenants change the virtual cluster
    await h.delete(RUNTIMECLASSES, "youki")
    await h.patch(RUNTIMECLASSES, "kata", {"metadata": {"labels": {"environment": "development"}}})
    await h.create(RUNTIMECLASSES, rc("runc", labels={"environment": "development"}))
    await v.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "hacked"}}})
    await v.create(RUNTIMECLASSES, rc("local"))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: n == {"gvisor", "kata", "runc"}, "converged after restart")
        objs = await wait_for(v, RUNTIMECLASSES, lambda o: o.get("gvisor", {}).get("metadata", {}).get("labels") == {
            "environment": "development"}, what="gvisor labels restored")
    assert set(objs) == {"gvisor", "kata", "runc"}


async def test_controlled_by_label_leaves_the_name_alone(clusters: Clusters) -> None:
    h, v = clusters.host, clusters.virtual
    await h.create(RUNTIMECLASSES, rc("managed-elsewhere", labels={
        "environment": "development", "vcluster.loft.sh/controlled-by": "other"}))
    await h.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await v.create(RUNTIMECLASSES, rc("virtual-owned", labels={"vcluster.loft.sh/controlled-by": "x"}))
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        await syncer.wait_idle()
        names = set(o["metadata"]["name"] for o in (await v.list(RUNTIMECLASSES))["items"])
    assert names == {"gvisor", "virtual-owned"}


async def test_disabled_feature_syncs_no_classes(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    await clusters.virtual.create(RUNTIMECLASSES, rc("local"))
    async with running_syncer(clusters, rc_config(DEV, enabled=False)) as syncer:
        await syncer.wait_idle()
        names = {o["metadata"]["name"] for o in (await clusters.virtual.list(RUNTIMECLASSES))["items"]}
    assert names == {"local"}
    assert not any(r.qualified == RUNTIMECLASSES.qualified for r in (i.resource for i in syncer.informers))


async def test_empty_selector_syncs_everything(clusters: Clusters) -> None:
    for name in ("a", "b", "c"):
        await clusters.host.create(RUNTIMECLASSES, rc(name, labels={"n": name} if name != "c" else None))
    async with running_syncer(clusters, rc_config({})):
        await virtual_rc_names(clusters, lambda n: n == {"a", "b", "c"}, "all synced")


async def test_conflicting_virtual_write_is_retried(clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    fault = clusters.virtual_server.faults.fail(409, verb="create", resource="runtimeclasses", times=2,
                                                message="injected conflict", agent=DEFAULT_USER_AGENT)
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced after conflicts")
    assert fault.hits == 2
    retries = [r for r in caplog.records if "injected conflict" in r.getMessage()]
    assert retries and all(r.levelno == logging.INFO for r in retries)  # routine: nothing for an operator


async def test_changes_the_cache_never_saw_are_caught_after_a_relist(clusters: Clusters) -> None:
    """The syncer creates a virtual class while its virtual watch is down; a user deletes it before the
    watch comes back; the re-list shows no difference from the cache, yet the class is restored."""
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        down = clusters.virtual_server.faults.fail(503, verb="watch", resource="runtimeclasses", times=10_000,
                                                   agent=DEFAULT_USER_AGENT)  # the syncer's watch only
        clusters.virtual_server.cut_watches()
        await asyncio.wait_for(down.wait_hits(1), 10)
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "created while the virtual watch is down")
        await clusters.virtual.delete(RUNTIMECLASSES, "gvisor")
        clusters.virtual_server.expire_history()  # the watch cannot resume: a re-list is needed
        lists = next(i for i in syncer.informers if i.name == "virtual/runtimeclasses.node.k8s.io").lists
        clusters.virtual_server.faults.clear()
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "restored after the re-list")
        assert next(i for i in syncer.informers if i.name == "virtual/runtimeclasses.node.k8s.io").lists > lists


async def test_a_class_replaced_behind_a_stale_cache_is_not_deleted(clusters: Clusters) -> None:
    # The syncer deletes a virtual class with the uid it saw as a precondition, so a class that took the name
    # meanwhile and is another controller's (vcluster.loft.sh/controlled-by) is not deleted by mistake. Here the
    # syncer's watch of virtual classes is slow to come back, so its cache still holds its own copy.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced")
        await syncer.wait_idle()
        slow = clusters.virtual_server.faults.delay(1.0, verb="watch", resource="runtimeclasses",
                                                    agent=DEFAULT_USER_AGENT)
        clusters.virtual_server.cut_watches()
        await asyncio.wait_for(slow.wait_hits(1), 10)
        storage = clusters.virtual_server.storage
        storage.remove(RUNTIMECLASSES, storage.objects(RUNTIMECLASSES)[("", "gvisor")])
        other = rc("gvisor", labels={"vcluster.loft.sh/controlled-by": "other"})
        other["metadata"]["uid"] = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
        storage.write(RUNTIMECLASSES, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", **other}, None)
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "prod"}}})
        delete = ("DELETE", "/apis/node.k8s.io/v1/runtimeclasses/gvisor")
        await eventually(lambda: delete in [(m, p) for m, p, _ in clusters.virtual_server.requests],
                         "the syncer's delete of the copy it saw (refused: another uid)")
        uid = other["metadata"]["uid"]
        await eventually(lambda: ((syncer.virtual_rcs.full("gvisor") or {}).get("metadata") or {}).get("uid") == uid,
                         "the watch back, with the other class")
        await syncer.wait_idle()
        kept = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    assert kept["metadata"]["uid"] == other["metadata"]["uid"]


async def test_a_copy_made_while_its_watch_is_down_goes_when_its_host_class_went_meanwhile(clusters: Clusters) -> None:
    # Found by the soak (seed 20261126): the syncer does not reconcile the watch event that only reports its own
    # create (the echo). But when the host class is deleted before the echo arrives, the reconcile of that deletion
    # sees no copy in a cache that has not caught up, and does nothing; the echo must then be reconciled, or the
    # copy stays forever. The virtual watch is held down on the injected clock (its retry waits for it).
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await hold_watch_down(clusters.virtual_server, "runtimeclasses")
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
        await eventually(lambda: ("", "gvisor") in clusters.virtual_server.storage.objects(RUNTIMECLASSES),
                         "the copy created (its echo not seen yet)")
        await clusters.host.delete(RUNTIMECLASSES, "gvisor")
        await eventually(lambda: syncer.host_rcs.get("gvisor") is None, "the host class's deletion seen")
        await syncer.wait_idle()
        assert syncer.virtual_rcs.get("gvisor") is None  # the reconcile of the deletion found no copy to delete
        clock.advance(60)  # the watch back: the copy's ADDED event
        await virtual_rc_names(clusters, lambda n: n == set(), "the copy deleted once its watch event arrived")
