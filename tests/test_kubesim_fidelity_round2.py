"""kubesim refuses what kube-apiserver refuses and accepts what it accepts, round 2: a pod's overhead compared with its
RuntimeClass's by value, PodSecurity's `latest` as the server's own version, bound service-account tokens refused once
their objects are gone, and quantities read from the raw JSON literal. Each case names the Go it follows and goes over
real HTTP (the project's client, or aiohttp for bodies the client would not write)."""

from __future__ import annotations

import time
import types
from typing import Any

import aiohttp
import pytest

from kubesim import quantity, tokens
from kubesim.tokens import whoami
from syncer.kube.client import ApiError
from syncer.kube.resources import NAMESPACES, PODS, RUNTIMECLASSES, SECRETS, SERVICEACCOUNTS
from tests.conftest import Clusters, eventually, pod, rc

Obj = dict[str, Any]
NS = "default"
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
MISMATCH = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"
WITHOUT = "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"
PSA = "pod-security.kubernetes.io/enforce"


async def refusal(coro: Any) -> tuple[int, str]:
    with pytest.raises(ApiError) as err:
        await coro
    return err.value.status, err.value.message


# ---------------------------------------------------------------------------------------------- RuntimeClass overhead

async def test_a_pods_overhead_is_compared_with_its_classs_by_value(clusters: Clusters) -> None:
    # plugin/pkg/admission/runtimeclass/admission.go setOverhead: `apiequality.Semantic.DeepEqual(nodeOverhead.PodFixed,
    # pod.Spec.Overhead)`, whose Quantity equality is `a.Cmp(b) == 0` (apimachinery pkg/api/equality/semantic.go); the
    # class's own overhead then replaces the pod's. The class is stored canonically ("0.5" as "500m").
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("gvisor", "runsc", overhead={"podFixed": {"cpu": "0.5", "memory": "1Gi"}}))
    for i, given in enumerate(({"cpu": "0.5", "memory": "1Gi"}, {"cpu": "500m", "memory": "1024Mi"},
                               {"cpu": 0.5, "memory": "1073741824"})):
        created = await h.create(PODS, pod(f"p{i}", "gvisor", overhead=given), NS)
        assert created["spec"]["overhead"] == {"cpu": "500m", "memory": "1Gi"}, given
    # a different value, a missing or an extra name is refused with the plugin's words
    for i, given in enumerate(({"cpu": "0.6", "memory": "1Gi"}, {"cpu": "500m"},
                               {"cpu": "500m", "memory": "1Gi", "pods": "1"})):
        assert await refusal(h.create(PODS, pod(f"q{i}", "gvisor", overhead=given), NS)) == (
            403, f'pods "q{i}" is forbidden: {MISMATCH}')


async def test_a_pods_overhead_is_rounded_to_milli_before_the_comparison(clusters: Clusters) -> None:
    # core/v1 SetDefaults_ResourceList rounds the pod's overhead up to milli when the body is decoded (node/v1 has no
    # defaulter: the class keeps its nano); so a pod repeating the class's "1n" carries 1m, which is not 1n
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("nano", "runsc", overhead={"podFixed": {"cpu": "1n"}}))
    assert await refusal(h.create(PODS, pod("same", "nano", overhead={"cpu": "1n"}), NS)) == (
        403, f'pods "same" is forbidden: {MISMATCH}')
    # setOverhead copies the class's 1n; stored so and read back through the defaulting decoder, it is 1m in the
    # create's response and every read, and an update of the pod (its body decoded and rounded too) compares equal
    assert (await h.create(PODS, pod("unset", "nano"), NS))["spec"]["overhead"] == {"cpu": "1m"}
    patched = await h.patch(PODS, "unset", {"metadata": {"labels": {"touched": "yes"}}}, NS)
    assert patched["spec"]["overhead"] == {"cpu": "1m"} and patched["metadata"]["labels"]["touched"] == "yes"
    # without a class, the rounding is what is stored
    clusters.virtual_server.runtime_class_admission = False
    stored = await clusters.virtual.create(PODS, pod("rounded", overhead={"cpu": "1n", "memory": "0.5"}), NS)
    assert stored["spec"]["overhead"] == {"cpu": "1m", "memory": "500m"}


