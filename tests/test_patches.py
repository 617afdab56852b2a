"""JavaScript-expression patches on synced RuntimeClasses (behaviour.md section 5), over real HTTP."""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.config.model import load_config, parse_config
from syncer.controllers.translate import virtual_runtime_class
from syncer.kube.resources import EVENTS, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from syncer.manager import Syncer
from syncer.patches.apply import Patcher, PatchFailed
from tests.conftest import HOST_NS, VCLUSTER, Clusters, rc, rc_config, running_syncer
from tests.test_cli import run_cli

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}


def with_patches(*patches: Obj, **extra: Any) -> Obj:
    doc = rc_config(DEV, **extra)
    doc["sync"]["fromHost"]["runtimeClasses"]["patches"] = list(patches)
    return doc


@contextlib.asynccontextmanager
async def patched_syncer(c: Clusters, document: Obj, **options: Any) -> AsyncIterator[Syncer]:
    """A syncer on `c` with the patches of vcluster.yaml `document` (`options`: the Patcher's), closed after."""
    patcher = await Patcher.create(parse_config(document), vcluster_name=VCLUSTER, host_namespace=HOST_NS, **options)
    assert patcher is not None
    try:
        async with running_syncer(c, document, patcher=patcher) as syncer:
            yield syncer
    finally:
        await patcher.close()


async def run_patched(c: Clusters, document: Obj, predicate: Any, what: str, **options: Any) -> dict[str, Obj]:
    """Create the host classes first, then run a syncer with patches until `predicate(virtual objects)`."""
    async with patched_syncer(c, document, **options):
        return await wait_for(c.virtual, RUNTIMECLASSES, predicate, timeout=10, what=what)


GVISOR = rc("gvisor", "runsc", {"environment": "development", "host-only/cost-center": "42"},
            scheduling={"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [
                {"key": "sandbox", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "gvisor"}]})


async def test_each_path_form_and_scope_variable(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, GVISOR)
    doc = with_patches(
        {"path": "handler", "expression": '"tenant-" + value'},                                         # dots
        {"path": "scheduling.tolerations[0].effect", "expression": '"PreferNoSchedule"'},             # [N]
        # [*]; a real API server takes only a qualified name as a toleration key, so the path is squeezed into one
        {"path": "scheduling.tolerations[*].key", "expression": 'value + "-" + context.path.replace(/[^a-z0-9]/g, "")'},
        {"path": "metadata.labels.*", "expression": "value.toUpperCase()"},                          # *
        {"path": 'metadata.annotations["sandbox.example.com/vcluster"]',                              # quoted,
         "expression": "[valueExists, context.vcluster.name, context.vcluster.namespace, "            # created
                       "context.vcluster.config.sync.fromHost.runtimeClasses.enabled, "
                       "context.hostObject.handler, context.virtualObject === null ? 'new' : 'existing'].join('|')"},
        {"path": 'metadata.annotations["b64"]', "expression": 'btoa("hello") + ":" + atob("aGk=")'},
        {"path": 'metadata.annotations["dns"]', "expression": 'virtualToHostDNS("db.prod.svc.cluster.local")'},
        {"path": 'metadata.labels["host-only/cost-center"]', "expression": "null"},                   # delete
    )
    objs = await run_patched(clusters, doc, lambda o: "gvisor" in o and o["gvisor"]["metadata"].get(
        "annotations", {}).get("dns"), "patched gvisor")
    v = objs["gvisor"]
    assert v["handler"] == "tenant-runsc"
    tols = v["scheduling"]["tolerations"]
    assert tols[0]["effect"] == "PreferNoSchedule"
    assert [t["key"] for t in tols] == ["sandbox-schedulingtolerations0key", "dedicated-schedulingtolerations1key"]
    assert v["metadata"]["labels"] == {"environment": "DEVELOPMENT"}
    ann = v["metadata"]["annotations"]
    assert ann["sandbox.example.com/vcluster"] in (f"false|{VCLUSTER}|{HOST_NS}|true|runsc|new",
                                                   f"false|{VCLUSTER}|{HOST_NS}|true|runsc|existing")
    assert ann["b64"] == "aGVsbG8=:hi"
    assert ann["dns"] == f"db-x-prod-x-{VCLUSTER}.{HOST_NS}.svc.cluster.local"
    host = await clusters.host.get(RUNTIMECLASSES, "gvisor")
    assert host["handler"] == "runsc" and "host-only/cost-center" in host["metadata"]["labels"]  # never written


