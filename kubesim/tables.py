"""Server-side printing (`meta.k8s.io/v1` Table) for `kubectl get`, with the columns kube-apiserver
prints for these resources (pkg/printers/internalversion)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from syncer.kube.resources import EVENTS, LEASES, NAMESPACES, PODS, RUNTIMECLASSES, APIResource

Obj = dict[str, Any]


def parse_time(value: str | None) -> dt.datetime | None:
    """Parse an RFC 3339 timestamp as the API writes it (`2026-01-02T03:04:05Z`), None if absent."""
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def human_duration(seconds: float) -> str:
    """kubectl's `duration.HumanDuration`: 5s, 3m20s, 2h10m, 4d, 2y..."""
    s = int(seconds)
    if s < 0:
        return "<invalid>"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = s // 3600
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    d = h // 24
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    return f"{d // 365}y"


def _age(ts: str | None, now: dt.datetime) -> str:
    t = parse_time(ts)
    return "<unknown>" if t is None else human_duration((now - t).total_seconds())


def _pod_row(p: Obj, now: dt.datetime) -> list[Any]:
    spec, status = p.get("spec") or {}, p.get("status") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for c in statuses:
        waiting = (c.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    if (p.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return [p["metadata"]["name"], f"{ready}/{len(spec.get('containers') or [])}", reason, restarts,
            _age(p["metadata"].get("creationTimestamp"), now), status.get("podIP") or "<none>",
            spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>", "<none>"]


def _event_row(e: Obj, now: dt.datetime) -> list[Any]:
    inv = e.get("involvedObject") or {}
    last = e.get("lastTimestamp") or e.get("eventTime") or e["metadata"].get("creationTimestamp")
    return [_age(last, now), e.get("type", ""), e.get("reason", ""),
            f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}", e.get("message", "")]


_COLUMNS: dict[str, tuple[list[tuple[str, str]], Callable[[Obj, dt.datetime], list[Any]]]] = {
    PODS.qualified: ([("Name", "string"), ("Ready", "string"), ("Status", "string"), ("Restarts", "string"),
                      ("Age", "string"), ("IP", "wide"), ("Node", "wide"), ("Nominated Node", "wide"),
                      ("Readiness Gates", "wide")], _pod_row),
    RUNTIMECLASSES.qualified: ([("Name", "string"), ("Handler", "string"), ("Age", "string")],
                               lambda o, now: [o["metadata"]["name"], o.get("handler", ""),
                                               _age(o["metadata"].get("creationTimestamp"), now)]),
    NAMESPACES.qualified: ([("Name", "string"), ("Status", "string"), ("Age", "string")],
                           lambda o, now: [o["metadata"]["name"], (o.get("status") or {}).get("phase", "Active"),
                                           _age(o["metadata"].get("creationTimestamp"), now)]),
    EVENTS.qualified: ([("Last Seen", "string"), ("Type", "string"), ("Reason", "string"),
                        ("Object", "string"), ("Message", "string")], _event_row),
    LEASES.qualified: ([("Name", "string"), ("Holder", "string"), ("Age", "string")],
                       lambda o, now: [o["metadata"]["name"], (o.get("spec") or {}).get("holderIdentity", ""),
                                       _age(o["metadata"].get("creationTimestamp"), now)]),
}


def to_table(res: APIResource, objects: list[Obj], resource_version: str, include_object: str,
             now: dt.datetime | None = None) -> Obj:
    """Render objects as a Table. `include_object` is the `includeObject` query value
    (`None`, `Object`, default `Metadata`)."""
    now = now or dt.datetime.now(dt.UTC)
    columns, row_fn = _COLUMNS.get(res.qualified, ([("Name", "string"), ("Age", "string")],
                                                   lambda o, n: [o["metadata"]["name"],
                                                                 _age(o["metadata"].get("creationTimestamp"), n)]))
    rows = []
    for o in objects:
        row: Obj = {"cells": row_fn(o, now)}
        if include_object == "Object":
            row["object"] = o
        elif include_object != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o.get("metadata", {})}
        rows.append(row)
    return {
        "kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
        # a "wide" column is a string column kubectl shows only with `-o wide` (priority 1)
        "columnDefinitions": [{"name": n, "type": "string" if t == "wide" else t,
                               "format": "name" if n == "Name" else "", "description": "",
                               "priority": 1 if t == "wide" else 0} for n, t in columns],
        "rows": rows,
    }
