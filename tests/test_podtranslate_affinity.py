"""Pod affinity and topology spread confined to the virtual cluster (podtranslate/affinity.py). The cases of
vcluster's TestPodAffinityTermsTranslation (pkg/controllers/resources/pods/translate/translator_test.go),
ported: same inputs, the expected terms written out, with this vcluster called `vc`."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from kubesim.vcluster import safe_concat_name
from syncer.controllers.podtranslate.affinity import ignored_namespace_selectors
from syncer.controllers.translate import host_pod

Obj = dict[str, Any]
NS = "equestria"
LONG_KEY = "pretty-loooooooooooong-test-key"
BASIC = {"matchLabels": {"random-key": "value"}}
MARKER = {"vcluster.loft.sh/managed-by": "vc"}
NS_LABEL = safe_concat_name("vcluster.loft.sh/ns-label", "vc", "x", hashlib.sha256(LONG_KEY.encode()).hexdigest()[:10])


def translated(term: Obj) -> Obj:
    vpod = {"metadata": {"name": "my-little-pody", "namespace": NS}, "spec": {
        "containers": [], "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            copy.deepcopy(term)]}}}}
    spec = host_pod(vpod, vcluster_name="vc", host_namespace="h")["spec"]
    (out,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return dict(out)


CASES: list[tuple[str, Obj, Obj]] = [
    ("no selector", {"namespaces": ["blabla"]}, {}),
    ("empty namespaces array and null namespaceSelector", {"labelSelector": BASIC, "namespaces": []},
     {"labelSelector": {"matchLabels": {"random-key": "value", **MARKER, "vcluster.loft.sh/namespace": NS}}}),
    ("null namespaceSelector and defined namespaces array",
     {"labelSelector": BASIC, "namespaces": [NS, "dummy namespace"]},
     {"labelSelector": {"matchLabels": {"random-key": "value", **MARKER}, "matchExpressions": [
         {"key": "vcluster.loft.sh/namespace", "operator": "In", "values": [NS, "dummy namespace"]}]}}),
    ("empty namespaceSelector and defined namespaces array",
     {"labelSelector": BASIC, "namespaces": [NS], "namespaceSelector": {}},
     {"labelSelector": {"matchLabels": {"random-key": "value", **MARKER}}}),
    # vcluster also records a SyncWarning event here (test_the_cases_vcluster_warns_about); the translation is the same
    ("namespaces array specified together with the namespaceSelector",
     {"labelSelector": BASIC, "namespaces": [NS], "namespaceSelector": BASIC},
     {"labelSelector": {"matchLabels": {"random-key": "value", **MARKER}, "matchExpressions": [
         {"key": "vcluster.loft.sh/namespace", "operator": "In", "values": [NS]}]}}),
    ("defined namespaceSelector and no namespaces",
     {"labelSelector": BASIC, "namespaceSelector": {"matchLabels": {LONG_KEY: "good-value"}}},
     {"labelSelector": {"matchLabels": {"random-key": "value", NS_LABEL: "good-value", **MARKER}}}),
    ("namespaceSelector with MatchExpressions",
     {"labelSelector": BASIC, "namespaceSelector": {"matchExpressions": [
         {"key": LONG_KEY, "operator": "NotIn", "values": ["bad-value"]}]}},
     {"labelSelector": {"matchLabels": {"random-key": "value", **MARKER}, "matchExpressions": [
         {"key": NS_LABEL, "operator": "NotIn", "values": ["bad-value"]}]}}),
    # a selector of expressions only: the confining labels still go into matchLabels
    ("expressions only", {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}},
     {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}],
                        "matchLabels": {"vcluster.loft.sh/namespace": NS, **MARKER}}}),
    ("expressions only, namespaceSelector of labels",
     {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
      "namespaceSelector": {"matchLabels": {LONG_KEY: "good-value"}}},
     {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}],
                        "matchLabels": {NS_LABEL: "good-value", **MARKER}}}),
    # ours: the topology key and newer fields are kept (vcluster's term keeps only selector and topology key)
    ("topology key and matchLabelKeys kept",
     {"labelSelector": BASIC, "topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["pod-template-hash"]},
     {"topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["pod-template-hash"],
      "labelSelector": {"matchLabels": {"random-key": "value", **MARKER, "vcluster.loft.sh/namespace": NS}}}),
    # the release label a Helm chart selects on is a host key too (vcluster's HostLabelSelector)
    ("release rewritten", {"labelSelector": {"matchLabels": {"release": "web"}}},
     {"labelSelector": {"matchLabels": {
         safe_concat_name("vcluster.loft.sh/label", "vc", "x", hashlib.sha256(b"release").hexdigest()[:10]): "web",
         **MARKER, "vcluster.loft.sh/namespace": NS}}}),
]


@pytest.mark.parametrize(("name", "term", "expected"), CASES, ids=[f"affinity{i}" for i in range(len(CASES))])
def test_pod_affinity_terms(name: str, term: Obj, expected: Obj) -> None:
    assert translated(term) == expected, name


# TestPodAffinityTermsTranslation's expectedEvents: only this case has one ("Warning SyncWarning Inter-pod affinity
# rule(s) that use both .namespaces and .namespaceSelector ..."; the words are checked over HTTP in
# tests/test_pod_parity.py)
WARNED = {"namespaces array specified together with the namespaceSelector"}


@pytest.mark.parametrize(("name", "term"), [(c[0], c[1]) for c in CASES], ids=[f"warn{i}" for i in range(len(CASES))])
def test_the_cases_vcluster_warns_about(name: str, term: Obj) -> None:
    for kind, where in (("podAntiAffinity", "required"), ("podAffinity", "preferred")):
        rules = ({"requiredDuringSchedulingIgnoredDuringExecution": [term]} if where == "required" else
                 {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]})
        assert ignored_namespace_selectors({"affinity": {kind: rules}}) == (1 if name in WARNED else 0), (name, kind)


def test_each_term_that_loses_its_namespace_selector_is_counted() -> None:
    term = {"labelSelector": BASIC, "namespaces": [NS], "namespaceSelector": {"matchExpressions": [
        {"key": "team", "operator": "Exists"}]}}
    spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term, term]},
                         "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                             {"weight": 1, "podAffinityTerm": term}]},
                         "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}
    assert ignored_namespace_selectors(spec) == 3
    assert ignored_namespace_selectors({}) == 0


def test_every_kind_of_term_and_topology_spread_are_confined() -> None:
    # a Helm chart's Deployment: anti-affinity on app: web (preferred), affinity (required), spread on app: web
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    vpod = {"metadata": {"name": "web-1", "namespace": "shop"}, "spec": {"containers": [], "affinity": {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [copy.deepcopy(term)]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": copy.deepcopy(term)}]},
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                       "whenUnsatisfiable": "DoNotSchedule",
                                       "labelSelector": {"matchLabels": {"app": "web"}}},
                                      {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},
                                      {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]}}]}}
    spec = host_pod(vpod, vcluster_name="vc", host_namespace="h")["spec"]
    confined = {"matchLabels": {"app": "web", "vcluster.loft.sh/namespace": "shop", **MARKER}}
    assert spec["affinity"] == {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": confined, "topologyKey": "kubernetes.io/hostname"}]},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"labelSelector": confined, "topologyKey": "kubernetes.io/hostname"}}]},
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    assert spec["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": confined},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"},  # no selector: left alone
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {
            "matchExpressions": [{"key": "app", "operator": "Exists"}],
            "matchLabels": {"vcluster.loft.sh/namespace": "shop", **MARKER}}}]