async def test_virtual_object_is_in_scope_on_update(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    doc = with_patches({"path": 'metadata.annotations["seen"]',
                        "expression": "context.virtualObject === null ? 'create' : 'update:' + "
                                      "context.virtualObject.metadata.name"})
    config = parse_config(doc)
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o, what="created")
            await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"tier": "1"}}})
            objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o and o["gvisor"][
                "metadata"]["labels"].get("tier") == "1", what="host change flowed through")
    finally:
        await patcher.close()
    assert objs["gvisor"]["metadata"]["annotations"]["seen"] == "update:gvisor"


async def test_a_created_copy_is_patched_again_with_itself_in_scope(clusters: Clusters) -> None:
    # at create time context.virtualObject is null; the copy is then looked at again with itself in scope, so
    # it settles on what the patches give for an existing object, with no change on the host
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    doc = with_patches({"path": 'metadata.annotations["seen"]',
                        "expression": "context.virtualObject === null ? 'create' : 'update'"})
    await run_patched(clusters, doc, lambda o: "gvisor" in o and o["gvisor"]["metadata"]["annotations"].get(
        "seen") == "update", "the copy patched with itself in scope")


async def test_no_write_loop_after_a_patch(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    doc = with_patches({"path": "handler", "expression": '"tenant-" + value'},
                       {"path": 'metadata.annotations["patched"]', "expression": '"yes"'})
    config = parse_config(doc)
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher) as syncer:
            await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o, what="synced")
            await syncer.wait_idle()
            writes = lambda: [r for r in clusters.virtual_server.requests  # noqa: E731
                              if r[0] in ("POST", "PUT", "PATCH", "DELETE") and "runtimeclasses" in r[1]]
            before = len(writes())
            rv = (await clusters.virtual.get(RUNTIMECLASSES, "gvisor"))["metadata"]["resourceVersion"]
            syncer.rc_queue.add("gvisor")  # a resync: the patched object must compare equal
            await syncer.wait_idle()
            assert len(writes()) == before
            assert (await clusters.virtual.get(RUNTIMECLASSES, "gvisor"))["metadata"]["resourceVersion"] == rv
            # a host change is one write, then quiet again
            await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"annotations": {"new": "1"}}})
            await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: o.get("gvisor", {}).get("metadata", {}).get(
                "annotations", {}).get("new") == "1", what="host change")
            await syncer.wait_idle()
            assert len(writes()) == before + 1
    finally:
        await patcher.close()


async def test_runaway_expression_is_stopped_and_others_keep_syncing(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("slow", labels={"environment": "development", "loop": "yes"}))
    await clusters.host.create(RUNTIMECLASSES, rc("fast", labels={"environment": "development"}))
    await clusters.virtual.create(RUNTIMECLASSES, rc("slow"))  # an existing virtual object to attach the event to
    doc = with_patches({"path": "handler",
                        "expression": "if (context.hostObject.metadata.labels.loop) { while(true){} } else { value }"})
    config = parse_config(doc)
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS, timeout=0.2)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "fast" in o, what="fast synced")
            events = await wait_for(clusters.virtual, EVENTS, lambda o: any(
                e["involvedObject"]["name"] == "slow" for e in o.values()), namespace="default", what="event")
    finally:
        await patcher.close()
    (event,) = [e for e in events.values() if e["involvedObject"]["name"] == "slow"]
    assert event["type"] == "Warning" and event["reason"] == "PatchFailed"
    assert event["involvedObject"]["kind"] == "RuntimeClass"
    assert event["message"] == ('runtime class "slow": patch "handler" failed: the expression ran longer than the '
                                "0.2s limit and was stopped (at handler)")


async def test_throwing_expression_is_retried_after_the_host_fixes_it(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    await clusters.virtual.create(RUNTIMECLASSES, rc("gvisor"))
    doc = with_patches({"path": "handler", "expression": "context.hostObject.metadata.annotations.suffix + value"})
    config = parse_config(doc)
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            events = await wait_for(clusters.virtual, EVENTS, lambda o: bool(o), namespace="default", what="event")
            (event,) = events.values()
            assert event["message"] == ('runtime class "gvisor": patch "handler" failed: the expression threw: '
                                        "TypeError: Cannot read properties of undefined (reading 'suffix')")
            await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"annotations": {"suffix": "x-"}}})
            objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: o.get("gvisor", {}).get("handler") ==
                                  "x-gvisor", what="synced after the host was fixed")
    finally:
        await patcher.close()
    assert objs["gvisor"]["handler"] == "x-gvisor"


