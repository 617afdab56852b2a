"""vcluster's pod translator tests, ported as tables (input virtual pod and config -> expected host pod fields),
plus the rules of its translator that it does not test itself. Each case names the vcluster test (loft-sh/vcluster,
pkg/controllers/resources/pods/translate/*_test.go, pkg/util/toleration/toleration_test.go) or the code it
comes from; where this project deliberately differs, the case says so and asserts our behaviour."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from syncer.config.model import ConfigError, parse_config
from syncer.config.tolerations import TolerationError, parse_toleration
from syncer.controllers.podtranslate.options import PodOptions
from syncer.controllers.translate import ClusterView, host_pod

Obj = dict[str, Any]
VC, HOST_NS = "vc", "vc-ns"
VIRTUAL_PATH = "/tmp/vcluster/vc-ns/vc"  # VirtualPathTemplate with the host namespace and the vcluster name


def translate(spec: Obj, *, meta: Obj | None = None, options: PodOptions | None = None,
              cluster: ClusterView | None = None) -> Obj:
    vpod = {"metadata": {"name": "pod-name", "namespace": "test-ns", "uid": "v-uid", **(meta or {})}, "spec": spec}
    return host_pod(vpod, vcluster_name=VC, host_namespace=HOST_NS, options=options, cluster=cluster)


def options(doc: Obj) -> PodOptions:
    return PodOptions.from_config(parse_config(doc))


# ------------------------------------------------------------------ toleration_test.go TestParseToleration

@pytest.mark.parametrize(("text", "want"), [
    ("*", {"operator": "Exists"}),  # "Should get toleration with Operator exists"
    ("key", {"key": "key"}),  # "Should get toleration with key"
    ("key=value", {"key": "key", "value": "value"}),  # "... with key and value"
    ("key=value:NoSchedule", {"key": "key", "value": "value", "effect": "NoSchedule", "operator": "Equal"}),
    ("key:NoSchedule", {"key": "key", "effect": "NoSchedule", "operator": "Exists"}),  # "... key and effect"
])
def test_parse_toleration(text: str, want: Obj) -> None:
    assert parse_toleration(text) == want


@pytest.mark.parametrize("text", ["key=value,wrong:NoSchedule",  # "Should get bad label error"
                                  "key=value:Effec:Effect",  # "Should get invalid toleration"
                                  "key=value=value",  # "Should get invalid toleration"
                                  "key=val\n:NoSchedule"])  # not a label value (Go's `$` is the text's end)
def test_parse_toleration_errors(text: str) -> None:
    with pytest.raises(TolerationError, match="invalid toleration spec"):
        parse_toleration(text)


def test_a_bad_enforced_toleration_is_a_config_error_naming_the_entry() -> None:
    # different: vcluster's parseEnforcedTolerations drops such an entry silently
    with pytest.raises(ConfigError) as e:
        parse_config({"sync": {"toHost": {"pods": {"enforceTolerations": ["ok:NoSchedule", "a=b=c"]}}}})
    assert e.value.errors == ["invalid sync.toHost.pods.enforceTolerations[1]: invalid toleration spec: a=b=c"]


# ------------------------------------------- translator_test.go TestTranslateEnforcedTolerationDedup

def test_an_enforced_toleration_the_pod_has_appears_once() -> None:
    enforced = {"key": "vcluster-enforced", "operator": "Exists", "effect": "NoSchedule"}
    opts = options({"sync": {"toHost": {"pods": {"enforceTolerations": ["vcluster-enforced:NoSchedule"]}}}})
    spec = translate({"tolerations": [enforced], "containers": [{"name": "c", "image": "nginx"}]}, options=opts)
    assert spec["spec"]["tolerations"] == [enforced]
    spec = translate({"containers": [{"name": "c", "image": "nginx"}]}, options=opts)
    assert spec["spec"]["tolerations"] == [enforced]


# ------------------------------------------------------------------ translator_test.go TestVolumeTranslation

def test_ephemeral_volume_becomes_the_claim_the_virtual_controller_creates() -> None:
    # "ephemeral volume": the claim <pod>-<volume>, by its host name
    pod = translate({"volumes": [{"name": "eph-vol", "ephemeral": {"volumeClaimTemplate": {}}}]})
    assert pod["spec"]["volumes"] == [{"name": "eph-vol",
                                       "persistentVolumeClaim": {"claimName": "pod-name-eph-vol-x-test-ns-x-vc"}}]


def test_hostpath_mapper_kubelet_pods_exact_match() -> None:
    # "hostpath mapper — kubelet pods exact match rewrites to virtual kubelet path"
    opts = options({"controlPlane": {"hostPathMapper": {"enabled": True}}})
    pod = translate({"containers": [{"name": "c", "volumeMounts": [{"name": "kubelet-pods",
                                                                    "mountPath": "/var/lib/kubelet/pods"}]}],
                     "volumes": [{"name": "kubelet-pods", "hostPath": {"path": "/var/lib/kubelet/pods"}}]},
                    options=opts)
    assert pod["spec"]["volumes"] == [
        {"name": "kubelet-pods", "hostPath": {"path": VIRTUAL_PATH + "/kubelet/pods"}},
        {"name": "kubelet-pods-vcluster-physical", "hostPath": {"path": "/var/lib/kubelet/pods"}}]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "kubelet-pods", "mountPath": "/var/lib/kubelet/pods", "mountPropagation": "HostToContainer"},
        {"name": "kubelet-pods-vcluster-physical", "mountPath": "/var/vcluster/physical/kubelet/pods"}]


def test_hostpath_mapper_pod_logs() -> None:
    # "hostpath mapper": /var/log/pods/ (trailing slash) -> <virtual>/log/pods, the physical one mounted read-only
    opts = options({"controlPlane": {"hostPathMapper": {"enabled": True}}})
    pod = translate({"containers": [{"name": "c", "volumeMounts": [{"name": "varlog", "mountPath": "/var/log/pods/",
                                                                    "readOnly": True}]}],
                     "volumes": [{"name": "varlog", "hostPath": {"path": "/var/log/pods/"}}]}, options=opts)
    assert pod["spec"]["volumes"] == [
        {"name": "varlog", "hostPath": {"path": VIRTUAL_PATH + "/log/pods"}},
        {"name": "varlog-vcluster-physical", "hostPath": {"path": "/var/log/pods"}}]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "varlog", "mountPath": "/var/log/pods/", "readOnly": True, "mountPropagation": "HostToContainer"},
        {"name": "varlog-vcluster-physical", "mountPath": "/var/vcluster/physical/log/pods", "readOnly": True}]


@pytest.mark.parametrize(("path", "want"), [
    # hostpath.go rewriteHostPaths without the mapper (vcluster's default): always rewritten, nothing added
    ("/var/log", VIRTUAL_PATH + "/log"),
    ("/var/log/", VIRTUAL_PATH + "/log"),
    ("/var/log/pods", VIRTUAL_PATH + "/log/pods"),
    ("/var/lib/kubelet/pods", VIRTUAL_PATH + "/kubelet/pods"),
    ("/var/log/containers", "/var/log/containers"),  # only the three paths
    ("/data", "/data"),
    # different: other spellings of the same folder (the API server refuses only `..`); vcluster compares strings
    ("/var//log/pods", VIRTUAL_PATH + "/log/pods"),
    ("/var/log/pods/.", VIRTUAL_PATH + "/log/pods"),
    ("//var/log", VIRTUAL_PATH + "/log"),
    ("/./var/lib/kubelet//pods/", VIRTUAL_PATH + "/kubelet/pods"),
])
def test_host_paths_are_rewritten_without_the_mapper(path: str, want: str) -> None:
    pod = translate({"containers": [{"name": "c"}], "volumes": [{"name": "v", "hostPath": {"path": path}}]})
    assert pod["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": want}}]


def test_a_volume_named_like_the_mappers_is_rewritten_too() -> None:
    # different: vcluster skips a volume whose name ends in "vcluster-physical", which lets a tenant keep
    # /var/log/pods; every volume of the virtual pod is rewritten here
    pod = translate({"volumes": [{"name": "x-vcluster-physical", "hostPath": {"path": "/var/log/pods"}}]})
    assert pod["spec"]["volumes"][0]["hostPath"]["path"] == VIRTUAL_PATH + "/log/pods"


# ------------------------------------------------------------------ hostpath_test.go TestTranslateKubeletSubPath

@pytest.mark.parametrize(("path", "want"), [
    # "rewrites virtual UID to physical UID in deep sub-path"
    ("/var/lib/kubelet/pods/aaaa-bbbb-cccc-virtual/volumes/kubernetes.io~csi/pvc-abc/mount",
     "/var/lib/kubelet/pods/dddd-eeee-ffff-physical/volumes/kubernetes.io~csi/pvc-abc/mount"),
    # "rewrites virtual UID with no sub-path under UID"
    ("/var/lib/kubelet/pods/aaaa-bbbb-cccc-virtual", "/var/lib/kubelet/pods/dddd-eeee-ffff-physical"),
    # "passes through path unchanged for unknown UID"
    ("/var/lib/kubelet/pods/unknown-uid-that-does-not-exist/volumes/kubernetes.io~csi/pvc-abc/mount",
     "/var/lib/kubelet/pods/unknown-uid-that-does-not-exist/volumes/kubernetes.io~csi/pvc-abc/mount"),
    # different: another spelling of the same folder gets the host pod's uid too
    ("/var/lib//kubelet/pods/./aaaa-bbbb-cccc-virtual/volumes",
     "/var/lib/kubelet/pods/dddd-eeee-ffff-physical/volumes"),
])
def test_kubelet_sub_paths_get_the_host_pods_uid(path: str, want: str) -> None:
    # vcluster errors (and retries the pod) when the virtual pod's host pod is missing; here the path is left as
    # it is (the host_uid lookup answers None for both), so the pod is not held back
    uids = {"aaaa-bbbb-cccc-virtual": "dddd-eeee-ffff-physical"}
    view = ClusterView("10.96.0.1", "10.96.0.10", host_uid=uids.get)
    pod = translate({"volumes": [{"name": "v", "hostPath": {"path": path}}]}, cluster=view)
    assert pod["spec"]["volumes"][0]["hostPath"]["path"] == want


# ------------------------------------------------------------------ translator_test.go TestRewriteHostsTranslation

INIT_SECURITY = {"runAsUser": 1001, "runAsGroup": 1001, "runAsNonRoot": True, "capabilities": {"drop": ["ALL"]},
                 "allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}}


def test_a_pod_with_a_subdomain_gets_the_hosts_rewriting_init_container() -> None:
    # "Add init container that rewrites /etc/hosts"; the FQDN as Translate builds it (.svc.<cluster domain>)
    pod = translate({"subdomain": "subdomain", "containers": [{"name": "c"}]})
    spec = pod["spec"]
    assert "subdomain" not in spec
    assert spec["initContainers"] == [{
        "name": "vcluster-rewrite-hosts", "image": "mirror.gcr.io/library/alpine:3.20", "command": ["sh"],
        "args": ["-c", r"sed -E -e 's/^(\d+.\d+.\d+.\d+\s+)pod-name$/\1 pod-name.subdomain.test-ns.svc.cluster.local"
                       r" pod-name/' /etc/hosts > /hosts/hosts"],
        "securityContext": INIT_SECURITY,
        "resources": {"limits": {"cpu": "30m", "memory": "64Mi"}, "requests": {"cpu": "30m", "memory": "64Mi"}},
        "volumeMounts": [{"mountPath": "/hosts", "name": "vcluster-rewrite-hosts"}]}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"mountPath": "/etc/hosts", "name": "vcluster-rewrite-hosts", "subPath": "hosts"}]
    assert spec["volumes"] == [{"name": "vcluster-rewrite-hosts", "emptyDir": {}}]
    assert pod["metadata"]["annotations"]["vcluster.loft.sh/hosts-rewritten"] == "true"


@pytest.mark.parametrize(("doc", "image"), [
    # "Default registry has precedence over specified registry"
    ({"controlPlane": {"advanced": {"defaultImageRegistry": "my-registry"}},
      "sync": {"toHost": {"pods": {"rewriteHosts": {"initContainer": {"image": {"registry": "mirror.gcr.io"}}}}}}},
     "my-registry/library/alpine:3.20"),
    # "Use image overrides if specified"
    ({"sync": {"toHost": {"pods": {"rewriteHosts": {"initContainer": {"image": {
        "registry": "private", "repository": "minimal/sed", "tag": "very-specific-tag"}}}}}}},
     "private/minimal/sed:very-specific-tag"),
])
def test_the_hosts_init_container_image(doc: Obj, image: str) -> None:
    pod = translate({"subdomain": "subdomain"}, options=options(doc))
    assert pod["spec"]["initContainers"][0]["image"] == image


def test_no_hosts_rewrite_when_disabled_or_opted_out() -> None:
    # rewriteHosts.enabled false: the subdomain is still removed (it names no host Service)
    pod = translate({"subdomain": "s"}, options=options({"sync": {"toHost": {"pods": {"rewriteHosts": {
        "enabled": False}}}}}))
    assert pod["spec"] == {"hostname": "pod-name", "automountServiceAccountToken": False}
    # different: the disable annotation alone opts out (vcluster also wants hosts-rewritten: "true")
    pod = translate({"subdomain": "s"}, meta={"annotations": {"vcluster.loft.sh/disable-subdomain-rewrite": "true"}})
    assert "initContainers" not in pod["spec"] and "subdomain" not in pod["spec"]


# ------------------------------------------------------------------ translator.go Translate: priority

@pytest.mark.parametrize(("doc", "want"), [
    # both priority-class syncs off (vcluster's default): the class, its number and (different: vcluster keeps it)
    # the preemption policy are removed, the host's Priority admission decides
    ({}, {}),
    # sync.toHost.priorityClasses: the host name of the class vcluster syncs; a priority above 1e9 capped
    ({"sync": {"toHost": {"priorityClasses": {"enabled": True}}}},
     {"priorityClassName": "vcluster-high-x-vc-ns-x-vc", "priority": 1000000000,
      "preemptionPolicy": "PreemptLowerPriority"}),
    # sync.fromHost.priorityClasses: the virtual classes are the host's, kept as they are
    ({"sync": {"fromHost": {"priorityClasses": {"enabled": True}}}},
     {"priorityClassName": "high", "priority": 2000000000, "preemptionPolicy": "PreemptLowerPriority"}),
    # sync.toHost.pods.priorityClassName for a pod left without a class
    ({"sync": {"toHost": {"pods": {"priorityClassName": "tenant-default"}}}}, {"priorityClassName": "tenant-default"}),
])
def test_priority(doc: Obj, want: Obj) -> None:
    spec = translate({"priorityClassName": "high", "priority": 2000000000,
                      "preemptionPolicy": "PreemptLowerPriority"}, options=options(doc))["spec"]
    assert {k: spec[k] for k in ("priorityClassName", "priority", "preemptionPolicy") if k in spec} == want


def test_a_pod_without_a_class_gets_the_configured_one_and_no_number() -> None:
    opts = options({"sync": {"toHost": {"pods": {"priorityClassName": "tenant-default"}}}})
    spec = translate({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"}, options=opts)["spec"]
    assert (spec.get("priorityClassName"), "priority" in spec, "preemptionPolicy" in spec) == (
        "tenant-default", False, False)


# ------------------------------------------------------------------ translator.go Translate: metadata

def test_autoscaler_and_owner_annotations() -> None:
    owners = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9", "uid": "rs-1", "controller": True}]
    ann = translate({}, meta={"ownerReferences": owners})["metadata"]["annotations"]
    assert ann["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true"  # a controller recreates it
    assert json.loads(ann["vcluster.loft.sh/owner-references"]) == owners
    assert ann["vcluster.loft.sh/owner-set-kind"] == "ReplicaSet"
    assert "cluster-autoscaler.kubernetes.io/daemonset-pod" not in ann
    ds = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "ds-1", "controller": True}]
    ann = translate({}, meta={"ownerReferences": ds})["metadata"]["annotations"]
    assert (ann["cluster-autoscaler.kubernetes.io/daemonset-pod"], ann["vcluster.loft.sh/owner-set-kind"]) == (
        "true", "DaemonSet")
    # the pod's own safe-to-evict wins
    ann = translate({}, meta={"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}}
                    )["metadata"]["annotations"]
    assert ann["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true"


# vcluster's pods/syncer_test.go TestSync (and TestSyncTable): the host pod's annotations for virtual pod
# testns/testpod (no uid, labels, owners or service account) of vcluster "vcluster" in host namespace "test",
# `pObjectMeta.Annotations` written out (translate.HostNameAnnotation is `object-host-name`, HostNamespaceAnnotation
# `object-host-namespace`, podtranslate.NameAnnotation `vcluster.loft.sh/name` ...).
VCLUSTER_TESTSYNC_ANNOTATIONS = {
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    "vcluster.loft.sh/labels": "",
    "vcluster.loft.sh/name": "testpod",
    "vcluster.loft.sh/namespace": "testns",
    "vcluster.loft.sh/object-name": "testpod",
    "vcluster.loft.sh/object-uid": "",
    "vcluster.loft.sh/object-namespace": "testns",
    "vcluster.loft.sh/object-kind": "/v1, Kind=Pod",
    "vcluster.loft.sh/object-host-namespace": "test",
    "vcluster.loft.sh/object-host-name": "testpod-x-testns-x-vcluster",
    "vcluster.loft.sh/service-account-name": "",
    "vcluster.loft.sh/uid": "",
}


def test_host_pod_annotations_of_vclusters_test_sync() -> None:
    vpod = {"metadata": {"name": "testpod", "namespace": "testns"}, "spec": {"containers": [{"name": "c"}]}}
    view = ClusterView("1.2.3.4", "2.2.2.2", service_account="vc-workload-vcluster")
    hpod = host_pod(vpod, vcluster_name="vcluster", host_namespace="test", cluster=view)
    assert hpod["metadata"]["name"] == "testpod-x-testns-x-vcluster"
    ann = hpod["metadata"]["annotations"]
    # the syncer's own base of the three-way merge comes on top (podtranslate/metadata.py)
    assert {k: v for k, v in ann.items() if not k.startswith("runtimeclass-syncer.io/")} == \
        VCLUSTER_TESTSYNC_ANNOTATIONS


def test_a_tenants_own_identity_annotations_are_overwritten() -> None:
    # different (parity row 6): vcluster's Translate keeps a virtual pod's own `vcluster.loft.sh/name` & co.; here
    # the downward API always reads the pod's real identity
    forged = {"vcluster.loft.sh/name": "kube-apiserver", "vcluster.loft.sh/namespace": "kube-system",
              "vcluster.loft.sh/uid": "x", "vcluster.loft.sh/service-account-name": "admin",
              "vcluster.loft.sh/labels": 'tier="control-plane"'}
    ann = translate({"serviceAccountName": "web"}, meta={"annotations": forged, "labels": {"app": "web"}},
                    cluster=ClusterView("10.96.0.1", "10.96.0.10"))["metadata"]["annotations"]
    assert {k: ann[k] for k in forged} == {
        "vcluster.loft.sh/name": "pod-name", "vcluster.loft.sh/namespace": "test-ns", "vcluster.loft.sh/uid": "v-uid",
        "vcluster.loft.sh/service-account-name": "web", "vcluster.loft.sh/labels": 'app="web"'}


def test_a_tenants_own_object_host_annotations_are_overwritten() -> None:
    # vcluster's HostAnnotations excludes them from what it copies and writes its own (addHostAnnotations)
    forged = {"vcluster.loft.sh/object-host-name": "kube-apiserver", "vcluster.loft.sh/object-host-namespace": "x"}
    ann = translate({}, meta={"annotations": forged})["metadata"]["annotations"]
    assert (ann["vcluster.loft.sh/object-host-name"], ann["vcluster.loft.sh/object-host-namespace"]) == (
        "pod-name-x-test-ns-x-vc", HOST_NS)


def test_the_vcluster_service_owns_the_host_pod_and_namespace_labels_are_carried() -> None:
    # GetOwnerReference (setOwner, default true): controller mirrors whether the virtual pod has one
    view = ClusterView("10.96.0.1", "10.96.0.10", namespace_labels={"team": "a"}, owner={"name": "vc", "uid": "s-1"})
    pod = translate({}, cluster=view)
    assert pod["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "vc", "uid": "s-1",
                                                   "controller": False}]
    # HostLabelNamespace: vcluster.loft.sh/ns-label-<vcluster>-x-<sha256(key)[:10]>
    key = "vcluster.loft.sh/ns-label-vc-x-" + hashlib.sha256(b"team").hexdigest()[:10]
    assert pod["metadata"]["labels"][key] == "a"
    pod = translate({}, cluster=view, options=options({"experimental": {"syncSettings": {"setOwner": False}}}))
    assert "ownerReferences" not in pod["metadata"]


def test_translate_image_for_every_container_kind() -> None:
    opts = options({"sync": {"toHost": {"pods": {"translateImage": {"nginx:1": "registry.local/nginx:1"}}}}})
    spec = translate({"initContainers": [{"name": "i", "image": "nginx:1"}],
                      "containers": [{"name": "c", "image": "nginx:1"}, {"name": "d", "image": "other"}],
                      "ephemeralContainers": [{"name": "e", "image": "nginx:1"}]}, options=opts)["spec"]
    assert [c["image"] for f in ("initContainers", "containers", "ephemeralContainers") for c in spec[f]] == [
        "registry.local/nginx:1", "registry.local/nginx:1", "other", "registry.local/nginx:1"]


# ------------------------------------------------------------------ translator.go / syncer.go: the other switches

def test_service_accounts_synced_by_vcluster_are_used() -> None:
    # Translate with sync.toHost.serviceAccounts: the host copy of the pod's own service account
    view = ClusterView("10.96.0.1", "10.96.0.10", service_account="vc-workload-vc")
    doc = {"sync": {"toHost": {"serviceAccounts": {"enabled": True}}}}
    assert translate({"serviceAccountName": "builder"}, cluster=view, options=options(doc))["spec"][
        "serviceAccountName"] == "builder-x-test-ns-x-vc"
    assert translate({"serviceAccountName": "builder"}, cluster=view)["spec"]["serviceAccountName"] == "vc-workload-vc"


@pytest.mark.parametrize(("doc", "want"), [
    # TestTranslateResourceClaims: "both disabled", "ResourceClaimName only" enabled, both enabled; the names are the
    # production mappers' (pkg/mappings/resources/resourceclaims.go, resourceclaimtemplates.go: HostNameShort, "v" +
    # base36(sha256("claim-x-test-ns-x-vc"))[0:13]); the Go test registers HostName mappers and expects `-x-` names
    ({}, [{"name": "a", "resourceClaimName": "claim"}, {"name": "b", "resourceClaimTemplateName": "tpl"}]),
    ({"sync": {"toHost": {"resourceClaims": {"enabled": True}}}},
     [{"name": "a", "resourceClaimName": "v5mpdlnuw3pkkh"}, {"name": "b", "resourceClaimTemplateName": "tpl"}]),
    ({"sync": {"toHost": {"resourceClaims": {"enabled": True}, "resourceClaimTemplates": {"enabled": True}}}},
     [{"name": "a", "resourceClaimName": "v5mpdlnuw3pkkh"},
      {"name": "b", "resourceClaimTemplateName": "v5edd4yzj7zd9s"}]),
])
def test_resource_claims(doc: Obj, want: list[Obj]) -> None:
    spec = translate({"resourceClaims": [{"name": "a", "resourceClaimName": "claim"},
                                         {"name": "b", "resourceClaimTemplateName": "tpl"}]}, options=options(doc))
    assert spec["spec"]["resourceClaims"] == want


def test_the_synced_nodes_selector_keeps_host_pods_on_those_nodes() -> None:
    # syncer.go SyncToHost "ensure node selector" (TestSyncTable "SyncToHost and enforce NodeSelector")
    opts = options({"sync": {"fromHost": {"nodes": {"selector": {"labels": {"pool": "tenants"}}}}}})
    assert translate({"nodeSelector": {"disk": "ssd"}}, options=opts)["spec"]["nodeSelector"] == {
        "disk": "ssd", "pool": "tenants"}
    # vcluster leaves it off a pod already placed; deliberately different (docs/vcluster-parity.md row 35): the host
    # kubelet then refuses a pod placed by hand on a node outside the selector
    assert translate({"nodeName": "n1"}, options=opts)["spec"]["nodeSelector"] == {"pool": "tenants"}


def test_with_the_virtual_scheduler_the_host_does_not_schedule_again() -> None:
    # Translate: a pod scheduled by the virtual cluster's scheduler keeps its nodeName and loses what would
    # make the host's scheduler decide (affinity, topology spread, nodeSelector)
    opts = options({"controlPlane": {"advanced": {"virtualScheduler": {"enabled": True}}}})
    spec = translate({"nodeName": "n1", "nodeSelector": {"a": "b"}, "affinity": {"podAntiAffinity": {}},
                      "topologySpreadConstraints": [{"maxSkew": 1}]}, options=opts)["spec"]
    assert (spec["nodeName"], "nodeSelector" in spec, "affinity" in spec, "topologySpreadConstraints" in spec) == (
        "n1", False, False, False)


def test_statuses_of_containers_the_host_injected_stay_hidden() -> None:
    # diff.go stripInjectedSidecarContainers: a mesh's sidecar on the host pod is not shown in the virtual cluster
    from syncer.controllers.translate import status_update
    vpod = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": [{"name": "app"}]}, "status": {}}
    hpod = {"status": {"containerStatuses": [{"name": "app", "ready": True}, {"name": "istio-proxy", "ready": True}],
                       "initContainerStatuses": [{"name": "istio-init"}]}}
    assert status_update(hpod, vpod) == {"status": {"containerStatuses": [{"name": "app", "ready": True}]}}
    # an empty list is no field (the Go types' omitempty, which CalculateMergePatch marshals through): a pod whose only
    # init container a host webhook or the /etc/hosts rewrite added gets no status write once its own are copied,
    # where `initContainerStatuses: []` was written on every reconcile and never stored by kube-apiserver
    vpod["status"] = {"containerStatuses": [{"name": "app", "ready": True}]}
    assert status_update(hpod, vpod) is None
    assert status_update({"status": {"phase": "Running", "message": ""}}, {"status": {"phase": "Running"}}) is None


def test_resource_claim_statuses_name_the_virtual_claims() -> None:
    # diff.go convertResourceClaimStatuses (TestDiffResourceClaimStatus): "Translate mapped resource claim name",
    # "Keep host name if mapping fails"; mapped here only from the host name the syncer gave a claim the pod names
    # (v58fgvk8mq62cc: HostNameShort of ns/gpu-claim in vcluster vc), never from the name's form
    from syncer.controllers.translate import status_update
    vpod = {"metadata": {"name": "p", "namespace": "ns"}, "status": {},
            "spec": {"containers": [], "resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"},
                                                          {"name": "t", "resourceClaimTemplateName": "tpl"}]}}
    hpod = {"status": {"resourceClaimStatuses": [
        {"name": "gpu", "resourceClaimName": "v58fgvk8mq62cc"},
        {"name": "t", "resourceClaimName": "p-x-ns-x-vc-t-abcde"},  # generated from the template by the host
        {"name": "old", "resourceClaimName": "gpu-claim-x-ns-x-vc"}]}}  # the `-x-` form is nobody's copy
    statuses = status_update(hpod, vpod, "vc")["status"]["resourceClaimStatuses"]  # type: ignore[index]
    assert [s["resourceClaimName"] for s in statuses] == ["gpu-claim", "p-x-ns-x-vc-t-abcde", "gpu-claim-x-ns-x-vc"]


def test_a_bad_priority_class_selector_is_a_config_error_naming_its_path() -> None:
    with pytest.raises(ConfigError) as e:
        parse_config({"sync": {"fromHost": {"priorityClasses": {"enabled": True, "selector": {
            "matchExpressions": [{"key": "tier", "operator": "Equals", "values": ["a"]}]}}}}})
    assert e.value.errors == [
        'invalid sync.fromHost.priorityClasses.selector: "Equals" is not a valid label selector operator (at '
        "sync.fromHost.priorityClasses.selector.matchExpressions[0].operator)"]


def test_the_hosts_mount_reaches_every_container_and_keeps_the_pods_volumes() -> None:
    # hosts.go rewritePodHostnameFQDN: the volume appended, the init container first, the mount in containers and
    # the other init containers. vcluster mounts it in ephemeral containers too, which kube-apiserver refuses (a
    # subPath "cannot be set for an Ephemeral Container", validateEphemeralContainers): deliberately not here
    pod = translate({"subdomain": "s", "volumes": [{"name": "data", "emptyDir": {}}],
                     "initContainers": [{"name": "setup", "image": "busybox"}],
                     "containers": [{"name": "c", "image": "nginx"}],
                     "ephemeralContainers": [{"name": "debug", "image": "busybox"}]})["spec"]
    mount = {"mountPath": "/etc/hosts", "name": "vcluster-rewrite-hosts", "subPath": "hosts"}
    assert pod["volumes"] == [{"name": "data", "emptyDir": {}}, {"name": "vcluster-rewrite-hosts", "emptyDir": {}}]
    assert [c["name"] for c in pod["initContainers"]] == ["vcluster-rewrite-hosts", "setup"]
    assert pod["initContainers"][1]["volumeMounts"] == [mount]
    assert pod["containers"][0]["volumeMounts"] == [mount]
    assert "volumeMounts" not in pod["ephemeralContainers"][0]
    assert "pod-name.s.test-ns.svc.cluster.local pod-name/" in pod["initContainers"][0]["args"][1]


def test_the_physical_volume_keeps_the_type_and_is_mounted_once_per_container() -> None:
    # hostpath.go addPhysicalPathToVolumesAndCorrectContainers: the kubevirt case of two volumes of one path in one
    # container gets one physical mount; the hostPath type is kept
    opts = options({"controlPlane": {"hostPathMapper": {"enabled": True}}})
    spec = translate({"containers": [{"name": "c", "volumeMounts": [
        {"name": "short", "mountPath": "/pods"}, {"name": "full", "mountPath": "/var/lib/kubelet/pods/"}]}],
        "volumes": [{"name": "short", "hostPath": {"path": "/var/lib/kubelet/pods", "type": "Directory"}},
                    {"name": "full", "hostPath": {"path": "/var/lib/kubelet/pods"}}]}, options=opts)["spec"]
    assert spec["volumes"][2] == {"name": "short-vcluster-physical",
                                  "hostPath": {"path": "/var/lib/kubelet/pods", "type": "Directory"}}
    assert spec["volumes"][3] == {"name": "full-vcluster-physical", "hostPath": {"path": "/var/lib/kubelet/pods"}}
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "short", "mountPath": "/pods"},
        {"name": "full", "mountPath": "/var/lib/kubelet/pods/", "mountPropagation": "HostToContainer"},
        {"name": "short-vcluster-physical", "mountPath": "/var/vcluster/physical/kubelet/pods"}]


def test_priority_edges() -> None:
    # a priority of exactly 1e9 is a user priority (kept); the configured class replaces neither a class the pod
    # has nor leaves the number of a pod that had none
    to_host = options({"sync": {"toHost": {"priorityClasses": {"enabled": True}}}})
    spec = translate({"priorityClassName": "top", "priority": 1000000000}, options=to_host)["spec"]
    assert spec["priority"] == 1000000000
    kept = options({"sync": {"fromHost": {"priorityClasses": {"enabled": True}},
                             "toHost": {"pods": {"priorityClassName": "tenant-default"}}}})
    spec = translate({"priorityClassName": "high", "priority": 5}, options=kept)["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == ("high", 5)
    spec = translate({"priority": 0, "preemptionPolicy": "Never"}, options=kept)["spec"]
    assert (spec["priorityClassName"], "priority" in spec, "preemptionPolicy" in spec) == (
        "tenant-default", False, False)


def test_init_container_statuses_follow_the_virtual_init_containers() -> None:
    from syncer.controllers.translate import status_update
    vpod = {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"initContainers": [{"name": "setup"}], "containers": [{"name": "app"}]}, "status": {}}
    hpod = {"status": {"initContainerStatuses": [{"name": "istio-init"}, {"name": "setup"}]}}
    assert status_update(hpod, vpod) == {"status": {"initContainerStatuses": [{"name": "setup"}]}}


@pytest.mark.parametrize(("text", "message"), [
    ("a=b=c:NoSchedule", "invalid toleration spec: a=b=c:NoSchedule"),
    ("a=-bad-:NoSchedule", "invalid toleration spec: a=-bad-:NoSchedule, a valid label must be an empty string or "
                           "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                           "alphanumeric character"),
])
def test_parse_toleration_messages(text: str, message: str) -> None:
    with pytest.raises(TolerationError) as e:
        parse_toleration(text)
    assert str(e.value) == message


def test_the_downward_api_of_every_container_kind_and_projection_reads_the_virtual_identity() -> None:
    # translator.go translateFieldRef, applied by TranslateContainerEnv to init, app and ephemeral containers and by
    # translateVolumes to downwardAPI volumes and projections
    ref = {"valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    spec = translate({
        "initContainers": [{"name": "i", "env": [{"name": "N", **ref}]}],
        "containers": [{"name": "c", "env": [{"name": "N", **ref}]}],
        "ephemeralContainers": [{"name": "e", "env": [{"name": "N", **ref}]}],
        "volumes": [{"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.uid"}}]}},
                    {"name": "p", "projected": {"sources": [{"downwardAPI": {"items": [
                        {"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}}]},
        cluster=ClusterView("10.96.0.1", "10.96.0.10"))["spec"]
    name = "metadata.annotations['vcluster.loft.sh/name']"
    for field in ("initContainers", "containers", "ephemeralContainers"):
        env = {e["name"]: e for e in spec[field][0]["env"]}
        assert env["N"]["valueFrom"]["fieldRef"]["fieldPath"] == name
    assert spec["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['vcluster.loft.sh/uid']"
    assert spec["volumes"][1]["projected"]["sources"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['vcluster.loft.sh/namespace']"
