"""The host's admission chain in the test API server (kubesim/admission.py, with the syncer's
controllers/podsecurity.py), each rule with the real plugin's words, and what a tenant sees when the host refuses
a synced pod (a SyncError event with the host's message). Sources: kube-apiserver's plugin/pkg/admission/priority,
serviceaccount and defaulttolerationseconds, and k8s.io/pod-security-admission's policy checks."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.kube.client import ApiError
from syncer.kube.resources import NAMESPACES, PODS, PRIORITYCLASSES
from tests.conftest import HOST_NS, Clusters, pod, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
NS = "apps"


def priority_class(name: str, value: int, **fields: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value,
            **fields}


async def refused(c: Clusters, p: Obj, ns: str = NS) -> str:
    with pytest.raises(ApiError) as err:
        await c.host.create(PODS, p, ns)
    assert err.value.status == 403
    return err.value.message


@pytest.fixture
async def ns(clusters: Clusters) -> str:
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS}})
    return NS


async def test_priority_admission(clusters: Clusters, ns: str) -> None:
    assert await refused(clusters, pod("p", namespace=ns, priorityClassName="high")) == (
        'pods "p" is forbidden: no PriorityClass with name high was found')
    await clusters.host.create(PRIORITYCLASSES, priority_class("high", 1000))
    assert await refused(clusters, pod("p", namespace=ns, priorityClassName="high", priority=5)) == (
        'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
        "admission controller computed 1000 from the given PriorityClass name")
    assert await refused(clusters, pod("p", namespace=ns, priorityClassName="high", preemptionPolicy="Never")) == (
        'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
    created = await clusters.host.create(PODS, pod("p", namespace=ns, priorityClassName="high"), ns)
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (1000, "PreemptLowerPriority")
    # no class named: 0 and PreemptLowerPriority without a global default (getDefaultPriority), so Never is refused;
    # with one, its name, value and policy
    spec = (await clusters.host.create(PODS, pod("q", namespace=ns), ns))["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert await refused(clusters, pod("n", namespace=ns, preemptionPolicy="Never")) == (
        'pods "n" is forbidden: the string value of PreemptionPolicy (Never) must not be provided in pod spec; '
        "priority admission controller computed PreemptLowerPriority from the given PriorityClass name")
    await clusters.host.create(PRIORITYCLASSES, priority_class("tenants", 10, globalDefault=True,
                                                               preemptionPolicy="Never"))
    spec = (await clusters.host.create(PODS, pod("r", namespace=ns), ns))["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == ("tenants", 10, "Never")
    # the system classes exist on every server; a second default is refused
    spec = (await clusters.host.create(PODS, pod("s", namespace=ns, priorityClassName="system-cluster-critical"),
                                       ns))["spec"]
    assert spec["priority"] == 2000000000
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PRIORITYCLASSES, priority_class("other", 1, globalDefault=True))
    assert err.value.message == ('priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass tenants is '
                                 "already marked as default. Only one default can exist")


async def test_service_account_and_default_toleration_seconds(clusters: Clusters, ns: str) -> None:
    assert await refused(clusters, pod("p", namespace=ns, serviceAccountName="builder")) == (
        f'pods "p" is forbidden: error looking up service account {ns}/builder: serviceaccount "builder" not found')
    created = await clusters.host.create(PODS, pod("p", namespace=ns, tolerations=[
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]), ns)
    assert created["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},  # its own: kept
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]


BAD = {"hostNetwork": True, "hostPID": True,
       "volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}, {"name": "tmp", "emptyDir": {}}],
       "containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 80}],
                       "securityContext": {"privileged": True, "capabilities": {"add": ["NET_ADMIN", "CHOWN"]}}}]}


async def test_pod_security_baseline(clusters: Clusters, ns: str) -> None:
    await clusters.host.patch(NAMESPACES, ns, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce":
                                                                       "baseline"}}})
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": BAD}
    assert await refused(clusters, bad) == (
        'pods "p" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "app" must '
        'not include "NET_ADMIN" in securityContext.capabilities.add), host namespaces (hostNetwork=true, '
        'hostPID=true), hostPath volumes (volume "logs"), hostPort (container "app" uses hostPort 80), privileged '
        '(container "app" must not set securityContext.privileged=true)')
    await clusters.host.create(PODS, pod("ok", namespace=ns), ns)  # a plain pod passes baseline


async def test_pod_security_restricted(clusters: Clusters, ns: str) -> None:
    await clusters.host.patch(NAMESPACES, ns, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce":
                                                                       "restricted"}}})
    assert await refused(clusters, pod("p", namespace=ns)) == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
        '(container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
        'container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must '
        'set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
    p = pod("q", namespace=ns, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}],
            securityContext={"runAsNonRoot": False, "runAsUser": 0, "seccompProfile": {"type": "Unconfined"}})
    p["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False,
                                                     "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}
    assert await refused(clusters, p) == (
        # capabilities_restricted overrides capabilities_baseline, restrictedVolumes overrides hostPathVolumes
        'pods "q" is forbidden: violates PodSecurity "restricted:latest": unrestricted capabilities (container '
        '"app" must not include "SYS_ADMIN" in securityContext.capabilities.add), restricted volume types (volume '
        '"logs" uses restricted volume type "hostPath"), runAsNonRoot != true (pod must not set '
        'securityContext.runAsNonRoot=false), runAsUser=0 (pod must not set runAsUser=0), seccompProfile (pod must '
        'not set securityContext.seccompProfile.type to "Unconfined")')


RESTRICTED_OK = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
CONTAINER_OK = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


async def test_what_a_restricted_host_refuses_reaches_the_tenant(clusters: Clusters) -> None:
    # The host namespace enforces restricted. A compliant StatefulSet-style pod is admitted with the hosts-rewriting
    # init container (it complies too); a pod with a hostPath gets a SyncError with the host's words.
    await clusters.host.patch(NAMESPACES, HOST_NS, {"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "restricted"}}})
    good = pod("db-0", hostname="db-0", subdomain="db", securityContext=RESTRICTED_OK)
    good["spec"]["containers"][0]["securityContext"] = CONTAINER_OK
    bad = pod("shipper", securityContext=RESTRICTED_OK, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}])
    bad["spec"]["containers"][0]["securityContext"] = CONTAINER_OK
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, good, "default")
        await clusters.virtual.create(PODS, bad, "default")
        hp = (await host_pods(clusters, lambda o: hname("db-0") in o, "db-0 on the host"))[hname("db-0")]
        events = await warnings_for(clusters, "shipper", lambda es: any(e["reason"] == "SyncError" for e in es))
    assert [c["name"] for c in hp["spec"]["initContainers"]] == ["vcluster-rewrite-hosts"]
    assert events[0]["message"] == (
        f'host rejected pod "shipper": pods "{hname("shipper")}" is forbidden: violates PodSecurity '
        '"restricted:latest": restricted volume types (volume "logs" uses restricted volume type "hostPath")')


async def test_a_host_default_priority_class_with_another_policy_does_not_block_pods(clusters: Clusters) -> None:
    # vcluster issue 1718: the virtual API server gives every pod a preemptionPolicy; with a host globalDefault class
    # whose policy differs, the host's Priority admission refuses a pod that keeps it. It is removed with the class.
    await clusters.host.create(PRIORITYCLASSES, priority_class("tenants", 10, globalDefault=True,
                                                               preemptionPolicy="Never"))
    await clusters.virtual.create(PRIORITYCLASSES, priority_class("high", 1000))
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, pod("web", priorityClassName="high"), "default")
        hp = (await host_pods(clusters, lambda o: hname("web") in o, "web on the host"))[hname("web")]
    assert (hp["spec"]["priorityClassName"], hp["spec"]["priority"], hp["spec"]["preemptionPolicy"]) == (
        "tenants", 10, "Never")


async def test_a_class_the_host_lacks_is_the_hosts_refusal(clusters: Clusters) -> None:
    # sync.fromHost.priorityClasses keeps class names (the virtual classes are supposed to be the host's): a class
    # made only in the virtual cluster is refused by the host, and the tenant reads why
    await clusters.virtual.create(PRIORITYCLASSES, priority_class("high", 1000))
    doc = rc_config()
    doc["sync"]["fromHost"]["priorityClasses"] = {"enabled": True}
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, pod("web", priorityClassName="high"), "default")
        events = await warnings_for(clusters, "web", lambda es: any(e["reason"] == "SyncError" for e in es))
    assert events[0]["message"] == (f'host rejected pod "web": pods "{hname("web")}" is forbidden: no PriorityClass '
                                    "with name high was found")


async def test_the_priority_class_gate(clusters: Clusters) -> None:
    # vcluster's applyLimitByPriorityClass (sync.fromHost.priorityClasses with a selector), its words; the system
    # classes are never gated; a class relabelled to match lets its waiting pod through
    await clusters.host.create(PRIORITYCLASSES, priority_class("tenant", 100, metadata={
        "name": "tenant", "labels": {"tenants": "allowed"}}))
    await clusters.host.create(PRIORITYCLASSES, priority_class("batch", 10))
    for name, value in (("tenant", 100), ("batch", 10), ("ghost", 5)):
        await clusters.virtual.create(PRIORITYCLASSES, priority_class(name, value))
    doc = rc_config()
    doc["sync"]["fromHost"]["priorityClasses"] = {"enabled": True, "selector": {"matchLabels": {"tenants": "allowed"}}}
    async with running_syncer(clusters, doc):
        for pod_name, pc in (("ok", "tenant"), ("batchy", "batch"), ("lost", "ghost"),
                             ("critical", "system-cluster-critical")):
            await clusters.virtual.create(PODS, pod(pod_name, priorityClassName=pc), "default")
        await host_pods(clusters, lambda o: hname("ok") in o and hname("critical") in o, "ok and critical synced")
        batchy = await warnings_for(clusters, "batchy")
        lost = await warnings_for(clusters, "lost")
        assert batchy[0]["reason"] == "SyncWarning" and batchy[0]["message"] == (
            'did not sync pod "batchy" to host because the priority class "batch" in the host does not match the '
            "selector under 'sync.fromHost.priorityClasses.selector'")
        assert lost[0]["message"] == ('did not sync pod "lost" to host because the priority class "ghost" couldn\'t '
                                      'be reached in the host: priorityclasses.scheduling.k8s.io "ghost" not found')
        await clusters.host.patch(PRIORITYCLASSES, "batch", {"metadata": {"labels": {"tenants": "allowed"}}})
        await host_pods(clusters, lambda o: hname("batchy") in o, "batchy synced once its class matches")
    assert hname("lost") not in {p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}


async def test_policies_pod_security_standard_holds_back_pods_that_do_not_meet_it(clusters: Clusters) -> None:
    # vcluster's validate_pod_security.go (TestSyncTable "SyncToHost with restricted security standard"): the
    # virtual pod is evaluated before it is synced; one that fails gets a SyncError in vcluster's words
    doc = rc_config()
    doc["policies"] = {"podSecurityStandard": "restricted"}
    good = pod("good", securityContext=RESTRICTED_OK)
    good["spec"]["containers"][0]["securityContext"] = CONTAINER_OK
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await clusters.virtual.create(PODS, good, "default")
        await host_pods(clusters, lambda o: hname("good") in o, "the compliant pod synced")
        events = await warnings_for(clusters, "plain")
    assert (events[0]["reason"], events[0]["message"]) == ("SyncError", (
        'Pod plain is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false '
        '(container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
        '(container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or '
        'container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must '
        'set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'))
    assert hname("plain") not in {p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}


def test_an_unknown_pod_security_standard_is_a_config_error() -> None:
    from syncer.config.model import ConfigError, parse_config
    with pytest.raises(ConfigError) as e:
        parse_config({"policies": {"podSecurityStandard": "strict"}})
    assert e.value.errors == ['invalid policies.podSecurityStandard: "strict" is not a Pod Security '
                              "Standard (privileged, baseline or restricted)"]
