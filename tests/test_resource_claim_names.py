"""Host names vcluster's mappers give the objects a pod names beyond ConfigMaps, Secrets and PVCs, through the real
path (the syncer over HTTP, the stand-in copying the claims as vcluster's claim sync would): ResourceClaims and
ResourceClaimTemplates get vcluster's short host names, and a glusterfs volume's Endpoints the `-x-` name.

vcluster's production mappers of both kinds are `generic.NewMapper(ctx, &resourcev1.ResourceClaim{},
translate.Default.HostNameShort)` (loft-sh/vcluster HEAD 487667546, pkg/mappings/resources/resourceclaims.go,
resourceclaimtemplates.go), and its pod translator renames a pod's claims through them (`translateResourceClaims`,
pkg/controllers/resources/pods/translate/translator.go). `HostNameShort` (pkg/util/translate/single_namespace.go) is
`"v" + base36.EncodeBytes(sha256("<name>-x-<namespace>-x-<vcluster>"))[0:13]` (pkg/util/base36/base36.go). The
literals below were derived from that code by hand-transcribing it (no Go toolchain here): e.g.
sha256("my-claim-x-default-x-test") in base 36 starts `mxp9i7o0awtyx`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kubesim.vcluster_standin import host_name_short as standin_short
from syncer.controllers.translate import base36_encode_bytes, host_endpoints_name, host_name_short
from syncer.kube.resources import PODS, RESOURCECLAIMS, RESOURCECLAIMTEMPLATES
from syncer.kube.wait import wait_for
from tests.conftest import HOST_NS, VCLUSTER, Clusters, pod, rc_config, running_syncer

Obj = dict[str, Any]
HOST_POD = f"gpu-user-x-default-x-{VCLUSTER}"
MY_CLAIM = "vmxp9i7o0awtyx"  # HostNameShort("my-claim", "default") in vcluster "test" (the audit's example)
MY_TEMPLATE = "vpdlb8qhoebjpw"  # HostNameShort("my-template", "default") in vcluster "test"
CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}


def test_host_name_short_is_vclusters() -> None:
    assert host_name_short("my-claim", "default", "test") == standin_short("my-claim", "default", "test") == MY_CLAIM
    assert host_name_short("my-template", "default", "test") == MY_TEMPLATE
    assert host_name_short("", "default", "test") == ""  # HostNameShort: an empty name maps to nothing
    # `a` of b-x-c and `a-x-b` of c hash one string: the same host name (references.not_the_copy tells them apart)
    assert host_name_short("a", "b-x-c", "test") == host_name_short("a-x-b", "c", "test") == "v5j8nnafvuut61"


def test_base36_keeps_a_zero_for_each_leading_zero_byte() -> None:
    # base36.go EncodeBytesAsBytes: "leading zero bytes" become `0` digits; sha256("claim-163-x-ns-x-vc") starts with
    # the byte 0x00 (0020de...), so its short name starts `v0` (without the rule it would be v45aw50zo1io08)
    assert hashlib.sha256(b"claim-163-x-ns-x-vc").digest()[:3] == bytes.fromhex("0020de")
    assert host_name_short("claim-163", "ns", "vc") == standin_short("claim-163", "ns", "vc") == "v045aw50zo1io0"
    assert base36_encode_bytes(b"\x00\x00\x01") == "001"
    assert base36_encode_bytes(b"\x00\x00") == "00"
    assert base36_encode_bytes(bytes([1, 0])) == "74"  # 256 = 7 * 36 + 4


def claim_pod(**claim: str) -> Obj:
    p = pod("gpu-user")
    p["spec"]["resourceClaims"] = [{"name": "gpu", **claim}]
    p["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return p


async def host_pod(c: Clusters) -> Obj:
    objs = await wait_for(c.host, PODS, lambda o: f"{HOST_NS}/{HOST_POD}" in o, namespace=HOST_NS, timeout=10,
                          what="the host pod")
    return objs[f"{HOST_NS}/{HOST_POD}"]


async def claim_statuses(c: Clusters, predicate: Any, what: str) -> list[Obj]:
    objs = await wait_for(c.virtual, PODS, lambda o: predicate(
        ((o.get("default/gpu-user") or {}).get("status") or {}).get("resourceClaimStatuses")),
        namespace="default", timeout=10, what=what)
    statuses: list[Obj] = objs["default/gpu-user"]["status"]["resourceClaimStatuses"]
    return statuses


async def test_a_claim_is_vclusters_short_host_name_and_its_status_names_the_virtual_claim(clusters: Clusters) -> None:
    await clusters.virtual.create(RESOURCECLAIMS, {"metadata": {"name": "my-claim"}, "spec": CLAIM_SPEC}, "default")
    doc = rc_config()
    doc["sync"]["toHost"] = {"resourceClaims": {"enabled": True}}
    async with running_syncer(clusters, doc):
        await clusters.virtual.create(PODS, claim_pod(resourceClaimName="my-claim"), "default")
        hpod = await host_pod(clusters)
        assert hpod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimName": MY_CLAIM}]
        copy = await clusters.host.get(RESOURCECLAIMS, MY_CLAIM, HOST_NS)  # what the pod waited for
        assert copy["metadata"]["annotations"]["vcluster.loft.sh/object-name"] == "my-claim"
        # the host names the claim in the pod's status: the tenant sees its own claim's name (convertResourceClaim-
        # Statuses, diff.go), mapped from the name the syncer gave it
        await clusters.host.patch(PODS, HOST_POD, {"status": {"resourceClaimStatuses": [
            {"name": "gpu", "resourceClaimName": MY_CLAIM}]}}, HOST_NS, subresource="status")
        statuses = await claim_statuses(clusters, lambda s: bool(s), "the claim status copied back")
    assert statuses == [{"name": "gpu", "resourceClaimName": "my-claim"}]


async def test_a_claim_generated_from_a_template_keeps_its_host_name_whatever_its_annotations_say(
        clusters: Clusters) -> None:
    # The claims a pod's status names are the ones the host's resourceclaim controller generates from the template
    # (`<pod>-<claim>-<random>`), with the annotations of the template's `spec.metadata`, which the tenant writes
    # (and vcluster's claim-template sync copies): annotations naming another claim of the namespace are not taken
    # for vcluster's (vcluster's mapper would read them: generic.TryToTranslateBackByAnnotations)
    forged = {"vcluster.loft.sh/object-name": "my-claim", "vcluster.loft.sh/object-namespace": "default",
              "vcluster.loft.sh/object-kind": "resource.k8s.io/v1, Kind=ResourceClaim"}
    await clusters.virtual.create(RESOURCECLAIMTEMPLATES, {"metadata": {"name": "my-template"}, "spec": {
        "metadata": {"annotations": forged}, "spec": CLAIM_SPEC}}, "default")
    doc = rc_config()
    doc["sync"]["toHost"] = {"resourceClaims": {"enabled": True}, "resourceClaimTemplates": {"enabled": True}}
    async with running_syncer(clusters, doc) as syncer:
        await clusters.virtual.create(PODS, claim_pod(resourceClaimTemplateName="my-template"), "default")
        hpod = await host_pod(clusters)
        assert hpod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": MY_TEMPLATE}]
        template = await clusters.host.get(RESOURCECLAIMTEMPLATES, MY_TEMPLATE, HOST_NS)
        # what the host's resourceclaim controller would generate from it (kubesim runs none)
        generated = f"{HOST_POD}-gpu-x7k2q"
        await clusters.host.create(RESOURCECLAIMS, {"metadata": {
            "name": generated, "annotations": {**template["spec"]["metadata"]["annotations"],
                                               "resource.kubernetes.io/pod-claim-name": "gpu"}},
            "spec": template["spec"]["spec"]}, HOST_NS)
        await clusters.host.patch(PODS, HOST_POD, {"status": {"resourceClaimStatuses": [
            {"name": "gpu", "resourceClaimName": generated}]}}, HOST_NS, subresource="status")
        statuses = await claim_statuses(clusters, lambda s: bool(s), "the claim status copied back")
        await syncer.wait_idle()
    assert statuses == [{"name": "gpu", "resourceClaimName": generated}]


async def test_a_glusterfs_volume_names_the_host_copy_of_its_endpoints(clusters: Clusters) -> None:
    # translator.go translateVolumes: `Glusterfs.EndpointsName` (json `endpoints`) through mappings.Endpoints(), whose
    # mapper is generic.NewMapper(ctx, &corev1.Endpoints{}, translate.Default.HostName) and names default/kubernetes
    # the vcluster's own Endpoints (pkg/mappings/resources/endpoints.go endpointsMapper.VirtualToHost)
    p = pod("gluster")
    p["spec"]["volumes"] = [{"name": "data", "glusterfs": {"endpoints": "gluster-ep", "path": "vol"}},
                            {"name": "api", "glusterfs": {"endpoints": "kubernetes", "path": "vol", "readOnly": True}}]
    async with running_syncer(clusters, rc_config()):
        await clusters.virtual.create(PODS, p, "default")
        objs = await wait_for(clusters.host, PODS, lambda o: f"{HOST_NS}/gluster-x-default-x-{VCLUSTER}" in o,
                              namespace=HOST_NS, timeout=10, what="the pod synced without waiting for the Endpoints")
    volumes = objs[f"{HOST_NS}/gluster-x-default-x-{VCLUSTER}"]["spec"]["volumes"]
    assert [v.get("glusterfs") for v in volumes[:2]] == [
        {"endpoints": "gluster-ep-x-default-x-test", "path": "vol"},
        {"endpoints": "test", "path": "vol", "readOnly": True}]


def test_only_default_kubernetes_is_the_vclusters_own_endpoints() -> None:
    assert host_endpoints_name("kubernetes", "default", "test") == "test"
    assert host_endpoints_name("kubernetes", "other", "test") == "kubernetes-x-other-x-test"
    assert host_endpoints_name("ep", "default", "test") == "ep-x-default-x-test"


def test_a_status_of_many_claims_hashes_each_claim_once(monkeypatch: Any) -> None:
    # a tenant names as many claims as it likes (no limit in ValidatePod); mapping each status back by hashing
    # every named claim again took 6 s of the event loop at 1,000 claims, on every status copy of that pod
    from syncer.controllers import translate
    calls = []
    original = translate.host_name_short

    def counted(*a: Any) -> str:
        calls.append(a)
        return original(*a)
    monkeypatch.setattr(translate, "host_name_short", counted)
    n = 1000
    vpod = {"metadata": {"name": "p", "namespace": "default"},
            "spec": {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": f"claim-{i}"} for i in range(n)]}}
    statuses = [{"name": f"c{i}", "resourceClaimName": original(f"claim-{i}", "default", VCLUSTER)} for i in range(n)]
    hpod = {"metadata": {}, "status": {"resourceClaimStatuses": statuses}}
    patch = translate.status_update(hpod, vpod, VCLUSTER)
    assert patch is not None
    assert patch["status"]["resourceClaimStatuses"][n - 1]["resourceClaimName"] == f"claim-{n - 1}"
    assert len(calls) == n
