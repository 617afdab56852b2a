"""The in-memory cache an informer keeps current (client-go's `cache.Indexer`).

Objects are stored after a `transform` that keeps only the fields the reconcilers read (and always
drops `managedFields`), then packed: of the top-level fields named in `packed` (a pod's `metadata`, `spec`
and `status`, say) only the sub-fields that event handlers and indexes read stay decoded, the rest is kept
as compact JSON bytes. A Python dict tree costs about five times its JSON text, and a reconcile decodes
the one object it works on (`full`) in microseconds. Objects are keyed like client-go's
`MetaNamespaceKeyFunc` (`namespace/name`, or `name` for cluster-scoped objects). Named indexes map an
index value to the keys of the objects that carry it (e.g. virtual pods by `spec.runtimeClassName`), so a
lookup costs the size of the answer, not of the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from syncer.kube import jsonutil

Obj = dict[str, Any]
PACKED = "__packed__"  # cache-only key: field name -> its JSON bytes
Transform = Callable[[Obj], Obj]
IndexFunc = Callable[[Obj], list[str]]


def object_key(obj: Obj) -> str:
    """`namespace/name` for namespaced objects, `name` otherwise.

    Raises:
        ValueError: the object has no metadata.name.
    """
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValueError("object has no metadata.name")
    ns = meta.get("namespace") if isinstance(meta, dict) else None
    return f"{ns}/{name}" if ns else name


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


def pack(obj: Obj, fields: Mapping[str, tuple[str, ...]]) -> Obj:
    """`obj` with each top-level field of `fields` that is a JSON object reduced to the listed sub-fields,
    the rest of it kept encoded under `PACKED`. E.g. `pack(pod, {"spec": ("nodeName",)})`."""
    packed: dict[str, bytes] = {}
    out = dict(obj)
    for name, keep in fields.items():
        value = obj.get(name)
        if isinstance(value, dict):
            packed[name] = jsonutil.dumps_compact({k: v for k, v in value.items() if k not in keep})
            out[name] = {k: value[k] for k in keep if k in value}
    if packed:
        out[PACKED] = packed
    return out


def field(obj: Obj, name: str) -> Any:
    """Top-level field `name` of a cached object, whole (decoded when packed; a new dict then)."""
    raw = (obj.get(PACKED) or {}).get(name)
    if raw is None:
        return obj.get(name)
    return {**obj[name], **jsonutil.loads(raw)}


def unpack(obj: Obj) -> Obj:
    """The whole object of a packed one (a new dict; `obj` itself when nothing was packed)."""
    packed = obj.get(PACKED)
    if not packed:
        return obj
    out = {k: v for k, v in obj.items() if k != PACKED}
    for name in packed:
        out[name] = field(obj, name)
    return out


def rest_equal(old: Obj, new: Obj, name: str) -> bool:
    """Whether the packed rest of field `name` (all but its sub-fields kept decoded) is the same in two
    cached objects, compared encoded."""
    return bool((old.get(PACKED) or {}).get(name) == (new.get(PACKED) or {}).get(name))


def field_equal(old: Obj, new: Obj, name: str) -> bool:
    """Whether top-level field `name` is the same in two cached objects, packed or not."""
    return rest_equal(old, new, name) and old.get(name) == new.get(name)


class Store:
    """Objects by key with optional indexes. Single event loop; not thread-safe.

    Args:
        transform: applied to every object before it is stored (default: drop managedFields).
        indexers: index name -> function returning the index values of an object (they see it packed).
        packed: top-level field -> the sub-fields left decoded (see `pack`); `full` gives the whole object.
    """

    def __init__(self, transform: Transform | None = None, indexers: dict[str, IndexFunc] | None = None,
                 packed: Mapping[str, tuple[str, ...]] | None = None) -> None:
        self._transform = transform or strip_managed_fields
        self._packed = dict(packed or {})
        self._items: dict[str, Obj] = {}
        self._indexers = indexers or {}
        self._indexes: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def get(self, key: str) -> Obj | None:
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

    def values(self) -> Iterator[Obj]:
        """All cached objects."""
        return iter(list(self._items.values()))

    def by_index(self, index: str, value: str) -> list[Obj]:
        """Objects whose index function returned `value` for index `index`."""
        return [self._items[k] for k in self._indexes[index].get(value, ())]

    def keys_by_index(self, index: str, value: str) -> list[str]:
        """Keys of the objects whose index function returned `value`."""
        return list(self._indexes[index].get(value, ()))

    def upsert(self, obj: Obj) -> tuple[Obj | None, Obj]:
        """Store an object (transformed). Returns (previous object or None, stored object).

        Raises:
            ValueError: the object has no name.
        """
        key = object_key(obj)
        new = self._transform(obj)
        if self._packed:
            new = pack(new, self._packed)
        values = {name: fn(new) for name, fn in self._indexers.items()}  # may raise: nothing changed yet
        old = self._items.get(key)
        if old is not None:
            self._unindex(key, old)
        self._items[key] = new
        for name, vals in values.items():
            for value in vals:
                self._indexes[name].setdefault(value, set()).add(key)
        return old, new

    def delete(self, obj_or_key: Obj | str) -> Obj | None:
        """Remove an object by key or by object. Returns the cached object that was removed, or None."""
        key = obj_or_key if isinstance(obj_or_key, str) else object_key(obj_or_key)
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key, old)
        return old

    def _unindex(self, key: str, obj: Obj) -> None:
        for name, fn in self._indexers.items():
            for value in fn(obj):
                keys = self._indexes[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indexes[name][value]
