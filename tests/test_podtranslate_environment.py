"""DNS, API address, service links and the downward API (podtranslate/environment.py, downward.py), case by
case as vcluster's translateDNSConfig, ServicesToEnvironmentVariables and translateFieldRef."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from syncer.controllers.podtranslate.downward import identity_annotations, translate_downward_api
from syncer.controllers.podtranslate.environment import add_environment, service_environment, translate_dns

Obj = dict[str, Any]
SEARCHES = ["ns.svc.cluster.local", "svc.cluster.local", "cluster.local"]
NDOTS = [{"name": "ndots", "value": "5"}]


def long_search(first: str) -> str:
    """A search of 250 characters, a DNS subdomain of four labels."""
    return first * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 58



DNS_CASES: list[tuple[str, Obj, Obj]] = [
    ("ClusterFirst (the default)", {}, {"dnsPolicy": "None", "dnsConfig": {
        "nameservers": ["10.0.0.10"], "searches": SEARCHES, "options": NDOTS}}),
    ("ClusterFirstWithHostNet", {"dnsPolicy": "ClusterFirstWithHostNet", "hostNetwork": True},
     {"dnsPolicy": "None", "hostNetwork": True, "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": SEARCHES,
                                                             "options": NDOTS}}),
    ("ClusterFirst on the host network falls back to Default", {"hostNetwork": True}, {"hostNetwork": True}),
    ("Default is left", {"dnsPolicy": "Default"}, {"dnsPolicy": "Default"}),
    ("None is left", {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]}}),
    ("the pod's own dnsConfig is merged without duplicates",
     {"dnsConfig": {"nameservers": ["10.0.0.10", "9.9.9.9"], "searches": ["cluster.local", "corp"]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10", "9.9.9.9"], "searches": [*SEARCHES, "corp"],
                                         "options": NDOTS}}),
    # the kubelet's mergeDNSOptions (pkg/kubelet/network/dns/dns.go): the pod's options are kept, and override the
    # cluster's ndots:5 by name
    ("the pod's own options are kept and win by name",
     {"dnsConfig": {"options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"], "searches": SEARCHES,
                                         "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]}}),
    # formDNSNameserversFitsLimits: the first 3 (validatePodDNSConfig: "must not have more than 3 nameservers"),
    # the cluster's first
    ("3 nameservers of the pod's own: the cluster's and its first 2",
     {"dnsConfig": {"nameservers": ["1.1.1.1", "8.8.8.8", "9.9.9.9"]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10", "1.1.1.1", "8.8.8.8"], "searches": SEARCHES,
                                         "options": NDOTS}}),
    # formDNSSearchFitsLimits: the first 32 searches (MaxDNSSearchPathsExpanded)
    ("32 searches of the pod's own: the cluster's 3 and its first 29",
     {"dnsConfig": {"searches": [f"s{i}.example" for i in range(32)]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"], "options": NDOTS,
                                         "searches": [*SEARCHES, *(f"s{i}.example" for i in range(29))]}}),
    # and the last ones dropped until the line fits 2048 characters (MaxDNSSearchListCharsExpanded): the cluster's
    # take 52 (with their spaces), each 250-character search 251 more: 52 + 7 * 251 = 1809, an eighth makes 2060
    ("searches over 2048 characters: the last dropped",
     {"dnsConfig": {"searches": [long_search(c) for c in "abcdefghij"]}},
     {"dnsPolicy": "None", "dnsConfig": {"nameservers": ["10.0.0.10"], "options": NDOTS,
                                         "searches": [*SEARCHES, *(long_search(c) for c in "abcdefg")]}}),
]


@pytest.mark.parametrize(("what", "spec", "want"), DNS_CASES, ids=[f"dns{i}" for i in range(len(DNS_CASES))])
def test_dns(what: str, spec: Obj, want: Obj) -> None:
    spec = copy.deepcopy(spec)  # the case stays as written for the next run of this test in the process
    translate_dns(spec, "ns", "10.0.0.10")
    assert spec == want, what


def test_service_environment_is_the_kubelets() -> None:
    services = [{"metadata": {"name": "my-db"}, "spec": {"clusterIP": "10.0.0.5", "ports": [
        {"name": "pg", "port": 5432}, {"port": 9187, "protocol": "TCP"}]}},
        {"metadata": {"name": "headless"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}]
    env = service_environment(services, True, "10.0.0.1")
    assert {k: v for k, v in env.items() if k.startswith("MY_DB")} == {
        "MY_DB_SERVICE_HOST": "10.0.0.5", "MY_DB_SERVICE_PORT": "5432", "MY_DB_SERVICE_PORT_PG": "5432",
        "MY_DB_PORT": "tcp://10.0.0.5:5432",
        "MY_DB_PORT_5432_TCP": "tcp://10.0.0.5:5432", "MY_DB_PORT_5432_TCP_PROTO": "tcp",
        "MY_DB_PORT_5432_TCP_PORT": "5432", "MY_DB_PORT_5432_TCP_ADDR": "10.0.0.5",
        "MY_DB_PORT_9187_TCP": "tcp://10.0.0.5:9187", "MY_DB_PORT_9187_TCP_PROTO": "tcp",
        "MY_DB_PORT_9187_TCP_PORT": "9187", "MY_DB_PORT_9187_TCP_ADDR": "10.0.0.5"}
    assert not any(k.startswith("HEADLESS") for k in env)
    assert env["KUBERNETES_SERVICE_HOST"] == "10.0.0.1" and env["KUBERNETES_PORT_443_TCP"] == "tcp://10.0.0.1:443"
    assert set(service_environment(services, False, "10.0.0.1")) == {k for k in env if k.startswith("KUBERNETES")}


def test_environment_comes_first_sorted_and_never_replaces_the_containers_own() -> None:
    spec: Obj = {"containers": [{"name": "a", "env": [{"name": "B", "value": "mine"}]}],
                 "initContainers": [{"name": "i"}]}
    add_environment(spec, {"C": "3", "B": "2", "A": "1"}, "10.0.0.1")
    assert spec["containers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "C", "value": "3"},
                                            {"name": "B", "value": "mine"}]
    assert spec["initContainers"][0]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"},
                                                {"name": "C", "value": "3"}]
    assert spec["enableServiceLinks"] is False and spec["hostAliases"][0]["ip"] == "10.0.0.1"


FIELD_CASES = [("metadata.name", "metadata.annotations['vcluster.loft.sh/name']"),
               ("metadata.namespace", "metadata.annotations['vcluster.loft.sh/namespace']"),
               ("metadata.uid", "metadata.annotations['vcluster.loft.sh/uid']"),
               ("spec.serviceAccountName", "metadata.annotations['vcluster.loft.sh/service-account-name']"),
               ("metadata.labels", "metadata.annotations['vcluster.loft.sh/labels']"),
               ("metadata.labels['app']", "metadata.labels['app']"),
               ("status.podIP", "status.podIP"), ("spec.nodeName", "spec.nodeName")]


@pytest.mark.parametrize(("path", "want"), FIELD_CASES)
def test_downward_api_field_refs(path: str, want: str) -> None:
    spec: Obj = {"containers": [{"name": "a", "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": path}}}]}],
                 "volumes": [{"name": "v", "downwardAPI": {"items": [{"path": "x", "fieldRef": {"fieldPath": path}}]}},
                             {"name": "p", "projected": {"sources": [{"downwardAPI": {"items": [
                                 {"path": "x", "fieldRef": {"fieldPath": path}}]}}]}}]}
    translate_downward_api(spec)
    assert spec["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["fieldPath"] == want
    assert spec["volumes"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == want
    assert spec["volumes"][1]["projected"]["sources"][0]["downwardAPI"]["items"][0]["fieldRef"]["fieldPath"] == want


def test_identity_annotations_hold_the_virtual_values() -> None:
    vpod = {"metadata": {"name": "web", "namespace": "team", "uid": "u-1", "labels": {"b": "2", "a": "x\"y"}},
            "spec": {"serviceAccountName": "builder"}}
    assert identity_annotations(vpod) == {
        "vcluster.loft.sh/name": "web", "vcluster.loft.sh/namespace": "team", "vcluster.loft.sh/uid": "u-1",
        "vcluster.loft.sh/service-account-name": "builder", "vcluster.loft.sh/labels": 'a="x\\"y"\nb="2"'}


def test_service_links_the_kubelets_way_for_udp_ipv6_and_services_without_ports() -> None:
    # kubelet envvars.go: the protocol lower-cased in URLs and _PROTO, an IPv6 address in brackets; a
    # Service without a ClusterIP or ports gives nothing, and the Services after it still do
    services = [{"metadata": {"name": "no-ports"}, "spec": {"clusterIP": "10.0.0.7", "ports": []}},
                {"metadata": {"name": "no-ip"}, "spec": {"ports": [{"port": 1}]}},
                {"metadata": {"name": "dns"}, "spec": {"clusterIP": "fd00::a", "ports": [
                    {"name": "dns-udp", "port": 53, "protocol": "UDP"}]}}]
    env = service_environment(services, True, "10.0.0.1")
    assert {k: v for k, v in env.items() if not k.startswith("KUBERNETES")} == {
        "DNS_SERVICE_HOST": "fd00::a", "DNS_SERVICE_PORT": "53", "DNS_SERVICE_PORT_DNS_UDP": "53",
        "DNS_PORT": "udp://[fd00::a]:53", "DNS_PORT_53_UDP": "udp://[fd00::a]:53", "DNS_PORT_53_UDP_PROTO": "udp",
        "DNS_PORT_53_UDP_PORT": "53", "DNS_PORT_53_UDP_ADDR": "fd00::a"}
    assert {k: v for k, v in env.items() if k.startswith("KUBERNETES")} == {
        "KUBERNETES_PORT": "tcp://10.0.0.1:443", "KUBERNETES_PORT_443_TCP": "tcp://10.0.0.1:443",
        "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1", "KUBERNETES_PORT_443_TCP_PORT": "443",
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443"}


def test_every_kind_of_container_gets_the_environment_and_host_aliases_are_kept() -> None:
    spec: Obj = {"containers": ["not a container", {"name": "a"}], "ephemeralContainers": [{"name": "debug"}],
                 "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["mine"]}]}
    add_environment(spec, {"X": "1"}, "10.0.0.1")
    assert spec["containers"] == ["not a container", {"name": "a", "env": [{"name": "X", "value": "1"}]}]
    assert spec["ephemeralContainers"] == [{"name": "debug", "env": [{"name": "X", "value": "1"}]}]
    assert spec["hostAliases"] == [{"ip": "1.2.3.4", "hostnames": ["mine"]}, {"ip": "10.0.0.1", "hostnames": [
        "kubernetes.default.svc.cluster.local", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]}]
