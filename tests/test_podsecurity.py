"""The Pod Security checks (syncer/controllers/podsecurity.py) one by one, each in the words of
k8s.io/pod-security-admission's `policy/check_*.go` (reason, then the detail in parentheses)."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.controllers.podsecurity import refusal, violations

Obj = dict[str, Any]
OK_C = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
OK_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}


def spec(*containers: Obj, pod: Obj | None = None, **fields: Any) -> Obj:
    out: Obj = {"containers": [{"name": f"c{i}", "image": "x", **c} for i, c in enumerate(containers)], **fields}
    if pod is not None:
        out["securityContext"] = pod
    return out


@pytest.mark.parametrize(("s", "want"), [
    (spec({}), []),
    (spec({}, hostNetwork=True, hostIPC=True), ["host namespaces (hostNetwork=true, hostIPC=true)"]),
    (spec({"securityContext": {"privileged": True}}, {"securityContext": {"privileged": True}}),
     ['privileged (containers "c0", "c1" must not set securityContext.privileged=true)']),
    (spec({"securityContext": {"capabilities": {"add": ["SYS_ADMIN", "CHOWN", "NET_RAW"]}}}),
     ['non-default capabilities (container "c0" must not include "NET_RAW", "SYS_ADMIN" in '
      "securityContext.capabilities.add)"]),
    (spec({}, volumes=[{"name": "a", "hostPath": {"path": "/"}}, {"name": "b", "hostPath": {"path": "/x"}}]),
     ['hostPath volumes (volumes "a", "b")']),
    (spec({"ports": [{"containerPort": 80, "hostPort": 80}, {"containerPort": 443, "hostPort": 443}]},
          {"ports": [{"containerPort": 9, "hostPort": 9}]}),
     ['hostPort (containers "c0", "c1" use hostPorts 443, 80, 9)']),
    (spec({}, initContainers=[{"name": "i", "securityContext": {"privileged": True}}]),
     ['privileged (container "i" must not set securityContext.privileged=true)']),  # init containers count
])
def test_baseline(s: Obj, want: list[str]) -> None:
    assert violations("baseline", s) == want


@pytest.mark.parametrize(("s", "want"), [
    (spec({"securityContext": OK_C}, pod=OK_POD), []),
    (spec({"securityContext": {**OK_C, "allowPrivilegeEscalation": True}}, pod=OK_POD),
     ['allowPrivilegeEscalation != false (container "c0" must set securityContext.allowPrivilegeEscalation=false)']),
    (spec({"securityContext": {**OK_C, "capabilities": {"drop": ["NET_RAW"], "add": ["NET_BIND_SERVICE"]}}},
          pod=OK_POD),
     ['unrestricted capabilities (container "c0" must set securityContext.capabilities.drop=["ALL"])']),
    (spec({"securityContext": {**OK_C, "runAsNonRoot": False}}, pod=OK_POD),
     ['runAsNonRoot != true (container "c0" must not set securityContext.runAsNonRoot=false)']),
    (spec({"securityContext": OK_C}, pod={"seccompProfile": {"type": "RuntimeDefault"}}),
     ['runAsNonRoot != true (pod or container "c0" must set securityContext.runAsNonRoot=true)']),
    (spec({"securityContext": {**OK_C, "runAsNonRoot": True}}, pod={"seccompProfile": {"type": "Localhost"}}), []),
    (spec({"securityContext": {**OK_C, "runAsUser": 0}}, pod={**OK_POD, "runAsUser": 0}),
     ['runAsUser=0 (pod and container "c0" must not set runAsUser=0)']),
    (spec({"securityContext": {**OK_C, "seccompProfile": {"type": "Unconfined"}}}, pod=OK_POD),
     ['seccompProfile (container "c0" must not set securityContext.seccompProfile.type to "Unconfined")']),
    (spec({"securityContext": OK_C}, pod={"runAsNonRoot": True}),
     ['seccompProfile (pod or container "c0" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
      '"Localhost")']),
    (spec({"securityContext": OK_C}, pod=OK_POD, volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}},
                                                           {"name": "e", "emptyDir": {}},
                                                           {"name": "w", "weird": {}}]),
     ['restricted volume types (volumes "n", "w" use restricted volume types "nfs", "unknown")']),
])
def test_restricted(s: Obj, want: list[str]) -> None:
    assert violations("restricted", s) == want


def test_levels_and_the_refusal() -> None:
    bad = spec({"securityContext": {"privileged": True}})
    assert violations("privileged", bad) == [] and refusal({}, bad) is None
    assert refusal({"pod-security.kubernetes.io/enforce": "privileged"}, bad) is None
    assert refusal({"pod-security.kubernetes.io/enforce": "baseline"}, bad) == (
        'violates PodSecurity "baseline:latest": privileged (container "c0" must not set '
        "securityContext.privileged=true)")
    # a level the library cannot parse is enforced as restricted
    assert refusal({"pod-security.kubernetes.io/enforce": "strict"}, spec({"securityContext": OK_C}, pod=OK_POD)) \
        is None
    assert (refusal({"pod-security.kubernetes.io/enforce": "strict"}, bad) or "").startswith(
        'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false')


def test_restricted_includes_baseline_and_overrides_two_of_its_checks() -> None:
    # restricted = baseline + its own checks; capabilities_restricted replaces capabilities_baseline and
    # restrictedVolumes replaces hostPathVolumes (OverrideCheckIDs)
    s = spec({"securityContext": {**OK_C, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN", "NET_BIND_SERVICE"]}}},
             pod=OK_POD, hostPID=True, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}])
    assert violations("restricted", s) == [
        'unrestricted capabilities (container "c0" must not include "SYS_ADMIN" in securityContext.capabilities.add)',
        "host namespaces (hostPID=true)",
        'restricted volume types (volume "logs" uses restricted volume type "hostPath")']


def test_bad_values_set_by_the_pod_and_by_containers() -> None:
    s = spec({"securityContext": {**OK_C, "runAsNonRoot": False, "seccompProfile": {"type": "Unconfined"}}},
             {"securityContext": {**OK_C, "runAsNonRoot": True}},
             pod={"runAsNonRoot": False, "seccompProfile": {"type": "Unconfined"}})
    assert violations("restricted", s) == [
        'runAsNonRoot != true (pod and container "c0" must not set securityContext.runAsNonRoot=false)',
        'seccompProfile (pod and container "c0" must not set securityContext.seccompProfile.type to "Unconfined")']
    one = spec({"ports": [{"containerPort": 8080, "hostPort": 8080}]})
    assert violations("baseline", one) == ['hostPort (container "c0" uses hostPort 8080)']
