"""A hostile tenant and hostile patch results against the RuntimeClass sync (behaviour.md sections 1, 2 and 5),
over real HTTP: the embedded host and virtual API servers of tests/conftest.py and the syncer in process.

- Section 2: a virtual class exists iff its host class exists and matches; a class created locally is deleted
  promptly, and a finalizer does not keep it (Terminating for good) nor block the re-creation of a copy.
- Section 5 / README: a patch result the API server would refuse (kubernetes pkg/apis/node/validation
  ValidateRuntimeClass, apimachinery ValidateLabels / ValidateAnnotations) is a patch failure like a throw: a
  Warning `PatchFailed` event naming the object and the patch, and the last good copy kept.
- Section 5: `metadata.name`, `metadata.namespace`, `apiVersion` and `kind` cannot be patched, however the path
  is written, nor can the whole object or its metadata.
- Section 5 after vcluster's pkg/config/validation.go validatePatches: an empty `expression` is no expression.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from syncer.config.model import ConfigError, Patch, SyncerConfig, parse_config
from syncer.kube.client import ApiError
from syncer.kube.resources import EVENTS, RUNTIMECLASSES
from syncer.kube.wait import wait_for
from syncer.patches.apply import Patcher
from tests.conftest import HOST_NS, VCLUSTER, Clusters, rc, rc_config, running_syncer, virtual_rc_names

Obj = dict[str, Any]
DEV = {"matchLabels": {"environment": "development"}}


def with_patches(*patches: Obj) -> Obj:
    """A vcluster.yaml syncing the classes labelled environment=development, with `patches`."""
    doc = rc_config(DEV)
    doc["sync"]["fromHost"]["runtimeClasses"]["patches"] = list(patches)
    return doc


def config_errors(*patches: Obj) -> list[str]:
    """The errors loading a vcluster.yaml with `patches` gives ([] when it loads)."""
    try:
        parse_config(with_patches(*patches))
    except ConfigError as e:
        return e.errors
    return []


# --- section 2: finalizers do not keep a class the host does not decide -------------------------------------------

async def test_a_locally_created_class_held_by_a_finalizer_is_deleted(clusters: Clusters,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    host = await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "gvisor synced")
        made = rc("tenant-made", "evil")
        made["metadata"]["finalizers"] = ["tenant.io/keep"]
        await clusters.virtual.create(RUNTIMECLASSES, made)
        await virtual_rc_names(clusters, lambda n: n == {"gvisor"}, "the tenant's class gone, finalizer and all")
        after = await clusters.host.get(RUNTIMECLASSES, "gvisor")
    assert "delete virtual runtime class tenant-made, because physical object is missing" in caplog.messages
    assert ("delete virtual runtime class tenant-made: removing its finalizers tenant.io/keep, which hold it"
            in caplog.messages)
    assert after["metadata"]["resourceVersion"] == host["metadata"]["resourceVersion"]  # the host is never written


async def test_a_synced_copy_replaced_by_a_tenant_class_with_a_finalizer_is_put_back(clusters: Clusters) -> None:
    host = await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    evil = rc("gvisor", "evil", {"environment": "development"}, scheduling={"tolerations": [{"operator": "Exists"}]})
    evil["metadata"]["finalizers"] = ["tenant.io/keep"]
    async with running_syncer(clusters, rc_config(DEV)):
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        replaced = None
        while replaced is None:  # the tenant deletes the copy and takes the name before the syncer re-creates it
            try:
                await clusters.virtual.delete(RUNTIMECLASSES, "gvisor")
                replaced = await clusters.virtual.create(RUNTIMECLASSES, evil)
            except ApiError as e:
                if not (e.already_exists or e.not_found):
                    raise
        objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o and (
            o["gvisor"]["metadata"]["uid"] != replaced["metadata"]["uid"]), timeout=10, what="the copy put back")
        after = await clusters.host.get(RUNTIMECLASSES, "gvisor")
    copy = objs["gvisor"]
    assert copy["handler"] == "runsc"
    assert "scheduling" not in copy
    assert "finalizers" not in copy["metadata"] and "deletionTimestamp" not in copy["metadata"]
    assert after["metadata"]["resourceVersion"] == host["metadata"]["resourceVersion"]


async def test_a_synced_copy_a_tenant_left_terminating_is_recreated(clusters: Clusters,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    async with running_syncer(clusters, rc_config(DEV)) as syncer:
        await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
        await syncer.wait_idle()
        held = await clusters.virtual.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"finalizers": ["tenant.io/keep"]}})
        await clusters.virtual.delete(RUNTIMECLASSES, "gvisor")  # Terminating: the finalizer holds it
        objs = await wait_for(clusters.virtual, RUNTIMECLASSES, lambda o: "gvisor" in o and (
            o["gvisor"]["metadata"]["uid"] != held["metadata"]["uid"]), timeout=10, what="a new copy")
    assert objs["gvisor"]["handler"] == "runsc"
    assert "deletionTimestamp" not in objs["gvisor"]["metadata"]
    assert "re-create virtual runtime class gvisor: it is being deleted" in caplog.messages


# --- section 5: a result the API server would refuse is a patch failure; the good copy stays ------------------------

LEGACY = "context.hostObject.metadata.labels.legacy"


async def legacy_label_fails_the_patch(c: Clusters, doc: Obj, config: SyncerConfig) -> tuple[Obj, dict[str, Obj], Obj]:
    """Sync host class gvisor with the patches of `config` (from vcluster.yaml `doc`), then label it `legacy` on
    the host, which makes them fail; returns (the virtual copy before, the virtual events once a PatchFailed is
    among them, the virtual copy then)."""
    await c.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    assert patcher is not None
    try:
        async with running_syncer(c, doc, patcher=patcher) as syncer:
            await virtual_rc_names(c, lambda n: "gvisor" in n, "gvisor synced")
            await syncer.wait_idle()
            good = await c.virtual.get(RUNTIMECLASSES, "gvisor")
            await c.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"labels": {"legacy": "yes"}}})
            events = await wait_for(c.virtual, EVENTS, lambda o: any(
                e["reason"] == "PatchFailed" for e in o.values()), namespace="default", timeout=10,
                what="a PatchFailed event")
            return good, events, await c.virtual.get(RUNTIMECLASSES, "gvisor")
    finally:
        await patcher.close()
DNS1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
QUALIFIED_NAME = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
                  "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                  "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
               "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


@pytest.mark.parametrize(("patch", "message"), [
    ({"path": "handler", "expression": f"{LEGACY} ? null : value"},
     'runtime class "gvisor": patch "handler" failed: the result has no handler: a RuntimeClass needs one'),
    ({"path": "handler", "expression": f'{LEGACY} ? "Evil_Handler" : value'},
     'runtime class "gvisor": patch "handler" failed: the result at handler is not a valid handler '
     f'"Evil_Handler": {DNS1123_LABEL}'),
    ({"path": "metadata.labels", "expression": f'{LEGACY} ? Object.assign({{}}, value, {{"bad key": "x"}}) : value'},
     'runtime class "gvisor": patch "metadata.labels" failed: the result at metadata.labels has an invalid label '
     f'key "bad key": {QUALIFIED_NAME}'),
    ({"path": 'metadata.labels["tier"]', "expression": f'{LEGACY} ? "not valid!" : "gold"'},
     'runtime class "gvisor": patch "metadata.labels["tier"]" failed: the result at metadata.labels["tier"] is not '
     f'a valid label value "not valid!": {LABEL_VALUE}'),
    ({"path": "metadata.annotations", "expression": f'{LEGACY} ? {{"bad key": "x"}} : value'},
     'runtime class "gvisor": patch "metadata.annotations" failed: the result at metadata.annotations has an '
     f'invalid annotation key "bad key": {QUALIFIED_NAME}'),
], ids=["handler_null", "handler_not_dns_label", "label_key", "label_value", "annotation_key"])
async def test_a_patch_result_the_api_server_would_refuse_keeps_the_good_copy(
        clusters: Clusters, caplog: pytest.LogCaptureFixture, patch: Obj, message: str) -> None:
    doc = with_patches(patch)
    good, events, kept = await legacy_label_fails_the_patch(clusters, doc, parse_config(doc))
    (event,) = events.values()
    assert (event["type"], event["involvedObject"]["name"], event["message"]) == ("Warning", "gvisor", message)
    assert message in caplog.messages  # the log names the object and the patch path too
    # the last good copy, neither deleted nor written
    assert (kept["metadata"]["uid"], kept["metadata"]["resourceVersion"], kept["handler"]) == (
        good["metadata"]["uid"], good["metadata"]["resourceVersion"], "runsc")


# --- section 5: the name, the type and the server's metadata cannot be patched, however the path is written ---------

def test_protected_fields_are_compared_by_path_segment_not_by_spelling() -> None:
    where = "invalid sync.fromHost.runtimeClasses.patches[0].path"
    same_names = "cannot be patched: RuntimeClasses keep their name and type on both sides"
    whole = ("cannot be patched: it reaches metadata.name (RuntimeClasses keep their name and type on both "
             "sides): the whole object, metadata and wildcards over them cannot be patched; patch fields such as "
             "metadata.labels or metadata.annotations")
    refused = {
        'metadata["name"]': same_names, '["apiVersion"]': same_names, '["kind"]': same_names,
        'metadata["namespace"]': same_names,
        "metadata": whole, "*": whole, "metadata.*": whole, '["metadata"]': whole, "*.name": whole, "*.*": whole,
        'metadata["resourceVersion"]': "cannot be patched: metadata.resourceVersion is never copied to the virtual "
                                       "RuntimeClass (the virtual side owns it)",
        'metadata["finalizers"]': "cannot be patched: metadata.finalizers is never copied to the virtual "
                                  "RuntimeClass (the virtual side owns it)",
    }
    for path, reason in refused.items():
        assert config_errors({"path": path, "expression": "value"}) == [f'{where}: "{path}" {reason}'], path
    for path in ("metadata.labels.*", "*.labels", 'metadata.annotations["name"]', "handler"):
        assert config_errors({"path": path, "expression": "value"}) == [], path


async def test_a_patch_result_without_metadata_is_a_patch_failure_not_a_crash(
        clusters: Clusters, caplog: pytest.LogCaptureFixture) -> None:
    # Configuration refuses a patch of `metadata` (above); a Patcher built past it must still fail safely.
    doc = with_patches({"path": "handler", "expression": "value"})
    config = parse_config(doc)
    config.rc.patches[0] = Patch(path="metadata", expression=f"{LEGACY} ? null : value")
    good, events, kept = await legacy_label_fails_the_patch(clusters, doc, config)
    message = 'runtime class "gvisor": patch "metadata" failed: the result at metadata must be an object, got null'
    (event,) = events.values()
    assert (event["reason"], event["message"]) == ("PatchFailed", message)
    assert not [r for r in caplog.records if r.exc_info]  # no traceback
    assert kept["metadata"]["resourceVersion"] == good["metadata"]["resourceVersion"]


# --- section 5 after vcluster: an empty expression is no expression ------------------------------------------------

def test_an_empty_expression_is_no_expression() -> None:
    assert config_errors({"path": "metadata.annotations", "expression": ""}) == [
        "invalid sync.fromHost.runtimeClasses.patches[0]: need to use one of: expression, labels or reference"]
    assert config_errors({"path": "metadata.annotations", "expression": "", "labels": {}}) == []


def test_a_reverse_expression_alone_counts_as_an_expression_as_in_vclusters_own_case() -> None:
    # vcluster pkg/config/validation_test.go TestValidateAllSyncPatches, "Invalid duplicated paths on patches":
    # its second patch has only a reverseExpression, and the one error is the duplicate path (validatePatches
    # would say "need to use one of" first, were it not counted as an expression); the path is a RuntimeClass's here
    assert config_errors({"path": "handler", "expression": '"my-prefix-"+value'},
                         {"path": "handler", "reverseExpression": 'value.slice("my-prefix".length)'}) == [
        'invalid sync.fromHost.runtimeClasses.patches[1]: have the same path "handler"']


async def test_an_empty_expression_beside_a_reverse_expression_does_not_delete_the_field(clusters: Clusters) -> None:
    await clusters.host.create(RUNTIMECLASSES, rc("gvisor", "runsc", {"environment": "development"}))
    await clusters.host.patch(RUNTIMECLASSES, "gvisor", {"metadata": {"annotations": {"team": "platform"}}})
    doc = with_patches({"path": "metadata.annotations", "expression": "", "reverseExpression": "value"})
    patcher = await Patcher.create(parse_config(doc), vcluster_name=VCLUSTER, host_namespace=HOST_NS)
    try:
        async with running_syncer(clusters, doc, patcher=patcher):
            await virtual_rc_names(clusters, lambda n: "gvisor" in n, "gvisor synced")
            copy = await clusters.virtual.get(RUNTIMECLASSES, "gvisor")
    finally:
        if patcher is not None:
            await patcher.close()
    assert copy["metadata"]["annotations"] == {"team": "platform"}