async def test_syntax_errors_are_refused_at_start_up_each_with_the_patch_path(clusters: Clusters,
                                                                                tmp_path: Path) -> None:
    # Every expression that does not compile is named in one run, like every other config error.
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text(yaml.safe_dump(with_patches({"path": "handler", "expression": '"ok"'},
                                               {"path": 'metadata.labels["x"]', "expression": "value +"},
                                               {"path": "metadata.labels.y", "expression": '"fine"'},
                                               {"path": "metadata.annotations.z", "expression": "(value"})))
    # V8's messages for the two broken expressions (checked last as a script body: `new Function(...)`)
    expected = ["error: invalid sync.fromHost.runtimeClasses.patches[1].expression: SyntaxError: Unexpected token "
                """'}' (patch path "metadata.labels["x"]")""",
                "error: invalid sync.fromHost.runtimeClasses.patches[3].expression: SyntaxError: Unexpected token "
                """'}' (patch path "metadata.annotations.z")"""]
    for args in (["validate", "--config", str(cfg)],
                 ["run", "--config", str(cfg), "--virtual-kubeconfig", str(clusters.virtual_kubeconfig),
                  "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", "t", "--host-namespace", "x"]):
        before = len(clusters.virtual_server.requests) + len(clusters.host_server.requests)
        code, _, err = await run_cli(*args)
        assert code == 2, err
        assert [line for line in err.splitlines() if line.startswith("error: ")] == expected
        assert len(clusters.virtual_server.requests) + len(clusters.host_server.requests) == before


def test_no_patches_no_v8() -> None:
    code = ("import asyncio, sys, syncer.cli, syncer.manager, kubesim.demo\n"
            "from syncer.config.model import parse_config\n"
            "from syncer.patches.apply import Patcher\n"
            "print(asyncio.run(Patcher.create(parse_config({}), vcluster_name='a', host_namespace='b')))\n"
            "print(json.dumps('py_mini_racer' in sys.modules))\n").replace("import asyncio", "import asyncio, json")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["None", json.dumps(False)]


RECIPES = Path(__file__).resolve().parent.parent / "examples" / "vcluster-patches.yaml"


async def test_readme_recipes_do_what_they_say() -> None:
    config = load_config(RECIPES)
    patcher = await Patcher.create(config, vcluster_name="team-a", host_namespace="vc-team-a")
    assert patcher is not None
    host = rc("gvisor", "runsc", {"environment": "development", "cost-center.example.com/id": "7"},
              scheduling={"tolerations": [{"key": "sandbox.example.com/gvisor", "operator": "Exists"}]})
    try:
        out = await patcher.apply(virtual_runtime_class(host), host, None)
    finally:
        await patcher.close()
    assert out["handler"] == "tenant-runsc"
    assert out["metadata"]["labels"] == {"environment": "development"}
    assert out["scheduling"]["tolerations"][0]["key"] == "tenant.example.com/gvisor"
    assert out["metadata"]["annotations"] == {"tenant.example.com/synced-from": "team-a/gvisor"}


async def test_out_of_memory_is_contained_and_the_context_rebuilt(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("hog", labels={"environment": "development", "hog": "yes"}))
    await clusters.virtual.create(RUNTIMECLASSES, rc("hog"))
    doc = with_patches({"path": "handler", "expression":
                        "context.hostObject.metadata.labels.hog ? (function () { var a = []; "
                        "while (true) { a.push('x'.repeat(1 << 20)); } })() : value + '-ok'"})
    config = parse_config(doc)
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS, timeout=10,
                                   memory_limit=32 * 1024 * 1024)
    assert patcher is not None and patcher.engine is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            events = await wait_for(clusters.virtual, EVENTS, lambda o: bool(o), namespace="default", what="event")
            await clusters.host.create(RUNTIMECLASSES, rc("fine", labels={"environment": "development"}))
            objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "fine" in o, what="fine synced")
        assert patcher.engine.rebuilds >= 1
    finally:
        await patcher.close()
    (event,) = events.values()
    assert event["reason"] == "PatchFailed" and "ran out of memory (limit 32 MiB)" in event["message"]
    assert objs["fine"]["handler"] == "fine-ok"


