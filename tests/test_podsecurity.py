"""The Pod Security checks (syncer/controllers/podsecurity.py) one by one, in the words of
k8s.io/pod-security-admission: the cases of its own unit tests (`policy/check_*_test.go`, `policy/registry_test.go`
at the commit of tests/data/pod-security-admission/SOURCE), transcribed with their expected reason and detail as
literals, then how the checks combine into the admission plugin's refusal (`admission/admission.go`
`EvaluatePod`, `api/helpers.go` `PolicyToEvaluate`). Every fixture pod of the library is judged in
tests/test_podsecurity_fixtures.py."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.controllers import podsecurity as ps
from syncer.controllers.podsecurity import refusal, violations

Obj = dict[str, Any]
OK_C = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
OK_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
AA = "container.apparmor.security.beta.kubernetes.io/"


def spec(*containers: Obj, pod: Obj | None = None, **fields: Any) -> Obj:
    """A pod spec with containers c0, c1, ... (each given fields) and the pod securityContext `pod`."""
    out: Obj = {"containers": [{"name": f"c{i}", "image": "x", **c} for i, c in enumerate(containers)], **fields}
    if pod is not None:
        out["securityContext"] = pod
    return out


def named(**containers: Obj | None) -> list[Obj]:
    """Containers by name, each with the given securityContext (None: none)."""
    return [{"name": n, **({"securityContext": sc} if sc is not None else {})} for n, sc in containers.items()]


def latest(level: str, check_id: str) -> ps.CheckFn:
    """The revision of a check in force at `latest`."""
    return dict(ps.checks_for(level))[check_id]


# (check, metadata, spec, reason, detail): the Forbidden cases of policy/check_*_test.go
LIBRARY_CASES = [
    # check_appArmorProfile_test.go TestCheckAppArmor_Forbidden
    (ps.app_armor_profile, {}, {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
     "forbidden AppArmor profile", 'pod must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile, {}, {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                                "containers": named(foo={"appArmorProfile": {"type": "Unconfined"}})},
     "forbidden AppArmor profile", 'container "foo" must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile, {}, {"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}},
                                "containers": [{"name": "foo"}],
                                "initContainers": named(bar={"appArmorProfile": {"type": "Unconfined"}})},
     "forbidden AppArmor profile", 'container "bar" must not set AppArmor profile type to "Unconfined"'),
    (ps.app_armor_profile, {"annotations": {AA: "bogus", AA + "a": "", AA + "b": "runtime/default",
                                            AA + "c": "localhost/", AA + "d": "localhost/foo", AA + "e": "unconfined",
                                            AA + "f": "unknown"}}, {},
     "forbidden AppArmor profiles",
     'annotations must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/="bogus"", '
     '"container.apparmor.security.beta.kubernetes.io/e="unconfined"", '
     '"container.apparmor.security.beta.kubernetes.io/f="unknown""'),
    # check_seccompProfile_baseline_test.go TestSeccompProfileBaseline_1_0 (the alpha annotations)
    (ps.seccomp_profile_baseline_1_0, {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}, {},
     "seccompProfile", 'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"'),
    (ps.seccomp_profile_baseline_1_0,
     {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
                      "container.seccomp.security.alpha.kubernetes.io/b": "unknown"}},
     {"containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}]},
     "seccompProfile", 'forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", '
                       'container.seccomp.security.alpha.kubernetes.io/b="unknown", '
                       'seccomp.security.alpha.kubernetes.io/pod="unconfined"'),
    # TestSeccompProfileBaseline_1_19
    (ps.seccomp_profile_baseline_1_19, {},
     {"securityContext": {"seccompProfile": {"type": "Unconfined"}},
      "containers": named(a=None, b={}, c={"seccompProfile": {"type": "Unconfined"}},
                          d={"seccompProfile": {"type": "Unconfined"}},
                          e={"seccompProfile": {"type": "RuntimeDefault"}},
                          f={"seccompProfile": {"type": "RuntimeDefault"}})},
     "seccompProfile", 'pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined"'),
    # check_seLinuxOptions_test.go TestSELinuxOptions (seLinuxOptions1_31)
    (ps.se_linux_options_1_31, {},
     {"securityContext": {"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}},
      "containers": named(a={"seLinuxOptions": {"type": "container_t"}},
                          b={"seLinuxOptions": {"type": "container_init_t"}},
                          c={"seLinuxOptions": {"type": "container_kvm_t"}},
                          d={"seLinuxOptions": {"type": "container_engine_t"}}, e={"seLinuxOptions": {"type": "bar"}},
                          f={"seLinuxOptions": {"user": "bar"}}, g={"seLinuxOptions": {"role": "baz"}})},
     "seLinuxOptions", 'pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", '
                       '"foo"; user may not be set; role may not be set'),
    (ps.se_linux_options_1_31, {}, {"securityContext": {"seLinuxOptions": {"type": "bad"}}},
     "seLinuxOptions", 'pod set forbidden securityContext.seLinuxOptions: type "bad"'),
    (ps.se_linux_options_1_31, {}, {"securityContext": {"seLinuxOptions": {"role": "bad"}}},
     "seLinuxOptions", "pod set forbidden securityContext.seLinuxOptions: role may not be set"),
    # check_sysctls_test.go TestSysctls
    (latest("baseline", "sysctls"), {}, {"securityContext": {"sysctls": [{"name": "a"}, {"name": "b"}]}},
     "forbidden sysctls", "a, b"),
    # check_hostProbesAndhostLifecycle_test.go TestHostProbesAndHostLifecycle
    (ps.host_probes_and_lifecycle, {},
     {"containers": [{"name": "a", "livenessProbe": {"httpGet": {"host": "127.0.0.1"}},
                      "readinessProbe": {"tcpSocket": {"host": "::1"}},
                      "startupProbe": {"httpGet": {"host": "localhost"}}}]},
     "probe or lifecycle host", 'container "a" uses probe or lifecycle hosts "127.0.0.1", "::1", "localhost"'),
    (ps.host_probes_and_lifecycle, {},
     {"containers": [{"name": "e", "lifecycle": {"preStop": {"httpGet": {"host": "another.invalid.host"}}}}]},
     "probe or lifecycle host", 'container "e" uses probe or lifecycle host "another.invalid.host"'),
    (ps.host_probes_and_lifecycle, {},
     {"containers": [{"name": "valid"}, {"name": "invalid1", "livenessProbe": {"httpGet": {"host": "a.com"}}},
                     {"name": "invalid2", "lifecycle": {"preStop": {"tcpSocket": {"host": "b.com"}}},
                      "startupProbe": {"httpGet": {"host": "a.com"}}}]},
     "probe or lifecycle host", 'containers "invalid1", "invalid2" use probe or lifecycle hosts "a.com", "b.com"'),
    (ps.host_probes_and_lifecycle, {},
     {"initContainers": [{"name": "init", "livenessProbe": {"httpGet": {"host": "invalid.init.host"}}}]},
     "probe or lifecycle host", 'container "init" uses probe or lifecycle host "invalid.init.host"'),
    # check_procMount_baseline_test.go TestProcMountBaseline (procMount1_35baseline, hostUsers: true)
    (ps.proc_mount_1_35, {},
     {"hostUsers": True, "containers": named(a=None, b={}, c={"procMount": "Default"}, d={"procMount": "Unmasked"},
                                             e={"procMount": "other"})},
     "procMount", 'containers "d", "e" must not set securityContext.procMount to "Unmasked", "other"'),
    # check_windowsHostProcess_test.go TestWindowsHostProcess
    (ps.windows_host_process, {},
     {"securityContext": {"windowsOptions": {"hostProcess": True}},
      "containers": named(a=None, b={}, c={"windowsOptions": {}}, d={"windowsOptions": {"hostProcess": False}},
                          e={"windowsOptions": {"hostProcess": True}}, f={"windowsOptions": {"hostProcess": True}})},
     "hostProcess", 'pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true'),
    # check_hostPorts_test.go TestHostPort
    (ps.host_ports, {}, {"containers": [{"name": "a", "ports": [{"hostPort": 0}]},
                                        {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 20}]}]},
     "hostPort", 'container "b" uses hostPort 20'),
    (ps.host_ports, {}, {"containers": [{"name": "a", "ports": [{"hostPort": 0}]},
                                        {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
                                        {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]}]},
     "hostPort", 'containers "b", "c" use hostPorts 10, 20, 30'),
    # check_capabilities_restricted_test.go TestCapabilitiesRestricted_1_25
    (ps.capabilities_restricted, {},
     {"containers": named(a={"capabilities": {"add": ["FOO", "BAR"]}}, b={"capabilities": {"add": ["BAR", "BAZ"]}},
                          c={"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]}})},
     "unrestricted capabilities", 'containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; '
                                  'containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in '
                                  "securityContext.capabilities.add"),
    # check_runAsNonRoot_test.go, check_runAsUser_test.go, check_allowPrivilegeEscalation_test.go
    (ps.run_as_non_root, {}, {"containers": named(a=None, b=None)},
     "runAsNonRoot != true", 'pod or containers "a", "b" must set securityContext.runAsNonRoot=true'),
    (ps.run_as_user, {}, {"containers": named(a=None, b={}, c={"runAsUser": 0}, d={"runAsUser": 0})},
     "runAsUser=0", 'containers "c", "d" must not set runAsUser=0'),
    (ps.allow_privilege_escalation, {}, {"containers": named(a=None, b={}, c={"allowPrivilegeEscalation": True})},
     "allowPrivilegeEscalation != false",
     'containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false'),
    # check_seccompProfile_restricted_test.go
    (ps.seccomp_profile_restricted, {}, {"containers": named(a=None, b=None)},
     "seccompProfile", 'pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
                       '"Localhost"'),
    # check_restrictedVolumes_test.go
    (ps.restricted_volumes, {}, {"volumes": [
        {"name": "a1", "emptyDir": {}}, {"name": "a2", "secret": {}}, {"name": "a3", "persistentVolumeClaim": {}},
        {"name": "a4", "downwardAPI": {}}, {"name": "a5", "configMap": {}}, {"name": "a6", "projected": {}},
        {"name": "a7", "csi": {}}, {"name": "a8", "ephemeral": {}}, {"name": "a9", "image": {}},
        *({"name": f"b{i + 1}", k: {}} for i, k in enumerate((
            "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
            "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
            "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos"))),
        {"name": "c1"}]},
     "restricted volume types",
     'volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", "b16", '
     '"b17", "b18", "b19", "b20", "b21", "c1" use restricted volume types "awsElasticBlockStore", "azureDisk", '
     '"azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", '
     '"hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", '
     '"unknown", "vsphereVolume"'),
]


@pytest.mark.parametrize(("check", "meta", "s", "reason", "detail"), LIBRARY_CASES)
def test_the_librarys_own_cases(check: ps.CheckFn, meta: Obj, s: Obj, reason: str, detail: str) -> None:
    assert check(meta, s) == (reason, detail)


@pytest.mark.parametrize(("check", "meta", "s"), [
    # the Allowed cases of the same files
    (ps.app_armor_profile, {"annotations": {AA + "test": "runtime/default", "env": "prod"}}, {}),
    (ps.app_armor_profile, {"annotations": {AA + "test": "localhost/sec-profile01"}}, {}),
    (ps.app_armor_profile, {}, {"containers": named(foo={"appArmorProfile": {"type": "RuntimeDefault"}})}),
    (ps.host_probes_and_lifecycle, {}, {"containers": [{"name": "a", "livenessProbe": {"httpGet": {}},
                                                        "readinessProbe": {"tcpSocket": {}},
                                                        "lifecycle": {"postStart": {"httpGet": {}}}}]}),
    (ps.proc_mount_1_35, {}, {"hostUsers": False, "containers": named(d={"procMount": "Unmasked"})}),
    (ps.run_as_non_root_1_35, {}, {"hostUsers": False, "containers": named(a={"runAsNonRoot": False})}),
    (ps.run_as_user_1_35, {}, {"hostUsers": False, "securityContext": {"runAsUser": 0}}),
    (latest("restricted", "seccompProfile_restricted"), {}, {"os": {"name": "windows"}, "containers": named(a=None)}),
])
def test_the_librarys_allowed_cases(check: ps.CheckFn, meta: Obj, s: Obj) -> None:
    assert check(meta, s) is None


def test_the_checks_at_latest_in_the_librarys_order() -> None:
    # policy/registry.go populate: baseline IDs sorted, then restricted IDs sorted (Go sorts bytes: "seLinux" <
    # "seccomp"); restricted drops the baseline checks its checks override (capabilities_baseline, hostPathVolumes,
    # procMount, seccompProfile_baseline)
    assert [i for i, _ in ps.checks_for("baseline")] == [
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPathVolumes", "hostPorts",
        "hostProbesAndHostLifecycle", "privileged", "procMount", "seLinuxOptions", "seccompProfile_baseline", "sysctls",
        "windowsHostProcess"]
    assert [i for i, _ in ps.checks_for("restricted")] == [
        "appArmorProfile", "hostNamespaces", "hostPorts", "hostProbesAndHostLifecycle", "privileged", "seLinuxOptions",
        "sysctls", "windowsHostProcess", "allowPrivilegeEscalation", "capabilities_restricted", "procMount_restricted",
        "restrictedVolumes", "runAsNonRoot", "runAsUser", "seccompProfile_restricted"]
    # v1.0: no allowPrivilegeEscalation (1.8), capabilities_restricted (1.22), runAsUser (1.23), seccomp restricted
    # (1.19), so the baseline capabilities and (annotation) seccomp checks stay
    assert [i for i, _ in ps.checks_for("restricted", 0)] == [
        "appArmorProfile", "capabilities_baseline", "hostNamespaces", "hostPorts", "privileged", "procMount",
        "seLinuxOptions", "seccompProfile_baseline", "sysctls", "windowsHostProcess", "restrictedVolumes",
        "runAsNonRoot"]
    assert ps.checks_for("privileged") == [] and ps.checks_for("strict") == []


def _registry_check(cid: str, level: str, minors: list[int], overrides: tuple[str, ...] = ()) -> ps.Check:
    """registry_test.go generateCheck: each revision fails with the reason `<id>:v1.<minor>`."""
    def revision(m: int) -> ps.Version:
        return ps.Version(m, lambda meta, s: (f"{cid}:v1.{m}", ""), overrides)
    return ps.Check(cid, level, tuple(revision(m) for m in minors))


@pytest.mark.parametrize(("level", "minor", "reasons"), [
    ("privileged", None, []),
    ("baseline", 0, ["a:v1.0", "c:v1.0"]), ("baseline", 4, ["a:v1.0", "c:v1.0"]), ("baseline", 5, ["a:v1.0", "c:v1.5"]),
    ("baseline", 10, ["a:v1.0", "b:v1.10", "c:v1.10"]), ("baseline", 11, ["a:v1.0", "b:v1.10", "c:v1.10", "d:v1.11"]),
    ("baseline", None, ["a:v1.0", "b:v1.10", "c:v1.10", "d:v1.20"]),
    ("restricted", 0, ["a:v1.0", "c:v1.0", "e:v1.0", "h:v1.0"]),
    ("restricted", 5, ["a:v1.0", "c:v1.5", "e:v1.0", "h:v1.0"]),
    ("restricted", 10, ["e:v1.0", "g:v1.10", "h:v1.0", "i:v1.10"]),
    ("restricted", 11, ["d:v1.11", "e:v1.0", "g:v1.10", "h:v1.0", "i:v1.10"]),
    ("restricted", None, ["c:v1.10", "e:v1.0", "f:v1.21", "g:v1.10", "h:v1.0", "i:v1.21"]),
    ("restricted", 10000, ["c:v1.10", "e:v1.0", "f:v1.21", "g:v1.10", "h:v1.0", "i:v1.21"]),
])
def test_the_registry_as_the_librarys_registry_test(level: str, minor: int | None, reasons: list[str]) -> None:
    # policy/registry_test.go TestCheckRegistry: revisions by version, overrides by version, baseline first
    i = ps.Check("i", "restricted", (ps.Version(10, lambda m, s: ("i:v1.10", ""), ("c",)),
                                     ps.Version(21, lambda m, s: ("i:v1.21", ""), ("d",))))
    checks = (_registry_check("a", "baseline", [0]), _registry_check("b", "baseline", [10]),
              _registry_check("c", "baseline", [0, 5, 10]), _registry_check("d", "baseline", [11, 15, 20]),
              _registry_check("e", "restricted", [0]), _registry_check("f", "restricted", [12, 16, 21]),
              _registry_check("g", "restricted", [10], ("a",)), _registry_check("h", "restricted", [0], ("b",)), i)
    found = [fn({}, {}) for _, fn in ps.checks_for(level, minor, checks)]
    assert [r[0] for r in found if r is not None] == reasons


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
    # what issue 22 found let through at baseline: seccomp and AppArmor unconfined, spc_t, Unmasked, unsafe sysctls,
    # probe hosts
    (spec({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
     ['seccompProfile (container "c0" must not set securityContext.seccompProfile.type to "Unconfined")']),
    (spec({}, pod={"appArmorProfile": {"type": "Unconfined"}}),
     ['forbidden AppArmor profile (pod must not set AppArmor profile type to "Unconfined")']),
    (spec({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
     ['seLinuxOptions (container "c0" set forbidden securityContext.seLinuxOptions: type "spc_t")']),
    (spec({"securityContext": {"procMount": "Unmasked"}}),
     ['procMount (container "c0" must not set securityContext.procMount to "Unmasked")']),
    (spec({}, pod={"sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_syncookies"},
                               {"name": "net.core.somaxconn", "value": "1"}]}),
     ["forbidden sysctls (kernel.msgmax, net.core.somaxconn)"]),
    (spec({"readinessProbe": {"tcpSocket": {"port": 6443, "host": "10.0.0.1"}}}),
     ['probe or lifecycle host (container "c0" uses probe or lifecycle host "10.0.0.1")']),
])
def test_baseline(s: Obj, want: list[str]) -> None:
    assert violations("baseline", {}, s) == want


def test_annotations_are_read_and_quoted_as_go_quotes_them() -> None:
    # the annotation value is printed with Go's %q (check_appArmorProfile.go `fmt.Sprintf("%s=%q", k, v)`)
    meta = {"annotations": {AA + "app": 'un"con\nfined', "other": "unconfined"}}
    assert violations("baseline", meta, spec({})) == [
        'forbidden AppArmor profile (annotation must not set AppArmor profile type to '
        '"container.apparmor.security.beta.kubernetes.io/app="un\\"con\\nfined"")']
    # a seccomp annotation is only read before v1.19 (seccompProfileBaseline_1_0)
    old = {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}}
    assert violations("baseline", old, spec({})) == []
    assert violations("baseline", old, spec({}), minor=18) == [
        'seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")']


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
    # a user-namespaced pod may run as root with an unmasked /proc at baseline, not at restricted
    (spec({"securityContext": {**OK_C, "procMount": "Unmasked", "runAsUser": 0}}, pod=OK_POD, hostUsers=False),
     ['procMount (container "c0" must not set securityContext.procMount to "Unmasked")']),
    # a Windows pod needs no allowPrivilegeEscalation, capabilities or seccomp (the 1.25 revisions)
    (spec({}, pod={"runAsNonRoot": True}, os={"name": "windows"}), []),
])
def test_restricted(s: Obj, want: list[str]) -> None:
    assert violations("restricted", {}, s) == want


def test_restricted_includes_baseline_first_and_overrides_some_of_its_checks() -> None:
    # restricted = baseline + its own checks, the baseline ones reported first (registry.go populate);
    # capabilities_restricted replaces capabilities_baseline and restrictedVolumes replaces hostPathVolumes
    s = spec({"securityContext": {**OK_C, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN", "NET_BIND_SERVICE"]}}},
             pod=OK_POD, hostPID=True, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}])
    assert violations("restricted", {}, s) == [
        "host namespaces (hostPID=true)",
        'unrestricted capabilities (container "c0" must not include "SYS_ADMIN" in securityContext.capabilities.add)',
        'restricted volume types (volume "logs" uses restricted volume type "hostPath")']


def test_bad_values_set_by_the_pod_and_by_containers() -> None:
    s = spec({"securityContext": {**OK_C, "runAsNonRoot": False, "seccompProfile": {"type": "Unconfined"}}},
             {"securityContext": {**OK_C, "runAsNonRoot": True}},
             pod={"runAsNonRoot": False, "seccompProfile": {"type": "Unconfined"}})
    assert violations("restricted", {}, s) == [
        'runAsNonRoot != true (pod and container "c0" must not set securityContext.runAsNonRoot=false)',
        'seccompProfile (pod and container "c0" must not set securityContext.seccompProfile.type to "Unconfined")']
    one = spec({"ports": [{"containerPort": 8080, "hostPort": 8080}]})
    assert violations("baseline", {}, one) == ['hostPort (container "c0" uses hostPort 8080)']


def test_the_policy_version_changes_what_is_allowed() -> None:
    # check_sysctls.go: tcp_keepalive_time is safe from v1.29, tcp_slow_start_after_idle from v1.37 (= latest)
    s = spec({}, pod={"sysctls": [{"name": "net.ipv4.tcp_keepalive_time"},
                                  {"name": "net.ipv4.tcp_slow_start_after_idle"}]})
    assert violations("baseline", {}, s, minor=28) == [
        "forbidden sysctls (net.ipv4.tcp_keepalive_time, net.ipv4.tcp_slow_start_after_idle)"]
    assert violations("baseline", {}, s, minor=36) == ["forbidden sysctls (net.ipv4.tcp_slow_start_after_idle)"]
    assert violations("baseline", {}, s) == violations("baseline", {}, s, minor=99) == []
    # check_hostProbesAndhostLifecycle.go: from v1.34
    probe = spec({"startupProbe": {"httpGet": {"host": "localhost", "port": 80}}})
    assert violations("baseline", {}, probe, minor=33) == []
    assert violations("baseline", {}, probe, minor=34) != []


@pytest.mark.parametrize(("value", "minor"), [
    ("v1.0", 0), ("v1.37", 37), ("v1.100", 100), ("latest", None), ("v1.", None), ("v1.01", None), ("v1.-1", None),
    ("v1.\u0661", None),  # an Arabic-Indic one: the library's `^v1\.([0-9]|[1-9][0-9]*)$` is ASCII only
    # ParseVersion's strconv.Atoi fails beyond a 64-bit int: not a version (the label is refused as such)
    ("v1.9223372036854775807", 9223372036854775807), ("v1.9223372036854775808", None),
])
def test_parse_version(value: str, minor: int | None) -> None:
    assert ps.parse_version(value) == minor


@pytest.mark.parametrize(("labels", "want"), [
    # api/helpers.go PolicyToEvaluate with the default privileged:latest, ParseLevel, ParseVersion
    (None, ("privileged", "latest")), ({}, ("privileged", "latest")),
    ({"pod-security.kubernetes.io/enforce": "baseline"}, ("baseline", "latest")),
    ({"pod-security.kubernetes.io/enforce": "strict"}, ("restricted", "latest")),  # unparseable: restricted
    ({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.28"},
     ("baseline", "v1.28")),
    ({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.028"},
     ("baseline", "latest")),  # "must be "latest" or "v1.x"": latest
    ({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v2.1"},
     ("baseline", "latest")),
    ({"pod-security.kubernetes.io/enforce-version": "v1.0"}, ("privileged", "v1.0")),
])
def test_the_namespace_policy(labels: Obj | None, want: tuple[str, str]) -> None:
    assert ps.enforce_policy(labels) == want


def test_levels_and_the_refusal() -> None:
    bad = spec({"securityContext": {"privileged": True}})
    assert violations("privileged", {}, bad) == [] and refusal({}, {}, bad) is None
    assert refusal({"pod-security.kubernetes.io/enforce": "privileged"}, {}, bad) is None
    assert refusal({"pod-security.kubernetes.io/enforce": "baseline"}, {}, bad) == (
        'violates PodSecurity "baseline:latest": privileged (container "c0" must not set '
        "securityContext.privileged=true)")
    # the version label is named in the refusal as written, and chooses the checks
    sysctl = spec({}, pod={"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "4096 87380 16777216"}]})
    assert refusal({"pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/enforce-version": "v1.31"}, {}, sysctl) == (
        'violates PodSecurity "baseline:v1.31": forbidden sysctls (net.ipv4.tcp_rmem)')
    assert refusal({"pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/enforce-version": "v1.32"}, {}, sysctl) is None
    # a level the library cannot parse is enforced as restricted
    assert refusal({"pod-security.kubernetes.io/enforce": "strict"}, {}, spec({"securityContext": OK_C}, pod=OK_POD)) \
        is None
    assert (refusal({"pod-security.kubernetes.io/enforce": "strict"}, {}, bad) or "").startswith(
        'violates PodSecurity "restricted:latest": privileged (container "c0" must not set '
        "securityContext.privileged=true), allowPrivilegeEscalation != false")


def test_every_kind_of_container_is_checked_and_every_setter_named() -> None:
    # visitContainers: init, app and ephemeral containers; the AppArmor detail joins pod, containers and annotations
    # with " and "
    s = spec({}, pod={"appArmorProfile": {"type": "Unconfined"}},
             ephemeralContainers=[{"name": "debug", "image": "busybox",
                                   "securityContext": {"privileged": True, "appArmorProfile": {"type": "Unconfined"}}}])
    assert violations("baseline", {"annotations": {AA + "c0": "unconfined"}}, s) == [
        'forbidden AppArmor profiles (pod and container "debug" and annotation must not set AppArmor profile type to '
        '"Unconfined", "container.apparmor.security.beta.kubernetes.io/c0="unconfined"")',
        'privileged (container "debug" must not set securityContext.privileged=true)']
    # one hostPath volume: the singular
    assert violations("baseline", {}, spec({}, volumes=[{"name": "logs", "hostPath": {"path": "/var/log"}}])) == [
        'hostPath volumes (volume "logs")']
    # a container without capabilities does not stop the check of the next one
    s = spec({"securityContext": {"allowPrivilegeEscalation": False}},
             {"securityContext": {**OK_C, "capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}}, pod=OK_POD)
    assert violations("restricted", {}, s) == [
        'unrestricted capabilities (container "c0" must set securityContext.capabilities.drop=["ALL"]; container '
        '"c1" must not include "SYS_ADMIN" in securityContext.capabilities.add)']


def test_the_seccomp_annotations_before_v1_19() -> None:
    # check_seccompProfile_baseline.go validSeccompAnnotationValue: runtime/default, docker/default, localhost/*
    ok = {"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "docker/default",
                          "container.seccomp.security.alpha.kubernetes.io/c0": "localhost/profile.json",
                          "container.seccomp.security.alpha.kubernetes.io/c1": "runtime/default"}}
    assert violations("baseline", ok, spec({}, {}), minor=18) == []
    bad = {"annotations": {"container.seccomp.security.alpha.kubernetes.io/c0": "",
                           "container.seccomp.security.alpha.kubernetes.io/other": "unconfined"}}
    assert violations("baseline", bad, spec({}), minor=18) == [
        'seccompProfile (forbidden annotation container.seccomp.security.alpha.kubernetes.io/c0="")']


@pytest.mark.parametrize(("labels", "errors"), [
    ({}, []),
    ({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest",
      "pod-security.kubernetes.io/audit": "restricted", "pod-security.kubernetes.io/audit-version": "v1.0",
      "pod-security.kubernetes.io/warn": "privileged", "pod-security.kubernetes.io/warn-version": "v1.35"}, []),
    ({"pod-security.kubernetes.io/warn-version": "v1", "pod-security.kubernetes.io/audit": "Baseline",
      "pod-security.kubernetes.io/enforce-version": "1.30", "pod-security.kubernetes.io/warn": ""},
     [("pod-security.kubernetes.io/enforce-version", "1.30", 'must be "latest" or "v1.x"'),
      ("pod-security.kubernetes.io/audit", "Baseline", "must be one of privileged, baseline, restricted"),
      ("pod-security.kubernetes.io/warn", "", "must be one of privileged, baseline, restricted"),
      ("pod-security.kubernetes.io/warn-version", "v1", 'must be "latest" or "v1.x"')]),
])
def test_label_errors(labels: Obj, errors: list[tuple[str, str, str]]) -> None:
    # api/helpers.go PolicyToEvaluate: the labels in the order it reads them, ParseLevel and ParseVersion's words
    assert ps.label_errors(labels) == errors


def test_go_quote() -> None:
    # strconv.Quote: the named escapes, \x for other ASCII controls, \u and \U for non-printable runes
    assert ps.go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert ps.go_quote("\a\b\f\n\r\t\v") == '"\\a\\b\\f\\n\\r\\t\\v"'
    assert ps.go_quote("\x00\x1f\x7f\x80") == '"\\x00\\x1f\\x7f\\u0080"'
    assert ps.go_quote("é\u200b\u00a0 ") == '"é\\u200b\\u00a0 "'
    assert ps.go_quote("\U0001f600\U000e0001") == '"\U0001f600\\U000e0001"'
