"""The cache's packed objects: what handlers see, what reconcilers get back, and what changes compare."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from syncer.kube.cache import Packed, Store, field, field_equal, object_key, rest_equal, unpack

POD_LAYOUT = {"metadata": ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp"),
              "spec": ("runtimeClassName", "nodeName"), "status": ("startTime",)}


def pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a", "uid": f"uid-{name}", "resourceVersion": "7",
                         "labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {"runtimeClassName": "gvisor", "containers": [{"name": "c", "image": "nginx"}], **spec},
            "status": {"phase": "Pending"}}


def test_a_packed_pod_reads_as_its_kept_fields_and_comes_back_whole() -> None:
    store = Store(packed=POD_LAYOUT)
    original = pod()
    store.upsert(copy.deepcopy(original))
    cached = store.get("team-a/web")
    assert isinstance(cached, Packed)
    # what handlers and indexes see: identity and the kept sub-fields, nothing decoded besides
    assert cached["metadata"] == {"name": "web", "namespace": "team-a", "uid": "uid-web", "resourceVersion": "7"}
    assert cached.get("spec") == {"runtimeClassName": "gvisor"}
    assert cached["status"] == {}  # present, with none of its kept sub-fields
    assert cached["kind"] == "Pod" and cached.get("nope", "default") == "default"
    assert "spec" in cached and "kind" in cached and "nope" not in cached
    assert sorted(cached) == ["apiVersion", "kind", "metadata", "spec", "status"] and len(cached) == 5
    with pytest.raises(KeyError):
        cached["nope"]
    assert object_key(cached) == "team-a/web"
    # what reconcilers get: the whole object, equal to what was cached
    assert store.full("team-a/web") == original
    whole = store.full("team-a/web")
    assert whole is not None
    whole["kind"], whole["status"]["phase"] = "Changed", "Changed"  # a reconciler's copy is its own
    store.upsert(pod("other"))  # shares the small encodings (apiVersion/kind, status) with the first
    assert store.full("team-a/web") == store.full("team-a/web") == original
    assert field(cached, "metadata") == original["metadata"]
    assert field(cached, "kind") == "Pod" and field(cached, "nope") is None


def test_absent_and_non_object_layout_fields_round_trip() -> None:
    store = Store(packed=POD_LAYOUT)
    odd = {"metadata": {"name": "x"}, "spec": ["not", "an", "object"]}  # no status; spec not a JSON object
    store.upsert(copy.deepcopy(odd))
    cached = store.get("x")
    assert cached is not None
    assert "status" not in cached and cached.get("status") is None
    assert cached["spec"] == ["not", "an", "object"]
    assert unpack(cached) == odd


def test_changes_compare_by_field_packed_or_not() -> None:
    store = Store(packed=POD_LAYOUT)
    _, old = store.upsert(pod())
    relabelled = pod()
    relabelled["metadata"]["labels"] = {"app": "api"}
    _, new = store.upsert(relabelled)
    assert not rest_equal(old, new, "metadata") and field_equal(old, new, "spec")
    status_only = pod()
    status_only["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    _, newer = store.upsert(status_only)
    assert field_equal(new, newer, "spec") and not field_equal(new, newer, "status")
    _, moved = store.upsert(pod(nodeName="node-1"))
    assert rest_equal(newer, moved, "spec") and not field_equal(newer, moved, "spec")  # a kept sub-field
    plain = Store()
    _, a = plain.upsert(pod())
    _, b = plain.upsert(pod(nodeName="node-1"))
    assert rest_equal(a, b, "spec") and not field_equal(a, b, "spec")


def test_indexes_see_packed_objects_and_follow_updates_and_deletes() -> None:
    def by_class(obj: Any) -> list[str]:
        return [obj["spec"]["runtimeClassName"]]
    store = Store(indexers={"rc": by_class}, packed=POD_LAYOUT)
    store.upsert(pod("a"))
    store.upsert(pod("b"))
    store.upsert(pod("a", runtimeClassName="kata"))
    assert store.keys_by_index("rc", "gvisor") == ["team-a/b"]
    assert [object_key(o) for o in store.by_index("rc", "kata")] == ["team-a/a"]
    assert store.delete("team-a/a") is not None and store.keys_by_index("rc", "kata") == []
