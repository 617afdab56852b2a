"""Kubeconfig credentials that change while the syncer runs (`--host-kubeconfig` outside a pod, or a kubeconfig
whose user is not a certificate): a `tokenFile` the kubelet rotates (a projected service-account token), an `exec`
plugin's short-lived token (EKS: 15 minutes), and client certificate files that are replaced. client-go re-reads a
`tokenFile` after a minute (k8s.io/client-go/transport/token_source.go `NewCachedFileTokenSource`), runs an exec
plugin again when its credential expires, and reloads certificate files (transport/cert_rotation.go). Each request
here goes over real HTTP to a server that records the Authorization header it was sent."""

from __future__ import annotations

import asyncio
import datetime
import json
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from syncer.kube.client import KubeClient, kubeconfig_fingerprint
from syncer.kube.resources import RUNTIMECLASSES
from syncer.startup import watch_kubeconfigs
from tests.conftest import serving

Obj = dict[str, Any]


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[str | None]]]:
    """An HTTP server answering every GET with a RuntimeClass; (its URL, the Authorization headers it got)."""
    seen: list[str | None] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                  "metadata": {"name": "gvisor", "resourceVersion": "1"}, "handler": "runsc"})

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    async with serving(app) as url:
        yield url, seen


def kubeconfig(path: Path, url: str, user: Obj, cluster: Obj | None = None) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, **(cluster or {})}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))
    return path


async def test_a_rotated_token_file_is_used_from_the_next_look_on(tmp_path: Path,
                                                                 server: tuple[str, list[str | None]]) -> None:
    url, seen = server
    token = tmp_path / "token"
    token.write_text("first")
    kc = kubeconfig(tmp_path / "kubeconfig", url, {"tokenFile": "token"})  # relative to the kubeconfig's folder
    eager = await KubeClient.from_kubeconfig(str(kc), "host", credential_refresh=0)
    lazy = await KubeClient.from_kubeconfig(str(kc), "host")  # CREDENTIAL_REFRESH: 60 s
    try:
        await eager.get(RUNTIMECLASSES, "gvisor")
        await lazy.get(RUNTIMECLASSES, "gvisor")
        token.write_text("second")  # the kubelet rotates the projected token
        await eager.get(RUNTIMECLASSES, "gvisor")
        await lazy.get(RUNTIMECLASSES, "gvisor")
    finally:
        await eager.close()
        await lazy.close()
    # the file is not read on every request: within a minute the token in use stays
    assert seen == ["Bearer first", "Bearer first", "Bearer second", "Bearer first"]


def exec_plugin(tmp_path: Path, token: str, expires_in: datetime.timedelta) -> Path:
    """An exec credential plugin (client.authentication.k8s.io/v1beta1) printing `token` valid for `expires_in`,
    and counting its runs in runs.txt."""
    expiry = (datetime.datetime.now(datetime.UTC) + expires_in).strftime("%Y-%m-%dT%H:%M:%SZ")
    (tmp_path / "credential.json").write_text(json.dumps({
        "apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
        "status": {"token": token, "expirationTimestamp": expiry}}))
    plugin = tmp_path / "plugin.py"
    plugin.write_text(f"import pathlib\nd = pathlib.Path({str(tmp_path)!r})\n"
                      "(d / 'runs.txt').open('a').write('run\\n')\nprint((d / 'credential.json').read_text())\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return plugin


@pytest.mark.parametrize(("expires_in", "tokens", "runs"), [
    # expiring within 5 minutes (the library's margin): run again at each look (the load, then each request here)
    (datetime.timedelta(minutes=2), ["Bearer first", "Bearer second"], 3),
    (datetime.timedelta(hours=1), ["Bearer first", "Bearer first"], 1),  # still good: not run again
], ids=["expiring", "valid"])
async def test_an_exec_plugins_credential_is_fetched_again_before_it_expires(
        tmp_path: Path, server: tuple[str, list[str | None]], expires_in: datetime.timedelta,
        tokens: list[str], runs: int) -> None:
    url, seen = server
    plugin = exec_plugin(tmp_path, "first", expires_in)
    kc = kubeconfig(tmp_path / "kubeconfig", url, {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable, "args": [str(plugin)]}})
    client = await KubeClient.from_kubeconfig(str(kc), "host", credential_refresh=0)
    try:
        await client.get(RUNTIMECLASSES, "gvisor")
        exec_plugin(tmp_path, "second", expires_in)
        await client.get(RUNTIMECLASSES, "gvisor")
    finally:
        await client.close()
    assert seen == tokens
    assert len((tmp_path / "runs.txt").read_text().splitlines()) == runs


async def test_a_failing_refresh_keeps_the_credential_in_use(tmp_path: Path, server: tuple[str, list[str | None]],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    url, seen = server
    token = tmp_path / "token"
    token.write_text("first")
    kc = kubeconfig(tmp_path / "kubeconfig", url, {"tokenFile": str(token)})
    client = await KubeClient.from_kubeconfig(str(kc), "host", credential_refresh=0)
    try:
        token.unlink()  # gone for a moment (a projected volume's swap)
        await client.get(RUNTIMECLASSES, "gvisor")
    finally:
        await client.close()
    assert seen == ["Bearer first"]
    assert f"could not refresh the credential of the host kubeconfig {kc}" in caplog.text


async def test_a_replaced_client_certificate_file_starts_the_syncer_again(tmp_path: Path) -> None:
    # The certificate files a kubeconfig names are part of what the watch compares: a rotated client certificate
    # (cert-manager renewing the files beside the kubeconfig) is loaded as a changed kubeconfig is.
    (tmp_path / "client.crt").write_text("first certificate")
    (tmp_path / "client.key").write_text("first key")
    (tmp_path / "ca.crt").write_text("the CA")
    kc = kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:1", {
        "client-certificate": "client.crt", "client-key": "client.key"}, {"certificate-authority": "ca.crt"})
    before = kubeconfig_fingerprint(str(kc))
    for name in ("client.crt", "client.key", "ca.crt"):
        (tmp_path / name).write_text(f"renewed {name}")
        assert kubeconfig_fingerprint(str(kc)) != before, name
        before = kubeconfig_fingerprint(str(kc))
    client = await KubeClient.from_kubeconfig(str(kc), "host")
    halt = asyncio.Event()
    watch = asyncio.create_task(watch_kubeconfigs({"host": client}, halt, interval=0.01))
    try:
        await asyncio.sleep(0.05)
        assert not halt.is_set()  # nothing changed yet
        (tmp_path / "client.crt").write_text("second certificate")
        await asyncio.wait_for(halt.wait(), 5)
    finally:
        watch.cancel()
        await client.close()
