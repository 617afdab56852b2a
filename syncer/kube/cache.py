"""The in-memory cache an informer keeps current (client-go's `cache.Indexer`).

Objects are stored after a `transform` that keeps only the fields the reconcilers read (and always
drops `managedFields`), then packed (`Packed`): of the top-level fields named in `packed` (a pod's
`metadata`, `spec` and `status`, say) only the sub-fields that event handlers and indexes read stay
decoded, in one flat tuple, and the rest is kept as compact JSON bytes. A Python dict tree costs about five
times its JSON text, and a reconcile decodes the one object it works on (`full`) in microseconds. Objects
are keyed like client-go's `MetaNamespaceKeyFunc` (`namespace/name`, or `name` for cluster-scoped
objects). Named indexes map an index value to the keys of the objects that carry it (e.g. virtual pods by
`spec.runtimeClassName`), so a lookup costs the size of the answer, not of the cache.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from syncer.kube import jsonutil

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]
IndexFunc = Callable[["Cached"], list[str]]


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name` for namespaced objects, `name` otherwise.

    Raises:
        ValueError: the object has no metadata.name.
    """
    if isinstance(obj, Packed):
        name, ns = obj.sub("metadata", "name"), obj.sub("metadata", "namespace")
        if not isinstance(name, str) or not name:
            raise ValueError("object has no metadata.name")
        return f"{ns}/{name}" if ns else name
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{ns}/{name}" if ns else name


def resource_version(obj: Mapping[str, Any] | None) -> str:
    """metadata.resourceVersion of an object, "" when it has none (or is None)."""
    if isinstance(obj, Packed):
        return str(obj.sub("metadata", "resourceVersion") or "")
    meta = obj.get("metadata") if obj is not None else None
    return str(meta.get("resourceVersion") or "") if isinstance(meta, Mapping) else ""


def split_key(key: str) -> tuple[str | None, str]:
    """Inverse of object_key: (namespace or None, name)."""
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: drop metadata.managedFields (large, never read)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


_MISSING: Any = object()  # a kept sub-field the object does not have
_SHARED_MAX_BYTES = 64  # small packed values (apiVersion/kind, a pending pod's status) are shared ...
_SHARED_MAX_ENTRIES = 4096  # ... up to this many distinct ones per layout
_INTERNED = frozenset({"namespace", "runtimeClassName", "nodeName"})  # kept values many objects repeat


class Layout:
    """The shape of packed objects: top-level field -> the sub-fields left decoded.

    E.g. `Layout({"metadata": ("name", "namespace"), "spec": ("nodeName",)})`. A `Packed` object holds one
    flat tuple: the JSON of every top-level field not in the layout, then for each layout field the JSON of
    its other sub-fields followed by the kept sub-fields' values.
    """

    __slots__ = ("_decoded", "_shared", "absent", "fields", "kept", "slots")

    def __init__(self, fields: Mapping[str, tuple[str, ...]]) -> None:
        self.fields = tuple((name, tuple(keep)) for name, keep in fields.items())
        self.slots: dict[str, tuple[int, tuple[str, ...]]] = {}  # field -> (slot of its rest's JSON, kept)
        self.kept: dict[tuple[str, str], tuple[int, int]] = {}  # (field, sub-field) -> (rest's slot, its slot)
        slot = 1
        for name, keep in self.fields:
            self.slots[name] = (slot, keep)
            for i, sub in enumerate(keep):
                self.kept[(name, sub)] = (slot, slot + 1 + i)
            slot += 1 + len(keep)
        self._shared: dict[bytes, bytes] = {}
        self._decoded: dict[bytes, dict[str, Any]] = {}  # shared encodings of scalars only, decoded
        # the slots of a field the object lacks (or that is not a JSON object: then kept with the others)
        self.absent = {name: [None] + [_MISSING] * len(keep) for name, keep in self.fields}

    def decode(self, data: bytes) -> dict[str, Any]:
        """A new dict of the JSON object `data` (one this layout packed). A shared encoding whose values are
        all scalars is decoded once and copied after that."""
        decoded = self._decoded.get(data)
        if decoded is not None:
            return dict(decoded)
        value: dict[str, Any] = jsonutil.loads(data)
        if data in self._shared and all(x is None or isinstance(x, (str, int, float, bool)) for x in value.values()):
            self._decoded[data] = dict(value)
        return value

    def share(self, data: bytes) -> bytes:
        """One bytes object for equal small encodings (bounded: at most 4,096 distinct ones are shared)."""
        if len(data) > _SHARED_MAX_BYTES:
            return data
        shared = self._shared.get(data)
        if shared is not None:
            return shared
        if len(self._shared) < _SHARED_MAX_ENTRIES:
            self._shared[data] = data
        return data


