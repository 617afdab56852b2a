"""apimachinery's `resource.Quantity` as kube-apiserver decodes and stores it: the value, the format the input had
(DecimalSI, BinarySI, DecimalExponent) and the text it is written back as.

Source: k8s.io/apimachinery pkg/api/resource/quantity.go (`parseQuantityString`, `ParseQuantity`, `UnmarshalJSON`,
`CanonicalizeBytes`, `String`, `MarshalJSON`), amount.go (`AsCanonicalBytes`, `AsCanonicalBase1024Bytes`) and
suffix.go (`newSuffixer`, `interpret`, `constructBytes`). Written from the Go, independently of the syncer's own
reading of quantities (syncer/patches/fields.py), so that the tests check the syncer against apimachinery.

- A quantity is `<number><suffix>`: decimal SI (`n u m "" k M G T P E`), binary SI (`Ki Mi Gi Ti Pi Ei`) or an
  exponent (`e3`, `E-6`). A non-zero value is rounded up (away from zero) to a whole nano; a binary one is capped at
  2^63-1 and one strictly between -1 and 1 becomes decimal.
- It is stored in canonical form, in the format of its input: no fractional digits, the largest suffix that loses
  nothing (`0.5` -> `500m`, `1000m` -> `1`, `1.5Gi` -> `1536Mi`, `1024Mi` -> `1Gi`); a binary value below 1024 in
  magnitude, or not whole, is written as decimal SI. An input the integer fast path of `ParseQuantity` finds
  canonical already is written back exactly as it came (`100m`, `1Gi`, even `+1` or `1.`: Go keeps the string).
- `UnmarshalJSON` reads the raw JSON literal, not the decoded string: it drops the quotes, trims Go's spaces
  (`strings.TrimSpace`: ASCII `\t\n\v\f\r ` and `unicode.IsSpace`, not Python's U+001C..U+001F) and parses the rest.
  So a string written with any escape (`"\t1"`, `"\u001c1"`, even `"\u0031"`) is refused with ErrFormatWrong
  (`parseQuantityString` stops at the backslash), while a string holding U+00A0 or U+3000 as they are is trimmed. The
  test server's body decoder (`loads`) marks the strings written with an escape (`EscapedString`) and keeps the text
  of a number Go would write otherwise (`JSONNumber`: `1e3`, `1.0`, `1e4294967296`, whose exponent suffix.go cuts to
  int32: 1); a plain Python value is taken as Go's `json.Marshal` writes it. JSON null is the zero quantity, written
  `0`. JSON has no NaN or Infinity: a body holding one is refused before any quantity is read (`loads`).

`kubesim/qos.py` has its own lenient `parse_quantity` for the QoS class; this module is the exact one, for what is
validated and stored.
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

# quantity.go: ErrFormatWrong, ErrNumeric, ErrSuffix
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC_WRONG = "unable to parse numeric part of quantity"
SUFFIX_WRONG = "unable to parse quantity's suffix"

# suffix.go newSuffixer: decimal SI (base 10) and binary SI (base 2) suffixes with their exponents
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {e: s for s, e in _DECIMAL.items()}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BINARY_BY_EXP = {e: s for s, e in _BINARY.items()}
_DIGITS = "0123456789"
_SUFFIX_CHARS = "eEinumkKMGTP"
_MAX_INT64 = (1 << 63) - 1
_MAX_INT64_FACTORS = 18  # maxInt64Factors: decimal digits an int64 always holds
_NANO = -9


def _pow10(e: int) -> int:
    """10**e for e >= 0, typed as the int it is."""
    return int(10**e)


class QuantityError(ValueError):
    """A value `resource.Quantity` refuses; the message is apimachinery's."""


