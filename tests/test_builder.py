"""Controllers declare their watches; the manager shares one informer per (cluster, resource) view
(syncer/kube/builder.py, controllers/sources.py)."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.config.model import parse_config
from syncer.controllers.sources import Sources, slim_of
from syncer.kube.builder import ControllerBuilder, InformerFactory, OwnWrites, Source, Watch, _handlers, own_key
from syncer.kube.cache import Store
from syncer.kube.resources import CONFIGMAPS, PODS, RUNTIMECLASSES, SECRETS, SERVICES
from syncer.manager import Options, Syncer

Obj = dict[str, Any]


class NoClient:
    """Stands for a cluster's client: building informers sends no request."""

    cluster = "host"


def test_one_informer_per_view_however_many_controllers_read_it() -> None:
    factory = InformerFactory({"host": NoClient(), "virtual": NoClient()})  # type: ignore[dict-item]
    rcs = Source("host", RUNTIMECLASSES)
    assert factory.store(rcs) is factory.store(Source("host", RUNTIMECLASSES))
    assert factory.store(Source("host", PODS, "ns")) is not factory.store(Source("host", PODS, "other"))
    assert len(factory.informers) == 3


def test_indexes_are_added_before_objects_arrive() -> None:
    store = Store()
    store.add_indexer("by-label", lambda o: [])
    with pytest.raises(ValueError, match="it exists"):
        store.add_indexer("by-label", lambda o: [])
    store.upsert({"metadata": {"name": "a"}})
    with pytest.raises(ValueError, match="not empty"):
        store.add_indexer("late", lambda o: [])


def test_the_builder_records_for_owns_and_watches_in_order() -> None:
    src = Source("virtual", PODS)
    b = ControllerBuilder("pod").for_(src).owns(Source("host", PODS), lambda o: ["x"]).watches(
        Source("host", SECRETS, metadata_only=True), lambda o: [], on_delete=False)
    assert [(w.role, w.source.resource.plural, w.on_delete) for w in b.watch_list] == [
        ("for", "pods", True), ("owns", "pods", True), ("watches", "secrets", False)]
    assert b.watch_list[0].keys is own_key


def test_secrets_and_configmaps_are_cached_as_metadata_without_content() -> None:
    # behaviour.md section 3.1: no ConfigMap or Secret content enters the process; only identity, the
    # force-sync annotation of a virtual object, and whose copy a host object is are read
    s = Sources("vc-ns", "vc")
    for kind in ("configmap", "secret"):
        assert s.host_objects(kind).metadata_only and s.virtual_objects(kind).metadata_only
    assert s.host_objects("serviceaccount").metadata_only
    secret = {"metadata": {"name": "db", "namespace": "vc-ns", "uid": "u", "resourceVersion": "3",
                           "labels": {"a": "b"}, "annotations": {
                               "vcluster.loft.sh/force-sync": "true", "other": "x",
                               "vcluster.loft.sh/object-name": "db", "vcluster.loft.sh/object-namespace": "team",
                               "vcluster.loft.sh/object-uid": "v", "vcluster.loft.sh/managed-annotations": "other"}},
              "data": {"password": "c2VjcmV0"}}
    identity = {"name": "db", "namespace": "vc-ns", "uid": "u", "resourceVersion": "3"}
    for source, kept in (
            (s.host_objects("secret"), {"vcluster.loft.sh/object-name": "db",
                                        "vcluster.loft.sh/object-namespace": "team"}),
            (s.host_objects("serviceaccount"), {"vcluster.loft.sh/object-name": "db",
                                                "vcluster.loft.sh/object-namespace": "team"}),
            (s.virtual_objects("secret"), {"vcluster.loft.sh/force-sync": "true"})):
        slim = slim_of(source)
        assert slim.keep is not None
        assert slim.keep(secret) == {"metadata": {**identity, "annotations": kept}}, source
    service = {**secret, "spec": {"clusterIP": "10.0.0.10", "ports": [{"name": "dns", "port": 53, "targetPort": 1053}]}}
    host_keep, virtual_keep = slim_of(s.host_objects("service")).keep, slim_of(s.virtual_services).keep
    assert host_keep is not None and virtual_keep is not None
    assert host_keep(service)["metadata"]["annotations"] == {"vcluster.loft.sh/object-name": "db",
                                                            "vcluster.loft.sh/object-namespace": "team"}
    assert virtual_keep(service) == {"metadata": identity, "spec": {"clusterIP": "10.0.0.10",
                                                                    "ports": [{"name": "dns", "port": 53}]}}
    assert slim_of(s.host_objects("secret")).keep({"metadata": {"name": "x"}}) == {"metadata": {"name": "x"}}
    assert s.host_objects("service").resource is SERVICES and not s.host_objects("service").metadata_only
    assert s.host_objects("configmap").resource is CONFIGMAPS