async def test_an_overhead_without_a_class_overhead_is_refused_by_validate(clusters: Clusters) -> None:
    # admission.go validateOverhead (the plugin's Validate, after the pod's validation): an overhead whose class
    # defines none, or that names no class at all, is refused with its own words
    h = clusters.host
    await h.create(RUNTIMECLASSES, rc("plain", "runsc"))
    assert await refusal(h.create(PODS, pod("a", "plain", overhead={"cpu": "1"}), NS)) == (
        403, f'pods "a" is forbidden: {WITHOUT}')
    assert await refusal(h.create(PODS, pod("b", overhead={"cpu": "1"}), NS)) == (
        403, f'pods "b" is forbidden: {WITHOUT}')
    # an empty overhead is no overhead (len(pod.Spec.Overhead) == 0)
    assert "overhead" not in (await h.create(PODS, pod("c", "plain", overhead={}), NS))["spec"]


async def test_a_pod_overhead_that_does_not_decode_is_a_bad_request(clusters: Clusters) -> None:
    # PodSpec.Overhead is a ResourceList: the typed decode fails first (resource.Quantity.UnmarshalJSON)
    for given, message in (({"cpu": "lots"}, FORMAT_WRONG), ("1", "json: cannot unmarshal string into Go struct field "
                                                                  "PodSpec.spec.overhead of type v1.ResourceList")):
        assert await refusal(clusters.host.create(PODS, pod("p", overhead=given), NS)) == (
            400, f'Pod in version "v1" cannot be handled as a Pod: {message}')


async def test_a_runtime_class_overhead_that_is_not_an_object_is_a_bad_request(clusters: Clusters) -> None:
    # node/v1 RuntimeClass.Overhead is a *Overhead: encoding/json refuses a string, number, bool or array for it
    # (UnmarshalTypeError: the innermost struct, the field path, the target type), and *Scheduling alike; null is
    # none (omitempty: written back absent)
    for given, kind in (("1", "string"), (1, "number"), (True, "bool"), ([], "array")):
        assert await refusal(clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", overhead=given))) == (
            400, 'RuntimeClass in version "v1" cannot be handled as a RuntimeClass: json: cannot unmarshal '
                 f"{kind} into Go struct field RuntimeClass.overhead of type v1.Overhead")
    assert await refusal(clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", scheduling="a"))) == (
        400, 'RuntimeClass in version "v1" cannot be handled as a RuntimeClass: json: cannot unmarshal string into Go '
             "struct field RuntimeClass.scheduling of type v1.Scheduling")
    # a Quantity's error ends the decode; a type mismatch before it is only kept (encoding/json's saveError)
    assert await refusal(clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", scheduling="a", overhead={
        "podFixed": {"cpu": "lots"}}))) == (
        400, f'RuntimeClass in version "v1" cannot be handled as a RuntimeClass: {FORMAT_WRONG}')
    stored = await clusters.host.create(RUNTIMECLASSES, rc("x", "runsc", overhead=None, scheduling=None))
    assert ("overhead" in stored, "scheduling" in stored) == (False, False)


# ---------------------------------------------------------------------------------------------- PodSecurity's version

async def labelled(c: Clusters, name: str, labels: dict[str, str]) -> None:
    await c.host.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})


