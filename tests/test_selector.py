"""Label selector semantics and validation messages, as Kubernetes defines them."""

from __future__ import annotations

import pytest

from syncer.config.selector import (
    SelectorError,
    from_label_selector,
    label_selector_errors,
    label_value_errors,
    parse,
    qualified_name_errors,
)


@pytest.mark.parametrize(("selector", "labels", "expected"), [
    ({}, {}, True),
    (None, {"a": "b"}, True),
    ({"matchLabels": {"environment": "development"}}, {"environment": "development"}, True),
    ({"matchLabels": {"environment": "development"}}, {"environment": "production"}, False),
    ({"matchLabels": {"environment": "development"}}, {}, False),
    ({"matchExpressions": [{"key": "kubernetes.io/runtime.class", "operator": "In", "values": ["gvisor", "youki"]}]},
     {"kubernetes.io/runtime.class": "youki"}, True),
    ({"matchExpressions": [{"key": "kubernetes.io/runtime.class", "operator": "In", "values": ["gvisor"]}]},
     {}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]}, {}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["prod"]}]}, {"tier": "prod"}, False),
    ({"matchExpressions": [{"key": "sandboxed", "operator": "Exists"}]}, {"sandboxed": ""}, True),
    ({"matchExpressions": [{"key": "sandboxed", "operator": "Exists"}]}, {}, False),
    ({"matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]}, {}, True),
    ({"matchExpressions": [{"key": "legacy", "operator": "DoesNotExist"}]}, {"legacy": "x"}, False),
    # matchLabels and expressions are ANDed (the vcluster docs' combined example)
    ({"matchLabels": {"environment": "development"},
      "matchExpressions": [{"key": "kubernetes.io/runtime.class", "operator": "In", "values": ["gvisor", "youki"]}]},
     {"environment": "development", "kubernetes.io/runtime.class": "kata-fc"}, False),
    ({"matchLabels": {"environment": "development"},
      "matchExpressions": [{"key": "kubernetes.io/runtime.class", "operator": "In", "values": ["gvisor", "youki"]}]},
     {"environment": "development", "kubernetes.io/runtime.class": "gvisor"}, True),
])
def test_matching(selector: dict | None, labels: dict[str, str], expected: bool) -> None:
    assert from_label_selector(selector).matches(labels) is expected


@pytest.mark.parametrize(("expr", "message", "path"), [
    ({"key": "a", "operator": "Foo"}, '"Foo" is not a valid label selector operator', "matchExpressions[0].operator"),
    ({"key": "a", "operator": "In"}, "for 'in', 'notin' operators, values set can't be empty",
     "matchExpressions[0].values"),
    ({"key": "a", "operator": "NotIn", "values": []}, "for 'in', 'notin' operators, values set can't be empty",
     "matchExpressions[0].values"),
    ({"key": "a", "operator": "Exists", "values": ["x"]}, "values set must be empty for exists and does not exist",
     "matchExpressions[0].values"),
    ({"key": "a", "operator": "DoesNotExist", "values": ["x"]},
     "values set must be empty for exists and does not exist", "matchExpressions[0].values"),
])
def test_expression_errors(expr: dict, message: str, path: str) -> None:
    with pytest.raises(SelectorError) as err:
        from_label_selector({"matchExpressions": [expr]})
    assert err.value.reason == message
    assert err.value.path == path


