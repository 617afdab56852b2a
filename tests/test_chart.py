"""vcluster's own Helm chart, rendered the way `helm install` renders it (Helm's Go code through the PyPI package
helm-python-sdk), with deploy/vcluster.yaml (the sidecar) and deploy/vcluster-deployment.yaml (its own
Deployment), for every vcluster version the README's install section supports (charts in tests/data, each with
its source).

The assertions are on the rendered objects, against the rules of Kubernetes and of vcluster's source (each cited
where it is used): what the pod mounts exists, the kubeconfig comes from where vcluster writes one and the syncer's
uid can read it, arguments and environment resolve, nothing of vcluster's PKI or database is mounted, the RBAC
rules land, the values pass the chart's schema, and the configuration the syncer gets passes its own refusals.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.cli import _parser
from syncer.config.model import ConfigError, VClusterConfig
from syncer.config.vcluster import load_beside_vcluster

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (the project's test extra) renders the charts")

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy"
DATA = Path(__file__).resolve().parent / "data"
VERSIONS = ("0.35.3", "0.36.1", "main-487667546")  # README "Supported vcluster versions"
RELEASE, NAMESPACE = "my-vcluster", "vcluster-my-vcluster"
SIDECAR, DEPLOYMENT = "vcluster.yaml", "vcluster-deployment.yaml"
Obj = dict[str, Any]


@functools.cache
def _render_cached(version: str, fragment: str, extra: str) -> tuple[str, ...]:
    values = yaml.safe_load((DEPLOY / fragment).read_text())
    values = _merge(values, json.loads(extra))
    with helm.Chart.load(str(DATA / f"vcluster-chart-{version}")) as chart:
        chart.validate_schema(values)  # raises HelmValuesError naming the key (as helm install does first)
        manifests = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    return tuple(json.dumps(doc) for text in manifests.values() for doc in yaml.safe_load_all(text) if doc)


def render(version: str, fragment: str, extra: Obj | None = None) -> list[Obj]:
    """Every object the chart renders with `deploy/<fragment>` (merged with `extra`, as a second -f file)."""
    return [json.loads(d) for d in _render_cached(version, fragment, json.dumps(extra or {}, sort_keys=True))]


def _merge(base: Any, over: Any) -> Any:
    """Helm's coalescing of two values files: maps merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else v
        return out
    return copy.deepcopy(over)


