"""The patch path grammar and its resolution against an object (behaviour.md section 5).

Grammar: segments separated by dots; `[N]` indexes a list; `[*]` or `*` is a wildcard over list items
or map values (several allowed); `["key.with/dots"]` (or single quotes) is a quoted key. Examples:
`handler`, `metadata.labels["example.com/tier"]`, `scheduling.tolerations[*].key`, `metadata.labels.*`.

Resolution: a missing intermediate segment means the patch does not apply there. A plain last key is
patched only when present; a bracketed (quoted) last key is patched even when absent (`valueExists`
false), so it can create the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_PLAIN = re.compile(r"[A-Za-z0-9_\-]+")
_MISSING = object()


class PathError(ValueError):
    """A path that does not parse; `position` is the 0-based character index of the problem."""

    def __init__(self, path: str, position: int, reason: str) -> None:
        super().__init__(f"invalid path {path!r} at position {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


@dataclass(frozen=True)
class Key:
    """A map key; `bracketed` when written as `["..."]`."""

    name: str
    bracketed: bool = False


@dataclass(frozen=True)
class Index:
    """A list index `[N]`."""

    index: int


@dataclass(frozen=True)
class Wildcard:
    """`*` or `[*]`: every list item or map value."""


Segment = Key | Index | Wildcard


def parse(path: str) -> tuple[Segment, ...]:
    """Parse a patch path.

    Raises:
        PathError: with the position and what was expected there.
    """
    segs: list[Segment] = []
    i, n = 0, len(path)
    if not path:
        raise PathError(path, 0, "the path is empty")
    expect_segment = True  # at the start or after a dot
    while i < n:
        c = path[i]
        if c == "[":
            close_search = i + 1
            if close_search < n and path[close_search] in "\"'":
                quote = path[close_search]
                j, buf = close_search + 1, []
                while j < n and path[j] != quote:
                    if path[j] == "\\" and j + 1 < n:
                        j += 1
                    buf.append(path[j])
                    j += 1
                if j >= n:
                    raise PathError(path, close_search, "unterminated quote")
                if j + 1 >= n or path[j + 1] != "]":
                    raise PathError(path, j + 1, "expected ']' after the quoted key")
                segs.append(Key("".join(buf), bracketed=True))
                i = j + 2
            else:
                j = path.find("]", i)
                if j < 0:
                    raise PathError(path, i, "unterminated '['")
                inner = path[i + 1:j].strip()
                if inner == "*":
                    segs.append(Wildcard())
                elif inner.isdigit():
                    segs.append(Index(int(inner)))
                else:
                    raise PathError(path, i + 1, f"expected a number, '*' or a quoted key inside [], got {inner!r}")
                i = j + 1
            expect_segment = False
        elif c == ".":
            if expect_segment:
                raise PathError(path, i, "empty segment")
            expect_segment = True
            i += 1
        elif c == "*":
            if not expect_segment:
                raise PathError(path, i, "expected '.' or '[' before '*'")
            segs.append(Wildcard())
            expect_segment = False
            i += 1
        else:
            m = _PLAIN.match(path, i)
            if m is None:
                raise PathError(path, i, f"unexpected character {c!r} (quote keys with other characters: "
                                         '["key"])')
            if not expect_segment:
                raise PathError(path, i, "expected '.' or '[' between segments")
            segs.append(Key(m.group(0)))
            expect_segment = False
            i = m.end()
    if expect_segment:
        raise PathError(path, n, "the path ends with '.'")
    return tuple(segs)


def _fmt_key(prefix: str, key: str) -> str:
    if _PLAIN.fullmatch(key):
        return f"{prefix}.{key}" if prefix else key
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'{prefix}["{escaped}"]'


@dataclass
class Match:
    """One place a path resolved to: the concrete path (`context.path`), the container holding it
    (a dict or list), the key or index in it, and the current value (`exists` False when a bracketed
    last key is absent)."""

    path: str
    container: dict[str, Any] | list[Any]
    key: str | int
    value: Any
    exists: bool


def resolve(obj: Any, segments: tuple[Segment, ...]) -> list[Match]:
    """Every place `segments` reaches in `obj`, in document order (see the module rules)."""
    frontier: list[tuple[str, Any, Any, Any]] = [("", None, None, obj)]
    for pos, seg in enumerate(segments):
        last = pos == len(segments) - 1
        nxt: list[tuple[str, Any, Any, Any]] = []
        for prefix, _, _, node in frontier:
            if isinstance(seg, Wildcard):
                if isinstance(node, list):
                    nxt.extend((f"{prefix}[{i}]", node, i, v) for i, v in enumerate(node))
                elif isinstance(node, dict):
                    nxt.extend((_fmt_key(prefix, k), node, k, v) for k, v in node.items())
            elif isinstance(seg, Index):
                if isinstance(node, list) and seg.index < len(node):
                    nxt.append((f"{prefix}[{seg.index}]", node, seg.index, node[seg.index]))
            elif isinstance(node, dict):
                if seg.name in node:
                    nxt.append((_fmt_key(prefix, seg.name), node, seg.name, node[seg.name]))
                elif last and seg.bracketed:
                    nxt.append((_fmt_key(prefix, seg.name), node, seg.name, _MISSING))
        frontier = nxt
    return [Match(p, c, k, None if v is _MISSING else v, v is not _MISSING) for p, c, k, v in frontier]


def _segments_compatible(a: Segment, b: Segment) -> bool:
    """Whether two segments can name the same place: a wildcard names anything; two indexes may name the
    same item once an earlier item is deleted; two keys only when equal (quoted or not)."""
    if isinstance(a, Wildcard) or isinstance(b, Wildcard):
        return True
    if isinstance(a, Index) and isinstance(b, Index):
        return True
    return isinstance(a, Key) and isinstance(b, Key) and a.name == b.name


def segments_overlap(a: tuple[Segment, ...], b: tuple[Segment, ...]) -> bool:
    """Whether two parsed paths can reach the same place, or one the inside of the other.

    Args:
        a, b: parsed paths (`parse`).
    Returns:
        True when every segment pair over the shorter length is compatible (a wildcard reaches anything;
        `metadata["name"]` and `metadata.name` are the same place).
    """
    return all(_segments_compatible(x, y) for x, y in zip(a, b, strict=False))


def reaches(path: tuple[Segment, ...], field: tuple[Segment, ...]) -> bool:
    """Whether a patch at `path` can write `field` itself or a map or list holding it (replacing the
    holder replaces the field): `path` is no longer than `field` and compatible with it segment by
    segment. `metadata`, `*`, `metadata.*`, `*.name` and `metadata["name"]` all reach `metadata.name`;
    `metadata.labels.*` and `*.labels` do not.

    Args:
        path: a patch's parsed path.
        field: the parsed path of a protected field (plain keys).
    Returns:
        True when a value written at `path` can be, or contain, `field`.
    """
    return len(path) <= len(field) and segments_overlap(path, field)