@pytest.mark.parametrize(("key", "fragment"), [
    ("a" * 64, "name part must be no more than 63 characters"),
    ("-bad", "name part must consist of alphanumeric characters"),
    ("Example.com/x", "prefix part a lowercase RFC 1123 subdomain"),
    ("a/b/c", "a qualified name must consist of alphanumeric characters"),
    ("/x", "prefix part must be non-empty"),
    # Go's regexp `$` matches only at the end of the text; Python's also before a last newline
    ("environment\n", "name part must consist of alphanumeric characters"),
    ("example.com\n/x", "prefix part a lowercase RFC 1123 subdomain"),
])
def test_invalid_keys(key: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as err:
        from_label_selector({"matchLabels": {key: "v"}})
    assert err.value.reason.startswith(f'invalid label key "{key}": ')
    assert fragment in err.value.reason


@pytest.mark.parametrize("value", ["x" * 64, "-lead", "trail-", "sp ace", "gold\n"])
def test_invalid_values(value: str) -> None:
    with pytest.raises(SelectorError) as err:
        from_label_selector({"matchExpressions": [{"key": "k", "operator": "In", "values": ["ok", value]}]})
    assert err.value.reason.startswith(f'invalid label value: "{value}": at key: "k": ')
    assert err.value.path == "matchExpressions[0].values[1]"


def test_valid_keys_and_values_are_accepted() -> None:
    sel = from_label_selector({"matchLabels": {"kubernetes.io/runtime.class": "gvisor", "a_b.c-d": "",
                                               "x": "A.b_c-9"}})
    assert sel.matches({"kubernetes.io/runtime.class": "gvisor", "a_b.c-d": "", "x": "A.b_c-9"})


@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("", {"x": "y"}, True),
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a in (x, y),b", {"a": "y", "b": "1"}, True),
    ("a notin (x)", {"a": "x"}, False),
    ("!a", {"a": "x"}, False),
    ("vcluster.loft.sh/managed-by=test", {"vcluster.loft.sh/managed-by": "test"}, True),
])
def test_string_form(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse(text).matches(labels) is expected


def test_string_form_round_trips() -> None:
    sel = from_label_selector({"matchLabels": {"e": "d"}, "matchExpressions": [
        {"key": "k", "operator": "NotIn", "values": ["b", "a"]}, {"key": "x", "operator": "DoesNotExist"}]})
    assert str(sel) == "e in (d),k notin (a,b),!x"
    assert parse(str(sel)) == sel


def test_string_form_syntax_error() -> None:
    with pytest.raises(SelectorError):
        parse("a in x")


# apimachinery pkg/labels/selector.go: Parse's own documented example, and parseValues/parseIdentifiersList: "()" is
# the set {""}, an empty place between commas or before ")" is "" (the sets those functions return)
@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("x in (foo,,baz),y,z notin ()", {"x": "foo", "y": "1"}, True),
    ("x in (foo,,baz),y,z notin ()", {"x": "", "y": "1"}, True),
    ("x in (foo,,baz),y,z notin ()", {"x": "baz", "y": "1", "z": ""}, False),
    ("tier in ()", {"tier": ""}, True),
    ("tier in ()", {"tier": "gold"}, False),
    ("tier in (gold,)", {"tier": ""}, True),
    ("tier in (,gold)", {"tier": "gold"}, True),
])
def test_string_form_empty_values(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse(text).matches(labels) is expected


# refused by labels.Parse (selector.go `parse`: "found '%s', expected: identifier after ','"; parseIdentifiersList:
# "found '%s', expected: ',' or ')'"), and selector_test.go TestSelectorParse's testBadStrings
@pytest.mark.parametrize(("text", "found"), [
    ("tier=gold,", "found '', expected: identifier after ','"),
    ("a=b,,c", "found ',', expected: identifier after ','"),
    ("x in (a b)", "found 'b', expected: ',' or ')'"),
    ("x in (a", "found '', expected: ',' or ')'"),
    ("x=a||y=b", ""),
    ("x==a==b", ""),
    ("!x=a", ""),
])
def test_string_form_refused_as_labels_parse_refuses(text: str, found: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse(text)
    assert found in e.value.reason


# apimachinery's pkg/util/validation (IsQualifiedName, IsValidLabelValue) and RegexError's wording, whole
NAME_RE = "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'"
NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is {NAME_RE})")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                 "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
             "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize(("key", "errors"), [
    # IsQualifiedName (apimachinery pkg/util/validation/validation.go): an empty name part is "must be non-empty",
    # and then does not match the form either
    ("", ["name part must be non-empty", f"name part {NAME_MSG}"]),
    ("a" * 63, []),
    ("a" * 64, ["name part must be no more than 63 characters"]),
    ("/a", ["prefix part must be non-empty"]),
    ("Ex.com/a", [f"prefix part {SUBDOMAIN_MSG}"]),
    ("a" * 253 + "/b", []),
    ("a" * 254 + "/b", ["prefix part must be no more than 253 characters"]),
    ("a/b/c", [f"a qualified name {NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. "
               "'example.com/MyName')"]),
    ("-a", [f"name part {NAME_MSG}"]),
    ("example.com/", ["name part must be non-empty", f"name part {NAME_MSG}"]),
    ("ok.io/x_y.Z-1", []),
], ids=[f"key{i}" for i in range(11)])
def test_label_key_messages(key: str, errors: list[str]) -> None:
    assert qualified_name_errors(key) == errors


@pytest.mark.parametrize(("value", "errors"), [
    ("", []), ("a" * 63, []), ("a" * 64, ["must be no more than 63 characters"]),
    ("-a", [VALUE_MSG]), ("a b", [VALUE_MSG]), ("A_b.c-9", []),
], ids=[f"value{i}" for i in range(6)])
def test_label_value_messages(value: str, errors: list[str]) -> None:
    assert label_value_errors(value) == errors


