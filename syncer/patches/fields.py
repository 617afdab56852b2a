"""The typed spec fields of a RuntimeClass (`scheduling`, `overhead`): what the virtual API server refuses in them,
and the form it stores them in.

A patch may rewrite any field; `apply._typed_field_problem` uses `spec_problem` so that a result the virtual API
server would refuse is a patch failure found before anything is deleted or written. The rules are kubernetes'
pkg/apis/node/validation/validation.go `ValidateRuntimeClass` (`validateScheduling`, `validateTolerations`,
`validateOverhead`) and what they call in pkg/apis/core/validation/validation.go, plus the typed JSON decode that
comes first (node/v1 `Scheduling`, core/v1 `Toleration`, `ResourceList` of apimachinery `resource.Quantity`).

`stored_view` is the other half: the API server stores what it decoded, so empty `omitempty` maps and lists and
empty toleration strings are gone from the stored object, and a quantity is stored in its canonical form
(`0.5` as `500m`); comparing the copy the syncer wants with the stored one must not see those as differences.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from syncer.config.selector import label_value_errors, qualified_name_errors

Obj = dict[str, Any]

# apimachinery pkg/api/resource/quantity.go: ErrFormatWrong, ErrSuffix
_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_SUFFIX_WRONG = "unable to parse quantity's suffix"
# apimachinery pkg/api/resource/suffix.go: newSuffixer (decimal SI and binary SI suffixes)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_EXPONENT = 10_000  # beyond it the value is not computed (a 10^10000 quantity is no real overhead)
_NANO = Fraction(1, 10**9)
_INT64 = (-(1 << 63), (1 << 63) - 1)
# core/v1 TolerationOperator and TaintEffect values (pkg/apis/core/validation/validation.go ValidateTolerations,
# validateTaintEffect)
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# pkg/apis/core/helper/helpers.go IsStandardContainerResourceName (plus the hugepages- prefix)
_CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
_HUGEPAGES = "hugepages-"


class QuantityError(ValueError):
    """A string `resource.Quantity` refuses; `reason` is apimachinery's message."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _split(text: str) -> tuple[bool, str, str, str]:
    """apimachinery's parseQuantityString: (positive, numerator digits, denominator digits, suffix). Raises
    QuantityError (ErrFormatWrong) when a character follows a complete exponent suffix."""
    positive, pos, end = True, 0, len(text)
    if text[:1] in ("-", "+"):
        positive, pos = text[0] != "-", 1
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    start = pos
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    num, denom = text[start:pos] or "0", ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isascii() and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isascii() and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(_FORMAT_WRONG)
    return positive, num, denom, text[suffix_start:]


