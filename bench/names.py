"""The benchmark workload's fixed names, in a module that imports nothing: the floor scripts read them
without importing the API servers (`bench/servers.py` imports kubesim, which the floor must not pay for)."""

from __future__ import annotations

VCLUSTER, HOST_NAMESPACE = "bench", "bench"
SELECTOR_LABEL = ("tier", "tenant")
