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
- A JSON number is read as its text (here: Python's text of it, so a float written `1e3` reads as `1000.0`); JSON
  null is the zero quantity, written `0`.

`kubesim/qos.py` has its own lenient `parse_quantity` for the QoS class; this module is the exact one, for what is
validated and stored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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


def from_json(value: Any) -> Quantity:
    """`UnmarshalJSON` of a decoded JSON value: a string (surrounding whitespace trimmed), a number as its text, null
    as zero; anything else is its JSON text, which does not parse.

    Raises:
        QuantityError: as `parse`.
    """
    if value is None:
        return Quantity(0, 0, "")
    if isinstance(value, str):
        text = value
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        text = json.dumps(value)
    else:
        text = repr(value)
    return parse(text.strip())


def stored(value: Any) -> str:
    """The text kube-apiserver stores for the JSON value `value` of a quantity field.

    Raises:
        QuantityError: as `parse`.
    """
    return str(from_json(value))
