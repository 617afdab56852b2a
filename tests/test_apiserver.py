"""The embedded API server behaves as the syncer and kubectl expect a kube-apiserver to behave
(test-apiserver.md), checked through the real client over HTTP."""

from __future__ import annotations

import asyncio

import pytest

from syncer.kube.client import ApiError, KubeClient, WatchEvent
from syncer.kube.resources import EVENTS, NAMESPACES, PODS, RUNTIMECLASSES, SECRETS
from tests.conftest import HOST_NS, Clusters, pod, rc


async def collect(client: KubeClient, res, rv: str, n: int, **kw) -> list[WatchEvent]:  # type: ignore[no-untyped-def]
    out: list[WatchEvent] = []

    async def run() -> None:
        async for ev in client.watch(res, rv, timeout_seconds=10, **kw):
            out.append(ev)
            if len(out) >= n:
                return

    await asyncio.wait_for(run(), 10)
    return out


async def test_list_has_kind_and_resource_version(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc"))
    listed = await clusters.host.list(RUNTIMECLASSES)
    assert listed["kind"] == "RuntimeClassList" and listed["apiVersion"] == "node.k8s.io/v1"
    assert int(listed["metadata"]["resourceVersion"]) >= int(listed["items"][0]["metadata"]["resourceVersion"])


async def test_create_get_conflicts_and_not_found(clusters: Clusters) -> None:
    h = clusters.host
    created = await h.create(RUNTIMECLASSES, rc("gvisor", "runsc"))
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    with pytest.raises(ApiError) as err:
        await h.create(RUNTIMECLASSES, rc("gvisor", "runsc"))
    assert err.value.already_exists and err.value.message == 'runtimeclasses.node.k8s.io "gvisor" already exists'
    with pytest.raises(ApiError) as err:
        await h.get(RUNTIMECLASSES, "nope")
    assert err.value.not_found and err.value.message == 'runtimeclasses.node.k8s.io "nope" not found'
    stale = dict(created, metadata={**meta, "labels": {"a": "b"}})
    await h.replace(RUNTIMECLASSES, stale)
    with pytest.raises(ApiError) as err:
        await h.replace(RUNTIMECLASSES, stale)  # same (now stale) resourceVersion
    assert err.value.conflict
    with pytest.raises(ApiError) as err:
        await h.patch(RUNTIMECLASSES, "gvisor", {"handler": "other"})
    assert err.value.status == 422 and "field is immutable" in err.value.message


async def test_generate_name_and_missing_namespace(clusters: Clusters) -> None:
    p = pod("")
    p["metadata"] = {"generateName": "web-"}
    created = await clusters.virtual.create(PODS, p, "default")
    assert created["metadata"]["name"].startswith("web-") and len(created["metadata"]["name"]) == 9
    with pytest.raises(ApiError) as err:
        await clusters.virtual.create(PODS, pod("x", namespace="missing"), "missing")
    assert err.value.not_found and 'namespaces "missing" not found' in err.value.message


async def test_patch_types(clusters: Clusters) -> None:
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"a": "1", "b": "2"}))
    out = await h.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert out["metadata"]["labels"] == {"b": "2", "c": "3"}
    out = await h.patch(RUNTIMECLASSES, "gvisor", [{"op": "add", "path": "/metadata/labels/d", "value": "4"}],
                        patch_type="json")
    assert out["metadata"]["labels"]["d"] == "4"
    with pytest.raises(ApiError) as err:
        await h.patch(RUNTIMECLASSES, "gvisor", [{"op": "test", "path": "/handler", "value": "x"}], patch_type="json")
    assert err.value.status == 422
    applied = await h.patch(RUNTIMECLASSES, "kata", rc("kata", "kata-qemu"), patch_type="apply")
    assert applied["handler"] == "kata-qemu"


