"""The hostile-tenant suite (issue 22; docs/security.md), property-based over real HTTP.

hypothesis generates what a tenant who is admin of the virtual cluster may write: pods whose labels and annotations
use the syncer's and vcluster's own keys (with values aimed at host objects: the vcluster's kubeconfig Secret,
another pod's token Secret, identity keys, a runtime class that does not exist), names and namespaces containing
`-x-` (two virtual pods with one host name), forged owner references, and the same keys added again after the pod
is synced. Each scenario runs against two in-process API servers and the running syncer (tokens renewed on an
injected clock, in annotation or Secret mode), then checks, from the requests the syncer sent and from the host's
state:

- it writes no host object but the host pods it owns and their token Secrets: every PATCH/PUT/DELETE names a host
  pod or token Secret name derived from a virtual pod, objects it does not own (the kubeconfig Secret `vc-test`, a
  Secret of another owner holding a token Secret's name, another owner's pod holding a pod's host name) keep their
  resourceVersion, and every host pod and Secret it created carries the identity of the virtual pod it is for;
- the state it reads back is its own: a host pod's object annotations name its virtual pod, the class annotation
  is the class the pod names (or absent), a renewal state names only the pod's own token Secret and token
  annotations, and no label or annotation key a tenant may not set reaches the host (podtranslate/trust.py);
- it deletes nothing it did not create, and leaves no host pod (nor token Secret) behind once the virtual pods are
  deleted, gracefully or with `--grace-period=0 --force`.

The default run is a fixed, small set of examples (a few seconds); `pytest -m soak tests/test_hostile_tenant.py`
runs many more.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesim.apiserver import EmbeddedAPIServer
from kubesim.vcluster import host_name
from kubesim.vcluster_standin import create_vcluster_host_objects
from syncer.kube.client import KubeClient
from syncer.kube.clock import FakeClock
from syncer.kube.resources import EVENTS, NAMESPACES, PODS, RUNTIMECLASSES, SECRETS
from tests.conftest import HOST_NS, TEST_AGENT, VCLUSTER, Clusters, eventually, pod, rc, rc_config, running_syncer

Obj = dict[str, Any]
LIFETIME = 600  # the shortest token lifetime the API server allows; renewals after 80% of it
DEV = {"matchLabels": {"environment": "development"}}
SYNCER_PREFIX = "runtimeclass-syncer"  # the syncer's user agent (runtimeclass-syncer/<version>)
# Keys from vcluster's conventions (pkg/util/translate: NameAnnotation, NamespaceAnnotation, UIDAnnotation,
# KindAnnotation, HostNameAnnotation, HostNamespaceAnnotation; the pod translator's downward-API, labels, owner,
# hosts and token annotations) and the syncer's own (README: token renewal, the merge base, the class annotation).
VCLUSTER_ANNOTATIONS = (
    "vcluster.loft.sh/object-name", "vcluster.loft.sh/object-namespace", "vcluster.loft.sh/object-uid",
    "vcluster.loft.sh/object-kind", "vcluster.loft.sh/object-host-name", "vcluster.loft.sh/object-host-namespace",
    "vcluster.loft.sh/name", "vcluster.loft.sh/namespace", "vcluster.loft.sh/uid",
    "vcluster.loft.sh/service-account-name", "vcluster.loft.sh/labels", "vcluster.loft.sh/owner-references",
    "vcluster.loft.sh/owner-set-kind", "vcluster.loft.sh/hosts-rewritten", "vcluster.loft.sh/token-abcdefgh",
    "vcluster.loft.sh/managed-annotations")
SYNCER_ANNOTATIONS = ("runtimeclass-syncer.io/token-renewal", "runtimeclass-syncer.io/virtual-runtime-class",
                      "runtimeclass-syncer.io/synced-annotations", "runtimeclass-syncer.io/scheduling-gates",
                      "runtimeclass-syncer.io/synced-images")
GATES = SYNCER_ANNOTATIONS[3]  # the gates the virtual pod had at the create: none here, whatever is forged
IMAGES = SYNCER_ANNOTATIONS[4]  # a hash of each container's image, by `<field>/<name>`: the host pod's own
OWN_ANNOTATIONS = frozenset(SYNCER_ANNOTATIONS)  # the syncer's keys a host pod may carry (its own values)
RENEWAL, VIRTUAL_RC = SYNCER_ANNOTATIONS[0], SYNCER_ANNOTATIONS[1]
OBJECT_NAME, OBJECT_NAMESPACE, OBJECT_UID = VCLUSTER_ANNOTATIONS[:3]
TOKEN_PREFIX = "vcluster.loft.sh/token-"
MANAGED_BY, NAMESPACE_LABEL = "vcluster.loft.sh/managed-by", "vcluster.loft.sh/namespace"
KUBECONFIG_SECRET = f"vc-{VCLUSTER}"  # the vcluster's own kubeconfig Secret (the chart's vc-<release>)


def vcluster_label(key: str) -> str:
    """vcluster's `HostLabel` for a label it rewrites: `vcluster.loft.sh/label-<vcluster>-x-<sha256(key)[:10]>`."""
    return f"vcluster.loft.sh/label-{VCLUSTER}-x-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def ns_label(key: str) -> str:
    """vcluster's `HostLabelNamespace`: `vcluster.loft.sh/ns-label-<vcluster>-x-<sha256(key)[:10]>`."""
    return f"vcluster.loft.sh/ns-label-{VCLUSTER}-x-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


