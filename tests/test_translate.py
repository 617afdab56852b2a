"""Pure translation rules (vcluster's SafeConcatName and pod translation)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesim.validation import validate_pod
from syncer.controllers.translate import host_pod, host_pod_hostname, host_pod_name, safe_concat_name
from tests.conftest import pod

Obj = dict[str, Any]
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_short_names_are_joined() -> None:
    assert host_pod_name("web", "default", "tenant") == "web-x-default-x-tenant"


def test_long_names_follow_safe_concat_name() -> None:
    full = "-".join(["p" * 55, "x", "team.a", "x", "vc"])
    expected = (full[:52] + "-" + hashlib.sha256(full.encode()).hexdigest()[:10]).replace(".-", "-")
    assert safe_concat_name("p" * 55, "x", "team.a", "x", "vc") == expected
    assert expected == "p" * 52 + "-9a358da6ab"  # the rule worked by hand: 52 characters, -, 10 hex digits
    assert len(expected) == 63


def test_dot_dash_is_replaced() -> None:
    name = safe_concat_name("a" * 51 + ".", "x", "a-long-namespace", "x", "vc")
    assert ".-" not in name and name.startswith("a" * 51 + "-")


def test_forced_runtime_class_and_stripped_fields() -> None:
    vpod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
            "spec": {"runtimeClassName": "gvisor", "priority": 1000, "priorityClassName": "high",
                     "overhead": {"cpu": "1"}, "serviceAccount": "sa",
                     "containers": [{"name": "c", "image": "i"}]}}
    hp = host_pod(vpod, vcluster_name="vc", host_namespace="host", forced_runtime_class="kata")
    assert hp["spec"]["runtimeClassName"] == "kata"
    for k in ("priority", "priorityClassName", "overhead", "serviceAccount"):
        assert k not in hp["spec"]
    assert hp["spec"]["hostname"] == "p" and hp["metadata"]["namespace"] == "host"
    assert vpod["spec"]["runtimeClassName"] == "gvisor"  # the input is not mutated


def test_hostname_is_a_dns_label() -> None:
    assert host_pod_hostname("web") == "web"
    assert host_pod_hostname("a" * 36 + "." + "b" * 36) == "a" * 36 + "-" + "b" * 26
    assert host_pod_hostname("a" * 62 + ".b") == "a" * 62  # cut at the dot: the trailing "-" is trimmed
    assert host_pod_hostname("a" * 61 + "--b") == "a" * 61  # every trailing "-" (vcluster trims only one)


_LABEL = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True)
_SUBDOMAIN = st.lists(_LABEL, min_size=1, max_size=5).map(".".join).filter(lambda s: len(s) <= 253)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(name=_SUBDOMAIN, namespace=_LABEL, vcluster=_LABEL)
def test_every_translated_pod_passes_kube_apiserver_validation(name: str, namespace: str, vcluster: str) -> None:
    # Any valid virtual pod name and namespace give a host pod a real API server accepts.
    vpod = pod(name, "gvisor", namespace=namespace)
    vpod["metadata"]["uid"] = "0b5c8a4e-1111-2222-3333-444455556666"
    assert validate_pod(host_pod(vpod, vcluster_name=vcluster, host_namespace="vc-host")) == []


def _pods_the_suite_builds() -> list[Obj]:
    pods = [p for p in yaml.safe_load_all((EXAMPLES / "pods.yaml").read_text()) if p]
    pods += [pod("p"), pod("p", "gvisor"), pod("x" * 253), pod("a." * 100 + "b"),
             pod("p", tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}],
                 activeDeadlineSeconds=30, hostname="given", subdomain="sub")]
    for p in pods:
        p["metadata"].setdefault("namespace", "default")
        p["metadata"]["uid"] = "uid-1"
    return pods


@pytest.mark.parametrize("vpod", _pods_the_suite_builds(), ids=lambda p: p["metadata"]["name"][:30])
def test_pods_the_suite_and_examples_build_translate_to_valid_host_pods(vpod: Obj) -> None:
    assert validate_pod(vpod) == [], "the virtual pod itself must be one a real API server accepts"
    assert validate_pod(host_pod(vpod, vcluster_name="demo", host_namespace="vcluster-demo")) == []
