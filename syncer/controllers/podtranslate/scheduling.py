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
- **Images.** `sync.toHost.pods.translateImage` maps an exact image to another, for every container kind.
"""

from __future__ import annotations

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


def add_tolerations(tolerations: Sequence[Any], extra: Sequence[Obj]) -> list[Any]:
    """`tolerations` followed by each of `extra` that is not already there (vcluster's `hasToleration`)."""
    out = list(tolerations)
    for t in extra:
        if not any(isinstance(o, dict) and same_toleration(o, t) for o in out):
            out.append(t)
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