REWRITTEN = ("release", MANAGED_BY, NAMESPACE_LABEL, "vcluster.loft.sh/controlled-by")  # vcluster LabelsToTranslate
LABEL_KEYS = (*REWRITTEN, vcluster_label("release"), ns_label("team"), "vcluster.loft.sh/label-other-x-0123456789",
              "runtimeclass-syncer.io/virtual-runtime-class", "runtimeclass-syncer.io/owner", "app")
LABEL_VALUES = (VCLUSTER, "default", "b-x-c", "ghost-rc", KUBECONFIG_SECRET, "x")
NAMES = ("web", "a", "a-x-b", "squat")
NAMESPACES_ = ("default", "c", "b-x-c")  # a/b-x-c and a-x-b/c share the host name a-x-b-x-c-x-test
SQUATTED = host_name("squat", "default", VCLUSTER)  # held by another owner's pod on the host
TAKEN_TOKEN_SECRET = host_name("web-sa-token", "default", VCLUSTER)  # held by another owner's Secret
FORGED_UID = "00000000-0000-4000-8000-000000000000"


def renewal(tokens: Obj, secret: str = "") -> str:
    state: Obj = {"renewAt": 0, "tokens": tokens}
    if secret:
        state["secret"] = secret
    return json.dumps(state, separators=(",", ":"))


ANNOTATION_VALUES = (
    renewal({"config": ["x"]}, KUBECONFIG_SECRET),  # issue 22, attack 1
    renewal({OBJECT_NAME: ["x"], OBJECT_NAMESPACE: ["x"]}),  # attack 1 without a Secret
    renewal({"kube-api-access": ["x"]}, TAKEN_TOKEN_SECRET),
    renewal({"kube-api-access": ["x"]}, host_name("a-sa-token", "b-x-c", VCLUSTER)),  # another pod's token Secret
    renewal({TOKEN_PREFIX + "abcdefgh": ["x"]}),
    "ghost-rc",  # attack 2
    "web", "default", "b-x-c", "squat", FORGED_UID, "true", "{}", 'app="forged"',
    json.dumps([{"apiVersion": "v1", "kind": "Secret", "name": KUBECONFIG_SECRET, "uid": FORGED_UID}]),
)
# values the syncer never derives itself: seen on a host pod, they came from the tenant
FORGED_ONLY = frozenset(v for v in ANNOTATION_VALUES if v.startswith(('{"', "[{")) or v in ("ghost-rc", FORGED_UID,
                                                                                               'app="forged"'))
OWNERS = (  # forged owner references (at most one controller, as apimachinery requires)
    {"apiVersion": "v1", "kind": "Service", "name": VCLUSTER, "uid": FORGED_UID, "controller": True},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "00000000-0000-4000-8000-000000000001"},
    {"apiVersion": "v1", "kind": "Secret", "name": KUBECONFIG_SECRET, "uid": "00000000-0000-4000-8000-000000000002"},
)


