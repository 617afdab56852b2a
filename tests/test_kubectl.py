"""What a user sees with the real kubectl in the virtual cluster (behaviour.md section 3, events)."""

from __future__ import annotations

import re

import pytest

from syncer.kube.resources import PODS, RUNTIMECLASSES
from tests.conftest import Clusters, pod, rc, rc_config, running_syncer, virtual_rc_names
from tests.kubectl import kubectl
from tests.test_pod_sync import hname, host_pods, warnings_for

pytestmark = pytest.mark.kubectl
DEV = {"matchLabels": {"environment": "development"}}


async def test_describe_pod_shows_the_sync_warning(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("youki", labels={"environment": "production"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await clusters.virtual.create(PODS, pod("my-pod", "youki"), "default")
        await warnings_for(clusters, "my-pod")
        out = await kubectl(clusters.virtual_kubeconfig, "describe", "pod", "my-pod")
        assert re.search(r"Runtime Class Name:\s+youki", out)
        assert re.search(
            r"Warning\s+SyncWarning\s+\S+\s+pod-syncer\s+did not sync pod \"my-pod\" to host because the runtime "
            r"class \"youki\" in the host does not match the selector under "
            r"'sync\.fromHost\.runtimeClasses\.selector'", out), out
        # a repeat raises the count, which describe shows as "(x2 over ...)"
        await kubectl(clusters.virtual_kubeconfig, "label", "pod", "my-pod", "retry=1")
        await warnings_for(clusters, "my-pod", lambda evs: evs and evs[0]["count"] == 2, "count 2")
        out = await kubectl(clusters.virtual_kubeconfig, "describe", "pod", "my-pod")
        assert re.search(r"Warning\s+SyncWarning\s+\S+ \(x2 over \S+\)\s+pod-syncer\s+did not sync pod", out), out
        assert out.count("SyncWarning") == 1


async def test_runtimeclasses_and_pods_through_kubectl(clusters: Clusters) -> None:
    hk, vk = clusters.host_kubeconfig, clusters.virtual_kubeconfig
    manifest = clusters.host_kubeconfig.parent / "rcs.yaml"
    manifest.write_text(
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: gvisor\n"
        "  labels: {environment: development}\nhandler: runsc\n---\n"
        "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: kata-fc\n"
        "  labels: {environment: production}\nhandler: kata-fc\n")
    await kubectl(hk, "apply", "-f", str(manifest))
    async with running_syncer(clusters, rc_config(DEV)):
        await host_pods(clusters, lambda o: True, "host reachable")
        out = await kubectl(vk, "get", "runtimeclasses")
        assert re.search(r"gvisor\s+runsc", out) and "kata-fc" not in out
        await kubectl(vk, "run", "vm", "--image=nginx", "--overrides", '{"spec":{"runtimeClassName":"kata-fc"}}')
        await warnings_for(clusters, "vm")
        # the platform team relabels the class on the host: the waiting pod syncs
        await kubectl(hk, "label", "runtimeclass", "kata-fc", "environment=development", "--overwrite")
        await host_pods(clusters, lambda o: hname("vm") in o, "vm synced after kubectl label")
        out = await kubectl(hk, "get", "pods", "-n", "vc-test")
        assert hname("vm") in out
        # a class created in the virtual cluster by a tenant does not survive
        local = clusters.host_kubeconfig.parent / "local.yaml"
        local.write_text("apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata:\n  name: mine\nhandler: runc\n")
        assert "runtimeclass.node.k8s.io/mine created" in await kubectl(vk, "apply", "-f", str(local))
        await virtual_rc_names(clusters, lambda n: "mine" not in n and "kata-fc" in n, "mine deleted")
        out = await kubectl(vk, "get", "runtimeclasses", "-o", "name")
    assert sorted(out.split()) == ["runtimeclass.node.k8s.io/gvisor", "runtimeclass.node.k8s.io/kata-fc"]


async def test_describe_pod_shows_an_ignored_namespace_selector_once(clusters: Clusters) -> None:
    # vcluster's translatePodAffinityTerm: a term with both namespaces and a namespaceSelector keeps the namespaces
    # and warns, in these words (translator_test.go TestPodAffinityTermsTranslation expectedEvents)
    words = ("Inter-pod affinity rule(s) that use both .namespaces and .namespaceSelector fields in the same term are "
             "not supported by vcluster yet. The .namespaceSelector fields of the unsupported affinity entries will "
             "be ignored.")
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname",
            "namespaces": ["data"], "namespaceSelector": {"matchLabels": {"team": "data"}}}
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, pod("web", affinity={"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host"))[hname("web")]
        [host_term] = hp["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert host_term["labelSelector"]["matchExpressions"] == [
            {"key": "vcluster.loft.sh/namespace", "operator": "In", "values": ["data"]}]
        [event] = await warnings_for(clusters, "web")
        assert (event["reason"], event["message"], event["source"]["component"]) == ("SyncWarning", words,
                                                                                     "pod-syncer")
        # updates of the synced pod do not repeat it
        await kubectl(clusters.virtual_kubeconfig, "label", "pod", "web", "tier=front")
        await host_pods(clusters, lambda o: o[hname("web")]["metadata"]["labels"].get("tier") == "front",
                        "the label on the host")
        await syncer.wait_idle()
        out = await kubectl(clusters.virtual_kubeconfig, "describe", "pod", "web")
        assert re.search(r"Warning\s+SyncWarning\s+\S+\s+pod-syncer\s+" + re.escape(words), out), out
        assert out.count("SyncWarning") == 1
    [event] = await warnings_for(clusters, "web")
    assert event["count"] == 1


async def test_kubectl_get_by_name_and_a_protobuf_create_as_against_a_server_without_protobuf(
        clusters: Clusters) -> None:
    # `kubectl get pod x` asks for a Table (`Accept: ...;as=Table;v=v1;g=meta.k8s.io`) and prints its columns;
    # `kubectl create configmap` sends protobuf, which this server does not decode: the 415 a server answers for a
    # media type it has no serializer for (apimachinery negotiation.NewUnsupportedMediaTypeError), printed by kubectl
    vk = clusters.virtual_kubeconfig
    await clusters.virtual.create(PODS, pod("web"), "default")
    out = await kubectl(vk, "get", "pod", "web")
    assert re.match(r"NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+0/1\s+Pending\s+0\s+\S+\n$", out), out
    out = await kubectl(vk, "create", "configmap", "settings", "--from-literal=a=b", check=False)
    assert "error: failed to create configmap: the body of the request was in an unknown format - accepted media " \
           "types include: application/json, application/yaml" in out, out
