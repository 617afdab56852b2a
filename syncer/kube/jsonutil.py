"""JSON encoding, decoding and copying of API objects, with orjson (a C library several times faster
than the standard library's `json` and `copy.deepcopy` for this data; every object the syncer reads or
writes passes through here).

All three work on JSON data only (dicts with string keys, lists, str, int within 64 bits, float, bool,
None), which is all an API server sends (Kubernetes integers are int64). Text orjson refuses but the
standard library reads (a lone surrogate escape, NaN) is decoded by the standard library instead.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import orjson

T = TypeVar("T")

def loads(data: bytes | str) -> Any:
    """Decode JSON text. Raises ValueError on malformed input."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # what orjson is stricter about; raises ValueError when truly malformed


def dumps(obj: Any) -> bytes:
    """Encode JSON data as compact UTF-8 bytes. Raises TypeError for what is not JSON data."""
    return orjson.dumps(obj)


# What Go's encoding/json writes as escapes and orjson writes as they are (json.Marshal is HTML-safe, and escapes the
# JavaScript line terminators): (UTF-8 bytes, escape). Each occurs only inside strings, so the bytes are replaced.
_GO_ESCAPES = ((b"&", b"\\u0026"), (b"<", b"\\u003c"), (b">", b"\\u003e"), ("\u2028".encode(), b"\\u2028"),
               ("\u2029".encode(), b"\\u2029"))


def dumps_go(obj: Any) -> bytes:
    """Encode JSON data as Go's encoding/json does (`json.Marshal`): compact, with `&`, `<`, `>`, U+2028 and U+2029
    in strings written `\\u0026`, `\\u003c`, `\\u003e`, `\\u2028`, `\\u2029`. For JSON patches: kube-apiserver
    before 1.35 compares a `test` of a string byte for byte with its own encoding of the object
    (`lazyNode.equal` of gopkg.in/evanphx/json-patch.v4 v4.12.0; v4.13.0 decodes strings first), so a value holding
    `&` (a URL's query) written as it is never tests equal. Raises TypeError for what is not JSON data."""
    data = orjson.dumps(obj)
    for raw, escaped in _GO_ESCAPES:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def dumps_compact(obj: Any) -> bytes:
    """`dumps`, in a bytes object of exactly its size, for keeping: orjson's own result holds on to its
    4 KiB working buffer whatever the length of the text."""
    return bytes(memoryview(orjson.dumps(obj)))


def copy_json(obj: T) -> T:
    """A deep copy of JSON data (no shared dicts or lists with `obj`)."""
    copied: T = orjson.loads(orjson.dumps(obj))
    return copied
