"""The update of a synced pod pair (syncer/controllers/podupdate.py), rule by rule, with literal expectations from
vcluster's pod syncer (`translate/diff.go`: `Diff`, `calcSpecDiff`; `syncer.go`; `ephemeral_containers.go`) and
Kubernetes' pod update rules; the rows where this project differs say so."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import jsonpatch
import pytest

from syncer.config.model import parse_config
from syncer.controllers.podtranslate.options import PodOptions
from syncer.controllers.podupdate import PodUpdate, plan_update, resize_ops
from syncer.controllers.translate import guarded_status_ops, host_pod, status_update

Obj = dict[str, Any]
VC = "vc"
RELEASE_KEY = "vcluster.loft.sh/label-vc-x-" + hashlib.sha256(b"release").hexdigest()[:10]


def h(value: str) -> str:
    """The hash of an annotation value in the synced-annotations base: first 10 hex digits of its SHA-256."""
    return hashlib.sha256(value.encode()).hexdigest()[:10]


def vpod(labels: Obj | None = None, annotations: Obj | None = None, spec: Obj | None = None,
         status: Obj | None = None) -> Obj:
    pod: Obj = {"metadata": {"name": "web", "namespace": "team", "uid": "u-1", "resourceVersion": "7",
                             "labels": labels or {}, "annotations": annotations or {}},
                "spec": spec or {"containers": [{"name": "app", "image": "nginx:1"}]}}
    if status is not None:
        pod["status"] = status
    return pod


def synced(v: Obj) -> Obj:
    """The host pod as created from `v` (what the host holds right after the create)."""
    return host_pod(v, vcluster_name=VC, host_namespace="vc-ns")


def applied(host: Obj, plan: PodUpdate) -> Obj:
    """Host pod `host` after the plan's JSON patch, as an API server applies it (RFC 6902, with the jsonpatch
    library): raises when a `test` of the plan does not hold against the pod it was planned from."""
    result: Obj = jsonpatch.apply_patch(host, plan.host_ops)
    return result


def written(plan: PodUpdate) -> list[str]:
    """The paths the plan's host patch writes (its `test`s left out), as JSON pointers (RFC 6901: `/` in a key is
    `~1`)."""
    return [op["path"] for op in plan.host_ops if op["op"] != "test"]


def spec_ops(plan: PodUpdate) -> list[Obj]:
    return [op for op in plan.host_ops if op["path"].startswith("/spec/")]


def test_nothing_to_do_right_after_the_create() -> None:
    v = vpod({"app": "web"}, {"note": "x"})
    plan = plan_update(synced(v), synced(v), v, vcluster_name=VC)
    assert (plan.host_ops, plan.virtual_metadata, plan.ephemeral, plan.resize, plan.host_condition_ops) == (
        [], None, [], [], [])


def test_a_virtual_label_change_goes_to_the_host_and_host_only_labels_stay() -> None:
    # diff.go LabelsBidirectionalUpdateFunction: a virtual change is merged into the host's labels. A label only
    # the host has (a webhook's) stays there and, being a host change, comes back (different: vcluster returns
    # it only when its informer sees it change; here every label the base does not hold is one)
    before = vpod({"app": "web", "tier": "a", "release": "r1"})
    host = synced(before)
    host["metadata"]["labels"]["istio.io/rev"] = "1-22"
    after = vpod({"app": "web2", "release": "r2"})  # tier removed, app and release changed
    plan = plan_update(synced(after), host, after, vcluster_name=VC)
    assert plan.virtual_metadata == {"metadata": {"resourceVersion": "7", "labels": {"istio.io/rev": "1-22"}}}
    new = applied(host, plan)["metadata"]
    assert new["labels"] == {"app": "web2", RELEASE_KEY: "r2", "istio.io/rev": "1-22",
                             "vcluster.loft.sh/managed-by": "vc", "vcluster.loft.sh/namespace": "team"}
    assert new["annotations"]["vcluster.loft.sh/labels"] == 'app="web2"\nistio.io/rev="1-22"\nrelease="r2"'  # base
    # key by key, each change of a value the host has after a `test` of it: a host write since is kept, or fails
    assert plan.host_ops[:4] == [
        {"op": "test", "path": "/metadata/labels/app", "value": "web"},
        {"op": "replace", "path": "/metadata/labels/app", "value": "web2"},
        {"op": "test", "path": "/metadata/labels/" + RELEASE_KEY.replace("/", "~1"), "value": "r1"},
        {"op": "replace", "path": "/metadata/labels/" + RELEASE_KEY.replace("/", "~1"), "value": "r2"}]
    assert written(plan) == ["/metadata/labels/app", "/metadata/labels/" + RELEASE_KEY.replace("/", "~1"),
                             "/metadata/labels/tier", "/metadata/annotations/vcluster.loft.sh~1labels"]


def test_a_host_label_change_comes_back_to_the_virtual_pod() -> None:
    # diff.go: when only the host changed (a webhook, a CNI), the change is merged into the virtual pod
    v = vpod({"app": "web", "tier": "a"})
    host = synced(v)
    host["metadata"]["labels"].update({"tier": "b", "mesh": "on"})
    del host["metadata"]["labels"]["app"]
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.virtual_metadata == {"metadata": {"resourceVersion": "7", "labels": {"tier": "b", "mesh": "on",
                                                                                     "app": None}}}
    # the host's labels are already right; only the base moves to the merged virtual labels
    assert written(plan) == ["/metadata/annotations/vcluster.loft.sh~1labels"]
    assert applied(host, plan)["metadata"]["annotations"]["vcluster.loft.sh/labels"] == 'mesh="on"\ntier="b"'


def test_the_syncers_own_labels_never_come_back_and_are_restored_on_the_host() -> None:
    v = vpod({"app": "web"})
    host = synced(v)
    host["metadata"]["labels"]["vcluster.loft.sh/managed-by"] = "other"
    host["metadata"]["labels"]["vcluster.loft.sh/ns-label-vc-x-0123456789"] = "stale"
    host["metadata"]["labels"]["release"] = "host-own"  # a raw key vcluster rewrites: never comes back
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.virtual_metadata is None
    assert applied(host, plan)["metadata"]["labels"] == {
        "app": "web", "release": "host-own", "vcluster.loft.sh/managed-by": "vc", "vcluster.loft.sh/namespace": "team"}


def test_annotations_merge_three_ways_and_derived_ones_go_neither_way() -> None:
    before = vpod(annotations={"a": "1", "b": "1"})
    host = synced(before)
    ann = host["metadata"]["annotations"]
    ann["sidecar.istio.io/status"] = "{}"  # added on the host
    ann["vcluster.loft.sh/object-name"] = "forged"  # a derived key, changed on the host: restored
    ann["vcluster.loft.sh/token-abc"] = "tok"  # a token annotation the reconciler added: kept
    after = vpod(annotations={"a": "2", "b": "1"})
    plan = plan_update(synced(after), host, after, vcluster_name=VC)
    assert plan.virtual_metadata == {"metadata": {"resourceVersion": "7",
                                                  "annotations": {"sidecar.istio.io/status": "{}"}}}
    new = applied(host, plan)["metadata"]["annotations"]
    assert (new["a"], new["b"], new["sidecar.istio.io/status"]) == ("2", "1", "{}")
    assert new["vcluster.loft.sh/object-name"] == "web"
    assert new["vcluster.loft.sh/token-abc"] == "tok"
    assert new["runtimeclass-syncer.io/synced-annotations"] == (
        '{"a":"' + h("2") + '","b":"' + h("1") + '","sidecar.istio.io/status":"' + h("{}") + '"}')


def test_a_host_pod_synced_before_the_object_host_annotations_gets_them() -> None:
    # translate.go HostAnnotations writes object-host-name/-namespace on every sync and VirtualAnnotations never
    # copies them back: a host pod an earlier version created without them gets them, and nothing comes back
    v = vpod()
    host = synced(v)
    del host["metadata"]["annotations"]["vcluster.loft.sh/object-host-name"]
    host["metadata"]["annotations"]["vcluster.loft.sh/object-host-namespace"] = "elsewhere"
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.virtual_metadata is None
    assert sorted(written(plan)) == ["/metadata/annotations/vcluster.loft.sh~1object-host-name",
                                     "/metadata/annotations/vcluster.loft.sh~1object-host-namespace"]
    new = applied(host, plan)["metadata"]["annotations"]
    assert (new["vcluster.loft.sh/object-host-name"], new["vcluster.loft.sh/object-host-namespace"]) \
        == ("web-x-team-x-vc", "vc-ns")


def test_a_host_pod_without_a_base_takes_the_virtual_values_and_returns_nothing() -> None:
    # a host pod synced before the base existed: the virtual pod wins for its keys; host-only keys stay
    v = vpod({"app": "web"}, {"a": "1"})
    host = synced(v)
    del host["metadata"]["annotations"]["vcluster.loft.sh/labels"]
    del host["metadata"]["annotations"]["runtimeclass-syncer.io/synced-annotations"]
    host["metadata"]["labels"]["app"] = "old"
    host["metadata"]["annotations"]["a"] = "old"
    host["metadata"]["annotations"]["host"] = "h"
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.virtual_metadata is None
    new = applied(host, plan)["metadata"]
    assert new["labels"]["app"] == "web"
    assert (new["annotations"]["a"], new["annotations"]["host"]) == ("1", "h")


def test_spec_changes_the_host_accepts() -> None:
    # calcSpecDiff: images by container name, activeDeadlineSeconds, schedulingGates, tolerations (host-only ones
    # carried), ephemeral containers (ephemeral_containers.go: only new ones)
    tol_v = {"key": "gpu", "operator": "Exists"}
    tol_rc = {"key": "sandbox", "operator": "Exists"}  # added on the host by RuntimeClass admission
    before = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}, {"name": "side", "image": "envoy:1"}],
                        "schedulingGates": [{"name": "wait"}]})
    host = synced(before)
    host["spec"]["tolerations"] = [tol_rc]
    host["spec"]["ephemeralContainers"] = [{"name": "debug-1", "image": "busybox"}]
    after = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}, {"name": "side", "image": "envoy:2"}],
                       "activeDeadlineSeconds": 60, "tolerations": [tol_v],
                       "ephemeralContainers": [{"name": "debug-1", "image": "busybox"},
                                               {"name": "debug-2", "image": "busybox"}]})
    plan = plan_update(synced(after), host, after, vcluster_name=VC)
    # the image change comes with the new base of image changes, in the same patch
    assert written(plan)[0] == "/metadata/annotations/runtimeclass-syncer.io~1synced-images"
    assert applied(host, plan)["metadata"]["annotations"]["runtimeclass-syncer.io/synced-images"] == (
        '{"containers/app":"' + hashlib.sha256(b"nginx:1").hexdigest()[:10] + '","containers/side":"'
        + hashlib.sha256(b"envoy:2").hexdigest()[:10] + '"}')
    # a list is replaced whole after a `test` that the host still has it as the cache does
    assert spec_ops(plan) == [
        {"op": "test", "path": "/spec/containers/1/name", "value": "side"},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "envoy:2"},
        {"op": "add", "path": "/spec/activeDeadlineSeconds", "value": 60},
        {"op": "test", "path": "/spec/schedulingGates", "value": [{"name": "wait"}]},
        {"op": "replace", "path": "/spec/schedulingGates", "value": []},
        {"op": "test", "path": "/spec/tolerations", "value": [tol_rc]},
        {"op": "replace", "path": "/spec/tolerations", "value": [tol_v, tol_rc]},
    ]
    assert [c["name"] for c in plan.ephemeral] == ["debug-2"]


def test_scheduling_gates_the_host_added_stay() -> None:
    # the host pod records the gates the virtual pod had at the create; a gate the host's admission added (Kueue's)
    # is not among them and stays; a host pod from before the record gets vcluster's rule (the virtual pod's gates)
    kueue = {"name": "kueue.x-k8s.io/admission"}
    before = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "schedulingGates": [{"name": "wait"}]})
    host = synced(before)
    assert host["metadata"]["annotations"]["runtimeclass-syncer.io/scheduling-gates"] == "wait"
    host["spec"]["schedulingGates"] = [{"name": "wait"}, kueue]
    after = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}]})
    assert plan_update(synced(after), host, after, vcluster_name=VC).host_ops == [
        {"op": "test", "path": "/spec/schedulingGates", "value": [{"name": "wait"}, kueue]},
        {"op": "replace", "path": "/spec/schedulingGates", "value": [kueue]}]
    assert plan_update(synced(before), host, before, vcluster_name=VC).host_ops == []  # nothing dropped yet
    ungated = synced(after)
    assert ungated["metadata"]["annotations"]["runtimeclass-syncer.io/scheduling-gates"] == ""
    ungated["spec"]["schedulingGates"] = [kueue]
    assert plan_update(synced(after), ungated, after, vcluster_name=VC).host_ops == []
    del host["metadata"]["annotations"]["runtimeclass-syncer.io/scheduling-gates"]  # synced before the record
    assert plan_update(synced(after), host, after, vcluster_name=VC).host_ops == [
        {"op": "test", "path": "/spec/schedulingGates", "value": [{"name": "wait"}, kueue]},
        {"op": "replace", "path": "/spec/schedulingGates", "value": []}]


def test_resize_only_the_cpu_and_memory_the_virtual_pod_sets() -> None:
    # syncer.go buildHostPodContainersResourcesResizePatch, narrowed: a host LimitRange's default for what the
    # virtual pod does not set (ephemeral-storage here, limits.memory) is not resized away
    host = synced(vpod())
    host["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "ephemeral-storage": "1Gi"},
                                                  "limits": {"memory": "128Mi"}}
    assert plan_update(synced(vpod(spec={"containers": [{"name": "app", "image": "nginx:1", "resources": {
        "requests": {"cpu": "100m"}}}]})), host, vpod(), vcluster_name=VC).resize == []
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1",
                                   "resources": {"requests": {"cpu": "200m", "ephemeral-storage": "2Gi"}}}]})
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.resize == [{"name": "app", "resources": {"requests": {"cpu": "200m"}}}]
    assert resize_ops(host, plan.resize) == [
        {"op": "test", "path": "/spec/containers/0/name", "value": "app"},
        {"op": "add", "path": "/spec/containers/0/resources", "value": {
            "requests": {"cpu": "200m", "ephemeral-storage": "1Gi"}, "limits": {"memory": "128Mi"}}}]
    # a container's DRA claims (resources.claims, a list) stay: the resize may change cpu and memory only
    # (kubernetes pkg/apis/core/validation ValidatePodResize), and vcluster sends the whole resources
    host["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    assert resize_ops(host, plan.resize)[1]["value"]["claims"] == [{"name": "gpu"}]


def test_readiness_gate_conditions_go_to_the_host_and_stay_on_the_virtual_pod() -> None:
    # diff.go conditionsCopyBidirectional: a condition a controller in the virtual cluster sets reaches the host
    # pod, where the kubelet reads it to decide Ready; the host's other conditions come back as before
    gate = {"type": "example.com/lb", "status": "True"}
    ready = {"type": "Ready", "status": "False"}
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}],
                   "readinessGates": [{"conditionType": "example.com/lb"}]}, status={"conditions": [gate]})
    host = {**synced(v), "status": {"phase": "Running", "conditions": [ready]}}
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    # the gate's condition alone, appended to the list as the cache holds it: the kubelet's (Ready) are not written
    assert plan.host_condition_ops == [{"op": "test", "path": "/status/conditions", "value": [ready]},
                                       {"op": "add", "path": "/status/conditions/-", "value": gate}]
    # the status copy back keeps the gate's condition of the virtual pod
    assert status_update(host, v) == {"status": {"phase": "Running", "conditions": [ready, gate]}}
    host["status"]["conditions"] = [ready, gate]
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_condition_ops == []


def test_the_status_copy_of_a_gated_pod_is_guarded_by_its_conditions_as_the_cache_has_them() -> None:
    # the virtual pod's conditions are written whole (a merge patch replaces a list), so for a pod with readiness
    # gates, whose gate conditions a controller in the virtual cluster writes, the write first tests them
    gate = {"type": "example.com/lb", "status": "True"}
    gates = {"containers": [{"name": "app", "image": "nginx:1"}], "readinessGates": [{"conditionType": gate["type"]}]}
    v = vpod(spec=gates, status={"phase": "Pending", "podIP": "10.0.0.9", "conditions": [gate]})
    host = {**synced(v), "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]}}
    patch = status_update(host, v)
    assert patch is not None
    assert guarded_status_ops(patch, v) == [
        {"op": "test", "path": "/status/conditions", "value": [gate]},
        {"op": "add", "path": "/status/conditions", "value": [{"type": "Ready", "status": "False"}, gate]},
        {"op": "add", "path": "/status/phase", "value": "Running"},
        {"op": "remove", "path": "/status/podIP"}]
    # no gates, or no conditions written: the merge patch as it is
    ungated = vpod(status={"phase": "Pending", "conditions": [gate]})
    assert guarded_status_ops(status_update(host, ungated) or {}, ungated) is None
    assert guarded_status_ops({"status": {"phase": "Running"}}, v) is None
    # no conditions yet (JSON patch cannot test an absent member): the resourceVersion as the cache has it
    fresh = {**v, "metadata": {**v["metadata"], "resourceVersion": "7"},
             "status": {"phase": "Pending", "podIP": "10.0.0.9"}}
    assert guarded_status_ops(patch, fresh) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/status/conditions", "value": [{"type": "Ready", "status": "False"}, gate]},
        {"op": "add", "path": "/status/phase", "value": "Running"},
        {"op": "remove", "path": "/status/podIP"}]
    # no status at all: the same test, then the status added whole without its removals
    assert guarded_status_ops(patch, {**fresh, "status": None}) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/status", "value": {
            "conditions": [{"type": "Ready", "status": "False"}, gate], "phase": "Running"}}]


INITIAL = {"key": "initial", "operator": "Equal", "value": "v1", "effect": "NoSchedule"}
NEW = {"key": "new-key", "operator": "Exists"}
ADMISSION = {"key": "admission-injected", "operator": "Exists"}
LATE = {"key": "late-webhook", "operator": "Exists"}
ENFORCED = {"key": "vcluster-enforced", "operator": "Exists", "effect": "NoExecute"}


@pytest.mark.parametrize(("virtual_tols", "host_tols", "want"), [
    # diff_test.go TestDiffTolerationSync, with `vcluster-enforced:NoExecute` enforced; the rows' VirtualOld is
    # not needed here (level-triggered): the result depends on the virtual pod and the host pod only
    ([INITIAL, NEW], [INITIAL, ENFORCED], [INITIAL, NEW, ENFORCED]),  # "add toleration"
    ([INITIAL], [INITIAL, NEW, ENFORCED], [INITIAL, NEW, ENFORCED]),  # "remove toleration": kept on the host
    ([INITIAL, NEW], [INITIAL], [INITIAL, NEW, ENFORCED]),  # "enforced toleration re-applied"
    ([INITIAL, NEW], [INITIAL, ENFORCED, ADMISSION], [INITIAL, NEW, ENFORCED, ADMISSION]),  # "admission webhook"
    ([INITIAL], [INITIAL], [INITIAL, ENFORCED]),  # "drift recovery: enforced toleration missing"
    ([INITIAL, NEW], [INITIAL, ENFORCED], [INITIAL, NEW, ENFORCED]),  # "drift recovery: virtual toleration missing"
    ([INITIAL, NEW], [INITIAL, ENFORCED, LATE], [INITIAL, NEW, ENFORCED, LATE]),  # "race: ... late webhook"
], ids=["add", "remove", "enforced", "admission", "drift-enforced", "drift-virtual", "race"])
def test_vclusters_toleration_sync_cases(virtual_tols: list[Obj], host_tols: list[Obj], want: list[Obj]) -> None:
    opts = PodOptions.from_config(parse_config({"sync": {"toHost": {"pods": {
        "enforceTolerations": ["vcluster-enforced:NoExecute"]}}}}))
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": virtual_tols})
    desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns", options=opts)
    host = copy.deepcopy(desired)
    host["spec"]["tolerations"] = host_tols
    ops = [op for op in plan_update(desired, host, v, vcluster_name=VC).host_ops if op["path"] == "/spec/tolerations"]
    # vcluster's expectedHostNewTols, in its order (the virtual pod's, the host's others, the enforced ones it
    # lacks); no write when the host pod already has them so
    assert ops == ([] if want == host_tols else [{"op": "test", "path": "/spec/tolerations", "value": host_tols},
                                                 {"op": "replace", "path": "/spec/tolerations", "value": want}])


def test_a_host_pod_as_created_keeps_an_enforced_toleration_its_own_equals_but_for_seconds() -> None:
    # the virtual pod's toleration is the enforced one with tolerationSeconds: both go to the host pod at the
    # create, then the host's DefaultTolerationSeconds admission appends not-ready; nothing to write afterwards
    # (vcluster's calcSpecDiff keeps the host's as they are, compared whole)
    opts = PodOptions.from_config(parse_config({"sync": {"toHost": {"pods": {
        "enforceTolerations": ["vcluster-enforced:NoExecute"]}}}}))
    own = {**ENFORCED, "tolerationSeconds": 30}
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": [own]})
    desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns", options=opts)
    host = copy.deepcopy(desired)
    not_ready = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                 "tolerationSeconds": 300}
    host["spec"]["tolerations"] = [own, ENFORCED, not_ready]
    assert [op for op in plan_update(desired, host, v, vcluster_name=VC).host_ops
            if op["path"] == "/spec/tolerations"] == []


def test_an_enforced_toleration_with_an_empty_value_is_not_added_again() -> None:
    # `key=:Effect` parses to value "" (toleration.go ParseToleration); the API server stores and returns it without
    # the value (omitempty), which apiequality.Semantic.DeepEqual sees as the same toleration: no write, no duplicate
    opts = PodOptions.from_config(parse_config({"sync": {"toHost": {"pods": {
        "enforceTolerations": ["dedicated=:NoSchedule"]}}}}))
    stored = {"key": "dedicated", "operator": "Equal", "effect": "NoSchedule"}
    for virtual_tols in ([], [stored]):
        v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": virtual_tols})
        desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns", options=opts)
        assert len(desired["spec"]["tolerations"]) == 1
        host = copy.deepcopy(desired)
        host["spec"]["tolerations"] = [stored, {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                               "effect": "NoExecute", "tolerationSeconds": 300}]
        assert plan_update(desired, host, v, vcluster_name=VC).host_ops == []


def test_a_toleration_of_zero_seconds_is_not_one_of_for_ever() -> None:
    # tolerationSeconds is a pointer (k8s.io/api core/v1 Toleration): 0 evicts at once, absent tolerates for ever
    # (the taint manager's getMinTolerationTime); apiequality.Semantic.DeepEqual tells them apart, so an enforced
    # `key:NoExecute` is added beside a tenant's 0-second one, and a change between them reaches the host pod
    opts = PodOptions.from_config(parse_config({"sync": {"toHost": {"pods": {
        "enforceTolerations": ["evict:NoExecute"]}}}}))
    zero = {"key": "evict", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": [zero]})
    desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns", options=opts)
    assert desired["spec"]["tolerations"] == [zero, {"key": "evict", "operator": "Exists", "effect": "NoExecute"}]
    forever = {"key": "gpu", "operator": "Exists", "effect": "NoExecute"}
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "tolerations": [forever]})
    host = host_pod(v, vcluster_name=VC, host_namespace="vc-ns")
    v["spec"]["tolerations"] = [{**forever, "tolerationSeconds": 0}]  # Kubernetes lets a pod change it
    desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns")
    ops = [op for op in plan_update(desired, host, v, vcluster_name=VC).host_ops if op["path"] == "/spec/tolerations"]
    assert ops and ops[-1]["value"] == [{**forever, "tolerationSeconds": 0}]
    # and back, or to a longer time: the changed toleration replaces the host's (validateOnlyAddedTolerations lets
    # an existing toleration change its tolerationSeconds); beside it, the shorter would still evict the pod
    for before, after in ((0, None), (300, 600)):
        v["spec"]["tolerations"] = [{**forever, "tolerationSeconds": before}]
        host = host_pod(v, vcluster_name=VC, host_namespace="vc-ns")
        v["spec"]["tolerations"] = [forever if after is None else {**forever, "tolerationSeconds": after}]
        desired = host_pod(v, vcluster_name=VC, host_namespace="vc-ns")
        ops = [op for op in plan_update(desired, host, v, vcluster_name=VC).host_ops
               if op["path"] == "/spec/tolerations"]
        assert ops[-1]["value"] == v["spec"]["tolerations"]


def test_pod_level_resources_are_kept_whatever_the_host_version() -> None:
    # translator_test.go TestPodResourcesTranslation drops spec.resources for a host older than 1.34; here the field
    # is sent and the host decides (docs/vcluster-parity.md row 31): one with PodLevelResources off, the default
    # before 1.34, drops it itself, and the tenant is told (tests/test_pod_parity.py)
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}}
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}], "resources": resources})
    assert synced(v)["spec"]["resources"] == resources


def test_observed_generation_is_copied_as_the_host_has_it() -> None:
    # diff_test.go TestDiffPodStatusObservedGeneration "v1.34" and "nil version": the host's observedGeneration 3,
    # of the status and of its condition, reaches the virtual pod. Its "v1.33" case keeps the virtual 0: different
    # here (row 58), the host's is written whatever the virtual server's version (an older one drops it itself)
    host = {"status": {"observedGeneration": 3, "conditions": [{"type": "Ready", "status": "True",
                                                                "observedGeneration": 3}]}}
    assert status_update(host, vpod(status={})) == host


def test_the_autoscaler_annotations_are_set_once_and_left_to_the_host() -> None:
    # translator.go sets safe-to-evict only when absent, and diff.go never merges it (GetExcludedAnnotations): a
    # host operator's value stays
    v = vpod()
    host = synced(v)
    host["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "true"
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_ops == []


def test_nothing_to_do_for_a_full_pod_in_sync() -> None:
    # every spec row of the table compares equal values as equal (no write per reconcile)
    tol = {"key": "gpu", "operator": "Exists"}
    v = vpod(spec={"initContainers": [{"name": "init", "image": "busybox:1"}],
                   "containers": [{"name": "app", "image": "nginx:1", "resources": {"requests": {"cpu": "1"}}}],
                   "activeDeadlineSeconds": 60, "schedulingGates": [{"name": "g"}], "tolerations": [tol],
                   "ephemeralContainers": [{"name": "dbg", "image": "busybox:1"}]})
    plan = plan_update(synced(v), synced(v), v, vcluster_name=VC)
    assert (plan.host_ops, plan.ephemeral, plan.resize) == ([], [], [])


def test_an_image_the_host_changed_stays_and_one_the_tenant_changed_goes() -> None:
    # The host pod records the images of the last sync (synced-images): a host webhook's image (a registry mirror,
    # a pinned digest) stays while the virtual pod keeps its own; an image the tenant changes goes to the host; a
    # host pod synced before the record gets vcluster's calcSpecDiff rule (every image set to the virtual one).
    v = vpod(spec={"initContainers": [{"name": "init", "image": "busybox:1"}],
                   "containers": [{"name": "app", "image": "nginx:1"}]})
    host = synced(v)
    host["spec"]["initContainers"][0]["image"] = "mirror.example.com/library/busybox:1"
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_ops == []
    changed = vpod(spec={"initContainers": [{"name": "init", "image": "busybox:2"}],
                         "containers": [{"name": "app", "image": "nginx:1"}]})
    plan = plan_update(synced(changed), host, changed, vcluster_name=VC)
    assert spec_ops(plan) == [{"op": "test", "path": "/spec/initContainers/0/name", "value": "init"},
                              {"op": "replace", "path": "/spec/initContainers/0/image", "value": "busybox:2"}]
    # the new base: the first 10 hex digits of each image's SHA-256, by container
    assert applied(host, plan)["metadata"]["annotations"]["runtimeclass-syncer.io/synced-images"] == (
        '{"containers/app":"' + hashlib.sha256(b"nginx:1").hexdigest()[:10]
        + '","initContainers/init":"' + hashlib.sha256(b"busybox:2").hexdigest()[:10] + '"}')
    del host["metadata"]["annotations"]["runtimeclass-syncer.io/synced-images"]  # synced before the record
    assert spec_ops(plan_update(synced(v), host, v, vcluster_name=VC)) == [
        {"op": "test", "path": "/spec/initContainers/0/name", "value": "init"},
        {"op": "replace", "path": "/spec/initContainers/0/image", "value": "busybox:1"}]


def test_a_host_change_of_a_synced_annotation_comes_back() -> None:
    v = vpod(annotations={"a": "1", "b": "1"})
    host = synced(v)
    host["metadata"]["annotations"]["a"] = "2"
    plan = plan_update(synced(v), host, v, vcluster_name=VC)
    assert plan.virtual_metadata == {"metadata": {"resourceVersion": "7", "annotations": {"a": "2"}}}
    # only the base moves
    assert written(plan) == ["/metadata/annotations/runtimeclass-syncer.io~1synced-annotations"]
    assert applied(host, plan)["metadata"]["annotations"]["a"] == "2"


def test_another_vclusters_rewritten_labels_never_come_back() -> None:
    v = vpod({"app": "web"})
    host = synced(v)
    host["metadata"]["labels"]["vcluster.loft.sh/label-other-x-0123456789"] = "x"
    assert plan_update(synced(v), host, v, vcluster_name=VC).virtual_metadata is None


def test_a_stale_gate_condition_on_the_host_is_replaced() -> None:
    v = vpod(spec={"containers": [{"name": "app", "image": "nginx:1"}],
                   "readinessGates": [{"conditionType": "example.com/lb"}]},
             status={"conditions": [{"type": "example.com/lb", "status": "True"}]})
    ready = {"type": "Ready", "status": "False"}
    host = {**synced(v), "status": {"conditions": [ready, {"type": "example.com/lb", "status": "False"}]}}
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_condition_ops == [
        {"op": "test", "path": "/status/conditions/1", "value": {"type": "example.com/lb", "status": "False"}},
        {"op": "replace", "path": "/status/conditions/1", "value": {"type": "example.com/lb", "status": "True"}}]


def test_a_gate_condition_without_the_field_the_host_drops_is_in_sync() -> None:
    # a 1.34 virtual server keeps a condition's observedGeneration; a host before 1.34 drops it
    # (dropDisabledPodStatusFields, pkg/api/pod/util.go), so its condition, the rest equal, already agrees
    gated = {"containers": [{"name": "app", "image": "nginx:1"}],
             "readinessGates": [{"conditionType": "example.com/lb"}]}
    v = vpod(spec=gated, status={"conditions": [{"type": "example.com/lb", "status": "True", "observedGeneration": 2}]})
    ready = {"type": "Ready", "status": "False"}
    host = {**synced(v), "status": {"conditions": [ready, {"type": "example.com/lb", "status": "True"}]}}
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_condition_ops == []
    # any other change is written, observedGeneration with it; so is an observedGeneration the host keeps
    for on_host in ({"type": "example.com/lb", "status": "False"},
                    {"type": "example.com/lb", "status": "True", "observedGeneration": 1},
                    {"type": "example.com/lb", "status": "True", "observedGeneration": 2, "reason": "Old"}):
        host["status"]["conditions"] = [ready, on_host]
        assert plan_update(synced(v), host, v, vcluster_name=VC).host_condition_ops == [
            {"op": "test", "path": "/status/conditions/1", "value": on_host},
            {"op": "replace", "path": "/status/conditions/1",
             "value": {"type": "example.com/lb", "status": "True", "observedGeneration": 2}}], on_host


def test_the_options_of_vclusters_defaults_and_of_a_config() -> None:
    # vcluster's chart defaults (chart/values.yaml), then every key set
    assert PodOptions.from_config(parse_config({})) == PodOptions(
        rewrite_hosts_image="mirror.gcr.io/library/alpine:3.20",
        rewrite_hosts_resources={"limits": {"cpu": "30m", "memory": "64Mi"},
                                 "requests": {"cpu": "30m", "memory": "64Mi"}},
        set_owner=True, cluster_domain="cluster.local", physical_host_paths=False)
    doc = {"networking": {"advanced": {"clusterDomain": "corp.local"}},
           "experimental": {"syncSettings": {"setOwner": False}},
           "controlPlane": {"hostPathMapper": {"enabled": True, "central": True}},
           "sync": {"toHost": {"pods": {"rewriteHosts": {"initContainer": {
               "image": {"registry": "", "repository": "sed", "tag": ""},
               "resources": {"limits": {"cpu": "1"}, "requests": {}}}}}}}}
    opts = PodOptions.from_config(parse_config(doc))
    assert (opts.cluster_domain, opts.set_owner, opts.physical_host_paths) == ("corp.local", False, False)
    assert opts.rewrite_hosts_image == "docker.io/library/sed"  # no registry: Docker Hub, as vcluster's NewTranslator
    assert opts.rewrite_hosts_resources == {"limits": {"cpu": "1"}}


def test_derived_annotations_the_translation_no_longer_has_are_removed() -> None:
    # the virtual pod lost its owner: vcluster's Diff deletes owner-references and owner-set-kind
    owned = vpod()
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                             "uid": "u", "controller": True}]
    host = synced(owned)
    v = vpod()
    new = plan_update(synced(v), host, v, vcluster_name=VC).host_ops[0]["value"]
    assert "vcluster.loft.sh/owner-references" not in new and "vcluster.loft.sh/owner-set-kind" not in new


def test_when_both_sides_change_a_label_the_virtual_pod_wins() -> None:
    before = vpod({"tier": "a"})
    host = synced(before)
    host["metadata"]["labels"]["tier"] = "host"
    after = vpod({"tier": "virtual"})
    plan = plan_update(synced(after), host, after, vcluster_name=VC)
    assert plan.virtual_metadata is None
    assert applied(host, plan)["metadata"]["labels"]["tier"] == "virtual"


def test_a_label_the_tenant_changed_is_kept_when_the_host_removed_it() -> None:
    # both sides moved from the base: the virtual pod wins (as when both change it), so the label is not taken
    # from the virtual pod because the host dropped it
    before = vpod({"app": "web", "tier": "a"})
    host = synced(before)
    del host["metadata"]["labels"]["tier"]
    after = vpod({"app": "web", "tier": "b"})
    plan = plan_update(synced(after), host, after, vcluster_name=VC)
    assert plan.virtual_metadata is None
    assert applied(host, plan)["metadata"]["labels"]["tier"] == "b"


def test_label_values_with_an_equals_sign_survive_the_base() -> None:
    v = vpod({"expr": "a=b"})
    host = synced(v)
    assert host["metadata"]["annotations"]["vcluster.loft.sh/labels"] == 'expr="a=b"'
    assert plan_update(synced(v), host, v, vcluster_name=VC).host_ops == []
