"""Benchmarks of the syncer against floors measured in the same run (`make bench`; BENCHMARKS.md).

servers.py    the host and virtual API servers, seeded, in a process of their own
harness.py    processes, /proc CPU and memory, watch observers
floor.py      the initial sync's API work with no controller logic
names.py      the workload's fixed names (the floors import nothing else of the benchmark)
floor_watch.py  a bare watch-then-write loop (the floor of change latency)
initial_sync.py, latency.py, footprint.py, patch_rate.py   the benchmarks
run.py        all of them: the table, the plot, the baseline check
convergence.py  the reliability soak (`make soak`)
"""
