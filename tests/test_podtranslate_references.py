"""References to ConfigMaps, Secrets and PVCs rewritten to host names (podtranslate/references.py), field by
field as vcluster's translator.go rewrites them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from syncer.controllers.podtranslate.references import (
    OBJECT_NAME,
    OBJECT_NAMESPACE,
    Dependency,
    not_the_copy,
    translate_references,
)

Obj = dict[str, Any]


def host(name: str) -> str:
    return f"{name}-x-ns-x-vc"


SELF_CONTAINED = {"volumes": [{"name": "tmp", "emptyDir": {}}],
                  "containers": [{"name": "a", "env": [{"name": "A", "value": "b"}]}]}
# (what, the spec, the spec after translation, the dependencies as (kind, name, optional, field))
CASES: list[tuple[str, Obj, Obj, list[tuple[str, str, bool, str]]]] = [
    ("configMap volume", {"volumes": [{"name": "a", "configMap": {"name": "c1"}}]},
     {"volumes": [{"name": "a", "configMap": {"name": host("c1")}}]},
     [("configmap", "c1", False, "spec.volumes[0].configMap.name")]),
    ("optional secret volume", {"volumes": [{"name": "a", "secret": {"secretName": "s1", "optional": True}}]},
     {"volumes": [{"name": "a", "secret": {"secretName": host("s1"), "optional": True}}]},
     [("secret", "s1", True, "spec.volumes[0].secret.secretName")]),
    ("PVC volume", {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]},
     {"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": host("data")}}]},
     [("persistentvolumeclaim", "data", False, "spec.volumes[0].persistentVolumeClaim.claimName")]),
    ("ephemeral volume -> the claim <pod>-<volume>",
     {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]},
     {"volumes": [{"name": "scratch", "persistentVolumeClaim": {"claimName": host("web-scratch")}}]},
     [("persistentvolumeclaim", "web-scratch", False, "spec.volumes[0].ephemeral.claimName")]),
    ("projected configMap and secret sources",
     {"volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": "c"}}, {"downwardAPI": {}},
                                                          {"secret": {"name": "s", "optional": True}}]}}]},
     {"volumes": [{"name": "p", "projected": {"sources": [{"configMap": {"name": host("c")}}, {"downwardAPI": {}},
                                                          {"secret": {"name": host("s"), "optional": True}}]}}]},
     [("configmap", "c", False, "spec.volumes[0].projected.sources[0].configMap.name"),
      ("secret", "s", True, "spec.volumes[0].projected.sources[2].secret.name")]),
    ("volume plugin secretRefs",
     {"volumes": [{"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "k"}}},
                  {"name": "r", "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "ceph"}}},
                  {"name": "z", "azureFile": {"secretName": "az", "shareName": "s"}}]},
     {"volumes": [{"name": "c", "csi": {"driver": "d", "nodePublishSecretRef": {"name": host("k")}}},
                  {"name": "r", "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": host("ceph")}}},
                  {"name": "z", "azureFile": {"secretName": host("az"), "shareName": "s"}}]},
     [("secret", "k", False, "spec.volumes[0].csi.nodePublishSecretRef.name"),
      ("secret", "ceph", False, "spec.volumes[1].rbd.secretRef.name"),
      ("secret", "az", False, "spec.volumes[2].azureFile.secretName")]),
    ("envFrom and env key refs, in every container list",
     {"initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "s3"}}]}],
      "containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "c2", "optional": True}}], "env": [
          {"name": "X", "value": "1"},
          {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s4", "key": "pw"}}},
          {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "c3", "key": "m", "optional": True}}}]}]},
     {"initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": host("s3")}}]}],
      "containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": host("c2"), "optional": True}}], "env": [
          {"name": "X", "value": "1"},
          {"name": "PW", "valueFrom": {"secretKeyRef": {"name": host("s4"), "key": "pw"}}},
          {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": host("c3"), "key": "m", "optional": True}}}]}]},
     [("secret", "s3", False, "spec.initContainers[0].envFrom[0].secretRef.name"),
      ("configmap", "c2", True, "spec.containers[0].envFrom[0].configMapRef.name"),
      ("secret", "s4", False, "spec.containers[0].env[1].valueFrom.secretKeyRef.name"),
      ("configmap", "c3", True, "spec.containers[0].env[2].valueFrom.configMapKeyRef.name")]),
    # optional: the kubelet starts a pod whose pull Secret is missing (kubelet_pods.go getPullSecretsForPod)
    ("imagePullSecrets", {"imagePullSecrets": [{"name": "regcred"}]}, {"imagePullSecrets": [{"name": host("regcred")}]},
     [("secret", "regcred", True, "spec.imagePullSecrets[0].name")]),
    ("self-contained pod: nothing changes", SELF_CONTAINED, SELF_CONTAINED, []),
]


@pytest.mark.parametrize(("what", "spec", "translated", "deps"), CASES, ids=[c[0] for c in CASES])
def test_references_are_rewritten_to_host_names(what: str, spec: Obj, translated: Obj,
                                                deps: list[tuple[str, str, bool, str]]) -> None:
    out = copy.deepcopy(spec)
    got = translate_references(out, "web", host)
    assert out == translated, what
    assert got == [Dependency(k, n, host(n), o, f) for k, n, o, f in deps]


def test_the_injected_token_volume_references_kube_root_ca() -> None:
    spec = {"volumes": [{"name": "kube-api-access-x", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token"}}, {"configMap": {"name": "kube-root-ca.crt"}}]}}]}
    assert translate_references(spec, "web", host) == [
        Dependency("configmap", "kube-root-ca.crt", host("kube-root-ca.crt"), False,
                   "spec.volumes[0].projected.sources[1].configMap.name")]
    assert spec["volumes"][0]["projected"]["sources"][0] == {"serviceAccountToken": {"path": "token"}}  # tokens.py's


# (annotations of the host object, the SyncWarning's words for a pod in namespace "b-x-c" referencing secret "a";
# "" when the host object is that secret's copy). The keys are vcluster's (pkg/util/translate/types.go).
NAME, NAMESPACE = "vcluster.loft.sh/object-name", "vcluster.loft.sh/object-namespace"
HOST = "a-x-b-x-c-x-vc"
COPY_CASES: list[tuple[str, Any, str]] = [
    ("the copy of what the pod references", {NAME: "a", NAMESPACE: "b-x-c", "other": "x"}, ""),
    ("attack 4: another namespace's object under the same host name", {NAME: "a-x-b", NAMESPACE: "c"},
     'the host secret "a-x-b-x-c-x-vc" is the copy of secret "c/a-x-b", not of "b-x-c/a"'),
    ("the same name in another namespace", {NAME: "a", NAMESPACE: "c"},
     'the host secret "a-x-b-x-c-x-vc" is the copy of secret "c/a", not of "b-x-c/a"'),
    ("no annotations: not a copy vcluster made", None,
     'the host secret "a-x-b-x-c-x-vc" is not the copy of secret "b-x-c/a": it has no vcluster.loft.sh/object-name '
     'and vcluster.loft.sh/object-namespace annotations'),
    ("only the name", {NAME: "a"},
     'the host secret "a-x-b-x-c-x-vc" is not the copy of secret "b-x-c/a": it has no '
     'vcluster.loft.sh/object-namespace annotation'),
    ("an empty namespace", {NAME: "a", NAMESPACE: ""},
     'the host secret "a-x-b-x-c-x-vc" is not the copy of secret "b-x-c/a": it has no '
     'vcluster.loft.sh/object-namespace annotation'),
    ("vcluster's other identity annotations do not stand in", {"vcluster.loft.sh/object-host-name": HOST,
                                                                "vcluster.loft.sh/object-uid": "u"},
     'the host secret "a-x-b-x-c-x-vc" is not the copy of secret "b-x-c/a": it has no vcluster.loft.sh/object-name '
     'and vcluster.loft.sh/object-namespace annotations'),
    ("case matters (names are DNS labels)", {NAME: "A", NAMESPACE: "b-x-c"},
     'the host secret "a-x-b-x-c-x-vc" is the copy of secret "b-x-c/A", not of "b-x-c/a"'),
]


@pytest.mark.parametrize(("what", "annotations", "why"), COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_a_host_object_is_used_only_as_the_copy_of_what_the_pod_references(what: str, annotations: Any,
                                                                          why: str) -> None:
    assert not_the_copy("secret", HOST, "b-x-c", "a", annotations) == why, what


def test_the_annotation_keys_are_vclusters() -> None:
    # pkg/util/translate/types.go: NameAnnotation, NamespaceAnnotation
    assert (OBJECT_NAME, OBJECT_NAMESPACE) == (NAME, NAMESPACE)
