"""`--vcluster-config`: the syncer's own section in one file, vcluster's configuration in another, and the
refusals that keep one writer per resource (the README's install section), through the real CLI. `--virtual-server`: the
virtual API server named on the command line instead of in the kubeconfig (as vcluster's exported kubeconfig
names https://localhost:8443)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import yaml

from syncer.kube.resources import RUNTIMECLASSES
from tests.conftest import HOST_NS, Clusters, rc, virtual_rc_names
from tests.test_cli import CLI, REPO, run_cli, write

OWN = "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n      selector:\n        matchLabels: {a: b}\n"
# vcluster's configuration with its pod sync off, as a user's values file has it (chart defaults not merged in)
VCLUSTER_OFF = "sync:\n  toHost:\n    pods:\n      enabled: false\n"


async def test_the_two_files_make_one_configuration(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", VCLUSTER_OFF + "    configMaps: {all: true}\n")
    code, out, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 0, err
    assert f"{own}: valid (runtime class sync enabled, selector: a in (b))" in out
    assert f"{vc}: the syncer can run beside it" in out


async def test_vclusters_pod_sync_is_on_by_default(tmp_path: Path) -> None:
    # vcluster's chart values.yaml: sync.toHost.pods.enabled: true; a values file without the key keeps it on
    own = write(tmp_path, "own.yaml", OWN)
    for text in ("", "sync:\n  toHost:\n    pods: {}\n", "sync:\n  toHost:\n    pods:\n      enabled: true\n"):
        vc = write(tmp_path, "vc.yaml", text)
        code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
        assert code == 2
        assert (f"error: {vc}: invalid sync.toHost.pods.enabled: vcluster's own pod sync is on (true is vcluster's "
                "default); set it to false") in err, err


async def test_vclusters_pod_sync_set_to_null_is_off(tmp_path: Path) -> None:
    # a values file's null drops the key, the chart's default with it (Helm docs, values files, "Deleting a
    # default key"); vcluster reads the missing key as Go's false (pkg/config/parse.go ParseConfigBytes)
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", "sync:\n  toHost:\n    pods:\n      enabled: null\n")
    code, out, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 0, err
    assert f"{vc}: the syncer can run beside it" in out


async def test_every_refusal_is_reported_at_once_with_its_file_and_path(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN.replace("{a: b}", "{a: b}\n      typo: 1") + "  toHost:\n    pods:\n"
                "      runtimeClassName: x\ncontrolPlane: {}\n")
    vc = write(tmp_path, "vc.yaml", yaml.safe_dump({
        "sync": {"toHost": {"pods": {"enabled": "false", "enforceTolerations": ["a=b=c"]},
                            "namespaces": {"enabled": True}},
                 "fromHost": {"runtimeClasses": {"enabled": True, "selector": {"matchLabels": {"a": "b"}}}}},
        "privateNodes": {"enabled": True}}))
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 2
    lines = [line.removeprefix("error: ") for line in err.splitlines()]
    expected = [
        f"{own}: invalid sync.toHost: the syncer's own file holds only sync.fromHost.runtimeClasses; sync.toHost is "
        f"read from vcluster's config ({vc})",
        f"{own}: invalid controlPlane: the syncer's own file holds only sync.fromHost.runtimeClasses; controlPlane "
        f"is read from vcluster's config ({vc})",
        f"{vc}: invalid sync.toHost.pods.enabled: must be true or false, not 'false'",
        f"{vc}: invalid sync.fromHost.runtimeClasses.enabled: vcluster would sync RuntimeClasses too",
        f"{vc}: invalid sync.fromHost.runtimeClasses.selector: set in vcluster's config, where nothing reads it",
        f"{vc}: invalid sync.toHost.namespaces.enabled: multi-namespace mode is not supported",
        f"{vc}: invalid privateNodes.enabled: private nodes are not supported",
        f'{own}: invalid sync.fromHost.runtimeClasses.typo: unknown field "typo"',
        f"{vc}: invalid sync.toHost.pods.enforceTolerations[0]: invalid toleration spec: a=b=c",
    ]
    assert len(lines) == len(expected), err
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)


async def test_the_own_file_must_hold_the_section(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", "")
    vc = write(tmp_path, "vc.yaml", VCLUSTER_OFF)
    code, _, err = await run_cli("validate", "--config", str(own), "--vcluster-config", str(vc))
    assert code == 2
    assert f"error: {own}: invalid sync.fromHost.runtimeClasses: missing: this file holds the syncer's own section" \
        in err


async def test_a_whole_config_still_loads_but_not_in_an_unsupported_mode(tmp_path: Path) -> None:
    # without --vcluster-config the file is a whole vcluster.yaml, as the demo and examples use it
    code, _, err = await run_cli("validate", "--config", "examples/vcluster-combined.yaml")
    assert code == 0, err
    whole = write(tmp_path, "whole.yaml", OWN + "  toHost:\n    namespaces: {enabled: true}\n")
    code, _, err = await run_cli("validate", "--config", str(whole))
    assert code == 2
    assert "error: invalid sync.toHost.namespaces.enabled: multi-namespace mode is not supported" in err


async def test_run_refuses_before_any_api_request(clusters: Clusters, tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", "sync:\n  fromHost:\n    runtimeClasses: {enabled: true}\n" + VCLUSTER_OFF[6:])
    before = (len(clusters.host_server.requests), len(clusters.virtual_server.requests))
    code, _, err = await run_cli("run", "--config", str(own), "--vcluster-config", str(vc),
                                 "--virtual-kubeconfig", str(clusters.virtual_kubeconfig),
                                 "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", "t",
                                 "--host-namespace", HOST_NS)
    assert code == 2, err
    assert f"error: {vc}: invalid sync.fromHost.runtimeClasses.enabled: vcluster would sync RuntimeClasses" in err
    assert (len(clusters.host_server.requests), len(clusters.virtual_server.requests)) == before


async def test_virtual_server_replaces_the_kubeconfigs_server(clusters: Clusters, tmp_path: Path) -> None:
    # a kubeconfig naming a server that cannot be reached from here (as vcluster's names https://localhost:8443)
    doc = yaml.safe_load(clusters.virtual_kubeconfig.read_text())
    url = doc["clusters"][0]["cluster"]["server"]
    doc["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:9"  # the discard port: nothing listens
    elsewhere = write(tmp_path, "virtual.yaml", yaml.safe_dump(doc))
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", labels={"a": "b"}))
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", VCLUSTER_OFF)
    proc = await asyncio.create_subprocess_exec(
        *CLI, "run", "--config", str(own), "--vcluster-config", str(vc), "--virtual-kubeconfig", str(elsewhere),
        "--virtual-server", url, "--host-kubeconfig", str(clusters.host_kubeconfig), "--vcluster-name", "t",
        "--host-namespace", HOST_NS, cwd=REPO, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced through --virtual-server")
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 10) == 0


async def test_virtual_server_must_be_a_url() -> None:
    code, _, err = await run_cli("run", "--config", "c", "--virtual-kubeconfig", "k", "--virtual-server",
                                 "localhost:8443", "--vcluster-name", "v", "--host-namespace", "n")
    assert code == 2 and "not an http(s) URL: 'localhost:8443'" in err


async def test_policy_reads_the_two_files_too(tmp_path: Path) -> None:
    own = write(tmp_path, "own.yaml", OWN)
    vc = write(tmp_path, "vc.yaml", "privateNodes: {enabled: true}\n" + VCLUSTER_OFF)
    policy = write(tmp_path, "policy.yaml", "requireRuntimeClassName: true\n")
    code, _, err = await run_cli("policy", "--config", str(own), "--vcluster-config", str(vc), "--policy", str(policy),
                                 "--host-kubeconfig", str(tmp_path / "unused"))
    assert code == 2 and f"error: {vc}: invalid privateNodes.enabled: private nodes are not supported" in err, err
