"""Runtime policy (behaviour.md section 6): the file's validation and the resolution for a pod, table by
table. Not yet wired into `run`, the reconciler or the `policy` command (issue 12 is partly done)."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.config.model import ConfigError, parse_config
from syncer.config.policy import Effective, parse_policy
from syncer.controllers.policy import defaulted_message, resolve, usable_classes

Obj = dict[str, Any]
CONFIG = parse_config({"sync": {"fromHost": {"runtimeClasses": {
    "enabled": True, "selector": {"matchLabels": {"sandbox": "allowed"}}}}}})
FORCED = parse_config({"sync": {"fromHost": {"runtimeClasses": {
    "enabled": True, "selector": {"matchLabels": {"sandbox": "allowed"}}}},
    "toHost": {"pods": {"runtimeClassName": "kata"}}}})


def host_rc(name: str, handler: str, allowed: bool = True) -> Obj:
    return {"metadata": {"name": name, "labels": {"sandbox": "allowed"} if allowed else {}}, "handler": handler}


HOST = {rc["metadata"]["name"]: rc for rc in (host_rc("gvisor", "runsc"), host_rc("kata", "kata-fc"),
                                               host_rc("kata-qemu", "kata-qemu"),
                                               host_rc("hidden", "runsc", allowed=False))}


def run(policy: Effective, named: str, config: Any = CONFIG) -> tuple[bool, str, bool, str]:
    r = resolve(config, policy, "web", named, HOST.get, lambda: usable_classes(config, policy, HOST.values()))
    return r.allowed, r.runtime_class, r.defaulted, r.message


NO_CLASS = ('did not sync pod "web" to host because it names no runtime class and the policy requires one: '
            "set spec.runtimeClassName (allowed: {})")


@pytest.mark.parametrize(("policy", "named", "config", "expected"), [
    # no policy: the pod's own class, the gate decides; a pod with none passes
    (Effective(), "", CONFIG, (True, "", False, "")),
    (Effective(), "gvisor", CONFIG, (True, "gvisor", False, "")),
    # default: only for pods that name none
    (Effective(default="gvisor"), "", CONFIG, (True, "gvisor", True, "")),
    (Effective(default="gvisor"), "kata", CONFIG, (True, "kata", False, "")),
    # strict: a pod must end up with a class; the default satisfies it
    (Effective(require=True), "", CONFIG, (False, "", False, NO_CLASS.format("gvisor, kata, kata-qemu"))),
    (Effective(require=True, default="gvisor"), "", CONFIG, (True, "gvisor", True, "")),
    # a handler list judges the class the pod resolves to, and also implies a class is needed
    (Effective(handlers=("runsc",)), "", CONFIG, (False, "", False, NO_CLASS.format("gvisor"))),
    (Effective(handlers=("runsc",)), "kata", CONFIG, (False, "kata", False, (
        'did not sync pod "web" to host because the runtime class "kata" uses the handler "kata-fc", which the '
        "policy does not allow (allowed handlers: runsc)"))),
    (Effective(handlers=("runsc", "kata-fc")), "kata", CONFIG, (True, "kata", False, "")),
    # the gate still applies to the resolved class, before the handler list
    (Effective(handlers=("runsc",)), "hidden", CONFIG, (False, "hidden", False, (
        'did not sync pod "web" to host because the runtime class "hidden" in the host does not match the '
        "selector under 'sync.fromHost.runtimeClasses.selector'"))),
    # an unusable default: the third message, with the gate's or the handler's reason
    (Effective(default="hidden"), "", CONFIG, (False, "hidden", True, (
        'did not sync pod "web" to host because its default runtime class "hidden" in the host does not match '
        "the selector under 'sync.fromHost.runtimeClasses.selector'"))),
    (Effective(default="missing"), "", CONFIG, (False, "missing", True, (
        'did not sync pod "web" to host because its default runtime class "missing" couldn\'t be reached in the '
        'host: runtimeclasses.node.k8s.io "missing" not found'))),
    (Effective(default="kata-qemu", handlers=("runsc",)), "", CONFIG, (False, "kata-qemu", True, (
        'did not sync pod "web" to host because its default runtime class "kata-qemu" uses the handler '
        '"kata-qemu", which the policy does not allow (allowed handlers: runsc)'))),
    # a forced class satisfies "a class" and is the one the handler list judges: no silent downgrade
    (Effective(require=True), "", FORCED, (True, "", False, "")),
    (Effective(handlers=("kata-fc",)), "", FORCED, (True, "", False, "")),
    (Effective(handlers=("runsc",)), "gvisor", FORCED, (False, "gvisor", False, (
        'did not sync pod "web" to host because the runtime class "kata" uses the handler "kata-fc", which the '
        "policy does not allow (allowed handlers: runsc)"))),
])
def test_resolution(policy: Effective, named: str, config: Any, expected: tuple[bool, str, bool, str]) -> None:
    assert run(policy, named, config) == expected


def test_defaulted_event_message() -> None:
    assert defaulted_message("web", "gvisor") == 'synced pod "web" to host with the default runtime class "gvisor"'


POLICY = {
    "defaultRuntimeClassName": "gvisor",
    "allowedHandlers": ["runsc", "kata-fc"],
    "namespaces": {
        "tier=gold": {"requireRuntimeClassName": True},
        "team-kata": {"defaultRuntimeClassName": "kata"},
        "tier in (gold, silver)": {"allowedHandlers": ["runsc"]},
    },
}


@pytest.mark.parametrize(("namespace", "labels", "expected"), [
    ("other", {}, Effective("gvisor", False, ("runsc", "kata-fc"), "<top level>")),
    # a name beats a selector; keys merge one by one over the top level
    ("team-kata", {"tier": "gold"}, Effective("kata", False, ("runsc", "kata-fc"), "team-kata")),
    # the first matching selector in the file wins
    ("a", {"tier": "gold"}, Effective("gvisor", True, ("runsc", "kata-fc"), "tier=gold")),
    ("b", {"tier": "silver"}, Effective("gvisor", False, ("runsc",), "tier in (gold, silver)")),
])
def test_which_entry_applies(namespace: str, labels: dict[str, str], expected: Effective) -> None:
    assert parse_policy(POLICY, CONFIG, "p.yaml").effective(namespace, labels) == expected


def test_validation_reports_every_error_in_document_order() -> None:
    disabled = parse_config({"sync": {"toHost": {"pods": {"runtimeClassName": "kata"}}}})
    doc = {"defaultRuntimeClassName": "gvisor", "requireRuntimeClassName": "sometimes",
           "allowedHandler": ["runsc"],
           "namespaces": {"tier in (gold": {"allowedHandlers": ["runsc"]},
                          "team-a": {"allowedHandlers": ["runsc"], "color": "blue"}}}
    with pytest.raises(ConfigError) as e:
        parse_policy(doc, disabled)
    assert e.value.errors == [
        'invalid defaultRuntimeClassName: sync.toHost.pods.runtimeClassName ("kata") is forced on every host '
        "pod, so a default could never apply",
        "invalid requireRuntimeClassName: Input should be a valid boolean, unable to interpret input",
        'invalid allowedHandler: unknown field "allowedHandler"',
        'invalid namespaces["tier in (gold"]: not a valid label selector: unable to parse requirement: '
        "unexpected end of selector 'tier in (gold'",
        'invalid namespaces["tier in (gold"].allowedHandlers: needs sync.fromHost.runtimeClasses.enabled: true '
        "(the handlers are read from the host RuntimeClasses)",
        'invalid namespaces["team-a"].allowedHandlers: needs sync.fromHost.runtimeClasses.enabled: true (the '
        "handlers are read from the host RuntimeClasses)",
        'invalid namespaces["team-a"].color: unknown field "color"',
    ]
