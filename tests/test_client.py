"""The REST client's proxy choice, resolved once per client (client-go's ProxyFromEnvironment), and how it writes
JSON patches."""

from __future__ import annotations

import json

import pytest

from syncer.kube.client import ApiError, proxy_for
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


@pytest.mark.parametrize(("status", "message", "other"), [
    # rest.BeforeDelete (k8s.io/apiserver pkg/registry/rest/delete.go): a delete's uid precondition, on the kind
    (409, 'Operation cannot be fulfilled on Pod "p": the UID in the precondition (a) does not match the UID in record '
          '(b). The object might have been deleted and then recreated', True),
    # the storage's Preconditions.Check (k8s.io/apiserver pkg/storage/interfaces.go), through InterpretUpdateError
    (409, 'Operation cannot be fulfilled on pods "p": StorageError: invalid object, Code: 4, Key: /registry/pods/ns/p, '
          'ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: a, UID in object meta: b',
     True),
    # the namespace registry's own check (pkg/registry/core/namespace/storage/storage.go Delete)
    (409, 'Operation cannot be fulfilled on namespaces "n": Precondition failed: UID in precondition: a, UID in object '
          'meta: b', True),
    (422, 'Pod "p" is invalid: metadata.uid: Invalid value: "a": field is immutable', True),
    # a resourceVersion precondition: the same object, changed since
    (409, 'Operation cannot be fulfilled on Pod "p": the ResourceVersion in the precondition (1) does not match the '
          'ResourceVersion in record (2). The object might have been modified', False),
    (409, 'Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the '
          'latest version and try again', False),
])
def test_a_uid_refusal_is_told_from_other_conflicts(status: int, message: str, other: bool) -> None:
    assert ApiError(status, "Conflict" if status == 409 else "Invalid", message).other_object is other
