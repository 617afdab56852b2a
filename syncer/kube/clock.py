"""Timestamps as the Kubernetes API writes them (RFC 3339, UTC, second precision, `Z`)."""

from __future__ import annotations

import datetime as dt


def rfc3339(when: dt.datetime) -> str:
    """Format an aware datetime as `2026-01-02T03:04:05Z`."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339(offset_seconds: float = 0.0) -> str:
    """The current time (plus `offset_seconds`) formatted by `rfc3339`."""
    return rfc3339(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset_seconds))
