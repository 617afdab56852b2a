"""Runtime policy (behaviour.md section 6): the file's validation and the resolution for a pod, table by
table, then over real HTTP through the pod reconciler and the CLI."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest

from kubesim.vcluster import host_name as host_pod_name
from syncer.config.model import ConfigError, parse_config
from syncer.config.policy import Effective, load_policy, parse_policy, policy_from_text
from syncer.config.reload import watch_policy
from syncer.controllers.policy import defaulted_message, resolve, usable_classes
from syncer.kube.client import DEFAULT_USER_AGENT
from syncer.kube.clock import FakeClock
from syncer.kube.resources import CONFIGMAPS, EVENTS, NAMESPACES, PODS, RUNTIMECLASSES, SERVICEACCOUNTS
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, VCLUSTER, Clusters, eventually, hold_watch_down, pod, rc, rc_config, running_syncer
from tests.test_cli import run_cli

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


def test_with_the_runtime_class_sync_off_a_pod_may_name_any_class() -> None:
    # sync.fromHost.runtimeClasses.enabled: false: the gate judges no class (and the host's are not read), so the
    # strict refusal says any class will do, not "none"
    off = parse_config({"sync": {"fromHost": {"runtimeClasses": {"enabled": False}}}})
    assert run(Effective(require=True), "", off) == (False, "", False, NO_CLASS.format("any"))
    assert run(Effective(require=True), "made-up", off) == (True, "made-up", False, "")


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
        'invalid requireRuntimeClassName: expected a boolean (true or false), got the string "sometimes"',
        'invalid allowedHandler: unknown field "allowedHandler" (did you mean "allowedHandlers"?)',
        'invalid namespaces["tier in (gold"]: not a valid label selector: unable to parse requirement: '
        "found '', expected: ',' or ')' in 'tier in (gold'",
        'invalid namespaces["tier in (gold"].allowedHandlers: needs sync.fromHost.runtimeClasses.enabled: true '
        "(the handlers are read from the host RuntimeClasses)",
        'invalid namespaces["team-a"].allowedHandlers: needs sync.fromHost.runtimeClasses.enabled: true (the '
        "handlers are read from the host RuntimeClasses)",
        'invalid namespaces["team-a"].color: unknown field "color"',
    ]


# ---------------------------------------------------------------------------------------- over real HTTP

DEV = {"matchLabels": {"environment": "development"}}


async def _host_classes(c: Clusters) -> None:
    for name, handler in (("gvisor", "runsc"), ("kata", "kata-fc"), ("kata-qemu", "kata-qemu")):
        await c.host.create(RUNTIMECLASSES, rc(name, handler, {"environment": "development"}))


async def test_default_strict_and_handlers_per_namespace_over_http(clusters: Clusters) -> None:
    await _host_classes(clusters)
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "gold", "labels": {"tier": "gold"}}})
    await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "team-kata"}})
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"allowedHandlers": ["runsc", "kata-fc"],
                           "namespaces": {"tier=gold": {"requireRuntimeClassName": True},
                                          "team-kata": {"defaultRuntimeClassName": "kata"},
                                          "default": {"defaultRuntimeClassName": "gvisor"}}}, config, "p.yaml")
    async with running_syncer(clusters, rc_config(DEV), policy=policy) as syncer:
        await clusters.virtual.create(PODS, pod("plain", None), "default")          # gets the default
        await clusters.virtual.create(PODS, pod("kata-pod", None, "team-kata"), "team-kata")  # its own default
        await clusters.virtual.create(PODS, pod("qemu", "kata-qemu"), "default")   # handler not allowed
        await clusters.virtual.create(PODS, pod("gold-none", None, "gold"), "gold")  # strict there (selector)
        await clusters.virtual.create(PODS, pod("gold-kata", "kata", "gold"), "gold")
        hosts = await wait_for(clusters.host, PODS, lambda o: len(o) == 3, namespace=HOST_NS, what="3 host pods")
        await syncer.wait_idle()
        events = (await clusters.virtual.list(EVENTS))["items"]
        metrics = generate_latest(syncer.metrics.registry).decode()
    assert 'runtimeclass_syncer_pods_refused_by_policy_total{reason="handler"} 1.0' in metrics
    assert 'runtimeclass_syncer_pods_refused_by_policy_total{reason="no_class"} 1.0' in metrics
    assert 'runtimeclass_syncer_pods_defaulted_total{runtime_class="gvisor"} 1.0' in metrics
    by_pod = {(e["involvedObject"]["name"], e["reason"]): e["message"] for e in events}
    assert hosts[f"{HOST_NS}/{host_pod_name('plain', 'default', VCLUSTER)}"]["spec"]["runtimeClassName"] == "gvisor"
    assert hosts[f"{HOST_NS}/{host_pod_name('kata-pod', 'team-kata', VCLUSTER)}"]["spec"]["runtimeClassName"] == "kata"
    assert hosts[f"{HOST_NS}/{host_pod_name('gold-kata', 'gold', VCLUSTER)}"]["spec"]["runtimeClassName"] == "kata"
    assert by_pod["plain", "RuntimeClassDefaulted"] == \
        'synced pod "plain" to host with the default runtime class "gvisor"'
    assert by_pod["qemu", "SyncWarning"] == (
        'did not sync pod "qemu" to host because the runtime class "kata-qemu" uses the handler "kata-qemu", '
        "which the policy does not allow (allowed handlers: runsc, kata-fc)")
    assert by_pod["gold-none", "SyncWarning"] == (
        'did not sync pod "gold-none" to host because it names no runtime class and the policy requires one: '
        "set spec.runtimeClassName (allowed: gvisor, kata)")


async def test_the_classes_a_refused_pod_is_offered_follow_the_host(clusters: Clusters) -> None:
    # section 6: a refusal says what to change; the usable classes of a pod refused for naming none are those of
    # the host at the time: a class that appears (or starts matching) is offered, told once, and a host class's
    # change that changes nothing of the list tells nothing again
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"requireRuntimeClassName": True}, config, "p.yaml")

    def refusals(objs: dict[str, Obj]) -> list[tuple[str, int]]:
        return sorted((e["message"].rsplit("(", 1)[1], e.get("count", 1)) for e in objs.values()
                      if e["involvedObject"]["name"] == "plain" and e["reason"] == "SyncWarning")
    async with running_syncer(clusters, rc_config(DEV), policy=policy) as syncer:
        await clusters.virtual.create(PODS, pod("plain", None), "default")
        await wait_for(clusters.virtual, EVENTS, lambda o: refusals(o) == [("allowed: none)", 1)],
                       namespace="default", what="the refusal offering no class")
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
        await wait_for(clusters.virtual, EVENTS, lambda o: ("allowed: gvisor)", 1) in refusals(o),
                       namespace="default", what="the refusal offering gvisor")
        await clusters.host.create(RUNTIMECLASSES, rc("other", "runsc"))  # not matching: the list stays
        await eventually(lambda: syncer.host_rcs.get("other") is not None, "the other class in the cache")
        await syncer.wait_idle()

        async def listed() -> list[tuple[str, int]]:
            return refusals({e["metadata"]["name"]: e for e in (await clusters.virtual.list(EVENTS, "default"))[
                "items"]})
        assert await listed() == [("allowed: gvisor)", 1), ("allowed: none)", 1)]
        await clusters.host.delete(RUNTIMECLASSES, "gvisor")
        await wait_for(clusters.virtual, EVENTS, lambda o: ("allowed: none)", 2) in refusals(o),
                       namespace="default", what="none offered again once gvisor is gone")
        await syncer.wait_idle()
        assert await listed() == [("allowed: gvisor)", 1), ("allowed: none)", 2)]


async def test_a_pod_naming_no_class_is_told_though_the_first_write_of_its_event_fails(clusters: Clusters) -> None:
    # the refusal counts as told once its event is written: a failed write (HTTP 500) is retried, and then written
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"requireRuntimeClassName": True}, config, "p.yaml")
    failed = clusters.virtual_server.faults.fail(500, verb="create", resource="events", agent=DEFAULT_USER_AGENT)
    async with running_syncer(clusters, rc_config(DEV), policy=policy):
        await clusters.virtual.create(PODS, pod("plain", None), "default")
        await eventually(lambda: failed.times == 0, "the refusal's first write failed")
        await wait_for(clusters.virtual, EVENTS, lambda o: any(
            e["involvedObject"]["name"] == "plain" and "names no runtime class" in e["message"] for e in o.values()),
            namespace="default", what="the SyncWarning written on the retry")


async def test_a_pod_whose_namespace_is_not_cached_yet_waits_for_it(clusters: Clusters) -> None:
    # A new namespace and a pod in it: the two come on different watches, and the pod's may come first. The
    # namespace's labels choose the policy's entry (behaviour.md section 6) and go to the host pod as ns-labels
    # (vcluster's translateLabels, which fails the reconcile until it can read the namespace), so the pod waits.
    await _host_classes(clusters)
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"allowedHandlers": ["runsc", "kata-fc"],
                           "namespaces": {"tier=gold": {"allowedHandlers": ["runsc"]}}}, config, "p.yaml")
    # vcluster's ns-label key: "vcluster.loft.sh/ns-label-" + name + "-x-" + sha256("tier")[:10]
    # (pkg/util/translate, ConvertLabelKeyWithPrefix)
    ns_label = "vcluster.loft.sh/ns-label-test-x-" + hashlib.sha256(b"tier").hexdigest()[:10]
    clock = FakeClock()
    async with running_syncer(clusters, rc_config(DEV), policy=policy, clock=clock) as syncer:
        await hold_watch_down(clusters.virtual_server, "namespaces")
        await clusters.virtual.create(NAMESPACES, {"metadata": {"name": "gold", "labels": {"tier": "gold"}}})
        await clusters.virtual.create(PODS, pod("gold-kata", "kata", "gold"), "gold")  # kata-fc: not in gold
        await clusters.virtual.create(PODS, pod("gold-gvisor", "gvisor", "gold"), "gold")
        await eventually(lambda: syncer.virtual_pods.get("gold/gold-gvisor") is not None, "the pods in the cache")
        await syncer.wait_idle()
        assert not [k for k in clusters.host_server.storage.objects(PODS) if "gold" in k[1]]  # nothing decided
        clock.advance(60)  # the namespace watch back: its ADDED event
        gvisor = f"{HOST_NS}/{host_pod_name('gold-gvisor', 'gold', VCLUSTER)}"
        hosts = await wait_for(clusters.host, PODS, lambda o: gvisor in o, namespace=HOST_NS,
                               what="gold-gvisor on the host")
        await syncer.wait_idle()
        events = (await clusters.virtual.list(EVENTS, "gold"))["items"]
    assert hosts[gvisor]["metadata"]["labels"][ns_label] == "gold"
    assert clusters.host_server.storage.get(PODS, HOST_NS, host_pod_name("gold-kata", "gold", VCLUSTER)) is None
    assert [e["message"] for e in events if e["involvedObject"]["name"] == "gold-kata"] == [
        'did not sync pod "gold-kata" to host because the runtime class "kata" uses the handler "kata-fc", '
        "which the policy does not allow (allowed handlers: runsc)"]


def test_validate_with_a_policy_reports_every_error(tmp_path: Path) -> None:
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text("sync:\n  toHost:\n    pods:\n      runtimeClassName: kata\n")
    pol = tmp_path / "policy.yaml"
    pol.write_text("defaultRuntimeClassName: gvisor\nallowedHandlers: [runsc]\nnamespaces:\n  a: {strict: true}\n")
    out = subprocess.run([sys.executable, "-m", "syncer", "validate", "--config", str(cfg), "--policy", str(pol)],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f'error: {pol}: invalid defaultRuntimeClassName: sync.toHost.pods.runtimeClassName ("kata") is forced '
        "on every host pod, so a default could never apply",
        f"error: {pol}: invalid allowedHandlers: needs sync.fromHost.runtimeClasses.enabled: true (the handlers "
        "are read from the host RuntimeClasses)",
        f'error: {pol}: invalid namespaces["a"].strict: unknown field "strict"']
    pol.write_text("requireRuntimeClassName: true\n")
    ok = subprocess.run([sys.executable, "-m", "syncer", "validate", "--config", str(cfg), "--policy", str(pol)],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and f"{pol}: valid" in ok.stdout


# Kubernetes' rules for the names a policy holds (apimachinery pkg/util/validation: IsDNS1123Label for namespace names
# and RuntimeClass handlers, IsDNS1123Subdomain for RuntimeClass names), and go-yaml's repeated-key error, which
# vcluster's strict decoding of its config gives (config/config.go UnmarshalYAMLStrict)
LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
              "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                  "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                  "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


@pytest.mark.parametrize(("text", "errors"), [
    ("", ["invalid policy: the file holds no document (write {} for a policy that sets nothing)"]),
    ("# all commented out\n", ["invalid policy: the file holds no document (write {} for a policy that sets "
                               "nothing)"]),
    ("namespaces:\n  team-a: {allowedHandlers: [runsc]}\n  team-a: {}\n",
     ['cannot parse policy p.yaml: line 3: key "team-a" already set in map']),
    ("namespaces:\n  Team-A: {requireRuntimeClassName: true}\n  team_b: {}\n", [
        f'invalid namespaces["Team-A"]: not a namespace name (nor a label selector): {LABEL_RULE}',
        f'invalid namespaces["team_b"]: not a namespace name (nor a label selector): {LABEL_RULE}']),
    ("namespaces:\n  no: {requireRuntimeClassName: true}\n",
     ["invalid namespaces: the key false (read as a boolean) is not a namespace name or selector: quote it"]),
    ("defaultRuntimeClassName: GVisor\n",
     [f'invalid defaultRuntimeClassName: "GVisor" is not a RuntimeClass name: {SUBDOMAIN_RULE}']),
    ("allowedHandlers: [runsc, kata_fc]\n",
     [f'invalid allowedHandlers: not a RuntimeClass handler: "kata_fc": {LABEL_RULE}']),
])
def test_a_policy_that_could_never_apply_as_written_is_refused(text: str, errors: list[str]) -> None:
    with pytest.raises(ConfigError) as e:
        policy_from_text(text.encode(), "p.yaml", CONFIG)
    assert e.value.errors == errors


class _Said(logging.Handler):
    """Sets `event` when a record containing `text` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text, self.event, self.lines = text, asyncio.Event(), []  # type: list[str]

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        self.lines.append(line)
        if self.text in line:
            self.event.set()


