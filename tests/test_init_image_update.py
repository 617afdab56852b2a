"""The syncer's own `/etc/hosts` init container keeps its image when the configuration that chose it changes, through
the real path (the syncer over HTTP, stopped and started again with a new vcluster.yaml, as an upgrade or a
`helm upgrade` restarts it).

vcluster's `calcSpecDiff` (loft-sh/vcluster HEAD 487667546, pkg/controllers/resources/pods/translate/diff.go) skips
the init container `vcluster-rewrite-hosts` (`HostsRewriteContainerName`) of a host pod annotated
`vcluster.loft.sh/hosts-rewritten: "true"` (`skipContainers`): a new image of an init container restarts the whole
pod. The tenant's own init containers are compared as always.

Also here: an update plans no host write for a pod nothing changed on, whatever annotations the pod has of its own
(the record of synced annotations is the same at the create and at each update).
"""

from __future__ import annotations

from typing import Any

from syncer.kube.resources import PODS
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, TEST_AGENT, VCLUSTER, Clusters, pod, rc_config, running_syncer

Obj = dict[str, Any]
HOST_POD = f"db-0-x-default-x-{VCLUSTER}"


def config(repository: str) -> Obj:
    doc = rc_config()
    doc["sync"]["toHost"] = {"pods": {"rewriteHosts": {"initContainer": {"image": {
        "registry": "mirror.gcr.io", "repository": repository, "tag": "3.20"}}}}}
    return doc


async def host_pod(c: Clusters, predicate: Any, what: str) -> Obj:
    objs = await wait_for(c.host, PODS, lambda o: predicate(o.get(f"{HOST_NS}/{HOST_POD}")), namespace=HOST_NS,
                          timeout=10, what=what)
    return objs[f"{HOST_NS}/{HOST_POD}"]


def init_images(hpod: Obj | None) -> dict[str, str]:
    return {c["name"]: c["image"] for c in ((hpod or {}).get("spec") or {}).get("initContainers") or []}


def labelled(value: str) -> Any:
    return lambda h: bool(h) and (h["metadata"].get("labels") or {}).get("x") == value


async def test_own_rewrite_hosts_init_container_keeps_its_image_and_the_tenants_changes(clusters: Clusters) -> None:
    p = pod("db-0", hostname="db-0", subdomain="db")
    p["spec"]["initContainers"] = [{"name": "migrate", "image": "migrate:1"}]
    async with running_syncer(clusters, config("library/alpine")):
        await clusters.virtual.create(PODS, p, "default")
        hpod = await host_pod(clusters, bool, "db-0 synced")
    assert hpod["metadata"]["annotations"]["vcluster.loft.sh/hosts-rewritten"] == "true"
    assert init_images(hpod) == {"vcluster-rewrite-hosts": "mirror.gcr.io/library/alpine:3.20", "migrate": "migrate:1"}
    async with running_syncer(clusters, config("library/alpine-new")) as syncer:
        await clusters.virtual.patch(PODS, "db-0", {"metadata": {"labels": {"x": "1"}}}, "default")
        hpod = await host_pod(clusters, labelled("1"), "the label synced (an update planned under the new image)")
        await syncer.wait_idle()
        assert init_images(await clusters.host.get(PODS, HOST_POD, HOST_NS))["vcluster-rewrite-hosts"] == \
            "mirror.gcr.io/library/alpine:3.20"
        # the tenant's own init container still follows the virtual pod
        await clusters.virtual.patch(PODS, "db-0", [{"op": "replace", "path": "/spec/initContainers/0/image",
                                                      "value": "migrate:2"}], "default", patch_type="json")
        hpod = await host_pod(clusters, lambda h: init_images(h).get("migrate") == "migrate:2", "migrate:2 synced")
        await syncer.wait_idle()
    assert init_images(await clusters.host.get(PODS, HOST_POD, HOST_NS)) == {
        "vcluster-rewrite-hosts": "mirror.gcr.io/library/alpine:3.20", "migrate": "migrate:2"}


async def test_a_new_rewrite_hosts_image_costs_no_host_write(clusters: Clusters) -> None:
    # the image stays, and so does its record (`runtimeclass-syncer.io/synced-images`): rewriting the record to the
    # new image's hash was a host write per pod with a subdomain after each change of the configured image
    async with running_syncer(clusters, config("library/alpine")):
        await clusters.virtual.create(PODS, pod("db-0", hostname="db-0", subdomain="db"), "default")
        before = await host_pod(clusters, bool, "db-0 synced")
    async with running_syncer(clusters, config("library/alpine-new")) as syncer:
        await syncer.wait_idle()
        await clusters.host.patch(PODS, HOST_POD, {"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True"}]}}, HOST_NS, subresource="status")  # the kubelet's
        await wait_for(clusters.virtual, PODS, lambda o: ((o.get("default/db-0") or {}).get("status") or {}).get(
            "conditions"), namespace="default", timeout=10, what="the status copied back (an update planned)")
        await syncer.wait_idle()
    after = await clusters.host.get(PODS, HOST_POD, HOST_NS)
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    writes = [(method, path) for method, path, agent in clusters.host_server.requests
              if method in ("POST", "PUT", "PATCH", "DELETE") and "/pods" in path and agent != TEST_AGENT]
    assert writes == [("POST", f"/api/v1/namespaces/{HOST_NS}/pods")]


