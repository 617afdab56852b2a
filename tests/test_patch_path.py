"""The patch path grammar and resolution rules (behaviour.md section 5)."""

from __future__ import annotations

import pytest

from syncer.patches.path import Index, Key, PathError, Wildcard, parse, resolve

OBJ = {
    "handler": "runsc",
    "metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"example.com/team": "x"}},
    "scheduling": {"tolerations": [{"key": "k1", "effect": "NoSchedule"}, {"key": "k2"}]},
}


def paths(path: str) -> list[tuple[str, object, bool]]:
    return [(m.path, m.value, m.exists) for m in resolve(OBJ, parse(path))]


def test_parse_forms() -> None:
    assert parse("handler") == (Key("handler"),)
    assert parse('metadata.annotations["example.com/team"]') == (
        Key("metadata"), Key("annotations"), Key("example.com/team", bracketed=True))
    assert parse("a[0].b[*].c.*") == (Key("a"), Index(0), Key("b"), Wildcard(), Key("c"), Wildcard())
    assert parse("['x.y']") == (Key("x.y", bracketed=True),)


@pytest.mark.parametrize(("path", "position", "fragment"), [
    ("", 0, "empty"),
    ("a..b", 2, "empty segment"),
    ("a.", 2, "ends with '.'"),
    ('a["x', 2, "unterminated quote"),
    ("a[x]", 2, "expected a number"),
    ("a[0", 1, "unterminated '['"),
    ("a b", 1, "unexpected character"),
    ('a["x"]b', 6, "expected '.' or '['"),
])
def test_parse_errors_have_positions(path: str, position: int, fragment: str) -> None:
    with pytest.raises(PathError) as err:
        parse(path)
    assert err.value.position == position and fragment in err.value.reason


def test_resolution_rules() -> None:
    assert paths("handler") == [("handler", "runsc", True)]
    assert paths("scheduling.tolerations[1].key") == [("scheduling.tolerations[1].key", "k2", True)]
    assert paths("scheduling.tolerations[*].key") == [("scheduling.tolerations[0].key", "k1", True),
                                                      ("scheduling.tolerations[1].key", "k2", True)]
    assert paths("metadata.labels.*") == [("metadata.labels.a", "1", True), ("metadata.labels.b", "2", True)]
    assert paths('metadata.annotations["example.com/team"]') == [
        ('metadata.annotations["example.com/team"]', "x", True)]
    # a plain last key applies only when present; a bracketed one also when absent
    assert paths("scheduling.tolerations[*].effect") == [("scheduling.tolerations[0].effect", "NoSchedule", True)]
    assert paths('scheduling.tolerations[*]["effect"]') == [
        ("scheduling.tolerations[0].effect", "NoSchedule", True), ("scheduling.tolerations[1].effect", None, False)]
    # a missing intermediate segment: the patch does not apply
    assert paths("overhead.podFixed.cpu") == []
    assert paths('overhead["podFixed"]') == []
    assert paths("scheduling.tolerations[5].key") == []


# Every error of the grammar, with its whole message: what a user reads in `validate`'s output.
PARSE_ERRORS = [
    ("", "invalid path '' at position 0: the path is empty"),
    ("a..b", "invalid path 'a..b' at position 2: empty segment"),
    (".a", "invalid path '.a' at position 0: empty segment"),
    ("a.", "invalid path 'a.' at position 2: the path ends with '.'"),
    ('a["x', """invalid path 'a["x' at position 2: unterminated quote"""),
    ("a['x", """invalid path "a['x" at position 2: unterminated quote"""),
    ('a["x"', """invalid path 'a["x"' at position 5: expected ']' after the quoted key"""),
    ('a["x"b', """invalid path 'a["x"b' at position 5: expected ']' after the quoted key"""),
    ("a[x]", "invalid path 'a[x]' at position 2: expected a number, '*' or a quoted key inside [], got 'x'"),
    ("a[-1]", "invalid path 'a[-1]' at position 2: expected a number, '*' or a quoted key inside [], got '-1'"),
    ("a[0", "invalid path 'a[0' at position 1: unterminated '['"),
    ("a[", "invalid path 'a[' at position 1: unterminated '['"),
    ("a b", """invalid path 'a b' at position 1: unexpected character ' ' (quote keys with other characters: """
            """["key"])"""),
    ('a["x"]b', """invalid path 'a["x"]b' at position 6: expected '.' or '[' between segments"""),
    ("a[0]*", "invalid path 'a[0]*' at position 4: expected '.' or '[' before '*'"),
]


@pytest.mark.parametrize(("path", "message"), PARSE_ERRORS, ids=[f"error{i}" for i in range(len(PARSE_ERRORS))])
def test_parse_error_messages(path: str, message: str) -> None:
    with pytest.raises(PathError) as err:
        parse(path)
    assert str(err.value) == message and err.value.path == path


@pytest.mark.parametrize(("path", "segments"), [
    ('a["x\\"y"]', (Key("a"), Key('x"y', bracketed=True))),  # an escaped quote inside the key
    ("a['it\\'s']", (Key("a"), Key("it's", bracketed=True))),
    ('a["back\\\\slash"]', (Key("a"), Key("back\\slash", bracketed=True))),
    ('["a"]["b"]', (Key("a", bracketed=True), Key("b", bracketed=True))),
    ("a[ 12 ]", (Key("a"), Index(12))),
    ("a[ * ]", (Key("a"), Wildcard())),
    ("*.b", (Wildcard(), Key("b"))),
    ("a.*.b", (Key("a"), Wildcard(), Key("b"))),
    ("A-z_9", (Key("A-z_9"),)),
    ('x["a.b/c"].y', (Key("x"), Key("a.b/c", bracketed=True), Key("y"))),
], ids=lambda v: "case" if isinstance(v, str) else "want")
def test_parse_quoted_escaped_and_spaced_forms(path: str, segments: tuple[object, ...]) -> None:
    assert parse(path) == segments
