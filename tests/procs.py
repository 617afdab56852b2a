"""Run `runtimeclass-syncer run` as a real process and follow its log lines without blocking the loop."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class SyncerProcess:
    """A syncer subprocess whose stderr lines are collected as they come."""

    def __init__(self, *args: str, user: int | None = None, env: dict[str, str] | None = None,
                 python: str = sys.executable) -> None:
        """`args` follow `run`; `user` runs it as that uid and gid (needs root), `env` replaces the environment,
        `python` is the interpreter (this one by default)."""
        self.args = args
        self.python = python
        self.user = user
        self.env = env
        self.lines: list[str] = []
        self._changed = asyncio.Event()
        self.proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def start(self) -> SyncerProcess:
        self.proc = await asyncio.create_subprocess_exec(
            self.python, "-m", "syncer", "run", *self.args, cwd=REPO, env=self.env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            user=self.user, group=self.user, extra_groups=[] if self.user is not None else None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace"))
            self._changed.set()
        self._changed.set()

    async def wait_for_line(self, text: str, timeout: float = 20) -> str:
        """The first log line containing `text` (waits for it)."""
        async def scan() -> str:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                if self._reader is not None and self._reader.done():
                    raise AssertionError(f"process ended without logging {text!r}:\n{''.join(self.lines)}")
                self._changed.clear()
                await self._changed.wait()
        try:
            return await asyncio.wait_for(scan(), timeout)
        except TimeoutError:
            raise AssertionError(f"no log line with {text!r} within {timeout}s:\n{''.join(self.lines)}") from None

    async def stop(self, sig: str = "term", timeout: float = 10) -> int:
        """SIGTERM (or SIGKILL with sig="kill") and wait; returns the exit status."""
        assert self.proc is not None
        if self.proc.returncode is None:
            self.proc.terminate() if sig == "term" else self.proc.kill()
        code = await asyncio.wait_for(self.proc.wait(), timeout)
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        return code