async def test_reload_in_place_rename_symlink_swap_and_a_bad_file(clusters: Clusters, tmp_path: Path) -> None:
    await _host_classes(clusters)
    volume = tmp_path / "policy"  # laid out as a ConfigMap volume: policy.yaml -> ..data/policy.yaml
    (volume / "..v1").mkdir(parents=True)
    (volume / "..v1" / "policy.yaml").write_text("requireRuntimeClassName: true\n")
    (volume / "..data").symlink_to("..v1")
    (volume / "policy.yaml").symlink_to("..data/policy.yaml")
    path = volume / "policy.yaml"
    config = parse_config(rc_config(DEV))
    said = _Said("is invalid; keeping the policy in force")
    reloaded = asyncio.Event()
    logging.getLogger("syncer.config.reload").addHandler(said)

    async def rewritten(write: Any) -> None:  # returns once the new policy is in force
        reloaded.clear()
        write()
        await asyncio.wait_for(reloaded.wait(), 10)
    stop = asyncio.Event()
    try:
        loaded = load_policy(path, config)
        async with running_syncer(clusters, rc_config(DEV), policy=loaded) as syncer:
            def apply(policy: Any) -> None:
                syncer.set_policy(policy)
                reloaded.set()

            watcher = asyncio.create_task(watch_policy(path, config, apply, stop, debounce_ms=50,
                                                       rejected=syncer.policy_rejected, in_force=loaded.text))

            async def synced_with(name: str, rc_name: str) -> None:
                key = f"{HOST_NS}/{host_pod_name(name, 'default', VCLUSTER)}"
                pods = await wait_for(clusters.host, PODS, lambda o: key in o, namespace=HOST_NS, what=name)
                assert pods[key]["spec"]["runtimeClassName"] == rc_name

            await clusters.virtual.create(PODS, pod("p1", None), "default")
            await wait_for(clusters.virtual, EVENTS, lambda o: any("p1" in k for k in o), what="p1 refused")
            # the ConfigMap volume's symlink swap: a default; the refused pod is looked at again
            (volume / "..v2").mkdir()
            (volume / "..v2" / "policy.yaml").write_text("requireRuntimeClassName: true\n"
                                                          "defaultRuntimeClassName: gvisor\n")
            (volume / "..data_tmp").symlink_to("..v2")
            os.replace(volume / "..data_tmp", volume / "..data")
            await synced_with("p1", "gvisor")
            # an invalid file is refused with its errors; the policy in force stays
            (volume / "..v2" / "policy.yaml").write_text("defaultRuntimeClass: kata\n")  # in place, a typo
            await asyncio.wait_for(said.event.wait(), 10)
            # so is a file caught empty (truncated by an in-place write, its new text not written yet): it is not
            # "no policy", which would lift every restriction until the write ends
            said.event.clear()
            (volume / "..v2" / "policy.yaml").write_text("")
            await asyncio.wait_for(said.event.wait(), 10)
            await clusters.virtual.create(PODS, pod("p2", None), "default")
            await synced_with("p2", "gvisor")
            # an in-place write of a good file, then an atomic rename over it
            await rewritten(lambda: (volume / "..v2" / "policy.yaml").write_text("defaultRuntimeClassName: kata\n"))
            await clusters.virtual.create(PODS, pod("p3", None), "default")
            await synced_with("p3", "kata")
            (volume / "..v2" / "new.yaml").write_text("defaultRuntimeClassName: gvisor\n")
            await rewritten(lambda: os.replace(volume / "..v2" / "new.yaml", volume / "..v2" / "policy.yaml"))
            await clusters.virtual.create(PODS, pod("p4", None), "default")
            await synced_with("p4", "gvisor")
            stop.set()
            await watcher
            metrics = generate_latest(syncer.metrics.registry).decode()
    finally:
        logging.getLogger("syncer.config.reload").removeHandler(said)
    assert 'runtimeclass_syncer_policy_reloads_total{result="applied"} 3.0' in metrics
    assert 'runtimeclass_syncer_policy_reloads_total{result="invalid"} 2.0' in metrics
    assert any("invalid policy: the file holds no document" in line for line in said.lines)
    assert any('invalid defaultRuntimeClass: unknown field "defaultRuntimeClass" (did you mean '
               '"defaultRuntimeClassName"?)' in line for line in said.lines)


