"""Pure translation rules (vcluster's SafeConcatName and pod translation)."""

from __future__ import annotations

import hashlib

from syncer.controllers.translate import host_pod, host_pod_name, host_pod_update, safe_concat_name


def test_short_names_are_joined() -> None:
    assert host_pod_name("web", "default", "tenant") == "web-x-default-x-tenant"


def test_long_names_follow_safe_concat_name() -> None:
    full = "-".join(["p" * 55, "x", "team.a", "x", "vc"])
    expected = (full[:52] + "-" + hashlib.sha256(full.encode()).hexdigest()[:10]).replace(".-", "-")
    assert safe_concat_name("p" * 55, "x", "team.a", "x", "vc") == expected
    assert len(expected) == 63


def test_dot_dash_is_replaced() -> None:
    name = safe_concat_name("a" * 51 + ".", "x", "a-long-namespace", "x", "vc")
    assert ".-" not in name and name.startswith("a" * 51 + "-")


def test_forced_runtime_class_and_stripped_fields() -> None:
    vpod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"runtimeClassName": "gvisor", "priority": 1000, "priorityClassName": "high",
                     "overhead": {"cpu": "1"}, "serviceAccount": "sa",
                     "containers": [{"name": "c", "image": "i"}]}}
    hp = host_pod(vpod, vcluster_name="vc", host_namespace="host", forced_runtime_class="kata")
    assert hp["spec"]["runtimeClassName"] == "kata"
    for k in ("priority", "priorityClassName", "overhead", "serviceAccount"):
        assert k not in hp["spec"]
    assert hp["spec"]["hostname"] == "p" and hp["metadata"]["namespace"] == "host"
    assert vpod["spec"]["runtimeClassName"] == "gvisor"  # the input is not mutated


def test_update_patch_only_touches_changed_synced_fields() -> None:
    vpod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "new"}]}}
    desired = host_pod(vpod, vcluster_name="vc", host_namespace="h")
    actual = {"metadata": {**desired["metadata"]}, "spec": {"containers": [{"name": "c", "image": "new"}]}}
    assert host_pod_update(desired, actual) == []
    actual["spec"]["containers"][0]["image"] = "old"
    actual["metadata"] = {**desired["metadata"], "labels": {"stale": "x"}}
    ops = host_pod_update(desired, actual)
    assert {"op": "replace", "path": "/spec/containers/0/image", "value": "new"} in ops
    assert {"op": "add", "path": "/metadata/labels", "value": desired["metadata"]["labels"]} in ops
