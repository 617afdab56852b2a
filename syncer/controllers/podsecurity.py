"""Pod Security Standards as `k8s.io/pod-security-admission` evaluates them (pure): for vcluster's
`policies.podSecurityStandard` check of a virtual pod before it is synced (`validate_pod_security.go`), and for
the test API server's PodSecurity admission of a namespace labelled `pod-security.kubernetes.io/enforce`.

Every check of the library (kubernetes/pod-security-admission, `policy/check_*.go` at commit 8f84a87c7f61) with
every version of it, read from the pod's metadata and spec as the library reads them: baseline (AppArmor profile
fields and `container.apparmor.security.beta.kubernetes.io/*` annotations, capabilities, host namespaces, hostPath
volumes, host ports, probe and lifecycle hosts, privileged, /proc mount, SELinux options, seccomp (the alpha
annotations before v1.19, the fields from v1.19), sysctls, Windows host process) and restricted (baseline without
the checks it overrides, plus allowPrivilegeEscalation, capabilities, /proc mount, volume types, runAsNonRoot,
runAsUser, seccomp). `latest` is the newest version any check has (v1.37); a newer `v1.x` is evaluated as that.

The words are the library's: each failing check gives a reason and a detail, joined as
`<reason> (<detail>), ...` (`AggregateCheckResult.ForbiddenDetail`), the baseline checks first, then the
restricted ones, each group in the order of their IDs (`policy/registry.go` `populate`). The admission plugin
refuses with `violates PodSecurity "<level>:<version>": ...` (`admission/admission.go` `EvaluatePod`). Not
modelled: the `warn` and `audit` modes (their labels are only parsed, for `label_errors`) and exemptions (users,
namespaces, runtime classes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
Result = tuple[str, str]  # (forbidden reason, forbidden detail)
CheckFn = Callable[[Obj, Obj], "Result | None"]  # (pod metadata, pod spec) -> None when allowed

ENFORCE = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
LEVELS = ("privileged", "baseline", "restricted")
APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"


# --- helpers (policy/helpers.go, policy/visitor.go) ---

def _plural(one: str, many: str, n: int) -> str:
    """`pluralize`."""
    return one if n == 1 else many


def _join_quote(items: list[str]) -> str:
    """`joinQuote`: each item in double quotes (not escaped), joined with ", "; "" for none."""
    return '"' + '", "'.join(items) + '"' if items else ""


def go_quote(s: str) -> str:
    """Go's `%q` of a string (`strconv.Quote`): double quotes, `\\` and `"` escaped, control and other
    non-printable characters as `\\n`-style, `\\x..`, `\\u....` or `\\U........` escapes."""
    out = ['"']
    named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
             "\\": "\\\\", '"': '\\"'}
    for ch in s:
        if ch in named:
            out.append(named[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _obj(parent: Any, key: str) -> Obj | None:
    """`parent.key` when it is an object (a non-nil pointer in the Go types), else None."""
    value = parent.get(key) if isinstance(parent, dict) else None
    return value if isinstance(value, dict) else None


def _sc(obj: Obj) -> Obj | None:
    return _obj(obj, "securityContext")


def _str(obj: Obj | None, key: str) -> str:
    value = obj.get(key) if obj is not None else None
    return value if isinstance(value, str) else ""


def _containers(spec: Obj) -> Iterator[Obj]:
    """`visitContainers`: init, app and ephemeral containers, in that order."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        items = spec.get(field)
        for c in items if isinstance(items, list) else []:
            if isinstance(c, dict):
                yield c


def _name(c: Obj) -> str:
    return _str(c, "name")


def _who(names: list[str]) -> str:
    """`container "a"` / `containers "a", "b"`."""
    return f'{_plural("container", "containers", len(names))} {_join_quote(names)}'


def _windows(spec: Obj) -> bool:
    return _str(_obj(spec, "os"), "name") == "windows"


def _user_namespace(spec: Obj) -> bool:
    """`relaxPolicyForUserNamespacePod`: `hostUsers: false`."""
    return spec.get("hostUsers") is False


def _annotations(meta: Obj) -> dict[str, str]:
    ann = meta.get("annotations")
    return {str(k): v if isinstance(v, str) else "" for k, v in ann.items()} if isinstance(ann, dict) else {}


# --- baseline checks ---

