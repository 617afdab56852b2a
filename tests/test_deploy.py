"""The manifests in deploy/ read as files: the sidecar has no probe that could make the vcluster pod unready, the
fragment grants on the host exactly what deploy/host-rbac.yaml does, the policy ConfigMap holds a valid policy.
vcluster's chart rendered with the fragments is tests/test_chart.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from syncer.config.model import load_config
from syncer.config.policy import load_policy

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _rules(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


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
    load_policy(policy, load_config(DEPLOY.parent / "examples" / "vcluster-matchlabels.yaml"))  # every error
    # the mount its comment describes is beside the fragment's own (/etc/runtimeclass-syncer/config, .../virtual)
    comment = (DEPLOY / "policy.yaml").read_text()
    assert "mountPath: /etc/runtimeclass-syncer/policy" in comment
    assert "--policy=/etc/runtimeclass-syncer/policy/policy.yaml" in comment


def test_the_standalone_container_is_the_one_the_fragment_adds() -> None:
    values = yaml.safe_load((DEPLOY / "vcluster.yaml").read_text())
    (in_chart,) = values["controlPlane"]["statefulSet"]["sidecarContainers"]
    assert yaml.safe_load((DEPLOY / "sidecar-container.yaml").read_text()) == in_chart
