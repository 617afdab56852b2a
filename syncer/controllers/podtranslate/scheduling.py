"""Priority, tolerations and images of a host pod (pure).

Follows vcluster's pod translator (`translator.go`: `Translate`, `parseEnforcedTolerations`;
`image_translator.go`; `pkg/util/toleration/toleration.go`: `ParseToleration`; `diff.go`: `calcSpecDiff`):

- **Priority.** The virtual API server's Priority admission resolved `priorityClassName` into `priority` (and
  `preemptionPolicy`) against the virtual cluster's classes. With neither `sync.toHost.priorityClasses` nor
  `sync.fromHost.priorityClasses` enabled (vcluster's default) the host has no such class, so the name and
  the number are removed and the host's own Priority admission decides (its `globalDefault` class, or 0).
  With `toHost` the name becomes the host name vcluster gives the class it syncs
  (`vcluster-<name>-x-<host namespace>-x-<vcluster>`, made safe) and a priority above 1,000,000,000 (the
  highest a user class may have) is capped at it; with `fromHost` alone the host's classes are the virtual
  ones, so both are kept. `sync.toHost.pods.priorityClassName` names a host class for every pod left
  without one (its priority then computed by the host).
  **Deliberately different:** vcluster keeps `preemptionPolicy` in every case; here it is removed with the
  class, because the host's Priority admission refuses a pod whose `preemptionPolicy` differs from the one
  of the class it picks ("the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided
  in pod spec; priority admission controller computed Never ..."), which is vcluster issue 1718.
- **Enforced tolerations.** `sync.toHost.pods.enforceTolerations` entries (`key[=value]:effect`, `key[=value]`
  or `*`) are appended to every host pod's tolerations unless an equal one is there.
- **What the host's admission dropped.** The host's RuntimeClass admission merges the class's
  `scheduling.tolerations` into the pod's at the create (`MergeTolerations`, pkg/util/tolerations): of two
  tolerations where one tolerates a superset of the other only the broader is kept, so a pod's own (or an enforced)
  toleration is dropped for a broader one of the class. Put back by the next update, it would be a host write that
  changes nothing the scheduler or the taint manager reads (`admitted_tolerations`).
- **Images.** `sync.toHost.pods.translateImage` maps an exact image to another, for every container kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
MAX_USER_PRIORITY = 1_000_000_000  # scheduling.HighestUserDefinablePriority


def same_toleration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Toleration equality as `apiequality.Semantic.DeepEqual` sees it: a string field absent == empty (a toleration
    read back from an API server has no `value` where the configured one has `""`: the field is `omitempty`), but
    `tolerationSeconds` is a pointer, so 0 ("evict at once" to the taint manager's `getMinTolerationTime`) is not
    absent ("tolerate for ever")."""
    keys = set(a) | set(b)
    return all(a.get(k) == b.get(k) if k == "tolerationSeconds" else (a.get(k) or None) == (b.get(k) or None)
               for k in keys)


def toleration_key(toleration: Mapping[str, Any], *, seconds: bool = True) -> str:
    """A hashable form of a toleration: two tolerations have equal keys exactly when `same_toleration` holds (string
    fields empty or absent alike, `tolerationSeconds` as it is; left out when `seconds` is False), so lists of them
    are compared through sets in time linear in their length. A tenant sets as many tolerations as it likes (no
    limit in ValidatePod), and pairwise comparison of a pod's 2,000 took seconds of the event loop per update."""
    return json.dumps({k: v if k == "tolerationSeconds" else (v or None) for k, v in toleration.items()
                       if (v if k == "tolerationSeconds" else (v or None)) is not None
                       and (seconds or k != "tolerationSeconds")}, sort_keys=True, default=str)


