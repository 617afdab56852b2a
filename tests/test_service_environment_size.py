"""A namespace's service links times a pod's containers: the variables the syncer writes into every container of
the host pod (vcluster's `ServicesToEnvironmentVariables`, the kubelet's service environment made explicit). A
tenant's Service with thousands of ports and a pod with hundreds of containers are millions of variables: a host
pod every host refuses (etcd's 1.5 MiB request limit), and seconds of the event loop and hundreds of MiB to build
on each retry. Such a pod is refused before anything is built, and an existing pod's updates build none."""

from __future__ import annotations

from typing import Any

from syncer.kube.resources import EVENTS, NAMESPACES, PODS, SERVICES
from syncer.kube.wait import wait_for
from tests.conftest import Clusters, pod, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]
PORTS = 2000


def big_service() -> Obj:
    return {"metadata": {"name": "big"}, "spec": {"ports": [
        {"name": f"p{i}", "port": 1000 + i, "protocol": "TCP"} for i in range(PORTS)]}}


def wide_pod(name: str, containers: int) -> Obj:
    p = pod(name, namespace="evil")
    p["spec"]["containers"] = [{"name": f"c{i}", "image": "nginx:1.27"} for i in range(containers)]
    return p


async def test_a_pod_whose_service_links_make_it_too_large_is_refused_before_they_are_built(
        clusters: Clusters) -> None:
    # the kubelet's link variables (pkg/kubelet/envvars makeLinkVariables): per Service <NAME>_SERVICE_HOST,
    # _SERVICE_PORT, _SERVICE_PORT_<PORTNAME> per named port, _PORT, and per port _PORT_<n>_TCP, _PROTO, _PORT,
    # _ADDR; then the 8 KUBERNETES_* ones: 2 + 2000 + 1 + 4 x 2000 + 8 = 10011
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "evil"}})
    await clusters.virtual.create(SERVICES, big_service(), "evil")
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, wide_pod("wide", 200), "evil")
        await clusters.virtual.create(PODS, pod("victim"), "default")  # another tenant's pod syncs
        await host_pods(clusters, lambda o: hname("victim") in o, "the other tenant's pod on the host")
        message = ('did not sync pod "wide" to host because the 10011 service-link variables of its namespace\'s '
                   "Services in each of its 200 containers would make a host pod of more than 1572864 bytes, which "
                   "the host refuses: set enableServiceLinks: false in the pod, or have fewer Services or ports in "
                   "the namespace")
        await wait_for(clusters.virtual, EVENTS, lambda o: [e["message"] for e in o.values()] == [message],
                       namespace="evil", what="the refusal")
        assert hname("wide", "evil") not in await host_pods(clusters, lambda o: True, "the host pods")


async def test_an_existing_pod_is_updated_though_its_namespaces_services_grew(clusters: Clusters) -> None:
    # a host pod's container environment cannot change: an update builds none of it
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "evil"}})
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, wide_pod("wide", 30), "evil")
        await host_pods(clusters, lambda o: hname("wide", "evil") in o, "the pod on the host")
        await clusters.virtual.create(SERVICES, big_service(), "evil")
        await clusters.virtual.patch(PODS, "wide", {"metadata": {"labels": {"tier": "front"}}}, "evil")
        await host_pods(clusters, lambda o: (o[hname("wide", "evil")]["metadata"].get("labels") or {}).get("tier")
                        == "front", "the tenant's label on the host pod")
