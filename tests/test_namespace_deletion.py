"""A virtual namespace deleted with synced pods in it, against kubesim's model of a real API server: the namespace
terminates (NamespaceLifecycle refuses new content), the namespace controller deletes its pods gracefully, and the
namespace goes once they are gone (pkg/registry/core/namespace/storage/storage.go, pkg/controller/namespace). The
syncer must take the host pods with them and finish the virtual pods, as vcluster does."""

from __future__ import annotations

from syncer.kube.resources import NAMESPACES, PODS
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc_config, running_syncer
from tests.test_pod_lifecycle import DEV, kubelet, running
from tests.test_pod_sync import hname, host_pods


async def test_a_deleted_virtual_namespace_takes_its_host_pods_and_goes(clusters: Clusters) -> None:
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "team"}})
    async with running_syncer(clusters, rc_config(DEV)), kubelet(clusters):
        await clusters.virtual.create(PODS, pod("web", namespace="team"), "team")
        await host_pods(clusters, lambda o: running(o.get(hname("web", "team"))), "the host pod running")
        await eventually(lambda: bool(((clusters.virtual_server.storage.get(PODS, "team", "web") or {}).get(
            "spec") or {}).get("nodeName")), "the virtual pod bound")
        await clusters.virtual.delete(NAMESPACES, "team")
        await host_pods(clusters, lambda o: hname("web", "team") not in o, "the host pod gone")
        await eventually(lambda: clusters.virtual_server.storage.get(PODS, "team", "web") is None,
                         "the virtual pod gone", timeout=15)
        await eventually(lambda: clusters.virtual_server.storage.get(NAMESPACES, "", "team") is None,
                         "the virtual namespace gone")
    assert not [k for k in clusters.host_server.storage.objects(PODS) if k[0] == HOST_NS and "team" in k[1]]