@pytest.mark.parametrize(("enabled", "views"), [
    # the pod controller's views (virtual namespaces: their labels go to host pods), and RuntimeClasses (both
    # controllers' one view each) with the feature on
    (False, {"virtual/pods", "host/pods", "host/configmaps", "host/secrets", "host/persistentvolumeclaims",
             "host/services", "virtual/configmaps", "virtual/secrets", "virtual/services", "virtual/namespaces"}),
    (True, {"virtual/pods", "host/pods", "host/configmaps", "host/secrets", "host/persistentvolumeclaims",
                   "host/services", "virtual/configmaps", "virtual/secrets", "virtual/services", "virtual/namespaces",
                   "host/runtimeclasses.node.k8s.io", "virtual/runtimeclasses.node.k8s.io"}),
])
def test_the_manager_builds_one_informer_per_declared_view(enabled: bool, views: set[str]) -> None:
    config = parse_config({"sync": {"fromHost": {"runtimeClasses": {"enabled": enabled}}}})
    host, virtual = NoClient(), NoClient()
    virtual.cluster = "virtual"  # type: ignore[misc]
    syncer = Syncer(config, host, virtual, Options("vc", "vc-ns"))  # type: ignore[arg-type]
    names = [i.name for i in syncer.informers]
    assert len(names) == len(set(names)) and set(names) == views


class RecordingQueue:
    """Stands for a controller's work queue: records the keys added."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def add(self, key: str) -> None:
        self.keys.append(key)


def _obj(name: str, rv: str) -> Obj:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def test_the_echo_of_an_own_create_enqueues_nothing_and_every_other_event_does() -> None:
    own = OwnWrites()
    queue = RecordingQueue()
    w = Watch(Source("host", PODS), own_key, None, True, None, "owns", own)
    handlers = _handlers(None, queue, w)  # type: ignore[arg-type]  # the informer is read only on a re-list
    own.created(_obj("a", "10"), "ns/a")
    own.created(_obj("b", "11"), "ns/b")
    own.created(_obj("c", "12"), "ns/c")
    handlers.on_add(_obj("a", "10"))  # the echo of the create: nothing to reconcile
    assert queue.keys == []
    handlers.on_add(_obj("a", "10"))  # a recorded create is used once
    assert queue.keys == ["ns/a"]
    handlers.on_add(_obj("b", "15"))  # another object of that name (deleted and re-created by someone else)
    assert queue.keys == ["ns/a", "ns/b"]
    handlers.on_update(_obj("c", "11"), _obj("c", "12"))  # only an ADDED event is an echo
    assert queue.keys == ["ns/a", "ns/b", "ns/c"]
    handlers.on_delete(_obj("c", "12"))  # a deletion goes through, and forgets the create
    assert queue.keys == ["ns/a", "ns/b", "ns/c", "ns/c"] and len(own) == 0
    handlers.on_add(_obj("c", "12"))
    assert queue.keys[-1] == "ns/c"
    assert len(OwnWrites()) == 0
    own.created(_obj("e", "20"), "ns/e")
    own.reconciling("ns/e")  # another reconcile of the key before the echo: it may have decided without it
    handlers.on_add(_obj("e", "20"))
    assert queue.keys[-1] == "ns/e" and len(own) == 0
    own.created(_obj("f", "21"), "ns/f")
    own.reconciling("ns/other")  # a reconcile of another key changes nothing
    handlers.on_add(_obj("f", "21"))
    assert queue.keys[-1] == "ns/e" and len(own) == 0
    plain = _handlers(None, queue, Watch(Source("host", PODS), own_key, None, True, None, "owns"))  # type: ignore[arg-type]
    plain.on_add(_obj("d", "1"))  # a watch without own writes enqueues every add
    assert queue.keys[-1] == "ns/d"
