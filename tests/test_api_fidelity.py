"""The test API server refuses what a real kube-apiserver refuses, with its messages (validation.py
names the Kubernetes function of each rule), and the registry semantics of pods/binding and graceful
deletion. Everything here goes over real HTTP with the real client."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
from typing import Any

import aiohttp
import pytest

from kubesim import admission
from kubesim.tokens import whoami
from syncer.kube.client import ApiError
from syncer.kube.resources import CONFIGMAPS, NAMESPACES, PODS, RUNTIMECLASSES, SECRETS, SERVICEACCOUNTS, SERVICES
from tests.conftest import Clusters, eventually, pod, rc

Obj = dict[str, Any]
NS = "default"
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def with_spec(**changes: Any) -> Obj:
    p = pod("p")
    p["spec"].update(changes)
    return p


def container(name: str = "app", **fields: Any) -> Obj:
    return {"name": name, "image": "nginx:1.27", **fields}


# (what, the pod, the exact 422 message after `Pod "p" is invalid: `)
CREATE_CASES: list[tuple[str, Obj, str]] = [
    ("hostname with dots", with_spec(hostname="a.b"), 'spec.hostname: Invalid value: "a.b": must not contain dots'),
    ("hostname over 63", with_spec(hostname="h" * 64),
     f'spec.hostname: Invalid value: "{"h" * 64}": must be no more than 63 characters'),
    ("subdomain upper case", with_spec(subdomain="Web"), f'spec.subdomain: Invalid value: "Web": {LABEL_MSG}'),
    ("container name", with_spec(containers=[container("App")]),
     f'spec.containers[0].name: Invalid value: "App": {LABEL_MSG}'),
    ("container names unique across init and app containers",
     with_spec(initContainers=[container("app")], containers=[container("app")]),
     'spec.containers[0].name: Duplicate value: "app"'),
    ("image required", with_spec(containers=[{"name": "app"}]), "spec.containers[0].image: Required value"),
    ("volume names unique", with_spec(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
     'spec.volumes[1].name: Duplicate value: "v"'),
    ("volume name a label", with_spec(volumes=[{"name": "a.b", "emptyDir": {}}]),
     'spec.volumes[0].name: Invalid value: "a.b": must not contain dots'),
    ("mount of a missing volume", with_spec(containers=[container(volumeMounts=[{"name": "x", "mountPath": "/x"}])]),
     'spec.containers[0].volumeMounts[0].name: Not found: "x"'),
    ("env var name", with_spec(containers=[container(env=[{"name": "A=B", "value": "1"}])]),
     'spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of '
     "printable ASCII characters other than '='"),
    ("env fieldRef path", with_spec(containers=[container(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.labels"}}}])]),
     'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "metadata.labels": supported '
     'values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
     '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"'),
    ("dnsPolicy None needs nameservers", with_spec(dnsPolicy="None", dnsConfig={"searches": ["a.b"]}),
     "spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"),
    ("at most 3 nameservers", with_spec(dnsConfig={"nameservers": ["1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"]}),
     'spec.dnsConfig.nameservers: Invalid value: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}: must not have '
     "more than 3 nameservers"),
    ("nameserver an IP", with_spec(dnsConfig={"nameservers": ["dns.local"]}),
     'spec.dnsConfig.nameservers[0]: Invalid value: "dns.local": must be a valid IP address'),
    ("at most 32 searches", with_spec(dnsConfig={"searches": [f"s{i}" for i in range(33)]}),
     "spec.dnsConfig.searches: Invalid value: []string{" + ", ".join(f'"s{i}"' for i in range(33))
     + "}: must not have more than 32 search paths"),
    ("dnsPolicy", with_spec(dnsPolicy="Cluster"), 'spec.dnsPolicy: Unsupported value: "Cluster": supported values: '
                                                 '"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"'),
    ("activeDeadlineSeconds", with_spec(activeDeadlineSeconds=0),
     "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"),
    ("toleration Exists with a value", with_spec(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     "spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"),
    ("tolerationSeconds needs NoExecute",
     with_spec(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]),
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` "
     "is set"),
    ("toleration effect", with_spec(tolerations=[{"key": "k", "operator": "Exists", "effect": "Never"}]),
     'spec.tolerations[0].effect: Unsupported value: "Never": supported values: "NoSchedule", "PreferNoSchedule", '
     '"NoExecute"'),
    ("restartPolicy", with_spec(restartPolicy="Sometimes"), 'spec.restartPolicy: Unsupported value: "Sometimes": '
                                                            'supported values: "Always", "Never", "OnFailure"'),
    ("nodeSelector key", with_spec(nodeSelector={"-bad": "x"}),
     "spec.nodeSelector: Invalid value: \"-bad\": name part must consist of alphanumeric characters, '-', '_' or "
     "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
     "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ("search path", with_spec(dnsConfig={"searches": ["Bad_Domain"]}),
     'spec.dnsConfig.searches[0]: Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain must consist of lower '
     "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
     "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ("dns option name", with_spec(dnsConfig={"options": [{"value": "2"}]}),
     "spec.dnsConfig.options[0].name: Required value"),
    ("downward API volume path", with_spec(volumes=[{"name": "i", "downwardAPI": {"items": [
        {"path": "x", "fieldRef": {"fieldPath": "spec.nodeName"}}]}}]),
     'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported '
     'values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"'),
    ("token projection expiry", with_spec(volumes=[{"name": "t", "projected": {"sources": [
        {"serviceAccountToken": {"path": "token", "expirationSeconds": 60}}]}}]),
     "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds: Invalid value: 60: may not "
     "specify a duration less than 10 minutes"),
    ("env value and valueFrom", with_spec(containers=[container(env=[{"name": "A", "value": "x", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.name"}}}])]),
     'spec.containers[0].env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'),
    ("unique mount paths", with_spec(volumes=[{"name": "a", "emptyDir": {}}, {"name": "b", "emptyDir": {}}],
                                     containers=[container(volumeMounts=[{"name": "a", "mountPath": "/x"},
                                                                         {"name": "b", "mountPath": "/x"}])]),
     'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/x": must be unique'),
    ("label value", {**pod("p"), "metadata": {"name": "p", "labels": {"a": "-x"}}},
     'metadata.labels: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric '
     "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
     "'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ("annotation key", {**pod("p"), "metadata": {"name": "p", "annotations": {"a b": "x"}}},
     "metadata.annotations: Invalid value: \"a b\": name part must consist of alphanumeric characters, '-', '_' or "
     "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
     "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    # kubernetes' ValidatePodCreate: ephemeral containers come through pods/ephemeralcontainers only
    ("ephemeral containers", with_spec(ephemeralContainers=[{"name": "debugger", "image": "busybox:1.36"}]),
     "spec.ephemeralContainers: Forbidden: cannot be set on create"),
]


@pytest.mark.parametrize(("what", "manifest", "message"), CREATE_CASES, ids=[c[0] for c in CREATE_CASES])
async def test_pod_create_is_validated_like_kube_apiserver(clusters: Clusters, what: str, manifest: Obj,
                                                           message: str) -> None:
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, copy.deepcopy(manifest), NS)
    assert err.value.status == 422 and err.value.reason == "Invalid", what
    assert err.value.message == f'Pod "p" is invalid: {message}'


async def test_several_errors_are_listed_with_their_causes(clusters: Clusters) -> None:
    bad = with_spec(hostname="a.b", activeDeadlineSeconds=0)
    resp = await clusters.host.api.call_api(PODS.path(NS), "POST", header_params={"Content-Type": "application/json"},
                                            body=bad, _preload_content=False)
    status = await resp.json()
    assert resp.status == 422
    assert status["message"] == ('Pod "p" is invalid: [spec.hostname: Invalid value: "a.b": must not contain dots, '
                                 "spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, "
                                 "inclusive]")
    assert status["details"]["kind"] == "Pod" and status["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "a.b": must not contain dots',
         "field": "spec.hostname"},
        {"reason": "FieldValueInvalid", "message": "Invalid value: 0: must be between 1 and 2147483647, inclusive",
         "field": "spec.activeDeadlineSeconds"}]


async def test_pod_update_rules(clusters: Clusters) -> None:
    await clusters.host.create(PODS, with_spec(activeDeadlineSeconds=100, automountServiceAccountToken=False,
                                               tolerations=[{"key": "k", "operator": "Exists"}]), NS)
    # allowed: an image, a lower deadline, an added toleration (after the ones DefaultTolerationSeconds added)
    await clusters.host.patch(PODS, "p", {"spec": {"containers": [container(image="nginx:1.28")],
                                                   "activeDeadlineSeconds": 50}}, NS)
    await clusters.host.patch(PODS, "p", [{"op": "add", "path": "/spec/tolerations/-",
                                           "value": {"key": "j", "operator": "Exists"}}], NS, patch_type="json")
    # allowed: an existing toleration's tolerationSeconds changed (validateOnlyAddedTolerations copies each new
    # toleration's onto the old one's clone before it compares them)
    tols = (await clusters.host.get(PODS, "p", NS))["spec"]["tolerations"]
    noexec = [i for i, t in enumerate(tols) if t.get("tolerationSeconds") == 300]
    assert noexec, tols  # DefaultTolerationSeconds' not-ready/unreachable tolerations
    changed = [{**t, "tolerationSeconds": 30} if i in noexec else t for i, t in enumerate(tols)]
    stored = await clusters.host.patch(PODS, "p", {"spec": {"tolerations": changed}}, NS)
    assert stored["spec"]["tolerations"] == changed
    refused = [
        ({"spec": {"activeDeadlineSeconds": 60}},
         "spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value"),
        ({"spec": {"activeDeadlineSeconds": None}},
         "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value"),
        ({"spec": {"tolerations": [{"key": "j", "operator": "Exists"}]}},
         "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"),
        ({"spec": {"hostname": "other"}},
         "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
         "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
         "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        # ValidatePodSpecificAnnotationUpdates: AppArmor and mirror pod annotations are fixed once the pod exists
        ({"metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}}},
         "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]: Forbidden: may not add AppArmor "
         "annotations"),
        ({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}},
         "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation"),
    ]
    for patch, message in refused:
        with pytest.raises(ApiError) as err:
            await clusters.host.patch(PODS, "p", patch, NS)
        assert (err.value.status, err.value.message) == (422, f'Pod "p" is invalid: {message}')


@pytest.mark.parametrize(("minor", "kept"), [(32, False), (33, False), (34, True)])
async def test_pod_level_resources_are_dropped_silently_before_1_34(clusters: Clusters, minor: int,
                                                                     kept: bool) -> None:
    # kube_features.go: PodLevelResources alpha (off) in 1.32 and 1.33, beta (on) from 1.34; pkg/api/pod/util.go
    # dropDisabledPodLevelResources clears spec.resources of a new pod while it is off: the create succeeds
    clusters.host_server.minor = minor
    resources = {"limits": {"cpu": "1", "memory": "1Gi"}}
    created = await clusters.host.create(PODS, with_spec(resources=resources), NS)
    assert created["spec"].get("resources") == (resources if kept else None)
    version = await clusters.host.api.call_api("/version", "GET", _preload_content=False)
    assert (await version.json())["minor"] == str(minor)


@pytest.mark.parametrize(("minor", "kept"), [(33, False), (34, True)])
async def test_pod_observed_generation_is_dropped_silently_before_1_34(clusters: Clusters, minor: int,
                                                                        kept: bool) -> None:
    # kube_features.go: PodObservedGenerationTracking alpha (off) in 1.33, beta (on) from 1.34; pkg/api/pod/util.go
    # dropDisabledPodStatusFields clears status.observedGeneration and the conditions' while it is off
    clusters.host_server.minor = minor
    await clusters.host.create(PODS, with_spec(), NS)
    status = {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True", "observedGeneration": 1}]}
    stored = await clusters.host.patch(PODS, "p", {"status": status}, NS, subresource="status")
    got = {k: v for k, v in stored["status"].items() if k in ("observedGeneration", "conditions")}
    assert got == (status if kept else {"conditions": [{"type": "Ready", "status": "True"}]})


@pytest.mark.parametrize(("minor", "kept"), [(32, False), (33, True)])
async def test_pod_host_users_is_dropped_silently_before_1_33(clusters: Clusters, minor: int, kept: bool) -> None:
    # kube_features.go: UserNamespacesSupport beta but off in 1.30-1.32, on from 1.33; pkg/api/pod/util.go
    # dropDisabledFields clears hostUsers of a new pod while it is off (unless the old pod uses it), dry run or not
    clusters.host_server.minor = minor
    asked = await clusters.host.create(PODS, with_spec(hostUsers=False), NS, dry_run=True)
    created = await clusters.host.create(PODS, with_spec(hostUsers=False), NS)
    assert asked["spec"].get("hostUsers") == created["spec"].get("hostUsers") == (False if kept else None)
    assert [p["metadata"]["name"] for p in (await clusters.host.list(PODS, NS))["items"]] == ["p"]  # stored once


async def test_runtime_class_validation(clusters: Clusters) -> None:
    with pytest.raises(ApiError) as err:
        await clusters.host.create(RUNTIMECLASSES, rc("x", "run.sc"))
    assert err.value.message == 'RuntimeClass.node.k8s.io "x" is invalid: handler: Invalid value: "run.sc": must not ' \
                                "contain dots"
    await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc"))
    with pytest.raises(ApiError) as err:
        await clusters.host.patch(RUNTIMECLASSES, "x", {"handler": "kata"})
    assert err.value.message == 'RuntimeClass.node.k8s.io "x" is invalid: handler: Invalid value: "kata": field is ' \
                                "immutable"


async def test_a_runtime_class_update_must_name_its_resource_version(clusters: Clusters) -> None:
    # RuntimeClass's registry strategy does not AllowUnconditionalUpdate (kubernetes pkg/registry/node/
    # runtimeclass/strategy.go), so the generic Store.Update refuses a PUT without a resourceVersion, naming the
    # plural as the kind and the uint64 0 as %#v; a ConfigMap's strategy allows it (the stored version is taken)
    stored = await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc"))
    update = copy.deepcopy(stored)
    del update["metadata"]["resourceVersion"]
    update["metadata"]["labels"] = {"tier": "1"}
    with pytest.raises(ApiError) as err:
        await clusters.host.replace(RUNTIMECLASSES, update)
    assert (err.value.status, err.value.message) == (
        422, 'runtimeclasses.node.k8s.io "x" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be '
             "specified for an update")
    update["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
    assert (await clusters.host.replace(RUNTIMECLASSES, update))["metadata"]["labels"] == {"tier": "1"}
    cm = await clusters.host.create(CONFIGMAPS, {"metadata": {"name": "c"}, "data": {"a": "1"}}, NS)
    del cm["metadata"]["resourceVersion"]
    cm["data"] = {"a": "2"}
    assert (await clusters.host.replace(CONFIGMAPS, cm, NS))["data"] == {"a": "2"}


async def test_non_string_annotation_values_are_refused(clusters: Clusters) -> None:
    bad = rc("x")
    bad["metadata"]["annotations"] = {"a": {}}
    with pytest.raises(ApiError) as err:  # create: the typed decode fails (400)
        await clusters.host.create(RUNTIMECLASSES, bad)
    assert (err.value.status, err.value.message) == (400, 'RuntimeClass in version "v1" cannot be handled as a '
                                                          "RuntimeClass: json: cannot unmarshal object into Go "
                                                          "struct field ObjectMeta.metadata.annotations of type string")
    await clusters.host.create(RUNTIMECLASSES, rc("x"))
    resp = await clusters.host.api.call_api(
        RUNTIMECLASSES.path(None, "x"), "PATCH", header_params={"Content-Type": "application/merge-patch+json"},
        body={"metadata": {"annotations": {"a": 1}}}, _preload_content=False)
    status = await resp.json()  # a patch: 422 with the cause on the field "patch", as the patch handler says
    assert resp.status == 422 and status["reason"] == "Invalid"
    (cause,) = status["details"]["causes"]
    assert cause["field"] == "patch" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].endswith("json: cannot unmarshal number into Go struct field ObjectMeta.metadata."
                                     "annotations of type string")


async def test_binding_sets_the_node_once(clusters: Clusters) -> None:
    await clusters.host.create(PODS, pod("p"), NS)
    await clusters.host.bind("p", NS, "node-1")
    bound = await clusters.host.get(PODS, "p", NS)
    assert bound["spec"]["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= bound["status"]["conditions"][-1].items()
    with pytest.raises(ApiError) as err:
        await clusters.host.bind("p", NS, "node-2")
    assert (err.value.status, err.value.message) == (
        409, 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "node-1"')
    assert err.value.resource == "pods/binding" and err.value.verb == "create"
    assert (await clusters.host.get(PODS, "p", NS))["spec"]["nodeName"] == "node-1"


async def test_a_pod_with_scheduling_gates_is_not_bound(clusters: Clusters) -> None:
    # BindingREST.setPodNodeAndMetadata (pkg/registry/core/pod/storage/storage.go), "Reject binding to a scheduling
    # un-ready Pod", through errors.NewConflict(api.Resource("pods/binding"), ...); the message as its
    # TestEtcdCreateWithSchedulingGates expects it
    await clusters.host.create(PODS, pod("foo", schedulingGates=[{"name": "foo"}, {"name": "bar"}]), NS)
    with pytest.raises(ApiError) as err:
        await clusters.host.bind("foo", NS, "node-1")
    assert (err.value.status, err.value.reason, err.value.message) == (
        409, "Conflict", 'Operation cannot be fulfilled on pods/binding "foo": pod foo has non-empty '
                         '.spec.schedulingGates')
    assert "nodeName" not in (await clusters.host.get(PODS, "foo", NS))["spec"]
    await clusters.host.patch(PODS, "foo", {"spec": {"schedulingGates": None}}, NS)
    await clusters.host.bind("foo", NS, "node-1")
    assert (await clusters.host.get(PODS, "foo", NS))["spec"]["nodeName"] == "node-1"



async def test_a_create_is_admitted_and_validated_before_the_name_is_found_taken(clusters: Clusters) -> None:
    # kube-apiserver's order: mutating admission and webhooks, the strategy's PrepareForCreate, validation, validating
    # admission, and only then the storage's AlreadyExists (endpoints/handlers/create.go; registry Store.Create),
    # which says when the object holding the name is terminating: "object is being deleted: ..."
    await clusters.host.create(PODS, pod("p"), NS)
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, with_spec(hostname="a.b"), NS)
    assert (err.value.status, err.value.message) == (
        422, 'Pod "p" is invalid: spec.hostname: Invalid value: "a.b": must not contain dots')
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, pod("p"), NS)
    assert (err.value.status, err.value.message) == (409, 'pods "p" already exists')
    await clusters.host.bind("p", NS, "node-1")
    await clusters.host.delete(PODS, "p", NS, grace_period_seconds=30)  # bound: terminating for 30 s
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, pod("p"), NS)
    assert (err.value.status, err.value.message) == (409, 'object is being deleted: pods "p" already exists')

async def test_graceful_deletion_as_the_pod_registry(clusters: Clusters) -> None:
    await clusters.host.create(PODS, pod("unscheduled"), NS)
    await clusters.host.delete(PODS, "unscheduled", NS, grace_period_seconds=30)
    with pytest.raises(ApiError) as err:  # never scheduled: gone at once whatever the grace period
        await clusters.host.get(PODS, "unscheduled", NS)
    assert err.value.not_found

    await clusters.host.create(PODS, pod("running"), NS)
    await clusters.host.bind("running", NS, "node-1")
    await clusters.host.delete(PODS, "running", NS, grace_period_seconds=20)
    meta = (await clusters.host.get(PODS, "running", NS))["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 20 and meta["deletionTimestamp"]

    await clusters.host.create(PODS, pod("done"), NS)
    await clusters.host.bind("done", NS, "node-1")
    await clusters.host.patch(PODS, "done", {"status": {"phase": "Succeeded"}}, NS, subresource="status")
    await clusters.host.delete(PODS, "done", NS, grace_period_seconds=20)
    with pytest.raises(ApiError) as err:  # finished: nothing left to stop, gone at once
        await clusters.host.get(PODS, "done", NS)
    assert err.value.not_found


async def test_a_graceful_deletion_may_only_be_shortened_and_ends_with_the_last_finalizer(clusters: Clusters) -> None:
    # rest.BeforeDelete (staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go): a first graceful delete sets
    # deletionTimestamp = now + period and bumps the generation; "if we are already being deleted, we may only shorten
    # the deletion grace period": newDeletionTimestamp = deletionTimestamp - deletionGracePeriodSeconds + period; a
    # period not shorter leaves it pending. With the period at 0 the pod stays for its finalizers only, and goes with
    # the last of them (ShouldDeleteDuringUpdate: no finalizers, a deletion grace period of 0).
    p = pod("p")
    p["metadata"]["finalizers"] = ["example.com/hold"]
    await clusters.host.create(PODS, p, NS)
    await clusters.host.bind("p", NS, "node-1")
    await clusters.host.delete(PODS, "p", NS, grace_period_seconds=30)
    first = (await clusters.host.get(PODS, "p", NS))["metadata"]
    assert (first["deletionGracePeriodSeconds"], first["generation"]) == (30, 2)
    await clusters.host.delete(PODS, "p", NS, grace_period_seconds=45)  # not shorter: pending, nothing changes
    assert (await clusters.host.get(PODS, "p", NS))["metadata"] == first
    await clusters.host.delete(PODS, "p", NS, grace_period_seconds=10)
    meta = (await clusters.host.get(PODS, "p", NS))["metadata"]
    when = dt.datetime.fromisoformat(first["deletionTimestamp"])
    assert (meta["deletionGracePeriodSeconds"], meta["generation"]) == (10, 2)
    assert dt.datetime.fromisoformat(meta["deletionTimestamp"]) == when - dt.timedelta(seconds=20)
    await clusters.host.delete(PODS, "p", NS, grace_period_seconds=0)  # the kubelet's last delete
    meta = (await clusters.host.get(PODS, "p", NS))["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 0
    assert dt.datetime.fromisoformat(meta["deletionTimestamp"]) == when - dt.timedelta(seconds=30)
    await clusters.host.patch(PODS, "p", {"metadata": {"finalizers": None}}, NS)
    with pytest.raises(ApiError) as err:
        await clusters.host.get(PODS, "p", NS)
    assert err.value.not_found


async def test_a_pod_delete_is_watched_as_an_update_then_a_deletion(clusters: Clusters) -> None:
    # Store.updateForGracefulDeletionAndFinalizers (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/
    # store.go) writes what rest.BeforeDelete set (deletionTimestamp, deletionGracePeriodSeconds) through
    # GuaranteedUpdate before Store.Delete removes the object when the period is 0 (lastGraceful == 0): MODIFIED, then
    # DELETED. The pod strategy's CheckGracefulDelete (pkg/registry/core/pod/strategy.go) makes the period 0 for a pod
    # with no spec.nodeName; the kubelet's last delete (grace 0) shortens a pending one to 0. An object with finalizers
    # is only updated (markAsDeleting: deletionGracePeriodSeconds 0).
    h = clusters.host
    await h.create(PODS, pod("unscheduled"), NS)
    await h.create(PODS, pod("running"), NS)
    await h.bind("running", NS, "node-1")
    await h.create(CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, NS)
    start = (await h.list(PODS, NS))["metadata"]["resourceVersion"]
    await h.delete(PODS, "unscheduled", NS, grace_period_seconds=30)
    await h.delete(PODS, "running", NS, grace_period_seconds=20)
    await h.delete(PODS, "running", NS, grace_period_seconds=0)  # the kubelet's last delete
    seen: list[tuple[str, str, int | None, bool]] = []
    async for ev in h.watch(PODS, start, NS, timeout_seconds=5, bookmarks=False):
        meta = ev.object["metadata"]
        seen.append((ev.type, meta["name"], meta.get("deletionGracePeriodSeconds"), "deletionTimestamp" in meta))
        if len(seen) == 5:
            break
    assert seen == [("MODIFIED", "unscheduled", 0, True), ("DELETED", "unscheduled", 0, True),
                    ("MODIFIED", "running", 20, True), ("MODIFIED", "running", 0, True),
                    ("DELETED", "running", 0, True)]
    cm_start = (await h.list(CONFIGMAPS, NS))["metadata"]["resourceVersion"]
    await h.delete(CONFIGMAPS, "held", NS)
    async for ev in h.watch(CONFIGMAPS, cm_start, NS, timeout_seconds=5, bookmarks=False):
        meta = ev.object["metadata"]
        assert (ev.type, meta["name"], meta.get("deletionGracePeriodSeconds")) == ("MODIFIED", "held", 0)
        assert meta["deletionTimestamp"]
        break


async def test_metadata_only_lists_and_watches(clusters: Clusters) -> None:
    await clusters.host.create(SECRETS, {"metadata": {"name": "s", "labels": {"a": "b"}},
                                         "stringData": {"password": "x"}}, NS)
    listed = await clusters.host.list(SECRETS, NS, metadata_only=True)
    assert listed["kind"] == "PartialObjectMetadataList" and listed["apiVersion"] == "meta.k8s.io/v1"
    (item,) = [i for i in listed["items"] if i["metadata"]["name"] == "s"]
    assert item == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": item["metadata"]}
    stored = await clusters.host.get(SECRETS, "s", NS)
    assert stored["data"] == {"password": "eA=="} and "stringData" not in stored  # stringData is write-only
    await clusters.host.patch(SECRETS, "s", {"metadata": {"labels": {"a": "c"}}}, NS)
    async for ev in clusters.host.watch(SECRETS, listed["metadata"]["resourceVersion"], NS, metadata_only=True):
        assert ev.object["kind"] == "PartialObjectMetadata" and "data" not in ev.object
        assert ev.object["metadata"]["labels"] == {"a": "c"}
        break


async def test_namespaces_get_a_default_service_account_and_the_root_ca(clusters: Clusters) -> None:
    await clusters.host.create(NAMESPACES, {"metadata": {"name": "team"}})
    assert (await clusters.host.get(SERVICEACCOUNTS, "default", "team"))["metadata"]["name"] == "default"
    ca = await clusters.host.get(CONFIGMAPS, "kube-root-ca.crt", "team")
    assert "BEGIN CERTIFICATE" in ca["data"]["ca.crt"]


async def test_namespaces_are_labelled_with_their_name_on_create_and_update(clusters: Clusters) -> None:
    # kubernetes.io/metadata.name (v1.LabelMetadataName), set to the name on every write since 1.21:
    # SetDefaults_Namespace (pkg/apis/core/v1/defaults.go) and namespaceStrategy.Canonicalize (pkg/registry/core/
    # namespace/strategy.go), which also covers a name made from generateName; a different value or its removal is
    # overwritten
    h = clusters.host
    created = await h.create(NAMESPACES, {"metadata": {"name": "team", "labels": {
        "kubernetes.io/metadata.name": "other", "tier": "a"}}})
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team", "tier": "a"}
    generated = await h.create(NAMESPACES, {"metadata": {"generateName": "gen-"}})
    assert generated["metadata"]["labels"] == {"kubernetes.io/metadata.name": generated["metadata"]["name"]}
    patched = await h.patch(NAMESPACES, "team", {"metadata": {"labels": {"kubernetes.io/metadata.name": None}}})
    assert patched["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team", "tier": "a"}
    body = copy.deepcopy(patched)
    body["metadata"]["labels"] = {"kubernetes.io/metadata.name": "x"}
    assert (await h.replace(NAMESPACES, body))["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert (await h.get(NAMESPACES, "kube-system"))["metadata"]["labels"] == {
        "kubernetes.io/metadata.name": "kube-system"}
    listed = await h.list(NAMESPACES, label_selector="kubernetes.io/metadata.name=team")
    assert [n["metadata"]["name"] for n in listed["items"]] == ["team"]


async def test_services_get_cluster_ips(clusters: Clusters) -> None:
    a = await clusters.host.create(SERVICES, {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}, NS)
    b = await clusters.host.create(SERVICES, {"metadata": {"name": "b"}, "spec": {"ports": [{"port": 80}]}}, NS)
    h = await clusters.host.create(SERVICES, {"metadata": {"name": "h"}, "spec": {"clusterIP": "None"}}, NS)
    ips = {a["spec"]["clusterIP"], b["spec"]["clusterIP"]}
    assert len(ips) == 2 and all(ip.startswith("10.96.") for ip in ips) and h["spec"]["clusterIP"] == "None"
    assert a["spec"]["ports"][0]["protocol"] == "TCP"
    with pytest.raises(ApiError) as err:
        await clusters.host.create(SERVICES, {"metadata": {"name": "c"}, "spec": {"clusterIP": a["spec"]["clusterIP"]}},
                                   NS)
    assert err.value.status == 422 and "provided IP is already allocated" in err.value.message


async def test_a_token_projection_without_an_expiration_gets_an_hour(clusters: Clusters) -> None:
    # SetDefaults_ServiceAccountTokenProjection (pkg/apis/core/v1/defaults.go): expirationSeconds 3600 when unset;
    # one that is set stays as it is
    p = pod("p")
    p["spec"]["automountServiceAccountToken"] = False
    p["spec"]["volumes"] = [{"name": "t", "projected": {"sources": [
        {"serviceAccountToken": {"path": "a"}}, {"serviceAccountToken": {"path": "b", "expirationSeconds": 600}}]}}]
    created = await clusters.host.create(PODS, p, NS)
    assert [s["serviceAccountToken"]["expirationSeconds"] for s in created["spec"]["volumes"][0]["projected"][
        "sources"]] == [3600, 600]


async def test_service_account_admission(clusters: Clusters) -> None:
    created = await clusters.host.create(PODS, pod("p"), NS)
    spec = created["spec"]
    assert spec["serviceAccountName"] == "default"
    (vol,) = spec["volumes"]
    assert vol["name"].startswith("kube-api-access-")
    assert [s for s in vol["projected"]["sources"] if "serviceAccountToken" in s] == [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": vol["name"], "readOnly": True,
                                                      "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]
    quiet = await clusters.host.create(PODS, {**pod("q"), "spec": {**pod("q")["spec"],
                                                                   "automountServiceAccountToken": False}}, NS)
    assert "volumes" not in quiet["spec"]
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, {**pod("r"), "spec": {**pod("r")["spec"], "serviceAccountName": "nope"}}, NS)
    assert (err.value.status, err.value.message) == (403, 'pods "r" is forbidden: error looking up service account '
                                                          'default/nope: serviceaccount "nope" not found')


async def test_token_requests_and_bearer_authentication(clusters: Clusters) -> None:
    p = await clusters.host.create(PODS, pod("p"), NS)
    req = {"spec": {"audiences": ["vault"], "expirationSeconds": 600,
                    "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": p["metadata"]["uid"]}}}
    answer = await clusters.host.token_request(NS, "default", req)
    assert answer["kind"] == "TokenRequest" and answer["status"]["expirationTimestamp"]
    assert await whoami(clusters.host, answer["status"]["token"]) == "system:serviceaccount:default:default"
    assert (await whoami(clusters.host, answer["status"]["token"][:-2] + "xx")).startswith("an error: HTTP 401")
    for bad, status in (({"spec": {"expirationSeconds": 60}}, 422),
                        ({"spec": {"boundObjectRef": {"kind": "Pod", "name": "p", "uid": "other"}}}, 409),
                        ({"spec": {"boundObjectRef": {"kind": "Pod", "name": "gone"}}}, 404)):
        with pytest.raises(ApiError) as err:
            await clusters.host.token_request(NS, "default", bad)
        assert err.value.status == status
    with pytest.raises(ApiError) as err:
        await clusters.host.token_request(NS, "missing", req)
    assert err.value.not_found


async def test_a_dry_run_token_request_still_issues_a_token(clusters: Clusters) -> None:
    # TokenREST.Create (pkg/registry/core/serviceaccount/storage/token.go) never reads options.DryRun: a TokenRequest
    # stores nothing, so dryRun=All changes nothing and the answer carries a real, signed token. Only the create
    # handler's ValidateCreateOptions (apiserver pkg/endpoints/handlers/create.go) looks at it: an unknown value is 422.
    url = f"{clusters.host_server.url}/api/v1/namespaces/{NS}/serviceaccounts/default/token"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{url}?dryRun=All", json=body) as r:
            answer = await r.json()
            assert (r.status, answer["kind"]) == (201, "TokenRequest")
        async with http.post(f"{url}?dryRun=x", json=body) as r:
            status = await r.json()
            assert (r.status, status["message"]) == (422, 'CreateOptions.meta.k8s.io "" is invalid: dryRun: '
                                                          'Unsupported value: []string{"x"}: supported values: "All"')
    assert await whoami(clusters.host, answer["status"]["token"]) == "system:serviceaccount:default:default"


async def test_a_token_request_is_refused_as_the_token_rest_refuses_it(clusters: Clusters) -> None:
    # pkg/registry/core/serviceaccount/storage/token.go (TokenREST.Create): a pod bound to must run as the service
    # account (400), a uid given must be the bound object's (errors.NewConflict on schema.GroupResource{Group:
    # gvk.Group, Resource: gvk.Kind}); ValidateTokenRequest (pkg/apis/authentication/validation) through
    # errors.NewInvalid(gvk.GroupKind(), "", errs); a kind other than Pod, Secret or Node is a 400 naming its
    # schema.GroupVersionKind
    await clusters.host.create(SERVICEACCOUNTS, {"metadata": {"name": "builder"}}, NS)
    p = await clusters.host.create(PODS, pod("p", automountServiceAccountToken=False), NS)
    s = await clusters.host.create(SECRETS, {"metadata": {"name": "s"}}, NS)
    ref = {"kind": "Pod", "apiVersion": "v1", "name": "p"}
    for sa, spec, status, message in (
            ("builder", {"boundObjectRef": ref}, 400,
             'cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.'),
            ("default", {"boundObjectRef": {**ref, "uid": "other"}}, 409,
             'Operation cannot be fulfilled on Pod "p": the UID in the bound object reference (other) does not match '
             "the UID in record. The object might have been deleted and then recreated"),
            ("default", {"boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s", "uid": "other"}}, 409,
             'Operation cannot be fulfilled on Secret "s": the UID in the bound object reference (other) does not '
             "match the UID in record. The object might have been deleted and then recreated"),
            ("default", {"boundObjectRef": {"kind": "Deployment", "apiVersion": "apps/v1", "name": "d"}}, 400,
             "cannot bind token to object of type apps/v1, Kind=Deployment"),
            ("default", {"expirationSeconds": 599}, 422,
             'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not '
             "specify a duration less than 10 minutes")):
        with pytest.raises(ApiError) as err:
            await clusters.host.token_request(NS, sa, {"spec": spec})
        assert (err.value.status, err.value.message) == (status, message)
    answer = await clusters.host.token_request(NS, "default", {"spec": {"boundObjectRef": {
        **ref, "uid": p["metadata"]["uid"]}}})
    assert await whoami(clusters.host, answer["status"]["token"]) == "system:serviceaccount:default:default"
    answer = await clusters.host.token_request(NS, "builder", {"spec": {"boundObjectRef": {
        "kind": "Secret", "apiVersion": "v1", "name": "s", "uid": s["metadata"]["uid"]}}})
    assert await whoami(clusters.host, answer["status"]["token"]) == "system:serviceaccount:default:builder"


async def test_dependents_are_garbage_collected_with_their_owner(clusters: Clusters) -> None:
    owner = await clusters.host.create(PODS, pod("p", automountServiceAccountToken=False), NS)
    ref = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": owner["metadata"]["uid"]}
    await clusters.host.create(SECRETS, {"metadata": {"name": "owned", "ownerReferences": [ref]}}, NS)
    await clusters.host.create(SECRETS, {"metadata": {"name": "free"}}, NS)
    await clusters.host.delete(PODS, "p", NS)
    names = {s["metadata"]["name"] for s in (await clusters.host.list(SECRETS, NS))["items"]}
    assert "owned" not in names and "free" in names


async def test_owner_references_need_their_four_fields(clusters: Clusters) -> None:
    # apimachinery's validateOwnerReference (the syncer writes one to the vcluster Service on every host pod)
    bad = pod("p")
    bad["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "", "name": "vc", "uid": ""}]
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, bad, NS)
    assert err.value.message == ('Pod "p" is invalid: [metadata.ownerReferences.kind: Invalid value: "": must not be '
                                 'empty, metadata.ownerReferences.uid: Invalid value: "": must not be empty]')
    bad["metadata"]["ownerReferences"] = [{"apiVersion": "apps/", "kind": "ReplicaSet", "name": "rs", "uid": "u"}]
    with pytest.raises(ApiError) as err:
        await clusters.host.create(PODS, bad, NS)
    assert err.value.message == ('Pod "p" is invalid: metadata.ownerReferences.apiVersion: Invalid value: "apps/": '
                                 "version must not be empty")


@pytest.mark.parametrize(("minor", "literal_holds"), [(32, False), (34, False), (35, True)])
async def test_a_json_patch_test_of_a_string_compares_as_kube_apiserver_does(clusters: Clusters, minor: int,
                                                                            literal_holds: bool) -> None:
    # gopkg.in/evanphx/json-patch.v4 v4.12.0 (lazyNode.equal), kube-apiserver's before 1.35, compares a tested
    # string's bytes as the patch wrote them with the server's encoding of the object, where Go's encoding/json
    # writes & < > U+2028 U+2029 as \u escapes; v4.13.0 (Kubernetes 1.35) decodes both strings first
    clusters.host_server.minor = minor
    p = pod("p")
    p["metadata"]["annotations"] = {"link": "https://x.example/?a=1&b=<2>"}
    await clusters.host.create(PODS, p, NS)
    url = f"{clusters.host_server.url}/api/v1/namespaces/{NS}/pods/p"
    headers = {"Content-Type": "application/json-patch+json"}
    test = b'[{"op":"test","path":"/metadata/annotations/link","value":'
    as_go = test + b'"https://x.example/?a=1\\u0026b=\\u003c2\\u003e"}]'
    literal = test + b'"https://x.example/?a=1&b=<2>"}]'
    async with aiohttp.ClientSession() as http:
        async with http.patch(url, data=as_go, headers=headers) as r:
            assert r.status == 200
        async with http.patch(url, data=literal, headers=headers) as r:
            assert r.status == (200 if literal_holds else 422)


async def test_a_json_patch_that_does_not_apply_is_refused_with_kube_apiservers_words(clusters: Clusters) -> None:
    # kubernetes' apiserver handlers/patch.go, applyJSPatch: errors.NewGenericServerResponse(422, ...), whose message
    # is the code's generic one; kubectl shows it as "The request is invalid: the server rejected our request due to
    # an error in our request" (kubernetes-client/javascript issue 2095)
    await clusters.host.create(PODS, pod("p"), NS)
    for ops in ([{"op": "test", "path": "/metadata/labels/a", "value": "x"}],
                [{"op": "replace", "path": "/spec/containers/5/image", "value": "nginx:1.28"}]):
        with pytest.raises(ApiError) as err:
            await clusters.host.patch(PODS, "p", ops, NS, patch_type="json")
        assert (err.value.status, err.value.reason, err.value.message) == (
            422, "Invalid", "the server rejected our request due to an error in our request")


async def test_an_ephemeral_container_is_refused_what_only_app_containers_may_have(clusters: Clusters) -> None:
    # kubernetes' validateEphemeralContainers (pkg/apis/core/validation): ports, probes, lifecycle, resources are
    # not in its allow list, and a volume mount subPath is refused outright
    p = pod("p")
    p["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    await clusters.host.create(PODS, p, NS)
    debug = {"name": "debugger", "image": "busybox:1.36", "ports": [{"containerPort": 80}],
             "volumeMounts": [{"name": "v", "mountPath": "/etc/hosts", "subPath": "hosts"}]}
    with pytest.raises(ApiError) as err:
        await clusters.host.patch(PODS, "p", [{"op": "add", "path": "/spec/ephemeralContainers", "value": [debug]}],
                                  NS, patch_type="json", subresource="ephemeralcontainers")
    assert (err.value.status, err.value.message) == (422, (
        'Pod "p" is invalid: [spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container, '
        "spec.ephemeralContainers[0].volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container]"))


# pkg/util/tolerations/tolerations_test.go: the `tolerations` table, TestIsSuperset and TestMergeTolerations, which the
# RuntimeClass plugin's setScheduling (plugin/pkg/admission/runtimeclass/admission.go) relies on
TOLERATIONS: dict[str, Obj] = {
    "all": {"operator": "Exists"},
    "all-nosched": {"operator": "Exists", "effect": "NoSchedule"},
    "all-noexec": {"operator": "Exists", "effect": "NoExecute"},
    "foo": {"key": "foo", "operator": "Exists"},
    "foo-bar": {"key": "foo", "operator": "Equal", "value": "bar"},
    "foo-nosched": {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
    "foo-bar-nosched": {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule"},
    "foo-baz-nosched": {"key": "foo", "operator": "Equal", "value": "baz", "effect": "NoSchedule"},
    "faz-nosched": {"key": "faz", "operator": "Exists", "effect": "NoSchedule"},
    "faz-baz-nosched": {"key": "faz", "operator": "Equal", "value": "baz", "effect": "NoSchedule"},
    "foo-prefnosched": {"key": "foo", "operator": "Exists", "effect": "PreferNoSchedule"},
    "foo-noexec": {"key": "foo", "operator": "Exists", "effect": "NoExecute"},
    "foo-bar-noexec": {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute"},
    "foo-noexec-10": {"key": "foo", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10},
    "foo-noexec-0": {"key": "foo", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
    "foo-bar-noexec-10": {"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoExecute",
                          "tolerationSeconds": 10},
}
IS_SUPERSET = [  # (toleration, what it is a superset of besides itself); "foo-prenosched" is the Go table's own typo
    ("all", ["all-nosched", "all-noexec", "foo", "foo-bar", "foo-nosched", "foo-bar-nosched", "foo-baz-nosched",
             "faz-nosched", "faz-baz-nosched", "foo-prefnosched", "foo-noexec", "foo-bar-noexec", "foo-noexec-10",
             "foo-noexec-0", "foo-bar-noexec-10"]),
    ("all-nosched", ["foo-nosched", "foo-bar-nosched", "foo-baz-nosched", "faz-nosched", "faz-baz-nosched"]),
    ("all-noexec", ["foo-noexec", "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0", "foo-bar-noexec-10"]),
    ("foo", ["foo-bar", "foo-nosched", "foo-bar-nosched", "foo-baz-nosched", "foo-prefnosched", "foo-noexec",
             "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0", "foo-bar-noexec-10"]),
    ("foo-bar", ["foo-bar-nosched", "foo-bar-noexec", "foo-bar-noexec-10"]),
    ("foo-nosched", ["foo-bar-nosched", "foo-baz-nosched"]),
    ("foo-bar-nosched", []),
    ("faz-nosched", ["faz-baz-nosched"]),
    ("faz-baz-nosched", []),
    ("foo-prenosched", []),
    ("foo-noexec", ["foo-noexec", "foo-bar-noexec", "foo-noexec-10", "foo-noexec-0", "foo-bar-noexec-10"]),
    ("foo-bar-noexec", ["foo-bar-noexec-10"]),
    ("foo-noexec-10", ["foo-noexec-0", "foo-bar-noexec-10"]),
    ("foo-noexec-0", []),
    ("foo-bar-noexec-10", []),
]
MERGE = [  # (name, a, b, expected)
    ("disjoint", ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"], ["foo-prefnosched", "foo-baz-nosched"],
     ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10", "foo-prefnosched", "foo-baz-nosched"]),
    ("duplicate", ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"],
     ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"], ["foo-bar-nosched", "faz-baz-nosched", "foo-noexec-10"]),
    ("merge redundant", ["foo-bar-nosched", "foo-baz-nosched"], ["foo-nosched", "faz-baz-nosched"],
     ["foo-nosched", "faz-baz-nosched"]),
    ("merge all", ["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"], ["all"], ["all"]),
    ("merge into all", ["all"], ["foo-bar-nosched", "foo-baz-nosched", "foo-noexec-10"], ["all"]),
]


@pytest.mark.parametrize(("toleration", "supersets"), IS_SUPERSET, ids=[t for t, _ in IS_SUPERSET])
def test_a_toleration_is_a_superset_as_kubernetes_decides(toleration: str, supersets: list[str]) -> None:
    ss = TOLERATIONS.get(toleration, {})
    for name, t in TOLERATIONS.items():
        assert admission._is_superset(ss, t) is (name == toleration or name in supersets), name


@pytest.mark.parametrize(("a", "b", "expected"), [m[1:] for m in MERGE], ids=[m[0] for m in MERGE])
def test_tolerations_merge_as_kubernetes_merges_them(a: list[str], b: list[str], expected: list[str]) -> None:
    assert admission.merge_tolerations([TOLERATIONS[n] for n in a], [TOLERATIONS[n] for n in b]) == [
        TOLERATIONS[n] for n in expected]


async def test_the_runtime_class_admission_keeps_the_broader_of_two_tolerations(clusters: Clusters) -> None:
    # setScheduling (plugin/pkg/admission/runtimeclass/admission.go) merges with tolerations.MergeTolerations: the
    # pod's own narrower toleration ("foo-bar-nosched") goes for the class's broader one ("foo-nosched"), and the
    # class's narrower "foo-bar-noexec-10" for the pod's "foo"; DefaultTolerationSeconds' two are the pod's by then
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", scheduling={"tolerations": [
        TOLERATIONS["foo-nosched"], TOLERATIONS["foo-bar-noexec-10"]]}))
    p = pod("p", "gvisor", tolerations=[TOLERATIONS["foo-bar-nosched"], TOLERATIONS["faz-baz-nosched"]])
    created = await clusters.host.create(PODS, p, NS)
    dts = [{"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
           for k in ("not-ready", "unreachable")]
    assert created["spec"]["tolerations"] == [TOLERATIONS["faz-baz-nosched"], *dts, TOLERATIONS["foo-nosched"],
                                              TOLERATIONS["foo-bar-noexec-10"]]
    p = pod("q", "gvisor", tolerations=[TOLERATIONS["foo"]])
    created = await clusters.host.create(PODS, p, NS)
    assert created["spec"]["tolerations"] == [TOLERATIONS["foo"], *dts]


async def test_a_dry_run_write_persists_nothing_and_an_unknown_dry_run_is_refused(clusters: Clusters) -> None:
    # ValidateDryRun (k8s.io/apimachinery pkg/apis/meta/v1/validation/validation.go) through each handler's options
    # check (apiserver pkg/endpoints/handlers: create.go, update.go, patch.go, delete.go: errors.NewInvalid(
    # schema.GroupKind{Group: metav1.GroupName, Kind: "<Kind>Options"}, "", errs)); with dryRun=All the storage
    # persists nothing; a DELETE's options are its body's when it has one (handlers/delete.go)
    server = clusters.host_server
    p = pod("p", automountServiceAccountToken=False)
    p["metadata"]["finalizers"] = ["example.com/hold"]
    created = await clusters.host.create(PODS, p, NS)
    url = f"{server.url}/api/v1/namespaces/{NS}/pods/p"
    put = {**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}}
    merge = {"data": b'{"metadata":{"labels":{"a":"b"}}}', "headers": {"Content-Type": "application/merge-patch+json"}}
    async with aiohttp.ClientSession() as http:
        for method, kind, kw in (("PUT", "UpdateOptions", {"json": put}),
                                 ("PATCH", "PatchOptions", merge),
                                 ("DELETE", "DeleteOptions", {}),
                                 ("POST", "CreateOptions", {"json": pod("q")})):
            where = url if method != "POST" else url.removesuffix("/p")
            async with http.request(method, f"{where}?dryRun=x", **kw) as r:
                status = await r.json()
                assert (r.status, status["message"], status["details"]) == (422, (
                    f'{kind}.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{{"x"}}: supported '
                    'values: "All"'), {"group": "meta.k8s.io", "kind": kind, "causes": [
                        {"reason": "FieldValueNotSupported", "message": 'Unsupported value: []string{"x"}: supported '
                                                                        'values: "All"', "field": "dryRun"}]})
            rv = server.storage.rv
            async with http.request(method, f"{where}?dryRun=All", **kw) as r:
                assert r.status in (200, 201), await r.text()
                answer = await r.json()
            assert server.storage.rv == rv  # nothing written: no resourceVersion taken, no watch event
            if method in ("PUT", "PATCH"):
                assert answer["metadata"]["labels"] == {"a": "b"}
            if method == "DELETE":
                assert answer["metadata"]["deletionTimestamp"]
        async with http.delete(url, json={"dryRun": ["All"], "gracePeriodSeconds": 0}) as r:
            assert r.status == 200
        async with http.delete(f"{url}?dryRun=x", json={"gracePeriodSeconds": 0}) as r:
            assert r.status == 200  # the body's options, not the query's: a real delete
    stored = await clusters.host.get(PODS, "p", NS)
    assert "labels" not in stored["metadata"] and stored["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiError) as err:
        await clusters.host.get(PODS, "q", NS)
    assert err.value.not_found


async def test_a_deleted_namespace_terminates_refuses_new_content_and_goes_once_empty(clusters: Clusters) -> None:
    # pkg/registry/core/namespace/storage/storage.go (REST.Delete): the first delete sets deletionTimestamp and phase
    # Terminating; the NamespaceLifecycle admission (staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/
    # lifecycle/admission.go) then refuses every create in it, subresources included, with the NamespaceTerminating
    # cause, and refuses to delete the immortal namespaces; the namespace controller (pkg/controller/namespace)
    # deletes the content as a client would (a scheduled pod gracefully, an object with finalizers kept until they
    # are removed) and the namespace once nothing is left
    h, server = clusters.host, clusters.host_server
    await h.create(NAMESPACES, {"metadata": {"name": "doomed"}})
    assert (await h.get(NAMESPACES, "doomed"))["spec"] == {"finalizers": ["kubernetes"]}  # PrepareForCreate
    await h.create(PODS, pod("running", namespace="doomed"), "doomed")
    await h.bind("running", "doomed", "node-1")
    await h.create(PODS, pod("pending", namespace="doomed"), "doomed")
    await h.create(CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}, "doomed")
    await h.create(SECRETS, {"metadata": {"name": "s"}}, "doomed")
    answer = await h.delete(NAMESPACES, "doomed")
    assert answer["status"]["phase"] == "Terminating" and answer["metadata"]["deletionTimestamp"]
    for create, resource, name in (
            (h.create(PODS, pod("new", namespace="doomed"), "doomed"), "pods", "new"),
            (h.create(CONFIGMAPS, {"metadata": {"generateName": "cm-"}}, "doomed"), "configmaps", "cm-"),
            (h.bind("pending", "doomed", "node-1"), "pods", "pending"),
            (h.token_request("doomed", "default", {"spec": {}}), "serviceaccounts", "default")):
        with pytest.raises(ApiError) as err:
            await create
        assert (err.value.status, err.value.reason, err.value.message) == (
            403, "Forbidden", f'{resource} "{name}" is forbidden: unable to create new content in namespace doomed '
                              "because it is being terminated")
    url = f"{server.url}/api/v1/namespaces/doomed/pods"
    async with aiohttp.ClientSession() as http, http.post(url, json=pod("new", namespace="doomed")) as r:
        assert (await r.json())["details"]["causes"] == [{"reason": "NamespaceTerminating", "message": "namespace "
                                                          "doomed is being terminated", "field": "metadata.namespace"}]
    running = (await h.get(PODS, "running", "doomed"))["metadata"]
    assert running["deletionGracePeriodSeconds"] == 30 and running["deletionTimestamp"]  # its own grace period
    assert (await h.get(CONFIGMAPS, "held", "doomed"))["metadata"]["deletionTimestamp"]
    for res, name in ((PODS, "pending"), (SECRETS, "s"), (SERVICEACCOUNTS, "default"),
                      (CONFIGMAPS, "kube-root-ca.crt")):
        with pytest.raises(ApiError) as err:
            await h.get(res, name, "doomed")
        assert err.value.not_found
    await asyncio.sleep(3 * server.namespace_sync_interval)
    assert (await h.get(NAMESPACES, "doomed"))["status"]["phase"] == "Terminating"  # content left: it stays
    await h.delete(PODS, "running", "doomed", grace_period_seconds=0)  # the kubelet's last delete
    await h.patch(CONFIGMAPS, "held", {"metadata": {"finalizers": None}}, "doomed")
    await eventually(lambda: server.storage.get(NAMESPACES, "", "doomed") is None, "the namespace gone")
    with pytest.raises(ApiError) as err:
        await h.create(PODS, pod("new", namespace="doomed"), "doomed")
    assert (err.value.status, err.value.message) == (404, 'namespaces "doomed" not found')
    for immortal in ("default", "kube-system", "kube-public"):
        with pytest.raises(ApiError) as err:
            await h.delete(NAMESPACES, immortal)
        assert (err.value.status, err.value.message) == (
            403, f'namespaces "{immortal}" is forbidden: this namespace may not be deleted')