@dataclass(frozen=True)
class TenantPod:
    """One pod a hostile tenant creates, changes after sync, and deletes."""

    namespace: str
    name: str
    runtime_class: str | None  # gvisor passes the gate, kata does not
    automount: bool
    labels: dict[str, str]
    annotations: dict[str, str]
    owners: tuple[int, ...]
    later_labels: dict[str, str]
    later_annotations: dict[str, str]
    force_delete: bool


annotation_maps = st.dictionaries(st.sampled_from((*VCLUSTER_ANNOTATIONS, *SYNCER_ANNOTATIONS)),
                                  st.sampled_from(ANNOTATION_VALUES), max_size=5)
label_maps = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=4)
tenant_pods = st.builds(
    TenantPod, st.sampled_from(NAMESPACES_), st.sampled_from(NAMES), st.sampled_from((None, "gvisor", "kata")),
    st.booleans(), label_maps, annotation_maps, st.lists(st.integers(0, len(OWNERS) - 1), max_size=2, unique=True)
    .map(tuple), label_maps, annotation_maps, st.booleans())
scenarios = st.tuples(st.booleans(), st.lists(tenant_pods, min_size=1, max_size=4,
                                              unique_by=lambda p: (p.namespace, p.name)))


def manifest(p: TenantPod) -> Obj:
    m = pod(p.name, p.runtime_class, p.namespace, automountServiceAccountToken=p.automount)
    m["metadata"] |= {"labels": dict(p.labels), "annotations": dict(p.annotations)}
    if p.owners:
        m["metadata"]["ownerReferences"] = [OWNERS[i] for i in p.owners]
    return m


@dataclass
class Run:
    """What a scenario saw: the virtual pods (by key, with uid), and the objects of other owners on the host."""

    c: Clusters
    pods: dict[str, TenantPod]
    uids: dict[str, str]
    foreign: dict[tuple[str, str], str]  # (resource plural, name) -> resourceVersion

    def host(self, res: Any) -> dict[str, Obj]:
        return {n: o for (ns, n), o in self.c.host_server.storage.objects(res).items() if ns == HOST_NS}

    def host_name_of(self, key: str) -> str:
        ns, name = key.split("/")
        return host_name(name, ns, VCLUSTER)

    def token_secret_of(self, key: str) -> str:
        ns, name = key.split("/")
        return host_name(f"{name}-sa-token", ns, VCLUSTER)


def settled(run: Run, syncer: Any, key: str) -> bool:
    """The pod is synced (a host pod of its uid), reported (a Warning event on it), or being retried."""
    hp = run.host(PODS).get(run.host_name_of(key))
    if hp is not None and (hp["metadata"].get("annotations") or {}).get(OBJECT_UID) == run.uids[key]:
        return True
    events = run.c.virtual_server.storage.objects(EVENTS).values()
    if any(e["involvedObject"].get("uid") == run.uids[key] and e["type"] == "Warning" for e in events):
        return True
    return bool(syncer.pod_queue.num_requeues(key))