async def test_finalizers_hold_deletion(clusters: Clusters) -> None:
    h = clusters.host
    obj = rc("gvisor", "runsc")
    obj["metadata"]["finalizers"] = ["example.com/hold"]
    await h.create(RUNTIMECLASSES, obj)
    deleting = await h.delete(RUNTIMECLASSES, "gvisor")
    assert deleting["metadata"]["deletionTimestamp"]
    assert (await h.get(RUNTIMECLASSES, "gvisor"))["metadata"]["deletionTimestamp"]
    await h.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiError) as err:
        await h.get(RUNTIMECLASSES, "gvisor")
    assert err.value.not_found


async def test_delete_preconditions(clusters: Clusters) -> None:
    # staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go BeforeDelete, which Store.Delete calls before the
    # storage sees the preconditions: errors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind},
    # ...) names the kind; the namespace registry (pkg/registry/core/namespace/storage/storage.go Delete) checks them
    # itself, as the storage words them, on `namespaces`
    h = clusters.host
    created = [await h.create(RUNTIMECLASSES, rc("gvisor", "runsc")),
               await h.create(PODS, pod("p", namespace=HOST_NS), HOST_NS),
               await h.create(SECRETS, {"metadata": {"name": "s"}}, HOST_NS),
               await h.get(NAMESPACES, HOST_NS)]
    for res, obj, on in zip((RUNTIMECLASSES, PODS, SECRETS, NAMESPACES), created,
                            ('RuntimeClass.node.k8s.io "gvisor"', 'Pod "p"', 'Secret "s"', f'namespaces "{HOST_NS}"'),
                            strict=True):
        meta = obj["metadata"]
        ns = meta.get("namespace")
        with pytest.raises(ApiError) as err:
            await h.delete(res, meta["name"], ns, uid="not-the-uid")
        why = (f"Precondition failed: UID in precondition: not-the-uid, UID in object meta: {meta['uid']}"
               if res == NAMESPACES else f"the UID in the precondition (not-the-uid) does not match the UID in record "
                                         f"({meta['uid']}). The object might have been deleted and then recreated")
        assert (err.value.status, err.value.reason, err.value.message) == (
            409, "Conflict", f"Operation cannot be fulfilled on {on}: {why}")
        assert err.value.other_object
        with pytest.raises(ApiError) as err:
            await h.delete(res, meta["name"], ns, resource_version="1")
        why = (f"Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: "
               f"{meta['resourceVersion']}" if res == NAMESPACES else
               f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record "
               f"({meta['resourceVersion']}). The object might have been modified")
        assert (err.value.status, err.value.message) == (409, f"Operation cannot be fulfilled on {on}: {why}")
        assert not err.value.other_object
        await h.get(res, meta["name"], ns)  # still there


