"""Property-based convergence suite (hypothesis): random interleavings of host and virtual changes,
configuration changes with syncer restarts, and API-server faults; after quiescence every invariant of
behaviour.md sections 2 and 3 holds, nothing is lost, and the syncer never wrote what it must not.
CI runs a fixed (derandomized) set of examples; `make soak` runs thousands of random steps."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncer.kube.resources import PODS
from tests.chaos import (
    ENVS,
    FAULT_RESOURCES,
    FAULT_STATUSES,
    FAULT_VERBS,
    POD_NAMES,
    RC_NAMES,
    SELECTORS,
    Report,
    Scenario,
    Step,
    run_random,
)

clusters = st.sampled_from(("host", "virtual"))
steps = st.one_of(
    st.builds(Step, st.sampled_from(("host_rc_put", "virtual_rc_put")), st.sampled_from(RC_NAMES),
              st.sampled_from(ENVS)),
    st.builds(Step, st.sampled_from(("host_rc_delete", "virtual_rc_delete")), st.sampled_from(RC_NAMES)),
    st.builds(Step, st.just("pod_create"), st.sampled_from(POD_NAMES), st.sampled_from((*RC_NAMES, ""))),
    st.builds(Step, st.sampled_from(("pod_delete", "pod_label", "host_pod_evict", "pod_image", "host_pod_squat",
                                   "pod_debug")),
              st.sampled_from(POD_NAMES), st.sampled_from(("1", "2"))),
    st.builds(Step, st.just("config"), st.sampled_from(tuple(SELECTORS))),
    st.builds(Step, st.just("syncer_restart")),
    st.builds(Step, st.just("fault"), clusters,
              st.builds(lambda v, r: f"{v}/{r}", st.sampled_from(FAULT_VERBS), st.sampled_from(FAULT_RESOURCES)),
              st.builds(lambda s, n: s * 10 + n, st.sampled_from(FAULT_STATUSES), st.integers(1, 3))),
    st.builds(Step, st.sampled_from(("cut_watches", "expire_history", "server_restart", "latency")), clusters),
)


def run(selector: str, plan: list[Step], kubelet: bool = False) -> Report:
    async def go() -> Report:
        with tempfile.TemporaryDirectory() as tmp:
            async with Scenario(Path(tmp), selector, kubelet=kubelet) as s:
                return await s.run(plan)
    return asyncio.run(go())


@settings(max_examples=40, deadline=None, derandomize=True, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(tuple(SELECTORS)), st.lists(steps, min_size=3, max_size=30), st.booleans())
def test_random_interleavings_converge(selector: str, plan: list[Step], kubelet: bool) -> None:
    report = run(selector, plan, kubelet)
    assert report.violations == [] and report.lost == 0, report.render()


def test_every_fault_kind_in_one_scenario() -> None:
    plan = [
        Step("host_rc_put", "gvisor", "development"), Step("host_rc_put", "kata", "production"),
        Step("pod_create", "p0", "gvisor"), Step("pod_create", "p1", "kata"), Step("pod_create", "p5", ""),
        Step("fault", "virtual", "create/runtimeclasses", 4092), Step("fault", "host", "create/pods", 5002),
        Step("fault", "virtual", "create/events", 5031), Step("fault", "host", "list/", 4291),
        Step("fault", "virtual", "update/runtimeclasses", 4091),
        Step("host_rc_put", "youki", "development"), Step("pod_create", "p2", "youki"),
        Step("cut_watches", "host"), Step("host_rc_put", "kata", "development"),
        Step("expire_history", "virtual"), Step("pod_label", "p0", "2"),
        Step("server_restart", "host"), Step("host_rc_put", "gvisor", "production"),
        Step("latency", "virtual"), Step("pod_create", "p3", "runc"),
        Step("config", "not-prod"), Step("host_rc_put", "runc", ""),
        Step("server_wipe", "virtual"), Step("pod_create", "p4", "kata"),
        Step("server_wipe", "host"), Step("host_rc_put", "kata", "development"),
        Step("pod_delete", "p1"), Step("syncer_restart"),
    ]
    report = run("dev", plan)
    assert report.violations == [] and report.lost == 0, report.render()
    assert report.restarts >= 5


def test_refused_orphaned_and_synced_pods_at_quiescence() -> None:
    # An end state with every kind of pod the gate judges, so that a broken gate cannot pass the checker:
    # synced (gvisor), refused by the selector (kata), refused as missing (runc), no class (p3), orphaned by a
    # relabel (youki), and a host pod of another owner on p5's name.
    plan = [
        Step("host_rc_put", "gvisor", "development"), Step("host_rc_put", "kata", "production"),
        Step("host_rc_put", "youki", "development"),
        Step("pod_create", "p0", "gvisor"), Step("pod_create", "p1", "kata"), Step("pod_create", "p2", "youki"),
        Step("pod_create", "p3", ""), Step("pod_create", "p4", "runc"), Step("pod_create", "p5", "gvisor"),
        Step("cut_watches", "host"), Step("host_rc_put", "youki", "production"), Step("pod_label", "p2", "1"),
    ]
    report = run("dev", plan)
    assert report.violations == [] and report.lost == 0, report.render()


def test_running_pods_evicted_deleted_and_orphaned_with_a_kubelet() -> None:
    # With the host's scheduler and kubelet (kubesim/kubelet.py) the synced pods are bound and Running, so the
    # checker also judges the copied status and binding, and the rows a started pod goes through: p0's host pod
    # is evicted (vcluster deletes a started pod whose host pod vanished: SyncToHost), p1 is deleted by the tenant
    # (a bound pod's deletion is graceful: the host pod goes first, then the syncer finishes it), p2 is orphaned by
    # a relabel and then deleted by the tenant (behaviour.md section 3, orphans: the syncer deletes neither).
    start = [
        Step("host_rc_put", "gvisor", "development"), Step("host_rc_put", "youki", "development"),
        Step("pod_create", "p0", "gvisor"), Step("pod_create", "p1", "gvisor"), Step("pod_create", "p2", "youki"),
        Step("pod_create", "p3", ""),
    ]
    then = [  # the tenant's own patches first: the injected faults refuse the driver's requests too
        Step("pod_label", "p3", "4"), Step("pod_image", "p3", "9"), Step("fault", "host", "patch/pods", 5002),
        Step("latency", "host"), Step("host_pod_evict", "p0"), Step("pod_delete", "p1"), Step("cut_watches", "host"),
        Step("host_rc_put", "youki", "production"), Step("pod_delete", "p2"),
        Step("fault", "host", "delete/pods", 5001), Step("syncer_restart"),
    ]

    async def go() -> tuple[Report, dict[str, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            async with Scenario(Path(tmp), "dev", kubelet=True) as s:
                await s.run(start)
                changed = s.virtual_server.storage.changed
                while True:  # started: their host pods' start time copied back
                    changed.clear()
                    if all((s._objs(s.virtual_server, PODS, "default")[p].get("status") or {}).get("startTime")
                           for p in ("p0", "p1", "p2", "p3")):
                        break
                    await asyncio.wait_for(changed.wait(), 30)
                report = await s.run(then)
                return report, s._objs(s.virtual_server, PODS, "default")
    report, virtual = asyncio.run(go())
    assert report.violations == [] and report.lost == 0, report.render()
    assert sorted(virtual) == ["p2", "p3"]
    assert virtual["p2"]["metadata"].get("deletionTimestamp")  # orphaned: left terminating for the user to finish
    assert virtual["p3"]["status"]["phase"] == "Running" and virtual["p3"]["spec"]["nodeName"] == "node-1"
    assert virtual["p3"]["spec"]["containers"][0]["image"] == "nginx:1.9"  # the checker compared the host's with it


@pytest.mark.soak
def test_soak_thousands_of_random_steps() -> None:
    async def go() -> Report:
        with tempfile.TemporaryDirectory() as tmp:
            return await run_random(Path(tmp), seed=20261122, steps=3000)
    report = asyncio.run(go())
    print(report.render())
    assert report.violations == [] and report.lost == 0, report.render()


def test_make_soak_runs_its_recipe_as_written_in_the_makefile() -> None:
    """`make soak`'s recipe, run as make runs it (its own line from the Makefile, with this interpreter for
    `$(BIN)/python` and a short soak for `$(ARGS)`), reports a clean soak. As a script (`python
    bench/convergence.py`) it could not import tests.chaos and failed before its first step."""
    root = Path(__file__).resolve().parent.parent
    lines = (root / "Makefile").read_text().splitlines()
    recipe = lines[lines.index("soak: $(STAMP)") + 1].strip()
    argv = [sys.executable if a == "$(BIN)/python" else a for a in shlex.split(recipe) if a != "$(ARGS)"]
    done = subprocess.run([*argv, "--steps", "10", "--seed", "7"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "invariant violations: 0" in done.stdout
