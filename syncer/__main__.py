"""`python -m syncer ...` is the same as the `runtimeclass-syncer` console script.

SIGTERM, SIGINT and SIGHUP are noted from the first line, before any other import (`syncer.cli.EarlySignals`): a
SIGTERM that comes while the process is still starting is then a clean stop instead of the default's end with
status 143 and no log line.
"""

import signal

_received: list[int] = []
_previous = {sig: signal.signal(sig, lambda signum, _frame: _received.append(signum))
             for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}

from syncer.cli import EarlySignals, main  # noqa: E402  (after the handlers: importing takes a while)

raise SystemExit(main(early=EarlySignals(_received, _previous)))