async def test_a_uid_in_a_write_is_a_precondition(clusters: Clusters) -> None:
    # The generic registry (k8s.io/apiserver pkg/registry): a PUT's metadata.uid is a storage precondition
    # (rest.DefaultUpdatedObjectInfo.Preconditions: 409); a PATCH that sets another uid fails BeforeUpdate's
    # common-field validation (ValidateObjectMetaAccessorUpdate: metadata.uid is immutable, 422); a Binding's
    # metadata.uid is a precondition on the pod (BindingREST.setPodNodeAndMetadata, the conflict named on pods).
    v = clusters.virtual
    created = await v.create(PODS, pod("web"), "default")
    other = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"
    stale = {**created, "metadata": {**created["metadata"], "uid": other, "resourceVersion": ""}}
    with pytest.raises(ApiError) as err:
        await v.replace(PODS, stale, "default")
    # the storage's Preconditions.Check (staging/src/k8s.io/apiserver/pkg/storage/interfaces.go: NewInvalidObjError,
    # printed by StorageError.Error in storage/errors.go under the pod's etcd key) through
    # storeerr.InterpretUpdateError, as kubernetes-sigs/kueue issue 1591 quotes a real one ("Operation cannot be
    # fulfilled on pods \"group-1\": StorageError: invalid object, Code: 4, Key: /registry/pods/pod-e2e-vh69t/group-1,
    # ResourceVersion: 0, ...")
    storage_error = (f"StorageError: invalid object, Code: 4, Key: /registry/pods/default/web, ResourceVersion: 0, "
                     f"AdditionalErrorMsg: Precondition failed: UID in precondition: {other}, UID in object meta: "
                     f'{created["metadata"]["uid"]}')
    assert (err.value.status, err.value.message) == (409, f'Operation cannot be fulfilled on pods "web": '
                                                          f"{storage_error}")
    assert err.value.other_object
    with pytest.raises(ApiError) as err:
        await v.patch(PODS, "web", {"status": {"podIP": "10.0.0.9"}}, "default", subresource="status", uid=other)
    assert (err.value.status, err.value.message) == (
        422, f'Pod "web" is invalid: metadata.uid: Invalid value: "{other}": field is immutable')
    assert err.value.other_object
    with pytest.raises(ApiError) as err:
        await v.bind("web", "default", "node-1", uid=other)
    assert (err.value.status, err.value.message) == (409, f'Operation cannot be fulfilled on pods "web": '
                                                          f"{storage_error}")
    assert err.value.other_object
    with pytest.raises(ApiError) as err:  # a JSON patch that starts by setting the uid
        await v.patch(PODS, "web", [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}], "default",
                      patch_type="json", uid=other)
    assert err.value.status == 422 and err.value.other_object
    with pytest.raises(ValueError):  # an apply patch is the caller's whole intent: no precondition to add
        await v.patch(PODS, "web", {}, "default", patch_type="apply", uid=other)
    await v.patch(PODS, "web", {"status": {"podIP": "10.0.0.9"}}, "default", subresource="status",
                  uid=created["metadata"]["uid"])
    await v.bind("web", "default", "node-1", uid=created["metadata"]["uid"])
    got = await v.get(PODS, "web", "default")
    assert (got["status"]["podIP"], got["spec"]["nodeName"]) == ("10.0.0.9", "node-1")


async def test_label_and_field_selectors(clusters: Clusters) -> None:
    h = clusters.host
    for name, env in (("a", "dev"), ("b", "prod"), ("c", None)):
        await h.create(RUNTIMECLASSES, rc(name, labels={"env": env} if env else None))
    names = lambda lst: [o["metadata"]["name"] for o in lst["items"]]  # noqa: E731
    assert names(await h.list(RUNTIMECLASSES, label_selector="env=dev")) == ["a"]
    assert names(await h.list(RUNTIMECLASSES, label_selector="env notin (dev)")) == ["b", "c"]
    assert names(await h.list(RUNTIMECLASSES, label_selector="!env")) == ["c"]
    assert names(await h.list(RUNTIMECLASSES, field_selector="metadata.name=b")) == ["b"]
    await clusters.virtual.create(EVENTS, {"metadata": {"name": "e1"}, "involvedObject": {"name": "p", "kind": "Pod"},
                                           "reason": "X"}, "default")
    ev = await clusters.virtual.list(EVENTS, "default", field_selector="involvedObject.name=p,involvedObject.kind=Pod")
    assert names(ev) == ["e1"]


async def test_watch_resumes_from_a_resource_version(clusters: Clusters) -> None:
    h = clusters.host
    start = (await h.list(RUNTIMECLASSES))["metadata"]["resourceVersion"]
    await h.create(RUNTIMECLASSES, rc("a"))
    await h.patch(RUNTIMECLASSES, "a", {"metadata": {"labels": {"x": "y"}}})
    await h.delete(RUNTIMECLASSES, "a")
    events = await collect(h, RUNTIMECLASSES, start, 3)
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(start)


async def test_watch_too_old_is_410(clusters: Clusters) -> None:
    h = clusters.host
    start = (await h.list(RUNTIMECLASSES))["metadata"]["resourceVersion"]
    await h.create(RUNTIMECLASSES, rc("a"))
    clusters.host_server.storage.expire_history()
    (event,) = await collect(h, RUNTIMECLASSES, start, 1)
    assert event.type == "ERROR" and event.object["code"] == 410 and event.object["reason"] == "Expired"


