"""The REST client's proxy choice, resolved once per client (client-go's ProxyFromEnvironment), and how it writes
JSON patches."""

from __future__ import annotations

import json

import pytest

from syncer.kube.client import proxy_for
from syncer.kube.jsonutil import dumps_go


def test_kubeconfig_proxy_url_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    assert proxy_for("https://10.0.0.1:443", "http://kubeconfig-proxy:8080") == "http://kubeconfig-proxy:8080"


def test_environment_proxy_is_used_for_the_api_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://plain-proxy:3128")
    assert proxy_for("https://api.example.com:6443", None) == "http://env-proxy:3128"
    assert proxy_for("http://api.example.com:8080", None) == "http://plain-proxy:3128"


def test_no_proxy_names_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://env-proxy:3128")
    monkeypatch.setenv("NO_PROXY", "10.96.0.1,.cluster.local")
    assert proxy_for("https://10.96.0.1:443", None) is None
    assert proxy_for("https://kubernetes.default.svc.cluster.local:443", None) is None
    assert proxy_for("https://api.example.com:443", None) == "http://env-proxy:3128"


def test_no_proxy_without_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert proxy_for("https://10.96.0.1:443", None) is None


def test_json_patches_are_written_as_go_writes_json() -> None:
    # Go's encoding/json (json.Marshal): "String values encode as JSON strings ... the string is encoded using
    # HTMLEscape, which replaces "<", ">", "&", U+2028, and U+2029 are escaped to "\u003c","\u003e", "\u0026",
    # "\u2028", and "\u2029"" (go doc encoding/json Marshal); everything else as orjson writes it
    value = {"a": "x&y<z>\u2028\u2029\u00e9\n\x01\"\\/"}
    assert dumps_go(value) == b'{"a":"x\\u0026y\\u003cz\\u003e\\u2028\\u2029\xc3\xa9\\n\\u0001\\"\\\\/"}'
    assert json.loads(dumps_go(value)) == value
