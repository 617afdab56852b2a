"""Logging setup: text (default) or one JSON object per line (`--log-format json`), written to stderr in
batches (`BatchingStreamHandler`)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import sys
from typing import TextIO

FLUSH_SECONDS = 0.2  # an info line is on stderr at most this long after it was logged
FLUSH_BYTES = 64 * 1024


class BatchingStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A StreamHandler that writes its lines in batches, like zap's BufferedWriteSyncer: one write for all
    the lines of a busy moment instead of a write (a system call on a line-buffered stderr) per line.

    A record at warning or above writes everything buffered at once, with it, and so does a buffer past
    64 KiB; other lines are written by a flush the running event loop schedules 0.2 s after the first of
    them, or at once when no event loop runs in the logging thread. `flush()` and `close()` (and so
    `logging.shutdown()` at exit) write what is left. At the default level this saves the write of every
    line, about 2% of the syncer's CPU in an initial sync of 5,000 objects (the lines' formatting stays).
    """

    def __init__(self, stream: TextIO, interval: float = FLUSH_SECONDS) -> None:
        super().__init__(stream)
        self.interval = interval
        self._lines: list[str] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)
            return
        self._lines.append(line)
        self._size += len(line)
        if record.levelno >= logging.WARNING or self._size >= FLUSH_BYTES:
            self._write()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop in this thread: nothing would flush later
            self._write()
            return
        if self._timer is None or self._timer_loop is not loop:
            self._timer, self._timer_loop = loop.call_later(self.interval, self.flush), loop

    def _write(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = self._timer_loop = None
        if self._lines:
            try:
                self.stream.write("".join(self._lines))
                self.stream.flush()
            except Exception:  # as StreamHandler: a broken stderr must not take the syncer down
                pass
            self._lines.clear()
            self._size = 0

    def flush(self) -> None:
        """Write every buffered line now."""
        self.acquire()
        try:
            self._write()
        finally:
            self.release()

    def close(self) -> None:
        self.flush()
        super().close()


class JsonFormatter(logging.Formatter):
    """`{"ts", "level", "logger", "msg"[, "error"]}` per record, for log collectors."""

    def format(self, record: logging.LogRecord) -> str:
        out = {"ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
               "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return json.dumps(out)


# What a text line shows of a control character, as Go's strconv.Quote (klog's quoting of a value) writes it: the C0
# controls and DEL, the C1 controls (NEL among them) and the Unicode line and paragraph separators, which editors and
# log viewers take for line breaks too. Nothing else changes (a tenant's UTF-8 text stays readable).
_ESCAPES: dict[int, str] = {
    **{c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F)}, **{c: f"\\u{c:04x}" for c in range(0x80, 0xA0)},
    0x07: "\\a", 0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r",
    0x2028: "\\u2028", 0x2029: "\\u2029"}
_IN_BLOCK = {k: v for k, v in _ESCAPES.items() if k != 0x0A}  # a traceback keeps its lines


def escape(text: str) -> str:
    """`text` on one line: each control character written as its escape (`\\n`, `\\r`, `\\x1b`, ...)."""
    return text.translate(_ESCAPES)


class TextFormatter(logging.Formatter):
    """`<time> <LEVEL> <logger>: <message>`, one line per record whatever its text holds.

    A message carries text from outside the syncer: an API server's error message, which relays a tenant's admission
    webhook's denial as it was written, and names of tenants' objects. Written as is, a newline in it started a line
    of its own, which a reader or a log collector took for a record of its own (a forged `ERROR ... lost the lease`).
    So a message's control characters are escaped (`escape`), as klog quotes a value (Go's strconv.Quote); a
    traceback or stack keeps its lines, each indented by a tab (klog writes a multi-line value so), with its other
    control characters escaped: no line of a record but its first starts at the margin, where every record's time
    stamp is. The JSON format (`JsonFormatter`) needs none of this: json.dumps escapes them.
    """

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        record.message = escape(record.getMessage())
        record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        for block in (record.exc_text, record.stack_info and self.formatStack(record.stack_info)):
            if block:
                line += "".join("\n\t" + part.translate(_IN_BLOCK) for part in block.split("\n"))
        return line


def setup(fmt: str = "text", level: int = logging.INFO) -> None:
    """Configure the root logger to stderr in `fmt` ("text" or "json")."""
    handler = BatchingStreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    # What no record here uses is not collected (the logging HOWTO's "Optimization": caller, thread and
    # process information), so a record costs its message and its line, and nothing below the level
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # a line per batch of file changes at info
