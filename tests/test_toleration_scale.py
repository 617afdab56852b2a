"""A tenant's pod may carry any number of tolerations (ValidatePod sets no limit). Comparing them pairwise on each
update reconcile of such a pod blocked the event loop for seconds (2,000 tolerations: about 20 s of comparisons
after one label change), stalling every other tenant's pods, token renewals and the lease. The work per update must
grow linearly with the count: counted here as calls of the toleration comparisons, not timed."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from syncer.controllers.podtranslate import scheduling
from syncer.kube.resources import PODS
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, Clusters, eventually, pod, rc_config, running_syncer

N = 1500


async def test_an_update_of_a_pod_with_many_tolerations_compares_each_a_bounded_number_of_times(
        clusters: Clusters, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Counter[str] = Counter()
    for name in ("same_toleration", "tolerates_superset", "toleration_key"):
        original = getattr(scheduling, name)

        def counted(*a: Any, _f: Any = original, _n: str = name, **k: Any) -> Any:
            calls[_n] += 1
            return _f(*a, **k)
        monkeypatch.setattr(scheduling, name, counted)
    big = pod("big", tolerations=[{"key": f"k{i}", "operator": "Exists", "effect": "NoSchedule"} for i in range(N)])
    host_name = f"{HOST_NS}/big-x-default-x-test"
    async with running_syncer(clusters, rc_config()) as syncer:
        await clusters.virtual.create(PODS, big, "default")
        await eventually(lambda: syncer.pod_reconciler.host_pods.get(host_name) is not None, "the pod synced")
        calls.clear()
        await clusters.virtual.patch(PODS, "big", {"metadata": {"labels": {"touch": "1"}}}, "default")
        await wait_for(clusters.host, PODS, lambda objs: any(
            (o["metadata"].get("labels") or {}).get("touch") == "1" for o in objs.values()),
            namespace=HOST_NS, timeout=60, what="the label reached the host pod")
    # a linear plan compares each toleration a few times per reconcile (and a reconcile or two follow the write);
    # the pairwise one made N * N / 2 = 1,125,000 calls
    assert sum(calls.values()) <= 20 * N, calls
