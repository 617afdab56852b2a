"""The trust boundary as pure functions (syncer/controllers/podtranslate/trust.py, docs/security.md): which label and
annotation keys a tenant may not set, the virtual pod translation sees, and how the update's three-way merge treats
those keys on the host. Keys are vcluster's (pkg/util/translate, the pod translator) and the syncer's (README), written
as literals; the HTTP behaviour is tests/test_trust_boundary.py and tests/test_hostile_tenant.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from syncer.controllers.podtranslate.trust import reserved_annotation, reserved_label, tenant_pod
from syncer.controllers.podupdate import plan_update
from syncer.controllers.translate import host_pod

Obj = dict[str, Any]


@pytest.mark.parametrize(("key", "reserved"), [
    ("runtimeclass-syncer.io/token-renewal", True),
    ("runtimeclass-syncer.io/virtual-runtime-class", True),
    ("runtimeclass-syncer.io/synced-annotations", True),
    ("runtimeclass-syncer.io/anything-later", True),
    ("vcluster.loft.sh/object-name", True),
    ("vcluster.loft.sh/object-namespace", True),
    ("vcluster.loft.sh/object-uid", True),
    ("vcluster.loft.sh/object-host-name", True),
    ("vcluster.loft.sh/labels", True),
    ("vcluster.loft.sh/owner-references", True),
    ("vcluster.loft.sh/token-abcdefgh", True),
    ("vcluster.loft.sh/hosts-rewritten", True),
    ("vcluster.loft.sh/disable-subdomain-rewrite", False),  # the opt-out a tenant sets (vcluster's docs)
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", False),  # a pod may set it, as in vcluster
    ("loft.sh/other", False),
    ("example.com/vcluster.loft.sh/x", False),
    ("note", False),
])
def test_reserved_annotations(key: str, reserved: bool) -> None:
    assert reserved_annotation(key) is reserved


@pytest.mark.parametrize(("key", "reserved"), [
    ("runtimeclass-syncer.io/owner", True),
    ("vcluster.loft.sh/ns-label-vc-x-0123456789", True),  # what namespace selectors select on
    ("vcluster.loft.sh/label-vc-x-4d3e0bd1a5", True),  # a rewritten key
    ("vcluster.loft.sh/anything", True),
    ("vcluster.loft.sh/managed-by", False),  # rewritten to a hashed key, as vcluster's LabelsToTranslate
    ("vcluster.loft.sh/namespace", False),
    ("vcluster.loft.sh/controlled-by", False),
    ("release", False),
    ("app", False),
])
def test_reserved_labels(key: str, reserved: bool) -> None:
    assert reserved_label(key) is reserved


def vpod(labels: Obj, annotations: Obj) -> Obj:
    return {"metadata": {"name": "web", "namespace": "team", "uid": "u-1", "resourceVersion": "7",
                         "labels": labels, "annotations": annotations},
            "spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}


def test_tenant_pod_drops_the_reserved_keys_and_leaves_the_virtual_pod_as_it_is() -> None:
    pod = vpod({"app": "web", "vcluster.loft.sh/ns-label-vc-x-0123456789": "x", "release": "r"},
               {"note": "n", "runtimeclass-syncer.io/token-renewal": "{}", "vcluster.loft.sh/object-uid": "u-2",
                "vcluster.loft.sh/disable-subdomain-rewrite": "true"})
    before = copy.deepcopy(pod)
    seen = tenant_pod(pod)
    assert seen["metadata"]["labels"] == {"app": "web", "release": "r"}
    assert seen["metadata"]["annotations"] == {"note": "n", "vcluster.loft.sh/disable-subdomain-rewrite": "true"}
    assert {k: v for k, v in seen["metadata"].items() if k not in ("labels", "annotations")} == {
        "name": "web", "namespace": "team", "uid": "u-1", "resourceVersion": "7"}
    assert seen["spec"] == pod["spec"]
    assert pod == before  # the cached virtual pod is not changed


@pytest.mark.parametrize("meta", [None, "not an object", {"name": "web", "labels": "x", "annotations": ["y"]}])
def test_tenant_pod_leaves_malformed_metadata_to_the_shape_check(meta: Any) -> None:
    assert tenant_pod({"metadata": meta, "spec": {}})["metadata"] == meta


def test_reserved_keys_a_host_actor_adds_stay_on_the_host_and_never_come_back() -> None:
    # podupdate's three-way merge: a key a tenant may not set goes neither way (it would not survive the next trip
    # to the host), and the host keeps what it has of it
    v = vpod({"app": "web"}, {"note": "n"})
    host = host_pod(v, vcluster_name="vc", host_namespace="vc-ns")
    host["metadata"]["annotations"]["vcluster.loft.sh/webhook"] = "w"
    host["metadata"]["labels"]["vcluster.loft.sh/webhook"] = "w"
    plan = plan_update(host_pod(v, vcluster_name="vc", host_namespace="vc-ns"), host, v, vcluster_name="vc")
    assert plan.virtual_metadata is None
    assert plan.host_ops == []


def test_a_reserved_key_the_virtual_pod_carries_is_not_pushed_to_the_host() -> None:
    # the reconciler hands translation tenant_pod(vpod); plan_update on the raw pod must not push it either
    v = vpod({"app": "web"}, {"note": "n"})
    host = host_pod(v, vcluster_name="vc", host_namespace="vc-ns")
    forged = vpod({"app": "web"}, {"note": "n", "vcluster.loft.sh/owner-set-kind": "StatefulSet",
                                   "runtimeclass-syncer.io/token-renewal": '{"renewAt":0,"tokens":{}}'})
    plan = plan_update(host_pod(tenant_pod(forged), vcluster_name="vc", host_namespace="vc-ns"), host, forged,
                       vcluster_name="vc")
    assert plan.host_ops == [] and plan.virtual_metadata is None