PROMISE = "a Promise (patch expressions run synchronously: an async function or import() cannot be used)"
NOT_JSON = {  # host class name -> (what the expression returns, where and why in the PatchFailed event)
    "promise": ('import("./x.js")', f"result is not JSON data: {PROMISE}"),
    "async": ('(async () => "x")()', f"result is not JSON data: {PROMISE}"),
    "fn": ("(function () { return 1; })", "result is not JSON data: a function"),
    "sym": ('Symbol("s")', "result is not JSON data: a symbol"),
    "cyclic": ("(function () { var o = {}; o.self = o; return o; })()",
               "result.self is not JSON data: a cyclic object"),
    # 3,000 levels passed JSON.stringify and then broke the syncer's decoder (RecursionError: no event, no log)
    "deep": ("(function () { var a = []; for (var i = 0; i < 3000; i++) a = [a]; return a; })()",
             "result" + "[0]" * 100 + " nests deeper than 100 levels"),
}


async def test_results_that_are_not_json_data_are_patch_failures(clusters: Clusters,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    # Regression: a Promise (import(), an async function) was written as {} to the virtual API server, refused
    # there and retried forever, with no PatchFailed event and no log line naming the patch.
    caplog.set_level(logging.INFO)
    table = ", ".join(f"{k}: function () {{ return {expr}; }}" for k, (expr, _) in NOT_JSON.items())
    expression = f'({{{table}, ok: function () {{ return "fine"; }}}})[context.hostObject.metadata.name]()'
    before = {}
    for name in [*NOT_JSON, "ok"]:
        await clusters.host.create(RUNTIMECLASSES, rc(name, labels={"environment": "development"}))
        if name != "ok":  # the last good copy, which must be kept as it is
            before[name] = await clusters.virtual.create(RUNTIMECLASSES, rc(name, labels={"environment":
                                                                                          "development"}))
    doc = with_patches({"path": 'metadata.annotations["result"]', "expression": expression})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: o.get("ok", {}).get("metadata", {}).get(
                "annotations", {}).get("result") == "fine", what="ok patched")
            events = await wait_for(clusters.virtual, EVENTS, lambda o: {e["involvedObject"]["name"] for e in
                                                                         o.values()} >= set(NOT_JSON),
                                    namespace="default", what="an event per failing class")
            after = await clusters.virtual.list(RUNTIMECLASSES)
    finally:
        await patcher.close()
    for e in events.values():
        name = e["involvedObject"]["name"]
        assert (e["type"], e["reason"]) == ("Warning", "PatchFailed")
        assert e["message"] == (f'runtime class "{name}": patch "metadata.annotations["result"]" failed: the '
                                f"result at metadata.annotations.{NOT_JSON[name][1]}"), name
    kept = {o["metadata"]["name"]: o for o in after["items"]}
    for name, obj in before.items():
        assert kept[name]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"], name  # not written
    for name in NOT_JSON:  # a log line names the object and the patch path
        assert f'runtime class "{name}": patch "metadata.annotations["result"]" failed' in caplog.text