_APPARMOR_TYPES_OK = ("RuntimeDefault", "Localhost")


def app_armor_profile(meta: Obj, spec: Obj) -> Result | None:
    """`appArmorProfile_1_0` (check_appArmorProfile.go): profile types other than RuntimeDefault and Localhost,
    and annotations other than `runtime/default`, `localhost/*` or empty."""
    setters: list[str] = []
    values: set[str] = set()
    pod_profile = _obj(_sc(spec), "appArmorProfile")
    if pod_profile is not None and _str(pod_profile, "type") not in _APPARMOR_TYPES_OK:
        setters.append("pod")
        values.add(_str(pod_profile, "type"))
    bad = []
    for c in _containers(spec):
        profile = _obj(_sc(c), "appArmorProfile")
        if profile is not None and _str(profile, "type") not in _APPARMOR_TYPES_OK:
            bad.append(_name(c))
            values.add(_str(profile, "type"))
    if bad:
        setters.append(_who(bad))
    annotations = sorted(f"{k}={go_quote(v)}" for k, v in _annotations(meta).items()
                         if k.startswith(APPARMOR_ANNOTATION_PREFIX)
                         and not (v == "" or v == "runtime/default" or v.startswith("localhost/")))
    listed = sorted(values) + annotations
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    return (_plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(listed)),
            f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(listed)}")


_CAPABILITIES_DEFAULT = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline(meta: Obj, spec: Obj) -> Result | None:
    """`capabilitiesBaseline_1_0`: capabilities added beyond the default set."""
    bad: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        added = [str(x) for x in (_obj(_sc(c), "capabilities") or {}).get("add") or []]
        extra = [x for x in added if x not in _CAPABILITIES_DEFAULT]
        if extra:
            bad.append(_name(c))
            caps.update(extra)
    if not bad:
        return None
    return ("non-default capabilities",
            f"{_who(bad)} must not include {_join_quote(sorted(caps))} in securityContext.capabilities.add")


def host_namespaces(meta: Obj, spec: Obj) -> Result | None:
    """`hostNamespaces_1_0`: hostNetwork, hostPID, hostIPC."""
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k) is True]
    return ("host namespaces", ", ".join(used)) if used else None


def _volumes(spec: Obj) -> Iterator[Obj]:
    items = spec.get("volumes")
    for v in items if isinstance(items, list) else []:
        if isinstance(v, dict):
            yield v


def host_path_volumes(meta: Obj, spec: Obj) -> Result | None:
    """`hostPathVolumes_1_0`."""
    vols = [_str(v, "name") for v in _volumes(spec) if v.get("hostPath") is not None]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(vols))} {_join_quote(vols)}") if vols else None


