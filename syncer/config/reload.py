"""Reload of the runtime policy file while running (behaviour.md section 6).

The file's folder is watched with watchfiles (inotify through the Rust `notify` crate; no polling), so
each way a file gets replaced is seen: an in-place write, an atomic rename over it, and the symlink swap
of a Kubernetes ConfigMap volume (`..data` re-pointed to a new timestamped folder). After any change in
the folder the file is read again; a valid policy that differs from the one in force is handed to
`apply`, an invalid one is logged with every error and the policy in force is kept.

The watch is set up in watchfiles' own thread, some time after the task starts; a change made before it was
set up raises no event. So the file is read once more at the watch's first wake-up (its first change, or the
first `READY_MS` without one), which happens only after the watch exists: a change is never missed, however
early it comes. Later wake-ups without a change read nothing.

SIGHUP (`wake`) has the file read at once, as a change would: for a change no event shows, such as a write
to the file a symlink outside the watched folder points to.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from syncer.config.model import ConfigError, SyncerConfig
from syncer.config.policy import Policy, policy_from_text

log = logging.getLogger(__name__)

READY_MS = 1000  # watchfiles' wait in its thread (milliseconds): the first wake-up comes at most this late


async def watch_policy(path: Path, config: SyncerConfig, apply: Callable[[Policy], None], stop: asyncio.Event,
                       *, debounce_ms: int = 200, rejected: Callable[[list[str]], None] | None = None,
                       in_force: bytes | None = None, wake: asyncio.Event | None = None) -> None:
    """Watch `path` until `stop` is set; call `apply(policy)` for each valid change (within about
    `debounce_ms` milliseconds plus the read) and `rejected(errors)` for each invalid one. Never raises
    for a bad file.

    `in_force` is the text of the policy in force (`Policy.text`); a file that differs from it when the
    watch is up is a change. None: the file as it is when this task starts. `wake` (SIGHUP) has the file
    read at once whenever it is set; this clears it.
    """
    from watchfiles import awatch  # only a process with --policy loads it

    if in_force is None:
        try:
            in_force = await asyncio.to_thread(path.read_bytes)
        except OSError:
            in_force = b""
    last, up = in_force, False
    reading = asyncio.Lock()  # a read on a wake and one on an event: one after the other, each change applied once

    async def read() -> None:
        nonlocal last
        async with reading:
            try:
                text = await asyncio.to_thread(path.read_bytes)
            except OSError as e:
                log.warning("policy %s cannot be read (%s); keeping the policy in force", path, e.strerror or e)
                return
            if text == last:
                return
            last = text
            try:
                policy = policy_from_text(text, path, config)
            except ConfigError as e:
                log.error("policy %s is invalid; keeping the policy in force: %s", path, "; ".join(e.errors))
                if rejected is not None:
                    rejected(e.errors)
                return
            log.info("policy %s reloaded; re-examining the pods not on the host", path)
            apply(policy)

    async def on_wake(wake: asyncio.Event) -> None:
        while True:
            await wake.wait()
            wake.clear()
            await read()

    woken = asyncio.create_task(on_wake(wake)) if wake is not None else None
    try:
        async for changes in awatch(path.parent, stop_event=stop, debounce=debounce_ms, recursive=True,
                                    yield_on_timeout=True, rust_timeout=READY_MS):
            if not changes and up:
                continue
            up = True
            await read()
    finally:
        if woken is not None:
            woken.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await woken
