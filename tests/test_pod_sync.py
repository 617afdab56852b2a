"""Pods virtual -> host behind the RuntimeClass gate: every gate case of behaviour.md section 3,
host name and metadata translation, events with counts, and re-evaluation when a class changes."""

from __future__ import annotations

from typing import Any

from kubesim.vcluster import host_name as host_pod_name
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import EVENTS, NAMESPACES, PODS, RUNTIMECLASSES, SERVICEACCOUNTS
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, pod, rc, rc_config, running_syncer, virtual_rc_names

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}
SEL = "'sync.fromHost.runtimeClasses.selector'"


async def host_pods(c: Clusters, predicate: Any, what: str) -> dict[str, Obj]:
    objs = await wait_for(c.host, PODS, lambda o: predicate({k.split("/", 1)[1]: v for k, v in o.items()}),
                          namespace=HOST_NS, timeout=10, what=what)
    return {k.split("/", 1)[1]: v for k, v in objs.items()}


async def warnings_for(c: Clusters, pod_name: str, predicate: Any = bool, what: str = "",
                       timeout: float = 10) -> list[Obj]:
    """Wait until the SyncWarning/SyncError events of a virtual pod satisfy `predicate`; return them."""
    def select(objs: dict[str, Obj]) -> list[Obj]:
        return [e for e in objs.values() if e["involvedObject"]["name"] == pod_name and e["type"] == "Warning"]
    objs = await wait_for(c.virtual, EVENTS, lambda o: predicate(select(o)), namespace="default", timeout=timeout,
                          what=what or f"warning events on {pod_name}")
    return select(objs)


def hname(name: str, ns: str = "default") -> str:
    return host_pod_name(name, ns, VCLUSTER)


async def test_matching_class_syncs_with_translated_metadata(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"},
                                                  overhead={"podFixed": {"cpu": "50m"}}))
    async with running_syncer(clusters, rc_config(DEV)):
        p = pod("web", "gvisor", labels=None)
        p["metadata"]["labels"] = {"app": "web"}
        p["metadata"]["annotations"] = {"note": "x"}
        p["spec"]["serviceAccountName"] = "builder"
        await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "builder"}}, "default")
        p["spec"]["volumes"] = [{"name": "kube-api-access-abcde", "projected": {"sources": []}}]
        p["spec"]["containers"][0]["volumeMounts"] = [{"name": "kube-api-access-abcde", "mountPath": "/var/run"}]
        vpod = await clusters.virtual.create(PODS, p, "default")
        pods = await host_pods(clusters, lambda o: "web-x-default-x-test" in o, "host pod for web")
    hp = pods["web-x-default-x-test"]
    # the virtual namespace's labels go along as vcluster's ns-labels (HostLabelNamespace: sha256(key)[:10]), and
    # kube-apiserver labels every namespace kubernetes.io/metadata.name=<name> (SetDefaults_Namespace)
    assert hp["metadata"]["labels"] == {"app": "web", "vcluster.loft.sh/managed-by": VCLUSTER,
                                        "vcluster.loft.sh/namespace": "default",
                                        "vcluster.loft.sh/ns-label-test-x-cf1227b7b2": "default"}
    ann = hp["metadata"]["annotations"]
    assert ann["note"] == "x" and ann["vcluster.loft.sh/object-name"] == "web"
    assert ann["vcluster.loft.sh/object-namespace"] == "default"
    assert ann["vcluster.loft.sh/object-uid"] == vpod["metadata"]["uid"]
    assert ann["vcluster.loft.sh/object-kind"] == "/v1, Kind=Pod"
    # vcluster's addHostAnnotations: the host pod's own name and namespace
    assert (ann["vcluster.loft.sh/object-host-name"], ann["vcluster.loft.sh/object-host-namespace"]) == (
        "web-x-default-x-test", HOST_NS)
    spec = hp["spec"]
    assert spec["runtimeClassName"] == "gvisor" and spec["overhead"] == {"cpu": "50m"}  # host admission ran
    # section 3.1: the host pod runs as the vcluster's workload service account, never with a host token
    assert spec["automountServiceAccountToken"] is False and spec["serviceAccountName"] == f"vc-workload-{VCLUSTER}"
    # the token volume is carried, its token projections replaced by virtual-cluster tokens (none here)
    assert spec["volumes"] == [{"name": "kube-api-access-abcde", "projected": {"sources": []}}]


