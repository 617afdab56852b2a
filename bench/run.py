"""Every benchmark with one command: prints one table, writes `results.json` and `bench.png` (time and
CPU against object count, syncer beside floor) into --out.

    python -m bench.run [--quick] [--out DIR] [--check BASELINE.json] [--write-baseline BASELINE.json]

Each figure stands beside its floor measured in the same run (bench/floor.py, bench/floor_watch.py: the
same API work with aiohttp, the same concurrency, no controller logic). The API servers run in their own
process (bench/servers.py); the syncer runs as `runtimeclass-syncer run`, as a user starts it.

--quick is the small version CI runs (N = 100, short windows). --check fails (exit 1) when a figure is
worse than the baseline's by more than half: a ratio or a cost 1.5x the baseline's, a rate below 1/1.5
of it.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench import footprint, harness, initial_sync, latency, patch_rate

REGRESSION = 1.5  # "worse by more than half"


@dataclass
class Figure:
    """One row of the table. `higher_is_better` for rates; `target` is the issue's bound on `value`."""

    key: str
    what: str
    value: float
    unit: str
    syncer: str = ""
    floor: str = ""
    target: float | None = None
    higher_is_better: bool = False

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        return self.value >= self.target if self.higher_is_better else self.value <= self.target


def _median_run(runs: list[initial_sync.SyncRun]) -> initial_sync.SyncRun:
    return sorted(runs, key=lambda r: r.wall)[len(runs) // 2]


async def measure(quick: bool) -> tuple[list[Figure], dict[str, Any]]:
    """Run every benchmark; returns the table's figures and the raw measurements."""
    sizes = [100] if quick else [100, 1000, 5000]
    rounds = 3
    raw: dict[str, Any] = {"sizes": sizes, "initial_sync": {}}
    figures: list[Figure] = []
    for n in sizes:
        # syncer and floor alternate, so that a slow spell of the (shared) machine hits both alike
        # at the largest N of a full run also the informer reference (bench/floor_informers.py), for comparison
        whos = ("syncer", "floor", "floor-informers") if n == sizes[-1] and not quick else ("syncer", "floor")
        measured: dict[str, list[initial_sync.SyncRun]] = {who: [] for who in whos}
        for _ in range(rounds):
            for who in whos:
                measured[who].append(await initial_sync.one(n, who))
        runs = {who: _median_run(r) for who, r in measured.items()}
        raw["initial_sync"][n] = {who: asdict(r) for who, r in runs.items()}
        s, f = runs["syncer"], runs["floor"]
        figures.append(Figure(f"sync_wall_{n}", f"initial sync N={n}: wall time ratio", s.wall / f.wall, "x",
                              f"{s.wall:.2f} s", f"{f.wall:.2f} s", 1.5))
        figures.append(Figure(f"sync_cpu_{n}", f"initial sync N={n}: CPU ratio", s.cpu / f.cpu, "x",
                              f"{s.cpu:.2f} s", f"{f.cpu:.2f} s", 1.5))
        figures.append(Figure(f"sync_requests_{n}", f"initial sync N={n}: API requests per pod",
                              s.request_total / n, "", f"{s.request_total}", f"{f.request_total}"))
        if "floor-informers" in runs:
            r = runs["floor-informers"]
            reference = "the informer reference (bench/floor_informers.py, no target)"
            figures.append(Figure(f"sync_wall_{n}_informers", f"initial sync N={n}: wall time ratio to {reference}",
                                  s.wall / r.wall, "x", f"{s.wall:.2f} s", f"{r.wall:.2f} s"))
            figures.append(Figure(f"sync_cpu_{n}_informers", f"initial sync N={n}: CPU ratio to {reference}",
                                  s.cpu / r.cpu, "x", f"{s.cpu:.2f} s", f"{r.cpu:.2f} s"))
        print(f"initial sync N={n}: syncer {s}, floor {f}", file=sys.stderr, flush=True)
    if len(sizes) > 2:
        small, mid, big = (raw["initial_sync"][n]["syncer"] for n in sizes)
        marginal = [(r["cpu"] - small["cpu"]) / (n - sizes[0]) for r, n in ((mid, sizes[1]), (big, sizes[2]))]
        figures.append(Figure("per_object_flatness", f"CPU per object, N={sizes[2]} over N={sizes[1]} "
                              "(above the N=100 run)", marginal[1] / marginal[0], "x",
                              f"{marginal[1] * 1e3:.2f} ms", f"{marginal[0] * 1e3:.2f} ms (N={sizes[1]})", 1.2))

    changes = 20 if quick else 500
    lat = {who: await latency.one(who, changes) for who in ("syncer", "floor")}
    raw["latency"] = {who: r.by_kind for who, r in lat.items()}
    for kind in latency.KINDS:
        s99, f99 = lat["syncer"].percentile(0.99, kind), lat["floor"].percentile(0.99, kind)
        figures.append(Figure(f"latency_p99_{kind}", f"change latency p99, {kind} ({changes} changes)", s99 / f99,
                              "x", f"p50 {lat['syncer'].percentile(0.5, kind) * 1e3:.1f} / p99 {s99 * 1e3:.1f} ms",
                              f"p50 {lat['floor'].percentile(0.5, kind) * 1e3:.1f} / p99 {f99 * 1e3:.1f} ms", 2.0))
    s99, f99 = lat["syncer"].p99, lat["floor"].p99
    figures.append(Figure("latency_p99", f"change latency p99, all kinds ({4 * changes} changes)", s99 / f99, "x",
                          f"p50 {lat['syncer'].p50 * 1e3:.1f} / p99 {s99 * 1e3:.1f} ms",
                          f"p50 {lat['floor'].p50 * 1e3:.1f} / p99 {f99 * 1e3:.1f} ms", 2.0))
    print("latency done", file=sys.stderr, flush=True)

    fp = await (footprint.run(200, 1000, 10.0, 10.0) if quick else footprint.run())
    raw["footprint"] = asdict(fp)
    figures += [
        Figure("memory_per_object", f"resident memory per cached object ({fp.cached_objects} objects)",
               fp.bytes_per_object / 1024, "KiB", f"{(fp.rss_full - fp.rss_empty) / 2 ** 20:.1f} MiB", "", 2.0),
        Figure("memory_churn_growth", "resident memory growth over the churn", fp.churn_growth / 2 ** 20, "MiB",
               target=1.0),
        Figure("idle_cpu", "idle CPU, share of a core", fp.idle_cpu_share * 100, "%", target=0.1),
        Figure("ready_seconds", "start-up: process start to /readyz", fp.ready_seconds, "s"),
        Figure("import_seconds", "start-up: imports of `run`", fp.import_seconds, "s",
               f"{fp.import_seconds:.2f} s", f"{fp.floor_import_seconds:.2f} s (aiohttp)"),
    ]
    print("footprint done", file=sys.stderr, flush=True)

    rate, batched = await patch_rate.rate(500 if quick else 3000)
    n = 100 if quick else 1000
    pairs = [(await initial_sync.one(n, "syncer"), await initial_sync.one(n, "syncer", harness.PATCHED_CONFIG))
             for _ in range(rounds)]
    plain, patched = _median_run([p for p, _ in pairs]), _median_run([q for _, q in pairs])
    raw["patches"] = {"rate": rate, "batched": batched, "plain": asdict(plain), "patched": asdict(patched)}
    figures += [
        Figure("patch_rate", "patch evaluations per second (async path)", rate, "/s",
               "one V8 call per object" if batched else "one V8 call per patch", target=10_000,
               higher_is_better=True),
        Figure("patched_over_plain", f"patched / unpatched initial sync N={n}, wall", patched.wall / plain.wall, "x",
               f"{patched.wall:.2f} s", f"{plain.wall:.2f} s (unpatched)", 1.3),
    ]
    return figures, raw


def render(figures: list[Figure]) -> str:
    """The table as GitHub markdown."""
    rows = ["| figure | value | syncer | floor / reference | target | met |", "|---|---|---|---|---|---|"]
    for f in figures:
        target = "" if f.target is None else f"{'>=' if f.higher_is_better else '<='} {f.target:g} {f.unit}"
        met = {None: "", True: "yes", False: "**no**"}[f.met]
        rows.append(f"| {f.what} | {f.value:.3g} {f.unit} | {f.syncer} | {f.floor} | {target} | {met} |")
    return "\n".join(rows)


def plot(raw: dict[str, Any], path: Path) -> None:
    """Time and CPU against object count, syncer and floor (matplotlib, PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = raw["sizes"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, field, label in ((axes[0], "wall", "wall time (s)"), (axes[1], "cpu", "CPU of the process (s)")):
        for who, style in (("syncer", "o-"), ("floor", "s--")):
            ax.plot(sizes, [raw["initial_sync"][n][who][field] for n in sizes], style, label=who)
        ax.set_xlabel("host RuntimeClasses = virtual pods (N)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Initial sync against the floor (same API work, no controller logic)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def check(figures: list[Figure], baseline: dict[str, float]) -> list[str]:
    """The figures worse than the baseline's by more than half."""
    out = []
    for f in figures:
        base = baseline.get(f.key)
        if base is None or f.key in ("ready_seconds", "import_seconds", "memory_churn_growth", "idle_cpu") \
                or f.key.startswith("latency_p99_"):
            continue  # absolute times, tiny quantities and the p99 of a few samples: reported, not gated
        worse = f.value < base / REGRESSION if f.higher_is_better else f.value > base * REGRESSION
        if worse:
            out.append(f"{f.what}: {f.value:.3g} {f.unit}, baseline {base:.3g} {f.unit}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the small version: N = 100, short windows")
    ap.add_argument("--out", type=Path, default=Path("bench/results"))
    ap.add_argument("--check", type=Path, help="fail when a figure regresses by more than half from this file")
    ap.add_argument("--write-baseline", type=Path, help="write this run's figures as a baseline")
    args = ap.parse_args()
    # The syncer runs as installed: `pip install .` (and so the image) compiles the package's bytecode, an
    # editable checkout under PYTHONDONTWRITEBYTECODE=1 (as on the project's machines) would compile every
    # module at every start instead.
    compileall.compile_dir(str(harness.ROOT / "syncer"), quiet=1)
    figures, raw = asyncio.run(measure(args.quick))
    args.out.mkdir(parents=True, exist_ok=True)
    table = render(figures)
    print(table)
    (args.out / "results.json").write_text(json.dumps({"figures": [asdict(f) for f in figures], "raw": raw},
                                                      indent=1, default=str))
    (args.out / "table.md").write_text(table + "\n")
    if not args.quick:
        plot(raw, args.out / "bench.png")
    if args.write_baseline:
        args.write_baseline.write_text(json.dumps({f.key: round(f.value, 4) for f in figures}, indent=1) + "\n")
    if args.check:
        regressions = check(figures, json.loads(args.check.read_text()))
        for r in regressions:
            print(f"regression: {r}", file=sys.stderr)
        if regressions:
            return 1
        print(f"no figure regressed by more than half against {args.check}", file=sys.stderr)
    walls = [f.value for f in figures if f.key.startswith("sync_wall")]
    print(f"median syncer/floor wall ratio of the initial syncs: {statistics.median(walls):.2f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
