"""Pod Security over real HTTP: the syncer's `policies.podSecurityStandard` check of virtual pods (vcluster's
`validate_pod_security.go`) and the test API server's PodSecurity admission of host pods, each against what
k8s.io/pod-security-admission refuses, in its words (reason and detail from `policy/check_*.go`, the refusal from
`admission/admission.go` `EvaluatePod`). Issue 22 found pods with AppArmor or seccomp unconfined, SELinux spc_t,
an unsafe sysctl or a probe host synced under `baseline`; each is here."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.kube.client import ApiError
from syncer.kube.resources import NAMESPACES, PODS
from tests.conftest import HOST_NS, Clusters, pod, rc_config, running_syncer
from tests.test_pod_sync import hname, host_pods, warnings_for

Obj = dict[str, Any]
NS = "apps"
AA_APP = "container.apparmor.security.beta.kubernetes.io/app"


def with_meta(p: Obj, annotations: dict[str, str]) -> Obj:
    p["metadata"]["annotations"] = annotations
    return p


def with_container_sc(p: Obj, sc: Obj) -> Obj:
    p["spec"]["containers"][0]["securityContext"] = sc
    return p


def tenant_pods() -> dict[str, Obj]:
    """The pods issue 22 found synced under baseline, by name."""
    return {
        "apparmor": with_meta(pod("apparmor"), {AA_APP: "unconfined"}),
        "seccomp": pod("seccomp", securityContext={"seccompProfile": {"type": "Unconfined"}}),
        "spc": with_container_sc(pod("spc"), {"seLinuxOptions": {"type": "spc_t"}}),
        "sysctl": pod("sysctl", securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]}),
        "probe": with_container_sc(pod("probe"), {}) | {"spec": {"containers": [{
            "name": "app", "image": "nginx:1.27",
            "livenessProbe": {"httpGet": {"host": "169.254.169.254", "port": 80, "path": "/"}}}]}},
    }


# the library's words for each (`<reason> (<detail>)`); the annotation is copied into the container's field by the
# API server on create (pod strategy applyAppArmorVersionSkew), so both are named
WORDS = {
    "apparmor": 'forbidden AppArmor profiles (container "app" and annotation must not set AppArmor profile type to '
                '"Unconfined", "container.apparmor.security.beta.kubernetes.io/app="unconfined"")',
    "seccomp": 'seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")',
    "spc": 'seLinuxOptions (container "app" set forbidden securityContext.seLinuxOptions: type "spc_t")',
    "sysctl": "forbidden sysctls (kernel.msgmax)",
    "probe": 'probe or lifecycle host (container "app" uses probe or lifecycle host "169.254.169.254")',
}


async def refused(c: Clusters, p: Obj, ns: str = NS) -> str:
    with pytest.raises(ApiError) as err:
        await c.host.create(PODS, p, ns)
    assert err.value.status == 403
    return err.value.message


async def label(c: Clusters, ns: str, labels: dict[str, str | None]) -> None:
    await c.host.patch(NAMESPACES, ns, {"metadata": {"labels": labels}})


async def test_the_host_refuses_what_the_library_refuses_at_baseline(clusters: Clusters) -> None:
    # the probe host check is policy v1.34's (hostProbesAndhostLifecycle): `latest` has it from a 1.34 server on
    clusters.host_server.minor = 34
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS}})
    await label(clusters, NS, {"pod-security.kubernetes.io/enforce": "baseline"})
    for name, p in tenant_pods().items():
        p["metadata"]["namespace"] = NS
        assert await refused(clusters, p) == (
            f'pods "{name}" is forbidden: violates PodSecurity "baseline:latest": {WORDS[name]}')
    # the AppArmor field alone, and several checks at once in the library's order (seLinuxOptions before
    # seccompProfile_baseline: Go sorts bytes)
    p = with_container_sc(pod("field", namespace=NS), {"appArmorProfile": {"type": "Unconfined"},
                                             "seLinuxOptions": {"type": "spc_t"},
                                             "seccompProfile": {"type": "Unconfined"}})
    assert await refused(clusters, p) == (
        'pods "field" is forbidden: violates PodSecurity "baseline:latest": forbidden AppArmor profile (container '
        '"app" must not set AppArmor profile type to "Unconfined"), seLinuxOptions (container "app" set forbidden '
        'securityContext.seLinuxOptions: type "spc_t"), seccompProfile (container "app" must not set '
        'securityContext.seccompProfile.type to "Unconfined")')
    # allowed profiles pass; the annotation's profile becomes the container's field, as on a real API server
    ok = await clusters.host.create(PODS, with_meta(pod("ok", namespace=NS), {AA_APP: "localhost/k8s-nginx"}), NS)
    assert ok["spec"]["containers"][0]["securityContext"]["appArmorProfile"] == {
        "type": "Localhost", "localhostProfile": "k8s-nginx"}


async def test_the_enforce_version_label_chooses_the_checks_and_is_named(clusters: Clusters) -> None:
    # check_sysctls.go: net.ipv4.tcp_rmem is safe from policy v1.32 on; the refusal names the version as labelled
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS}})
    await label(clusters, NS, {"pod-security.kubernetes.io/enforce": "baseline",
                               "pod-security.kubernetes.io/enforce-version": "v1.31"})
    p = pod("tuned", namespace=NS, securityContext={"sysctls": [{"name": "net.ipv4.tcp_rmem",
                                                                  "value": "4096 87380 16777216"}]})
    assert await refused(clusters, p) == (
        'pods "tuned" is forbidden: violates PodSecurity "baseline:v1.31": forbidden sysctls (net.ipv4.tcp_rmem)')
    await label(clusters, NS, {"pod-security.kubernetes.io/enforce-version": "v1.32"})
    await clusters.host.create(PODS, p, NS)


async def test_policies_pod_security_standard_baseline_holds_back_what_the_library_refuses(
        clusters: Clusters) -> None:
    # vcluster evaluates the virtual pod (its metadata and spec) with the library before syncing it; each pod the
    # library refuses gets a SyncError and stays off the host; a pod with allowed profiles syncs
    doc = rc_config()
    doc["policies"] = {"podSecurityStandard": "baseline"}
    good = with_meta(pod("good", securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
                     {AA_APP: "runtime/default"})
    async with running_syncer(clusters, doc):
        for p in tenant_pods().values():
            await clusters.virtual.create(PODS, p, "default")
        await clusters.virtual.create(PODS, good, "default")
        await host_pods(clusters, lambda o: hname("good") in o, "the compliant pod synced")
        for name in WORDS:
            events = await warnings_for(clusters, name)
            assert (events[0]["reason"], events[0]["message"]) == (
                "SyncError", f'Pod {name} is forbidden: violates PodSecurity "baseline:latest": {WORDS[name]}')
    on_host = {p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}
    assert on_host.isdisjoint(hname(n) for n in WORDS)


async def test_a_baseline_host_refuses_an_annotated_pod_the_syncer_lets_through(clusters: Clusters) -> None:
    # without policies.podSecurityStandard the syncer syncs the pod; the host namespace enforces baseline and
    # refuses it with the library's words, which reach the tenant as a SyncError
    await label(clusters, HOST_NS, {"pod-security.kubernetes.io/enforce": "baseline"})
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, with_meta(pod("apparmor"), {AA_APP: "unconfined"}), "default")
        events = await warnings_for(clusters, "apparmor", lambda es: any(e["reason"] == "SyncError" for e in es))
    assert events[0]["message"] == (
        f'host rejected pod "apparmor": pods "{hname("apparmor")}" is forbidden: violates PodSecurity '
        f'"baseline:latest": {WORDS["apparmor"]}')


async def test_the_host_evaluates_pod_updates_the_library_calls_significant(clusters: Clusters) -> None:
    # admission.go ValidatePod: an update is evaluated when it changes an image or adds an ephemeral container
    # (isSignificantPodUpdate); labels, annotations and status are not, so a pod admitted before the namespace was
    # labelled keeps running and can be relabelled
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS}})
    await clusters.host.create(PODS, with_container_sc(pod("p", namespace=NS), {"privileged": True}), NS)
    await label(clusters, NS, {"pod-security.kubernetes.io/enforce": "baseline"})
    await clusters.host.patch(PODS, "p", {"metadata": {"labels": {"tier": "web"},
                                                       "annotations": {"team": "a"}}}, NS)
    await clusters.host.patch(PODS, "p", {"status": {"phase": "Running"}}, NS, subresource="status")
    words = ('pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not '
             'set securityContext.privileged=true)')
    current = await clusters.host.get(PODS, "p", NS)
    current["spec"]["containers"][0]["image"] = "nginx:1.28"
    with pytest.raises(ApiError) as err:
        await clusters.host.replace(PODS, current, NS)
    assert (err.value.status, err.value.message) == (403, words)
    debug = {"name": "debugger", "image": "busybox", "targetContainerName": "app",
             "securityContext": {"capabilities": {"add": ["SYS_PTRACE"]}}}
    with pytest.raises(ApiError) as err:
        await clusters.host.patch(PODS, "p", {"spec": {"ephemeralContainers": [debug]}}, NS,
                                  subresource="ephemeralcontainers")
    assert (err.value.status, err.value.message) == (403, words.replace(
        "privileged (", 'non-default capabilities (container "debugger" must not include "SYS_PTRACE" in '
                        "securityContext.capabilities.add), privileged ("))
    assert (await clusters.host.get(PODS, "p", NS))["metadata"]["labels"] == {"tier": "web"}


async def test_a_volume_without_a_source_is_an_empty_dir(clusters: Clusters) -> None:
    # SetDefaults_Volume (pkg/apis/core/v1/defaults.go) on decode, before validation: the library's
    # restrictedvolumes0 pass fixture relies on it ("implicit empty dir"), so restricted admits such a pod
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS}})
    await label(clusters, NS, {"pod-security.kubernetes.io/enforce": "restricted"})
    p = with_container_sc(pod("scratch", namespace=NS, volumes=[{"name": "tmp"}],
                              securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}),
                          {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}})
    created = await clusters.host.create(PODS, p, NS)
    assert created["spec"]["volumes"][0] == {"name": "tmp", "emptyDir": {}}


async def test_pod_security_labels_the_library_cannot_parse_are_refused(clusters: Clusters) -> None:
    # admission.go ValidateNamespace: invalid labels refused on create, and on update when they change
    # (api/helpers.go PolicyToEvaluate, ParseLevel, ParseVersion; response.go invalidResponse)
    with pytest.raises(ApiError) as err:
        await clusters.host.create(NAMESPACES, {"metadata": {"name": NS, "labels": {
            "pod-security.kubernetes.io/enforce": "strict", "pod-security.kubernetes.io/warn-version": "1.30"}}})
    assert (err.value.status, err.value.message) == (422, (
        'Namespace "apps" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": '
        "must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: "
        'Invalid value: "1.30": must be "latest" or "v1.x"]'))
    await clusters.host.create(NAMESPACES, {"metadata": {"name": NS, "labels": {
        "pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "v1.30"}}})
    with pytest.raises(ApiError) as err:
        await label(clusters, NS, {"pod-security.kubernetes.io/enforce-version": "v1.030"})
    assert (err.value.status, err.value.message) == (422, (
        'Namespace "apps" is invalid: metadata.labels[pod-security.kubernetes.io/enforce-version]: Invalid value: '
        '"v1.030": must be "latest" or "v1.x"'))
    await label(clusters, NS, {"pod-security.kubernetes.io/audit": "baseline", "team": "a"})


def test_labels_that_were_already_invalid_do_not_block_other_changes() -> None:
    # ValidateNamespace on update: `len(newErrs) > 0 && (len(oldErrs) == 0 || !reflect.DeepEqual(newErrs, oldErrs))`
    # (a namespace labelled before PodSecurity was enabled can still be relabelled otherwise)
    from kubesim.admission import admit_namespace_pod_security
    from kubesim.status import StatusError
    old = {"metadata": {"name": NS, "labels": {"pod-security.kubernetes.io/enforce": "strict"}}}
    admit_namespace_pod_security({"metadata": {"name": NS, "labels": {
        "pod-security.kubernetes.io/enforce": "strict", "team": "a"}}}, old)
    with pytest.raises(StatusError) as err:
        admit_namespace_pod_security({"metadata": {"name": NS, "labels": {
            "pod-security.kubernetes.io/enforce": "stricter"}}}, old)
    assert err.value.status()["message"] == (
        'Namespace "apps" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: '
        '"stricter": must be one of privileged, baseline, restricted')


def root_in_a_user_namespace(name: str) -> Obj:
    """A pod that meets `restricted` only through `hostUsers: false`: it runs as root, which the 1.35 checks allow
    in a user namespace (pod-security-admission policy/helpers.go `relaxPolicyForUserNamespacePod`)."""
    p = pod(name, securityContext={"runAsUser": 0, "runAsNonRoot": False, "seccompProfile": {"type": "RuntimeDefault"}})
    p["spec"]["hostUsers"] = False
    p["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False,
                                                     "capabilities": {"drop": ["ALL"]}}
    return p


# policy/check_runAsNonRoot.go and check_runAsUser.go: what `restricted` finds in that pod without `hostUsers`
ROOT_WORDS = ("runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false), "
              "runAsUser=0 (pod must not set runAsUser=0)")
DROPPED = ("(the host API server drops spec.hostUsers: its UserNamespacesSupport feature gate is off, so the pod would "
           "not run in a user namespace)")


@pytest.mark.parametrize("host_minor", [32, 33])
async def test_root_in_a_user_namespace_is_synced_only_to_a_host_that_keeps_host_users(
        clusters: Clusters, host_minor: int) -> None:
    # UserNamespacesSupport is off by default up to 1.32 (kubernetes pkg/features), and a host whose gate is off
    # drops spec.hostUsers silently (pkg/api/pod/util.go dropDisabledFields): the pod would run as root in the
    # node's user namespace, which `restricted` forbids. The virtual cluster (1.34) keeps the field.
    clusters.virtual_server.minor, clusters.host_server.minor = 34, host_minor
    doc = rc_config()
    doc["policies"] = {"podSecurityStandard": "restricted"}
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, root_in_a_user_namespace("userns"), "default")
        if host_minor >= 33:
            synced = (await host_pods(clusters, lambda o: hname("userns") in o, "synced"))[hname("userns")]
            assert synced["spec"]["hostUsers"] is False
            return
        events = await warnings_for(clusters, "userns")
        assert (events[0]["reason"], events[0]["message"]) == (
            "SyncError", f'Pod userns is forbidden: violates PodSecurity "restricted:latest": {ROOT_WORDS} {DROPPED}')
        await syncer.wait_idle()
    creates = [p for m, p, _ in clusters.host_server.requests if m == "POST" and p.endswith("/pods")]
    assert len(creates) == 1, creates  # the dry run: asked, never created (nor deleted)
    assert not [p for m, p, _ in clusters.host_server.requests if m == "DELETE" and "/pods/" in p]
    assert hname("userns") not in {p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}


async def test_without_a_dry_run_the_created_host_pod_is_looked_at_and_deleted(clusters: Clusters) -> None:
    # A host admission webhook without dry-run support fails the dry run (kube-apiserver: 400); the pod is then
    # created, the field is found dropped on the created pod, which is deleted at once and not created again.
    clusters.virtual_server.minor, clusters.host_server.minor = 34, 32
    doc = rc_config()
    doc["policies"] = {"podSecurityStandard": "restricted"}
    clusters.host_server.faults.fail(400, verb="create", resource="pods", times=1)  # the dry run
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, root_in_a_user_namespace("userns"), "default")
        events = await warnings_for(clusters, "userns")
        assert (events[0]["reason"], events[0]["message"]) == (
            "SyncError", f'Pod userns is forbidden: violates PodSecurity "restricted:latest": {ROOT_WORDS} {DROPPED}')
        await syncer.wait_idle()
        assert hname("userns") not in {
            p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}
    creates = [p for m, p, _ in clusters.host_server.requests if m == "POST" and p.endswith("/pods")]
    assert len(creates) == 2, creates  # the dry run that failed, the create
    deletes = [p for m, p, _ in clusters.host_server.requests if m == "DELETE" and "/pods/" in p]
    assert len(deletes) == 1, deletes


async def test_pod_security_standard_is_judged_at_vclusters_latest(clusters: Clusters) -> None:
    # vcluster vendors k8s.io/pod-security-admission v0.36.0 (its go.mod): there `latest` still forbids the two
    # sysctls only the library's unreleased v1.37 revision allows (check_sysctls.go), so vcluster holds such a pod back
    doc = rc_config()
    doc["policies"] = {"podSecurityStandard": "baseline"}
    tuned = pod("tuned", securityContext={"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat", "value": "16384"}]})
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, tuned, "default")
        await clusters.virtual.create(PODS, pod("plain"), "default")
        await host_pods(clusters, lambda o: hname("plain") in o, "the plain pod synced")
        events = await warnings_for(clusters, "tuned")
        assert (events[0]["reason"], events[0]["message"]) == (
            "SyncError", 'Pod tuned is forbidden: violates PodSecurity "baseline:latest": '
                         "forbidden sysctls (net.ipv4.tcp_notsent_lowat)")
    on_host = {p["metadata"]["name"] for p in (await clusters.host.list(PODS, HOST_NS))["items"]}
    assert hname("tuned") not in on_host