async def test_a_tenants_init_container_of_that_name_is_not_frozen(clusters: Clusters) -> None:
    # Without a subdomain the pod gets no /etc/hosts container: an init container the tenant names
    # `vcluster-rewrite-hosts` is its own, and its `vcluster.loft.sh/hosts-rewritten: "true"` never reaches the host
    # (podtranslate/trust.py), so the container's image still follows the virtual pod
    p = pod("db-0")
    p["metadata"]["annotations"] = {"vcluster.loft.sh/hosts-rewritten": "true"}
    p["spec"]["initContainers"] = [{"name": "vcluster-rewrite-hosts", "image": "mine:1"}]
    async with running_syncer(clusters, config("library/alpine")) as syncer:
        await clusters.virtual.create(PODS, p, "default")
        hpod = await host_pod(clusters, bool, "db-0 synced")
        assert "vcluster.loft.sh/hosts-rewritten" not in hpod["metadata"]["annotations"]
        await clusters.virtual.patch(PODS, "db-0", [{"op": "replace", "path": "/spec/initContainers/0/image",
                                                      "value": "mine:2"}], "default", patch_type="json")
        await host_pod(clusters, lambda h: init_images(h) == {"vcluster-rewrite-hosts": "mine:2"}, "mine:2 synced")
        await syncer.wait_idle()


async def test_a_tenants_init_container_of_that_name_on_a_pod_rewritten_later_is_not_frozen(clusters: Clusters) -> None:
    # A pod with a subdomain synced while rewriteHosts was off has no /etc/hosts container; once it is on, the
    # translation marks the host pod `hosts-rewritten` (an annotation that follows the translation), but the init
    # container of that name is still the tenant's own, whose image follows the virtual pod
    off = config("library/alpine")
    off["sync"]["toHost"]["pods"]["rewriteHosts"]["enabled"] = False
    p = pod("db-0", hostname="db-0", subdomain="db")
    p["spec"]["initContainers"] = [{"name": "vcluster-rewrite-hosts", "image": "mine:1"}]
    async with running_syncer(clusters, off):
        await clusters.virtual.create(PODS, p, "default")
        await host_pod(clusters, bool, "db-0 synced")
    async with running_syncer(clusters, config("library/alpine")) as syncer:
        await clusters.virtual.patch(PODS, "db-0", {"metadata": {"labels": {"x": "1"}}}, "default")
        hpod = await host_pod(clusters, labelled("1"), "the label synced")
        assert hpod["metadata"]["annotations"]["vcluster.loft.sh/hosts-rewritten"] == "true"
        await clusters.virtual.patch(PODS, "db-0", [{"op": "replace", "path": "/spec/initContainers/0/image",
                                                      "value": "mine:2"}], "default", patch_type="json")
        await host_pod(clusters, lambda h: init_images(h) == {"vcluster-rewrite-hosts": "mine:2"}, "mine:2 synced")
        await syncer.wait_idle()


async def test_a_pods_own_safe_to_evict_costs_no_host_write_after_the_create(clusters: Clusters) -> None:
    # The pod sets `cluster-autoscaler.kubernetes.io/safe-to-evict` itself (kept on the host as it is: vcluster's
    # Translate sets it only when absent); a status change of the host pod (the kubelet's) makes the syncer plan an
    # update, which must find nothing to write on the host pod: one POST, and the status copied back
    p = pod("web")
    p["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false", "team": "a"}
    hname = f"web-x-default-x-{VCLUSTER}"
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, p, "default")
        await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/{hname}" in o, namespace=HOST_NS, timeout=10,
                       what="web synced")
        await syncer.wait_idle()
        await clusters.host.patch(PODS, hname, {"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True"}]}}, HOST_NS, subresource="status")
        await wait_for(clusters.virtual, PODS, lambda o: ((o.get("default/web") or {}).get("status") or {}).get(
            "conditions"), namespace="default", timeout=10, what="the status copied back (the update planned)")
        await syncer.wait_idle()
    hpod = await clusters.host.get(PODS, hname, HOST_NS)
    assert hpod["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "false"
    writes = [(method, path) for method, path, agent in clusters.host_server.requests
              if method in ("POST", "PUT", "PATCH", "DELETE") and "/pods" in path and agent != TEST_AGENT]
    assert writes == [("POST", f"/api/v1/namespaces/{HOST_NS}/pods")]