def check_host_state(run: Run, use_secrets: bool) -> None:
    """The host pods and Secrets the syncer made carry only its own state, for the pods they belong to."""
    for name, hp in run.host(PODS).items():
        meta = hp["metadata"]
        if ("pods", name) in run.foreign:
            continue
        ann, labels = meta.get("annotations") or {}, meta.get("labels") or {}
        key = f"{ann.get(OBJECT_NAMESPACE)}/{ann.get(OBJECT_NAME)}"
        assert key in run.pods and run.host_name_of(key) == name, f"host pod {name} names virtual pod {key}"
        assert ann.get(OBJECT_UID) == run.uids[key], f"host pod {name}: uid annotation"
        assert labels.get(MANAGED_BY) == VCLUSTER and labels.get(NAMESPACE_LABEL) == key.split("/")[0]
        assert ann.get(VIRTUAL_RC) == run.pods[key].runtime_class, f"host pod {name}: class annotation"
        assert ann.get(GATES) == "", f"host pod {name}: scheduling-gates annotation"
        assert set(json.loads(ann[IMAGES])) == {f"{fld}/{c['name']}" for fld in ("initContainers", "containers")
                                                for c in hp["spec"].get(fld) or []}, f"host pod {name}: images"
        for k in ann:
            assert not k.startswith("runtimeclass-syncer.io/") or k in OWN_ANNOTATIONS, f"{name}: annotation {k}"
        # the virtual namespace's kubernetes.io/metadata.name (kube-apiserver's SetDefaults_Namespace) as an ns-label
        assert labels.get(ns_label("kubernetes.io/metadata.name")) == key.split("/")[0], f"{name}: ns-label"
        allowed = {MANAGED_BY, NAMESPACE_LABEL, ns_label("kubernetes.io/metadata.name"),
                   *(vcluster_label(k) for k in REWRITTEN)}
        for k in labels:
            assert not k.startswith(("vcluster.loft.sh/", "runtimeclass-syncer.io/")) or k in allowed, \
                f"{name}: label {k}"
        for k, v in ann.items():
            assert v not in FORGED_ONLY, f"host pod {name}: the tenant's value of {k} reached it"
        if RENEWAL in ann:
            state = json.loads(ann[RENEWAL])
            assert state.get("secret", "") == (run.token_secret_of(key) if use_secrets else "")
            if not use_secrets:
                assert all(k.startswith(TOKEN_PREFIX) and k in ann for k in state["tokens"]), state
    for name, secret in run.host(SECRETS).items():
        if ("secrets", name) in run.foreign:
            continue
        ann = secret["metadata"].get("annotations") or {}
        key = f"{ann.get(OBJECT_NAMESPACE)}/{ann.get(OBJECT_NAME)}"
        assert key in run.pods and run.token_secret_of(key) == name, f"host secret {name} is for {key}"


def check_requests(run: Run) -> None:
    """Every write the syncer sent to the host names an object whose name is derived from a virtual pod."""
    pods = {run.host_name_of(k) for k in run.pods}
    secrets = {run.token_secret_of(k) for k in run.pods}
    path = re.compile(rf"^/api/v1/namespaces/{HOST_NS}/(pods|secrets)(?:/([^/]+)(?:/(status|ephemeralcontainers|"
                      r"resize))?)?$")
    for method, p, agent in run.c.host_server.requests:
        if not agent.startswith(SYNCER_PREFIX) or method not in ("POST", "PUT", "PATCH", "DELETE"):
            continue
        m = path.match(p)
        assert m is not None, f"the syncer wrote {method} {p}"
        resource, name = m.group(1), m.group(2)
        assert (method == "POST") == (name is None), f"{method} {p}"
        if name is not None:
            assert name in (pods if resource == "pods" else secrets), f"{method} {p}: not a derived name"


async def scenario(tmp: Path, use_secrets: bool, tenant: list[TenantPod]) -> None:
    async with EmbeddedAPIServer("host", bookmark_interval=0.5) as hs, \
            EmbeddedAPIServer("virtual", runtime_class_admission=False, bookmark_interval=0.5) as vs:
        host = await KubeClient.from_kubeconfig(str(hs.write_kubeconfig(tmp / "h", HOST_NS)), "host",
                                                user_agent=TEST_AGENT)
        virtual = await KubeClient.from_kubeconfig(str(vs.write_kubeconfig(tmp / "v")), "virtual",
                                                   user_agent=TEST_AGENT)
        try:
            c = Clusters(hs, vs, tmp / "h", tmp / "v", host, virtual)
            await run_scenario(c, use_secrets, tenant)
        finally:
            await host.close()
            await virtual.close()


