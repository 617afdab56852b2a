"""Reflector + cache + event handlers for one resource on one cluster (client-go's SharedInformer).

The reflector lists, then watches from the list's resourceVersion with bookmarks and a server-side
timeout. When a watch ends it resumes from the last resourceVersion it saw (no re-list); on 410
Expired it re-lists; on other errors it retries with capped exponential backoff and jitter, honouring
Retry-After. A re-list replaces the cache and reports only real differences to the handlers (objects
whose resourceVersion changed, appeared or vanished), so a reconnect does not wake every reconciler.

Handlers must be quick and synchronous: they map a change to work-queue keys, nothing else.
Objects that cannot be cached (no name) are skipped with a log line naming them.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from syncer.kube.cache import Cached, Store, object_key
from syncer.kube.cache import resource_version as _rv
from syncer.kube.client import PERSISTENT_RETRIES, ApiError, KubeClient, sleep_or_stop
from syncer.kube.clock import Clock
from syncer.kube.resources import APIResource

log = logging.getLogger(__name__)

Obj = dict[str, Any]


@dataclass
class Handlers:
    """Callbacks for cache changes. `on_update` gets (old, new); `on_delete` the last known state.

    `on_relist` runs after every re-list but the first: changes that happened while the watch was down
    and that the cache never saw (an object created and deleted in the gap) produce no event, so
    controllers fed by this informer re-examine all their keys then (client-go covers this with
    periodic resyncs; here it costs nothing unless a re-list happens)."""

    on_add: Callable[[Cached], None] = lambda obj: None
    on_update: Callable[[Cached, Cached], None] = lambda old, new: None
    on_delete: Callable[[Cached], None] = lambda obj: None
    on_relist: Callable[[], None] = lambda: None


@dataclass
class Backoff:
    """Capped exponential backoff with jitter (seconds): initial, doubled per failure, at most `cap`."""

    initial: float = 0.2
    cap: float = 30.0
    jitter: float = 0.2
    _failures: int = field(default=0, init=False)

    def next(self, at_least: float | None = None) -> float:
        """The next delay; `at_least` (a Retry-After) raises it."""
        delay = min(self.cap, self.initial * (2.0 ** self._failures))
        self._failures += 1
        delay *= 1 + random.uniform(0, self.jitter)
        return max(delay, at_least or 0.0)

    def reset(self) -> None:
        """Back to `initial` after a success."""
        self._failures = 0


class Informer:
    """Keeps a Store of one resource current and calls handlers on changes.

    Args:
        client: the cluster.
        resource: what to list and watch.
        store: the cache to fill (its transform and indexes are the caller's choice).
        namespace: limit to one namespace (None = all / cluster-scoped).
        label_selector: server-side label selector string.
        metadata_only: list and watch `PartialObjectMetadata` (metadata only, as controller-runtime's
            metadata informers): for objects whose content the syncer must never hold, such as Secrets.
        watch_timeout: seconds the server keeps one watch open before it is re-opened (jittered x1-2).
        page_size: items per list chunk (client-go's reflector pages by 500).
        backoff: retry policy for failures.
        clock: the time retries wait on (default the real one; tests pass a FakeClock).
    Attributes:
        synced: set once the first list has been stored.
        last_error: the last failure, cleared on success (for readiness and logs).
    """

    def __init__(self, client: KubeClient, resource: APIResource, store: Store, *, namespace: str | None = None,
                 label_selector: str | None = None, watch_timeout: int = 300, backoff: Backoff | None = None,
                 name: str | None = None, metadata_only: bool = False, page_size: int = 500,
                 clock: Clock | None = None) -> None:
        self.client = client
        self.clock = clock
        self.page_size = page_size
        self.metadata_only = metadata_only
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self.name = name or f"{client.cluster}/{resource.qualified}"
        self.handlers: list[Handlers] = []
        self.synced = asyncio.Event()
        self.last_error: ApiError | None = None
        self.lists = 0  # how many full lists were done (1 + re-lists)
        self._rv: str | None = None
        self._errors_seen: set[tuple[int, str, int]] = set()  # (status, reason, level) logged since connected
        self._failures = 0  # failed lists/watches since the last connection

    def add_handlers(self, handlers: Handlers) -> None:
        """Register handlers (before `run`)."""
        self.handlers.append(handlers)

    async def run(self, stop: asyncio.Event) -> None:
        """List and watch until `stop` is set. Never raises for API failures."""
        while not stop.is_set():
            try:
                if self._rv is None:
                    await self._list()
                await self._watch(stop)
                self.last_error = None
            except ApiError as e:
                if e.expired:
                    log.info("%s: resourceVersion %s expired, re-listing", self.name, self._rv)
                    self._rv = None
                    continue
                self.last_error = e
                self._log_error(e)
                if await sleep_or_stop(self.backoff.next(e.retry_after), stop, self.clock):
                    return

    def _log_error(self, e: ApiError) -> None:
        """Log a failed list or watch once per cause: a 403 as an error; an API server that is briefly away
        (no response, throttling, 5xx) at info, and at warning once it has failed 5 times in a row; anything
        else at warning. Repeats are logged at debug."""
        self._failures += 1
        level = (logging.ERROR if e.status == 403 else logging.INFO
                 if e.transient and self._failures < PERSISTENT_RETRIES else logging.WARNING)
        cause = (e.status, e.reason, level)
        if cause in self._errors_seen:
            log.debug("%s: %s", self.name, e)
            return
        self._errors_seen.add(cause)
        if e.status == 403:
            log.error("%s: forbidden to %s %s (group %s) on the %s cluster; check the RBAC of the syncer: %s",
                      self.name, e.verb, self.resource.plural, self.resource.group or "core", self.client.cluster,
                      e.message)
        else:
            log.log(level, "%s: %s; retrying with backoff", self.name, e)

    def _connected(self) -> None:
        if self.last_error is not None:
            log.info("%s: watching again after: %s", self.name, self.last_error)
        self.last_error = None
        self._errors_seen.clear()
        self._failures = 0

    async def _list(self) -> None:
        # In chunks of `page_size`, as client-go's reflector lists (its pager asks for 500): each chunk is
        # decoded and cached before the next arrives, so a large list never sits in memory whole.
        seen: set[str] = set()
        rv, token = "", None
        while True:
            result = await self.client.list(self.resource, self.namespace, label_selector=self.label_selector,
                                            metadata_only=self.metadata_only, limit=self.page_size,
                                            continue_token=token)
            meta = result.get("metadata") or {}
            rv = rv or str(meta.get("resourceVersion") or "")
            items = list(reversed(result.get("items") or []))
            del result
            while items:  # popped as cached: what is cached is no longer held decoded twice
                key = self._apply_upsert(items.pop(), listing=True)
                if key is not None:
                    seen.add(key)
            token = meta.get("continue") or None
            if not token:
                break
        for key in self.store.list_keys():
            if key not in seen:
                old = self.store.delete(key)
                if old is not None:
                    self._dispatch_delete(old)
        self._rv = rv
        self.lists += 1
        self.backoff.reset()
        self._connected()
        if self.lists > 1:
            for h in self.handlers:
                try:
                    h.on_relist()
                except Exception:
                    log.exception("%s: re-list handler failed", self.name)
        if not self.synced.is_set():
            log.info("%s: cache synced with %d objects at resourceVersion %s", self.name, len(self.store), rv)
        self.synced.set()

    async def _watch(self, stop: asyncio.Event) -> None:
        assert self._rv is not None
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        async for ev in self.client.watch(self.resource, self._rv, self.namespace,
                                          label_selector=self.label_selector, timeout_seconds=timeout,
                                          metadata_only=self.metadata_only,
                                          on_connected=self._connected):
            if stop.is_set():
                return
            if ev.type == "ERROR":
                status = ev.object if isinstance(ev.object, dict) else {}
                raise ApiError(int(status.get("code") or 500), str(status.get("reason") or "Unknown"),
                               str(status.get("message") or status), cluster=self.client.cluster, verb="watch",
                               resource=self.resource.qualified)
            if not isinstance(ev.object, dict):
                log.warning("%s: skipped a %s event whose object is not a JSON object", self.name, ev.type)
                continue
            rv = _rv(ev.object)
            if ev.type == "BOOKMARK":
                self._rv = rv or self._rv
                continue
            if ev.type in ("ADDED", "MODIFIED"):
                self._apply_upsert(ev.object, listing=False)
            elif ev.type == "DELETED":
                try:
                    old = self.store.delete(ev.object)
                except ValueError as e:
                    log.warning("%s: skipped a DELETED event: %s", self.name, e)
                    old = None
                if old is not None:
                    self._dispatch_delete(old)
            else:
                log.warning("%s: skipped a watch event of unknown type %r", self.name, ev.type)
            if rv:
                self._rv = rv
            self.backoff.reset()

    def _apply_upsert(self, raw: Obj, *, listing: bool) -> str | None:
        try:
            key = object_key(raw)
        except ValueError as e:
            log.warning("%s: skipped an object from the %s cluster: %s: %.200r", self.name, self.client.cluster,
                        e, raw)
            return None
        prev = self.store.get(key)
        if listing and prev is not None and _rv(prev) == _rv(raw):
            return key  # unchanged since we last saw it
        try:
            old, new = self.store.upsert(raw)
        except Exception as e:  # a transform choking on a malformed object must not stop the loop
            log.warning("%s: skipped %s: cannot cache it: %s", self.name, key, e)
            return key
        for h in self.handlers:
            self._safely(h.on_add, new) if old is None else self._safely(h.on_update, old, new)
        return key

    def _dispatch_delete(self, old: Cached) -> None:
        for h in self.handlers:
            self._safely(h.on_delete, old)

    def _safely(self, fn: Callable[..., None], *args: Cached) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: event handler failed", self.name)
