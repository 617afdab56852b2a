"""Records core/v1 Events on objects, the way client-go's event recorder and correlator do.

Repeats of the same event (same object uid, type, reason, message and source) raise `count` and
`lastTimestamp` of one Event instead of creating new ones. Unlike client-go, whose event names are
`<object>.<timestamp>`, the name here is derived from that identity, so a restarted syncer finds and
updates the Event it wrote before instead of adding a second one. The correlation cache is an LRU of
4096 entries, as in client-go (`maxLruCacheEntries`).
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from syncer.kube.client import ApiError, KubeClient
from syncer.kube.clock import now_rfc3339
from syncer.kube.resources import EVENTS, APIResource

log = logging.getLogger(__name__)

Obj = dict[str, Any]
_LRU_SIZE = 4096


def event_name(obj_name: str, identity: str) -> str:
    """`<object name>.<16 hex digits of sha256(identity)>`, at most 253 characters."""
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    return f"{obj_name[:253 - 17]}.{digest}"


class EventRecorder:
    """Writes Events for one reporting component to one cluster.

    Args:
        client: the cluster the events go to (the virtual cluster for pod-syncer events).
        component: `source.component` and `reportingComponent` (e.g. "pod-syncer").
        instance: `reportingInstance` (e.g. "pod-syncer-<hostname>").
        clock: returns the current time as an RFC 3339 string (tests may fix it).
    """

    def __init__(self, client: KubeClient, component: str, instance: str,
                 clock: Callable[[], str] = now_rfc3339) -> None:
        self.client = client
        self.component = component
        self.instance = instance
        self.clock = clock
        self._seen: OrderedDict[str, int] = OrderedDict()  # identity -> count (the name derives from it)

    async def record(self, res: APIResource, obj: Obj, type_: str, reason: str, message: str,
                     action: str) -> Obj:
        """Record (or count again) an event about `obj`, an object of resource `res`.

        Returns the Event as stored. Raises ApiError when the API refuses the write.
        """
        meta = obj["metadata"]
        identity = "\x00".join((meta.get("namespace", ""), res.kind, meta["name"], meta.get("uid", ""), type_,
                                reason, message, self.component))
        namespace = meta.get("namespace") or "default"
        name = event_name(meta["name"], identity)
        now = self.clock()
        known = self._seen.get(identity)
        if known is not None:
            self._seen.move_to_end(identity)
            try:
                return await self._count(namespace, name, known + 1, now, identity)
            except ApiError as e:
                if not e.not_found:
                    raise
                # the Event expired or was deleted: start a new one
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {"kind": res.kind, "apiVersion": res.api_version, "namespace": meta.get("namespace"),
                               "name": meta["name"], "uid": meta.get("uid"),
                               "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": type_,
            "source": {"component": self.component},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self.instance, "action": action,
        }
        try:
            stored = await self.client.create(EVENTS, event, namespace)
        except ApiError as e:
            if not e.already_exists:
                raise
            existing = await self.client.get(EVENTS, name, namespace)  # written by an earlier run
            return await self._count(namespace, name, int(existing.get("count") or 1) + 1, now, identity)
        self._remember(identity, 1)
        return stored

    async def _count(self, namespace: str, name: str, count: int, now: str, identity: str) -> Obj:
        stored = await self.client.patch(EVENTS, name, {"count": count, "lastTimestamp": now}, namespace)
        self._remember(identity, count)
        return stored

    def _remember(self, identity: str, count: int) -> None:
        self._seen[identity] = count
        self._seen.move_to_end(identity)
        while len(self._seen) > _LRU_SIZE:
            self._seen.popitem(last=False)