async def run_scenario(c: Clusters, use_secrets: bool, tenant: list[TenantPod]) -> None:
    await c.host.create(NAMESPACES, {"metadata": {"name": HOST_NS}})
    await create_vcluster_host_objects(c.host, HOST_NS, VCLUSTER)
    for ns in NAMESPACES_[1:]:
        await c.virtual.create(NAMESPACES, {"metadata": {"name": ns}})
    await c.host.create(RUNTIMECLASSES, rc("gvisor", labels={"environment": "development"}))
    await c.host.create(RUNTIMECLASSES, rc("kata", labels={"environment": "production"}))
    foreign = [
        (SECRETS, await c.host.create(SECRETS, {"metadata": {"name": KUBECONFIG_SECRET}, "data": {"config": "eA=="}},
                                      HOST_NS)),
        (SECRETS, await c.host.create(SECRETS, {"metadata": {"name": TAKEN_TOKEN_SECRET}, "data": {"a": "eA=="}},
                                      HOST_NS)),
        (PODS, await c.host.create(PODS, pod(SQUATTED, namespace=HOST_NS), HOST_NS)),
    ]
    run = Run(c, {f"{p.namespace}/{p.name}": p for p in tenant}, {},
              {(res.plural, o["metadata"]["name"]): o["metadata"]["resourceVersion"] for res, o in foreign})
    doc = rc_config(DEV)
    if use_secrets:
        doc["sync"]["toHost"] = {"pods": {"useSecretsForSATokens": True}}
    clock = FakeClock()
    async with running_syncer(c, doc, clock=clock, token_lifetime=LIFETIME) as syncer:
        for key, p in run.pods.items():  # one after the other: which of two pods with one host name wins is known
            run.uids[key] = (await c.virtual.create(PODS, manifest(p), p.namespace))["metadata"]["uid"]
            await eventually(lambda k=key: settled(run, syncer, k), f"pod {key} synced or refused")
        await syncer.wait_idle()
        clock.advance(0.8 * LIFETIME)  # every token due for renewal (and every forged state long since)
        await syncer.wait_idle()
        check_host_state(run, use_secrets)
        for key, p in run.pods.items():  # the same keys again after sync, with other values
            ns, name = key.split("/")
            await c.virtual.patch(PODS, name, {"metadata": {"labels": {**p.later_labels, "step": "2"},
                                                            "annotations": p.later_annotations}}, ns)
            synced = run.host(PODS).get(run.host_name_of(key))
            if synced is not None and (synced["metadata"].get("annotations") or {}).get(OBJECT_UID) == run.uids[key]:
                await eventually(lambda k=key: (run.host(PODS).get(run.host_name_of(k)) or {}).get("metadata", {})
                                 .get("labels", {}).get("step") == "2", f"the change of {key} on the host")
        await syncer.wait_idle()
        check_host_state(run, use_secrets)
        for key, p in run.pods.items():
            ns, name = key.split("/")
            await c.virtual.delete(PODS, name, ns, grace_period_seconds=0 if p.force_delete else None)
        await eventually(lambda: not c.virtual_server.storage.objects(PODS), "every virtual pod gone")
        await eventually(lambda: set(run.host(PODS)) == {SQUATTED} and set(run.host(SECRETS)) == {
            KUBECONFIG_SECRET, TAKEN_TOKEN_SECRET}, "no host pod or token Secret left behind", timeout=5)
        await syncer.wait_idle()
    for (plural, name), rv in run.foreign.items():
        obj = c.host_server.storage.get(PODS if plural == "pods" else SECRETS, HOST_NS, name)
        assert obj is not None and obj["metadata"]["resourceVersion"] == rv, f"{plural} {name} of another owner"
    check_requests(run)


def run(use_secrets: bool, tenant: list[TenantPod]) -> None:
    async def go() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            await scenario(Path(tmp), use_secrets, tenant)
    asyncio.run(go())


SETTINGS = {"deadline": None, "derandomize": True, "print_blob": True,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


@settings(max_examples=12, **SETTINGS)  # type: ignore[arg-type]
@given(scenarios)
def test_a_hostile_tenant_cannot_make_the_syncer_write_or_keep_what_it_does_not_own(
        case: tuple[bool, list[TenantPod]]) -> None:
    run(*case)


@pytest.mark.soak
@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(scenarios)
def test_a_hostile_tenant_long_run(case: tuple[bool, list[TenantPod]]) -> None:
    run(*case)