def parse_quantity(value: Any) -> Fraction:
    """The exact value of a quantity as `resource.Quantity` decodes it (apimachinery pkg/api/resource/quantity.go
    UnmarshalJSON, ParseQuantity): a JSON string, or a JSON number read as its text; the digits times the suffix
    (`m` = 10^-3, `Ki` = 2^10, `e3` = 10^3, ...), a non-zero magnitude rounded up to a whole nano (10^-9).

    Args:
        value: the JSON value of the field (str, int or float; anything else is refused).
    Returns:
        The value as a Fraction (`"500m"` and `"0.5"` both give 1/2).
    Raises:
        QuantityError: apimachinery's ErrFormatWrong / ErrSuffix message, or the syncer's own for an exponent
            beyond 10^10000 or a JSON value that is neither a string nor a number.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(_FORMAT_WRONG)
    text = (value if isinstance(value, str) else json.dumps(value)).strip()
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    positive, num, denom, suffix = _split(text)
    if suffix in _DECIMAL:
        base, exponent = 10, _DECIMAL[suffix]
    elif suffix in _BINARY:
        base, exponent = 2, _BINARY[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        if not suffix[1:].lstrip("+-").isdigit() or len(suffix[1:].lstrip("+-")) + 2 < len(suffix):
            raise QuantityError(_SUFFIX_WRONG)  # strconv.ParseInt refuses it: ErrSuffix
        base, exponent = 10, int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"the exponent of a quantity may not be beyond {_MAX_EXPONENT} here")
    else:
        raise QuantityError(_SUFFIX_WRONG)
    amount = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** exponent
    if amount:
        amount = -(-amount // _NANO) * _NANO  # inf.RoundUp at nano scale, on the magnitude
    return amount if positive else -amount


def _json(v: Any) -> str:
    return json.dumps(v)


def _tolerations_problem(tolerations: Any) -> str | None:
    """core/v1 `[]Toleration` decoded, then ValidateTolerations (pkg/apis/core/validation/validation.go) and
    node's `validateTolerations` uniqueness of (key, operator, value, effect)."""
    at = "the result at scheduling.tolerations"
    if not isinstance(tolerations, list):
        return f"{at} must be a list of tolerations, got {_json(tolerations)}"
    seen: set[tuple[str, str, str, str]] = set()
    for i, t in enumerate(tolerations):
        here = f"{at}[{i}]"
        if t is None:
            t = {}  # a JSON null decodes into the zero Toleration
        if not isinstance(t, dict):
            return f"{here} must be an object, got {_json(t)}"
        for f in ("key", "operator", "value", "effect"):
            if t.get(f) is not None and not isinstance(t[f], str):
                return f"{here}.{f} must be a string, got {_json(t[f])}"
        seconds = t.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)
                                    or not _INT64[0] <= seconds <= _INT64[1]):
            return f"{here}.tolerationSeconds must be an integer, got {_json(seconds)}"
        key, op, value, effect = (t.get(f) or "" for f in ("key", "operator", "value", "effect"))
        if key:
            errs = qualified_name_errors(key)
            if errs:
                return f"{here}.key is not a valid toleration key {_json(key)}: {'; '.join(errs)}"
        elif op != "Exists":
            return (f'{here}.operator must be Exists when `key` is empty, which means "match all values and all '
                    f'keys", got {_json(op)}')
        if seconds is not None and effect != "NoExecute":
            return f"{here}.effect must be 'NoExecute' when `tolerationSeconds` is set, got {_json(effect)}"
        if op in ("", "Equal"):
            errs = label_value_errors(value)
            if errs:
                return f"{here}.value is not a valid toleration value {_json(value)}: {'; '.join(errs)}"
        elif op == "Exists":
            if value:
                return f"{here}.value must be empty when `operator` is 'Exists', got {_json(value)}"
        else:
            return f'{here}.operator is not supported {_json(op)}: supported values: "Equal", "Exists"'
        if effect and effect not in TAINT_EFFECTS:
            return (f"{here}.effect is not supported {_json(effect)}: supported values: "
                    + ", ".join(_json(e) for e in TAINT_EFFECTS))
        if (key, op, value, effect) in seen:
            return f"{here} is a duplicate of an earlier toleration (the same key, operator, value and effect)"
        seen.add((key, op, value, effect))
    return None


def _extended(name: str) -> bool:
    """pkg/apis/core/helper/helpers.go IsExtendedResourceName: not native (no `/`, or a `kubernetes.io/`
    prefix), not `requests.`, and `requests.<name>` a qualified name."""
    native = "/" not in name or "kubernetes.io/" in name
    return not native and not name.startswith("requests.") and not qualified_name_errors("requests." + name)


