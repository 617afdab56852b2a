"""kubesim refuses what kube-apiserver refuses and stores what it stores, for RuntimeClass overhead quantities,
writes of pods/status, pod updates, core/v1 events and secrets. Each case names the Go it follows and goes over real
HTTP with the real client; the quantity pairs are the literals of apimachinery's quantity_test.go."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from kubesim import fielderrors as fe
from kubesim import quantity
from syncer.kube.client import ApiError
from syncer.kube.resources import EVENTS, PODS, RUNTIMECLASSES, SECRETS
from tests.conftest import Clusters, pod, rc

Obj = dict[str, Any]
NS = "default"
UPDATE_FORBIDDEN = (
    "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
    "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
           "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
IMMUTABLE = "field is immutable when `immutable` is set"

# (input, String()) from k8s.io/apimachinery pkg/api/resource/quantity_test.go: TestQuantityParseEmit and the
# alternates of TestQuantityString (a non-canonical input is written back in canonical form, in its own format)
CANONICAL = [
    ("1Ki", "1Ki"), ("1Mi", "1Mi"), ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("1000M", "1G"), (".001Ki", "1024m"),
    (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"), ("307200Ki", "300Mi"),
    ("1025024Mi", "1001Gi"), ("1024Gi", "1Ti"), ("5000m", "5"), ("0.5", "500m"), ("0.001T", "1G"), ("1000u", "1m"),
    ("1.08", "1080m"), ("1080000000n", "1080m"), (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"),
    ("00", "0"), ("100m", "100m"), ("1000m", "1"),
]
# TestQuantityParse's `invalid` list, with apimachinery's error for each
INVALID = [("1.1.M", FORMAT_WRONG), ("1+1.0M", FORMAT_WRONG), ("0.1mi", "unable to parse quantity's suffix"),
           ("0.1am", FORMAT_WRONG), ("aoeu", FORMAT_WRONG), (".5i", "unable to parse quantity's suffix"),
           ("1i", "unable to parse quantity's suffix"), ("-3.01i", "unable to parse quantity's suffix"),
           ("-3.01e-", "unable to parse quantity's suffix"), (" 1", FORMAT_WRONG), ("1 ", FORMAT_WRONG)]


@pytest.mark.parametrize(("given", "canonical"), CANONICAL)
def test_quantities_are_written_back_as_apimachinery_writes_them(given: str, canonical: str) -> None:
    assert quantity.stored(given) == canonical
    if quantity.parse(given).unscaled:
        assert quantity.stored("-" + given) == "-" + canonical  # TestQuantityParseEmit's negatives


@pytest.mark.parametrize(("given", "message"), INVALID)
def test_quantities_apimachinery_refuses_are_refused(given: str, message: str) -> None:
    with pytest.raises(quantity.QuantityError) as err:
        quantity.parse(given)
    assert str(err.value) == message


# ---------------------------------------------------------------------------------------------- runtime classes

async def test_runtime_class_overhead_is_stored_canonically(clusters: Clusters) -> None:
    # node/v1 Overhead.podFixed is a ResourceList of resource.Quantity: decoded by its UnmarshalJSON and encoded by
    # MarshalJSON for storage (node/v1 has no defaulter, so nothing is rounded to milli)
    h = clusters.host
    for i, (given, canonical) in enumerate(CANONICAL):
        created = await h.create(RUNTIMECLASSES, rc(f"rc{i}", "runsc", overhead={"podFixed": {"memory": given}}))
        assert created["overhead"]["podFixed"] == {"memory": canonical}, given
        assert (await h.get(RUNTIMECLASSES, f"rc{i}"))["overhead"]["podFixed"] == {"memory": canonical}
    # a JSON number is read as its text; patches and PUTs are decoded the same way
    created = await h.create(RUNTIMECLASSES, rc("num", "runsc", overhead={"podFixed": {"cpu": 0.5, "memory": 1}}))
    assert created["overhead"]["podFixed"] == {"cpu": "500m", "memory": "1"}
    patched = await h.patch(RUNTIMECLASSES, "num", {"overhead": {"podFixed": {"cpu": "1.5Gi"}}})
    assert patched["overhead"]["podFixed"] == {"cpu": "1536Mi", "memory": "1"}
    put = copy.deepcopy(patched)
    put["overhead"]["podFixed"]["cpu"] = "2000m"
    assert (await h.replace(RUNTIMECLASSES, put))["overhead"]["podFixed"]["cpu"] == "2"


async def test_runtime_class_overhead_is_validated_as_resource_limits(clusters: Clusters) -> None:
    # ValidateRuntimeClass -> validateOverhead: the ResourceRequirements validation of {limits: podFixed} at
    # `overhead` (validateContainerResourceName, ValidateResourceQuantityValue, validateResourceQuantityHugePageValue,
    # "HugePages require cpu or memory")
    cases: list[tuple[Obj, str]] = [
        ({"cpu": "-1"}, 'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
        ({"cpu": "-0.5"}, 'overhead.limits[cpu]: Invalid value: "-500m": must be greater than or equal to 0'),
        ({"foo": "1"}, '[overhead.limits[foo]: Invalid value: "foo": must be a standard resource type or fully '
                       'qualified, overhead.limits[foo]: Invalid value: "foo": must be a standard resource for '
                       "containers]"),
        ({"pods": "1"}, 'overhead.limits[pods]: Invalid value: "pods": must be a standard resource for containers'),
        ({"example.com/gpu": "0.5"}, "overhead.limits[example.com/gpu]: Invalid value: 500m: must be an integer"),
        ({"hugepages-2Mi": "3Mi", "memory": "1Gi"},
         'overhead.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of '
         "hugepages-2Mi"),
        ({"hugepages-2Mi": "2Mi"}, "overhead: Forbidden: HugePages require cpu or memory"),
    ]
    for fixed, message in cases:
        with pytest.raises(ApiError) as err:
            await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", overhead={"podFixed": fixed}))
        assert (err.value.status, err.value.message) == (422, f'RuntimeClass.node.k8s.io "x" is invalid: {message}')
    ok = {"cpu": "250m", "memory": "120Mi", "example.com/gpu": "1", "hugepages-2Mi": "4Mi", "kubernetes.io/x": "500m"}
    assert (await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", overhead={"podFixed": ok})))["overhead"] == {
        "podFixed": ok}
    # an update is validated as a create
    with pytest.raises(ApiError) as err:
        await clusters.host.patch(RUNTIMECLASSES, "x", {"overhead": {"podFixed": {"cpu": "-1"}}})
    assert err.value.status == 422 and "must be greater than or equal to 0" in err.value.message


async def test_an_overhead_that_does_not_decode_is_a_bad_request(clusters: Clusters) -> None:
    # the typed decode fails first (resource.Quantity.UnmarshalJSON): 400, as the create handler words it
    for given, message in [("lots", FORMAT_WRONG), ("1Gb", FORMAT_WRONG), ("1ii", "unable to parse quantity's suffix")]:
        with pytest.raises(ApiError) as err:
            await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", overhead={"podFixed": {"cpu": given}}))
        assert (err.value.status, err.value.message) == (
            400, f'RuntimeClass in version "v1" cannot be handled as a RuntimeClass: {message}')


# ---------------------------------------------------------------------------------------------- pods/status

async def test_pod_status_writes_keep_spec_owners_and_deletion_but_take_labels_and_annotations(
        clusters: Clusters) -> None:
    # podStatusStrategy.PrepareForUpdate (pkg/registry/core/pod/strategy.go): newPod.Spec = oldPod.Spec,
    # DeletionTimestamp and OwnerReferences from the old pod; the metadata is otherwise the request's
    v = clusters.virtual
    owner = await v.create(SECRETS, {"metadata": {"name": "owner"}}, NS)
    ref = {"apiVersion": "v1", "kind": "Secret", "name": "owner", "uid": owner["metadata"]["uid"]}
    p = pod("p")
    p["metadata"].update(labels={"a": "1"}, ownerReferences=[ref], finalizers=["example.com/hold"])
    created = await v.create(PODS, p, NS)
    await v.delete(PODS, "p", NS)  # held by its finalizer, with a deletionTimestamp
    held = await v.get(PODS, "p", NS)
    assert held["metadata"]["deletionTimestamp"]
    body = copy.deepcopy(held)
    body["metadata"]["labels"] = {"a": "2", "b": "3"}
    body["metadata"]["annotations"] = {"note": "from status"}
    body["metadata"]["ownerReferences"] = []
    body["metadata"].pop("deletionTimestamp")
    body["spec"]["activeDeadlineSeconds"] = 5
    body["status"] = {**body["status"], "phase": "Running"}
    out = await v.replace(PODS, body, NS, subresource="status")
    assert out["status"]["phase"] == "Running"
    assert out["metadata"]["labels"] == {"a": "2", "b": "3"}
    assert out["metadata"]["annotations"] == {"note": "from status"}
    assert out["metadata"]["ownerReferences"] == [ref]
    assert out["metadata"]["deletionTimestamp"] == held["metadata"]["deletionTimestamp"]
    assert out["spec"] == created["spec"]
    # ... and validated as any update's metadata is (ValidatePodStatusUpdate: ValidateObjectMetaUpdate and
    # ValidatePodSpecificAnnotationUpdates)
    with pytest.raises(ApiError) as err:
        await v.patch(PODS, "p", {"metadata": {"labels": {"bad key!": "x"}}}, NS, subresource="status")
    assert err.value.status == 422 and err.value.message.startswith(
        'Pod "p" is invalid: metadata.labels: Invalid value: "bad key!": ')
    with pytest.raises(ApiError) as err:
        await v.patch(PODS, "p", {"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}, NS,
                      subresource="status")
    assert err.value.message == ('Pod "p" is invalid: metadata.annotations[kubernetes.io/config.mirror]: Forbidden: '
                                 "may not add mirror pod annotation")
    await v.patch(PODS, "p", {"metadata": {"finalizers": None}}, NS, subresource="status")  # finalizers go too


# ---------------------------------------------------------------------------------------------- pod updates

async def test_a_pod_update_is_validated_whole_and_keeps_its_grace_period(clusters: Clusters) -> None:
    # ValidatePodUpdate: validatePodMetadataAndSpec of the new pod first, then ValidateContainerUpdates, then the
    # munged spec compared with the old one; terminationGracePeriodSeconds is not among what may change
    h = clusters.host
    await h.create(PODS, pod("p", terminationGracePeriodSeconds=30), NS)
    image = [{"op": "replace", "path": "/spec/containers/0/image", "value": " nginx:1.28"}]
    refused: list[tuple[Any, str]] = [
        ({"spec": {"hostname": "a.b"}},
         f'[spec.hostname: Invalid value: "a.b": must not contain dots, {UPDATE_FORBIDDEN}]'),
        ({"spec": {"terminationGracePeriodSeconds": 10}}, UPDATE_FORBIDDEN),
        ({"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}, {"name": "b", "image": "busybox"}]}},
         "spec.containers: Forbidden: pod updates may not add or remove containers"),
        (image, 'spec.containers[0].image: Invalid value: " nginx:1.28": must not have leading or trailing '
                "whitespace"),
    ]
    for patch, message in refused:
        with pytest.raises(ApiError) as err:
            await h.patch(PODS, "p", patch, NS, patch_type="json" if isinstance(patch, list) else "merge")
        assert (err.value.status, err.value.message) == (422, f'Pod "p" is invalid: {message}'), patch
    assert (await h.get(PODS, "p", NS))["spec"]["terminationGracePeriodSeconds"] == 30


async def test_a_negative_grace_period_is_stored_as_one(clusters: Clusters) -> None:
    # kubernetes#115606 (1.27): a pod's negative spec.terminationGracePeriodSeconds is converted to 1 on the way in;
    # test/e2e/node/pods.go "pod with negative grace period": created with -1, it reads 1; updated to -1, still 1
    h = clusters.host
    created = await h.create(PODS, pod("p", terminationGracePeriodSeconds=-1), NS)
    assert created["spec"]["terminationGracePeriodSeconds"] == 1
    stored = await h.get(PODS, "p", NS)
    stored["spec"]["terminationGracePeriodSeconds"] = -1
    assert (await h.replace(PODS, stored, NS))["spec"]["terminationGracePeriodSeconds"] == 1


# ---------------------------------------------------------------------------------------------- events

def event(name: str, involved_ns: str | None, **fields: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": involved_ns}, "reason": "Test",
            "message": "m", "type": "Normal", **fields}


async def test_an_event_must_be_in_its_involved_objects_namespace(clusters: Clusters) -> None:
    # pkg/apis/core/validation/events.go legacyValidateEvent (all a v1 request gets): without an eventTime, the
    # involved object's namespace is the event's; an involved object without one allows "" and "default"
    v = clusters.virtual
    for ns, involved in (("default", "other"), ("kube-public", None), ("kube-public", "default")):
        with pytest.raises(ApiError) as err:
            await v.create(EVENTS, event("e", involved), ns)
        assert (err.value.status, err.value.message) == (
            422, f'Event "e" is invalid: involvedObject.namespace: Invalid value: "{involved or ""}": does not match '
                 "event.namespace")
    await v.create(EVENTS, event("same", "kube-public"), "kube-public")
    await v.create(EVENTS, event("cluster-scoped", None), "default")
    with pytest.raises(ApiError) as err:  # an update too (ValidateEventUpdate)
        await v.patch(EVENTS, "same", {"involvedObject": {"namespace": "default"}}, "kube-public")
    assert err.value.status == 422 and "does not match event.namespace" in err.value.message
    # with an eventTime: kube-system and default take involved objects without a namespace, and the reporting
    # fields are required
    with pytest.raises(ApiError) as err:
        await v.create(EVENTS, event("new", None, eventTime="2024-01-01T00:00:00.000000Z",
                                     reportingComponent="bad one!"), "kube-public")
    assert err.value.message == (
        'Event "new" is invalid: [involvedObject.namespace: Invalid value: "": does not match event.namespace, '
        "reportingController: Invalid value: \"bad one!\": name part must consist of alphanumeric characters, '-', "
        "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
        "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), reportingInstance: "
        "Required value, action: Required value]")
    # k8s.io/api core/v1 Event: `ReportingController string json:"reportingComponent"`; the error path is the
    # internal field's (legacyValidateEvent)
    await v.create(EVENTS, event("new", None, eventTime="2024-01-01T00:00:00.000000Z", reportingComponent="c",
                                 reportingInstance="i", action="a"), "kube-system")


async def test_an_event_name_need_only_be_a_path_segment(clusters: Clusters) -> None:
    # the generic registry checks an event's name with ValidatePathSegmentName (BeforeCreate, after the strategy's
    # own validation), not as a DNS subdomain
    v = clusters.virtual
    await v.create(EVENTS, event("Pod.P_1", "default"), NS)
    with pytest.raises(ApiError) as err:
        await v.create(EVENTS, event("a%b", "default"), NS)
    assert err.value.message == 'Event "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain \'%\''


# ---------------------------------------------------------------------------------------------- secrets

def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_secret_data_keys_size_and_types(clusters: Clusters) -> None:
    # ValidateSecret (pkg/apis/core/validation/validation.go)
    h = clusters.host
    cases: list[tuple[Obj, str]] = [
        ({"data": {"a b": b64(b"x")}}, f'data[a b]: Invalid value: "a b": {KEY_MSG}'),
        ({"stringData": {"..x": "y"}}, "data[..x]: Invalid value: \"..x\": must not start with '..'"),
        ({"data": {"big": b64(b"x" * (1024 * 1024)), "more": b64(b"y")}},
         "data: Too long: must have at most 1048576 bytes"),
        ({"type": "kubernetes.io/service-account-token"},
         "metadata.annotations[kubernetes.io/service-account.name]: Required value"),
        ({"type": "kubernetes.io/tls", "data": {"tls.crt": b64(b"c")}}, "data[tls.key]: Required value"),
        ({"type": "kubernetes.io/basic-auth"}, "[data[username]: Required value, data[password]: Required value]"),
        ({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64(b"[]")}},
         'data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go '
         "value of type map[string]interface {}"),
    ]
    for fields, message in cases:
        with pytest.raises(ApiError) as err:
            await h.create(SECRETS, {"metadata": {"name": "s"}, **fields}, NS)
        assert (err.value.status, err.value.message) == (422, f'Secret "s" is invalid: {message}'), fields
    created = await h.create(SECRETS, {"metadata": {"name": "s", "annotations": {
        "kubernetes.io/service-account.name": "default"}}, "type": "kubernetes.io/service-account-token"}, NS)
    assert created["type"] == "kubernetes.io/service-account-token"
    assert (await h.create(SECRETS, {"metadata": {"name": "plain"}}, NS))["type"] == "Opaque"  # SetDefaults_Secret


async def test_secret_data_that_is_not_base64_is_a_bad_request(clusters: Clusters) -> None:
    # encoding/json decodes a []byte with base64.StdEncoding: its CorruptInputError names the offending byte
    for given, offset in (("YWJj$", 4), ("abc", 0), ("!", 0), ("YQ=", 3), ("YQ==YQ==", 4)):
        with pytest.raises(ApiError) as err:
            await clusters.host.create(SECRETS, {"metadata": {"name": "s"}, "data": {"k": given}}, NS)
        assert (err.value.status, err.value.message) == (
            400, f'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte {offset}')


async def test_an_immutable_secret_keeps_its_data_and_every_secret_its_type(clusters: Clusters) -> None:
    # ValidateSecretUpdate: the type is immutable; an immutable secret's data and `immutable` are fixed
    h = clusters.host
    await h.create(SECRETS, {"metadata": {"name": "s"}, "type": "example.com/custom", "immutable": True,
                             "data": {"k": b64(b"v")}}, NS)
    refused = [
        ({"type": "example.com/other"}, 'type: Invalid value: "example.com/other": field is immutable'),
        ({"data": {"k": b64(b"w")}}, f"data: Forbidden: {IMMUTABLE}"),
        ({"stringData": {"k2": "w"}}, f"data: Forbidden: {IMMUTABLE}"),
        ({"immutable": False}, f"immutable: Forbidden: {IMMUTABLE}"),
        ({"immutable": None}, f"immutable: Forbidden: {IMMUTABLE}"),
    ]
    for patch, message in refused:
        with pytest.raises(ApiError) as err:
            await h.patch(SECRETS, "s", patch, NS)
        assert (err.value.status, err.value.message) == (422, f'Secret "s" is invalid: {message}'), patch
    assert (await h.patch(SECRETS, "s", {"metadata": {"labels": {"a": "b"}}}, NS))["metadata"]["labels"] == {"a": "b"}
    await h.create(SECRETS, {"metadata": {"name": "t"}, "data": {"k": b64(b"v")}}, NS)
    with pytest.raises(ApiError) as err:
        await h.patch(SECRETS, "t", {"type": "kubernetes.io/tls"}, NS)
    assert err.value.message == ('Secret "t" is invalid: [type: Invalid value: "kubernetes.io/tls": field is '
                                 "immutable, data[tls.crt]: Required value, data[tls.key]: Required value]")
    assert (await h.patch(SECRETS, "t", {"data": {"k": b64(b"w")}}, NS))["data"] == {"k": b64(b"w")}


async def test_an_image_with_a_character_go_does_not_trim_is_accepted(clusters: Clusters) -> None:
    # ValidatePod's image check: `len(strings.TrimSpace(image)) != len(image)`; Go's TrimSpace trims Unicode White
    # Space, which U+001C..U+001F are not (Python's str.strip() trims them)
    created = await clusters.host.create(PODS, {"metadata": {"name": "sep"}, "spec": {"containers": [
        {"name": "app", "image": "nginx:1.27\x1f"}]}}, "default")
    assert created["spec"]["containers"][0]["image"] == "nginx:1.27\x1f"


# ---------------------------------------------------------------------------------------------- gated pods

AT_TERMS = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def required_terms(*terms: Obj) -> Obj:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


GO_DISK = 'core.NodeSelectorRequirement{Key:"disk", Operator:"Exists", Values:[]string(nil)}'
GO_NO_REQUIREMENTS = "[]core.NodeSelectorRequirement(nil)"
# (minor, the three refusals' values): json.Marshal from 1.34 (apimachinery c58e197e, "Nicer value rendering in API
# errors"; the internal core types have no json tags), Go's %#v before (maps with sorted keys)
GATED_VALUES = [
    (34, ('{"pool":"gpu","tier":"2"}',
          '{"MatchExpressions":[{"Key":"disk","Operator":"Exists","Values":null}],"MatchFields":null}',
          '[{"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["a"]},{"Key":"disk","Operator":"Exists",'
          '"Values":null}],"MatchFields":null},{"MatchExpressions":null,"MatchFields":[{"Key":"disk",'
          '"Operator":"Exists","Values":null}]}]')),
    (32, ('map[string]string{"pool":"gpu", "tier":"2"}',
          f"core.NodeSelectorTerm{{MatchExpressions:[]core.NodeSelectorRequirement{{{GO_DISK}}}, "
          f"MatchFields:{GO_NO_REQUIREMENTS}}}",
          "[]core.NodeSelectorTerm{core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{"
          'core.NodeSelectorRequirement{Key:"zone", Operator:"In", Values:[]string{"a"}}, '
          f"{GO_DISK}}}, MatchFields:{GO_NO_REQUIREMENTS}}}, core.NodeSelectorTerm{{MatchExpressions:"
          f"{GO_NO_REQUIREMENTS}, MatchFields:[]core.NodeSelectorRequirement{{{GO_DISK}}}}}}}")),
]


@pytest.mark.parametrize(("minor", "values"), GATED_VALUES, ids=["1.34", "1.32"])
async def test_a_gated_pods_node_selector_and_node_affinity_may_only_narrow(clusters: Clusters, minor: int,
                                                                            values: tuple[str, str, str]) -> None:
    # ValidatePodUpdate, "validations specific to gated pods" (pkg/apis/core/validation/validation.go):
    # validateNodeSelectorMutation and validateNodeAffinityMutation, values as ErrorBody shows them (GATED_VALUES)
    clusters.host_server.minor = minor
    h = clusters.host
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    disk = {"key": "disk", "operator": "Exists"}
    await h.create(PODS, pod("g", nodeSelector={"tier": "1"}, schedulingGates=[{"name": "kueue"}],
                             affinity=required_terms({"matchExpressions": [zone]})), NS)
    # additions are allowed: a nodeSelector entry, a requirement after the term's old ones (an empty `values`
    # is its absence: Semantic.DeepEqual)
    await h.patch(PODS, "g", {"spec": {"nodeSelector": {"pool": "gpu"}}}, NS)
    await h.patch(PODS, "g", {"spec": {"affinity": required_terms({"matchExpressions": [zone, disk]})}}, NS)
    await h.patch(PODS, "g", {"spec": {"affinity": required_terms({"matchExpressions": [
        zone, {**disk, "values": []}, {"key": "gpu", "operator": "Exists"}]})}}, NS)
    got = (await h.get(PODS, "g", NS))["spec"]
    assert got["nodeSelector"] == {"tier": "1", "pool": "gpu"}
    selector, term, terms = values
    refused = [
        ({"spec": {"nodeSelector": {"tier": "2"}}},
         f"spec.nodeSelector: Invalid value: {selector}: only additions to spec.nodeSelector are allowed (no "
         "mutations or deletions)"),
        ({"spec": {"affinity": required_terms({"matchExpressions": [disk]})}},
         f"{AT_TERMS}[0]: Invalid value: {term}: only additions are allowed (no mutations or deletions)"),
        ({"spec": {"affinity": required_terms({"matchExpressions": [zone, disk]}, {"matchFields": [disk]})}},
         f"{AT_TERMS}: Invalid value: {terms}: no additions/deletions to non-empty NodeSelectorTerms list are "
         "allowed"),
        ({"spec": {"affinity": {"podAffinity": {}}}}, UPDATE_FORBIDDEN),  # only the node affinity may change
    ]
    for patch, message in refused:
        with pytest.raises(ApiError) as err:
            await h.patch(PODS, "g", patch, NS)
        assert (err.value.status, err.value.message) == (422, f'Pod "g" is invalid: {message}')
    # a nil node affinity is not an empty one (a pointer): either may become the other (the switch's cases 3, 2)
    await h.create(PODS, pod("e", schedulingGates=[{"name": "kueue"}]), NS)
    await h.patch(PODS, "e", {"spec": {"affinity": {"nodeAffinity": {}}}}, NS)
    await h.patch(PODS, "e", {"spec": {"affinity": None}}, NS)
    # an old node affinity without required terms may become anything
    await h.create(PODS, pod("h", schedulingGates=[{"name": "kueue"}]), NS)
    await h.patch(PODS, "h", {"spec": {"affinity": required_terms({"matchFields": [disk]})}}, NS)
    # once the gates are gone, nothing of it may change
    await h.patch(PODS, "h", {"spec": {"schedulingGates": None}}, NS)
    for patch in ({"spec": {"nodeSelector": {"pool": "gpu"}}},
                  {"spec": {"affinity": required_terms({"matchFields": [disk, zone]})}}):
        with pytest.raises(ApiError) as err:
            await h.patch(PODS, "h", patch, NS)
        assert (err.value.status, err.value.message) == (422, f'Pod "h" is invalid: {UPDATE_FORBIDDEN}')


def test_values_are_marshalled_as_go_marshals_them() -> None:
    # encoding/json Marshal: compact, map keys sorted, <, > and & escaped (HTMLEscape), U+2028 and U+2029 escaped
    assert fe.go_json({"b": "<a&b>", "a": "\u2028\u2029é"}) == \
        '{"a":"\\u2028\\u2029é","b":"\\u003ca\\u0026b\\u003e"}'