async def test_patch_results_that_a_server_cannot_decode_are_patch_failures(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    await clusters.virtual.create(RUNTIMECLASSES, rc("gvisor"))
    doc = with_patches({"path": 'metadata.annotations["n"]', "expression": "42"})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            events = await wait_for(clusters.virtual, EVENTS, bool, namespace="default", what="event")
    finally:
        await patcher.close()
    (event,) = events.values()
    assert event["message"] == ('runtime class "gvisor": patch "metadata.annotations["n"]" failed: the result at '
                                'metadata.annotations["n"] must be a string, got 42')


async def test_one_v8_call_per_object_gives_the_in_order_result_and_names_a_failing_patch() -> None:
    host = virtual_runtime_class({**GVISOR, "metadata": {**GVISOR["metadata"], "uid": "u1"}})
    independent = with_patches(
        {"path": "metadata.labels['tier']", "expression": "context.hostObject.handler + '-tier'"},
        {"path": "scheduling.nodeSelector.sandbox", "expression": "value.toUpperCase()"},
        # a null deletes; an operator may go (empty means Equal), a key may not (an empty key needs Exists:
        # kubernetes pkg/apis/core/validation ValidateTolerations), or the result is a patch failure
        {"path": "scheduling.tolerations[*].operator", "expression": "value === 'Equal' ? null : value"})
    patcher = await Patcher.create(parse_config(independent), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None and patcher.batched and patcher.engine is not None
    try:
        before = patcher.engine.evaluations
        batched = await patcher.apply(host, host, None)
        assert patcher.engine.evaluations - before == 4  # one per place, all in one call
        patcher.batched = False
        assert await patcher.apply(host, host, None) == batched
        assert batched["metadata"]["labels"]["tier"] == "runsc-tier"
        assert batched["scheduling"]["nodeSelector"]["sandbox"] == "GVISOR"
        assert [t.get("operator") for t in batched["scheduling"]["tolerations"]] == ["Exists", None]
    finally:
        await patcher.close()

    failing = with_patches({"path": "handler", "expression": "value"},
                           {"path": "scheduling.nodeSelector.sandbox", "expression": "value.nope()"})
    patcher = await Patcher.create(parse_config(failing), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None and patcher.batched
    try:
        with pytest.raises(PatchFailed) as e:
            await patcher.apply(host, host, None)
        assert e.value.path == "scheduling.nodeSelector.sandbox" and "TypeError" in e.value.reason
    finally:
        await patcher.close()


async def test_overlapping_patches_run_in_order() -> None:
    doc = with_patches({"path": "scheduling.tolerations[0]", "expression": "null"},
                       {"path": "scheduling.tolerations[0].key", "expression": "value + '-second'"})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None and not patcher.batched
    try:
        host = virtual_runtime_class(GVISOR)
        out = await patcher.apply(host, host, None)
        assert [t["key"] for t in out["scheduling"]["tolerations"]] == ["dedicated-second"]  # saw the deletion
    finally:
        await patcher.close()


async def test_a_tenants_integer_javascript_cannot_hold_does_not_stop_the_repair(clusters: Clusters) -> None:
    # The tenant writes a valid int64 beyond 2^53 - 1 into its copy of a synced class: context.virtualObject cannot
    # hold it, and were that a patch failure, every reconcile would fail and the tenant's scheduling stay for good.
    # The virtual object is then passed as null, as when there is none, and the copy is put back.
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    doc = with_patches({"path": 'metadata.annotations["patched"]',
                        "expression": 'context.virtualObject === null ? "no copy" : "a copy"'})
    async with patched_syncer(clusters, doc):
        await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o, what="synced")
        await clusters.virtual.patch(RUNTIMECLASSES, "gvisor", {"scheduling": {"tolerations": [
            {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2 ** 53 + 1}]}})
        repaired = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o and "scheduling"
                                  not in o["gvisor"], what="the tenant's scheduling taken out")
    assert repaired["gvisor"]["metadata"]["annotations"]["patched"] == "no copy"


async def test_integers_javascript_cannot_hold_are_refused_naming_where() -> None:
    doc = with_patches({"path": "scheduling.tolerations[*].tolerationSeconds", "expression": "value + 1"})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    host = virtual_runtime_class(rc("big", "runsc", {"environment": "development"}, scheduling={"tolerations": [
        {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2 ** 60}]}))
    try:
        with pytest.raises(PatchFailed) as e:
            await patcher.apply(host, host, None)
        assert "context.hostObject.scheduling.tolerations[0].tolerationSeconds holds an integer beyond 2^53 - 1" \
            in e.value.reason
        small = {**host, "scheduling": {"tolerations": [{**host["scheduling"]["tolerations"][0],
                                                         "tolerationSeconds": 30}]}}
        with pytest.raises(PatchFailed) as e:  # the value itself, with the context objects fine
            await patcher.apply(host, small, None)
        assert "scheduling.tolerations[0].tolerationSeconds holds an integer beyond 2^53 - 1" in e.value.reason
        assert (await patcher.apply(small, small, None))["scheduling"]["tolerations"][0]["tolerationSeconds"] == 31
    finally:
        await patcher.close()


async def test_memory_outside_the_heap_cannot_be_taken(clusters: Clusters) -> None:
    # the engine's memory limit counts V8's heap only: an ArrayBuffer, typed array or WebAssembly.Memory kept in
    # globalThis grew the process by gigabytes with the 64 MiB limit in force; none of them is JSON data
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    kinds = ["ArrayBuffer", "SharedArrayBuffer", "Uint8Array", "Float64Array", "DataView", "WebAssembly"]
    doc = with_patches({"path": 'metadata.annotations["kinds"]',
                        "expression": "[" + ", ".join(f"typeof {k}" for k in kinds) + "].join()"})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o, what="gvisor synced")
    finally:
        await patcher.close()
    assert objs["gvisor"]["metadata"]["annotations"]["kinds"] == ",".join(["undefined"] * len(kinds))