def tolerates_superset(ss: Mapping[str, Any], t: Mapping[str, Any]) -> bool:
    """Whether toleration `ss` tolerates a superset of what `t` tolerates: `isSuperset` of kubernetes'
    pkg/util/tolerations/tolerations.go, which `MergeTolerations` applies (an empty key with `Exists` matches every
    key, an empty effect every effect, a NoExecute `ss` with `tolerationSeconds` only a `t` with no longer ones, an
    empty operator means `Equal` but matches only an explicit `Equal`, an unknown operator nothing)."""
    if same_toleration(ss, t):
        return True
    if (t.get("key") or "") != (ss.get("key") or "") and ((ss.get("key") or "") or ss.get("operator") != "Exists"):
        return False
    if (t.get("effect") or "") != (ss.get("effect") or "") and ss.get("effect"):
        return False
    if ss.get("effect") == "NoExecute" and ss.get("tolerationSeconds") is not None and (
            t.get("tolerationSeconds") is None or t["tolerationSeconds"] > ss["tolerationSeconds"]):
        return False
    if (ss.get("operator") or "Equal") == "Equal":
        return t.get("operator") == "Equal" and (t.get("value") or "") == (ss.get("value") or "")
    return ss.get("operator") == "Exists"


def _but_seconds(toleration: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}


def admitted_tolerations(desired: Sequence[Any], host: Sequence[Any]) -> list[Any]:
    """The desired tolerations of a host pod without those its create's admission dropped as redundant: each one
    the host pod lacks that a toleration only the host has (not the pod's own, nor one of them with another
    `tolerationSeconds`: the class's, DefaultTolerationSeconds', a host webhook's) tolerates a superset of
    (`tolerates_superset`, as `MergeTolerations` dropped it), unless it has `tolerationSeconds` the broader one does
    not have: beside the broader one it would still evict the pod sooner (the taint manager takes the shortest of
    the matching ones), so it is not redundant and is added as vcluster's `calcSpecDiff` adds it."""
    own = {toleration_key(d, seconds=False) for d in desired if isinstance(d, dict)}
    on_host = {toleration_key(h) for h in host if isinstance(h, dict)}
    broader = [h for h in host if isinstance(h, dict) and toleration_key(h, seconds=False) not in own]

    def redundant(d: Mapping[str, Any]) -> bool:  # each desired one against the few host-only ones
        if not broader or toleration_key(d) in on_host:
            return False
        return any(tolerates_superset(h, d) and not same_toleration(h, d) and (
            d.get("tolerationSeconds") is None or h.get("tolerationSeconds") == d["tolerationSeconds"])
            for h in broader)

    return [d for d in desired if not (isinstance(d, dict) and redundant(d))]


def add_tolerations(tolerations: Sequence[Any], extra: Sequence[Obj]) -> list[Any]:
    """`tolerations` followed by each of `extra` that is not already there (vcluster's `hasToleration`)."""
    out = list(tolerations)
    have = {toleration_key(o) for o in out if isinstance(o, dict)}
    for t in extra:
        if toleration_key(t) not in have:
            out.append(t)
            have.add(toleration_key(t))
    return out


def translate_priority(spec: Obj, *, to_host: bool, from_host: bool, host_class_name: Callable[[str], str],
                       default_class: str) -> None:
    """Apply the priority rules of this module's docstring to a (copied) pod spec (mutates `spec`)."""
    name = spec.get("priorityClassName") or ""
    if to_host and name:
        spec["priorityClassName"] = host_class_name(name)
        if isinstance(spec.get("priority"), int) and spec["priority"] > MAX_USER_PRIORITY:
            spec["priority"] = MAX_USER_PRIORITY
    elif not to_host and not from_host:
        for k in ("priorityClassName", "priority", "preemptionPolicy"):
            spec.pop(k, None)
    if default_class and not spec.get("priorityClassName"):
        spec["priorityClassName"] = default_class
        spec.pop("priority", None)
        spec.pop("preemptionPolicy", None)


def translate_images(spec: Obj, images: Mapping[str, str]) -> None:
    """Replace every container image that `images` maps (exact match) in a (copied) pod spec (mutates)."""
    if not images:
        return
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict) and isinstance(c.get("image"), str) and c["image"] in images:
                c["image"] = images[c["image"]]
