"""Log lines reach stderr in batches, but never late: within 0.2 s, at once with a warning, at exit."""

from __future__ import annotations

import asyncio
import io
import logging
import sys

from syncer.logs import BatchingStreamHandler
from tests.procs import REPO


class Stderr(io.StringIO):
    """A stream that keeps each write apart and says when one came."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []
        self.written = asyncio.Event()

    def write(self, s: str) -> int:
        self.writes.append(s)
        self.written.set()
        return super().write(s)


def _logger(stream: io.StringIO, interval: float = 0.05) -> tuple[logging.Logger, BatchingStreamHandler]:
    handler = BatchingStreamHandler(stream, interval=interval)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.getLogger(f"test-logs-{id(stream)}")
    log.propagate = False
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    return log, handler


async def test_info_lines_are_written_together_shortly_after_and_a_warning_writes_at_once() -> None:
    stream = Stderr()
    log, handler = _logger(stream)
    log.info("one")
    log.info("two")
    assert stream.writes == []  # buffered while the loop runs
    await asyncio.wait_for(stream.written.wait(), 1)  # the loop's flush, 0.05 s later
    assert stream.writes == ["INFO one\nINFO two\n"]  # one write for both
    log.info("three")
    log.warning("four")  # what an operator must act on is never held back, nor what came before it
    assert stream.getvalue().endswith("INFO three\nWARNING four\n")
    log.info("five")
    handler.close()  # logging.shutdown() at exit closes the handlers
    assert stream.getvalue().endswith("INFO five\n")


def test_without_an_event_loop_every_line_is_written_at_once() -> None:
    stream = io.StringIO()
    log, _ = _logger(stream)
    log.info("now")
    assert stream.getvalue() == "INFO now\n"


async def test_the_last_lines_of_a_process_reach_stderr() -> None:
    code = ("import asyncio, logging; from syncer import logs; logs.setup()\n"
            "async def main():\n"
            "    logging.getLogger('x').info('last words')\n"
            "asyncio.run(main())\n")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=REPO,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert err.decode().rstrip().endswith("INFO    x: last words")