def one(objs: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def container(pod: Obj, name: str) -> Obj:
    (found,) = [c for c in pod["containers"] if c["name"] == name]
    return found


def pod_of(objs: list[Obj], kind: str, name: str) -> tuple[Obj, Obj]:
    """(pod template metadata, pod spec) of a workload."""
    template = one(objs, kind, name)["spec"]["template"]
    return template["metadata"], template["spec"]


def syncer_pod(version: str, fragment: str, extra: Obj | None = None) -> tuple[list[Obj], Obj, Obj, Obj]:
    """(objects, pod metadata, pod spec, the runtimeclass-syncer container) of either fragment."""
    objs = render(version, fragment, extra)
    if fragment == SIDECAR:
        meta, spec = pod_of(objs, "StatefulSet", RELEASE)
    else:
        meta, spec = pod_of(objs, "Deployment", f"runtimeclass-syncer-{RELEASE}")
    return objs, meta, spec, container(spec, "runtimeclass-syncer")


def resolve_env(pod_meta: Obj, c: Obj) -> dict[str, str]:
    """The container's environment as the kubelet sets it: values, and downward-API fieldRefs of the pod's
    metadata (Kubernetes pkg/fieldpath ExtractFieldPathAsString: metadata.namespace, metadata.labels['k'])."""
    env: dict[str, str] = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
            continue
        path = e["valueFrom"]["fieldRef"]["fieldPath"]
        label = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
        if path == "metadata.namespace":
            env[e["name"]] = NAMESPACE  # the namespace the chart renders into
        elif label:
            assert label.group(1) in pod_meta["labels"], f"{e['name']}: the pod has no label {label.group(1)!r}"
            env[e["name"]] = pod_meta["labels"][label.group(1)]
        else:
            raise AssertionError(f"{e['name']}: a fieldPath this test does not resolve: {path}")
    return env


def expand(arg: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of args (third_party/forked/golang/expansion): an undefined $(VAR) stays as
    it is, which the assertion turns into a failure."""
    def sub(m: re.Match[str]) -> str:
        assert m.group(1) in env, f"{arg}: $({m.group(1)}) is not in the container's environment"
        return env[m.group(1)]
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", sub, arg)


def parsed_args(pod_meta: Obj, c: Obj) -> Any:
    return _parser().parse_args([expand(a, resolve_env(pod_meta, c)) for a in c["args"]])


def volume_behind(spec: Obj, c: Obj, file: str) -> tuple[Obj, str]:
    """(the pod volume, the path inside it) that holds `file` in container `c` (the longest mount prefix)."""
    mounts = sorted(c["volumeMounts"], key=lambda m: len(m["mountPath"]), reverse=True)
    mount = next(m for m in mounts if file.startswith(m["mountPath"].rstrip("/") + "/"))
    (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
    return volume, file[len(mount["mountPath"].rstrip("/")) + 1:]


def readable(spec: Obj, c: Obj, volume: Obj, item_path: str) -> bool:
    """Whether the container's uid can read a file of a secret/configMap volume. Kubernetes: the files are owned by
    root, group root or the pod's fsGroup (pkg/volume/util AtomicWriter with SetVolumeOwnership), with the item's
    `mode` or else `defaultMode`, which defaults to 0644 (core/v1 SecretVolumeSource.defaultMode); the process has
    runAsUser/runAsGroup (container over pod) and the fsGroup and supplementalGroups as extra groups."""
    source = volume.get("secret") or volume.get("configMap")
    assert source is not None, f"volume {volume['name']} is not a secret or configMap volume"
    mode = next((i.get("mode") for i in source.get("items", []) if i["path"] == item_path), None)
    mode = source.get("defaultMode", 0o644) if mode is None else mode
    pod_sc, sc = spec.get("securityContext", {}), c.get("securityContext", {})
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    gid = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    assert uid is not None, "the container's uid must be set in the manifest to be checked"
    fs_group = pod_sc.get("fsGroup")
    file_group = fs_group if fs_group is not None else 0
    groups = {gid, fs_group, *pod_sc.get("supplementalGroups", [])} - {None}
    return bool(uid == 0 or mode & 0o004 or (file_group in groups and mode & 0o040))


def rules(objs: list[Obj], kind: str, name: str) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in one(objs, kind, name).get("rules") or []
            for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def host_rbac(kind: str) -> set[tuple[str, str, str]]:
    (doc,) = [d for d in yaml.safe_load_all((DEPLOY / "host-rbac.yaml").read_text()) if d and d["kind"] == kind]
    return {(g, r, v) for rule in doc["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def configmap_files(objs: list[Obj], tmp: Path) -> tuple[Path, Path]:
    """The syncer's ConfigMap written out as the kubelet mounts it: (its own section, vcluster's keys)."""
    data = one(objs, "ConfigMap", f"runtimeclass-syncer-{RELEASE}")["data"]
    assert set(data) == {"runtimeclass-syncer.yaml", "vcluster.yaml"}
    own, shared = tmp / "runtimeclass-syncer.yaml", tmp / "vcluster.yaml"
    own.write_text(data["runtimeclass-syncer.yaml"])
    shared.write_text(data["vcluster.yaml"])
    return own, shared


def vcluster_runs_with(objs: list[Obj]) -> Obj:
    """The configuration vcluster runs with: config.yaml of Secret vc-config-<release> (the chart's
    templates/config-secret.yaml; vcluster reads it at /var/lib/vcluster/config.yaml)."""
    import base64
    secret = one(objs, "Secret", f"vc-config-{RELEASE}")
    doc: Obj = yaml.safe_load(base64.b64decode(secret["data"]["config.yaml"]))
    return doc


FRAGMENTS = pytest.mark.parametrize("fragment", [SIDECAR, DEPLOYMENT])
VERSION = pytest.mark.parametrize("version", VERSIONS)


@VERSION
@FRAGMENTS
def test_the_values_pass_the_charts_schema(version: str, fragment: str) -> None:
    render(version, fragment)  # validate_schema first, as helm install does
    misspelled = {"controlPlane": {"statefulSet": {"sidecarContainer": []}}}
    with pytest.raises(helm.HelmValuesError, match="sidecarContainer"):  # the check can fail
        render(version, fragment, misspelled)


@VERSION
def test_the_examples_pass_the_charts_schema(version: str) -> None:
    with helm.Chart.load(str(DATA / f"vcluster-chart-{version}")) as chart:
        for path in sorted((REPO / "examples").glob("vcluster-*.yaml")):
            chart.validate_schema(yaml.safe_load(path.read_text()))


@VERSION
@FRAGMENTS
def test_every_mount_names_a_volume_of_the_pod(version: str, fragment: str) -> None:
    _, _, spec, c = syncer_pod(version, fragment)
    volumes = {v["name"] for v in spec["volumes"]}
    assert [m["name"] for m in c["volumeMounts"] if m["name"] not in volumes] == []
    assert len({m["mountPath"] for m in c["volumeMounts"]}) == len(c["volumeMounts"])


@VERSION
@FRAGMENTS
def test_the_kubeconfig_is_the_one_vcluster_exports_and_the_syncers_uid_can_read_it(version: str,
                                                                                    fragment: str) -> None:
    objs, meta, spec, c = syncer_pod(version, fragment)
    args = parsed_args(meta, c)
    volume, item = volume_behind(spec, c, args.virtual_kubeconfig)
    # vcluster writes the kubeconfig it exports into Secret "vc-" + name, key "config", once its controllers
    # run (pkg/util/kubeconfig/kubeconfig.go DefaultSecretPrefix, KubeconfigSecretKey; pkg/setup/controllers.go
    # WriteKubeConfigToSecret). It does not exist before vcluster has started: a required volume would keep the
    # pod, and with the sidecar vcluster itself, from ever starting.
    secret = volume["secret"]
    assert (secret["secretName"], secret.get("optional")) == (f"vc-{RELEASE}", True)
    assert {"key": "config", "path": item} in secret["items"] or (item == "config" and "items" not in secret)
    assert readable(spec, c, volume, item)
    # the container runs as the image's user (Dockerfile USER 65532), not as root
    uid = c.get("securityContext", {}).get("runAsUser", spec.get("securityContext", {}).get("runAsUser"))
    assert uid == 65532
    # its server: vcluster writes https://localhost:<controlPlane.proxy.port> (pkg/setup/controller_context.go
    # CreateVClusterKubeConfig) or exportKubeConfig.server; the syncer names the one it can reach
    proxy_port = vcluster_runs_with(objs)["controlPlane"]["proxy"]["port"]
    if fragment == SIDECAR:
        assert args.virtual_server == f"https://localhost:{proxy_port}"  # vcluster's proxy, in the same pod
    else:
        # the vcluster Service: its serving certificate names "<name>.<namespace>" (pkg/server/cert/cert.go
        # getExtraSANs), and the Service port that leads to the proxy port
        service = one(objs, "Service", RELEASE)
        (port,) = [p["port"] for p in service["spec"]["ports"] if p.get("targetPort") == proxy_port
                   and p["name"] == "https"]
        assert args.virtual_server == f"https://{RELEASE}.{NAMESPACE}:{port}"


@VERSION
def test_a_root_owned_0600_file_would_not_be_readable(version: str) -> None:
    # the check above can fail: vcluster's /data/pki/admin.conf is 0600 and root's (pkg/certs), and mode 0400 on
    # the secret volume would be the same for uid 65532
    _, _, spec, c = syncer_pod(version, SIDECAR, {"controlPlane": {"statefulSet": {"persistence": {"addVolumes": [
        {"name": "runtimeclass-syncer-config", "configMap": {"name": "x"}},
        {"name": "runtimeclass-syncer-kubeconfig", "secret": {"secretName": f"vc-{RELEASE}", "defaultMode": 0o400,
                                                              "items": [{"key": "config", "path": "config"}]}},
        {"name": "runtimeclass-syncer-tmp", "emptyDir": {}}]}}}})
    volume, item = volume_behind(spec, c, "/etc/runtimeclass-syncer/virtual/config")
    assert not readable(spec, c, volume, item)


@VERSION
@FRAGMENTS
def test_arguments_and_environment_resolve(version: str, fragment: str) -> None:
    _, meta, _, c = syncer_pod(version, fragment)
    args = parsed_args(meta, c)  # the CLI's own parser: every flag exists, every $(VAR) is defined
    assert (args.command, args.vcluster_name, args.host_namespace) == ("run", RELEASE, NAMESPACE)
    assert args.leader_elect
    if fragment == SIDECAR:
        # the release name from the label the chart puts on the pod (templates/statefulset.yaml), not typed in
        (name_env,) = [e for e in c["env"] if e["name"] == "VCLUSTER_NAME"]
        assert name_env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.labels['release']"
        assert meta["labels"]["release"] == RELEASE


@VERSION
@FRAGMENTS
def test_nothing_of_vclusters_pki_database_or_config_is_mounted(version: str, fragment: str) -> None:
    objs, _, spec, c = syncer_pod(version, fragment)
    _, vcluster_spec = pod_of(objs, "StatefulSet", RELEASE)
    vcluster_mounts = {m["name"] for m in container(vcluster_spec, "syncer")["volumeMounts"]}
    assert {"data", "certs", "vcluster-config"} <= vcluster_mounts  # what it keeps there: /data, /pki, config
    names = {m["name"] for m in c["volumeMounts"]}
    if fragment == SIDECAR:  # in the same pod it shares no volume with the vcluster container, /tmp included
        assert names & vcluster_mounts == set()
    # its volumes: its ConfigMap, the exported kubeconfig and scratch space; no claim (vcluster's database), no
    # host path, no other Secret (vc-config-<release> holds vcluster's credentials, vc-certs... its CA keys)
    mine = [v for v in spec["volumes"] if v["name"] in names]
    assert sorted(next(k for k in v if k != "name") for v in mine) == ["configMap", "emptyDir", "secret"]
    assert [v["secret"]["secretName"] for v in mine if "secret" in v] == [f"vc-{RELEASE}"]
    assert all(m.get("readOnly") for m in c["volumeMounts"] if m["mountPath"] != "/tmp")


@VERSION
def test_the_sidecars_rbac_lands_and_adds_only_the_lease_and_cluster_reads(version: str) -> None:
    objs = render(version, SIDECAR)
    role, cluster_role = rules(objs, "Role", f"vc-{RELEASE}"), set()
    cluster_roles = [o for o in objs if o["kind"] == "ClusterRole"]
    (cr,) = cluster_roles
    cluster_role = rules(objs, "ClusterRole", cr["metadata"]["name"])
    assert host_rbac("Role") <= role and host_rbac("ClusterRole") <= cluster_role
    # bound to the service account the pod runs as (the sidecar shares it)
    _, spec = pod_of(objs, "StatefulSet", RELEASE)
    for kind, name in (("RoleBinding", f"vc-{RELEASE}"), ("ClusterRoleBinding", cr["metadata"]["name"])):
        binding = one(objs, kind, name)
        assert {"kind": "ServiceAccount", "name": spec["serviceAccountName"], "namespace": NAMESPACE} in \
            binding["subjects"]
    # What the fragment adds to vcluster's own Role: only the Lease, and reading ServiceAccounts (the copies a pod
    # runs as with sync.toHost.serviceAccounts) and ResourceClaims and their templates (the copies a pod names with
    # sync.toHost.resourceClaims / resourceClaimTemplates; vcluster's Role has them only when those are on); the
    # README's "Least privilege" says so. vcluster's Role already lets the sidecar create, patch and delete every
    # pod, secret and configmap of the namespace.
    plain = render(version, SIDECAR, {"rbac": {"role": {"extraRules": []}, "clusterRole": {"extraRules": []}}})
    assert role - rules(plain, "Role", f"vc-{RELEASE}") == {
        ("coordination.k8s.io", "leases", "get"), ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"), ("", "serviceaccounts", "list"),
        ("", "serviceaccounts", "watch"), ("resource.k8s.io", "resourceclaims", "list"),
        ("resource.k8s.io", "resourceclaims", "watch"), ("resource.k8s.io", "resourceclaimtemplates", "list"),
        ("resource.k8s.io", "resourceclaimtemplates", "watch")}
    plain_cluster = {o["metadata"]["name"] for o in plain if o["kind"] == "ClusterRole"}
    before = rules(plain, "ClusterRole", cr["metadata"]["name"]) if plain_cluster else set()
    assert cluster_role - before == {("node.k8s.io", "runtimeclasses", "list"),
                                     ("node.k8s.io", "runtimeclasses", "watch"),
                                     ("scheduling.k8s.io", "priorityclasses", "list"),
                                     ("scheduling.k8s.io", "priorityclasses", "watch")}


@VERSION
def test_with_overwrite_rules_the_role_holds_only_those_so_the_fragments_rules_must_be_merged_in(version: str) -> None:
    # vcluster's chart, templates/role.yaml: `{{- if .Values.rbac.role.overwriteRules }}` renders those rules and
    # nothing else (its `else` branch holds vcluster's rules and rbac.role.extraRules); templates/clusterrole.yaml
    # the same with rbac.clusterRole.overwriteRules
    mine = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]  # a user's own rules
    mine_cluster = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]
    objs = render(version, SIDECAR, {"rbac": {"role": {"overwriteRules": mine},
                                              "clusterRole": {"overwriteRules": mine_cluster}}})
    (cr,) = [o["metadata"]["name"] for o in objs if o["kind"] == "ClusterRole"]
    assert rules(objs, "Role", f"vc-{RELEASE}") == {("", "pods", "get"), ("", "pods", "list")}
    assert rules(objs, "ClusterRole", cr) == {("", "nodes", "get")}  # the fragment's extraRules are gone
    # what the fragment's comment says to do: merge its extraRules into the overwriteRules
    comment = (DEPLOY / SIDECAR).read_text()
    assert "drops every extraRules entry" in comment
    assert "merge the extraRules below into\n# your overwriteRules" in comment
    fragment = yaml.safe_load((DEPLOY / SIDECAR).read_text())["rbac"]
    merged = render(version, SIDECAR, {"rbac": {
        "role": {"overwriteRules": mine + fragment["role"]["extraRules"]},
        "clusterRole": {"overwriteRules": mine_cluster + fragment["clusterRole"]["extraRules"]}}})
    assert rules(merged, "Role", f"vc-{RELEASE}") == host_rbac("Role") | {("", "pods", "get"), ("", "pods", "list")}
    assert rules(merged, "ClusterRole", cr) == host_rbac("ClusterRole") | {("", "nodes", "get")}


@VERSION
def test_the_deployment_has_its_own_account_with_only_the_host_rules_it_needs(version: str) -> None:
    objs, _, spec, _ = syncer_pod(version, DEPLOYMENT)
    account = f"runtimeclass-syncer-{RELEASE}"
    assert spec["serviceAccountName"] == account != f"vc-{RELEASE}"
    one(objs, "ServiceAccount", account)
    cluster_name = f"runtimeclass-syncer-{NAMESPACE}-{RELEASE}"
    assert rules(objs, "Role", account) == host_rbac("Role")
    assert rules(objs, "ClusterRole", cluster_name) == host_rbac("ClusterRole")
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    for kind, name, role_name in (("RoleBinding", account, account),
                                  ("ClusterRoleBinding", cluster_name, cluster_name)):
        binding = one(objs, kind, name)
        assert binding["subjects"] == [subject] and binding["roleRef"]["name"] == role_name
    # and it is bound to nothing of vcluster's
    others = [o for o in objs if o["kind"] in ("RoleBinding", "ClusterRoleBinding") and subject in o["subjects"]
              and not o["metadata"]["name"].startswith("runtimeclass-syncer-")]
    assert others == []


@VERSION
@FRAGMENTS
def test_one_writer_per_resource_and_the_syncer_accepts_what_the_chart_renders(version: str, fragment: str,
                                                                                tmp_path: Path) -> None:
    objs = render(version, fragment)
    runs_with = vcluster_runs_with(objs)
    # vcluster's own pod syncer and RuntimeClass syncer are off (pkg/controllers/resources/register.go getSyncers)
    assert runs_with["sync"]["toHost"]["pods"]["enabled"] is False
    assert runs_with["sync"]["fromHost"]["runtimeClasses"]["enabled"] is False
    own, shared = configmap_files(objs, tmp_path)
    config = load_beside_vcluster(own, shared)  # raises ConfigError naming every refusal
    assert config.enabled and str(config.selector) == "environment in (development)"  # labels.Selector.String
    # the keys the syncer shares with vcluster are those vcluster runs with, key for key
    for path in _model_paths(VClusterConfig):
        assert _at(yaml.safe_load(shared.read_text()), path) == _at(runs_with, path), path


# vcluster config/config.go: `func (c *Config) IsVirtualSchedulerEnabled() bool { return
# c.ControlPlane.Distro.K8S.Scheduler.Enabled || c.ControlPlane.Advanced.VirtualScheduler.Enabled }` (the advanced key
# is deprecated for the distro one: the chart's values.schema.json)
@VERSION
@FRAGMENTS
@pytest.mark.parametrize(("values", "on"), [
    ({"controlPlane": {"distro": {"k8s": {"scheduler": {"enabled": True}}}}}, True),
    ({"controlPlane": {"advanced": {"virtualScheduler": {"enabled": True}}}}, True),
    ({}, False),
], ids=["distro-k8s-scheduler", "deprecated-advanced", "neither"])
def test_the_syncer_sees_the_virtual_scheduler_vcluster_runs_with(version: str, fragment: str, values: Obj, on: bool,
                                                                  tmp_path: Path) -> None:
    from syncer.controllers.podtranslate.options import PodOptions
    from syncer.controllers.translate import host_pod
    objs = render(version, fragment, values)
    runs_with = vcluster_runs_with(objs)["controlPlane"]
    assert (runs_with["distro"]["k8s"]["scheduler"]["enabled"] or runs_with["advanced"]["virtualScheduler"]["enabled"]
            ) is on  # what vcluster itself decides from the Secret it reads
    own, shared = configmap_files(objs, tmp_path)
    config = load_beside_vcluster(own, shared)
    assert config.virtual_scheduler is on
    # and the pod translation acts on it: a pod the virtual scheduler placed keeps its node, and the host's
    # scheduler gets nothing to decide again (vcluster pkg/controllers/resources/pods/translate Translate)
    vpod = {"metadata": {"name": "p", "namespace": "default", "uid": "u"},
            "spec": {"nodeName": "n1", "nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c", "image": "i"}]}}
    spec = host_pod(vpod, vcluster_name=RELEASE, host_namespace=NAMESPACE,
                    options=PodOptions.from_config(config))["spec"]
    assert ("nodeSelector" in spec) is not on


def test_both_fragments_render_the_same_configmap() -> None:
    sidecar = one(render(VERSIONS[-1], SIDECAR), "ConfigMap", f"runtimeclass-syncer-{RELEASE}")
    deployment = one(render(VERSIONS[-1], DEPLOYMENT), "ConfigMap", f"runtimeclass-syncer-{RELEASE}")
    assert sidecar == deployment


@pytest.mark.parametrize(("values", "error"), [
    ({"sync": {"toHost": {"pods": {"enabled": True}}}},
     "vcluster.yaml: invalid sync.toHost.pods.enabled: vcluster's own pod sync is on"),
    ({"sync": {"fromHost": {"runtimeClasses": {"enabled": True}}}},
     "vcluster.yaml: invalid sync.fromHost.runtimeClasses.enabled: vcluster would sync RuntimeClasses too"),
    ({"sync": {"toHost": {"namespaces": {"enabled": True}}}},
     "vcluster.yaml: invalid sync.toHost.namespaces.enabled: multi-namespace mode is not supported"),
    ({"privateNodes": {"enabled": True}},
     "vcluster.yaml: invalid privateNodes.enabled: private nodes are not supported"),
])
def test_the_syncer_refuses_what_would_make_two_writers_or_an_unsupported_mode(values: Obj, error: str,
                                                                               tmp_path: Path) -> None:
    # a user's vcluster.yaml that turns one of these back on, rendered by the current chart, and the real CLI
    # over the mounted files: exit 2 with the file and the field path
    own, shared = configmap_files(render(VERSIONS[-1], SIDECAR, values), tmp_path)
    proc = _cli("validate", "--config", str(own), "--vcluster-config", str(shared))
    assert proc[0] == 2 and f"error: {shared.parent}/{error}" in proc[2], proc[2]
    with pytest.raises(ConfigError):
        load_beside_vcluster(own, shared)


# The switches whose chart default is true (vcluster chart/values.yaml) and that vcluster's Go struct holds as a plain
# bool (config/config.go: SyncPods.Enabled, SyncRewriteHosts.Enabled, ExperimentalSyncSettings.SetOwner,
# CoreDNS.Enabled)
TRUE_BY_DEFAULT = ("sync.toHost.pods.enabled", "sync.toHost.pods.rewriteHosts.enabled",
                   "experimental.syncSettings.setOwner", "controlPlane.coredns.enabled")


@VERSION
@pytest.mark.parametrize("switch", TRUE_BY_DEFAULT)
def test_a_switch_set_to_null_is_off_as_vcluster_reads_it(version: str, switch: str, tmp_path: Path) -> None:
    # Helm drops a key a values file sets to null, the chart's default with it (Helm docs, values files, "Deleting
    # a default key"), so vcluster's config.yaml lacks the key, and vcluster reads it as Go's false (pkg/config/
    # parse.go ParseConfigBytes: yaml.UnmarshalStrict into its struct, no defaults filled in)
    values: Obj = {switch.rsplit(".", 1)[1]: None}
    for key in reversed(switch.split(".")[:-1]):
        values = {key: values}
    objs = render(version, SIDECAR, values)
    parent, key = switch.rsplit(".", 1)
    assert key not in _at(vcluster_runs_with(objs), parent)
    own, shared = configmap_files(objs, tmp_path)
    code, out, err = _cli("validate", "--config", str(own), "--vcluster-config", str(shared))
    assert code == 0, err  # vcluster's pod sync is off: the syncer can run beside it
    assert f"{shared}: the syncer can run beside it" in out
    if switch != "sync.toHost.pods.enabled":  # the others are read by the configuration model: off, as vcluster has it
        assert _at(load_beside_vcluster(own, shared).raw.model_dump(by_alias=True), switch) is False
        # and without the null, the chart's default: on
        own, shared = configmap_files(render(version, SIDECAR), tmp_path)
        assert _at(load_beside_vcluster(own, shared).raw.model_dump(by_alias=True), switch) is True


def test_validate_accepts_the_rendered_pair(tmp_path: Path) -> None:
    own, shared = configmap_files(render(VERSIONS[-1], SIDECAR), tmp_path)
    code, out, err = _cli("validate", "--config", str(own), "--vcluster-config", str(shared))
    assert code == 0, err
    assert f"{shared}: the syncer can run beside it" in out


def test_docs_list_exactly_the_tested_versions() -> None:
    text = (REPO / "README.md").read_text()
    section = text[text.index("### Supported vcluster versions"):]
    section = section[:section.index("\n### ", 3)]
    dirs = {p.name.removeprefix("vcluster-chart-") for p in DATA.glob("vcluster-chart-*")}
    assert dirs == set(VERSIONS)
    assert set(re.findall(r"`v(\d+\.\d+\.\d+)`", section)) == {d for d in dirs if not d.startswith("main-")}
    assert all(f"`{d.removeprefix('main-')}`" in section for d in dirs if d.startswith("main-"))


def _cli(*args: str) -> tuple[int, str, str]:
    async def go() -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "syncer", *args, cwd=REPO,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()
    return asyncio.run(go())


def _model_paths(model: Any, prefix: str = "") -> list[str]:
    """Every leaf key path the configuration model reads (pydantic fields, nested models walked)."""
    from pydantic import BaseModel
    out: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += _model_paths(ann, path)
        else:
            out.append(path)
    return out


def _at(doc: Any, path: str) -> Any:
    for key in path.split("."):
        doc = doc.get(key) if isinstance(doc, dict) else None
    return doc


def test_the_policy_configmap_holds_a_valid_policy_for_the_rendered_config(tmp_path: Path) -> None:
    from syncer.config.policy import load_policy
    own, shared = configmap_files(render(VERSIONS[-1], SIDECAR), tmp_path)
    (cm,) = [d for d in yaml.safe_load_all((DEPLOY / "policy.yaml").read_text()) if d]
    policy = tmp_path / "policy.yaml"
    policy.write_text(cm["data"]["policy.yaml"])
    load_policy(policy, load_beside_vcluster(own, shared))  # raises ConfigError with every error


@FRAGMENTS
def test_a_change_of_the_section_restarts_the_syncer(fragment: str) -> None:
    # the syncer reads its configuration once, at start: a new section must give the pod template a new hash
    # (vcluster's chart: vClusterConfigHash over all values, templates/_vclusterconfighash.tpl; the Deployment:
    # its checksum/config annotation)
    values = yaml.safe_load((DEPLOY / fragment).read_text())
    template = values["experimental"]["deploy"]["host"]["manifestsTemplate"]
    assert "environment: development" in template
    changed = {"experimental": {"deploy": {"host": {"manifestsTemplate": template.replace(
        "environment: development", "environment: production")}}}}
    before, after = (syncer_pod(VERSIONS[-1], fragment, extra)[1]["annotations"] for extra in (None, changed))
    assert before != after


@pytest.mark.parametrize(("kind", "fragment", "app"), [
    ("PodMonitor", SIDECAR, "vcluster"), ("PodMonitor", DEPLOYMENT, "runtimeclass-syncer"),
    ("ServiceMonitor", SIDECAR, "vcluster"), ("ServiceMonitor", DEPLOYMENT, "runtimeclass-syncer")])
def test_the_monitoring_examples_in_the_docs_find_the_metrics_port(kind: str, fragment: str, app: str) -> None:
    text = (REPO / "README.md").read_text()
    text = text[text.index("### Metrics"):text.index("### Least privilege")]
    docs = [d for block in re.findall(r"```yaml\n(.*?)```", text, re.S) for d in yaml.safe_load_all(block)
            if d and d.get("apiVersion", "").startswith(("monitoring.coreos.com", "v1"))]
    (monitor,) = [d for d in docs if d["kind"] == kind]
    _, meta, _, c = syncer_pod(VERSIONS[-1], fragment)
    # the docs say which label to change for the Deployment: app
    if kind == "PodMonitor":
        selector, port = dict(monitor["spec"]["selector"]["matchLabels"]), monitor["spec"]["podMetricsEndpoints"]
    else:
        (service,) = [d for d in docs if d["kind"] == "Service"]
        assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
        selector = dict(service["spec"]["selector"])
        (svc_port,) = service["spec"]["ports"]
        port = [{"port": svc_port["targetPort"]}]
        assert svc_port["name"] == monitor["spec"]["endpoints"][0]["port"]
    selector["app"] = app
    assert selector.items() <= meta["labels"].items()
    (metrics,) = [p for p in c["ports"] if p["name"] == port[0]["port"]]
    args = parsed_args(meta, c)
    assert args.metrics_bind_address == f":{metrics['containerPort']}"