async def test_pod_without_runtime_class_syncs(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await host_pods(clusters, lambda o: hname("plain") in o, "plain synced")


async def test_missing_class_is_refused_with_not_found(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.virtual.create(PODS, pod("wasm", "wasm"), "default")
        (event,) = await warnings_for(clusters, "wasm")
        await syncer.wait_idle()
        assert not (await clusters.host.list(PODS, HOST_NS))["items"]
    assert event["reason"] == "SyncWarning"
    assert event["message"] == ('did not sync pod "wasm" to host because the runtime class "wasm" couldn\'t be '
                                'reached in the host: runtimeclasses.node.k8s.io "wasm" not found')
    assert event["source"] == {"component": "pod-syncer"} and event["reportingComponent"] == "pod-syncer"
    assert event["reportingInstance"].startswith("pod-syncer-") and event["action"] == "SyncPod"
    assert event["involvedObject"]["kind"] == "Pod" and event["involvedObject"]["uid"]
    assert event["count"] == 1 and event["firstTimestamp"] and event["lastTimestamp"]


async def test_class_being_deleted_is_refused(clusters: Clusters) -> None:
    doomed = rc("kata", labels={"environment": "development"})
    doomed["metadata"]["finalizers"] = ["example.com/drain"]
    await clusters.host.create(RUNTIMECLASSES, doomed)
    await clusters.host.delete(RUNTIMECLASSES, "kata")  # held by the finalizer
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("vm", "kata"), "default")
        (event,) = await warnings_for(clusters, "vm")
    assert event["message"] == ('did not sync pod "vm" to host because the runtime class "kata" couldn\'t be '
                                "reached in the host: runtime class is being deleted")


async def test_non_matching_class_is_refused(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("vm", "kata-qemu"), "default")
        (event,) = await warnings_for(clusters, "vm")
    assert event["message"] == (f'did not sync pod "vm" to host because the runtime class "kata-qemu" in the host '
                                f"does not match the selector under {SEL}")


async def test_unevaluable_labels_are_refused(clusters: Clusters) -> None:
    # A real API server never returns such labels; bad input must still give a clear refusal.
    # (the test API server refuses to store it, as a real one does, so it is put into its storage directly)
    clusters.host_server.storage.write(RUNTIMECLASSES, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                                        "metadata": {"name": "odd", "labels": {"environment": 7}},
                                                        "handler": "odd"}, None)
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("p", "odd"), "default")
        (event,) = await warnings_for(clusters, "p")
    assert event["message"].startswith(f'did not sync pod "p" to host because the runtime class "odd" in the host '
                                       f"could not be checked against the selector under {SEL}: ")


async def test_disabled_feature_or_empty_selector_does_not_gate(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV, enabled=False)):
        await clusters.virtual.create(PODS, pod("a", "kata-qemu"), "default")
        await host_pods(clusters, lambda o: hname("a") in o, "a synced with the feature disabled")
    async with running_syncer(clusters, rc_config(None)):
        await clusters.virtual.create(PODS, pod("b", "kata-qemu"), "default")
        await host_pods(clusters, lambda o: hname("b") in o, "b synced with no selector")


async def test_refused_pod_has_one_event_whose_count_rises(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("vm", "kata-qemu"), "default")
        await warnings_for(clusters, "vm", lambda evs: len(evs) == 1)
        await clusters.virtual.patch(PODS, "vm", {"metadata": {"labels": {"retry": "1"}}}, "default")
        events = await warnings_for(clusters, "vm", lambda evs: evs and evs[0]["count"] == 2, "count 2")
        await clusters.virtual.patch(PODS, "vm", {"metadata": {"labels": {"retry": "2"}}}, "default")
        events = await warnings_for(clusters, "vm", lambda evs: evs and evs[0]["count"] == 3, "count 3")
    assert len(events) == 1


