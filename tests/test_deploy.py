"""The manifests in deploy/: the vcluster chart values fragment loads as a vcluster.yaml, its sidecar's
arguments are ones the CLI accepts, and it grants on the host exactly what deploy/host-rbac.yaml does."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from syncer.cli import _parser
from syncer.config.model import load_config
from syncer.config.policy import load_policy

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _rules(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_the_chart_fragment_is_a_valid_vcluster_yaml_with_a_runnable_sidecar() -> None:
    config = load_config(DEPLOY / "vcluster.yaml")
    assert config.enabled and config.source["sync"]["toHost"]["pods"]["enabled"] is False  # vcluster's pod sync off
    values = yaml.safe_load((DEPLOY / "vcluster.yaml").read_text())
    (sidecar,) = values["controlPlane"]["statefulSet"]["sidecarContainers"]
    args = _parser().parse_args([a.replace("$(VCLUSTER_NAME)", "my-vcluster").replace("$(POD_NAMESPACE)", "vc-ns")
                                 for a in sidecar["args"]])
    assert (args.command, args.config, args.virtual_kubeconfig) == ("run", "/var/lib/vcluster/config.yaml",
                                                                     "/data/vcluster/admin.conf")
    mounts = {m["mountPath"]: m["name"] for m in sidecar["volumeMounts"]}
    assert mounts == {"/var/lib/vcluster": "vcluster-config", "/data": "data", "/tmp": "tmp"}  # the pod's own


def test_the_sidecar_can_never_make_the_vcluster_pod_unready() -> None:
    # Kubernetes: a pod is Ready only when every container is (kubelet GeneratePodReadyCondition); a container
    # with a readinessProbe is ready only while the probe passes, one with a startupProbe only once it passed.
    # The vcluster chart's Service (selector app: vcluster, no publishNotReadyAddresses) drops an unready pod,
    # and with it every tenant's route to the virtual API server. So neither probe may be on the sidecar.
    values = yaml.safe_load((DEPLOY / "vcluster.yaml").read_text())
    (in_chart,) = values["controlPlane"]["statefulSet"]["sidecarContainers"]
    standalone = yaml.safe_load((DEPLOY / "sidecar-container.yaml").read_text())
    for sidecar in (in_chart, standalone):
        assert "readinessProbe" not in sidecar and "startupProbe" not in sidecar
        assert sidecar["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "rcs-health"}
        # liveness restarts a stuck sidecar (not the vcluster pod); give start-up time before the first probe
        assert sidecar["livenessProbe"]["initialDelaySeconds"] >= 5


def test_the_fragment_grants_what_host_rbac_grants() -> None:
    values = yaml.safe_load((DEPLOY / "vcluster.yaml").read_text())
    docs = [d for d in yaml.safe_load_all((DEPLOY / "host-rbac.yaml").read_text()) if d]
    role = next(d for d in docs if d["kind"] == "Role")
    cluster_role = next(d for d in docs if d["kind"] == "ClusterRole")
    assert _rules(values["rbac"]["role"]["extraRules"]) == _rules(role["rules"])
    assert _rules(values["rbac"]["clusterRole"]["extraRules"]) == _rules(cluster_role["rules"])


def test_the_policy_configmap_holds_a_valid_policy_for_the_fragment(tmp_path: Path) -> None:
    (cm,) = [d for d in yaml.safe_load_all((DEPLOY / "policy.yaml").read_text()) if d]
    assert cm["kind"] == "ConfigMap" and cm["metadata"]["name"] == "runtimeclass-syncer-policy"
    policy = tmp_path / "policy.yaml"
    policy.write_text(cm["data"]["policy.yaml"])
    load_policy(policy, load_config(DEPLOY / "vcluster.yaml"))  # raises ConfigError with every error
    args = _parser().parse_args(["run", "--config=c", "--virtual-kubeconfig=k", "--vcluster-name=v",
                                 "--host-namespace=n", "--policy=/etc/runtimeclass-syncer/policy.yaml"])
    assert args.policy == "/etc/runtimeclass-syncer/policy.yaml"


SHARED_SCHEMA = DEPLOY.parent.parent / "shared" / "reference" / "vcluster-values.schema.json"
CHART_SCHEMA = os.environ.get("VCLUSTER_CHART_SCHEMA") or (str(SHARED_SCHEMA) if SHARED_SCHEMA.is_file() else "")


@pytest.mark.skipif(not CHART_SCHEMA, reason="set VCLUSTER_CHART_SCHEMA to the vcluster chart's values.schema.json "
                                             "(loft-sh/vcluster chart/values.schema.json), or put it at "
                                             "../shared/reference/vcluster-values.schema.json, to check the "
                                             "fragment against it; the schema is not part of this repository")
def test_the_fragment_and_examples_validate_against_the_vcluster_charts_schema() -> None:
    schema = json.loads(Path(CHART_SCHEMA).read_text())
    validator = jsonschema.Draft202012Validator(schema)
    files = [DEPLOY / "vcluster.yaml", *sorted((DEPLOY.parent / "examples").glob("vcluster-*.yaml"))]
    for path in files:
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert errors == [], f"{path.name} does not validate against the chart's schema"
    misspelled = yaml.safe_load((DEPLOY / "vcluster.yaml").read_text())
    misspelled["controlPlane"]["statefulSet"]["sidecarContainer"] = misspelled["controlPlane"]["statefulSet"].pop(
        "sidecarContainers")
    assert any("sidecarContainer" in e.message for e in validator.iter_errors(misspelled))  # the check can fail
