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