@dataclass(frozen=True)
class Quantity:
    """A parsed quantity: `unscaled * 10**exp10`, its format, and the input text when Go keeps it (`text`)."""

    unscaled: int
    exp10: int
    format: str
    text: str | None = None

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.unscaled > 0) - (self.unscaled < 0)

    def value(self) -> Fraction:
        """The exact value."""
        return Fraction(self.unscaled) * Fraction(10) ** self.exp10

    def cmp(self, other: Quantity) -> int:
        """`Cmp`: -1, 0 or 1 by value, whatever the format or text (`apiequality.Semantic` compares quantities
        with `a.Cmp(b) == 0`, k8s.io/apimachinery pkg/api/equality/semantic.go)."""
        a, b = self.value(), other.value()
        return (a > b) - (a < b)

    def round_up(self, scale: int) -> Quantity:
        """`RoundUp(scale)` (quantity.go): a value finer than 10**scale rounded away from zero to it, the kept text
        dropped; one already at that scale or coarser unchanged, its text kept. What core/v1 `SetDefaults_ResourceList`
        does to every quantity of a pod's ResourceLists (scale -3, milli)."""
        if self.exp10 >= scale:
            return self
        return Quantity(self.scaled_value(scale), scale, self.format)

    def cmp_int(self, n: int) -> int:
        """Compare with the integer `n` (-1, 0, 1), as `CmpInt64`."""
        if self.exp10 >= 0:
            a, b = self.unscaled * _pow10(self.exp10), n
        else:
            a, b = self.unscaled, n * _pow10(-self.exp10)
        return (a > b) - (a < b)

    def scaled_value(self, scale: int) -> int:
        """`ScaledValue`: the value divided by 10**scale, rounded up away from zero (`Value()` is scale 0,
        `MilliValue()` scale -3)."""
        e = self.exp10 - scale
        if e >= 0:
            return self.unscaled * _pow10(e)
        q, r = divmod(abs(self.unscaled), _pow10(-e))
        q += 1 if r else 0
        return q if self.unscaled >= 0 else -q

    def canonical(self) -> str:
        """`CanonicalizeBytes`: the canonical text of the value in its format (see the module docstring)."""
        if self.unscaled == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and ((self.cmp_int(-1024) > 0 and self.cmp_int(1024) < 0) or not self._whole()):
            fmt = DECIMAL_SI  # -1024 < q < 1024, or not whole: "don't lose precision", shown as decimal SI
        if fmt == BINARY_SI:
            n = abs(self.scaled_value(0))
            times = 0
            while n >= 1024 and n % 1024 == 0:
                n, times = n // 1024, times + 1
            return f"{'-' if self.unscaled < 0 else ''}{n}{_BINARY_BY_EXP.get(times * 10, '')}"
        m, e = abs(self.unscaled), self.exp10
        while m >= 10 and m % 10 == 0:
            m, e = m // 10, e + 1
        r = e % 3  # the exponent moved down to a multiple of 3
        m, e = m * _pow10(r), e - r
        # constructBytes: an exponent for DecimalExponent; no decimal SI suffix beyond E (10^18): none written
        suffix = ("" if e == 0 else f"e{e}") if fmt == DECIMAL_EXPONENT else _DECIMAL_BY_EXP.get(e, "")
        return f"{'-' if self.unscaled < 0 else ''}{m}{suffix}"

    def _whole(self) -> bool:
        return self.exp10 >= 0 or self.unscaled % _pow10(-self.exp10) == 0

    def __str__(self) -> str:
        """`String()` / `MarshalJSON`: the kept input text, else the canonical form."""
        return self.text if self.text is not None else self.canonical()


def _split(s: str) -> tuple[bool, str, str, str, str]:
    """`parseQuantityString`: (positive, the signed number text, numerator digits without leading zeros, denominator
    digits, suffix). Raises QuantityError (ErrFormatWrong) for a character after a complete exponent."""
    positive, pos, end = True, 0, len(s)
    if pos < end and s[0] in "+-":
        positive, pos = s[0] == "+", 1
    while True:  # leading zeros
        if pos >= end:
            return positive, "0", "0", "", ""
        if s[pos] != "0":
            break
        pos += 1
    i = pos
    while i < end and s[i] in _DIGITS:
        i += 1
    if i >= end:
        return positive, s, s[pos:], "", ""
    num, pos = s[pos:i] or "0", i
    denom = ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i] in _DIGITS:
            i += 1
        denom = s[pos:i]
        if i >= end:
            return positive, s, num, denom, ""
        pos = i
    value, suffix_start = s[:pos], pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise QuantityError(FORMAT_WRONG)
    return positive, value, num, denom, s[suffix_start:]


