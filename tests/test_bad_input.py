"""Bad input from either API server (missing fields, wrong types, unknown fields) is skipped with a log
line naming the object; the loops keep running and good objects keep syncing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from syncer.kube.resources import PODS, RUNTIMECLASSES
from tests.conftest import HOST_NS, Clusters, pod, rc, rc_config, running_syncer, virtual_rc_names
from tests.test_pod_sync import hname, host_pods

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}


def inject(server: Any, res: Any, obj: Obj) -> None:
    """Store an object as a broken API server would serve it (no validation)."""
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    server.storage.write(res, obj, None)


async def test_malformed_objects_are_skipped_and_named(clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    hs, vs = clusters.host_server, clusters.virtual_server
    inject(hs, RUNTIMECLASSES, {"metadata": {"name": "bad-handler", "labels": {"environment": "development"}},
                                "handler": 5})
    inject(hs, RUNTIMECLASSES, {"metadata": {"name": "bad-labels", "labels": ["environment"]}, "handler": "x"})
    inject(hs, RUNTIMECLASSES, {"metadata": {"name": ""}, "handler": "nameless"})
    inject(vs, PODS, {"metadata": {"name": "spec-string", "namespace": "default"}, "spec": "oops"})
    inject(vs, PODS, {"metadata": {"name": "containers-map", "namespace": "default"},
                      "spec": {"containers": {"app": {"image": "x"}}}})
    inject(vs, PODS, {"metadata": {"name": "rcn-number", "namespace": "default"},
                      "spec": {"runtimeClassName": 7, "containers": [{"name": "a", "image": "b"}]}})
    inject(hs, PODS, {"metadata": {"name": "host-junk", "namespace": HOST_NS,
                                   "labels": {"vcluster.loft.sh/managed-by": "test"}, "annotations": ["x"]},
                      "spec": {}})
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
        good = pod("good", "gvisor")
        good["spec"]["someFutureField"] = {"enabled": True}  # unknown fields do not stop a pod
        await clusters.virtual.create(PODS, good, "default")
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "only the good class synced")
        await host_pods(clusters, lambda o: hname("good") in o, "the good pod synced")
        await syncer.wait_idle()
        assert syncer.healthy
    text = "\n".join(caplog.messages)
    assert "skipped host runtime class 'bad-handler': handler is not a string" in text
    assert "skipped virtual pod default/spec-string: spec is not an object" in text
    assert "skipped virtual pod default/containers-map: spec.containers is not a list of objects" in text
    assert "skipped virtual pod default/rcn-number: spec.runtimeClassName is not a string" in text
    assert "skipped an object from the host cluster: object has no metadata.name" in text
    assert not [r for r in caplog.records if r.exc_info], "no loop died with a traceback"
    host_junk = await clusters.host.get(PODS, "host-junk", HOST_NS)
    assert host_junk["metadata"]["annotations"] == ["x"]  # not ours to fix or delete


async def test_a_skipped_pod_is_named_once_per_version(clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # a pod that cannot be translated is reconciled again whenever the class it names changes; its warning is
    # logged once for each version of the pod, not on every such reconcile
    caplog.set_level(logging.INFO)
    inject(clusters.virtual_server, PODS, {"metadata": {"name": "labels-list", "namespace": "default",
                                                        "labels": ["app"]},
                                           "spec": {"runtimeClassName": "gvisor",
                                                    "containers": [{"name": "a", "image": "b"}]}})
    line = "skipped virtual pod default/labels-list: metadata.labels is not an object"
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await syncer.wait_idle()
        assert caplog.messages.count(line) == 1
        # the class it names appears: the pod is looked at again, and is still skipped
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced")
        await syncer.wait_idle()
        reconciles = syncer.metrics.registry.get_sample_value("controller_runtime_reconcile_total",
                                                              {"controller": "pod", "result": "success"})
    assert reconciles == 2  # the only pod, twice
    assert caplog.messages.count(line) == 1