def test_selector_errors_in_order_with_their_whole_messages() -> None:
    errors = label_selector_errors({"matchLabels": {"a": "b", "Bad Key": "x", "k": "-v"}, "matchExpressions": [
        {"key": "k", "operator": "Foo", "values": []}, {"key": "k", "operator": "In", "values": []},
        {"key": "k", "operator": "NotIn"}, {"key": "k", "operator": "Exists", "values": ["x"]},
        {"key": "k", "operator": "DoesNotExist", "values": ["x"]}, {"key": "Bad Key", "operator": "Exists"},
        {"key": "k", "operator": "In", "values": ["-x"]}]})
    assert [str(e) for e in errors] == [
        f'invalid label key "Bad Key": name part {NAME_MSG}',
        f'invalid label value: "-v": at key: "k": {VALUE_MSG}',
        '"Foo" is not a valid label selector operator',
        "for 'in', 'notin' operators, values set can't be empty",
        "for 'in', 'notin' operators, values set can't be empty",
        "values set must be empty for exists and does not exist",
        "values set must be empty for exists and does not exist",
        f'invalid label key "Bad Key": name part {NAME_MSG}',
        f'invalid label value: "-x": at key: "k": {VALUE_MSG}',
    ]


# apimachinery pkg/labels/selector_test.go: TestSelectorParse's good and bad strings, TestSelectorMatches'
# Gt/Lt cases, TestRequirementSelectorMatching's {"z": "v2"} (a label that is no integer never matches Gt/Lt)
@pytest.mark.parametrize(("text", "labels", "expected"), [
    ("x>1", {"x": "2"}, True), ("x<1", {"x": "0"}, True), ("x>1", {"x": "0"}, False), ("x<1", {"x": "2"}, False),
    ("z>1", {"z": "v2"}, False), ("z>1", {}, False), ("x>1,z<5", {"x": "2", "z": "4"}, True),
    ("x>1,z<5", {"x": "2", "z": "5"}, False), ("x>-1", {"x": "0"}, False),  # "-1" is no label value: refused
], ids=[f"gtlt{i}" for i in range(9)])
def test_the_string_form_has_greater_and_less_than(text: str, labels: dict[str, str], expected: bool) -> None:
    if text == "x>-1":
        with pytest.raises(SelectorError, match="invalid label value"):
            parse(text)
        return
    assert parse(text).matches(labels) is expected


@pytest.mark.parametrize(("text", "message"), [
    ("x<a", "for 'Gt', 'Lt' operators, the value must be an integer"),  # TestSelectorParse's bad string
    ("x>1.1", "for 'Gt', 'Lt' operators, the value must be an integer"),
    ("x>", "for 'Gt', 'Lt' operators, the value must be an integer"),  # parseExactValue: "" at the end
    ("x>99999999999999999999", "for 'Gt', 'Lt' operators, the value must be an integer"),  # over int64
    ("x in (a>b)", "unable to parse requirement: found '>', expected: ',' or ')'"),
])
def test_greater_and_less_than_refuse_what_labels_parse_refuses(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse(text)
    assert message in caught.value.reason


def test_greater_than_is_no_operator_of_a_label_selector_object() -> None:
    # LabelSelectorAsSelector knows In, NotIn, Exists and DoesNotExist only
    with pytest.raises(SelectorError, match='"gt" is not a valid label selector operator'):
        from_label_selector({"matchExpressions": [{"key": "x", "operator": "gt", "values": ["1"]}]})


@pytest.mark.parametrize("text", ["tier=gold\x0b", "tier=gold\u00a0", "tier\u00a0in (gold)", "tier\x1c=gold",
                                  "tier=gold\x0c"])
def test_only_space_tab_cr_and_lf_separate_tokens(text: str) -> None:
    # labels.Parse's isWhitespace: ' ', '\t', '\r', '\n'; any other character is part of an identifier, which is
    # then no valid key or value
    with pytest.raises(SelectorError):
        parse(text)


def test_the_whitespace_labels_parse_skips() -> None:
    # TestSetSelectorParser: "\rx", "foo  in\t (abc)", "x notin\n (abc)"
    assert parse("\rx").matches({"x": ""}) and not parse("\rx").matches({})
    assert parse("foo  in\t (abc)").matches({"foo": "abc"}) and parse("x notin\n (abc)").matches({"x": "d"})


def test_greater_and_less_than_print_as_labels_print_them() -> None:
    assert str(parse("x>2,y<8,z")) == "x>2,y<8,z"  # TestToString
