"""The pure translation rules one by one, with literal expected values from behaviour.md sections 2 and 3 and
vcluster's pod syncer: the virtual copy of a RuntimeClass, the update of a host pod, the status copied back,
the virtual key of a host pod, the controlled-by fence and the shape checks."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from syncer.config.model import parse_config
from syncer.controllers import gate
from syncer.controllers.translate import (
    ClusterView,
    host_pod_and_dependencies,
    host_pod_name,
    is_controlled_by_other,
    pod_shape_error,
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


def test_status_is_copied_field_by_field_and_removed_fields_are_nulled() -> None:
    hpod = {"status": {"phase": "Running", "podIP": "10.0.0.7", "hostIP": "192.168.0.2", "qosClass": "Guaranteed",
                       "nominatedNodeName": "n1"}}
    vpod = {"status": {"phase": "Pending", "qosClass": "Burstable", "message": "old"}}
    # vcluster translate/diff.go DesiredVirtualStatus: the host status as a whole (nominatedNodeName included), the
    # virtual QoS class kept (immutable since 1.32)
    assert status_update(hpod, vpod) == {"status": {"phase": "Running", "podIP": "10.0.0.7",
                                                    "hostIP": "192.168.0.2", "nominatedNodeName": "n1",
                                                    "message": None}}
    assert status_update({"status": {"phase": "Running"}}, {"status": {"phase": "Running"}}) is None
    assert status_update({}, {}) is None
    # every field of Kubernetes 1.34's core/v1 PodStatus but qosClass (k8s.io/api core/v1 types.go)
    every = {"observedGeneration": 3, "phase": "p", "conditions": [{"type": "Ready"}], "message": "m", "reason": "r",
             "nominatedNodeName": "n", "hostIP": "h", "hostIPs": [{"ip": "h"}], "podIP": "i", "podIPs": [{"ip": "i"}],
             "startTime": "t", "initContainerStatuses": [{"name": "i"}], "containerStatuses": [{"name": "c"}],
             "ephemeralContainerStatuses": [{"name": "e"}], "resize": "InProgress",
             "resourceClaimStatuses": [{"name": "r"}],
             "extendedResourceClaimStatus": {"requestMappings": [], "resourceClaimName": "c"}}
    vspec = {"spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "c"}]}}
    assert status_update({"status": {**every, "qosClass": "Guaranteed"}}, vspec) == {"status": every}


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


# behaviour.md section 3, "The gate": the decision and its exact SyncWarning text.
SELECTOR = "'sync.fromHost.runtimeClasses.selector'"


@pytest.mark.parametrize(("config", "rc_name", "host_rc", "message"), [
    (DEV, "", None, ""),  # no class: passes
    (DEV, "gvisor", {"metadata": {"name": "gvisor", "labels": {"environment": "development"}}}, ""),
    (DEV, "gvisor", None, 'did not sync pod "web" to host because the runtime class "gvisor" couldn\'t be reached in '
                          'the host: runtimeclasses.node.k8s.io "gvisor" not found'),
    (DEV, "gvisor", {"metadata": {"name": "gvisor", "labels": {"environment": "development"},
                                  "deletionTimestamp": "2026-11-24T08:00:00Z"}},
     'did not sync pod "web" to host because the runtime class "gvisor" couldn\'t be reached in the host: runtime '
     "class is being deleted"),
    (DEV, "gvisor", {"metadata": {"name": "gvisor", "labels": {"environment": ["development"]}}},
     'did not sync pod "web" to host because the runtime class "gvisor" in the host could not be checked against '
     f"the selector under {SELECTOR}: metadata.labels is not a map of strings"),
    (DEV, "gvisor", {"metadata": {"name": "gvisor", "labels": {"environment": "production"}}},
     f'did not sync pod "web" to host because the runtime class "gvisor" in the host does not match the selector '
     f"under {SELECTOR}"),
    (DEV, "gvisor", {"metadata": {"name": "gvisor"}},
     f'did not sync pod "web" to host because the runtime class "gvisor" in the host does not match the selector '
     f"under {SELECTOR}"),
    # the feature disabled, or an empty selector: every pod passes, whatever the class
    (parse_config({}), "gvisor", None, ""),
    (parse_config({"sync": {"fromHost": {"runtimeClasses": {"enabled": True}}}}), "missing", None, ""),
], ids=[f"gate{i}" for i in range(9)])
def test_the_gate_decides_with_the_contracts_words(config: Any, rc_name: str, host_rc: Obj | None,
                                                   message: str) -> None:
    d = gate.evaluate(config, "web", rc_name, host_rc)
    assert (d.allowed, d.message, d.runtime_class) == (message == "", message, rc_name)
    if message:
        assert d.reason == message.removeprefix('did not sync pod "web" to host because ')
    else:
        assert d.reason == "" and d.refusal is None


@pytest.mark.parametrize(("pod", "problem"), [
    ({"metadata": "x", "spec": {}}, "metadata.name and metadata.namespace must be strings"),
    ({"metadata": {"name": "a"}, "spec": {}}, "metadata.name and metadata.namespace must be strings"),
    ({"metadata": {"name": 1, "namespace": "n"}, "spec": {}}, "metadata.name and metadata.namespace must be strings"),
    ({"metadata": {"name": "a", "namespace": "n", "labels": []}, "spec": {}}, "metadata.labels is not an object"),
    ({"metadata": {"name": "a", "namespace": "n", "annotations": "x"}, "spec": {}},
     "metadata.annotations is not an object"),
    ({"metadata": {"name": "a", "namespace": "n"}}, "spec is not an object"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": []}, "spec is not an object"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": {"containers": {}}},
     "spec.containers is not a list of objects"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": {"initContainers": ["x"]}},
     "spec.initContainers is not a list of objects"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": {"ephemeralContainers": [1]}},
     "spec.ephemeralContainers is not a list of objects"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": {"volumes": "v"}}, "spec.volumes is not a list of objects"),
    ({"metadata": {"name": "a", "namespace": "n"}, "spec": {"runtimeClassName": 5}},
     "spec.runtimeClassName is not a string"),
    ({"metadata": {"name": "a", "namespace": "n", "labels": None, "annotations": None},
      "spec": {"containers": [{}], "volumes": None, "runtimeClassName": None}}, None),
], ids=[f"shape{i}" for i in range(13)])
def test_pod_shapes(pod: Obj, problem: str | None) -> None:
    assert pod_shape_error(pod) == problem


VPOD: Obj = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web.v2", "namespace": "team", "uid": "u-1", "resourceVersion": "9",
                 "labels": {"app": "web"}, "annotations": {"note": "x"}},
    "spec": {"serviceAccountName": "builder", "serviceAccount": "builder", "priority": 1000,
             "priorityClassName": "high", "overhead": {"cpu": "10m"}, "runtimeClassName": "gvisor",
             "enableServiceLinks": True,
             "containers": [{"name": "app", "image": "nginx:1.27",
                             "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                             "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}],
             "volumes": [{"name": "cfg", "configMap": {"name": "app-config"}}]},
}
KUBE_ENV = [{"name": k, "value": v} for k, v in sorted({
    "KUBERNETES_PORT": "tcp://10.96.0.5:443", "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.5:443",
    "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.5", "KUBERNETES_PORT_443_TCP_PORT": "443",
    "KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_SERVICE_HOST": "10.96.0.5", "KUBERNETES_SERVICE_PORT": "443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "443", "DB_SERVICE_HOST": "10.96.0.9", "DB_SERVICE_PORT": "5432",
    "DB_PORT": "tcp://10.96.0.9:5432", "DB_PORT_5432_TCP": "tcp://10.96.0.9:5432",
    "DB_PORT_5432_TCP_PROTO": "tcp", "DB_PORT_5432_TCP_PORT": "5432", "DB_PORT_5432_TCP_ADDR": "10.96.0.9"}.items())]


def test_the_whole_host_pod_of_a_workload() -> None:
    # behaviour.md section 3 (host name and metadata) and 3.1 (references, identity, DNS, environment, downward
    # API), vcluster's single-namespace translation; every field written out
    view = ClusterView("10.96.0.5", "10.96.0.10",
                       [{"metadata": {"name": "db"}, "spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 5432}]}}],
                       "vc-workload-vc")
    vpod = copy.deepcopy(VPOD)
    hpod, deps = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="vc-ns", cluster=view)
    assert vpod == VPOD  # the virtual pod is not changed
    assert hpod == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "web.v2-x-team-x-vc", "namespace": "vc-ns",
            "labels": {"app": "web", "vcluster.loft.sh/managed-by": "vc", "vcluster.loft.sh/namespace": "team"},
            "annotations": {
                "note": "x", "vcluster.loft.sh/object-name": "web.v2", "vcluster.loft.sh/object-namespace": "team",
                "vcluster.loft.sh/object-uid": "u-1", "vcluster.loft.sh/object-kind": "/v1, Kind=Pod",
                # vcluster's addHostAnnotations: the host object's own name and namespace
                "vcluster.loft.sh/object-host-name": "web.v2-x-team-x-vc",
                "vcluster.loft.sh/object-host-namespace": "vc-ns",
                "runtimeclass-syncer.io/virtual-runtime-class": "gvisor",
                "vcluster.loft.sh/name": "web.v2", "vcluster.loft.sh/namespace": "team", "vcluster.loft.sh/uid": "u-1",
                "vcluster.loft.sh/service-account-name": "builder", "vcluster.loft.sh/labels": 'app="web"',
                # translator.go: a pod without a controller is not safe to evict (nothing recreates it)
                "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
                # the base of the next three-way merge: each synced key with the first 10 hex digits of the
                # SHA-256 of its value
                "runtimeclass-syncer.io/synced-annotations":
                    '{"note":"' + hashlib.sha256(b"x").hexdigest()[:10] + '"}',
                # the scheduling gates the virtual pod has at the create (none): the only ones the syncer removes
                "runtimeclass-syncer.io/scheduling-gates": "",
                # the images of this sync, each container's the first 10 hex digits of the SHA-256 of its image: an
                # image the host changes later (a mirror's webhook) is told from one the tenant changes
                "runtimeclass-syncer.io/synced-images":
                    '{"containers/app":"' + hashlib.sha256(b"nginx:1.27").hexdigest()[:10] + '"}'}},
        "spec": {
            "runtimeClassName": "gvisor", "enableServiceLinks": False, "automountServiceAccountToken": False,
            "hostname": "web-v2", "serviceAccountName": "vc-workload-vc", "dnsPolicy": "None",
            "dnsConfig": {"nameservers": ["10.96.0.10"],
                          "searches": ["team.svc.cluster.local", "svc.cluster.local", "cluster.local"],
                          "options": [{"name": "ndots", "value": "5"}]},
            "hostAliases": [{"ip": "10.96.0.5", "hostnames": ["kubernetes.default.svc.cluster.local", "kubernetes",
                                                              "kubernetes.default", "kubernetes.default.svc"]}],
            "containers": [{"name": "app", "image": "nginx:1.27", "env": [*KUBE_ENV, {"name": "POD", "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['vcluster.loft.sh/name']"}}}],
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/app"}]}],
            "volumes": [{"name": "cfg", "configMap": {"name": "app-config-x-team-x-vc"}}]},
    }
    assert [(d.kind, d.name, d.host_name, d.optional, d.field) for d in deps] == [
        ("configmap", "app-config", "app-config-x-team-x-vc", False, "spec.volumes[0].configMap.name")]


def test_a_forced_class_and_no_cluster_view() -> None:
    # sync.toHost.pods.runtimeClassName wins on the host; the virtual pod's own class is remembered; a pod
    # without labels, annotations or a class of its own; its own hostname is kept
    vpod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"hostname": "mine", "containers": []}}
    hpod = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="h", forced_runtime_class="kata")[0]
    assert hpod["metadata"]["labels"] == {"vcluster.loft.sh/managed-by": "vc", "vcluster.loft.sh/namespace": "ns"}
    assert hpod["metadata"]["annotations"] == {
        "vcluster.loft.sh/object-name": "p", "vcluster.loft.sh/object-namespace": "ns",
        "vcluster.loft.sh/object-uid": "", "vcluster.loft.sh/object-kind": "/v1, Kind=Pod",
        "vcluster.loft.sh/object-host-name": "p-x-ns-x-vc", "vcluster.loft.sh/object-host-namespace": "h",
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false", "vcluster.loft.sh/labels": "",
        "runtimeclass-syncer.io/synced-annotations": "{}", "runtimeclass-syncer.io/scheduling-gates": "",
        "runtimeclass-syncer.io/synced-images": "{}"}
    assert hpod["spec"] == {"hostname": "mine", "containers": [], "automountServiceAccountToken": False,
                            "runtimeClassName": "kata"}


def test_names_of_exactly_63_characters_are_kept_and_64_are_hashed() -> None:
    # vcluster's SafeConcatName: only a name longer than 63 characters is shortened (52 characters, -, hash)
    assert host_pod_name("a" * 53, "ns", "vc") == "a" * 53 + "-x-ns-x-vc"  # 63 characters
    longer = host_pod_name("a" * 54, "ns", "vc")  # 64 characters joined
    assert longer == "a" * 52 + "-" + hashlib.sha256(("a" * 54 + "-x-ns-x-vc").encode()).hexdigest()[:10]


def test_what_names_virtual_only_objects_is_stripped_without_a_cluster_view() -> None:
    vpod = {"metadata": {"name": "p-", "namespace": "ns"}, "spec": {
        "serviceAccountName": "builder", "serviceAccount": "builder", "priority": 5, "priorityClassName": "high",
        "overhead": {"cpu": "1m"}, "containers": []}}
    spec = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="h")[0]["spec"]
    assert spec == {"containers": [], "automountServiceAccountToken": False, "hostname": "p"}


def test_service_links_off_leaves_only_the_api_server_variables() -> None:
    view = ClusterView("10.96.0.5", "10.96.0.10",
                       [{"metadata": {"name": "db"}, "spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 5432}]}}])
    vpod = {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"enableServiceLinks": False, "containers": [{"name": "c"}]}}
    spec = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="h", cluster=view)[0]["spec"]
    assert [e["name"] for e in spec["containers"][0]["env"]] == [e["name"] for e in KUBE_ENV
                                                                 if e["name"].startswith("KUBERNETES")]


def test_vclusters_reserved_label_keys_are_rewritten_on_the_host() -> None:
    # vcluster translate/labels.go HostLabelsMap, single_namespace.go LabelsToTranslate: `release` and its own
    # markers become vcluster.loft.sh/label-<vcluster>-x-<sha256(key)[:10]>, so a tenant pod labelled
    # app: vcluster, release: <vcluster> cannot join the vcluster's Service; a forged rewritten key is dropped
    release_key = "vcluster.loft.sh/label-vc-x-a4d451ec23"  # sha256("release") begins a4d451ec23
    vpod = {"metadata": {"name": "p", "namespace": "ns", "labels": {
        "app": "vcluster", "release": "vc", "vcluster.loft.sh/controlled-by": "me",
        "vcluster.loft.sh/managed-by": "other", "vcluster.loft.sh/namespace": "kube-system",
        release_key: "forged"}}, "spec": {"containers": []}}
    labels = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="h")[0]["metadata"]["labels"]
    digest = {k: hashlib.sha256(k.encode()).hexdigest()[:10] for k in (
        "vcluster.loft.sh/controlled-by", "vcluster.loft.sh/managed-by", "vcluster.loft.sh/namespace")}
    assert labels == {
        "app": "vcluster", release_key: "vc",
        f"vcluster.loft.sh/label-vc-x-{digest['vcluster.loft.sh/controlled-by']}": "me",
        f"vcluster.loft.sh/label-vc-x-{digest['vcluster.loft.sh/managed-by']}": "other",
        f"vcluster.loft.sh/label-vc-x-{digest['vcluster.loft.sh/namespace']}": "kube-system",
        "vcluster.loft.sh/managed-by": "vc", "vcluster.loft.sh/namespace": "ns"}


@pytest.mark.parametrize(("host_pc", "pc_name", "message"), [
    # vcluster's applyLimitByPriorityClass, in its words (the deleting case as the runtime-class gate words it)
    (None, "batch", 'did not sync pod "p" to host because the priority class "batch" couldn\'t be reached in the '
                    'host: priorityclasses.scheduling.k8s.io "batch" not found'),
    ({"metadata": {"name": "batch", "deletionTimestamp": "2026-11-24T00:00:00Z", "labels": {"tier": "tenant"}}},
     "batch", 'did not sync pod "p" to host because the priority class "batch" couldn\'t be reached in the host: '
              "priority class is being deleted"),
    ({"metadata": {"name": "batch", "labels": {"tier": 5}}}, "batch",
     'did not sync pod "p" to host because the priority class "batch" in the host could not be checked against the '
     "selector under 'sync.fromHost.priorityClasses.selector': metadata.labels is not a map of strings"),
    ({"metadata": {"name": "batch", "labels": {"tier": "other"}}}, "batch",
     'did not sync pod "p" to host because the priority class "batch" in the host does not match the selector '
     "under 'sync.fromHost.priorityClasses.selector'"),
    ({"metadata": {"name": "batch", "labels": {"tier": "tenant"}}}, "batch", None),
    (None, "system-node-critical", None),  # constants.SystemPriorityClassesAllowList
    (None, "", None),
])
def test_the_priority_class_gate_words(host_pc: Obj | None, pc_name: str, message: str | None) -> None:
    config = parse_config({"sync": {"fromHost": {"priorityClasses": {
        "enabled": True, "selector": {"matchLabels": {"tier": "tenant"}}}}}})
    refusal = gate.evaluate_priority(config, pc_name, host_pc)
    assert (refusal.message("p") if refusal is not None else None) == message
    off = parse_config({"sync": {"fromHost": {"priorityClasses": {"enabled": False, "selector": {
        "matchLabels": {"tier": "tenant"}}}}}})
    assert gate.evaluate_priority(off, pc_name, None) is None  # the gate needs the sync enabled


def test_a_single_label_read_through_the_downward_api_reads_its_host_key() -> None:
    # vcluster's translateFieldRef: `metadata.labels['k']` (FieldPathLabelRegEx) is mapped through
    # translate.HostLabel: a key vcluster rewrites on the host (`release`) is read under its rewritten key,
    # `vcluster.loft.sh/label-<vcluster>-x-<first 10 hex digits of sha256(key)>`; any other key is unchanged
    vpod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"release": "r1", "app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "x", "env": [
                {"name": "R", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['release']"}}},
                {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]}],
                "volumes": [{"name": "info", "downwardAPI": {"items": [
                    {"path": "release", "fieldRef": {"fieldPath": "metadata.labels['release']"}}]}}]}}
    view = ClusterView("10.96.0.5", "10.96.0.10", [], "vc-workload-vc")
    spec = host_pod_and_dependencies(vpod, vcluster_name="vc", host_namespace="h", cluster=view)[0]["spec"]
    release = "vcluster.loft.sh/label-vc-x-" + hashlib.sha256(b"release").hexdigest()[:10]
    env = {e["name"]: e.get("valueFrom") for e in spec["containers"][0]["env"]}
    assert env["R"] == {"fieldRef": {"fieldPath": f"metadata.labels['{release}']"}}
    assert env["A"] == {"fieldRef": {"fieldPath": "metadata.labels['app']"}}
    assert spec["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"] == {
        "fieldPath": f"metadata.labels['{release}']"}