def _overhead_problem(overhead: Any) -> str | None:
    """node/v1 `Overhead` decoded (`podFixed`: a map of quantities), then ValidateContainerResourceRequirements
    of `limits: podFixed` (pkg/apis/core/validation/validation.go: validateContainerResourceName,
    ValidateResourceQuantityValue, validateResourceQuantityHugePageValue, `HugePages require cpu or memory`)."""
    if not isinstance(overhead, dict):
        return f"the result at overhead must be an object, got {_json(overhead)}"
    fixed = overhead.get("podFixed")
    if fixed is None:
        return None
    if not isinstance(fixed, dict):
        return f"the result at overhead.podFixed must be a map of quantities, got {_json(fixed)}"
    hugepages = False
    for name, raw in fixed.items():
        here = f'the result at overhead.podFixed["{name}"]'
        try:
            value = parse_quantity(raw)
        except QuantityError as e:
            return f"{here} is not a quantity {_json(raw)}: {e.reason}"
        errs = qualified_name_errors(name)
        if errs:
            return f"the result at overhead.podFixed has an invalid resource name {_json(name)}: {'; '.join(errs)}"
        if "/" not in name:
            if name not in _CONTAINER_RESOURCES and not name.startswith(_HUGEPAGES):
                return (f"the result at overhead.podFixed has an invalid resource name {_json(name)}: must be a "
                        "standard resource for containers")
        elif "kubernetes.io/" not in name and not _extended(name):
            return (f"the result at overhead.podFixed has an invalid resource name {_json(name)}: doesn't follow "
                    "extended resource name standard")
        if value < 0:
            return f"{here} must be greater than or equal to 0, got {_json(raw)}"
        if _extended(name) and -(-value * 1000 // 1) % 1000:  # MilliValue() % 1000, MilliValue rounding up
            return f"{here} must be an integer, got {_json(raw)}"
        if name.startswith(_HUGEPAGES):
            hugepages = True
            try:
                page = parse_quantity(name[len(_HUGEPAGES):])
            except QuantityError:
                page = Fraction(0)
            # IsHugePageResourceValueDivisible: a whole positive page size; Value() rounds up
            if page <= 0 or page.denominator != 1 or -(-value // 1) % page:
                return f"{here} {_json(raw)} is not positive integer multiple of {name}"
    if hugepages and not {"cpu", "memory"} & set(fixed):
        return "the result at overhead.podFixed: HugePages require cpu or memory"
    return None


def spec_problem(obj: Obj) -> str | None:
    """Why the virtual API server would refuse the `scheduling` or `overhead` of RuntimeClass `obj`, or None.

    Args:
        obj: a RuntimeClass (a patch result).
    Returns:
        The first problem as `the result at <field> ...`, or None. The rules (kubernetes
        pkg/apis/node/validation/validation.go ValidateRuntimeClass, after the typed decode):
        - `overhead` first (ValidateRuntimeClass's order), then `scheduling`;
        - `scheduling` an object or null; its `nodeSelector` a map of strings, each key a qualified name and each
          value a label value (apimachinery ValidateLabels);
        - `scheduling.tolerations` a list of objects with string key/operator/value/effect and an int64
          `tolerationSeconds`; ValidateTolerations: a key is a qualified name, an empty key needs `Exists`,
          `tolerationSeconds` only with effect `NoExecute`, `Equal` (or no operator) takes a label value, `Exists`
          no value, no other operator, effect one of NoSchedule/PreferNoSchedule/NoExecute or empty; no two
          tolerations with the same key, operator, value and effect;
        - `overhead` an object or null; `overhead.podFixed` a map of quantities (`parse_quantity`), named `cpu`,
          `memory`, `ephemeral-storage`, `hugepages-<size>`, a `kubernetes.io/` name or an extended resource
          (which takes integers only); none negative; hugepages a multiple of their page size and only with cpu or
          memory.
    """
    if obj.get("overhead") is not None:
        problem = _overhead_problem(obj["overhead"])
        if problem:
            return problem
    scheduling = obj.get("scheduling")
    if scheduling is not None:
        if not isinstance(scheduling, dict):
            return f"the result at scheduling must be an object, got {_json(scheduling)}"
        selector = scheduling.get("nodeSelector")
        if selector is not None:
            if not isinstance(selector, dict):
                return f"the result at scheduling.nodeSelector must be a map of strings, got {_json(selector)}"
            for key, v in selector.items():
                if not isinstance(v, str):
                    return f'the result at scheduling.nodeSelector["{key}"] must be a string, got {_json(v)}'
                errs = qualified_name_errors(key)
                if errs:
                    return (f"the result at scheduling.nodeSelector has an invalid label key {_json(key)}: "
                            f"{'; '.join(errs)}")
                errs = label_value_errors(v)
                if errs:
                    return (f'the result at scheduling.nodeSelector["{key}"] is not a valid label value {_json(v)}: '
                            f"{'; '.join(errs)}")
        if scheduling.get("tolerations") is not None:
            problem = _tolerations_problem(scheduling["tolerations"])
            if problem:
                return problem
    return None


def stored_view(view: Obj) -> Obj:
    """`view` (a RuntimeClass's compared fields, translate.runtime_class_view) as the API server would store it,
    for comparing: the `omitempty` fields of node/v1 `Scheduling` (nodeSelector, tolerations), core/v1 `Toleration`
    (key, operator, value, effect, tolerationSeconds) and node/v1 `Overhead` (podFixed) dropped when empty, and
    each quantity of `overhead.podFixed` replaced by its value (`parse_quantity`: `"0.5"` and the stored `"500m"`
    compare equal; one that does not parse is left as it is).

    Args:
        view: {handler, overhead?, scheduling?, labels, annotations}; not changed.
    Returns:
        A new dict of the same shape.
    """
    out = dict(view)
    scheduling = out.get("scheduling")
    if isinstance(scheduling, dict):
        scheduling = {k: v for k, v in scheduling.items() if not (k in ("nodeSelector", "tolerations") and not v)}
        if isinstance(scheduling.get("tolerations"), list):
            scheduling["tolerations"] = [
                {k: v for k, v in t.items() if v not in ("", None)} if isinstance(t, dict) else t
                for t in scheduling["tolerations"]]
        out["scheduling"] = scheduling
    overhead = out.get("overhead")
    if isinstance(overhead, dict):
        overhead = {k: v for k, v in overhead.items() if not (k == "podFixed" and not v)}
        if isinstance(overhead.get("podFixed"), dict):
            overhead["podFixed"] = {k: _value_or_text(v) for k, v in overhead["podFixed"].items()}
        out["overhead"] = overhead
    return out


def _value_or_text(v: Any) -> Any:
    try:
        return parse_quantity(v)
    except QuantityError:
        return v