async def test_a_change_made_before_the_watch_is_up_is_applied(tmp_path: Path) -> None:
    # the watch starts in watchfiles' thread some time after the task: a file changed in between raises no
    # event, and must still be seen (CI once missed a ConfigMap swap made right after the task started)
    path = tmp_path / "policy.yaml"
    path.write_text("defaultRuntimeClassName: gvisor\n")
    config = parse_config(rc_config(DEV))
    applied: list[Any] = []
    got = asyncio.Event()
    stop = asyncio.Event()

    def apply(policy: Any) -> None:
        applied.append(policy)
        got.set()
    # the policy in force was read from the old text; the file already holds the new one, and nothing changes
    watcher = asyncio.create_task(watch_policy(path, config, apply, stop, debounce_ms=50,
                                               in_force=b"requireRuntimeClassName: true\n"))
    try:
        await asyncio.wait_for(got.wait(), 10)
    finally:
        stop.set()
        await watcher
    assert [p.top.defaultRuntimeClassName for p in applied] == ["gvisor"]
    # what `run` hands the watch as the policy in force: the exact text the policy was loaded from
    assert load_policy(path, config).text == b"defaultRuntimeClassName: gvisor\n"


async def test_policy_command_table_json_and_exit_statuses(clusters: Clusters, tmp_path: Path) -> None:
    await _host_classes(clusters)
    await clusters.host.create(RUNTIMECLASSES, rc("legacy", "runc"))  # does not match the selector
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text(yaml.safe_dump(rc_config(DEV)))
    pol = tmp_path / "policy.yaml"
    pol.write_text("defaultRuntimeClassName: gvisor\nallowedHandlers: [runsc, kata-fc]\nnamespaces:\n"
                   "  team-kata: {defaultRuntimeClassName: kata}\n  tier=gold: {allowedHandlers: [runsc]}\n")
    args = ("policy", "--config", str(cfg), "--policy", str(pol), "--host-kubeconfig", str(clusters.host_kubeconfig))
    code, out, err = await run_cli(*args)
    assert code == 0, err
    assert out.splitlines()[:4] == [
        "ENTRY        DEFAULT  REQUIRE  ALLOWED HANDLERS",
        "<top level>  gvisor   false    runsc, kata-fc",
        "team-kata    kata     false    runsc, kata-fc",
        "tier=gold    gvisor   false    runsc"]
    assert "tier=gold    kata           kata-fc    refused: the handler \"kata-fc\" is not allowed (allowed " \
           "handlers: runsc)" in out
    assert ("<top level>  legacy         runc       refused: in the host does not match the selector under "
            "'sync.fromHost.runtimeClasses.selector'") in out
    code, out, _ = await run_cli(*args, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["problems"] == []
    assert {"entry": "team-kata", "runtime_class": "kata", "handler": "kata-fc", "allowed": True, "reason": ""} \
        in doc["runtimeClasses"]
    # an unusable default is a problem the host shows: exit 1
    pol.write_text("defaultRuntimeClassName: kata-qemu\nallowedHandlers: [runsc, kata-fc]\n")
    code, out, _ = await run_cli(*args)
    assert code == 1
    assert out.splitlines()[-1] == ('problem: <top level>: the default runtime class "kata-qemu" is unusable: the '
                                    'handler "kata-qemu" is not allowed (allowed handlers: runsc, kata-fc)')
    pol.write_text("defaultRuntimeClassName: [x]\n")  # an invalid file: exit 2, before any API request
    code, _, err = await run_cli(*args)
    assert code == 2 and "invalid defaultRuntimeClassName" in err


async def test_policy_command_judges_the_forced_class_every_pod_runs_with(clusters: Clusters, tmp_path: Path) -> None:
    # behaviour.md section 6: the class the host pod runs with (the forced one when set) passes the handler list;
    # a policy that refuses it refuses every pod, and the host shows it: exit 1
    await _host_classes(clusters)  # gvisor (runsc), kata (kata-fc), kata-qemu
    document = rc_config(DEV)
    document["sync"]["toHost"] = {"pods": {"runtimeClassName": "kata-qemu"}}
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text(yaml.safe_dump(document))
    pol = tmp_path / "policy.yaml"
    pol.write_text("allowedHandlers: [runsc]\n")
    args = ("policy", "--config", str(cfg), "--policy", str(pol), "--host-kubeconfig", str(clusters.host_kubeconfig))
    code, out, _ = await run_cli(*args, "-o", "json")
    doc = json.loads(out)
    assert code == 1
    assert doc["problems"] == ['<top level>: the forced runtime class "kata-qemu" uses the handler "kata-qemu", '
                               "which is not allowed (allowed handlers: runsc): every pod is refused"]
    assert {"entry": "<top level>", "runtime_class": "gvisor", "handler": "runsc", "allowed": False,
            "reason": 'the forced runtime class "kata-qemu" uses the handler "kata-qemu", which is not allowed '
                      "(allowed handlers: runsc)"} in doc["runtimeClasses"]
    pol.write_text("allowedHandlers: [kata-qemu]\n")  # the forced class's handler: every class may be named
    code, out, _ = await run_cli(*args, "-o", "json")
    doc = json.loads(out)
    assert code == 0 and doc["problems"] == []
    assert all(v["allowed"] for v in doc["runtimeClasses"])


async def test_a_default_the_host_lacks_warns_then_applies_once_the_host_has_it(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"defaultRuntimeClassName": "gvisor"}, config, "p.yaml")
    async with running_syncer(clusters, rc_config(DEV), policy=policy):
        assert 'runtime policy p.yaml: <top level>: the default runtime class "gvisor" does not exist in the host' \
            in caplog.text
        await clusters.virtual.create(PODS, pod("web", None), "default")
        events = await wait_for(clusters.virtual, EVENTS, lambda o: any("web" in k for k in o), what="refusal")
        (event,) = events.values()
        assert event["message"] == ('did not sync pod "web" to host because its default runtime class "gvisor" '
                                    'couldn\'t be reached in the host: runtimeclasses.node.k8s.io "gvisor" not found')
        await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
        key = f"{HOST_NS}/{host_pod_name('web', 'default', VCLUSTER)}"
        pods = await wait_for(clusters.host, PODS, lambda o: key in o, namespace=HOST_NS, what="web synced")
    assert pods[key]["spec"]["runtimeClassName"] == "gvisor"


