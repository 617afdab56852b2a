"""Pod Security Standards as `k8s.io/pod-security-admission` evaluates them (pure): for vcluster's
`policies.podSecurityStandard` check of a virtual pod before it is synced (`validate_pod_security.go`), and for
the test API server's PodSecurity admission of a namespace labelled `pod-security.kubernetes.io/enforce`.
Levels `baseline` and `restricted` (`privileged`, or no level, allows everything).

The checks and their words are the library's (`policy/check_*.go`): each failing check gives a reason and a detail,
and the refusal is `violates PodSecurity "<level>:latest": <reason> (<detail>), ...`, the checks in the order of
their IDs. Modelled: host namespaces, privileged, non-default capabilities, hostPath volumes and host ports
(baseline); and for restricted also restricted volume types (which replaces the hostPath check),
allowPrivilegeEscalation, unrestricted capabilities (replaces the baseline one), runAsNonRoot, runAsUser=0 and
seccompProfile. Not modelled: AppArmor, SELinux, /proc mount, sysctls, seccomp at baseline, Windows host process,
host probes; `warn`/`audit` modes and exemptions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Obj = dict[str, Any]
ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("privileged", "baseline", "restricted")
_BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
_RESTRICTED_VOLUMES_OK = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                          "projected", "secret")
_VOLUME_TYPES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
                 "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte",
                 "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")
Check = Callable[[Obj], "tuple[str, str] | None"]


def _plural(one: str, many: str, n: int) -> str:
    return one if n == 1 else many


def _quote(items: list[str]) -> str:
    """The library's `joinQuote`: each item in Go `%q` quotes, joined with ", "."""
    return ", ".join('"' + i.replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items)


