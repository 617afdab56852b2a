"""Field validation errors of the embedded API server, worded as kube-apiserver words them.

Source: `k8s.io/apimachinery/pkg/util/validation/field/errors.go` (`Error.Error`, `Error.ErrorBody`,
`ErrorType.String`, `Required`, `Invalid`, `Duplicate`, `NotFound`, `NotSupported`, `Forbidden`,
`TooLong`, `TooMany`) and `k8s.io/apimachinery/pkg/util/validation/validation.go` (`IsDNS1123Label`,
`IsDNS1123Subdomain`, `RegexError`, `MaxLenError`, `InclusiveRangeError`).

A `FieldError` prints as `<field>: <body>`, e.g.
`spec.hostname: Invalid value: "a.b": must not contain dots`; a 422 response lists them (see
`status.invalid`) with one `StatusCause` each (`type`, `field`, `message` = the body).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = f"{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"
_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                      "start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")

_OMIT = object()  # a TooMany without a quantity

# ErrorType -> (cause type, the words that open the body)
_TYPES = {
    "Required": ("FieldValueRequired", "Required value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "NotFound": ("FieldValueNotFound", "Not found"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
}
_NO_VALUE = ("Required", "Forbidden", "TooLong")  # types whose body never shows the value


@dataclass(frozen=True)
class GoSyntax:
    """A value shown as it is given (pre-rendered): `go_json`'s text, or Go's `%#v` for the types
    `field.Error.ErrorBody` of apimachinery before v0.34 prints that way (a `uint64` resourceVersion of 0 is `0x0`)."""

    text: str


def go_value(value: Any) -> str:
    """A value as `field.Error.ErrorBody` prints it: strings quoted (`%q`), numbers and booleans plain,
    nil as `null`, string slices as `[]string{"a", "b"}` (apimachinery before v0.34), a `GoSyntax` as its text; any
    other map or list as `json.Marshal` writes it (`go_json`, apimachinery v0.34; before, `%#v` of its Go type,
    which a caller that knows the type and the server's version passes as a `GoSyntax`)."""
    if isinstance(value, GoSyntax):
        return value.text
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "[]string{" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "}"
    return go_json(value)


def go_json(value: Any, *, sort_keys: bool = True) -> str:
    """`value` as Go's `json.Marshal` writes it (what `ErrorBody` shows for a map or struct since apimachinery
    v0.34, "Nicer value rendering in API errors"): compact, `<`, `>` and `&` escaped as `\\u003c` and so on, map
    keys sorted (`sort_keys`; pass False for a dict built in a Go struct's field order)."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


@dataclass(frozen=True)
class FieldError:
    """One validation error: `type` (Required, Invalid, Duplicate, NotFound, NotSupported, Forbidden,
    TooLong, TooMany), the field path (`spec.containers[0].name`), the bad value and a detail."""

    type: str
    field: str
    value: Any = ""
    detail: str = ""

    @property
    def cause_type(self) -> str:
        """The `StatusCause.type` (`FieldValueInvalid`, ...)."""
        return _TYPES[self.type][0]

    def body(self) -> str:
        """The message without the field (`Invalid value: "x": detail`): the `StatusCause.message`."""
        words = _TYPES[self.type][1]
        text = words if self.type in _NO_VALUE or self.value is _OMIT else f"{words}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str = "") -> FieldError:
    """`<field>: Required value[: detail]`."""
    return FieldError("Required", field, "", detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    """`<field>: Invalid value: <value>: detail`."""
    return FieldError("Invalid", field, value, detail)


def duplicate(field: str, value: Any) -> FieldError:
    """`<field>: Duplicate value: <value>`."""
    return FieldError("Duplicate", field, value)


def not_found(field: str, value: Any) -> FieldError:
    """`<field>: Not found: <value>`."""
    return FieldError("NotFound", field, value)


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    """`<field>: Unsupported value: <value>: supported values: "a", "b"`."""
    return FieldError("NotSupported", field, value, "supported values: " + ", ".join(json.dumps(s) for s in supported))


def forbidden(field: str, detail: str) -> FieldError:
    """`<field>: Forbidden: detail`."""
    return FieldError("Forbidden", field, "", detail)


def too_long(field: str, max_bytes: int) -> FieldError:
    """`<field>: Too long: must have at most <n> bytes`."""
    return FieldError("TooLong", field, "", f"must have at most {max_bytes} bytes")


def too_many(field: str, actual: int | None, maximum: int) -> FieldError:
    """`<field>: Too many: <actual>: must have at most <max> items`."""
    return FieldError("TooMany", field, _OMIT if actual is None else actual, f"must have at most {maximum} items")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """`validation.RegexError`: the message, examples and the regular expression."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return f"{msg} (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    """`validation.MaxLenError`."""
    return f"must be no more than {n} characters"


def inclusive_range_error(lo: int, hi: int) -> str:
    """`validation.InclusiveRangeError`."""
    return f"must be between {lo} and {hi}, inclusive"


def dns1123_label_errors(value: str) -> list[str]:
    """`validation.IsDNS1123Label`: at most 63 characters, `[a-z0-9]([-a-z0-9]*[a-z0-9])?`; a valid
    subdomain that is not a label gets `must not contain dots`."""
    errs = [max_len_error(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL_RE.match(value):
        if _DNS1123_SUBDOMAIN_RE.match(value):
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain_errors(value: str) -> list[str]:
    """`validation.IsDNS1123Subdomain`: at most 253 characters, dot-separated DNS-1123 labels."""
    errs = [max_len_error(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def dns1123_label(field: str, value: str) -> list[FieldError]:
    """`ValidateDNS1123Label` (pkg/apis/core/validation): one Invalid per message."""
    return [invalid(field, value, m) for m in dns1123_label_errors(value)]


def dns1123_subdomain(field: str, value: str) -> list[FieldError]:
    """`ValidateDNS1123Subdomain` (pkg/apis/core/validation): one Invalid per message."""
    return [invalid(field, value, m) for m in dns1123_subdomain_errors(value)]