async def test_a_pod_that_got_the_default_is_orphaned_when_the_host_withdraws_it(clusters: Clusters) -> None:
    # behaviour.md section 3 "Orphans": pods that use a removed class stop receiving updates; a pod that named
    # none runs with the default it got, whatever the policy says later
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"defaultRuntimeClassName": "gvisor"}, config, "p.yaml")
    key = f"{HOST_NS}/{host_pod_name('plain', 'default', VCLUSTER)}"
    async with running_syncer(clusters, rc_config(DEV), policy=policy) as syncer:
        await clusters.virtual.create(PODS, pod("plain", None), "default")
        await wait_for(clusters.host, PODS, lambda o: key in o, namespace=HOST_NS, what="plain synced")
        await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"environment": "prod"}}})
        events = await wait_for(clusters.virtual, EVENTS, lambda o: any(
            e["reason"] == "Orphaned" for e in o.values()), what="an Orphaned event")
        await clusters.virtual.patch(PODS, "plain", {"metadata": {"labels": {"tier": "changed"}}}, "default")
        await syncer.wait_idle()
        hpod = await clusters.host.get(PODS, key.split("/")[1], HOST_NS)
    (orphaned,) = [e for e in events.values() if e["reason"] == "Orphaned"]
    assert orphaned["involvedObject"]["name"] == "plain"
    assert orphaned["message"].startswith('pod "plain" is orphaned: the runtime class "gvisor" in the host does not '
                                          "match the selector")
    assert "tier" not in (hpod["metadata"].get("labels") or {})  # no updates any more
    assert hpod["spec"]["runtimeClassName"] == "gvisor"