class Packed(Mapping[str, Any]):
    """A cached object kept small: a read-only mapping of its top-level fields.

    A layout field (`Layout`) reads as a new dict of its kept sub-fields alone, the way event handlers and
    indexes see it; any other field is decoded from JSON when read. `full()` and `field()` give whole
    values. Costs about 200 bytes besides the JSON text and the kept values, where the same object as
    nested dicts costs about five times its JSON text.
    """

    __slots__ = ("_layout", "_v")

    def __init__(self, obj: Obj, layout: Layout) -> None:
        values: list[Any] = [None]
        other = dict(obj)
        for name, keep in layout.fields:
            value = other.get(name)
            if value.__class__ is not dict:
                values += layout.absent[name]
                continue
            del other[name]
            rest = value.copy()
            slot = len(values)
            values.append(None)  # the rest's JSON, once the kept sub-fields are out
            for k in keep:
                v = rest.pop(k, _MISSING)
                values.append(sys.intern(v) if v.__class__ is str and k in _INTERNED else v)
            values[slot] = layout.share(jsonutil.dumps_compact(rest))
        if other:
            values[0] = layout.share(jsonutil.dumps_compact(other))
        self._layout = layout
        self._v = tuple(values)

    def _kept(self, name: str) -> dict[str, Any] | None:
        entry = self._layout.slots.get(name)
        if entry is None or self._v[entry[0]] is None:
            return None
        slot, keep = entry
        return {k: v for k, v in zip(keep, self._v[slot + 1:slot + 1 + len(keep)], strict=True) if v is not _MISSING}

    def _other(self) -> dict[str, Any]:
        data = self._v[0]
        return self._layout.decode(data) if data is not None else {}

    def __getitem__(self, name: str) -> Any:
        kept = self._kept(name)
        return kept if kept is not None else self._other()[name]

    def get(self, name: str, default: Any = None) -> Any:
        """Top-level field `name` as handlers see it (a layout field reduced to its kept sub-fields)."""
        kept = self._kept(name)
        if kept is not None:
            return kept
        return self._other().get(name, default) if self._v[0] is not None else default

    def __contains__(self, name: object) -> bool:
        return self.get(name, _MISSING) is not _MISSING if isinstance(name, str) else False

    def __iter__(self) -> Iterator[str]:
        yield from (name for name, _ in self._layout.fields if self._v[self._layout.slots[name][0]] is not None)
        yield from self._other()

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def sub(self, name: str, sub: str) -> Any:
        """Sub-field `sub` of top-level field `name` (e.g. "metadata", "name"), or None; without building the
        field's dict when the layout keeps that sub-field decoded."""
        slots = self._layout.kept.get((name, sub))
        if slots is None or self._v[slots[0]] is None:
            value = self.get(name)
            return value.get(sub) if isinstance(value, dict) else None
        v = self._v[slots[1]]
        return None if v is _MISSING else v

    def rest(self, name: str) -> bytes | None:
        """The JSON of layout field `name` without its kept sub-fields (None when the object lacks it)."""
        entry = self._layout.slots.get(name)
        return self._v[entry[0]] if entry is not None else None

    def field(self, name: str) -> Any:
        """Top-level field `name`, whole (a new dict for a layout field), or None."""
        entry = self._layout.slots.get(name)
        if entry is None or self._v[entry[0]] is None:
            return self._other().get(name)
        return self._whole(*entry)

    def full(self) -> Obj:
        """The whole object as a new dict."""
        out = self._other()
        for name, (slot, keep) in self._layout.slots.items():
            if self._v[slot] is not None:
                out[name] = self._whole(slot, keep)
        return out

    def _whole(self, slot: int, keep: tuple[str, ...]) -> dict[str, Any]:
        """A layout field as a new dict: its rest decoded, then its kept sub-fields the object has."""
        v = self._v
        value = self._layout.decode(v[slot])
        for i, k in enumerate(keep, slot + 1):
            if v[i] is not _MISSING:
                value[k] = v[i]
        return value


Cached = Mapping[str, Any]  # what a Store holds: a Packed object, or a plain dict in a store without a layout


