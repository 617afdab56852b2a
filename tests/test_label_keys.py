"""Pod (anti-)affinity terms and topology spread constraints with `matchLabelKeys`/`mismatchLabelKeys`: what the test
API server does with them as kube-apiserver does, by version, and that a virtual pod whose API server folded them
into its selectors reaches the host (podtranslate/affinity.py, "Label keys").

Sources, for the expected values written below:
- pkg/registry/core/pod/strategy.go: `PrepareForCreate` -> `mutatePodAffinity`
  (`applyMatchLabelKeysAndMismatchLabelKeys`) and `mutateTopologySpreadConstraints` (`applyMatchLabelKeys`), both
  through `applyLabelKeysToLabelSelector`, which appends `{key, In|NotIn, [the pod's value]}` to the selector's
  matchExpressions for each key the pod has a label of;
- pkg/features/kube_features.go: MatchLabelKeysInPodAffinity alpha 1.29, beta (on) 1.31, GA 1.33;
  MatchLabelKeysInPodTopologySpreadSelectorMerge beta (on) 1.34;
- pkg/api/pod/util.go: `dropDisabledMatchLabelKeysFieldInPodAffinity` (the keys cleared while the gate is off);
- pkg/apis/core/validation/validation.go: `validateMatchLabelKeysAndMismatchLabelKeys` (its error at the term's path
  and the key's index, as kubernetes' validation_test.go expects:
  `spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm[0]`),
  `validateMatchLabelKeysInTopologySpread` (before 1.34, at `...matchLabelKeys[i]`), and from 1.34 the former for
  spread constraints too, as the host's refusal in vcluster issue 3684 reads:
  `spec.topologySpreadConstraints[0][0]: Invalid value: "pod-template-hash": exists in both matchLabelKeys and
  labelSelector`.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import pytest

from kubesim.vcluster import safe_concat_name
from syncer.controllers.translate import host_pod
from syncer.kube.client import ApiError
from syncer.kube.resources import EVENTS, PODS
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, rc_config, running_syncer
from tests.test_pod_sync import hname

Obj = dict[str, Any]
LABELS = {"app": "web", "pod-template-hash": "5d4f8c", "release": "shop"}
WEB = {"matchLabels": {"app": "web"}}
FOLDED = {"key": "pod-template-hash", "operator": "In", "values": ["5d4f8c"]}  # applyLabelKeysToLabelSelector's
ANTI = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
EXISTS = "exists in both matchLabelKeys and labelSelector"
RELEASE = safe_concat_name("vcluster.loft.sh/label", VCLUSTER, "x", hashlib.sha256(b"release").hexdigest()[:10])
CONFINED = {"vcluster.loft.sh/managed-by": VCLUSTER, "vcluster.loft.sh/namespace": "default"}


def term(selector: Obj | None = None, **keys: Any) -> Obj:
    return {"labelSelector": copy.deepcopy(selector if selector is not None else WEB),
            "topologyKey": "kubernetes.io/hostname", **keys}


def spread(selector: Obj | None = None, **keys: Any) -> Obj:
    return {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": copy.deepcopy(selector if selector is not None else WEB), **keys}


def web(name: str = "p", anti: list[Obj] | None = None, constraints: list[Obj] | None = None,
        preferred: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
    rules: Obj = {}
    if anti:
        rules["requiredDuringSchedulingIgnoredDuringExecution"] = anti
    if preferred:
        rules["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": 10, "podAffinityTerm": t}
                                                                    for t in preferred]
    if rules:
        spec["affinity"] = {"podAntiAffinity": rules}
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": dict(LABELS)}, "spec": spec}


def anti_terms(p: Obj) -> list[Obj]:
    return list(p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"])


async def refused(c: Clusters, p: Obj) -> str:
    with pytest.raises(ApiError) as err:
        await c.host.create(PODS, p, "default")
    assert err.value.status == 422
    return err.value.message


# ------------------------------------------------------------------ the test API server, as kube-apiserver


@pytest.mark.parametrize("minor", [31, 34])
async def test_affinity_label_keys_are_folded_into_the_selector_on_create(clusters: Clusters, minor: int) -> None:
    clusters.host_server.minor = minor
    p = web(anti=[term(matchLabelKeys=["pod-template-hash", "absent"], mismatchLabelKeys=["app"])],
            preferred=[term(matchLabelKeys=["pod-template-hash"])])
    created = await clusters.host.create(PODS, p, "default")
    assert anti_terms(created) == [term({**WEB, "matchExpressions": [
        FOLDED, {"key": "app", "operator": "NotIn", "values": ["web"]}]},  # "absent": no label, nothing folded
        matchLabelKeys=["pod-template-hash", "absent"], mismatchLabelKeys=["app"])]
    [weighted] = created["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert weighted["podAffinityTerm"] == term({**WEB, "matchExpressions": [FOLDED]},
                                               matchLabelKeys=["pod-template-hash"])


async def test_affinity_label_keys_are_dropped_while_their_gate_is_off(clusters: Clusters) -> None:
    clusters.host_server.minor = 30
    created = await clusters.host.create(PODS, web(anti=[term(matchLabelKeys=["pod-template-hash"])]), "default")
    assert anti_terms(created) == [term()]


async def test_a_selector_that_already_holds_a_match_label_key_is_refused(clusters: Clusters) -> None:
    clusters.host_server.minor = 34
    folded = {**WEB, "matchExpressions": [FOLDED]}
    assert await refused(clusters, web(anti=[term(folded, matchLabelKeys=["pod-template-hash"])])) == (
        f'Pod "p" is invalid: {ANTI}[0]: Invalid value: "pod-template-hash": {EXISTS}')
    pref = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm"
    assert await refused(clusters, web(preferred=[term(folded, matchLabelKeys=["pod-template-hash"])])) == (
        f'Pod "p" is invalid: {pref}[0]: Invalid value: "pod-template-hash": {EXISTS}')
    # the vcluster issue 3684 refusal, word for word
    assert await refused(clusters, web(constraints=[spread(folded, matchLabelKeys=["pod-template-hash"])])) == (
        f'Pod "p" is invalid: spec.topologySpreadConstraints[0][0]: Invalid value: "pod-template-hash": {EXISTS}')


async def test_a_mismatch_key_may_be_in_the_selector_and_the_keys_need_a_selector(clusters: Clusters) -> None:
    clusters.host_server.minor = 34
    own = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    created = await clusters.host.create(PODS, web(anti=[term(own, mismatchLabelKeys=["app"])]), "default")
    assert anti_terms(created)[0]["labelSelector"] == {"matchExpressions": [
        {"key": "app", "operator": "Exists"}, {"key": "app", "operator": "NotIn", "values": ["web"]}]}
    no_selector = {"topologyKey": "kubernetes.io/hostname", "matchLabelKeys": ["app"], "mismatchLabelKeys": ["app"]}
    assert await refused(clusters, web("q", anti=[no_selector])) == (
        f'Pod "q" is invalid: [{ANTI}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set, '
        f'{ANTI}.mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set, '
        f'{ANTI}.matchLabelKeys[0]: Invalid value: "app": exists in both matchLabelKeys and mismatchLabelKeys]')


@pytest.mark.parametrize(("minor", "folded"), [(33, False), (34, True)])
async def test_spread_label_keys_are_folded_from_1_34(clusters: Clusters, minor: int, folded: bool) -> None:
    clusters.host_server.minor = minor
    created = await clusters.host.create(PODS, web(constraints=[spread(matchLabelKeys=["pod-template-hash"])]),
                                         "default")
    want = {**WEB, "matchExpressions": [FOLDED]} if folded else WEB
    assert created["spec"]["topologySpreadConstraints"] == [spread(want, matchLabelKeys=["pod-template-hash"])]


async def test_before_1_34_a_spread_key_may_not_be_in_the_selector_at_all(clusters: Clusters) -> None:
    clusters.host_server.minor = 33
    own = {"matchLabels": {"pod-template-hash": "5d4f8c"}}  # accepted by the 1.34 rule: no requirement named twice
    assert await refused(clusters, web(constraints=[spread(own, matchLabelKeys=["pod-template-hash"])])) == (
        'Pod "p" is invalid: spec.topologySpreadConstraints[0].matchLabelKeys[0]: Invalid value: "pod-template-hash": '
        f"{EXISTS}")


# ------------------------------------------------------------------ the translation


def test_keys_the_virtual_server_folded_in_are_dropped_the_others_kept_as_host_keys() -> None:
    # a virtual pod as a 1.34 server stores it: pod-template-hash and release folded (the pod has both labels);
    # "absent" not (no label); a spread constraint from a server before 1.34: nothing folded
    folded = {**WEB, "matchExpressions": [FOLDED, {"key": "release", "operator": "NotIn", "values": ["shop"]}]}
    vpod = web(anti=[term(folded, matchLabelKeys=["pod-template-hash", "absent"], mismatchLabelKeys=["release"])],
               constraints=[spread(matchLabelKeys=["release"])])
    spec = host_pod(vpod, vcluster_name=VCLUSTER, host_namespace=HOST_NS)["spec"]
    assert anti_terms({"spec": spec}) == [term({"matchLabels": {"app": "web", **CONFINED}, "matchExpressions": [
        FOLDED, {"key": RELEASE, "operator": "NotIn", "values": ["shop"]}]}, matchLabelKeys=["absent"])]
    assert spec["topologySpreadConstraints"] == [spread({"matchLabels": {"app": "web", **CONFINED}},
                                                        matchLabelKeys=[RELEASE])]


# ------------------------------------------------------------------ the real path


async def synced_or_refused(c: Clusters, name: str) -> Obj:
    """Wait until virtual pod default/`name` has a host pod or a Warning event; return the host pod (the test fails
    naming the event otherwise)."""
    def warnings() -> list[str]:
        return [e["message"] for e in c.virtual_server.storage.objects(EVENTS).values()
                if e["involvedObject"]["name"] == name and e["type"] == "Warning"]
    await eventually(lambda: c.host_server.storage.get(PODS, HOST_NS, hname(name)) is not None or bool(warnings()),
                     f"{name} on the host, or a warning")
    hp = c.host_server.storage.get(PODS, HOST_NS, hname(name))
    assert hp is not None, warnings()
    return hp


@pytest.mark.parametrize(("virtual", "host"), [(34, 34), (34, 33), (33, 34), (31, 32)])
async def test_a_deployments_pod_with_label_keys_reaches_the_host(clusters: Clusters, virtual: int, host: int) -> None:
    # a Deployment's pod spreading its own revision (pod-template-hash) across zones and away from itself: the
    # host pod's selectors hold each requirement once, whichever of the two servers folded it
    clusters.virtual_server.minor, clusters.host_server.minor = virtual, host
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, web("web", anti=[term(matchLabelKeys=["pod-template-hash"])],
                                                constraints=[spread(matchLabelKeys=["pod-template-hash"])]),
                                      "default")
        hp = await synced_or_refused(clusters, "web")
    confined = {"app": "web", **CONFINED}
    assert anti_terms(hp) == [term({"matchLabels": confined, "matchExpressions": [FOLDED]})]
    spread_folded = virtual >= 34 or host >= 34  # mutateTopologySpreadConstraints, on one side or the other
    assert hp["spec"]["topologySpreadConstraints"] == [
        spread({"matchLabels": confined, "matchExpressions": [FOLDED]}) if virtual >= 34 else
        spread({"matchLabels": confined, "matchExpressions": [FOLDED]}, matchLabelKeys=["pod-template-hash"])
        if spread_folded else spread({"matchLabels": confined}, matchLabelKeys=["pod-template-hash"])]
