"""A pod's QoS class as kube-apiserver computes it on create (`status.qosClass`), and the resource
quantities it compares.

Sources: Kubernetes `pkg/apis/core/helper/qos/qos.go` (`GetPodQOS`: only cpu and memory count; no request
and no limit anywhere is BestEffort; limits for both on every container, equal to the requests, is
Guaranteed; anything else Burstable; init containers count like the others) and apimachinery's
`resource.Quantity` suffixes (decimal SI, binary Ki..Ei, and e-notation).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIXES = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
             "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
             "P": Decimal("1e15"), "E": Decimal("1e18"),
             "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
             "Pi": Decimal(2**50), "Ei": Decimal(2**60)}
COMPUTE = ("cpu", "memory")
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)")


def parse_quantity(value: Any) -> Decimal:
    """The value of a quantity such as `100m`, `1.5Gi`, `2e3` or `4` (a number is taken as it is).

    Raises:
        ValueError: not a quantity.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Decimal(str(value))
    m = _QUANTITY.fullmatch(value.strip()) if isinstance(value, str) else None
    if m is None or m.group(2) not in _SUFFIXES:
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    try:
        return Decimal(m.group(1)) * _SUFFIXES[m.group(2)]
    except InvalidOperation:
        raise ValueError(f"quantities must match the regular expression: {value!r}") from None


def _compute(resources: Mapping[str, Any] | None) -> dict[str, Decimal]:
    out: dict[str, Decimal] = {}
    for name, q in (resources or {}).items():
        if name in COMPUTE:
            amount = parse_quantity(q)
            if amount != 0:
                out[name] = amount
    return out


def pod_qos(pod: Mapping[str, Any]) -> str:
    """`BestEffort`, `Burstable` or `Guaranteed` for a pod (GetPodQOS)."""
    spec = pod.get("spec") or {}
    requests: dict[str, Decimal] = {}
    limits: dict[str, Decimal] = {}
    guaranteed = True
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        res = c.get("resources") or {}
        # SetDefaults: a limit without a request is also the request
        for name, amount in {**_compute(res.get("limits")), **_compute(res.get("requests"))}.items():
            requests[name] = requests.get(name, Decimal(0)) + amount
        found = _compute(res.get("limits"))
        for name, amount in found.items():
            limits[name] = limits.get(name, Decimal(0)) + amount
        if not set(COMPUTE) <= set(found):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and set(requests) == set(limits) and all(limits[n] == requests[n] for n in requests):
        return "Guaranteed"
    return "Burstable"
