"""The pure translation rules one by one, with literal expected values from behaviour.md sections 2 and 3 and
vcluster's pod syncer: the virtual copy of a RuntimeClass, the update of a host pod, the status copied back,
the virtual key of a host pod, the controlled-by fence and the shape checks."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.config.model import parse_config
from syncer.controllers import gate
from syncer.controllers.translate import (
    host_pod_update,
    is_controlled_by_other,
    runtime_class_shape_error,
    runtime_class_view,
    status_update,
    virtual_key_of_host_pod,
    virtual_runtime_class,
)

Obj = dict[str, Any]

SCHEDULING = {"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]}
HOST_RC: Obj = {
    "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
    "metadata": {"name": "gvisor", "uid": "u", "resourceVersion": "12", "generation": 3,
                 "creationTimestamp": "2026-01-01T00:00:00Z", "ownerReferences": [{"kind": "X", "name": "y"}],
                 "finalizers": ["f"], "managedFields": [{"manager": "m"}], "deletionTimestamp": "2026-01-02T00:00:00Z",
                 "deletionGracePeriodSeconds": 0, "selfLink": "/x", "generateName": "g-", "namespace": "ignored",
                 "labels": {"environment": "development"}, "annotations": {"team": "a"}},
    "handler": "runsc",
    "overhead": {"podFixed": {"cpu": "250m"}},
    "scheduling": {"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]},
}


def test_the_virtual_copy_keeps_the_spec_labels_and_annotations_and_drops_server_metadata() -> None:
    # behaviour.md section 2: "uid, resourceVersion, generation, creationTimestamp, ownerReferences,
    # finalizers, managedFields and deletion fields are dropped; labels and annotations are copied"
    assert virtual_runtime_class(HOST_RC) == {
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": {"name": "gvisor", "labels": {"environment": "development"}, "annotations": {"team": "a"}},
        "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m"}},
        "scheduling": SCHEDULING,
    }


def test_the_virtual_copy_is_a_deep_copy_with_maps_for_labels_and_annotations() -> None:
    bare: Obj = {"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"memory": "1Gi"}}}
    copy = virtual_runtime_class(bare)
    assert copy == {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                    "metadata": {"name": "kata", "labels": {}, "annotations": {}}, "handler": "kata",
                    "overhead": {"podFixed": {"memory": "1Gi"}}}
    copy["overhead"]["podFixed"]["memory"] = "2Gi"
    copy["metadata"]["labels"]["x"] = "y"
    assert bare == {"metadata": {"name": "kata"}, "handler": "kata", "overhead": {"podFixed": {"memory": "1Gi"}}}


def test_the_view_the_sync_invariant_compares() -> None:
    assert runtime_class_view(HOST_RC) == {
        "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m"}},
        "scheduling": SCHEDULING, "labels": {"environment": "development"}, "annotations": {"team": "a"}}
    assert runtime_class_view({"metadata": {"name": "k"}, "handler": "h"}) == {
        "handler": "h", "labels": {}, "annotations": {}}


@pytest.mark.parametrize(("obj", "fenced"), [
    ({"metadata": {"labels": {"vcluster.loft.sh/controlled-by": ""}}}, True),  # any value, even empty
    ({"metadata": {"labels": {"vcluster.loft.sh/controlled-by": "other"}}}, True),
    ({"metadata": {"labels": {"vcluster.loft.sh/managed-by": "x"}}}, False),
    ({"metadata": {}}, False),
    (None, False),
])
def test_controlled_by_fences_a_name_whatever_its_value(obj: Obj | None, fenced: bool) -> None:
    assert is_controlled_by_other(obj) is fenced


@pytest.mark.parametrize(("rc", "problem"), [
    ({"metadata": "x", "handler": "h"}, "metadata is not an object"),
    ({"metadata": {"labels": ["a"]}, "handler": "h"}, "metadata.labels is not an object"),
    ({"metadata": {"annotations": "a"}, "handler": "h"}, "metadata.annotations is not an object"),
    ({"metadata": {}, "handler": 3}, "handler is not a string"),
    ({"metadata": {}}, "handler is not a string"),
    ({"metadata": {}, "handler": "h", "overhead": []}, "overhead is not an object"),
    ({"metadata": {}, "handler": "h", "scheduling": "s"}, "scheduling is not an object"),
    ({"metadata": {"labels": None}, "handler": "h", "overhead": None}, None),
])
def test_runtime_class_shapes(rc: Obj, problem: str | None) -> None:
    assert runtime_class_shape_error(rc) == problem


def pod(labels: Obj, annotations: Obj, images: dict[str, str], init: dict[str, str] | None = None,
        deadline: int | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": n, "image": i} for n, i in images.items()]}
    if init is not None:
        spec["initContainers"] = [{"name": n, "image": i} for n, i in init.items()]
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": spec}


def test_an_update_changes_only_the_mutable_synced_fields() -> None:
    actual = pod({"a": "1"}, {"n": "x"}, {"app": "nginx:1", "side": "envoy:1"}, {"init": "busybox:1"})
    desired = pod({"a": "2"}, {"n": "x"}, {"side": "envoy:2", "app": "nginx:1"}, {"init": "busybox:2"}, deadline=60)
    assert host_pod_update(desired, actual) == [
        {"op": "add", "path": "/metadata/labels", "value": {"a": "2"}},
        {"op": "test", "path": "/spec/initContainers/0/name", "value": "init"},
        {"op": "replace", "path": "/spec/initContainers/0/image", "value": "busybox:2"},
        {"op": "test", "path": "/spec/containers/1/name", "value": "side"},  # matched by name, not position
        {"op": "replace", "path": "/spec/containers/1/image", "value": "envoy:2"},
        {"op": "add", "path": "/spec/activeDeadlineSeconds", "value": 60},
    ]


def test_an_update_of_annotations_and_nothing_when_in_sync() -> None:
    actual = pod({"a": "1"}, {}, {"app": "nginx:1"}, deadline=30)
    desired = pod({"a": "1"}, {"n": "y"}, {"app": "nginx:1", "new": "x:1"}, deadline=30)
    assert host_pod_update(desired, actual) == [{"op": "add", "path": "/metadata/annotations", "value": {"n": "y"}}]
    assert host_pod_update(actual, actual) == []
    # a desired pod without a deadline never removes the host's (activeDeadlineSeconds cannot be unset)
    assert host_pod_update(pod({"a": "1"}, {}, {"app": "nginx:1"}), actual) == []
    # a host pod without labels or annotations maps compares as empty maps
    assert host_pod_update(pod({}, {}, {}), {"metadata": {}, "spec": {}}) == []


def test_status_is_copied_field_by_field_and_removed_fields_are_nulled() -> None:
    hpod = {"status": {"phase": "Running", "podIP": "10.0.0.7", "hostIP": "192.168.0.2", "qosClass": "BestEffort",
                       "nominatedNodeName": "n1"}}
    vpod = {"status": {"phase": "Pending", "qosClass": "BestEffort", "message": "old"}}
    assert status_update(hpod, vpod) == {"status": {"phase": "Running", "podIP": "10.0.0.7",
                                                    "hostIP": "192.168.0.2", "message": None}}
    assert status_update({"status": {"phase": "Running"}}, {"status": {"phase": "Running"}}) is None
    assert status_update({}, {}) is None
    every = {"phase": "p", "conditions": [], "containerStatuses": [], "initContainerStatuses": [],
             "ephemeralContainerStatuses": [], "podIP": "i", "podIPs": [], "hostIP": "h", "hostIPs": [],
             "startTime": "t", "qosClass": "q", "reason": "r", "message": "m"}
    assert status_update({"status": every}, {}) == {"status": every}


@pytest.mark.parametrize(("annotations", "key"), [
    ({"vcluster.loft.sh/object-name": "web", "vcluster.loft.sh/object-namespace": "team"}, "team/web"),
    ({"vcluster.loft.sh/object-name": "web"}, None),
    ({"vcluster.loft.sh/object-namespace": "team"}, None),
    ({"vcluster.loft.sh/object-name": "", "vcluster.loft.sh/object-namespace": "team"}, None),
    ({"vcluster.loft.sh/object-name": "web", "vcluster.loft.sh/object-namespace": ""}, None),
    ({"vcluster.loft.sh/object-name": 1, "vcluster.loft.sh/object-namespace": "team"}, None),
    ({"vcluster.loft.sh/object-name": "web", "vcluster.loft.sh/object-namespace": 2}, None),
    ("not a map", None),
])
def test_the_virtual_key_of_a_host_pod(annotations: Any, key: str | None) -> None:
    assert virtual_key_of_host_pod({"metadata": {"annotations": annotations}}) == key
    assert virtual_key_of_host_pod({}) is None


DEV = parse_config({"sync": {"fromHost": {"runtimeClasses": {
    "enabled": True, "selector": {"matchLabels": {"environment": "development"}}}}}})


@pytest.mark.parametrize(("labels", "matches"), [
    ({"environment": "development"}, True),
    ({"environment": "development", "other": "x"}, True),
    ({"environment": "production"}, False),
    ({}, False),
    (None, False),
    ({"environment": 1}, False),  # labels that are not a map of strings never match
    ({1: "development"}, False),
    (["environment"], False),
])
def test_runtime_class_matches(labels: Any, matches: bool) -> None:
    assert gate.runtime_class_matches(DEV, {"metadata": {"name": "x", "labels": labels}}) is matches


def test_an_empty_selector_matches_every_class_even_without_labels() -> None:
    everything = parse_config({"sync": {"fromHost": {"runtimeClasses": {"enabled": True}}}})
    assert gate.runtime_class_matches(everything, {"metadata": {"name": "x"}}) is True