async def test_event_count_survives_a_syncer_restart(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-qemu", labels={"environment": "production"}))
    await clusters.virtual.create(PODS, pod("vm", "kata-qemu"), "default")
    async with running_syncer(clusters, rc_config(DEV)):
        await warnings_for(clusters, "vm", lambda evs: len(evs) == 1)
    async with running_syncer(clusters, rc_config(DEV)):
        events = await warnings_for(clusters, "vm", lambda evs: evs and evs[0]["count"] == 2, "count 2")
    assert len(events) == 1


async def test_refused_pod_syncs_when_its_class_is_relabelled(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("kata-fc", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("vm", "kata-fc"), "default")
        await warnings_for(clusters, "vm")
        await clusters.host.patch(RUNTIMECLASSES, "kata-fc", {"metadata": {"labels": {"environment": "development"}}})
        pods = await host_pods(clusters, lambda o: hname("vm") in o, "vm synced after relabel")
    assert pods[hname("vm")]["spec"]["runtimeClassName"] == "kata-fc"


async def test_refused_pod_syncs_when_its_class_appears(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("late", "youki"), "default")
        await warnings_for(clusters, "late")
        await clusters.host.create(RUNTIMECLASSES, rc("youki", labels={"environment": "development"}))
        await host_pods(clusters, lambda o: hname("late") in o, "late synced once youki exists")


async def test_updates_flow_to_the_host_and_deletes_follow(clusters: Clusters) -> None:
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web synced")
        await clusters.virtual.patch(PODS, "web", {"metadata": {"labels": {"version": "2"}}}, "default")
        await clusters.virtual.patch(PODS, "web", [{"op": "replace", "path": "/spec/containers/0/image",
                                                    "value": "nginx:1.28"}], "default", patch_type="json")
        pods = await host_pods(clusters, lambda o: hname("web") in o and o[hname("web")]["spec"]["containers"][0][
            "image"] == "nginx:1.28" and o[hname("web")]["metadata"]["labels"].get("version") == "2", "web updated")
        assert pods[hname("web")]["metadata"]["labels"]["vcluster.loft.sh/managed-by"] == VCLUSTER
        await clusters.virtual.delete(PODS, "web", "default")
        await host_pods(clusters, lambda o: hname("web") not in o, "host pod deleted with the virtual pod")


async def test_long_names_are_hashed_like_vcluster(clusters: Clusters) -> None:
    name = "a-very-long-pod-name-that-goes-on-and-on-and-on-for-a-while"
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod(name), "default")
        pods = await host_pods(clusters, lambda o: len(o) == 1, "long-named pod synced")
    (host_name,) = pods
    assert len(host_name) == 63 and host_name == hname(name)
    assert host_name.startswith(f"{name}-x-default-x-test"[:52] + "-")


def _pod_creates(c: Clusters) -> int:
    """How many pod creates the syncer sent to the host namespace (POSTs to its pods collection: the test
    server records no bodies, so a test that counts them syncs one pod)."""
    return sum(1 for m, p, agent in c.host_server.requests
               if m == "POST" and p == f"/api/v1/namespaces/{HOST_NS}/pods" and agent.startswith("runtimeclass-syncer"))


async def test_host_pod_of_another_owner_is_left_alone_and_the_pod_syncs_once_it_is_gone(clusters: Clusters) -> None:
    squatter = pod(hname("web"), namespace=HOST_NS)
    squatter["metadata"]["labels"] = {"owner": "someone-else"}
    created = await clusters.host.create(PODS, squatter, HOST_NS)
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock) as syncer:
        await clusters.virtual.create(PODS, pod("web"), "default")
        (event,) = await warnings_for(clusters, "web")
        after = await clusters.host.get(PODS, hname("web"), HOST_NS)
        assert event["message"] == (f'did not sync pod "web" to host because a pod named "{hname("web")}" already '
                                    f'exists in host namespace "{HOST_NS}" and is not managed by vcluster "{VCLUSTER}"')
        assert event["reason"] == "SyncError"
        assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        # the syncer cannot watch a pod that is not its own: it looks again after 30 s (a recheck that finds
        # the name still taken says nothing new), and once the other pod is gone the virtual pod is synced
        tries = _pod_creates(clusters)
        clock.advance(30)
        await eventually(lambda: _pod_creates(clusters) > tries, "the recheck's create")
        await syncer.wait_idle()  # the recheck's reconcile done
        (again,) = await warnings_for(clusters, "web")
        assert again.get("count", 1) == 1
        await clusters.host.delete(PODS, hname("web"), HOST_NS)
        clock.advance(30)
        synced = await host_pods(clusters, lambda o: o.get(hname("web"), {}).get("metadata", {}).get(
            "labels", {}).get("vcluster.loft.sh/managed-by") == VCLUSTER, "web synced once the name is free")
    assert synced[hname("web")]["metadata"]["annotations"]["vcluster.loft.sh/object-name"] == "web"


async def test_a_taken_name_is_reported_though_the_first_write_of_its_event_fails(clusters: Clusters) -> None:
    # found by the soak (seed 20261310): the SyncError was marked as recorded before its write, and a failed
    # write (here one HTTP 500) was never tried again
    squatter = pod(hname("web"), namespace=HOST_NS)
    await clusters.host.create(PODS, squatter, HOST_NS)
    failed = clusters.virtual_server.faults.fail(500, verb="create", resource="events", agent=DEFAULT_USER_AGENT)
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("web"), "default")
        await eventually(lambda: failed.times == 0, "the event's first write refused")
        (event,) = await warnings_for(clusters, "web", what="the SyncError written on the retry")
    assert event["reason"] == "SyncError" and event["message"].endswith(f'is not managed by vcluster "{VCLUSTER}"')


