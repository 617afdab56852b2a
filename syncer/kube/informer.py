"""Reflector + cache + event handlers for one resource on one cluster (client-go's SharedInformer).

The reflector lists, then watches from the list's resourceVersion with bookmarks and a server-side
timeout. When a watch ends it resumes from the last resourceVersion it saw (no re-list); on 410
Expired it re-lists; on other errors it retries with capped exponential backoff and jitter, honouring
Retry-After up to the backoff's cap. Four rules keep a misbehaving server or network from going unnoticed or
being hammered (see `Informer.run`): a watch that ends within `SHORT_WATCH` seconds without an event, right after
another such watch, is a failure (client-go's "very short watch"); so is a watch that ends having sent events none of
which moved its resourceVersion (none could be used: the next watch would get them again); a 410 within
`EXPIRED_BACKOFF_RESET` seconds of the previous one re-lists only after a backoff; a watch stream silent for
`WATCH_IDLE_TIMEOUT` seconds is broken off and resumed. A re-list replaces the cache and reports only real
differences to the handlers (objects whose resourceVersion changed, appeared or vanished), so a reconnect does not
wake every reconciler.

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
from syncer.kube.client import PERSISTENT_RETRIES, ApiError, KubeClient, sleep_or_stop, status_text
from syncer.kube.clock import Clock, RealClock, Timer
from syncer.kube.resources import APIResource
from syncer.kube.workqueue import MAX_EXPONENT

log = logging.getLogger(__name__)

WORKED_AFTER = 120.0
"""Seconds: a watch the server accepted that lasts this long counts as working, though it sent nothing (no bookmark:
an API server without its watch cache), and the backoff starts again. client-go's reflector resets its backoff
manager after 2 minutes without a failure (`wait.NewExponentialBackoffManager(800ms, 30s, 2*time.Minute, ...)`,
tools/cache/reflector.go); a shorter time would reset it on a server that accepts every watch and fails it a
moment later, which would then be retried without the backoff ever growing."""

Obj = dict[str, Any]

SHORT_WATCH = 1.0
"""Seconds: a watch stream that ends sooner than this without delivering any event that moved its resourceVersion
(an object's, or a BOOKMARK's) is a "very short watch". The first in a row is resumed at once (a stream cut just
after it opened, by an API server restart or a load balancer, recovers without delay); the next ones, until a
stream delivers such an event or lasts `SHORT_WATCH`, are failures retried with the informer's backoff: a proxy,
load balancer or API server that closes every stream cleanly would otherwise get an unthrottled loop of watch
requests. client-go's reflector, `handleWatch` in
k8s.io/client-go/tools/cache/reflector.go: `watchDuration < 1*time.Second && eventCount == 0` is the error
"very short watch: ... Unexpected watch close - watch lasted less than a second and no items received", backed off
from the first (800 ms); the one free retry here costs one request per run of failures."""

EXPIRED_BACKOFF_RESET = 120.0
"""Seconds: a 410 Expired that comes sooner than this after the previous one re-lists only after a backoff
(growing per such 410 as the informer's `Backoff` does); a 410 after a longer healthy stretch re-lists at once.
client-go's reflector runs every ListAndWatch, the re-list after a 410 included, through its backoff manager
(`wait.NewExponentialBackoffManager(800ms, 30s, 2*time.Minute, 2.0, 1.0, clock)` in `NewReflectorWithOptions`,
k8s.io/client-go/tools/cache/reflector.go), which starts again at its initial delay after 2 minutes without a
backoff. Here the first 410 after such a stretch skips even that initial delay, so the usual recovery (one 410 after
a compaction or a long disconnect) stays immediate."""

WATCH_IDLE_TIMEOUT = 120.0
"""Seconds a watch stream may stay silent before it is taken as broken (a half-open connection: a load balancer or
NAT that dropped the flow without a FIN or RST) and resumed from the last resourceVersion. kube-apiserver sends a
BOOKMARK to a watch that asked for them (allowWatchBookmarks) about once a minute, whatever happens to the resource
(`bookmarkFrequency`/`defaultBookmarkFrequency = time.Minute`, k8s.io/apiserver/pkg/storage/cacher), so two minutes
of silence is two missed bookmarks; client-go notices a dead connection in about 45 s by HTTP/2 health checks
(ReadIdleTimeout 30 s + PingTimeout 15 s, k8s.io/client-go/transport). An API server without its watch cache sends
no bookmarks: there a quiet watch is re-established every `WATCH_IDLE_TIMEOUT` (pass `watch_idle_timeout=None`)."""


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
        """The next delay in seconds, at most `cap` x (1 + `jitter`) however many failures (the exponent stops at
        `MAX_EXPONENT`: `2.0 ** 1024` raises OverflowError); `at_least` (a Retry-After, seconds) raises it, up to
        `cap`: a server's Retry-After of hours must not stop an informer for hours. client-go's reflector waits on its
        backoff manager alone, at most its 30 s cap, whatever Retry-After said (`r.delayHandler()` on a 429 and
        `wait.BackoffUntil` on any other failure, k8s.io/client-go/tools/cache/reflector.go)."""
        delay = min(self.cap, self.initial * (2.0 ** min(self._failures, MAX_EXPONENT)))
        self._failures += 1
        delay *= 1 + random.uniform(0, self.jitter)
        return max(delay, min(at_least or 0.0, self.cap))

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
        backoff: retry policy for failures (and, with the same parameters, for re-lists after repeated 410s).
        clock: the time retries wait on (default the real one; tests pass a FakeClock).
        watch_idle_timeout: seconds of silence after which a watch stream is broken off and resumed from the last
            resourceVersion, counted as a failure (`WATCH_IDLE_TIMEOUT`); None never breaks a silent stream.
        watch_clock: the clock watch streams are timed on: how long one lasted (`SHORT_WATCH`), how long it has
            been silent (`watch_idle_timeout`) and how long since the last 410 (`EXPIRED_BACKOFF_RESET`). Streams
            are real I/O, so the default is the real clock even when `clock` is a fake one; tests of these rules
            pass a FakeClock.
    Raises:
        ValueError: `watch_idle_timeout` is not positive.
    Attributes:
        synced: set once the first list has been stored.
        last_error: the last failure, cleared on success (for readiness and logs).
    """

    def __init__(self, client: KubeClient, resource: APIResource, store: Store, *, namespace: str | None = None,
                 label_selector: str | None = None, watch_timeout: int = 300, backoff: Backoff | None = None,
                 name: str | None = None, metadata_only: bool = False, page_size: int = 500,
                 clock: Clock | None = None, watch_idle_timeout: float | None = WATCH_IDLE_TIMEOUT,
                 watch_clock: Clock | None = None) -> None:
        if watch_idle_timeout is not None and not watch_idle_timeout > 0:
            raise ValueError(f"watch_idle_timeout must be positive seconds or None, not {watch_idle_timeout!r}")
        self.client = client
        self.clock = clock
        self.watch_clock: Clock = watch_clock or RealClock()
        self.watch_idle_timeout = watch_idle_timeout
        self.page_size = page_size
        self.metadata_only = metadata_only
        self.resource = resource
        self.store = store
        self.namespace = namespace
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self._relist_backoff = Backoff(self.backoff.initial, self.backoff.cap, self.backoff.jitter)
        self.name = name or f"{client.cluster}/{resource.qualified}"
        self.handlers: list[Handlers] = []
        self.synced = asyncio.Event()
        self.last_error: ApiError | None = None
        self.lists = 0  # how many full lists were done (1 + re-lists)
        self._rv: str | None = None
        self._errors_seen: set[tuple[int, str, int]] = set()  # (status, reason, level) logged since connected
        self._failures = 0  # failed lists/watches since the last connection
        self._expired_at: float | None = None  # watch_clock time of the last 410
        self._heard_at = 0.0  # watch_clock time the current watch stream last delivered an event (or started)
        self._events = 0  # events of the current watch stream that moved its resourceVersion
        self._unmoved = 0  # events of the current watch stream, no BOOKMARK, that did not (see `_read_watch`)
        self._short_watches = 0  # very short watches in a row
        self._worked = False  # the current watch moved its resourceVersion, or lasted WORKED_AFTER
        self._accepted_at: float | None = None  # watch_clock time the server accepted the current watch
        self._recovering: ApiError | None = None  # the failure before the watch accepted since (logged once it works)

    def add_handlers(self, handlers: Handlers) -> None:
        """Register handlers (before `run`)."""
        self.handlers.append(handlers)

    async def run(self, stop: asyncio.Event) -> None:
        """List and watch until `stop` is set. Never raises but CancelledError: an exception that is no ApiError
        (a bug) is logged with its traceback and retried as a failure, `last_error` status 0 InternalError.

        An event "moves" the watch when it moves the resourceVersion the next watch starts from (an ADDED,
        MODIFIED or DELETED at a newer resourceVersion, or a BOOKMARK); an event that does not (an object that
        cannot be cached and carries no newer resourceVersion, an unknown type) is skipped with a warning, and the
        next watch from the same resourceVersion would get it again. A watch that ends after a moving event or
        after `SHORT_WATCH` seconds is resumed at once from the last resourceVersion, and so is the first that ends
        sooner without any event. These set `last_error`, are logged, and are retried after `backoff` (on `clock`;
        a Retry-After raises it up to the backoff's cap), a watch from the last resourceVersion: a failed list or
        watch; a watch that ends having sent events, none of them moving (status 0, reason WatchNoProgress: client-go's
        StreamWatcher ends a watch on an event it cannot decode and the reflector backs off, watch/streamwatcher.go
        and tools/cache/reflector.go); a second "very short watch" in a row (status 0, VeryShortWatch); a watch
        silent for `watch_idle_timeout` seconds (status 0, WatchStalled). A 410 Expired (or reason Expired or
        Gone: `ApiError.expired`) re-lists: at once when it is the first for `EXPIRED_BACKOFF_RESET` seconds, else
        after a backoff that doubles per such 410 (and sets `last_error` meanwhile). The backoff and the count of
        failures that escalates their log start again once a list succeeds or a watch works: it sends a moving
        event, or lasts `WORKED_AFTER` seconds after the server accepted it; a watch accepted and then failing is a
        failure.
        """
        while not stop.is_set():
            try:
                if self._rv is None:
                    await self._list()
                await self._watch(stop)
                self.last_error = None
            except ApiError as e:
                if e.expired:
                    if await self._expired(e, stop):
                        return
                    continue
                self.last_error = e
                self._log_error(e)
                if await sleep_or_stop(self.backoff.next(e.retry_after), stop, self.clock):
                    return
            except Exception as e:  # a bug, or a library's exception the client did not turn into an ApiError
                self.last_error = self._unexpected(e)
                if await sleep_or_stop(self.backoff.next(), stop, self.clock):
                    return

    async def _expired(self, e: ApiError, stop: asyncio.Event) -> bool:
        """Prepare the re-list after a 410 (`EXPIRED_BACKOFF_RESET` says when it waits). Returns True when `stop`
        was set while waiting."""
        now = self.watch_clock.now()
        again = self._expired_at is not None and now - self._expired_at < EXPIRED_BACKOFF_RESET
        self._expired_at = now
        rv, self._rv = self._rv, None
        if not again:
            self._relist_backoff.reset()
            log.info("%s: resourceVersion %s expired, re-listing", self.name, rv)
            return False
        self.last_error = e
        self._log_error(e)
        return await sleep_or_stop(self._relist_backoff.next(e.retry_after), stop, self.clock)

    def _unexpected(self, e: Exception) -> ApiError:
        """Log an exception that is no ApiError, with its traceback the first time its type is seen since the last
        connection (at debug after), and return it as the ApiError `last_error` shows (status 0, InternalError).
        client-go's reflector survives any error of a ListAndWatch (`wait.BackoffUntil`, tools/cache/reflector.go)."""
        self._failures += 1
        cause = (0, type(e).__name__, logging.ERROR)
        if cause in self._errors_seen:
            log.debug("%s: %s: %s", self.name, type(e).__name__, e)
        else:
            self._errors_seen.add(cause)
            log.error("%s: unexpected error in the list and watch; retrying with backoff", self.name, exc_info=e)
        return ApiError(0, "InternalError", f"{type(e).__name__}: {e}", cluster=self.client.cluster,
                        verb="watch" if self._rv is not None else "list", resource=self.resource.qualified)

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
        """The server accepted a watch: `last_error` is cleared (readiness), but the failures still count until the
        watch works (`_working`); one that only sends an ERROR is a failure like a refused request."""
        self._accepted_at = self.watch_clock.now()
        if self.last_error is not None:
            self._recovering = self.last_error
        self.last_error = None

    def _working(self) -> None:
        """A list succeeded, or a watch delivered an event that moved its resourceVersion (a BOOKMARK counts) or lasted
        `WORKED_AFTER` seconds: the backoff starts again from its initial delay and the failures from 0 (client-go's
        reflector resets its backoff manager after 2 minutes without a failure: `wait.NewExponentialBackoffManager(
        800ms, 30s, 2*time.Minute, 2.0, 1.0, clock)`, tools/cache/reflector.go). Logs the recovery once."""
        self._worked = True
        recovered, self._recovering = self.last_error or self._recovering, None
        if recovered is not None:
            log.info("%s: watching again after: %s", self.name, recovered)
        self.last_error = None
        self.backoff.reset()
        self._errors_seen.clear()
        self._failures = 0

    def _lasted(self) -> bool:
        """Whether the server accepted the current watch at least `WORKED_AFTER` seconds ago (on `watch_clock`)."""
        return self._accepted_at is not None and self.watch_clock.now() - self._accepted_at >= WORKED_AFTER

    async def _list(self) -> None:
        # In chunks of `page_size`, as client-go's reflector lists (its pager asks for 500): each chunk is
        # decoded and cached before the next arrives, so a large list never sits in memory whole.
        # A continue token that expired (410) is followed by one list of everything at once, not a re-list from
        # the first page after a backoff: client-go's pager (tools/pager/pager.go, FullListIfExpired).
        seen: set[str] = set()
        rv, token = "", None
        limit: int | None = self.page_size
        while True:
            try:
                result = await self.client.list(self.resource, self.namespace, label_selector=self.label_selector,
                                                metadata_only=self.metadata_only, limit=limit, continue_token=token)
            except ApiError as e:
                if not (e.expired and token):
                    raise
                log.info("%s: the list's continue token expired; listing everything at once", self.name)
                seen, rv, token, limit = set(), "", None, None
                continue
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
        self._working()
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
        """One watch from `_rv`, until its stream ends or `stop` is set, with a watchdog on its silence.

        The stream is read in a task of its own; one timer on `watch_clock` (not one per event: each event only
        notes the time) falls due `watch_idle_timeout` after the last event and, if the stream was silent all that
        time, cancels that task.

        Raises:
            ApiError: the watch failed or sent an ERROR event; status 0 with reason WatchStalled when the stream
                was silent for `watch_idle_timeout` seconds, WatchNoProgress when it ended having sent events of which
                none moved its resourceVersion, VeryShortWatch when it ended within `SHORT_WATCH` seconds without
                such an event right after another such watch (see `SHORT_WATCH`).
        """
        assert self._rv is not None
        clock, limit, rv = self.watch_clock, self.watch_idle_timeout, self._rv
        started = self._heard_at = clock.now()
        self._events = self._unmoved = 0
        self._worked, self._accepted_at = False, None
        reading = asyncio.ensure_future(self._read_watch(stop))
        silent_for: list[float] = []  # set once the watchdog broke the stream off
        timer: Timer | None = None

        def watchdog() -> None:
            nonlocal timer
            if reading.done() or limit is None:
                return
            silent = clock.now() - self._heard_at
            if silent >= limit:
                silent_for.append(silent)
                reading.cancel()
            else:
                timer = clock.call_later(limit - silent, watchdog)

        if limit is not None:
            timer = clock.call_later(limit, watchdog)
        try:
            await reading
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if not silent_for or (task is not None and task.cancelling()):
                raise  # cancelled from outside, not by the watchdog
            raise ApiError(0, "WatchStalled", f"the watch stream sent nothing for {silent_for[0]:.0f} s (limit "
                           f"{limit:.0f} s; the API server sends a bookmark about every 60 s): taken as a broken "
                           f"connection, resuming from resourceVersion {self._rv}", cluster=self.client.cluster,
                           verb="watch", resource=self.resource.qualified) from None
        finally:
            if timer is not None:
                timer.cancel()
            reading.cancel()  # no effect once done
            if self._events:
                self._short_watches = 0
            if not self._worked and self._lasted():
                self._working()  # before the failure that ended it counts
        duration = clock.now() - started
        if self._unmoved and not self._events and not stop.is_set():
            raise ApiError(0, "WatchNoProgress", f"the watch stream from resourceVersion {rv} ended after "
                           f"{self._unmoved} event(s) of which none moved its resourceVersion (none could be cached "
                           f"at a newer one): a watch from there would get them again", cluster=self.client.cluster,
                           verb="watch", resource=self.resource.qualified)
        if stop.is_set() or self._events or duration >= SHORT_WATCH:
            self._short_watches = 0
            return
        self._short_watches += 1
        if self._short_watches > 1:
            raise ApiError(0, "VeryShortWatch", f"very short watch: the stream from resourceVersion {rv} ended after "
                           f"{duration:.3f} s without an event, {self._short_watches} times in a row",
                           cluster=self.client.cluster, verb="watch", resource=self.resource.qualified)
        log.debug("%s: the watch from resourceVersion %s ended after %.3f s without an event; resuming", self.name,
                  rv, duration)

    async def _read_watch(self, stop: asyncio.Event) -> None:
        """Apply the events of one watch from `_rv` to the cache until the stream ends or `stop` is set. Each event
        notes its time in `_heard_at`; one that moved `_rv` (the resourceVersion the next watch starts from) counts
        in `_events`, one that did not, but a BOOKMARK, in `_unmoved` (a BOOKMARK at the same resourceVersion is
        neither: it says the stream is alive, nothing more).

        Raises:
            ApiError: the watch failed or sent an ERROR event.
        """
        assert self._rv is not None
        timeout = int(self.watch_timeout * random.uniform(1.0, 2.0))
        clock = self.watch_clock
        async for ev in self.client.watch(self.resource, self._rv, self.namespace,
                                          label_selector=self.label_selector, timeout_seconds=timeout,
                                          metadata_only=self.metadata_only,
                                          on_connected=self._connected):
            self._heard_at = clock.now()
            if stop.is_set():
                return
            if ev.type == "ERROR":
                raise self._error_event(ev.object)
            before = self._rv
            rv = _rv(ev.object) if isinstance(ev.object, dict) else ""
            if not isinstance(ev.object, dict):
                log.warning("%s: skipped a %s event whose object is not a JSON object, at resourceVersion %s: %.200r",
                            self.name, ev.type, before, ev.object)
            elif ev.type in ("ADDED", "MODIFIED"):
                self._apply_upsert(ev.object, listing=False)
            elif ev.type == "DELETED":
                try:
                    old = self.store.delete(ev.object)
                except ValueError as e:
                    log.warning("%s: skipped a DELETED event: %s", self.name, e)
                    old = None
                if old is not None:
                    self._dispatch_delete(old)
            elif ev.type != "BOOKMARK":
                log.warning("%s: skipped a watch event of unknown type %r", self.name, ev.type)
            if rv:
                self._rv = rv
            if self._rv == before:
                if ev.type != "BOOKMARK":
                    self._unmoved += 1
                continue
            self._events += 1
            if not self._worked:
                self._working()

    def _error_event(self, obj: Any) -> ApiError:
        """The ApiError of a watch ERROR event whose object is a Status (`obj`, any JSON): its code when it is a
        positive integer, else 500; its reason and message when they are strings (`status_text`), else Unknown and
        the object itself."""
        status = obj if isinstance(obj, dict) else {}
        code = status.get("code")
        return ApiError(code if type(code) is int and code > 0 else 500, status_text(status.get("reason"), "Unknown"),
                        status_text(status.get("message"), str(obj)[:500]), cluster=self.client.cluster,
                        verb="watch", resource=self.resource.qualified)

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