def _containers(spec: Obj) -> Iterator[Obj]:
    """`visitContainers`: init, app and ephemeral containers."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            if isinstance(c, dict):
                yield c


def _sc(obj: Obj) -> Obj:
    sc = obj.get("securityContext")
    return sc if isinstance(sc, dict) else {}


def _names(cs: list[Obj]) -> str:
    return f'{_plural("container", "containers", len(cs))} {_quote([str(c.get("name")) for c in cs])}'


def host_namespaces(spec: Obj) -> tuple[str, str] | None:
    used = [f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    return ("host namespaces", ", ".join(used)) if used else None


def privileged(spec: Obj) -> tuple[str, str] | None:
    bad = [c for c in _containers(spec) if _sc(c).get("privileged") is True]
    return ("privileged", f"{_names(bad)} must not set securityContext.privileged=true") if bad else None


def capabilities_baseline(spec: Obj) -> tuple[str, str] | None:
    bad, caps = [], set()
    for c in _containers(spec):
        added = [str(x) for x in (_sc(c).get("capabilities") or {}).get("add") or []]
        extra = [x for x in added if x not in _BASELINE_CAPABILITIES]
        if extra:
            bad.append(c)
            caps.update(extra)
    if not bad:
        return None
    return ("non-default capabilities",
            f"{_names(bad)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add")


def host_path_volumes(spec: Obj) -> tuple[str, str] | None:
    vols = [str(v.get("name")) for v in spec.get("volumes") or [] if isinstance(v, dict) and v.get("hostPath")]
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(vols))} {_quote(vols)}") if vols else None


def host_ports(spec: Obj) -> tuple[str, str] | None:
    bad: list[Obj] = []
    ports: set[str] = set()
    for c in _containers(spec):
        used = [int(p["hostPort"]) for p in c.get("ports") or [] if isinstance(p, dict) and p.get("hostPort")]
        if used:
            bad.append(c)
            ports.update(str(p) for p in used)
    if not bad:
        return None
    return ("hostPort", f"{_names(bad)} {_plural('uses', 'use', len(bad))} "
                        f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}")


def restricted_volumes(spec: Obj) -> tuple[str, str] | None:
    bad, kinds = [], set()
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict) or any(v.get(k) is not None for k in _RESTRICTED_VOLUMES_OK):
            continue
        bad.append(str(v.get("name")))
        kinds.add(next((k for k in _VOLUME_TYPES if v.get(k) is not None), "unknown"))
    if not bad:
        return None
    return ("restricted volume types",
            f"{_plural('volume', 'volumes', len(bad))} {_quote(bad)} {_plural('uses', 'use', len(bad))} "
            f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} {_quote(sorted(kinds))}")


def allow_privilege_escalation(spec: Obj) -> tuple[str, str] | None:
    bad = [c for c in _containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return ("allowPrivilegeEscalation != false",
            f"{_names(bad)} must set securityContext.allowPrivilegeEscalation=false")


def capabilities_restricted(spec: Obj) -> tuple[str, str] | None:
    no_drop, adding, caps = [], [], set()
    for c in _containers(spec):
        capabilities = _sc(c).get("capabilities")
        if not isinstance(capabilities, dict):
            no_drop.append(c)
            continue
        if "ALL" not in (capabilities.get("drop") or []):
            no_drop.append(c)
        extra = [str(x) for x in capabilities.get("add") or [] if x != "NET_BIND_SERVICE"]
        if extra:
            adding.append(c)
            caps.update(extra)
    details = []
    if no_drop:
        details.append(f'{_names(no_drop)} must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{_names(adding)} must not include {_quote(sorted(caps))} in securityContext.capabilities.add")
    return ("unrestricted capabilities", "; ".join(details)) if details else None


def _pod_or_containers(spec: Obj, field: str, good: Callable[[Any], bool], reason: str, explicit: str,
                       implicit: str) -> tuple[str, str] | None:
    """The shape of runAsNonRoot and seccompProfile: a bad pod or container value, else containers left unset
    without a good pod-level value."""
    setters, values = [], set()
    pod_value = _sc(spec).get(field)
    pod_ok = False
    if pod_value is not None:
        if good(pod_value):
            pod_ok = True
        else:
            setters.append("pod")
            values.add(str(pod_value.get("type") if isinstance(pod_value, dict) else pod_value))
    bad, unset = [], []
    for c in _containers(spec):
        value = _sc(c).get(field)
        if value is None:
            if not pod_ok:
                unset.append(c)
        elif not good(value):
            bad.append(c)
            values.add(str(value.get("type") if isinstance(value, dict) else value))
    if bad:
        setters.append(_names(bad))
    if setters:
        return reason, explicit.format(who=" and ".join(setters), values=_quote(sorted(values)))
    if unset:
        return reason, implicit.format(who=_names(unset))
    return None


def run_as_non_root(spec: Obj) -> tuple[str, str] | None:
    return _pod_or_containers(spec, "runAsNonRoot", lambda v: v is True, "runAsNonRoot != true",
                              "{who} must not set securityContext.runAsNonRoot=false",
                              "pod or {who} must set securityContext.runAsNonRoot=true")


def run_as_user(spec: Obj) -> tuple[str, str] | None:
    setters = ["pod"] if _sc(spec).get("runAsUser") == 0 else []
    bad = [c for c in _containers(spec) if _sc(c).get("runAsUser") == 0]
    if bad:
        setters.append(_names(bad))
    return ("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def seccomp_profile(spec: Obj) -> tuple[str, str] | None:
    return _pod_or_containers(
        spec, "seccompProfile", lambda v: isinstance(v, dict) and v.get("type") in ("RuntimeDefault", "Localhost"),
        "seccompProfile", "{who} must not set securityContext.seccompProfile.type to {values}",
        'pod or {who} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')


# by check ID, the order the library evaluates and reports them in
BASELINE: tuple[tuple[str, Check], ...] = (
    ("capabilities_baseline", capabilities_baseline), ("hostNamespaces", host_namespaces),
    ("hostPathVolumes", host_path_volumes), ("hostPorts", host_ports), ("privileged", privileged))
RESTRICTED: tuple[tuple[str, Check], ...] = (
    ("allowPrivilegeEscalation", allow_privilege_escalation), ("capabilities_restricted", capabilities_restricted),
    ("runAsNonRoot", run_as_non_root), ("runAsUser", run_as_user), ("restrictedVolumes", restricted_volumes),
    ("seccompProfile_restricted", seccomp_profile))
_OVERRIDDEN = {"capabilities_baseline", "hostPathVolumes"}  # by capabilities_restricted and restrictedVolumes


def violations(level: str, spec: Obj) -> list[str]:
    """`<reason> (<detail>)` of every check `spec` fails at `level`, in check-ID order (empty: allowed)."""
    if level not in ("baseline", "restricted"):
        return []
    checks = list(BASELINE)
    if level == "restricted":
        checks = [c for c in checks if c[0] not in _OVERRIDDEN] + list(RESTRICTED)
    out = []
    for _, check in sorted(checks, key=lambda c: c[0]):
        result = check(spec)
        if result is not None:
            out.append(f"{result[0]} ({result[1]})" if result[1] else result[0])
    return out


def refusal(namespace_labels: Obj | None, spec: Obj) -> str | None:
    """The refusal of a pod with `spec` in a namespace with `namespace_labels`, or None when admitted: `violates
    PodSecurity "<level>:latest": ...`. An unknown level is refused as the library does for a bad label value."""
    level = (namespace_labels or {}).get(ENFORCE)
    if level is None or level == "privileged":
        return None
    if level not in LEVELS:
        level = "restricted"  # the library enforces restricted for an unparseable level
    found = violations(level, spec)
    return f'violates PodSecurity "{level}:latest": {", ".join(found)}' if found else None
