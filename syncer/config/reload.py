"""Reload of the runtime policy file while running (behaviour.md section 6).

The file's folder is watched with watchfiles (inotify through the Rust `notify` crate; no polling), so
each way a file gets replaced is seen: an in-place write, an atomic rename over it, and the symlink swap
of a Kubernetes ConfigMap volume (`..data` re-pointed to a new timestamped folder). After any change in
the folder the file is read again; a valid policy that differs from the one in force is handed to
`apply`, an invalid one is logged with every error and the policy in force is kept.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from syncer.config.model import ConfigError, SyncerConfig
from syncer.config.policy import Policy, policy_from_text

log = logging.getLogger(__name__)


async def watch_policy(path: Path, config: SyncerConfig, apply: Callable[[Policy], None], stop: asyncio.Event,
                       *, debounce_ms: int = 200, rejected: Callable[[list[str]], None] | None = None) -> None:
    """Watch `path` until `stop` is set; call `apply(policy)` for each valid change (within about
    `debounce_ms` milliseconds plus the read) and `rejected(errors)` for each invalid one. Never raises
    for a bad file."""
    from watchfiles import awatch  # only a process with --policy loads it

    try:
        last = await asyncio.to_thread(path.read_bytes)
    except OSError:
        last = b""
    async for _ in awatch(path.parent, stop_event=stop, debounce=debounce_ms, recursive=True):
        try:
            text = await asyncio.to_thread(path.read_bytes)
        except OSError as e:
            log.warning("policy %s cannot be read (%s); keeping the policy in force", path, e.strerror or e)
            continue
        if text == last:
            continue
        last = text
        try:
            policy = policy_from_text(text, path, config)
        except ConfigError as e:
            log.error("policy %s is invalid; keeping the policy in force: %s", path, "; ".join(e.errors))
            if rejected is not None:
                rejected(e.errors)
            continue
        log.info("policy %s reloaded; re-examining the pods not on the host", path)
        apply(policy)