async def test_with_the_sync_off_a_default_is_not_reported_missing(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # with sync.fromHost.runtimeClasses.enabled: false the host's classes are not read: a default the host has
    # must not be logged as missing (behaviour.md section 6: the warning is for a default the host lacks)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc"))
    document = rc_config(enabled=False)
    policy = parse_policy({"defaultRuntimeClassName": "gvisor"}, parse_config(document), "p.yaml")
    key = f"{HOST_NS}/{host_pod_name('web', 'default', VCLUSTER)}"
    with caplog.at_level(logging.WARNING):
        async with running_syncer(clusters, document, policy=policy):
            await clusters.virtual.create(PODS, pod("web", None), "default")
            pods = await wait_for(clusters.host, PODS, lambda o: key in o, namespace=HOST_NS, what="web synced")
    assert pods[key]["spec"]["runtimeClassName"] == "gvisor"
    assert "does not exist in the host" not in caplog.text


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize(("recipe", "synced", "refused"), [
    ("policy-default.yaml", {"none": "gvisor", "gv": "gvisor", "kf": "kata-fc"}, set()),
    ("policy-strict.yaml", {"gv": "gvisor", "kf": "kata-fc"}, {"none"}),
    ("policy-handlers.yaml", {"kf": "kata-fc"}, {"none", "gv"}),
    ("policy-namespaces.yaml", {"gv": "gvisor"}, {"none", "kf"}),
    ("policy-mixed.yaml", {"none": "gvisor", "gv": "gvisor", "kf": "kata-fc"}, set()),
])
async def test_readme_recipes(clusters: Clusters, recipe: str, synced: dict[str, str], refused: set[str]) -> None:
    for doc in yaml.safe_load_all((EXAMPLES / "host-runtimeclasses.yaml").read_text()):
        if doc:
            await clusters.host.create(RUNTIMECLASSES, doc)
    document = yaml.safe_load((EXAMPLES / "vcluster-matchlabels.yaml").read_text())
    policy = load_policy(EXAMPLES / recipe, parse_config(document))
    async with running_syncer(clusters, document, policy=policy):
        for name, rc_name in (("none", None), ("gv", "gvisor"), ("kf", "kata-fc")):
            await clusters.virtual.create(PODS, pod(name, rc_name), "default")
        hosts = await wait_for(clusters.host, PODS, lambda o: len(o) == len(synced), namespace=HOST_NS,
                               what=f"{len(synced)} host pods")
        await wait_for(clusters.virtual, EVENTS, lambda o: len({e["involvedObject"]["name"] for e in o.values()
                                                               if e["reason"] == "SyncWarning"}) == len(refused),
                       what=f"{len(refused)} refusals")
        events = (await clusters.virtual.list(EVENTS))["items"]
    assert {k.split("/")[1].split("-x-")[0]: p["spec"]["runtimeClassName"] for k, p in hosts.items()} == synced
    assert {e["involvedObject"]["name"] for e in events if e["reason"] == "SyncWarning"} == refused


def coredns_pod() -> Obj:
    """vcluster's CoreDNS pod as the virtual cluster's ReplicaSet controller makes it from vcluster's manifest
    (loft-sh/vcluster pkg/coredns/template.go at 487667546: the Deployment `coredns` in kube-system with the
    chart's default values): no runtimeClassName, service account `coredns`, its ConfigMap volumes."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "coredns-5d78c9869d-x7k2p", "namespace": "kube-system",
        "labels": {"k8s-app": "vcluster-kube-dns", "pod-template-hash": "5d78c9869d"}},
        "spec": {
            "serviceAccountName": "coredns",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "containers": [{
                "name": "coredns", "image": "coredns/coredns:1.14.2", "imagePullPolicy": "IfNotPresent",
                "args": ["-conf", "/etc/coredns/Corefile"],
                "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns", "readOnly": True},
                                 {"name": "custom-config-volume", "mountPath": "/etc/coredns/custom",
                                  "readOnly": True}],
                "securityContext": {"runAsNonRoot": True, "runAsUser": 1001, "runAsGroup": 1001,
                                    "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}},
                "livenessProbe": {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                                  "initialDelaySeconds": 60, "periodSeconds": 10, "timeoutSeconds": 1,
                                  "successThreshold": 1, "failureThreshold": 3},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"},
                                   "periodSeconds": 2, "timeoutSeconds": 1, "successThreshold": 1,
                                   "failureThreshold": 3}}],
            "dnsPolicy": "Default",
            "volumes": [{"name": "config-volume", "configMap": {"name": "coredns", "items": [
                {"key": "Corefile", "path": "Corefile"}, {"key": "NodeHosts", "path": "NodeHosts"}]}},
                {"name": "custom-config-volume", "configMap": {"name": "coredns-custom", "optional": True}}]}}


def _strict_without_its_kube_system_entry() -> Obj:
    doc = yaml.safe_load((EXAMPLES / "policy-strict.yaml").read_text())
    del doc["namespaces"]["kube-system"]
    return dict(doc)


@pytest.mark.parametrize(("recipe", "dns_class", "tenant_class"), [
    # (the recipe, the class vcluster's CoreDNS runs with on the host or None if refused, the same for a tenant's
    # pod naming no class in `default`)
    ("policy-default.yaml", "gvisor", "gvisor"),
    ("policy-strict.yaml", "gvisor", None),
    ("policy-handlers.yaml", "kata-fc", None),
    ("policy-namespaces.yaml", "gvisor", None),
    ("policy-mixed.yaml", "gvisor", "gvisor"),
    (None, None, None),  # issue 23: the strict recipe as it was, without its kube-system entry, refused CoreDNS
])
async def test_vclusters_coredns_keeps_running_under_every_recipe(
        clusters: Clusters, recipe: str | None, dns_class: str | None, tenant_class: str | None) -> None:
    for doc in yaml.safe_load_all((EXAMPLES / "host-runtimeclasses.yaml").read_text()):
        if doc:
            await clusters.host.create(RUNTIMECLASSES, doc)
    document = yaml.safe_load((EXAMPLES / "vcluster-matchlabels.yaml").read_text())
    config = parse_config(document)
    policy = load_policy(EXAMPLES / recipe, config) if recipe else parse_policy(
        _strict_without_its_kube_system_entry(), config, "strict-as-it-was.yaml")
    # what vcluster deploys with CoreDNS in the virtual kube-system (the same manifest)
    await clusters.virtual.create(SERVICEACCOUNTS, {"metadata": {"name": "coredns"}}, "kube-system")
    await clusters.virtual.create(CONFIGMAPS, {"metadata": {"name": "coredns"}, "data": {
        "Corefile": ".:1053 {\n    errors\n}\n", "NodeHosts": ""}}, "kube-system")
    async with running_syncer(clusters, document, policy=policy) as syncer:
        await clusters.virtual.create(PODS, coredns_pod(), "kube-system")
        await clusters.virtual.create(PODS, pod("web", None), "default")
        synced = {name for name, cls in (("coredns-5d78c9869d-x7k2p", dns_class), ("web", tenant_class)) if cls}
        hosts = await wait_for(clusters.host, PODS, lambda o: len(o) == len(synced), namespace=HOST_NS,
                               what=f"{len(synced)} host pods")
        await wait_for(clusters.virtual, EVENTS, lambda o: len([e for e in o.values() if e["reason"] == "SyncWarning"])
                       == 2 - len(synced), what=f"{2 - len(synced)} refusals")
        await syncer.wait_idle()
        events = (await clusters.virtual.list(EVENTS))["items"]
    got = {p["metadata"]["annotations"]["vcluster.loft.sh/object-name"]: p["spec"]["runtimeClassName"]
           for p in hosts.values()}
    assert got == {name: cls for name, cls in (("coredns-5d78c9869d-x7k2p", dns_class), ("web", tenant_class))
                   if cls}
    refused = {e["involvedObject"]["name"]: e["message"] for e in events if e["reason"] == "SyncWarning"}
    if tenant_class is None:
        assert refused["web"].startswith('did not sync pod "web" to host because ')
    if dns_class is None:
        assert refused["coredns-5d78c9869d-x7k2p"] == (
            'did not sync pod "coredns-5d78c9869d-x7k2p" to host because it names no runtime class and the policy '
            "requires one: set spec.runtimeClassName (allowed: gvisor, kata-fc, youki)")


COREDNS_REFUSED = ("vcluster's CoreDNS in kube-system names no runtime class and would be refused, and the tenants "
                   "would lose DNS: give kube-system a defaultRuntimeClassName")


@pytest.mark.parametrize(("vcluster", "policy", "warning"), [
    ({}, "requireRuntimeClassName: true\n", f"<top level>: {COREDNS_REFUSED}"),
    ({}, "allowedHandlers: [runsc]\n", f"<top level>: {COREDNS_REFUSED}"),
    ({}, "namespaces:\n  kubernetes.io/metadata.name=kube-system: {requireRuntimeClassName: true}\n",
     f"kubernetes.io/metadata.name=kube-system: {COREDNS_REFUSED}"),  # the label every namespace has
    ({}, "requireRuntimeClassName: true\nnamespaces:\n  kube-system: {defaultRuntimeClassName: gvisor}\n", ""),
    ({}, "requireRuntimeClassName: true\nnamespaces:\n  kube-system: {requireRuntimeClassName: false}\n", ""),
    ({}, "requireRuntimeClassName: true\nnamespaces:\n  team-a: {defaultRuntimeClassName: gvisor}\n",
     f"<top level>: {COREDNS_REFUSED}"),
    ({}, "defaultRuntimeClassName: gvisor\nallowedHandlers: [runsc]\n", ""),
    # no CoreDNS pod in kube-system: vcluster's is off, or runs inside its control plane (chart values)
    ({"controlPlane": {"coredns": {"enabled": False}}}, "requireRuntimeClassName: true\n", ""),
    ({"controlPlane": {"coredns": {"embedded": True}}}, "requireRuntimeClassName: true\n", ""),
    # the forced class satisfies "a class" for CoreDNS too
    ({"sync": {"toHost": {"pods": {"runtimeClassName": "gvisor"}}}}, "requireRuntimeClassName: true\n", ""),
])
def test_validate_warns_when_the_policy_would_refuse_vclusters_coredns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], vcluster: dict[str, Any], policy: str,
        warning: str) -> None:
    from syncer.cli import main
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text(yaml.safe_dump({**rc_config(DEV), **vcluster} if "sync" not in vcluster else vcluster))
    pol = tmp_path / "policy.yaml"
    pol.write_text(policy)
    assert main(["validate", "--config", str(cfg), "--policy", str(pol)]) == 0
    out, err = capsys.readouterr()
    assert f"{pol}: valid" in out
    assert err == (f"warning: {pol}: {warning}\n" if warning else "")


def test_the_policy_report_counts_a_refused_coredns_as_a_problem() -> None:
    from syncer.controllers.policyreport import report
    config = parse_config(rc_config(DEV))
    strict = parse_policy({"requireRuntimeClassName": True}, config, "p.yaml")
    assert report(config, strict, [])["problems"] == [f"<top level>: {COREDNS_REFUSED}"]
    recipe = load_policy(EXAMPLES / "policy-strict.yaml", config)
    host = [rc("gvisor", "runsc", {"environment": "development"})]
    assert report(config, recipe, host)["problems"] == []


async def test_forced_class_and_namespace_precedence_over_http(clusters: Clusters) -> None:
    await _host_classes(clusters)
    for name, labels in (("team-a", {"tier": "gold"}), ("b", {"tier": "gold", "zone": "eu"}), ("c", {"zone": "eu"})):
        await clusters.virtual.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})
    # the forced class is what the handler list judges, and it satisfies "a class" for a pod naming none
    document = rc_config(DEV)
    document["sync"]["toHost"] = {"pods": {"runtimeClassName": "kata"}}
    config = parse_config(document)
    policy = parse_policy({"requireRuntimeClassName": True, "namespaces": {
        "zone=eu": {"allowedHandlers": ["runsc"]},          # first matching selector for b: wins over the next
        "tier=gold": {"allowedHandlers": ["kata-fc"]},
        "team-a": {"allowedHandlers": ["kata-fc", "runsc"]},  # a name beats the selectors that match team-a
    }}, config, "p.yaml")
    async with running_syncer(clusters, document, policy=policy) as syncer:
        for ns in ("team-a", "b", "c", "default"):
            await clusters.virtual.create(PODS, pod("none", None, ns), ns)
        hosts = await wait_for(clusters.host, PODS, lambda o: len(o) == 2, namespace=HOST_NS, what="2 host pods")
        await wait_for(clusters.virtual, EVENTS, lambda o: len(o) >= 2, what="2 refusals")
        await syncer.wait_idle()
        events = {e["involvedObject"]["namespace"]: e["message"] for e in (await clusters.virtual.list(EVENTS))["items"]
                  if e["reason"] == "SyncWarning"}
    # team-a (its name) and default (top level: strict, any handler) run with the forced kata
    assert sorted(k.split("/")[1] for k in hosts) == sorted(host_pod_name("none", ns, VCLUSTER)
                                                            for ns in ("team-a", "default"))
    assert {p["spec"]["runtimeClassName"] for p in hosts.values()} == {"kata"}
    refused = ('did not sync pod "none" to host because the runtime class "kata" uses the handler "kata-fc", which '
               "the policy does not allow (allowed handlers: runsc)")
    assert events == {"b": refused, "c": refused}


async def test_pods_refused_for_a_missing_forced_class_sync_once_the_host_has_it(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # behaviour.md section 3: a refused pod is re-evaluated as soon as its class appears; with a forced class, the
    # class every pod runs with is the one the handler list judges (section 6)
    document = rc_config(DEV)
    document["sync"]["toHost"] = {"pods": {"runtimeClassName": "kata"}}
    policy = parse_policy({"allowedHandlers": ["kata-fc"]}, parse_config(document), "p.yaml")
    key = f"{HOST_NS}/{host_pod_name('web', 'default', VCLUSTER)}"
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, document, policy=policy):
        await clusters.virtual.create(PODS, pod("web", "gvisor"), "default")
        events = await wait_for(clusters.virtual, EVENTS, lambda o: any(
            "kata" in e["message"] for e in o.values()), what="the refusal for the missing kata")
        await clusters.host.create(RUNTIMECLASSES, rc("kata", "kata-fc", {"environment": "development"}))
        pods = await wait_for(clusters.host, PODS, lambda o: key in o, namespace=HOST_NS, what="web synced")
    (event,) = events.values()
    assert event["message"] == ('did not sync pod "web" to host because the runtime class "kata" couldn\'t be '
                                "reached in the host, so its handler cannot be checked against the policy")
    # at start, the problem the host shows: every pod refused is an error, not the warning of a missing default
    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.getMessage().startswith("runtime policy")] == [
        ("ERROR", 'runtime policy p.yaml: <top level>: the forced runtime class "kata" does not exist in the host, so '
                  "its handler cannot be checked: every pod is refused")]
    assert pods[key]["spec"]["runtimeClassName"] == "kata"


async def test_a_default_the_host_refuses_is_an_error_and_each_pod_says_why(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("legacy", "runc"))  # on the host, not matching the selector
    config = parse_config(rc_config(DEV))
    policy = parse_policy({"defaultRuntimeClassName": "legacy"}, config, "p.yaml")
    async with running_syncer(clusters, rc_config(DEV), policy=policy):
        errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
        assert errors == ['runtime policy p.yaml: <top level>: the default runtime class "legacy" is unusable: in '
                          "the host does not match the selector under 'sync.fromHost.runtimeClasses.selector'"]
        await clusters.virtual.create(PODS, pod("web", None), "default")
        events = await wait_for(clusters.virtual, EVENTS, lambda o: any("web" in k for k in o), what="refusal")
    (event,) = events.values()
    assert event["message"] == ('did not sync pod "web" to host because its default runtime class "legacy" in the '
                                "host does not match the selector under 'sync.fromHost.runtimeClasses.selector'")


async def test_run_with_an_invalid_policy_exits_2_before_any_api_request(clusters: Clusters, tmp_path: Path) -> None:
    pol = tmp_path / "policy.yaml"
    pol.write_text("namespaces:\n  team-a: {allowedHandlers: runsc}\n")
    before = (len(clusters.host_server.requests), len(clusters.virtual_server.requests))
    code, _, err = await run_cli("run", "--config", "examples/vcluster-matchlabels.yaml", "--policy", str(pol),
                                 "--virtual-kubeconfig", str(clusters.virtual_kubeconfig), "--host-kubeconfig",
                                 str(clusters.host_kubeconfig), "--vcluster-name", "t", "--host-namespace", HOST_NS)
    assert code == 2
    assert err.strip() == (f'error: {pol}: invalid namespaces["team-a"].allowedHandlers: expected a list, got the '
                           'string "runsc"')
    assert (len(clusters.host_server.requests), len(clusters.virtual_server.requests)) == before


def test_a_selector_key_is_read_as_labels_parse_reads_it() -> None:
    # apimachinery labels.Parse: `a<3` is a LessThan requirement (TestSetSelectorParser "x<7"); a vertical tab
    # or no-break space is no separator there (isWhitespace), so the key is no valid selector and no name either
    text = b'namespaces:\n  "tier<3":\n    requireRuntimeClassName: true\n'
    policy = policy_from_text(text, "p.yaml", CONFIG)
    assert policy.effective("a", {"tier": "2"}) == Effective("", True, None, "tier<3")
    assert policy.effective("a", {"tier": "3"}).entry == "<top level>"
    with pytest.raises(ConfigError) as e:
        policy_from_text(b'namespaces:\n  "tier=gold\\v":\n    requireRuntimeClassName: true\n', "p.yaml", CONFIG)
    assert len(e.value.errors) == 1 and e.value.errors[0].startswith(
        'invalid namespaces["tier=gold\x0b"]: not a valid label selector: invalid label value: "gold\x0b": at key: '
        '"tier": a valid label must be an empty string or consist of alphanumeric characters')  # IsValidLabelValue
