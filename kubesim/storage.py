"""Object storage of the embedded API server: objects, one global resourceVersion, a bounded watch
history, and fan-out to open watches.

Semantics follow the Kubernetes API (etcd3 storage and the watch cache):
- every write takes the next value of one strictly increasing resourceVersion;
- a watch resumes from any resourceVersion still in the history; an older one is `410 Expired`;
- a watch with a label or field selector sees an object that starts matching as ADDED and one that
  stops matching as DELETED (as the watch cache does).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from syncer.kube.resources import APIResource

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace or "", name)
Filter = Callable[[Obj], bool]


@dataclass(frozen=True)
class Change:
    """One stored change: the new resourceVersion, ADDED/MODIFIED/DELETED, the object after the
    change (for DELETED, the last state) and the object before it (None for ADDED)."""

    rv: int
    type: str
    resource: APIResource
    obj: Obj
    old: Obj | None
    # watch-event lines already encoded, by event type: encoded once for every watcher (the watch cache's
    # shared serialization in kube-apiserver)
    wire: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)


class Expired(Exception):
    """A watch asked for a resourceVersion older than the history keeps (HTTP 410)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")


@dataclass(eq=False)
class Watcher:
    """An open watch: what it selects and the queue of changes waiting to be sent (None = close)."""

    resource: APIResource
    namespace: str | None
    matches: Filter
    queue: asyncio.Queue[Change | None] = field(default_factory=asyncio.Queue)

    def selects(self, obj: Obj) -> bool:
        """True when `obj` is in this watch's namespace and passes its selectors."""
        if self.namespace and obj.get("metadata", {}).get("namespace") != self.namespace:
            return False
        return self.matches(obj)


class Storage:
    """In-memory objects of every resource, with history and watch fan-out.

    Args:
        history_size: how many changes are kept for watch resumption (older ones give 410).
    """

    def __init__(self, history_size: int = 2000) -> None:
        self.rv = 0
        self._objects: dict[str, dict[Key, Obj]] = {}
        self._history: deque[Change] = deque(maxlen=history_size)
        self._compacted = 0  # every change with rv <= this one is gone from the history
        self._watchers: set[Watcher] = set()
        self.changed = asyncio.Event()  # set on every change; tests clear it and wait (no polling)
        self._dry = False

    @property
    def dry(self) -> bool:
        """Whether writes persist nothing now (within `dry_run`)."""
        return self._dry

    @contextlib.contextmanager
    def dry_run(self, enabled: bool = True) -> Iterator[None]:
        """Within the block (when `enabled`), writes and removals persist nothing: no new resourceVersion, no watch
        event; each returns what it would have stored (a write with the version it replaces), as etcd3's
        `GuaranteedUpdate` and `Delete` do for a request with `dryRun=All`."""
        before, self._dry = self._dry, self._dry or enabled
        try:
            yield
        finally:
            self._dry = before

    @property
    def compacted(self) -> int:
        """Every change at or below this resourceVersion is gone from the history."""
        return self._compacted

    def next_rv(self) -> int:
        """Take the next resourceVersion."""
        self.rv += 1
        return self.rv

    def objects(self, resource: APIResource) -> dict[Key, Obj]:
        """The live map of stored objects of a resource (do not mutate the objects)."""
        return self._objects.setdefault(resource.qualified, {})

    def get(self, resource: APIResource, namespace: str, name: str) -> Obj | None:
        """The stored object, or None."""
        return self.objects(resource).get((namespace, name))

    def write(self, resource: APIResource, obj: Obj, old: Obj | None) -> Obj:
        """Store `obj` (ADDED when `old` is None, else MODIFIED) with a new resourceVersion and
        notify watches. Returns the stored object."""
        if self._dry:
            obj["metadata"]["resourceVersion"] = (old or {}).get("metadata", {}).get("resourceVersion", "")
            if old is None:
                obj["metadata"].pop("resourceVersion")
            return obj
        rv = self.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        meta = obj["metadata"]
        self.objects(resource)[(meta.get("namespace", ""), meta["name"])] = obj
        self._record(Change(rv, "ADDED" if old is None else "MODIFIED", resource, obj, old))
        return obj

    def remove(self, resource: APIResource, obj: Obj) -> Obj:
        """Delete `obj` with a new resourceVersion and notify watches. Returns its last state."""
        if self._dry:
            return copy.deepcopy(obj)
        meta = obj["metadata"]
        self.objects(resource).pop((meta.get("namespace", ""), meta["name"]), None)
        last = copy.deepcopy(obj)
        rv = self.next_rv()
        last["metadata"]["resourceVersion"] = str(rv)
        self._record(Change(rv, "DELETED", resource, last, obj))
        return last

    def wipe(self) -> None:
        """Forget every object and the history (a server restarted with an empty etcd). The wipe takes
        a version of its own, so every client position from before it, even the latest, gets 410."""
        self._objects.clear()
        self._history.clear()
        self.rv += 1
        self._compacted = self.rv

    def expire_history(self) -> None:
        """Drop the whole history: every watch resuming from an older version gets 410."""
        self._history.clear()
        self._compacted = self.rv

    def _record(self, change: Change) -> None:
        if len(self._history) == self._history.maxlen:
            self._compacted = self._history[0].rv
        self._history.append(change)
        self.changed.set()
        for w in list(self._watchers):
            if w.resource.qualified == change.resource.qualified:
                w.queue.put_nowait(change)

    def subscribe(self, resource: APIResource, namespace: str | None, matches: Filter,
                  since: int | None) -> tuple[Watcher, list[Change]]:
        """Open a watch.

        Args:
            since: resume after this resourceVersion; None means "start now" (the caller sends the
                current objects as ADDED first).
        Returns:
            the watcher (its queue receives every later change) and the stored changes after `since`.
        Raises:
            Expired: `since` is older than the history.
        """
        backlog: list[Change] = []
        if since is not None:
            if since < self._compacted:
                raise Expired(since, self._compacted + 1)
            backlog = [c for c in self._history
                       if c.rv > since and c.resource.qualified == resource.qualified]
        w = Watcher(resource, namespace, matches)
        self._watchers.add(w)
        return w, backlog

    def unsubscribe(self, watcher: Watcher) -> None:
        """Close a watch registration (idempotent)."""
        self._watchers.discard(watcher)

    def close_watches(self) -> int:
        """End every open watch (their streams close). Returns how many were open."""
        n = len(self._watchers)
        for w in list(self._watchers):
            w.queue.put_nowait(None)
        self._watchers.clear()
        return n
