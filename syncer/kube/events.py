"""Records core/v1 Events on objects, the way client-go's event recorder and correlator do.

Repeats of the same event (same object uid, type, reason, message and source) raise `count` and
`lastTimestamp` of one Event instead of creating new ones. Unlike client-go, whose event names are
`<object>.<timestamp>`, the name here is derived from that identity, so a restarted syncer finds and
updates the Event it wrote before instead of adding a second one. The correlation cache is an LRU of
4096 entries, as in client-go (`maxLruCacheEntries`).

As client-go's recorder (k8s.io/client-go/tools/record/event.go, `recordToSink` and `recordEvent`), a failed
event write never fails the work it reports on:

- an Event the API server refuses (an HTTP error that is not one of the transient ones below: a ResourceQuota on
  `count/events` "exceeded quota", a namespace being terminated or gone, a webhook's denial, a 422) is dropped at
  once and not retried (client-go: a `StatusError` is not retried). It is logged at warning once per namespace and
  cause until an event is written there again; a terminating or deleted namespace only at debug (client-go drops
  NamespaceTerminating silently). A 403 that is the syncer's missing RBAC is logged at error once and kept in
  `forbidden` (readiness), until a write of that verb succeeds or, refused events being dropped (no retry will
  tell), FORBIDDEN_SHOWN seconds pass without another refusal;
- a write that got no answer, was throttled (429) or met server trouble (5xx) raises `ApiError`: the caller's
  reconcile retries it with its backoff, so the callers that mark an event recorded once it is written keep
  working. One event is tried at most 12 times in a row (client-go's `maxTriesPerEvent`); the 12th failure drops
  it. client-go retries such a write itself, every 10 s; here the retry is the reconcile's, which stops with it
  (a lost lease), and client-go's REST client retries 429 and 5xx with Retry-After before its recorder sees them;
- client-go's `EventSourceObjectSpamFilter`: 25 events per source and object (`getSpamKey`: component, kind,
  namespace, name, uid, apiVersion), then one per 300 s; a filtered event is not written but is counted, so the
  next one written carries its count (the correlator counts before it filters). Its buckets are an LRU of 4096.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import Clock, RealClock, now_rfc3339
from syncer.kube.controller import note_forbidden, rbac_denial, refusal_cause
from syncer.kube.resources import EVENTS, APIResource

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_LRU_SIZE = 4096
MAX_TRIES = 12  # client-go tools/record/event.go maxTriesPerEvent
FORBIDDEN_SHOWN = 600.0  # seconds an RBAC refusal of an event write stays in readiness without another one
SPAM_BURST = 25  # client-go tools/record/events_cache.go defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS: one more event every 5 minutes
_QUIET = ("namespace terminating", "namespace not found")  # refusals logged at debug only

K = TypeVar("K")
V = TypeVar("V")


def event_name(obj_name: str, identity: str) -> str:
    """`<object name>.<16 hex digits of sha256(identity)>`, at most 253 characters."""
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{obj_name[:253 - 17]}.{digest}"


def _put(lru: OrderedDict[K, V], key: K, value: V) -> None:
    """Set `key` as the most recently used entry of `lru`, dropping the least recently used beyond 4096."""
    lru[key] = value
    lru.move_to_end(key)
    while len(lru) > _LRU_SIZE:
        lru.popitem(last=False)


@dataclass
class _Seen:
    """What this process knows of one event: how often it happened, since when, and whether the API server holds
    it under its name (then a repeat is a PATCH of its count)."""

    count: int
    first: str
    written: bool


class SpamFilter:
    """client-go's `EventSourceObjectSpamFilter`: a token bucket per spam key (source and object) of `burst`
    tokens, refilled at `qps` per second on `clock` (golang.org/x/time/rate, which client-go's
    `flowcontrol.NewTokenBucketRateLimiterWithClock` uses: it starts full). The buckets are an LRU of 4096."""

    def __init__(self, clock: Clock, burst: int = SPAM_BURST, qps: float = SPAM_QPS) -> None:
        self.clock = clock
        self.burst = burst
        self.qps = qps
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)

    def _tokens(self, key: str) -> float:
        tokens, at = self._buckets.get(key, (float(self.burst), self.clock.now()))
        return min(float(self.burst), tokens + (self.clock.now() - at) * self.qps)

    def allow(self, key: str) -> bool:
        """Take a token for `key` (`TryAccept`): False when none is left (the event is spam: not written)."""
        tokens = self._tokens(key)
        if tokens < 1.0:  # refused: the bucket is left as it was (x/time/rate's reserveN), only used
            if key in self._buckets:
                self._buckets.move_to_end(key)
            return False
        _put(self._buckets, key, (tokens - 1.0, self.clock.now()))
        return True

    def refund(self, key: str) -> None:
        """Give back the token of a write that will be tried again (client-go filters an event once, before its
        tries; here each try comes through `record`)."""
        _put(self._buckets, key, (min(float(self.burst), self._tokens(key) + 1.0), self.clock.now()))


class EventRecorder:
    """Writes Events for one reporting component to one cluster.

    Args:
        client: the cluster the events go to (the virtual cluster for pod-syncer events).
        component: `source.component` and `reportingComponent` (e.g. "pod-syncer").
        instance: `reportingInstance` (e.g. "pod-syncer-<hostname>").
        timestamps: returns the current time as an RFC 3339 string (tests may fix it).
        clock: the spam filter's time (default the real one).
    Attributes:
        forbidden: (cluster, verb, resource) -> the API server's message, for each event write refused by the
            syncer's RBAC (readiness shows them), until a write of that verb succeeds or FORBIDDEN_SHOWN seconds
            pass without another refusal of it.
    """

    def __init__(self, client: KubeClient, component: str, instance: str,
                 timestamps: Callable[[], str] = now_rfc3339, clock: Clock | None = None) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self.timestamps = timestamps
        self.spam = SpamFilter(clock or RealClock())
        self._forbidden: dict[tuple[str, str, str], str] = {}
        self._forbidden_at: dict[tuple[str, str, str], float] = {}  # when each was last refused (the clock's)
        self._seen: OrderedDict[str, _Seen] = OrderedDict()  # identity -> what is known (the name derives from it)
        self._tries: OrderedDict[str, int] = OrderedDict()  # identity -> failed tries in a row (transient errors)
        self._logged: OrderedDict[str, set[str]] = OrderedDict()  # namespace -> refusal causes logged

    @property
    def forbidden(self) -> dict[tuple[str, str, str], str]:
        """The RBAC refusals of event writes readiness shows (see the class's attributes): a refused event is
        dropped, so no retry tells whether the RBAC was fixed; one not refused again within FORBIDDEN_SHOWN seconds
        is shown no more (the next refused event shows it again)."""
        now = self.spam.clock.now()
        for cause in [c for c, at in self._forbidden_at.items() if now - at > FORBIDDEN_SHOWN]:
            self._forbidden.pop(cause, None)
            del self._forbidden_at[cause]
        return self._forbidden

    async def record(self, res: APIResource, obj: Obj, type_: str, reason: str, message: str,
                     action: str) -> Obj | None:
        """Record (or count again) an event about `obj`, an object of resource `res`.

        Returns the Event as stored, or None when it was not written: more than the spam filter allows for the
        object, refused by the API server (dropped, not retried), or failed for the 12th time in a row.

        Raises:
            ApiError: the write got no answer, was throttled or met server trouble (retry it: the caller's
                reconcile is retried with backoff), before the event's 12th try.
        """
        meta = obj["metadata"]
        identity = "\x00".join((meta.get("namespace", ""), res.kind, meta["name"], meta.get("uid", ""), type_,
                                reason, message, self.component))
        spam_key = "\x00".join((self.component, "", res.kind, meta.get("namespace", ""), meta["name"],
                                meta.get("uid", ""), res.api_version))  # client-go getSpamKey (no source host)
        namespace = meta.get("namespace") or "default"
        name = event_name(meta["name"], identity)
        now = self.timestamps()
        seen = self._seen.get(identity)
        if seen is not None:
            self._seen.move_to_end(identity)
        after = _Seen(seen.count + 1, seen.first, seen.written) if seen is not None else _Seen(1, now, False)
        what = f"{reason} on {res.kind} " + (f"{meta['namespace']}/{meta['name']}" if meta.get("namespace")
                                             else meta["name"])
        if not self.spam.allow(spam_key):  # counted, as client-go's correlator counts before it filters
            _put(self._seen, identity, after)
            log.debug("event %s not written: more than %d events about the object, one more each 300 s (the "
                      "spam filter of client-go)", what, SPAM_BURST)
            return None
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": res.kind, "apiVersion": res.api_version, "namespace": meta.get("namespace"),
                               "name": meta["name"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component},
            "firstTimestamp": after.first, "lastTimestamp": now, "count": after.count,
            "reportingComponent": self.component, "reportingInstance": self.instance, "action": action,
        }
        try:
            verb, stored = await self._write(namespace, name, event, seen)
        except ApiError as e:
            if e.transient or e.status < 400:  # no answer, throttled, server trouble, an answer not understood
                tries = self._tries.pop(identity, 0) + 1
                if tries < MAX_TRIES:
                    _put(self._tries, identity, tries)
                    self.spam.refund(spam_key)
                    raise
                log.warning("event %s not recorded: its write failed %d times in a row and is not tried again "
                            "(client-go's limit): %s", what, tries, e)
            else:
                self._tries.pop(identity, None)
                self._refused(e, what, namespace)
            _put(self._seen, identity, after)
            return None
        self._tries.pop(identity, None)
        _put(self._seen, identity, _Seen(int(stored.get("count") or after.count),
                                         str(stored.get("firstTimestamp") or after.first), True))
        self._logged.pop(namespace, None)
        for cause in [c for c in self._forbidden if c[1] == verb]:
            del self._forbidden[cause]
            self._forbidden_at.pop(cause, None)
            log.info("%s: %s %s on the %s cluster is allowed again", self.component, cause[1], cause[2], cause[0])
        return stored

    async def _write(self, namespace: str, name: str, event: Obj, known: _Seen | None) -> tuple[str, Obj]:
        """PATCH the count of an Event the server holds, else create it; returns (the verb that wrote it, the
        Event as stored)."""
        now = event["lastTimestamp"]
        if known is not None and known.written:
            try:
                return "patch", await self.client.patch(EVENTS, name, {"count": event["count"], "lastTimestamp": now},
                                                        namespace)
            except ApiError as e:
                if not e.not_found:
                    raise
                # the Event expired or was deleted: start a new one
                event = {**event, "count": 1, "firstTimestamp": now}
        try:
            return "create", await self.client.create(EVENTS, event, namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
        existing = await self.client.get(EVENTS, name, namespace)  # written by an earlier run
        return "patch", await self.client.patch(EVENTS, name, {"count": int(existing.get("count") or 1) + 1,
                                                               "lastTimestamp": now}, namespace)

    def _refused(self, e: ApiError, what: str, namespace: str) -> None:
        """Drop an event the API server refused: log it once per namespace and cause (the syncer's RBAC: at error,
        and kept in `forbidden`)."""
        if rbac_denial(e):
            self._forbidden_at[note_forbidden(self._forbidden, e, self.component, log)] = self.spam.clock.now()
            return
        label = refusal_cause(e) or ("namespace not found" if e.not_found and e.verb == "create"
                                     else f"HTTP {e.status} {e.reason}")
        logged = self._logged.get(namespace)
        if label in _QUIET or (logged is not None and label in logged):
            log.debug("event %s not recorded: the %s cluster refused it (%s): %s", what, e.cluster, label, e.message)
            return
        _put(self._logged, namespace, (logged or set()) | {label})
        log.warning("event %s not recorded: the %s cluster refused it (%s); refused events are not retried, and "
                    "this cause is logged once for namespace %s until an event is written there: %s",
                    what, e.cluster, label, namespace, e.message)