def sub_field(obj: Cached | None, name: str, sub: str) -> Any:
    """`obj[name][sub]` of a cached object (e.g. "metadata", "uid"), or None when either is missing; read
    without building the field's dict when the object is packed and keeps that sub-field decoded."""
    if obj is None:
        return None
    if isinstance(obj, Packed):
        return obj.sub(name, sub)
    value = obj.get(name)
    return value.get(sub) if isinstance(value, Mapping) else None


def field(obj: Cached, name: str) -> Any:
    """Top-level field `name` of a cached object, whole (decoded when packed; a new dict then)."""
    return obj.field(name) if isinstance(obj, Packed) else obj.get(name)


def unpack(obj: Cached) -> Obj:
    """The whole object of a cached one (a new dict when packed; `obj` itself when it is a dict)."""
    if isinstance(obj, Packed):
        return obj.full()
    return obj if isinstance(obj, dict) else dict(obj)


def rest_equal(old: Cached, new: Cached, name: str) -> bool:
    """Whether the packed rest of field `name` (all but its kept sub-fields) is the same in two cached
    objects, compared encoded (true for unpacked objects: the kept part is then the whole field)."""
    if isinstance(old, Packed) and isinstance(new, Packed):
        return old.rest(name) == new.rest(name)
    return True


def field_equal(old: Cached, new: Cached, name: str) -> bool:
    """Whether top-level field `name` is the same in two cached objects, packed or not."""
    return rest_equal(old, new, name) and old.get(name) == new.get(name)


class Store:
    """Objects by key with optional indexes. Single event loop; not thread-safe.

    Args:
        transform: applied to every object before it is stored (default: drop managedFields).
        indexers: index name -> function returning the index values of an object (they see it packed).
        packed: top-level field -> the sub-fields left decoded (see `Layout`); objects are then kept as
            `Packed` mappings, and `full` gives the whole object.
    """

    def __init__(self, transform: Transform | None = None, indexers: dict[str, IndexFunc] | None = None,
                 packed: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self._transform = transform or strip_managed_fields
        self._layout = Layout(packed) if packed else None
        self._items: dict[str, Cached] = {}
        self._indexers = indexers or {}
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def add_indexer(self, name: str, fn: IndexFunc) -> None:
        """Add index `name` (client-go's AddIndexers).

        Raises:
            ValueError: the store already holds objects, or has an index of that name.
        """
        if self._items or name in self._indexers:
            raise ValueError(f"cannot add index {name!r}: " + ("it exists" if name in self._indexers else
                                                                "the store is not empty"))
        self._indexers = {**self._indexers, name: fn}
        self._indexes[name] = {}

    def get(self, key: str) -> Cached | None:
        """The cached object for a key, or None, with its packed fields reduced to the sub-fields kept
        decoded. Treat it as read-only."""
        return self._items.get(key)

    def full(self, key: str) -> Obj | None:
        """The whole cached object for a key (packed fields decoded into a new dict), or None."""
        obj = self._items.get(key)
        return unpack(obj) if obj is not None else None

    def list_keys(self) -> list[str]:
        """A snapshot of all keys (client-go's ListKeys)."""
        return list(self._items)

    def values(self) -> Iterator[Cached]:
        """All cached objects."""
        return iter(list(self._items.values()))

    def by_index(self, index: str, value: str) -> list[Cached]:
        """Objects whose index function returned `value` for index `index`."""
        return [self._items[k] for k in self._indexes[index].get(value, ())]

    def keys_by_index(self, index: str, value: str) -> list[str]:
        """Keys of the objects whose index function returned `value`."""
        return list(self._indexes[index].get(value, ()))

    def upsert(self, obj: Obj) -> tuple[Cached | None, Cached]:
        """Store an object (transformed). Returns (previous object or None, stored object).

        Raises:
            ValueError: the object has no name.
        """
        key = object_key(obj)
        transformed = self._transform(obj)
        new: Cached = Packed(transformed, self._layout) if self._layout is not None else transformed
        values = {name: fn(new) for name, fn in self._indexers.items()}  # may raise: nothing changed yet
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = new
        for name, vals in values.items():
            for value in vals:
                self._indexes[name].setdefault(value, set()).add(key)
        return old, new

    def delete(self, obj_or_key: Obj | str) -> Cached | None:
        """Remove an object by key or by object. Returns the cached object that was removed, or None."""
        key = obj_or_key if isinstance(obj_or_key, str) else object_key(obj_or_key)
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: str, obj: Cached) -> None:
        for name, fn in self._indexers.items():
            for value in fn(obj):
                keys = self._indexes[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indexes[name][value]