async def test_an_event_of_a_created_host_pod_is_written_though_its_first_write_fails(clusters: Clusters) -> None:
    # the SyncWarning vcluster writes for an affinity term with namespaces and a namespaceSelector
    # (translatePodAffinityTerm; its words in translator_test.go TestPodAffinityTermsTranslation) comes after the
    # host pod's create: a refused write (one HTTP 500) is written by the retry, which finds the pod created
    words = ("Inter-pod affinity rule(s) that use both .namespaces and .namespaceSelector fields in the same term are "
             "not supported by vcluster yet. The .namespaceSelector fields of the unsupported affinity entries will "
             "be ignored.")
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname",
            "namespaces": ["data"], "namespaceSelector": {"matchLabels": {"team": "data"}}}
    failed = clusters.virtual_server.faults.fail(500, verb="create", resource="events", agent=DEFAULT_USER_AGENT)
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("web", affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}), "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        await eventually(lambda: failed.times == 0, "the warning's first write refused")
        (event,) = await warnings_for(clusters, "web", what="the SyncWarning, written on the retry")
    assert (event["reason"], event["message"]) == ("SyncWarning", words)


async def test_a_host_name_collision_names_the_pod_that_holds_the_name(clusters: Clusters) -> None:
    # vcluster's host names collide (`<name>-x-<namespace>-x-<vcluster>`, loft-sh/vcluster
    # pkg/util/translate/single_namespace.go): b-x-default/a and default/a-x-b are both a-x-b-x-default-x-test.
    # The second pod is not synced and its event says which virtual pod's copy holds the name.
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "b-x-default"}})
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("a", namespace="b-x-default"), "b-x-default")
        first = await host_pods(clusters, lambda o: "a-x-b-x-default-x-test" in o, "b-x-default/a synced")
        await clusters.virtual.create(PODS, pod("a-x-b"), "default")
        (event,) = await warnings_for(clusters, "a-x-b")
        after = await clusters.host.get(PODS, "a-x-b-x-default-x-test", HOST_NS)
    assert event["reason"] == "SyncError"
    assert event["message"] == ('did not sync pod "a-x-b" to host because a pod named "a-x-b-x-default-x-test" '
                                f'already exists in host namespace "{HOST_NS}": it is the host pod of virtual pod '
                                '"b-x-default/a" (their host names collide)')
    assert after["metadata"]["resourceVersion"] == first["a-x-b-x-default-x-test"]["metadata"]["resourceVersion"]


async def test_a_pod_kept_out_by_a_collision_syncs_once_the_other_pod_is_deleted(clusters: Clusters) -> None:
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "b-x-default"}})
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), clock=clock):
        await clusters.virtual.create(PODS, pod("a", namespace="b-x-default"), "b-x-default")
        await host_pods(clusters, lambda o: "a-x-b-x-default-x-test" in o, "b-x-default/a synced")
        await clusters.virtual.create(PODS, pod("a-x-b"), "default")
        await warnings_for(clusters, "a-x-b")
        await clusters.virtual.delete(PODS, "a", "b-x-default")
        await host_pods(clusters, lambda o: "a-x-b-x-default-x-test" not in o, "b-x-default/a's host pod deleted")
        clock.advance(30)
        synced = await host_pods(clusters, lambda o: "a-x-b-x-default-x-test" in o, "default/a-x-b synced")
    ann = synced["a-x-b-x-default-x-test"]["metadata"]["annotations"]
    assert (ann["vcluster.loft.sh/object-namespace"], ann["vcluster.loft.sh/object-name"]) == ("default", "a-x-b")


async def test_host_rejection_becomes_a_sync_error_event(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"},
                                                  scheduling={"nodeSelector": {"sandbox": "gvisor"}}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.virtual.create(PODS, pod("clash", "gvisor", nodeSelector={"sandbox": "kata"}), "default")
        (event,) = await warnings_for(clusters, "clash")
        await warnings_for(clusters, "clash", lambda evs: evs[0]["count"] >= 3, "two retries")
        # retried with growing per-key backoff, not in a hot loop
        assert syncer.pod_queue.num_requeues("default/clash") >= 3
        assert syncer.pod_queue.rate_limiter.when("probe") < syncer.pod_queue.rate_limiter.when("default/clash")
    assert event["reason"] == "SyncError"
    assert "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = gvisor" in event["message"]


async def test_long_pod_name_with_dots_syncs_with_a_label_hostname(clusters: Clusters) -> None:
    # Regression: the host pod's spec.hostname kept the dots of the virtual name, which a real API server
    # refuses ("must not contain dots"); the pod was retried forever.
    name = "a" * 36 + "." + "b" * 36
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod(name), "default")
        objs = await host_pods(clusters, lambda o: hname(name) in o, "the dotted pod synced")
    assert objs[hname(name)]["spec"]["hostname"] == "a" * 36 + "-" + "b" * 26