def host_ports(meta: Obj, spec: Obj) -> Result | None:
    """`hostPorts_1_0`: any hostPort other than 0."""
    bad: list[str] = []
    ports: set[str] = set()
    for c in _containers(spec):
        used = [str(p.get("hostPort")) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(_name(c))
            ports.update(used)
    if not bad:
        return None
    return ("hostPort", f"{_who(bad)} {_plural('uses', 'use', len(bad))} "
                        f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


def _handler_hosts(handler: Obj | None) -> list[str]:
    """`getForbiddenHostProbes` / `getForbiddenHostLifecycle`: httpGet.host and tcpSocket.host when set."""
    return [h for h in (_str(_obj(handler, "httpGet"), "host"), _str(_obj(handler, "tcpSocket"), "host")) if h]


def host_probes_and_lifecycle(meta: Obj, spec: Obj) -> Result | None:
    """`hostProbesAndHostLifecycleV1Dot34`: a `host` in a probe's or lifecycle handler's httpGet or tcpSocket."""
    bad: set[str] = set()
    hosts: set[str] = set()
    for c in _containers(spec):
        lifecycle = _obj(c, "lifecycle")
        handlers = [_obj(c, p) for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [_obj(lifecycle, h) for h in ("postStart", "preStop")]
        for handler in handlers:
            found = _handler_hosts(handler)
            if found:
                bad.add(_name(c))
                hosts.update(found)
    if not bad:
        return None
    return ("probe or lifecycle host",
            f"{_who(sorted(bad))} {_plural('uses', 'use', len(bad))} "
            f"{_plural('probe or lifecycle host', 'probe or lifecycle hosts', len(hosts))} "
            f"{_join_quote(sorted(hosts))}")


def privileged(meta: Obj, spec: Obj) -> Result | None:
    """`privileged_1_0`."""
    bad = [_name(c) for c in _containers(spec) if (_sc(c) or {}).get("privileged") is True]
    return ("privileged", f"{_who(bad)} must not set securityContext.privileged=true") if bad else None


def proc_mount(meta: Obj, spec: Obj) -> Result | None:
    """`procMount_1_0`: a procMount other than Default."""
    bad: list[str] = []
    kinds: set[str] = set()
    for c in _containers(spec):
        value = (_sc(c) or {}).get("procMount")
        if value is not None and value != "Default":
            bad.append(_name(c))
            kinds.add(str(value))
    if not bad:
        return None
    return ("procMount", f"{_who(bad)} must not set securityContext.procMount to {_join_quote(sorted(kinds))}")


def proc_mount_1_35(meta: Obj, spec: Obj) -> Result | None:
    """`procMount1_35baseline`: any procMount in a user namespace (`hostUsers: false`)."""
    return None if _user_namespace(spec) else proc_mount(meta, spec)


_SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
_SELINUX_TYPES_1_31 = _SELINUX_TYPES_1_0 | {"container_engine_t"}


def _se_linux_options(spec: Obj, allowed: frozenset[str]) -> Result | None:
    """`seLinuxOptions`: a type not allowed, or a user or role set."""
    setters: list[str] = []
    types: set[str] = set()
    set_user = set_role = False

    def valid(opts: Obj) -> bool:
        nonlocal set_user, set_role
        ok = True
        if _str(opts, "type") not in allowed:
            ok = False
            types.add(_str(opts, "type"))
        if _str(opts, "user"):
            ok = False
            set_user = True
        if _str(opts, "role"):
            ok = False
            set_role = True
        return ok

    pod_opts = _obj(_sc(spec), "seLinuxOptions")
    if pod_opts is not None and not valid(pod_opts):
        setters.append("pod")
    bad = [_name(c) for c in _containers(spec)
           if (opts := _obj(_sc(c), "seLinuxOptions")) is not None and not valid(opts)]
    if bad:
        setters.append(_who(bad))
    if not setters:
        return None
    data = [f"{_plural('type', 'types', len(types))} {_join_quote(sorted(types))}"] if types else []
    data += ["user may not be set"] if set_user else []
    data += ["role may not be set"] if set_role else []
    return ("seLinuxOptions",
            f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: {'; '.join(data)}")


def se_linux_options_1_0(meta: Obj, spec: Obj) -> Result | None:
    """`seLinuxOptions1_0`."""
    return _se_linux_options(spec, _SELINUX_TYPES_1_0)


def se_linux_options_1_31(meta: Obj, spec: Obj) -> Result | None:
    """`seLinuxOptions1_31`: container_engine_t allowed too."""
    return _se_linux_options(spec, _SELINUX_TYPES_1_31)


def _seccomp_annotation_ok(v: str) -> bool:
    return v in ("runtime/default", "docker/default") or v.startswith("localhost/")


def seccomp_profile_baseline_1_0(meta: Obj, spec: Obj) -> Result | None:
    """`seccompProfileBaseline_1_0`: the alpha seccomp annotations of the pod and its containers."""
    annotations = _annotations(meta)
    keys = [SECCOMP_POD_ANNOTATION] + [SECCOMP_CONTAINER_ANNOTATION_PREFIX + _name(c) for c in _containers(spec)]
    bad = sorted({f"{k}={go_quote(annotations[k])}" for k in keys
                  if k in annotations and not _seccomp_annotation_ok(annotations[k])})
    if not bad:
        return None
    return "seccompProfile", f"forbidden {_plural('annotation', 'annotations', len(bad))} {', '.join(bad)}"


_SECCOMP_TYPES_OK = ("RuntimeDefault", "Localhost")


def _seccomp(spec: Obj, required: bool) -> Result | None:
    """`seccompProfileBaseline_1_19` (required=False) and `seccompProfileRestricted_1_19` (required=True)."""
    setters: list[str] = []
    values: set[str] = set()
    pod_set = False
    pod_profile = _obj(_sc(spec), "seccompProfile")
    if pod_profile is not None:
        if _str(pod_profile, "type") not in _SECCOMP_TYPES_OK:
            setters.append("pod")
            values.add(_str(pod_profile, "type"))
        else:
            pod_set = True
    bad: list[str] = []
    unset: list[str] = []
    for c in _containers(spec):
        profile = _obj(_sc(c), "seccompProfile")
        if profile is not None:
            if _str(profile, "type") not in _SECCOMP_TYPES_OK:
                bad.append(_name(c))
                values.add(_str(profile, "type"))
        elif not pod_set:
            unset.append(_name(c))
    if bad:
        setters.append(_who(bad))
    if setters:
        return ("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type to "
                                  f"{_join_quote(sorted(values))}")
    if required and unset:
        return ("seccompProfile",
                f'pod or {_who(unset)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return None


def seccomp_profile_baseline_1_19(meta: Obj, spec: Obj) -> Result | None:
    """`seccompProfileBaseline_1_19`: a seccompProfile type other than RuntimeDefault and Localhost."""
    return _seccomp(spec, required=False)


_SYSCTLS_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29 = _SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_SYSCTLS_1_32 = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
_SYSCTLS_1_37 = _SYSCTLS_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def _sysctls(spec: Obj, allowed: frozenset[str]) -> Result | None:
    """`sysctls`: pod sysctls outside the safe set, in the pod's order."""
    items = (_sc(spec) or {}).get("sysctls")
    bad = [_str(s, "name") for s in items if isinstance(s, dict) and _str(s, "name") not in allowed] \
        if isinstance(items, list) else []
    return ("forbidden sysctls", ", ".join(bad)) if bad else None


def sysctls_1_0(meta: Obj, spec: Obj) -> Result | None:
    """`sysctlsV1Dot0`."""
    return _sysctls(spec, _SYSCTLS_1_0)


def sysctls_1_27(meta: Obj, spec: Obj) -> Result | None:
    """`sysctlsV1Dot27`: net.ipv4.ip_local_reserved_ports safe too."""
    return _sysctls(spec, _SYSCTLS_1_27)


def sysctls_1_29(meta: Obj, spec: Obj) -> Result | None:
    """`sysctlsV1Dot29`: the tcp_keepalive ones and tcp_fin_timeout safe too."""
    return _sysctls(spec, _SYSCTLS_1_29)


def sysctls_1_32(meta: Obj, spec: Obj) -> Result | None:
    """`sysctlsV1Dot32`: tcp_rmem and tcp_wmem safe too."""
    return _sysctls(spec, _SYSCTLS_1_32)


def sysctls_1_37(meta: Obj, spec: Obj) -> Result | None:
    """`sysctlsV1Dot37`: tcp_slow_start_after_idle and tcp_notsent_lowat safe too."""
    return _sysctls(spec, _SYSCTLS_1_37)


def windows_host_process(meta: Obj, spec: Obj) -> Result | None:
    """`windowsHostProcess_1_0`: windowsOptions.hostProcess=true on the pod or a container."""
    def host_process(obj: Obj) -> bool:
        return (_obj(_sc(obj), "windowsOptions") or {}).get("hostProcess") is True
    setters = ["pod"] if host_process(spec) else []
    bad = [_name(c) for c in _containers(spec) if host_process(c)]
    if bad:
        setters.append(_who(bad))
    if not setters:
        return None
    return "hostProcess", f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true"


# --- restricted checks ---

def allow_privilege_escalation(meta: Obj, spec: Obj) -> Result | None:
    """`allowPrivilegeEscalation_1_8`: every container must set allowPrivilegeEscalation=false."""
    bad = [_name(c) for c in _containers(spec) if (_sc(c) or {}).get("allowPrivilegeEscalation") is not False]
    return ("allowPrivilegeEscalation != false",
            f"{_who(bad)} must set securityContext.allowPrivilegeEscalation=false") if bad else None


def capabilities_restricted(meta: Obj, spec: Obj) -> Result | None:
    """`capabilitiesRestricted_1_22`: drop ALL, add nothing but NET_BIND_SERVICE."""
    no_drop: list[str] = []
    adding: list[str] = []
    caps: set[str] = set()
    for c in _containers(spec):
        capabilities = _obj(_sc(c), "capabilities")
        if capabilities is None:
            no_drop.append(_name(c))
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            no_drop.append(_name(c))
        extra = [str(x) for x in capabilities.get("add") or [] if x != "NET_BIND_SERVICE"]
        if extra:
            adding.append(_name(c))
            caps.update(extra)
    details = []
    if no_drop:
        details.append(f'{_who(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_who(adding)} must not include {_join_quote(sorted(caps))} in "
                       "securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_VOLUMES_OK = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
               "projected", "secret")
_VOLUMES_RESTRICTED = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs",
                       "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume",
                       "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def restricted_volumes(meta: Obj, spec: Obj) -> Result | None:
    """`restrictedVolumes_1_0`: only configMap, csi, downwardAPI, emptyDir, ephemeral, image,
    persistentVolumeClaim, projected and secret volumes."""
    bad: list[str] = []
    kinds: set[str] = set()
    for v in _volumes(spec):
        if any(v.get(k) is not None for k in _VOLUMES_OK):
            continue
        bad.append(_str(v, "name"))
        kinds.add(next((k for k in _VOLUMES_RESTRICTED if v.get(k) is not None), "unknown"))
    if not bad:
        return None
    return ("restricted volume types",
            f"{_plural('volume', 'volumes', len(bad))} {_join_quote(bad)} {_plural('uses', 'use', len(bad))} "
            f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} "
            f"{_join_quote(sorted(kinds))}")


def run_as_non_root(meta: Obj, spec: Obj) -> Result | None:
    """`runAsNonRoot1_0`: runAsNonRoot=true on the pod or on every container, false nowhere."""
    setters: list[str] = []
    pod_value = (_sc(spec) or {}).get("runAsNonRoot")
    if pod_value is False:
        setters.append("pod")
    bad: list[str] = []
    unset: list[str] = []
    for c in _containers(spec):
        value = (_sc(c) or {}).get("runAsNonRoot")
        if value is not None:
            if value is False:
                bad.append(_name(c))
        elif pod_value is not True:
            unset.append(_name(c))
    if bad:
        setters.append(_who(bad))
    if setters:
        return "runAsNonRoot != true", f"{' and '.join(setters)} must not set securityContext.runAsNonRoot=false"
    if unset:
        return "runAsNonRoot != true", f"pod or {_who(unset)} must set securityContext.runAsNonRoot=true"
    return None


def run_as_non_root_1_35(meta: Obj, spec: Obj) -> Result | None:
    """`runAsNonRoot1_35`: anything in a user namespace."""
    return None if _user_namespace(spec) else run_as_non_root(meta, spec)


def run_as_user(meta: Obj, spec: Obj) -> Result | None:
    """`runAsUser1_23`: runAsUser=0 on the pod or a container."""
    def root(obj: Obj) -> bool:
        value = (_sc(obj) or {}).get("runAsUser")
        return value == 0 and not isinstance(value, bool)
    setters = ["pod"] if root(spec) else []
    bad = [_name(c) for c in _containers(spec) if root(c)]
    if bad:
        setters.append(_who(bad))
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def run_as_user_1_35(meta: Obj, spec: Obj) -> Result | None:
    """`runAsUser1_35`: anything in a user namespace."""
    return None if _user_namespace(spec) else run_as_user(meta, spec)


def seccomp_profile_restricted(meta: Obj, spec: Obj) -> Result | None:
    """`seccompProfileRestricted_1_19`: RuntimeDefault or Localhost on the pod or on every container."""
    return _seccomp(spec, required=True)


def allow_privilege_escalation_1_25(meta: Obj, spec: Obj) -> Result | None:
    """`allowPrivilegeEscalation_1_25`: a pod with `os.name: windows` passes."""
    return None if _windows(spec) else allow_privilege_escalation(meta, spec)


def capabilities_restricted_1_25(meta: Obj, spec: Obj) -> Result | None:
    """`capabilitiesRestricted_1_25`: a pod with `os.name: windows` passes."""
    return None if _windows(spec) else capabilities_restricted(meta, spec)


def seccomp_profile_restricted_1_25(meta: Obj, spec: Obj) -> Result | None:
    """`seccompProfileRestricted_1_25`: a pod with `os.name: windows` passes."""
    return None if _windows(spec) else seccomp_profile_restricted(meta, spec)


# --- the registry (policy/registry.go) ---

@dataclass(frozen=True)
class Version:
    """One revision of a check (`VersionedCheck`): it applies from policy version v1.`minimum` on, and at
    restricted it replaces the baseline checks named in `overrides`."""

    minimum: int
    check: CheckFn
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Check:
    """A check of the library (`Check`): its ID, its level and its revisions, oldest first."""

    id: str
    level: str
    versions: tuple[Version, ...]


CHECKS: tuple[Check, ...] = (
    Check("appArmorProfile", "baseline", (Version(0, app_armor_profile),)),
    Check("capabilities_baseline", "baseline", (Version(0, capabilities_baseline),)),
    Check("hostNamespaces", "baseline", (Version(0, host_namespaces),)),
    Check("hostPathVolumes", "baseline", (Version(0, host_path_volumes),)),
    Check("hostPorts", "baseline", (Version(0, host_ports),)),
    Check("hostProbesAndHostLifecycle", "baseline", (Version(34, host_probes_and_lifecycle),)),
    Check("privileged", "baseline", (Version(0, privileged),)),
    Check("procMount", "baseline", (Version(0, proc_mount), Version(35, proc_mount_1_35))),
    Check("seLinuxOptions", "baseline", (Version(0, se_linux_options_1_0), Version(31, se_linux_options_1_31))),
    Check("seccompProfile_baseline", "baseline", (Version(0, seccomp_profile_baseline_1_0),
                                                  Version(19, seccomp_profile_baseline_1_19))),
    Check("sysctls", "baseline", (Version(0, sysctls_1_0), Version(27, sysctls_1_27), Version(29, sysctls_1_29),
                                  Version(32, sysctls_1_32), Version(37, sysctls_1_37))),
    Check("windowsHostProcess", "baseline", (Version(0, windows_host_process),)),
    Check("allowPrivilegeEscalation", "restricted", (Version(8, allow_privilege_escalation),
                                                     Version(25, allow_privilege_escalation_1_25))),
    Check("capabilities_restricted", "restricted", (
        Version(22, capabilities_restricted, ("capabilities_baseline",)),
        Version(25, capabilities_restricted_1_25, ("capabilities_baseline",)))),
    Check("procMount_restricted", "restricted", (Version(35, proc_mount, ("procMount",)),)),
    Check("restrictedVolumes", "restricted", (Version(0, restricted_volumes, ("hostPathVolumes",)),)),
    Check("runAsNonRoot", "restricted", (Version(0, run_as_non_root), Version(35, run_as_non_root_1_35))),
    Check("runAsUser", "restricted", (Version(23, run_as_user), Version(35, run_as_user_1_35))),
    Check("seccompProfile_restricted", "restricted", (
        Version(19, seccomp_profile_restricted, ("seccompProfile_baseline",)),
        Version(25, seccomp_profile_restricted_1_25, ("seccompProfile_baseline",)))),
)
# the newest policy version any check has a revision for: what `latest` (and any newer v1.x) evaluates
LATEST_MINOR = max(v.minimum for c in CHECKS for v in c.versions)
# what vcluster's `policies.podSecurityStandard` evaluates as `latest`: vcluster vendors k8s.io/pod-security-admission
# v0.36.0 (its go.mod), whose newest revisions are policy v1.35's, so `latest` there is v1.36; the v1.37 revision of
# `sysctls` (two more allowed sysctls) exists only in the library's unreleased v0.37 and in no released kubelet's
# safe list, so judging at v1.37 would let pods through that vcluster and every released Kubernetes refuse
VCLUSTER_MINOR = 36


def _at(check: Check, minor: int) -> Version | None:
    """The revision of `check` in force at policy version v1.`minor` (`inflateVersions`), or None before it."""
    found = None
    for v in check.versions:
        if v.minimum <= minor:
            found = v
    return found


def checks_for(level: str, minor: int | None = None, checks: tuple[Check, ...] = CHECKS) -> list[tuple[str, CheckFn]]:
    """The (check ID, check) pairs of `checks` (the library's by default) evaluated at `level` ("baseline" or
    "restricted"; none for any other) and policy version v1.`minor` (None: latest, the newest version of any of
    `checks`; a newer minor is evaluated as that), in the library's order: baseline IDs sorted, then restricted
    IDs sorted; restricted includes the baseline checks its revisions in force do not override (`populate`,
    `EvaluatePod`)."""
    if level not in ("baseline", "restricted") or not checks:
        return []
    newest = max(v.minimum for c in checks for v in c.versions)
    minor = newest if minor is None else min(minor, newest)
    active = [(c, v) for c in checks if (v := _at(c, minor)) is not None]
    restricted = [(c, v) for c, v in active if c.level == "restricted"] if level == "restricted" else []
    overridden = {o for _, v in restricted for o in v.overrides}
    baseline = [(c, v) for c, v in active if c.level == "baseline" and c.id not in overridden]
    return [(c.id, v.check) for c, v in sorted(baseline, key=lambda cv: cv[0].id)
            + sorted(restricted, key=lambda cv: cv[0].id)]


def evaluate(level: str, metadata: Obj, spec: Obj, minor: int | None = None) -> list[Result]:
    """The (reason, detail) of every check the pod (its `metadata` and `spec`) fails at `level` and policy version
    v1.`minor` (None: latest), in the library's order (`EvaluatePod` then `AggregateCheckResults`); empty when
    allowed. `privileged` and unknown levels allow everything."""
    out = []
    for _, check in checks_for(level, minor):
        result = check(metadata, spec)
        if result is not None:
            out.append(result)
    return out


def violations(level: str, metadata: Obj, spec: Obj, minor: int | None = None) -> list[str]:
    """`<reason> (<detail>)` (or just the reason when the detail is empty) of every failed check, in order
    (`AggregateCheckResult.ForbiddenDetail`, before joining with ", ")."""
    return [f"{reason} ({detail})" if detail else reason for reason, detail in evaluate(level, metadata, spec, minor)]


def parse_version(value: str) -> int | None:
    """`ParseVersion`: `v1.<minor>` as the minor number; `latest`, and anything it cannot parse (its `strconv.Atoi`
    fails beyond a 64-bit int), as None (latest)."""
    if value.startswith("v1.") and value[3:].isdigit() and value[3:].isascii() \
            and (value[3:] == "0" or not value[3:].startswith("0")) and int(value[3:]) < 2 ** 63:
        return int(value[3:])
    return None


_MODES = ("enforce", "audit", "warn")


def label_errors(namespace_labels: Obj | None) -> list[tuple[str, str, str]]:
    """The (label, value, why) of every Pod Security label of a namespace the library cannot parse
    (`PolicyToEvaluate`, `ParseLevel`, `ParseVersion`), in its order: enforce, enforce-version, audit,
    audit-version, warn, warn-version."""
    labels = namespace_labels or {}
    out = []
    for mode in _MODES:
        key = f"pod-security.kubernetes.io/{mode}"
        if key in labels and labels[key] not in LEVELS:
            out.append((key, str(labels[key]), "must be one of " + ", ".join(LEVELS)))
        key += "-version"
        if key in labels and labels[key] != "latest" and parse_version(str(labels[key])) is None:
            out.append((key, str(labels[key]), 'must be "latest" or "v1.x"'))
    return out


def enforce_policy(namespace_labels: Obj | None) -> tuple[str, str]:
    """The enforce level and version of a namespace (`PolicyToEvaluate` with the default privileged:latest):
    `pod-security.kubernetes.io/enforce` (a value that is not a level is enforced as restricted) and
    `.../enforce-version` (one that is not `latest` or `v1.<minor>` as latest). Returns (level, version text)."""
    labels = namespace_labels or {}
    level = labels.get(ENFORCE, "privileged")
    if level not in LEVELS:
        level = "restricted"
    version = labels.get(ENFORCE_VERSION, "latest")
    minor = parse_version(str(version))
    return level, "latest" if minor is None else f"v1.{minor}"


def refusal(namespace_labels: Obj | None, metadata: Obj, spec: Obj) -> str | None:
    """The PodSecurity refusal of a pod (its `metadata` and `spec`) in a namespace with `namespace_labels`, or None
    when admitted: `violates PodSecurity "<level>:<version>": <reason> (<detail>), ...` (`EvaluatePod`)."""
    level, version = enforce_policy(namespace_labels)
    found = violations(level, metadata, spec, parse_version(version))
    return f'violates PodSecurity "{level}:{version}": {", ".join(found)}' if found else None
