"""The QoS class: what kube-apiserver computes on create (kubesim/qos.py, after Kubernetes GetPodQOS), the
1.32+ refusal of a status write that changes it, and the syncer keeping the virtual class when the host's
differs (as vcluster's DesiredVirtualStatus does)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from kubesim.qos import parse_quantity, pod_qos
from syncer.kube.client import ApiError
from syncer.kube.resources import PODS
from tests.conftest import HOST_NS, Clusters, pod, rc_config, running_syncer
from tests.test_pod_lifecycle import kubelet, running, virtual_pod
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]


@pytest.mark.parametrize(("text", "value"), [
    ("100m", Decimal("0.1")), ("1.5Gi", Decimal(1610612736)), ("2e3", Decimal(2000)), ("1E", Decimal(10) ** 18),
    ("64Mi", Decimal(67108864)), ("1k", Decimal(1000)), (".5", Decimal("0.5")), (4, Decimal(4)),
], ids=[f"q{i}" for i in range(8)])
def test_quantities(text: Any, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "1x", "Mi", "1.2.3", None, True])
def test_not_quantities(bad: Any) -> None:
    with pytest.raises(ValueError):
        parse_quantity(bad)


def containers(*resources: Obj, init: Obj | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]}
    if init is not None:
        spec["initContainers"] = [{"name": "i", "resources": init}]
    return {"spec": spec}


GUARANTEED = {"limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize(("p", "qos"), [
    # Kubernetes docs "Pod Quality of Service Classes" and qos.go GetPodQOS
    (containers({}), "BestEffort"),
    (containers({"requests": {"ephemeral-storage": "1Gi"}}), "BestEffort"),  # only cpu and memory count
    (containers({"requests": {"cpu": "0"}}), "BestEffort"),  # zero counts as unset
    (containers({"requests": {"cpu": "100m"}}), "Burstable"),
    (containers(GUARANTEED), "Guaranteed"),  # requests default to the limits
    (containers({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1Gi"}}),
     "Guaranteed"),
    (containers({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}), "Burstable"),
    (containers({"limits": {"cpu": "1"}}), "Burstable"),  # a limit for memory is missing
    (containers(GUARANTEED, {}), "Burstable"),  # every container needs both limits
    (containers(GUARANTEED, init={"requests": {"memory": "1Gi"}}), "Burstable"),  # init containers count
], ids=[f"qos{i}" for i in range(10)])
def test_the_qos_class_of_a_pod(p: Obj, qos: str) -> None:
    assert pod_qos(p) == qos


BURSTABLE_POD = pod("web")
BURSTABLE_POD["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "64Mi"}}


async def test_the_api_server_computes_the_class_and_refuses_to_change_it(clusters: Clusters) -> None:
    created = await clusters.virtual.create(PODS, BURSTABLE_POD, "default")
    assert created["status"]["qosClass"] == "Burstable"
    with pytest.raises(ApiError) as err:
        await clusters.virtual.patch(PODS, "web", {"status": {"phase": "Running", "qosClass": "Guaranteed"}},
                                     "default", subresource="status")
    assert err.value.status == 422
    assert err.value.message == ('Pod "web" is invalid: status.qosClass: Invalid value: "Guaranteed": field is '
                                 "immutable")
    assert (await clusters.virtual.get(PODS, "web", "default"))["status"]["phase"] == "Pending"  # refused whole


async def test_a_pod_whose_host_class_differs_still_shows_running(clusters: Clusters) -> None:
    # A host LimitRange gives the host pod limits, so the host computes Guaranteed where the virtual cluster
    # computed Burstable: the status copy must leave the class alone, or the virtual API server refuses it
    # whole and the pod never shows Running.
    async with running_syncer(clusters, rc_config()), kubelet(clusters):
        await clusters.virtual.create(PODS, BURSTABLE_POD, "default")
        await host_pods(clusters, lambda o: hname("web") in o, "web on the host")
        host = clusters.host_server.storage.get(PODS, HOST_NS, hname("web"))
        assert host is not None
        clusters.host_server.storage.write(PODS, {**host, "status": {**host["status"], "qosClass": "Guaranteed"}},
                                           host)  # what the host computed with the LimitRange's limits
        vp = await virtual_pod(clusters, "web", running, "web Running in the virtual cluster")
    assert vp["status"]["qosClass"] == "Burstable"


async def test_a_pod_with_a_bad_quantity_is_refused_as_undecodable(clusters: Clusters) -> None:
    bad = pod("bad")
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    with pytest.raises(ApiError) as err:
        await clusters.virtual.create(PODS, bad, "default")
    assert err.value.status == 400 and "quantities must match the regular expression" in err.value.message
