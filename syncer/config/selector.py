"""Kubernetes label selectors: validation, matching, and the string form.

One implementation serves the syncer (the `sync.fromHost.runtimeClasses.selector` of a vcluster.yaml,
given as `matchLabels`/`matchExpressions`) and the embedded test API server (the `labelSelector`
query string, `a=b,c in (x,y),!d`).

Rules and messages follow Kubernetes:
- `metav1.LabelSelectorAsSelector` and `labels.NewRequirement` (k8s.io/apimachinery/pkg/labels) for
  the operator and values checks and their messages;
- `validation.IsQualifiedName` and `validation.IsValidLabelValue`
  (k8s.io/apimachinery/pkg/util/validation) for keys and values.
An empty selector (no labels, no expressions) matches everything, as in `LabelSelectorAsSelector`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)  # a metav1.LabelSelector's (`LabelSelectorAsSelector`)
GREATER_THAN = "gt"  # selection.GreaterThan: only in the string form (`a>1`, `labels.Parse`)
LESS_THAN = "lt"  # selection.LessThan (`a<1`)
_INT64 = re.compile(r"[+-]?[0-9]+")

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_RE = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_RE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = f"{_DNS1123_LABEL_FMT}(\\.{_DNS1123_LABEL_FMT})*"
_DNS1123_LABEL_RE = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_MAX_NAME = 63
_MAX_PREFIX = 253


class SelectorError(ValueError):
    """A label selector that Kubernetes would refuse.

    Attributes:
        reason: the Kubernetes message, e.g. `"Foo" is not a valid label selector operator`.
        path: where in the selector the problem is, relative to the selector
            (e.g. `matchExpressions[0].operator`), or "" for the string form.
    """

    def __init__(self, reason: str, path: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path


def qualified_name_errors(key: str) -> list[str]:
    """Return the Kubernetes `IsQualifiedName` errors for a label key (empty list when valid).

    A key is an optional DNS-1123 subdomain prefix (at most 253 characters) and `/`, then a name of
    at most 63 characters, alphanumeric at both ends with `-_.` inside.
    """
    errs: list[str] = []
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
    else:
        return [
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
            "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
            f"regex used for validation is '{_QUALIFIED_NAME_FMT}') with an optional DNS subdomain "
            "prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:  # IsQualifiedName: "must be non-empty", then the form, which "" does not match either
        errs.append("name part must be non-empty")
    errs += [f"name part {e}" for e in _length_and_form(name, _MAX_NAME, _QUALIFIED_NAME_RE, (
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        f"'{_QUALIFIED_NAME_FMT}')"))]
    return errs


def _length_and_form(value: str, max_length: int, form: re.Pattern[str], form_error: str) -> list[str]:
    """apimachinery's two checks of a name or value (pkg/util/validation/validation.go): `MaxLenError` when
    `value` is longer than `max_length`, then `form_error` (its `RegexError`) when `form` does not match all of it."""
    errs = [f"must be no more than {max_length} characters"] if len(value) > max_length else []
    if not form.fullmatch(value):
        errs.append(form_error)
    return errs


def label_value_errors(value: str) -> list[str]:
    """Return the Kubernetes `IsValidLabelValue` errors for a label value (empty list when valid)."""
    return _length_and_form(value, _MAX_NAME, _LABEL_VALUE_RE, (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
        "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE_FMT}')"))


def dns1123_label_errors(value: str) -> list[str]:
    """Return the Kubernetes `IsDNS1123Label` errors for `value` (apimachinery pkg/util/validation/validation.go:
    at most 63 characters of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`), an empty list when it is a label."""
    return _length_and_form(value, _MAX_NAME, _DNS1123_LABEL_RE, (
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
        "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        f"'{_DNS1123_LABEL_FMT}')"))


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Return the Kubernetes `IsDNS1123Subdomain` errors for `value` (apimachinery pkg/util/validation/validation.go:
    at most 253 characters of dot-separated DNS-1123 labels; the rule for most object names, RuntimeClasses'
    included), an empty list when it is a subdomain."""
    return _length_and_form(value, _MAX_PREFIX, _DNS1123_SUBDOMAIN_RE, (
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
        f"'{_DNS1123_SUBDOMAIN_FMT}')"))


@dataclass(frozen=True)
class Requirement:
    """One selector requirement: `key` `operator` `values` (operator one of OPERATORS, or GREATER_THAN or
    LESS_THAN with one integer value from the string form)."""

    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True when `labels` satisfy this requirement (NotIn also matches an absent key)."""
        if self.operator == IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator in (GREATER_THAN, LESS_THAN):  # `Requirement.Matches`: both sides as int64, else no match
            have, (want,) = _int64(labels.get(self.key)), self.values
            return have is not None and (have > int(want) if self.operator == GREATER_THAN else have < int(want))
        return self.key not in labels

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (GREATER_THAN, LESS_THAN):
            return f"{self.key}{'>' if self.operator == GREATER_THAN else '<'}{next(iter(self.values))}"
        vals = ",".join(sorted(self.values))
        return f"{self.key} {'in' if self.operator == IN else 'notin'} ({vals})"


def _int64(value: str | None) -> int | None:
    """`value` as Go's `strconv.ParseInt(value, 10, 64)` reads it (an optional sign, then decimal digits, within
    int64), or None when it cannot."""
    if value is None or not _INT64.fullmatch(value):
        return None
    number = int(value)
    return number if -(2 ** 63) <= number < 2 ** 63 else None


def new_requirement(key: str, operator: str, values: Iterable[str], path: str = "",
                    operators: tuple[str, ...] = OPERATORS) -> Requirement:
    """Build a validated requirement, as `labels.NewRequirement` does, with `operator` one of `operators`
    (a metav1.LabelSelector's by default; the string form adds GREATER_THAN and LESS_THAN).

    Raises:
        SelectorError: with the Kubernetes message and `path` (for an expression, its index path).
    """
    vals = list(values)
    if operator not in operators:
        raise SelectorError(f'"{operator}" is not a valid label selector operator', _join(path, "operator"))
    key_errs = qualified_name_errors(key)
    if key_errs:
        raise SelectorError(f'invalid label key "{key}": {"; ".join(key_errs)}', _join(path, "key"))
    if operator in (IN, NOT_IN):
        if not vals:
            raise SelectorError("for 'in', 'notin' operators, values set can't be empty", _join(path, "values"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            raise SelectorError("for 'Gt', 'Lt' operators, exactly one value is required", _join(path, "values"))
        if _int64(vals[0]) is None:
            raise SelectorError("for 'Gt', 'Lt' operators, the value must be an integer", _join(path, "values[0]"))
    elif vals:
        raise SelectorError("values set must be empty for exists and does not exist", _join(path, "values"))
    for i, v in enumerate(vals):
        v_errs = label_value_errors(v)
        if v_errs:
            raise SelectorError(
                f'invalid label value: "{v}": at key: "{key}": {"; ".join(v_errs)}', _join(path, f"values[{i}]")
            )
    return Requirement(key, operator, frozenset(vals))


def _join(path: str, child: str) -> str:
    return f"{path}.{child}" if path else child


@dataclass(frozen=True)
class Selector:
    """A validated label selector: all requirements are ANDed; no requirement matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the selector has no requirement (it selects everything)."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """True when a label map (None = no labels) satisfies every requirement."""
        lbls = labels or {}
        return all(r.matches(lbls) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def from_label_selector(spec: Mapping[str, Any] | None) -> Selector:
    """Convert a metav1.LabelSelector dict (`matchLabels`, `matchExpressions`) into a Selector.

    Follows `metav1.LabelSelectorAsSelector`: matchLabels become `In` requirements with one value;
    every expression is validated; all are ANDed; None or `{}` selects everything.

    Raises:
        SelectorError: the first invalid part, with a path like `matchExpressions[1].operator`.
    """
    if not spec:
        return Selector()
    reqs: list[Requirement] = []
    for key, value in sorted((spec.get("matchLabels") or {}).items()):
        reqs.append(new_requirement(key, IN, [value], f"matchLabels[{key}]"))
    for i, expr in enumerate(spec.get("matchExpressions") or []):
        reqs.append(
            new_requirement(expr.get("key", ""), expr.get("operator", ""), expr.get("values") or [],
                            f"matchExpressions[{i}]")
        )
    return Selector(tuple(reqs))


def label_selector_errors(spec: Mapping[str, Any] | None) -> list[SelectorError]:
    """Every invalid part of a metav1.LabelSelector dict, in order (matchLabels, then matchExpressions):
    what from_label_selector would raise, for all parts at once."""
    errors: list[SelectorError] = []
    parts = [(key, IN, [value], f"matchLabels[{key}]") for key, value in (spec or {}).get("matchLabels", {}).items()]
    parts += [(e.get("key", ""), e.get("operator", ""), e.get("values") or [], f"matchExpressions[{i}]")
              for i, e in enumerate((spec or {}).get("matchExpressions") or [])]
    for key, op, values, path in parts:
        try:
            new_requirement(key, op, values, path)
        except SelectorError as e:
            errors.append(e)
    return errors


# `labels.Parse`'s lexer: whitespace is only space, tab, CR and LF (`isWhitespace`); `=!(),<>` end an identifier
# (`isSpecialSymbol`)
_TOKEN_RE = re.compile(r"[ \t\r\n]*(!=|==|=|\(|\)|,|!|>|<|[^ \t\r\n!=(),<>]+)")
_PUNCTUATION = frozenset({"!=", "==", "=", "(", ")", ",", "!", ">", "<"})


def parse(text: str) -> Selector:
    """Parse the string form used in `?labelSelector=` (`a=b`, `a==b`, `a!=b`, `a in (x,y)`,
    `a notin (x)`, `a`, `!a`, `a>1`, `a<1`, comma separated) as `labels.Parse` does.

    Raises:
        SelectorError: on a syntax error or an invalid key or value.
    """
    tokens: list[str] = [t for t in _TOKEN_RE.findall(text) if t]
    reqs: list[Requirement] = []
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise SelectorError(f"unable to parse requirement: unexpected end of selector {text!r}")
        pos += 1
        return tokens[pos - 1]

    def values_list() -> list[str]:
        """The values after `(` up to and including `)`, as apimachinery's `parseValues` and
        `parseIdentifiersList` read them: `()` is `[""]`, an empty place between commas or before `)` is `""`,
        two values without a comma between them are an error."""
        values: list[str] = []
        if tokens[pos:pos + 1] == [")"]:
            take()
            return [""]
        while True:
            t = take()
            if t == ",":
                if not values:
                    values.append("")  # "(,"
                nxt = tokens[pos] if pos < len(tokens) else ""
                if nxt in (")", ","):
                    values.append("")  # ",)" and ",,"
                    if take() == ")":
                        return values
                continue
            if t in _PUNCTUATION:
                raise SelectorError(f"unable to parse requirement: found '{t}', expected: ',', or identifier in "
                                    f"{text!r}")
            values.append(t)
            nxt = tokens[pos] if pos < len(tokens) else ""
            if nxt == ")":
                take()
                return values
            if nxt != ",":
                raise SelectorError(f"unable to parse requirement: found '{nxt}', expected: ',' or ')' in {text!r}")

    while pos < len(tokens):
        tok = take()
        if tok == "!":
            reqs.append(new_requirement(take(), DOES_NOT_EXIST, []))
        else:
            key = tok
            nxt = tokens[pos] if pos < len(tokens) else ","
            if nxt == ",":
                reqs.append(new_requirement(key, EXISTS, []))
            elif nxt in ("=", "=="):
                take()
                value = "" if pos >= len(tokens) or tokens[pos] == "," else take()
                reqs.append(new_requirement(key, IN, [value]))
            elif nxt == "!=":
                take()
                value = "" if pos >= len(tokens) or tokens[pos] == "," else take()
                reqs.append(new_requirement(key, NOT_IN, [value]))
            elif nxt in (">", "<"):
                take()
                value = "" if pos >= len(tokens) or tokens[pos] == "," else take()
                reqs.append(new_requirement(key, GREATER_THAN if nxt == ">" else LESS_THAN, [value],
                                            operators=(GREATER_THAN, LESS_THAN)))
            elif nxt in ("in", "notin"):
                take()
                if take() != "(":
                    raise SelectorError(f"unable to parse requirement: expected '(' in {text!r}")
                reqs.append(new_requirement(key, IN if nxt == "in" else NOT_IN, values_list()))
            else:
                raise SelectorError(f"unable to parse requirement: unexpected {nxt!r} in {text!r}")
        if pos < len(tokens):
            if tokens[pos] != ",":
                raise SelectorError(f"unable to parse requirement: expected ',' at {tokens[pos]!r} in {text!r}")
            pos += 1
            after = tokens[pos] if pos < len(tokens) else ""
            if not after or after in _PUNCTUATION - {"!"}:  # labels.Parse: an identifier or `!` after a comma
                raise SelectorError(f"unable to parse requirement: found '{after}', expected: identifier after ',' "
                                    f"in {text!r}")
    return Selector(tuple(reqs))
