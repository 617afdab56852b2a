"""Soak: thousands of random steps (user actions, configuration changes, syncer restarts, API-server
faults) in scenarios of 40 steps; after each scenario every invariant is checked. Prints the figures the
README's reliability section reports.

    python -m bench.convergence [--steps 3000] [--seed 20261122]     (make soak ARGS="--seed N")
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

from tests.chaos import run_random


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20261122)
    args = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = asyncio.run(run_random(Path(tmp), args.seed, args.steps))
    print(f"seed {args.seed}, {time.perf_counter() - started:.0f} s")
    print(report.render())
    return 0 if not report.violations and not report.lost else 1


if __name__ == "__main__":
    raise SystemExit(main())