async def test_watch_selector_transitions_and_bookmarks(clusters: Clusters) -> None:
    h = clusters.host
    start = (await h.list(RUNTIMECLASSES))["metadata"]["resourceVersion"]
    await h.create(RUNTIMECLASSES, rc("a", labels={"env": "prod"}))
    await h.patch(RUNTIMECLASSES, "a", {"metadata": {"labels": {"env": "dev"}}})
    await h.patch(RUNTIMECLASSES, "a", {"metadata": {"labels": {"env": "prod"}}})
    events = await collect(h, RUNTIMECLASSES, start, 3, label_selector="env=dev")
    assert [e.type for e in events[:2]] == ["ADDED", "DELETED"]
    assert events[2].type == "BOOKMARK"  # nothing else matches; the server keeps the watcher's rv current
    assert int(events[2].object["metadata"]["resourceVersion"]) >= int(events[1].object["metadata"]["resourceVersion"])


async def test_runtime_class_admission(clusters: Clusters) -> None:
    h = clusters.host
    ns = "vc-test"
    await h.create(RUNTIMECLASSES, rc("gvisor", "runsc", overhead={"podFixed": {"cpu": "50m"}}, scheduling={
        "nodeSelector": {"sandbox": "gvisor"},
        "tolerations": [{"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]}))
    with pytest.raises(ApiError) as err:
        await h.create(PODS, pod("p0", "nope", ns), ns)
    assert err.value.status == 403
    assert err.value.message == 'pods "p0" is forbidden: pod rejected: RuntimeClass "nope" not found'
    created = await h.create(PODS, pod("p1", "gvisor", ns, tolerations=[
        {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"}]), ns)
    assert created["spec"]["overhead"] == {"cpu": "50m"}
    assert created["spec"]["nodeSelector"] == {"sandbox": "gvisor"}
    # the class's toleration is not added twice (DefaultTolerationSeconds adds its own two)
    assert [t["key"] for t in created["spec"]["tolerations"]] == [
        "sandbox", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
    with pytest.raises(ApiError) as err:
        await h.create(PODS, pod("p2", "gvisor", ns, nodeSelector={"sandbox": "kata"}), ns)
    assert err.value.message == ('pods "p2" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] '
                                 "= gvisor; pod.spec.nodeSelector[sandbox] = kata")
    with pytest.raises(ApiError) as err:
        await h.create(PODS, pod("p3", "gvisor", ns, overhead={"cpu": "1"}), ns)
    assert "Pod's Overhead doesn't match RuntimeClass's defined Overhead" in err.value.message


async def test_pod_spec_is_immutable_except_images(clusters: Clusters) -> None:
    v = clusters.virtual
    await v.create(PODS, pod("p"), "default")
    out = await v.patch(PODS, "p", [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.28"}],
                        "default", patch_type="json")
    assert out["spec"]["containers"][0]["image"] == "nginx:1.28"
    with pytest.raises(ApiError) as err:
        await v.patch(PODS, "p", {"spec": {"restartPolicy": "Never"}}, "default")
    assert err.value.status == 422


async def test_status_subresource(clusters: Clusters) -> None:
    v = clusters.virtual
    created = await v.create(PODS, pod("p"), "default")
    assert created["status"]["phase"] == "Pending"
    out = await v.patch(PODS, "p", {"status": {"phase": "Running"}, "metadata": {"labels": {"x": "y"}}},
                        "default", subresource="status")
    # podStatusStrategy.PrepareForUpdate resets the spec, ownerReferences and deletionTimestamp, not the labels
    assert out["status"]["phase"] == "Running" and out["metadata"]["labels"] == {"x": "y"}
    out = await v.patch(PODS, "p", {"status": {"phase": "Failed"}}, "default")
    assert out["status"]["phase"] == "Running"  # the main resource ignores status


async def test_injected_faults(clusters: Clusters) -> None:
    clusters.host_server.faults.fail(503, verb="list", resource="runtimeclasses", retry_after=2)
    with pytest.raises(ApiError) as err:
        await clusters.host.list(RUNTIMECLASSES)
    assert err.value.status == 503 and err.value.retry_after == 2
    await clusters.host.list(RUNTIMECLASSES)  # used up


async def test_restart_keeps_or_wipes_state(clusters: Clusters) -> None:
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("a"))
    await clusters.host_server.restart()
    assert (await h.get(RUNTIMECLASSES, "a"))["handler"] == "a"
    await clusters.host_server.restart(wipe=True)
    with pytest.raises(ApiError) as err:
        await h.get(RUNTIMECLASSES, "a")
    assert err.value.not_found


async def test_a_watch_from_a_resource_version_ahead_gets_only_newer_events(clusters: Clusters) -> None:
    # After etcd is emptied a client may hold a resourceVersion the server has not reached. Cacher.Watch
    # (staging/src/k8s.io/apiserver/pkg/storage/cacher/cacher.go) accepts it without waiting (waitUntilWatchCache
    # FreshAndForceAllEvents blocks only a watch with sendInitialEvents) and cacheWatcher.process (cache_watcher.go)
    # sends "only events newer than resourceVersion", bookmarks included
    h, server = clusters.host, clusters.host_server
    await h.create(RUNTIMECLASSES, rc("old"))
    await server.restart(wipe=True)
    ahead = int((await h.list(RUNTIMECLASSES))["metadata"]["resourceVersion"]) + 3
    connected = asyncio.Event()
    seen: list[tuple[str, str | None, int]] = []

    async def watch() -> None:
        async for ev in h.watch(RUNTIMECLASSES, str(ahead), timeout_seconds=10, on_connected=connected.set):
            meta = ev.object["metadata"]
            seen.append((ev.type, meta.get("name"), int(meta["resourceVersion"])))
            if meta.get("name") == "e":
                return

    task = asyncio.create_task(watch())
    await asyncio.wait_for(connected.wait(), 5)
    await asyncio.sleep(2 * server.bookmark_interval)  # a bookmark now would be behind the watch's position
    for name in ("a", "b", "c", "d", "e"):
        await h.create(RUNTIMECLASSES, rc(name))
    await asyncio.wait_for(task, 10)
    assert [(t, n) for t, n, _ in seen if t != "BOOKMARK"] == [("ADDED", "d"), ("ADDED", "e")]
    assert all(rv > ahead for _, _, rv in seen)


async def test_chunked_list_with_continue_tokens(clusters: Clusters) -> None:
    h = clusters.host
    for name in ("a", "b", "c", "d", "e"):
        await h.create(RUNTIMECLASSES, rc(name))
    first = await h.list(RUNTIMECLASSES, limit=2)
    assert [o["metadata"]["name"] for o in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == 3 and first["metadata"]["continue"]
    second = await h.list(RUNTIMECLASSES, limit=2, continue_token=first["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in second["items"]] == ["c", "d"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]  # the first chunk's
    last = await h.list(RUNTIMECLASSES, limit=2, continue_token=second["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in last["items"]] == ["e"] and "continue" not in last["metadata"]


async def test_continue_token_too_old_is_410_with_the_real_message(clusters: Clusters) -> None:
    h = clusters.host
    for name in ("a", "b", "c"):
        await h.create(RUNTIMECLASSES, rc(name))
    token = (await h.list(RUNTIMECLASSES, limit=1))["metadata"]["continue"]
    await h.create(RUNTIMECLASSES, rc("d"))
    clusters.host_server.storage.expire_history()  # etcd compacted past the token's revision
    with pytest.raises(ApiError) as e:
        await h.list(RUNTIMECLASSES, limit=1, continue_token=token)
    assert e.value.expired and e.value.reason == "Expired"
    assert e.value.message.startswith("The provided continue parameter is too old to display a consistent list")
    with pytest.raises(ApiError) as bad:
        await h.list(RUNTIMECLASSES, limit=1, continue_token="not-a-token")
    assert bad.value.status == 400
