"""Quantities read as apimachinery reads them (`syncer.patches.fields.parse_quantity_text` for `resource.ParseQuantity`,
`parse_quantity` for `Quantity.UnmarshalJSON` of what the syncer writes), and vcluster's initContainer resources read
as vcluster's YAML and `parseResources` read them.

Expected values are literals. Those under "Go's tables" are copied from kubernetes/apimachinery
pkg/api/resource/quantity_test.go (master eed236ce): `decQuantity(i, e, ...)` is i * 10^e, `maxAllowed` is 2^63-1.
The others are read from quantity.go / suffix.go / go.yaml.in/yaml/v2 resolve.go, as each comment says.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from syncer.config.model import ConfigError, GoYAMLBoolean, GoYAMLNumber, parse_config, yaml_document
from syncer.patches.fields import QuantityError, parse_quantity, parse_quantity_text, spec_problem, stored_view

FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC_WRONG = "unable to parse numeric part of quantity"
SUFFIX_WRONG = "unable to parse quantity's suffix"
MAX_INT64 = "9223372036854775807"

# ---------------------------------------------------------------- Go's tables

# quantity_test.go TestQuantityParse `table`: input -> decQuantity(i, e) written as a decimal
GO_VALID = [
    ("0", "0"), ("0n", "0"), ("0u", "0"), ("0m", "0"), ("0Ki", "0"), ("0k", "0"), ("0Mi", "0"), ("0M", "0"),
    ("0Gi", "0"), ("0G", "0"), ("0Ti", "0"), ("0T", "0"),
    ("1", "1"),
    ("1Ki", "1024"), ("8Ki", "8192"), ("7Mi", "7340032"), ("6Gi", "6442450944"), ("5Ti", "5497558138880"),
    ("4Pi", "4503599627370496"), ("3Ei", "3458764513820540928"), ("10Ti", "10995116277760"),
    ("100Ti", "109951162777600"),
    ("5n", "0.000000005"), ("4u", "0.000004"), ("3m", "0.003"), ("9", "9"), ("8k", "8000"), ("50k", "50000"),
    ("7M", "7000000"), ("6G", "6000000000"), ("5T", "5000000000000"), ("40T", "40000000000000"),
    ("300T", "300000000000000"), ("2P", "2000000000000000"), ("1E", "1000000000000000000"),
    ("1E-3", "0.001"), ("1e3", "1000"), ("1E6", "1000000"), ("1e9", "1000000000"), ("1E12", "1000000000000"),
    ("1e15", "1000000000000000"), ("1E18", "1000000000000000000"), ("1e14", "100000000000000"),
    ("1e13", "10000000000000"), ("100.035k", "100035"),
    ("0.001", "0.001"), ("0.0005k", "0.5"), ("0.005", "0.005"), ("0.05", "0.05"), ("0.5", "0.5"),
    ("0.00050k", "0.5"), ("0.00500", "0.005"), ("0.05000", "0.05"), ("0.50000", "0.5"), ("0.5e0", "0.5"),
    ("0.5e-1", "0.05"), ("0.5e-2", "0.005"), ("10.035M", "10035000"),
    ("1.2e3", "1200"), ("1.3E+6", "1300000"), ("1.40e9", "1400000000"), ("1.53E12", "1530000000000"),
    ("1.6e15", "1600000000000000"), ("1.7E18", "1700000000000000000"),
    ("9.01", "9.01"), ("8.1k", "8100"), ("7.123456M", "7123456"), ("6.987654321G", "6987654321"),
    ("5.444T", "5444000000000"), ("40.1T", "40100000000000"), ("300.2T", "300200000000000"),
    ("2.5P", "2500000000000000"), ("1.01E", "1010000000000000000"),
    # "Things that saturate/round"
    ("3.001n", "0.000000004"), ("1.1E-9", "0.000000002"), ("0.0000000001", "0.000000001"),
    ("0.0000000005", "0.000000001"), ("0.00000000050", "0.000000001"), ("0.5e-9", "0.000000001"),
    ("0.9n", "0.000000001"), ("0.00000012345", "0.000000124"), ("0.00000012354", "0.000000124"),
    ("9Ei", MAX_INT64), ("9223372036854775807Ki", MAX_INT64), ("12E", "12000000000000000000"),
    # "We'll accept fractional binary stuff, too."
    ("100.035Ki", "102435.84"), ("0.5Mi", "524288"), ("0.05Gi", "53687091.2"), ("0.025Ti", "27487790694.4"),
    # "Things written by trolls"
    ("0.000000000001Ki", "0.000000002"), (".001", "0.001"), (".0001k", "0.1"), ("1.", "1"), ("1.G", "1000000000"),
]

# quantity_test.go TestQuantityParse `invalid` (with its first check, the empty string)
GO_INVALID = ["", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 "]

# quantity_test.go TestParseQuantity: input -> wantAsDec (a decimal quantity is not capped at 2^63-1)
GO_WIDE = [
    ("999999999999999999.1", "999999999999999999.1"), ("-9999999999999999999", "-9999999999999999999"),
    ("1.0000000000000000001E", "1000000000000000000.1"), ("-10000000000000000000000m", "-10000000000000000000"),
    ("10.000000000000000001E", "10000000000000000001"), ("-9223372036854775809", "-9223372036854775809"),
    ("9223372036854775808", "9223372036854775808"), ("9223372036854775808.1", "9223372036854775808.1"),
    ("-9223372036854775808000m", "-9223372036854775808"),
]

# quantity_test.go TestQuantityParseEmit: input -> the canonical string, as a decimal
GO_EMIT = [("1024Mi", "1073741824"), ("1000M", "1000000000"), (".001Ki", "1.024"), (".000001Ki", "0.001024"),
           (".000000001Ki", "0.000001024"), (".000000000001Ki", "0.000000002")]


@pytest.mark.parametrize(("text", "value"), GO_VALID)
def test_go_table_values(text: str, value: str) -> None:
    assert parse_quantity_text(text) == Fraction(value)
    # TestQuantityParse: "Try the negative version of everything", "Try everything with an explicit +"
    assert parse_quantity_text("-" + text) == -Fraction(value)
    assert parse_quantity_text("+" + text) == Fraction(value)


@pytest.mark.parametrize(("text", "value"), GO_WIDE + GO_EMIT)
def test_go_wide_and_emitted_values(text: str, value: str) -> None:
    assert parse_quantity_text(text) == Fraction(value)


@pytest.mark.parametrize("text", GO_INVALID)
def test_go_table_invalid(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity_text(text)


def test_go_parse_quantity_string_table() -> None:
    # TestParseQuantityString: "." and "-." scan as num "0", no denominator, no suffix: zero
    assert parse_quantity_text(".") == 0
    assert parse_quantity_text("-.") == 0


@pytest.mark.parametrize(("raw", "value"), [(" 1", 1), ("1 ", 1), (1, 1), (10, 10), (-1, -1)])
def test_go_json_whitespace_table(raw: str | int, value: int) -> None:
    # TestJSONWhitespace: UnmarshalJSON trims what ParseQuantity refuses (`" 1"`, `"1 "`)
    assert parse_quantity(raw) == value


# ---------------------------------------------------------------- read from Go's source


def test_a_binary_quantity_is_capped_and_a_decimal_one_is_not() -> None:
    # quantity.go ParseQuantity: "The max is just a simple cap" (format == BinarySI), the sign put back afterwards
    assert parse_quantity_text("8Ei") == Fraction(MAX_INT64)
    assert parse_quantity_text("-9Ei") == -Fraction(MAX_INT64)
    assert parse_quantity_text("7.9999999999999999999Ei") == Fraction(MAX_INT64)
    assert parse_quantity_text("10E") == Fraction("10000000000000000000")
    assert parse_quantity_text("1e19") == Fraction("10000000000000000000")


def test_an_exponent_beyond_nano_rounds_up_to_one_nano() -> None:
    # quantity.go ParseQuantity: scale -20 < Nano takes the inf.Dec path, which rounds a non-zero value up to 1n
    assert parse_quantity_text("1e-20") == Fraction("0.000000001")
    assert parse_quantity_text("-1e-20") == Fraction("-0.000000001")
    assert parse_quantity_text("0e-20") == 0
    assert parse_quantity_text("1e-10001") == Fraction("0.000000001")
    assert parse_quantity_text("-12345e-99999") == Fraction("-0.000000001")
    # the syncer's own limit: Go takes 1e10001 (the int64 path keeps scale 10001), the syncer does not compute it
    with pytest.raises(QuantityError, match="may not be beyond 10000"):
        parse_quantity_text("1e10001")
    assert parse_quantity(1e-20) == Fraction("0.000000001")  # a JSON number: its text, 1e-20


@pytest.mark.parametrize("text", ["e-10", "e-20", "-e-20", ".e-10", "Pi", "Ei", "+Ei", ".Pi", "-.Ei"])
def test_a_number_without_digits_on_the_inf_dec_path_is_err_numeric(text: str) -> None:
    # quantity.go ParseQuantity: without digits the numerator is "0"; the int64 path is not taken for a decimal
    # scale finer than Nano, nor for Pi/Ei (precision 15-1-15-1 and 15-1-18-1 < 0), and inf.Dec's SetString of the
    # number's text ("", "-", ".") fails: "no digits read" -> ErrNumeric
    with pytest.raises(QuantityError, match=NUMERIC_WRONG):
        parse_quantity_text(text)


@pytest.mark.parametrize("text", ["e-9", "Ti", "Ki", "k", "-", "+.", ".n"])
def test_a_number_without_digits_on_the_int64_path_is_zero(text: str) -> None:
    # quantity.go ParseQuantity: the int64 path parses the numerator "0" and never reads the number's text
    assert parse_quantity_text(text) == 0


def test_an_exponent_is_an_int64_cut_to_int32() -> None:
    # suffix.go interpret: strconv.ParseInt(suffix[1:], 10, 64), ErrSuffix when it fails; then int32(parsed)
    assert parse_quantity_text("1e4294967296") == 1  # 2^32 -> 0
    assert parse_quantity_text("1e4294967299") == 1000  # 2^32 + 3 -> 3
    assert parse_quantity_text("1e9223372036854775807") == Fraction("0.1")  # 2^63 - 1 -> -1
    with pytest.raises(QuantityError, match=SUFFIX_WRONG):
        parse_quantity_text("1e9223372036854775808")
    with pytest.raises(QuantityError, match=SUFFIX_WRONG):
        parse_quantity_text("1ee3")  # suffix "ee3": ParseInt("e3") fails


def test_json_null_and_values_the_syncer_writes_as_null_are_zero() -> None:
    # quantity.go UnmarshalJSON: `null` leaves the zero Quantity; orjson writes NaN and infinities as null
    assert parse_quantity(None) == 0
    assert parse_quantity(float("nan")) == 0
    assert parse_quantity(float("inf")) == 0


@pytest.mark.parametrize("text", ["\u00a0500m", "500m\u3000", "\u2028500m", "\x85500m", " 500m "])
def test_json_strings_lose_the_spaces_go_trims(text: str) -> None:
    # UnmarshalJSON: strings.TrimSpace (unicode.IsSpace); these reach it unescaped from orjson
    assert parse_quantity(text) == Fraction(1, 2)


@pytest.mark.parametrize("text", ["\t500m", "500m\n", "\x1c500m", "500m\x1f", "\v500m"])
def test_json_strings_keep_control_characters(text: str) -> None:
    # orjson writes U+0000..U+001F as escapes, so ParseQuantity gets a backslash; Python's strip would also take
    # U+001C..U+001F, which Go's unicode.IsSpace does not
    with pytest.raises(QuantityError, match="regular expression"):
        parse_quantity(text)
    with pytest.raises(QuantityError, match="regular expression"):
        parse_quantity_text(text)  # ParseQuantity itself trims nothing


# ---------------------------------------------------------------- where the syncer uses them


def test_a_capped_hugepages_overhead_is_no_multiple_of_its_page() -> None:
    # ValidateResourceRequirements via IsHugePageResourceValueDivisible: Value() of the capped 2^63-1 is odd
    rc = {"overhead": {"podFixed": {"memory": "1Gi", "hugepages-2Mi": "9Ei"}}}
    assert spec_problem(rc) == ('the result at overhead.podFixed["hugepages-2Mi"] "9Ei" is not positive integer '
                                "multiple of hugepages-2Mi")
    assert spec_problem({"overhead": {"podFixed": {"memory": "1Gi", "hugepages-2Mi": "4Ei"}}}) is None


def test_a_capped_quantity_compares_equal_to_what_is_stored() -> None:
    # CanonicalizeBytes of the capped BinarySI 2^63-1: not a multiple of 1024, written without a suffix
    desired = {"handler": "runsc", "overhead": {"podFixed": {"memory": "9Ei"}}}
    stored = {"handler": "runsc", "overhead": {"podFixed": {"memory": MAX_INT64}}}
    assert stored_view(desired) == stored_view(stored)


def test_a_null_quantity_is_taken_and_stored_as_zero() -> None:
    desired = {"handler": "runsc", "overhead": {"podFixed": {"cpu": None}}}
    assert spec_problem(desired) is None
    assert stored_view(desired) == stored_view({"handler": "runsc", "overhead": {"podFixed": {"cpu": "0"}}})


def test_a_quantity_with_a_control_character_is_refused_before_writing() -> None:
    problem = spec_problem({"overhead": {"podFixed": {"cpu": "500m\n"}}})
    assert problem == f'the result at overhead.podFixed["cpu"] is not a quantity "500m\\n": {FORMAT_WRONG}'
    assert spec_problem({"overhead": {"podFixed": {"cpu": " 500m"}}}) is None


# ---------------------------------------------------------------- vcluster's initContainer resources

RESOURCES = "sync.toHost.pods.rewriteHosts.initContainer.resources"


def _config_errors(limits: str) -> list[str]:
    text = ("sync:\n  toHost:\n    pods:\n      enabled: false\n      rewriteHosts:\n        initContainer:\n"
            f"          resources:\n            limits: {limits}\n")
    try:
        parse_config(yaml_document(text.encode(), "vc.yaml"))
    except ConfigError as e:
        return e.errors
    return []


def test_parse_resources_trims_nothing() -> None:
    # translator.go parseResources calls resource.ParseQuantity on the string as it is
    assert _config_errors('{cpu: " 30m"}') == [
        f'invalid {RESOURCES}.limits.cpu: " 30m" is not a quantity: {FORMAT_WRONG}']


@pytest.mark.parametrize("plain", ["1e3", "1e-07", "1e+21", "1.5e3", "+.5", "-.5", ".5e3", "1.e3", "09"])
def test_an_unquoted_value_go_reads_as_a_number_is_refused(plain: str) -> None:
    # go.yaml.in/yaml/v2 resolve.go (under sigs.k8s.io/yaml v1.6.0, vcluster's config reader): yamlStyleFloat
    # matches, so vcluster has a float64 and parseResources says "resource value of cpu is not a string";
    # PyYAML (YAML 1.1) reads each as a string
    assert isinstance(yaml_document(f"v: {plain}".encode(), "x")["v"], GoYAMLNumber)
    assert _config_errors(f"{{cpu: {plain}}}") == [
        f'invalid {RESOURCES}.limits.cpu: expected a string, got the number {plain} (unquoted, vcluster\'s YAML '
        f'reads a number; quote it: "{plain}")']
    assert _config_errors(f'{{cpu: "{plain}"}}') == []


def test_an_unquoted_n_is_a_boolean_to_go() -> None:
    # resolve.go resolveMapList: "n" is false; ParseQuantity("n") would be 0
    assert isinstance(yaml_document(b"v: n", "x")["v"], GoYAMLBoolean)
    assert _config_errors("{cpu: n}") == [
        f'invalid {RESOURCES}.limits.cpu: expected a string, got the boolean n (unquoted, vcluster\'s YAML reads a '
        'boolean; quote it: "n")']
    assert _config_errors('{cpu: "n"}') == []


def test_values_both_yamls_read_alike_are_unchanged() -> None:
    # `1e400` is beyond float64: strconv.ParseFloat fails and resolve.go leaves a string, a quantity (10^400)
    assert _config_errors("{cpu: 1e400, memory: 64Mi}") == []
    assert _config_errors("{cpu: !!str 1e3}") == []  # an explicit string tag: a string to both
    assert type(yaml_document(b"v: 1e", "x")["v"]) is str
    assert type(yaml_document(b"v: _1e3", "x")["v"]) is str  # resolve.go looks only after a sign, digit or dot


def test_a_number_of_thousands_of_digits_is_a_quantity_error_not_a_crash() -> None:
    # Go's ParseQuantity reads any number of digits; Python's int() raises ValueError beyond 4300, which escaped the
    # RuntimeClass reconcile (a tenant's copy with such an overhead was never put back): now a QuantityError, so
    # stored_view compares the text and the copy is restored
    with pytest.raises(QuantityError, match="more than 4000 digits"):
        parse_quantity_text("1" * 4301)
    with pytest.raises(QuantityError):
        parse_quantity_text("1e" + "9" * 5000)  # beyond int64: strconv.ParseInt's ErrSuffix
    assert parse_quantity_text("1e" + "0" * 30 + "3") == 1000  # leading zeros: ParseInt reads 3
    copy = {"handler": "runsc", "overhead": {"podFixed": {"cpu": "1" * 4301}}}
    assert stored_view(copy)["overhead"]["podFixed"]["cpu"] == "1" * 4301
