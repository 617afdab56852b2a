"""Declarative watches: which objects wake which keys of a work queue (controller-runtime's builder
`For`/`Owns`/`Watches` with an `EnqueueRequestsFromMapFunc`).

A controller declares, per informer, a map from a changed object to the keys to reconcile; this module
wires the informer's handlers to the queue, so adding a watched resource is a declaration, not a branch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from syncer.kube.informer import Handlers, Informer
from syncer.kube.workqueue import WorkQueue

Obj = Mapping[str, Any]  # a cached object (kube/cache.py)


def enqueue(informer: Informer, queue: WorkQueue, keys: Callable[[Obj], Iterable[str]], *,
            changed: Callable[[Obj, Obj], bool] | None = None,
            on_delete: bool = True, relist: Callable[[], None] | None = None) -> Informer:
    """Wire `informer` to `queue`: every added, updated (when `changed(old, new)`, default always) and
    (with `on_delete`) deleted object puts `keys(object)` on the queue. After a re-list, `relist` runs
    (default: the keys of every cached object are queued). Returns the informer."""
    def add(obj: Obj) -> None:
        for key in keys(obj):
            queue.add(key)

    def update(old: Obj, new: Obj) -> None:
        if changed is None or changed(old, new):
            add(new)

    def relisted() -> None:
        for obj in informer.store.values():
            add(obj)

    informer.add_handlers(Handlers(on_add=add, on_update=update, on_delete=add if on_delete else lambda _: None,
                                   on_relist=relist or relisted))
    return informer
