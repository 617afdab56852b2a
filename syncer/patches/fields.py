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

Quantities are read exactly as apimachinery reads them (pkg/api/resource/quantity.go): `parse_quantity` as the API
server decodes the JSON the syncer writes (UnmarshalJSON), `parse_quantity_text` as `resource.ParseQuantity` reads
a string (vcluster's config reader calls it); tests/test_quantity_parsing.py puts Go's own test tables through them.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

from syncer.config.selector import label_value_errors, qualified_name_errors
from syncer.kube.jsonutil import dumps

Obj = dict[str, Any]

# apimachinery pkg/api/resource/quantity.go: ErrFormatWrong, ErrNumeric, ErrSuffix
_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NUMERIC_WRONG = "unable to parse numeric part of quantity"
_SUFFIX_WRONG = "unable to parse quantity's suffix"
# apimachinery pkg/api/resource/suffix.go: newSuffixer (decimal SI and binary SI suffixes)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_MAX_EXPONENT = 10_000  # beyond it the value is not computed (a 10^10000 quantity is no real overhead)
_MAX_DIGITS = 4_000  # of a quantity's number: no real quantity has more, and Python's int() stops at 4300
_NANO = Fraction(1, 10**9)
_INT64 = (-(1 << 63), (1 << 63) - 1)
# quantity.go ParseQuantity: "The max is just a simple cap": a binary-SI quantity (`Ki` ... `Ei`) beyond
# math.MaxInt64 (`maxAllowed` in math.go) is that, its sign kept; a decimal one is not capped
_MAX_ALLOWED = (1 << 63) - 1
# Go's unicode.IsSpace, which strings.TrimSpace strips in Quantity.UnmarshalJSON: \t \n \v \f \r, space, U+0085,
# U+00A0 and Unicode's other White_Space (Python's str.strip takes U+001C..U+001F too, Go does not). Of these, the
# control characters never reach UnmarshalJSON as they are: the syncer's JSON encoder (orjson, kube/jsonutil.dumps)
# writes each as an escape (`\t`, `\u000b`), a backslash TrimSpace leaves and ParseQuantity refuses.
_JSON_TRIMMED = " \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B)) + "\u2028\u2029\u202f\u205f\u3000"
_EXPONENT = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 64) reads (within int64)
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


def _split(text: str) -> tuple[bool, str, str, str, bool]:
    """apimachinery's parseQuantityString: (positive, numerator digits, denominator digits, suffix, whether the
    number before the suffix holds a digit). Raises QuantityError (ErrFormatWrong) when a character follows a
    complete exponent suffix."""
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
    digit = any("0" <= c <= "9" for c in text[:suffix_start])
    return positive, num, denom, text[suffix_start:], digit


def _int64_path(binary: bool, exponent: int, num: str, denom: str) -> bool:
    """Whether ParseQuantity takes its int64 path, which reads the digits only (`num`, `denom`), not the number's
    text: decimal (`precision = maxInt64Factors - len(num+denom)`, maxInt64Factors = 18) at a scale of nano or
    coarser; binary without a fraction when `15 - len(num) - exponent*3/10 - 1` is not negative and the product
    fits in int64. The other path reads the text with inf.Dec's SetString."""
    if binary:
        return (not denom and 15 - len(num) - exponent * 3 // 10 - 1 >= 0
                and int(num) << exponent <= _INT64[1])
    return 18 - len(num) - len(denom) >= 0 and exponent - len(denom) >= -9