async def test_the_echo_of_its_own_creates_wakes_no_reconcile(clusters: Clusters) -> None:
    """A pod is reconciled once to be created: the watch events of the host pods and virtual RuntimeClasses the
    syncer created itself enqueue nothing (their reconcile would compare each with what was just written). The
    create's answer can reach the syncer after its watch event, so a few echoes may still get through."""
    for i in range(10):
        await clusters.host.create(RUNTIMECLASSES, rc(f"gvisor-{i}", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await virtual_rc_names(clusters, lambda n: len(n) == 10, "10 classes synced")
        for i in range(20):
            await clusters.virtual.create(PODS, pod(f"web-{i}", f"gvisor-{i % 10}"), "default")
        await host_pods(clusters, lambda o: len(o) == 20, "20 host pods")
        await syncer.wait_idle()
        registry = syncer.metrics.registry
        reconciles = {c: sum(registry.get_sample_value("controller_runtime_reconcile_total",
                                                        {"controller": c, "result": r}) or 0
                             for r in ("success", "requeue_after", "error")) for c in ("pod", "runtimeclass")}
        requeued = registry.get_sample_value("controller_runtime_reconcile_total",
                                             {"controller": "pod", "result": "requeue_after"}) or 0
    # with every echo reconciled: 46 for the pods (20 more) and 20 for the classes (10 more)
    assert 20 <= reconciles["pod"] < 36, reconciles
    assert 10 <= reconciles["runtimeclass"] < 15, reconciles
    # the reconcile that creates a host pod returns what its echo's would have: when its tokens (the virtual API
    # server injected a kube-api-access volume) are due for renewal, so each pod is looked at again then
    assert requeued >= 20, requeued


async def test_synced_pods_are_counted_under_the_class_the_host_pod_runs(clusters: Clusters) -> None:
    # With the gate off and sync.toHost.pods.runtimeClassName forced, the class a pod names is not checked: the
    # sync metric counts the class the host pod runs (the forced one), so made-up names add no series.
    from prometheus_client import generate_latest
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "production"}))
    doc = rc_config(enabled=False)
    doc["sync"]["toHost"] = {"pods": {"runtimeClassName": "gvisor"}}
    async with running_syncer(clusters, doc) as syncer:
        for i in range(3):
            await clusters.virtual.create(PODS, pod(f"made-up-{i}", f"made-up-{i}"), "default")
        await wait_for(clusters.host, PODS, lambda o: len(o) == 3, namespace=HOST_NS, timeout=10, what="3 host pods")
        await syncer.wait_idle()
        metrics = generate_latest(syncer.metrics.registry).decode()
    synced = [line for line in metrics.splitlines() if line.startswith("runtimeclass_syncer_pods_synced_total{")]
    assert synced == ['runtimeclass_syncer_pods_synced_total{runtime_class="gvisor"} 3.0']


async def test_refusals_for_classes_the_host_lacks_share_one_metric_series(clusters: Clusters) -> None:
    # The class a pod names is the tenant's to choose: a refusal for a class the host does not have is counted
    # under runtime_class="<unknown>", so made-up names add no series (each would stay in the syncer's memory and
    # the platform's Prometheus after the pod is gone); a host class keeps its own series.
    from prometheus_client import generate_latest
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.virtual.create(PODS, pod("prod", "gvisor"), "default")
        for i in range(3):
            await clusters.virtual.create(PODS, pod(f"made-up-{i}", f"made-up-{i}"), "default")
        await warnings_for(clusters, "made-up-2")
        await syncer.wait_idle()
        metrics = generate_latest(syncer.metrics.registry).decode()
    refused = sorted(line for line in metrics.splitlines()
                     if line.startswith("runtimeclass_syncer_pods_refused_total{"))
    assert refused == ['runtimeclass_syncer_pods_refused_total{runtime_class="<unknown>"} 3.0',
                       'runtimeclass_syncer_pods_refused_total{runtime_class="gvisor"} 1.0']