def probe_pod(name: str, ns: str) -> Obj:
    return {"metadata": {"name": name, "namespace": ns}, "spec": {"containers": [{
        "name": "app", "image": "nginx:1.27", "livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}}]}}


def sysctl_pod(name: str, ns: str) -> Obj:
    return pod(name, namespace=ns, securityContext={"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat",
                                                                   "value": "16384"}]})


async def test_latest_is_the_servers_own_version(clusters: Clusters) -> None:
    # a kube-apiserver of 1.N carries k8s.io/pod-security-admission of release-1.N, whose newest check revision is
    # v1.32 (1.32, 1.33), v1.34 (1.34) or v1.35 (1.35, 1.36): policy/registry.go EvaluatePod evaluates `latest` there.
    # check_probe.go (hostProbesAndhostLifecycle) is v1.34's; check_sysctls.go's sysctlsV1Dot37 is the library's
    # unreleased newest (master): a 1.32 server admits the probe and refuses the sysctl
    await labelled(clusters, "apps", {PSA: "baseline"})
    h = clusters.host
    await h.create(PODS, probe_pod("probe", "apps"), "apps")
    assert await refusal(h.create(PODS, sysctl_pod("tuned", "apps"), "apps")) == (
        403, 'pods "tuned" is forbidden: violates PodSecurity "baseline:latest": forbidden sysctls '
             "(net.ipv4.tcp_notsent_lowat)")
    clusters.host_server.minor = 34
    assert await refusal(h.create(PODS, probe_pod("probe2", "apps"), "apps")) == (
        403, 'pods "probe2" is forbidden: violates PodSecurity "baseline:latest": probe or lifecycle host (container '
             '"app" uses probe or lifecycle host "10.0.0.1")')
    clusters.host_server.minor = 36
    assert await refusal(h.create(PODS, sysctl_pod("tuned2", "apps"), "apps")) == (
        403, 'pods "tuned2" is forbidden: violates PodSecurity "baseline:latest": forbidden sysctls '
             "(net.ipv4.tcp_notsent_lowat)")


async def test_a_pinned_version_newer_than_the_server_is_evaluated_as_its_latest(clusters: Clusters) -> None:
    # api/helpers.go ParseVersion takes any v1.x; registry.go EvaluatePod lowers a version newer than maxVersion to it;
    # the refusal names the version as the namespace pins it (admission.go: nsPolicy.Enforce.String())
    await labelled(clusters, "pinned", {PSA: "baseline", f"{PSA}-version": "v1.37"})
    h = clusters.host
    await h.create(PODS, probe_pod("probe", "pinned"), "pinned")  # 1.32: no probe check at all
    assert await refusal(h.create(PODS, sysctl_pod("tuned", "pinned"), "pinned")) == (
        403, 'pods "tuned" is forbidden: violates PodSecurity "baseline:v1.37": forbidden sysctls '
             "(net.ipv4.tcp_notsent_lowat)")
    clusters.host_server.minor = 34
    assert await refusal(h.create(PODS, probe_pod("probe2", "pinned"), "pinned")) == (
        403, 'pods "probe2" is forbidden: violates PodSecurity "baseline:v1.37": probe or lifecycle host (container '
             '"app" uses probe or lifecycle host "10.0.0.1")')
    # an older pin still chooses the older checks
    await labelled(clusters, "old", {PSA: "baseline", f"{PSA}-version": "v1.33"})
    await h.create(PODS, probe_pod("probe", "old"), "old")


# ---------------------------------------------------------------------------------------------- bound tokens

async def bound_token(c: Clusters, sa: str, kind: str, obj: Obj) -> str:
    answer = await c.host.token_request(NS, sa, {"spec": {"expirationSeconds": 600, "boundObjectRef": {
        "kind": kind, "apiVersion": "v1", "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}}})
    return str(answer["status"]["token"])


async def unauthorized(c: Clusters, token: str) -> Obj:
    """The body a request with `token` gets, asserting it is kube-apiserver's 401."""
    async with aiohttp.ClientSession() as http, http.get(f"{c.host_server.url}/api/v1/namespaces",
                                                         headers={"Authorization": f"Bearer {token}"}) as r:
        body: Obj = await r.json()
        assert r.status == 401
    return body


UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}


async def test_a_token_bound_to_a_deleted_pod_is_refused(clusters: Clusters) -> None:
    # pkg/serviceaccount/claims.go validator.Validate -> podValidate: the bound pod must exist ("service account
    # token has been invalidated") with the claim's uid; the authenticator's refusal is a bare 401 Unauthorized
    h = clusters.host
    p = await h.create(PODS, pod("p"), NS)
    token = await bound_token(clusters, "default", "Pod", p)
    assert await whoami(h, token) == "system:serviceaccount:default:default"
    await h.delete(PODS, "p", NS, grace_period_seconds=0)
    await eventually(lambda: clusters.host_server.storage.get(PODS, NS, "p") is None, "the pod gone")
    assert await unauthorized(clusters, token) == UNAUTHORIZED
    # a new pod of that name is another pod (podValidate: "pod UID (...) does not match ...")
    await h.create(PODS, pod("p"), NS)
    assert (await whoami(h, token)).startswith("an error: HTTP 401")


async def test_a_token_of_a_pod_deleted_within_the_leeway_still_works(clusters: Clusters) -> None:
    # podValidate refuses a pod whose deletionTimestamp is before now minus jwt.DefaultLeeway (a minute): a pod held
    # by a finalizer, deleted just now, still authenticates
    h = clusters.host
    p = pod("held")
    p["metadata"]["finalizers"] = ["example.com/hold"]
    created = await h.create(PODS, p, NS)
    token = await bound_token(clusters, "default", "Pod", created)
    await h.delete(PODS, "held", NS, grace_period_seconds=0)
    assert (await h.get(PODS, "held", NS))["metadata"]["deletionTimestamp"]
    assert await whoami(h, token) == "system:serviceaccount:default:default"
    await h.patch(PODS, "held", {"metadata": {"finalizers": None}}, NS)


async def test_a_token_bound_to_a_deleted_secret_or_of_a_deleted_service_account_is_refused(
        clusters: Clusters) -> None:
    # claims.go secretValidate (as podValidate) and serviceAccountValidate: the service account must exist with the
    # claim's uid, whatever the token is bound to
    h = clusters.host
    await h.create(SERVICEACCOUNTS, {"metadata": {"name": "builder"}}, NS)
    s = await h.create(SECRETS, {"metadata": {"name": "s"}}, NS)
    token = await bound_token(clusters, "builder", "Secret", s)
    assert await whoami(h, token) == "system:serviceaccount:default:builder"
    await h.delete(SECRETS, "s", NS)
    assert await unauthorized(clusters, token) == UNAUTHORIZED
    s = await h.create(SECRETS, {"metadata": {"name": "s"}}, NS)
    token = await bound_token(clusters, "builder", "Secret", s)
    unbound = (await h.token_request(NS, "builder", {"spec": {}}))["status"]["token"]
    await h.delete(SERVICEACCOUNTS, "builder", NS)
    await h.create(SERVICEACCOUNTS, {"metadata": {"name": "builder"}}, NS)  # another one of that name
    for t in (token, unbound):
        assert await unauthorized(clusters, t) == UNAUTHORIZED


async def test_an_expired_token_is_accepted_for_the_leeway_only(clusters: Clusters,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # claims.go publickValidate: go-jose's Claims.Validate allows jwt.DefaultLeeway (a minute) past the expiry
    token = (await clusters.host.token_request(NS, "default", {"spec": {"expirationSeconds": 600}}))["status"]["token"]
    start = time.time()
    monkeypatch.setattr(tokens, "time", types.SimpleNamespace(time=lambda: start + 600 + 50))
    assert await whoami(clusters.host, token) == "system:serviceaccount:default:default"
    monkeypatch.setattr(tokens, "time", types.SimpleNamespace(time=lambda: start + 600 + 70))
    assert await unauthorized(clusters, token) == UNAUTHORIZED


# ---------------------------------------------------------------------------------------------- quantities in bodies

async def post(c: Clusters, body: bytes, path: str = "/apis/node.k8s.io/v1/runtimeclasses",
               method: str = "POST", content_type: str = "application/json") -> tuple[int, Obj]:
    async with aiohttp.ClientSession() as http, http.request(method, f"{c.host_server.url}{path}", data=body,
                                                             headers={"Content-Type": content_type}) as r:
        return r.status, await r.json()


def rc_body(value: str) -> bytes:
    """A RuntimeClass whose cpu overhead is the JSON literal `value`, written as it is."""
    return ('{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"x"},"handler":"runsc",'
            '"overhead":{"podFixed":{"cpu":' + value + "}}}").encode()


BAD_RC = 'RuntimeClass in version "v1" cannot be handled as a RuntimeClass: '


@pytest.mark.parametrize("literal", [r'"\t1"', r'"\u001c1"', r'"1\n"', r'"\u0031"', r'"\u00a01"', r'"1\/"'])
async def test_a_quantity_written_with_an_escape_is_refused(clusters: Clusters, literal: str) -> None:
    # quantity.go UnmarshalJSON gets the raw literal (encoding/json literalStore hands an Unmarshaler the bytes
    # as written): it drops the quotes and trims spaces, and parseQuantityString stops at the backslash
    status, body = await post(clusters, rc_body(literal))
    assert (status, body["message"]) == (400, BAD_RC + FORMAT_WRONG)


@pytest.mark.parametrize(("literal", "stored"), [
    ('"\u00a01"', "1"), ('"\u30001"', "1"), ('" 1 "', "1"), ("1e3", "1e3"), ("1e4294967296", "1e4294967296"),
    ("1.0", "1"), ("0.5", "500m"), ("1E-3", "1E-3"), ("1.5E-3", "1500e-6"), ("-0", "0")])
async def test_a_quantity_is_read_from_its_literal(clusters: Clusters, literal: str, stored: str) -> None:
    # Go's spaces (strings.TrimSpace) trimmed from a string written without escapes; a number parsed from its text,
    # so 1e3 and 1E-3 are kept as written (DecimalExponent, canonical already) and the exponent of 1e4294967296 is cut
    # to int32 (suffix.go interpret: int32(parsed) is 0), a value of 1 whose text ParseQuantity keeps
    status, body = await post(clusters, rc_body(literal))
    assert (status, body["overhead"]["podFixed"]["cpu"]) == (201, stored), body


async def test_nan_and_infinity_are_not_json(clusters: Clusters) -> None:
    # Python's json reads NaN and Infinity, Go's encoding/json does not: SimpleMetaFactory.Interpret fails before the
    # kind is known, and the create handler's transformDecodeError names the body (summarizeData: 30 bytes)
    for literal, char in (("NaN", "'N' looking for beginning of value"),
                          ("-Infinity", "'I' in numeric literal")):
        status, body = await post(clusters, rc_body(literal))
        assert (status, body["message"]) == (400, (
            "the object provided is unrecognized (must be of type RuntimeClass): couldn't get version/kind; json parse "
            f'error: invalid character {char} ({rc_body(literal)[:30].decode()} ...)'))
    # a merge patch is decoded strictly first (jsonPatcher.applyJSPatch, fieldValidation Warn by default)
    await clusters.host.create(RUNTIMECLASSES, rc("y", "runsc"))
    status, body = await post(clusters, b'{"overhead":{"podFixed":{"cpu":NaN}}}',
                              "/apis/node.k8s.io/v1/runtimeclasses/y", "PATCH", "application/merge-patch+json")
    assert (status, body["message"]) == (400, "error decoding patch: invalid character 'N' looking for beginning of "
                                              "value")


async def test_a_merge_patch_keeps_the_literal_and_a_strategic_one_does_not(clusters: Clusters) -> None:
    # evanphx/json-patch MergePatch keeps each value's raw bytes (lazyNode), so UnmarshalJSON sees "\u0031";
    # strategicPatchObject decodes the patch into a map and FromUnstructured marshals each quantity again: "1"
    await clusters.host.create(RUNTIMECLASSES, rc("y", "runsc"))
    path = "/apis/node.k8s.io/v1/runtimeclasses/y"
    patch = rb'{"overhead":{"podFixed":{"cpu":"\u0031"}}}'
    status, body = await post(clusters, patch, path, "PATCH", "application/merge-patch+json")
    assert (status, FORMAT_WRONG in body["message"]) == (422, True), body
    status, body = await post(clusters, patch, path, "PATCH", "application/strategic-merge-patch+json")
    assert (status, body["overhead"]["podFixed"]) == (200, {"cpu": "1"}), body
    status, body = await post(clusters, rb'{"overhead":{"podFixed":{"cpu":"\t1"}}}', path, "PATCH",
                              "application/strategic-merge-patch+json")
    assert (status, FORMAT_WRONG in body["message"]) == (422, True), body


def test_python_values_are_read_as_go_writes_them() -> None:
    # a plain value (a YAML body's) reaches UnmarshalJSON as Go's json.Marshal writes it: a control character as an
    # escape, a float64 in its shortest form (1e-07 as 1e-7, 1000.0 as 1000); NaN is no JSON at all
    for text in ("\t1", "\x1c1", "1\x1f"):
        with pytest.raises(quantity.QuantityError, match="regular expression"):
            quantity.from_json(text)
    assert quantity.stored("\xa01") == quantity.stored("1\u3000") == "1"
    assert [quantity.go_float_text(f) for f in (1000.0, 1e-7, 1.5e-7, 1e21, 0.1, -0.0, 1e20)] == [
        "1000", "1e-7", "1.5e-7", "1e+21", "0.1", "-0", "100000000000000000000"]
    with pytest.raises(quantity.QuantityError, match="unsupported value: NaN"):
        quantity.from_json(float("nan"))