def parse_quantity_text(text: str) -> Fraction:
    """The exact value of the string `text` as apimachinery's `resource.ParseQuantity` reads it
    (pkg/api/resource/quantity.go, the parser vcluster's `parseResources` calls on its config): nothing trimmed; the
    digits times the suffix (`m` = 10^-3, `Ki` = 2^10, `e3` = 10^3, ...); a non-zero magnitude rounded up to a whole
    nano (10^-9, so `1e-20` is 1n); a binary-SI magnitude capped at 2^63-1 (`9Ei` is 9223372036854775807, the sign
    kept), a decimal one not capped. Go's test tables (quantity_test.go TestQuantityParse, TestParseQuantity) hold
    both.

    Edge cases read as Go reads them: a number without a digit (`.`, `-`, `k`) is 0 where Go's int64 path takes it,
    and ErrNumeric where the inf.Dec path does (`e-10` and finer exponents, `Pi`, `Ei`); an `e` exponent is read
    as an int64 (ErrSuffix beyond) and truncated to int32 (`1e4294967296` is 1).

    Raises:
        QuantityError: apimachinery's ErrFormatWrong / ErrNumeric / ErrSuffix message, or the syncer's own for an
            exponent beyond 10000 (Go takes `1e10001`, a value no RuntimeClass or container needs), or below -10000
            with a numerator of thousands of digits (a shorter one is 1n, as in Go), or for more than 4000 digits
            (which Go takes; Python's int() refuses more than 4300).
    """
    if not text:
        raise QuantityError(_FORMAT_WRONG)
    positive, num, denom, suffix, digit = _split(text)
    if len(num) + len(denom) > _MAX_DIGITS:  # Python's int() refuses beyond 4300 digits (ValueError, not ours)
        raise QuantityError(f"a quantity may not have more than {_MAX_DIGITS} digits here")
    binary = False
    if suffix in _DECIMAL:
        base, exponent = 10, _DECIMAL[suffix]
    elif suffix in _BINARY:
        base, exponent, binary = 2, _BINARY[suffix], True
    elif len(suffix) > 1 and suffix[0] in "eE":
        if not _EXPONENT.fullmatch(suffix[1:]) or len(suffix[1:].lstrip("+-").lstrip("0")) > 19 \
                or not _INT64[0] <= int(suffix[1:]) <= _INT64[1]:
            raise QuantityError(_SUFFIX_WRONG)  # strconv.ParseInt refuses it: ErrSuffix
        base, exponent = 10, (int(suffix[1:]) + (1 << 31)) % (1 << 32) - (1 << 31)  # suffix.go: int32(parsed)
        if exponent < -_MAX_EXPONENT and len(num) + exponent <= -9:
            exponent = -9 - len(num)  # the value stays below 1n, which a non-zero one rounds up to: the same result
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError(f"the exponent of a quantity may not be beyond {_MAX_EXPONENT} here")
    else:
        raise QuantityError(_SUFFIX_WRONG)
    if not digit and not _int64_path(binary, exponent, num, denom):
        raise QuantityError(_NUMERIC_WRONG)  # inf.Dec's SetString: "no digits read"
    amount = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** exponent
    if amount:
        amount = -(-amount // _NANO) * _NANO  # inf.RoundUp at nano scale, on the magnitude
    if binary:
        amount = min(amount, Fraction(_MAX_ALLOWED))
    return amount if positive else -amount


def parse_quantity(value: Any) -> Fraction:
    """The exact value of a quantity field whose JSON value is `value`, as `resource.Quantity`'s UnmarshalJSON
    (apimachinery pkg/api/resource/quantity.go) decodes what the syncer writes for it (kube/jsonutil.dumps): null
    is the zero quantity; a string's text, and a number's JSON text (orjson's; NaN and infinities are written null),
    is trimmed of Go's Unicode spaces (strings.TrimSpace; a control character arrives as an escape, so only the
    others are trimmed) and read by ParseQuantity (`parse_quantity_text`).

    Args:
        value: the JSON value of the field (None, str, int or float; anything else is refused, as ParseQuantity
            refuses `true`, `{...}` or `[...]`).
    Returns:
        The value as a Fraction (`"500m"` and `"0.5"` both give 1/2).
    Raises:
        QuantityError: as `parse_quantity_text`.
    """
    if value is None:
        return Fraction(0)  # UnmarshalJSON: `null` leaves the zero Quantity
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(_FORMAT_WRONG)
    if isinstance(value, float):
        text = dumps(value).decode()
        if text == "null":
            return Fraction(0)
    else:
        text = value if isinstance(value, str) else str(value)
    return parse_quantity_text(text.strip(_JSON_TRIMMED))


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
                page = parse_quantity_text(name[len(_HUGEPAGES):])  # HugePageSizeFromResourceName
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
