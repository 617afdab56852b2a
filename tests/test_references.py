"""Which pod fields reference virtual-only objects (refused with a SyncWarning naming them)."""

from __future__ import annotations

from syncer.controllers.references import virtual_only_references


def test_every_reference_kind_is_named() -> None:
    spec = {
        "volumes": [
            {"name": "a", "secret": {"secretName": "s1"}},
            {"name": "b", "configMap": {"name": "c1"}},
            {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "d", "projected": {"sources": [{"secret": {"name": "s2"}}, {"downwardAPI": {"items": []}},
                                                    {"serviceAccountToken": {"path": "t"}}]}},
            {"name": "kube-api-access-abcde", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
            {"name": "scratch", "emptyDir": {}},
        ],
        "initContainers": [{"name": "init", "envFrom": [{"secretRef": {"name": "s3"}}]}],
        "containers": [{"name": "app", "envFrom": [{"configMapRef": {"name": "c2"}}], "env": [
            {"name": "X", "value": "1"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s4", "key": "pw"}}}]}],
        "imagePullSecrets": [{"name": "regcred"}],
    }
    assert virtual_only_references({"spec": spec}) == [
        'spec.volumes[0] ("a") secret "s1"',
        'spec.volumes[1] ("b") configMap "c1"',
        'spec.volumes[2] ("c") persistentVolumeClaim "data"',
        'spec.volumes[3] ("d") projected.sources[0] secret "s2"',
        'spec.volumes[3] ("d") projected.sources[2] serviceAccountToken',
        'spec.initContainers[0] ("init") envFrom[0] secretRef "s3"',
        'spec.containers[0] ("app") envFrom[0] configMapRef "c2"',
        'spec.containers[0] ("app") env[2] ("PW") valueFrom.secretKeyRef "s4"',
        'spec.imagePullSecrets[0] "regcred"',
    ]


def test_self_contained_pods_pass() -> None:
    spec = {"volumes": [{"name": "tmp", "emptyDir": {}},
                        {"name": "kube-api-access-x", "projected": {"sources": [{"serviceAccountToken": {}}]}}],
            "containers": [{"name": "app", "env": [{"name": "A", "value": "b"}]}]}
    assert virtual_only_references({"spec": spec}) == []