def _parse_int64(text: str) -> int | None:
    """`strconv.ParseInt(text, 10, 64)`, or None where it fails."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or any(c not in _DIGITS for c in digits):
        return None
    n = int(text)
    return n if -(1 << 63) <= n <= _MAX_INT64 else None


def _interpret(suffix: str) -> tuple[int, int, str]:
    """`quantitySuffixer.interpret`: (base, exponent, format). Raises QuantityError (ErrSuffix)."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], DECIMAL_SI
    if suffix in _BINARY:
        return 2, _BINARY[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        parsed = _parse_int64(suffix[1:])
        if parsed is not None:
            return 10, (parsed + (1 << 31)) % (1 << 32) - (1 << 31), DECIMAL_EXPONENT  # int32(parsed)
    raise QuantityError(SUFFIX_WRONG)


def parse(s: str) -> Quantity:
    """`ParseQuantity(s)`.

    Raises:
        QuantityError: apimachinery's message (ErrFormatWrong, ErrNumeric or ErrSuffix).
    """
    if not s:
        raise QuantityError(FORMAT_WRONG)
    if s == "0":
        return Quantity(0, 0, DECIMAL_SI, s)
    positive, value, num, denom, suffix = _split(s)
    base, exponent, fmt = _interpret(suffix)
    precision, scale, mantissa = 0, 0, 1
    if fmt == BINARY_SI:
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - exponent * 3 // 10 - 1  # int32(float32(exponent)*3/10): exact here
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision >= 0:  # the int64 fast path
        scale -= len(denom)
        if scale >= _NANO:
            shifted = num + denom
            result = int(shifted) * mantissa
            if result <= _MAX_INT64:
                if not positive:
                    result = -result
                if fmt == BINARY_SI:
                    keep = exponent % 10 == 0 and int(shifted) & 0x07 != 0
                else:
                    keep = scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                return Quantity(result, scale, fmt, s if keep else None)
    # the inf.Dec path
    if not any(c in _DIGITS for c in value):
        raise QuantityError(NUMERIC_WRONG)
    unscaled, exp10 = int(num + denom), -len(denom)
    if base == 10:
        exp10 += exponent
    else:
        unscaled <<= exponent
    if unscaled and exp10 < _NANO:  # rounded up (away from zero) to a whole nano
        shift = _NANO - exp10
        if shift > len(str(unscaled)) + 1:
            unscaled = 1
        else:
            q, r = divmod(unscaled, _pow10(shift))
            unscaled = q + (1 if r else 0)
        exp10 = _NANO
    if fmt == BINARY_SI:
        if Quantity(unscaled, exp10, fmt).cmp_int(_MAX_INT64) > 0:
            unscaled, exp10 = _MAX_INT64, 0  # the cap (maxAllowed)
        if unscaled and Quantity(unscaled, exp10, fmt).cmp_int(1) < 0:
            fmt = DECIMAL_SI
    return Quantity(unscaled if positive else -unscaled, exp10, fmt)


# strings.TrimSpace: ASCII spaces, then unicode.IsSpace (Python's str.strip also takes U+001C..U+001F, Go does not)
GO_SPACE = ("\t\n\v\f\r \x85\xa0\u1680" + "".join(chr(c) for c in range(0x2000, 0x200B))
            + "\u2028\u2029\u202f\u205f\u3000")
# what Go's json.Marshal writes as an escape (encoding/json encodeState.string, HTML-safe): a value holding one reaches
# UnmarshalJSON with a backslash when it went through Go (a YAML body, a Go client)
_GO_ESCAPED = frozenset({*(chr(c) for c in range(0x20)), '"', "\\", "<", ">", "&", "\u2028", "\u2029"})


class EscapedString(str):
    """A JSON string the body wrote with an escape (`\\t`, `\\u0031`, ...): its raw literal, which is what
    `UnmarshalJSON` parses, has a backslash."""


class JSONNumber(float):
    """A JSON number whose literal (`text`) is not what Go's `json.Marshal` writes for its float64 value (`1e3`,
    `1.0`, `1e4294967296`): `UnmarshalJSON` parses the literal."""

    text: str

    def __new__(cls, text: Any) -> JSONNumber:
        number = super().__new__(cls, text)
        number.text = str(text)
        return number


class JSONSyntaxError(ValueError):
    """A body Go's encoding/json refuses though Python's json reads it; the message is Go's `SyntaxError`."""


def _constant(name: str) -> Any:
    """Python's json reads `NaN`, `Infinity` and `-Infinity`; Go's scanner stops at their first letter."""
    if name.startswith("-"):
        raise JSONSyntaxError(f"invalid character '{name[1]}' in numeric literal")
    raise JSONSyntaxError(f"invalid character '{name[0]}' looking for beginning of value")


def _number(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) and go_float_text(value) == text else JSONNumber(text)


def _string(s: str, end: int, strict: bool = True) -> tuple[str, int]:
    value, after = json.decoder.scanstring(s, end, strict)  # type: ignore[attr-defined]
    return (EscapedString(value) if "\\" in s[end:after - 1] else value), after


def loads(text: str | bytes, literal: bool = True) -> Any:
    """`json.loads` for a request body, keeping what `UnmarshalJSON` of a quantity reads from the raw literal: strings
    written with an escape come back as `EscapedString` (only when the body has a backslash at all: the pure-Python
    scanner is slower), numbers Go would write otherwise as `JSONNumber`. With `literal` False, the body as Go holds
    it once decoded into a `map[string]interface{}` and written again by `json.Marshal` (a strategic merge patch:
    `strategicPatchObject`, then `FromUnstructured`, which marshals each quantity for its UnmarshalJSON): plain values,
    the strings Go escapes marked (`mark_go_escapes`).

    Raises:
        JSONSyntaxError: `NaN`, `Infinity` or `-Infinity`, with Go's words for it.
        ValueError: what Python's json refuses.
    """
    doc = text if isinstance(text, str) else text.decode()  # Go reads UTF-8 only (no BOM, no UTF-16)
    if not literal:
        return mark_go_escapes(json.JSONDecoder(parse_constant=_constant).decode(doc))
    decoder = json.JSONDecoder(parse_float=_number, parse_constant=_constant)
    if "\\" in doc:
        decoder.parse_string = _string  # type: ignore[attr-defined]
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    return decoder.decode(doc)


def mark_go_escapes(value: Any) -> Any:
    """A YAML body's data as kube-apiserver reads it (sigs.k8s.io/yaml `YAMLToJSON`, then the JSON decoder): each
    string Go's `json.Marshal` writes with an escape marked `EscapedString` (in place in dicts and lists)."""
    if isinstance(value, str):
        return EscapedString(value) if any(c in _GO_ESCAPED for c in value) else value
    if isinstance(value, dict):
        for k, v in value.items():
            value[k] = mark_go_escapes(v)
    elif isinstance(value, list):
        value[:] = [mark_go_escapes(v) for v in value]
    return value


def go_float_text(value: float) -> str:
    """The text Go's `json.Marshal` writes for a float64 (encoding/json `floatEncoder.encode`): the shortest digits,
    `%f`-style unless the magnitude is below 1e-6 or at least 1e21, then `%e`-style with `e-07` written `e-7`.

    Raises:
        QuantityError: NaN or an infinity (`json: unsupported value: NaN`).
    """
    if not math.isfinite(value):
        name = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")  # strconv.FormatFloat 'g'
        raise QuantityError(f"json: unsupported value: {name}")
    d = Decimal(repr(value)).normalize()
    if value == 0 or 1e-6 <= abs(value) < 1e21:
        return format(d, "f")
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    e = exp + len(digits) - 1
    mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if len(digits) > 1 else "")
    exponent = f"{'-' if e < 0 else '+'}{abs(e):02d}"
    if exponent.startswith("-0"):
        exponent = "-" + exponent[2:]
    return f"{'-' if sign else ''}{mantissa}e{exponent}"


def from_json(value: Any) -> Quantity:
    """`UnmarshalJSON` of a decoded JSON value (see the module docstring): null is zero; a string written with an
    escape is refused (ErrFormatWrong: `parseQuantityString` stops at the backslash of the raw literal), and so is one
    holding a character JSON cannot hold unescaped (a control character, `"`, `\\`); any other string is trimmed of
    Go's spaces and parsed; a number is parsed from its literal (`JSONNumber.text`, else Go's text of it); anything
    else is its JSON text, which does not parse.

    Raises:
        QuantityError: as `parse`.
    """
    if value is None:
        return Quantity(0, 0, "")
    if isinstance(value, str):
        if isinstance(value, EscapedString) or any(c < " " or c in '"\\' for c in value):
            raise QuantityError(FORMAT_WRONG)
        return parse(value.strip(GO_SPACE))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = json.dumps(value)
    elif isinstance(value, JSONNumber):
        text = value.text
    elif isinstance(value, float):
        text = go_float_text(value)
    else:
        text = str(value)
    return parse(text)


def stored(value: Any) -> str:
    """The text kube-apiserver stores for the JSON value `value` of a quantity field.

    Raises:
        QuantityError: as `parse`.
    """
    return str(from_json(value))
