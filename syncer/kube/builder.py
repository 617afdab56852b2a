"""Controllers declare what they watch; one shared informer serves each (cluster, resource) view.

In controller-runtime's terms (`pkg/builder`): a controller is built `For` the object it reconciles,
`Owns` the objects it creates, and `Watches` others, each with predicates and a map from a changed object to
the keys to reconcile (`EnqueueRequestsFromMapFunc`). The manager's cache (client-go's
`SharedInformerFactory`) keeps one informer per (cluster, resource, namespace, label selector, metadata-only)
however many controllers read it. Here:

- `Source` names one such view; `InformerFactory.store(source)` gives its shared cache, created on first
  use as the factory's one declaration of caches says (`slims(source)` -> `Slim`); `index` adds an index.
- `Watch` is one declaration: a source, the map to keys, the update predicate, whether deletions count,
  what a re-list enqueues, and the controller's own writes (`OwnWrites`) whose echo it need not see.
- `ControllerBuilder` collects a controller's watches (`for_`, `owns`, `watches`); the manager wires each
  to the controller's queue (`wire`) and holds no rule of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.kube.cache import Cached, IndexFunc, Store, Transform, object_key, resource_version
from syncer.kube.client import KubeClient
from syncer.kube.clock import Clock
from syncer.kube.informer import Handlers, Informer
from syncer.kube.resources import APIResource
from syncer.kube.workqueue import WorkQueue


@dataclass(frozen=True)
class Source:
    """One view of one resource on one cluster (`host` or `virtual`): optionally one namespace, a label
    selector, and metadata only (`PartialObjectMetadata`: no content, e.g. of Secrets, enters the process)."""

    cluster: str
    resource: APIResource
    namespace: str | None = None
    label_selector: str | None = None
    metadata_only: bool = False


@dataclass(frozen=True)
class Slim:
    """How objects of a source are cached, declared once per source: `keep` drops what no reader needs
    (a function of the object; default: only managedFields), `packed` keeps the rest compact (top-level field
    -> the sub-fields left decoded for handlers and indexes; see cache.Layout)."""

    keep: Transform | None = None
    packed: Mapping[str, tuple[str, ...]] | None = None


Keys = Callable[[Cached], Iterable[str]]
Predicate = Callable[[Cached, Cached], bool]


class OwnWrites:
    """The objects a controller has just created, by key: the resourceVersion the API server answered with.

    The watch event that only reports such a create (an ADDED object with that key and resourceVersion) is its
    echo: the reconcile it would cause compares the object with the one the controller just wrote, and finds
    nothing to do. A watch declared with `own_writes` does not enqueue an echo (the create's caller returns
    what the reconcile would have: its requeue). Every other event goes through: an update, a deletion, an add
    with another resourceVersion (someone else's object of that name), and everything a re-list enqueues. Each
    recorded create is used once; a deletion forgets it (client-go's controller "expectations" record creates
    the same way, to the same end of not acting on a cache that has not caught up).

    That holds only while the reconcile that created the object is the last one of its key. Another reconcile
    of the key before the echo (its virtual pod or host class deleted meanwhile) decides on a cache without the
    created object, and may do nothing where the object is now wrong; so a reconcile that starts
    (`reconciling`) forgets the creates of earlier reconciles of its key, and their echoes are reconciled."""

    def __init__(self) -> None:
        self._rv: dict[str, tuple[str, str]] = {}  # created object's key -> (its resourceVersion, reconcile key)
        self._created: dict[str, str] = {}  # reconcile key -> the key of the object its reconcile created

    def created(self, obj: Mapping[str, Any], key: str) -> None:
        """Record a create by the reconcile of `key`: `obj` as the API server returned it (its key and
        resourceVersion)."""
        rv = resource_version(obj)
        if rv:
            written = object_key(obj)
            self._rv[written] = (rv, key)
            self._created[key] = written

    def reconciling(self, key: str) -> None:
        """A reconcile of `key` starts: forget what earlier reconciles of `key` created (their echoes are
        reconciled: this reconcile may decide before they arrive)."""
        written = self._created.pop(key, None)
        if written is not None:
            self._rv.pop(written, None)

    def is_echo(self, obj: Cached) -> bool:
        """Whether added object `obj` is the echo of a recorded create (which is then forgotten)."""
        recorded = self._pop(object_key(obj))
        return recorded is not None and recorded == resource_version(obj)

    def forget(self, obj: Cached) -> None:
        """Forget a recorded create of `obj`'s key (it was deleted)."""
        self._pop(object_key(obj))

    def _pop(self, written: str) -> str | None:
        entry = self._rv.pop(written, None)
        if entry is None:
            return None
        rv, key = entry
        if self._created.get(key) == written:
            del self._created[key]
        return rv

    def __len__(self) -> int:
        return len(self._rv)


@dataclass(frozen=True)
class Watch:
    """One watch of a controller.

    Attributes:
        source: what is watched.
        keys: the keys to reconcile for a changed object.
        predicate: for an update, whether it matters (old, new); None: every update.
        on_delete: whether a deletion enqueues `keys(deleted object)`.
        relist: the keys to enqueue after the source re-listed (a watch gap may have hidden changes);
            None: `keys` of every cached object.
        role: `for`, `owns` or `watches` (how controller-runtime would name it; for logs and docs).
        own_writes: the controller's creates, whose echo (an ADDED event of exactly that object) enqueues nothing.
    """

    source: Source
    keys: Keys
    predicate: Predicate | None = None
    on_delete: bool = True
    relist: Callable[[], Iterable[str]] | None = None
    role: str = "watches"
    own_writes: OwnWrites | None = None


def own_key(obj: Cached) -> list[str]:
    """The object's own key (`namespace/name`, or `name`): the map of a `for_` watch."""
    return [object_key(obj)]


@dataclass
class ControllerBuilder:
    """Collects the watches of controller `name` (controller-runtime's builder)."""

    name: str
    watch_list: list[Watch] = field(default_factory=list)

    def for_(self, source: Source, *, predicate: Predicate | None = None,
             relist: Callable[[], Iterable[str]] | None = None,
             own_writes: OwnWrites | None = None) -> ControllerBuilder:
        """Reconcile the objects of `source` themselves (their own keys); with `own_writes`, not the echo of
        the controller's own creates."""
        self.watch_list.append(Watch(source, own_key, predicate, True, relist, "for", own_writes))
        return self

    def owns(self, source: Source, keys: Keys, *, predicate: Predicate | None = None,
             relist: Callable[[], Iterable[str]] | None = None,
             own_writes: OwnWrites | None = None) -> ControllerBuilder:
        """Objects this controller creates; a change reconciles their owner (`keys` maps to it); with
        `own_writes`, not the echo of the controller's own creates."""
        self.watch_list.append(Watch(source, keys, predicate, True, relist, "owns", own_writes))
        return self

    def watches(self, source: Source, keys: Keys, *, predicate: Predicate | None = None, on_delete: bool = True,
                relist: Callable[[], Iterable[str]] | None = None) -> ControllerBuilder:
        """Other objects whose changes matter to the keys `keys` maps them to."""
        self.watch_list.append(Watch(source, keys, predicate, on_delete, relist, "watches"))
        return self


class InformerFactory:
    """One shared informer and cache per `Source` (client-go's SharedInformerFactory).

    Args:
        clients: `host` and `virtual` clients.
        slims: how objects of a source are cached (one declaration for every source; default: whole).
        watch_timeout: seconds a watch stays open before it is renewed.
        clock: the time the informers' retries wait on (default the real one).
    """

    def __init__(self, clients: Mapping[str, KubeClient], slims: Callable[[Source], Slim] | None = None,
                 watch_timeout: int = 300, clock: Clock | None = None) -> None:
        self.clients = clients
        self.clock = clock
        self.slims = slims or (lambda _: Slim())
        self.watch_timeout = watch_timeout
        self._informers: dict[Source, Informer] = {}

    def informer(self, source: Source) -> Informer:
        """The shared informer of `source`, created on first use with the cache `slims(source)` declares."""
        known = self._informers.get(source)
        if known is not None:
            return known
        slim = self.slims(source)
        store = Store(transform=slim.keep, packed=slim.packed)
        inf = Informer(self.clients[source.cluster], source.resource, store, namespace=source.namespace,
                       label_selector=source.label_selector, watch_timeout=self.watch_timeout,
                       metadata_only=source.metadata_only, clock=self.clock)
        self._informers[source] = inf
        return inf

    def store(self, source: Source) -> Store:
        """The shared cache of `source` (see `informer`)."""
        return self.informer(source).store

    def index(self, source: Source, name: str, fn: IndexFunc) -> None:
        """Add index `name` to the cache of `source` (before its informer starts)."""
        self.store(source).add_indexer(name, fn)

    @property
    def informers(self) -> list[Informer]:
        """Every informer created, in creation order."""
        return list(self._informers.values())


def wire(factory: InformerFactory, queue: WorkQueue, watches: Iterable[Watch]) -> None:
    """Connect each watch's informer to `queue`: added, updated (when the predicate holds) and, with
    `on_delete`, deleted objects put `keys(object)` on the queue; a re-list puts `relist()` (default: the
    keys of every cached object)."""
    for w in watches:
        inf = factory.informer(w.source)
        inf.add_handlers(_handlers(inf, queue, w))


def _handlers(inf: Informer, queue: WorkQueue, w: Watch) -> Handlers:
    def add(obj: Any) -> None:
        for key in w.keys(obj):
            queue.add(key)

    def added(obj: Any) -> None:
        if w.own_writes is None or not w.own_writes.is_echo(obj):
            add(obj)

    def update(old: Any, new: Any) -> None:
        if w.predicate is None or w.predicate(old, new):
            add(new)

    def deleted(obj: Any) -> None:
        if w.own_writes is not None:
            w.own_writes.forget(obj)
        if w.role == "for":  # the object is gone: a wake-up asked for it (a token renewal) is not needed
            for key in w.keys(obj):  # now, and the reconcile queued below asks again for what it still needs
                queue.cancel_delayed(key)
        if w.on_delete:
            add(obj)

    def relisted() -> None:
        if w.relist is not None:
            for key in w.relist():
                queue.add(key)
        else:
            for obj in inf.store.values():
                add(obj)

    return Handlers(on_add=added, on_update=update, on_delete=deleted,
                    on_relist=relisted)
