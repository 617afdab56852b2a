"""`make mutate`: mutation testing, and a score.

1. mutmut (a maintained mutation tester) mutates the pure modules (`[tool.mutmut]` in pyproject.toml:
   selector, gate, policy, refusal, the pod table, translation, work queue, patch paths) and runs their
   fast unit tests against each mutant.
2. The listed mutations of integration paths (below: lines an outside review broke without a test
   noticing) are applied one at a time to a scratch copy of the repository, and the tests named for each
   are run there over real HTTP.

Prints every listed mutation as caught or missed, mutmut's counts, and the mutation score over the pure
modules (mutmut's: caught or timed out / all mutants); exits 1 when a listed mutation is missed or the score
is below --min-score (default 90), else 0. Survivors are listed with `mutmut results`, shown with
`mutmut show NAME`; README "Mutation testing" says which survivors are accepted and why.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY = ("syncer", "kubesim", "tests", "examples", "config", "deploy", "pyproject.toml", "README.md")


@dataclass(frozen=True)
class Mutation:
    """Replace `old` (exactly once) by `new` in `path`; `tests` (pytest arguments) must then fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


LISTED = (
    Mutation("request_timeout ignored", "syncer/kube/client.py",
             "timeout if timeout is not None else self.request_timeout", "timeout",
             ("tests/test_reliability.py", "-k", "hung")),
    Mutation("default token audiences cut to one", "syncer/controllers/podtranslate/tokens.py",
             'DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local", "https://kubernetes.default.svc",\n'
             '                     "https://kubernetes.default")',
             'DEFAULT_AUDIENCES = ("https://kubernetes.default.svc.cluster.local",)',
             ("tests/test_podtranslate_tokens.py",)),
    Mutation("ConfigMap/Secret all flags swapped", "syncer/config/model.py",
             '{"configmap": to_host.configMaps.all, "secret": to_host.secrets.all}',
             '{"configmap": to_host.secrets.all, "secret": to_host.configMaps.all}',
             ("tests/test_workloads.py", "-k", "by_all")),
    Mutation("backoff not reset after a success", "syncer/kube/controller.py",
             "                self.queue.forget(key)\n", "                pass\n",
             ("tests/test_controller.py",)),
    Mutation("stale host pod never recognised", "syncer/controllers/podplan.py",
             'if uid and uid != vmeta.get("uid"):', "if False:",
             ("tests/test_podplan.py", "tests/test_pod_lifecycle.py")),
    Mutation("a host pod without its uid annotation taken for stale (its workload deleted)",
             "syncer/controllers/podplan.py", 'if uid and uid != vmeta.get("uid"):', 'if uid != vmeta.get("uid"):',
             ("tests/test_trust_boundary.py", "-k", "row_17")),
    Mutation("a virtual pod bound while its host pod is pending deleted", "syncer/controllers/podplan.py",
             "    if vnode and hnode and vnode != hnode:", "    if vnode and vnode != hnode:",
             ("tests/test_trust_boundary.py", "-k", "row_18")),
    Mutation("the trust boundary bypassed (a tenant's reserved keys reach the host)", "syncer/controllers/pods.py",
             "vpod = trust.tenant_pod(raw) if raw is not None else None", "vpod = raw",
             ("tests/test_trust_boundary.py", "-k", "attack_2")),
    Mutation("a token Secret written without its ownership test", "syncer/controllers/podtokens.py",
             "ops = self._ours(namespace, name) + [", "ops = [",
             ("tests/test_trust_boundary.py", "-k", "tenant_secret")),
    Mutation("a renewal writes any annotation its state names", "syncer/controllers/podtokens.py",
             "k in host_ann and k.startswith(tokens.TOKEN_ANNOTATION_PREFIX))", "True)",
             ("tests/test_trust_boundary.py", "-k", "forged_renewal")),
    Mutation("gate ignores the selector (seen by the convergence checker)", "syncer/controllers/gate.py",
             "    if not config.selector.matches(labels):\n", "    if False:\n",
             ("tests/test_convergence.py", "-k", "quiescence")),
    Mutation("the waiting SyncWarning at 5 s instead of 10 s", "syncer/controllers/pods.py",
             "WAIT_WARNING = 10.0", "WAIT_WARNING = 5.0",
             ("tests/test_workloads.py", "-k", "10_seconds")),
    Mutation("readiness-gate conditions never reach the host", "syncer/controllers/podupdate.py",
             "    out.host_condition_ops = host_gate_condition_ops(vpod, host)", "    out.host_condition_ops = []",
             ("tests/test_pod_parity.py", "-k", "readiness")),
    Mutation("host labels written as whole maps (a host write in between lost)", "syncer/controllers/podupdate.py",
             "    if not isinstance(have, dict):", "    if True:",
             ("tests/test_pod_parity.py", "-k", "between_the_syncers_read")),
    Mutation("readiness-gate conditions written as the whole list", "syncer/controllers/podupdate.py",
             "    if not isinstance(current, list):", "    if True:",
             ("tests/test_pod_parity.py", "-k", "stale_cache_keeps")),
    Mutation("a gate condition written at the cache's index without a test", "syncer/controllers/podupdate.py",
             '{"op": "test", "path": f"/status/conditions/{i}", "value": current[i]},', "",
             ("tests/test_pod_parity.py", "-k", "moved_since")),
    Mutation("a label the host changed since the cache saw it overwritten without a test",
             "syncer/controllers/podupdate.py",
             'ops += [{"op": "test", "path": path, "value": have[k]}, {"op": "replace", "path": path, "value": v}]',
             'ops += [{"op": "replace", "path": path, "value": v}]',
             ("tests/test_pod_parity.py", "-k", "same_key_in_between")),
    Mutation("a projection's shorter expirationSeconds ignored", "syncer/controllers/podtokens.py",
             "        asked = min(self.lifetime, expiration) if self.lifetime and expiration else self.lifetime",
             "        asked = self.lifetime", ("tests/test_token_renewal.py", "-k", "shorter_token")),
    Mutation("a renewal forgets a projection's shorter expirationSeconds", "syncer/controllers/podtokens.py",
             "            answers = {k: await self._request(vpod, audiences, state.expirations.get(k))",
             "            answers = {k: await self._request(vpod, audiences, None)",
             ("tests/test_token_renewal.py", "-k", "shorter_token")),
    Mutation("tokens the server shortened: the next renewal looked at after 80% of the lifetime asked",
             "syncer/controllers/podtokens.py",
             "        wait = renewed.renew_at - self.clock.wall()  # after 80% of what the server granted",
             "        wait = tokens.RENEW_AFTER * self.lifetime  # after 80% of what the server granted",
             ("tests/test_token_renewal.py", "-k", "shortens")),
    Mutation("the virtual status written whole over a gate condition set behind the cache",
             "syncer/controllers/translate.py",
             '    if "conditions" not in status or not gate_types(vpod.get("spec") or {}):',
             "    if True:", ("tests/test_pod_parity.py", "-k", "behind_the_cache_is_not_undone")),
    Mutation("the cache of host pods keeps their tokens", "syncer/controllers/sources.py",
             "    if isinstance(ann, dict) and any(k.startswith(TOKEN_ANNOTATION_PREFIX) for k in ann):",
             "    if False:", ("tests/test_token_renewal.py", "-k", "80_percent")),
    Mutation("an update planned before the echo of the syncer's own last update", "syncer/controllers/pods.py",
             "                if updated is not None and updated == _rv(hpod):", "                if False:",
             ("tests/test_pod_parity.py", "-k", "rapid_changes")),
    Mutation("JSON patches written with orjson's escapes (a host before 1.35 never finds a tested `&` equal)",
             "syncer/kube/client.py", '        body = jsonutil.dumps_go(patch) if patch_type == "json" else patch',
             "        body = patch", ("tests/test_pod_parity.py", "-k", "ampersand")),
    Mutation("a write that changed nothing waits for an echo that never comes", "syncer/controllers/pods.py",
             "        if _rv(written) != _rv(hpod):", "        if True:",
             ("tests/test_pod_parity.py", "-k", "webhook_undoes")),
    Mutation("a gate condition appended without a test of the list (added twice)", "syncer/controllers/podupdate.py",
             '    if any(c.get("type") not in index for c in want):', "    if False:",
             ("tests/test_pod_parity.py", "-k", "not_added_twice")),
    Mutation("a debug container the syncer added already, refused as a duplicate, told as a host refusal",
             "syncer/controllers/pods.py", "    return len(names) == len(set(names))", "    return True",
             ("tests/test_pod_parity.py", "-k", "added_again")),
    Mutation("a stale cache's failed `test` told to the tenant as a refusal", "syncer/controllers/pods.py",
             "        result = jsonpatch.apply_patch(live, ops)", "        result = live",
             ("tests/test_pod_parity.py", "-k", "same_key_in_between")),
    Mutation("a host's label never comes back", "syncer/controllers/podtranslate/metadata.py",
             "            new_v[vk] = v  # the host changed or added it", "            pass",
             ("tests/test_pod_parity.py", "-k", "both_ways")),
    Mutation("tokens never due for renewal", "syncer/controllers/podtokens.py",
             "        wait = state.renew_at - self.clock.wall()",
             "        wait = state.renew_at - self.clock.wall() + 1e9",
             ("tests/test_token_renewal.py", "-k", "80_percent")),
    Mutation("log host paths left as they are", "syncer/controllers/podtranslate/hostpath.py",
             "            hp[\"path\"] = targets[path]", "            pass",
             ("tests/test_pod_parity.py", "-k", "host_paths")),
    Mutation("a label the tenant just changed lost when the host removed it",
             "syncer/controllers/podtranslate/metadata.py",
             "        if hk is not None and hk not in host and hk not in pushed and vk in virtual:",
             "        if hk is not None and hk not in host and vk in virtual:",
             ("tests/test_pod_parity.py", "-k", "tenant_changed")),
    Mutation("an empty toleration value not seen as absent", "syncer/controllers/podtranslate/scheduling.py",
             "    return all((a.get(k) or None) == (b.get(k) or None) for k in keys)",
             "    return all(a.get(k) == b.get(k) for k in keys)",
             ("tests/test_pod_parity.py", "-k", "empty_value")),
    Mutation("a readiness-gate condition written on the virtual pod does not wake it", "syncer/controllers/pods.py",
             '            or (not field_equal(old, new, "status") and _gate_conditions(old) != _gate_conditions(new)))',
             "            or False)",
             ("tests/test_pod_parity.py", "-k", "readiness")),
    Mutation("an ignored namespaceSelector not reported", "syncer/controllers/pods.py",
             'if not self.options.virtual_scheduler and affinity.ignored_namespace_selectors(vpod.get("spec") or {}):',
             "if False:",
             ("tests/test_kubectl.py", "-k", "namespace_selector")),
    Mutation("pod-level resources a host dropped not reported", "syncer/controllers/pods.py",
             'if (desired.get("spec") or {}).get("resources") and not (created.get("spec") or {}).get("resources"):',
             "if False:",
             ("tests/test_pod_parity.py", "-k", "pod_level")),
    Mutation("a referenced host object used whoever it is the copy of", "syncer/controllers/pods.py",
             'why = "" if obj is None else self._not_the_copy(d, vpod["metadata"]["namespace"], obj)', 'why = ""',
             ("tests/test_hostile_references.py", "-k", "no_pod_ever")),
    Mutation("host copies cached without whose copy they are", "syncer/controllers/sources.py",
             "return _identity_and(obj, (OBJECT_NAME, OBJECT_NAMESPACE))", "return _identity_and(obj, ())",
             ("tests/test_hostile_references.py", "-k", "attack_4")),
    Mutation("Pod Security judged without the pod's metadata (its AppArmor annotations)", "syncer/controllers/pods.py",
             'podsecurity.violations(level, vpod["metadata"], vpod.get("spec") or {})',
             'podsecurity.violations(level, {}, vpod.get("spec") or {})',
             ("tests/test_podsecurity_http.py", "-k", "holds_back")),
    Mutation("the echo of a host pod's create reconciled", "syncer/controllers/pods.py",
             "relist=self.all_pod_keys, own_writes=self.own_writes)", "relist=self.all_pod_keys)",
             ("tests/test_pod_sync.py", "-k", "echo")),
    Mutation("the echo of a virtual RuntimeClass's create reconciled", "syncer/controllers/runtimeclasses.py",
             "own_writes=self.own_writes if self.patcher is None else None)", ")",
             ("tests/test_pod_sync.py", "-k", "echo")),
    Mutation("a created pod's first token renewal left to a later event", "syncer/controllers/pods.py",
             "        return await self.tokens.renew_if_due(vpod, created)\n",
             "        return None\n", ("tests/test_pod_sync.py", "-k", "echo")),
    Mutation("a pod kept out by a taken host name never looked at again", "syncer/controllers/pods.py",
             "            return WAIT_RECHECK\n        if drops is None",
             "            return None\n        if drops is None",
             ("tests/test_pod_sync.py", "-k", "syncs_once")),
    Mutation("a pod's echo left unreconciled after a reconcile that decided without it",
             "syncer/controllers/pods.py", "        self.own_writes.reconciling(key)  #", "        pass  #",
             ("tests/test_pod_lifecycle.py", "-k", "watch_is_down")),
    Mutation("a virtual class's echo left unreconciled after a reconcile that decided without it",
             "syncer/controllers/runtimeclasses.py", "        self.own_writes.reconciling(name)  #", "        pass  #",
             ("tests/test_runtimeclass_sync.py", "-k", "watch_is_down")),
    Mutation("a taken host name's SyncError marked as written before its write", "syncer/controllers/pods.py",
             "                await self.recorder.record(PODS, vpod, \"Warning\", \"SyncError\", msg, ACTION)\n"
             "                w.warned = msg",
             "                w.warned = msg\n"
             "                await self.recorder.record(PODS, vpod, \"Warning\", \"SyncError\", msg, ACTION)",
             ("tests/test_pod_sync.py", "-k", "first_write")),
    Mutation("a waiting pod's SyncWarning marked as written before its write", "syncer/controllers/pods.py",
             "            await self.recorder.record(PODS, vpod, \"Warning\", \"SyncWarning\", message, ACTION)\n"
             "            w.warned = message",
             "            w.warned = message\n"
             "            await self.recorder.record(PODS, vpod, \"Warning\", \"SyncWarning\", message, ACTION)",
             ("tests/test_workloads.py", "-k", "first_write")),
    Mutation("the events of a created host pod lost when their write is refused", "syncer/controllers/pods.py",
             "            await self._record_all(vpod, unrecorded[1])  # the events of its host pod's create, first",
             "            pass", ("tests/test_pod_sync.py", "-k", "created_host_pod")),
    Mutation("a taken host name's SyncError recorded again at every recheck", "syncer/controllers/pods.py",
             "            if w.warned != msg:", "            if True:",
             ("tests/test_pod_sync.py", "-k", "left_alone")),
    Mutation("a deleted pod's token renewal left waiting", "syncer/kube/builder.py",
             '        if w.role == "for":  # the object is gone', '        if False:  # the object is gone',
             ("tests/test_token_renewal.py", "-k", "deleted")),
    Mutation("the host namespace's PodSecurity level ignored", "kubesim/admission.py",
             "    why = podsecurity.refusal(namespace_labels, pod[\"metadata\"], pod.get(\"spec\") or {})",
             "    why = None",
             ("tests/test_host_admission.py", "-k", "restricted_host")),
    # from an outside-style sample of 23 single-line changes of the controllers, each against the whole suite
    # (2026-11-25, BENCHMARKS.md is not involved: docs/development.md "Mutation testing")
    Mutation("a skipped pod's warning logged on every reconcile", "syncer/controllers/pods.py",
             "if self._skipped.get(key) != rv:", "if True:", ("tests/test_bad_input.py", "-k", "once_per_version")),
    Mutation("a pod created again under its name inherits the old pod's wait", "syncer/controllers/pods.py",
             "if w is None or w.uid != uid:", "if w is None:",
             ("tests/test_workloads.py", "-k", "own_10_seconds")),
    Mutation("a binding answered 409 (bound meanwhile) raised", "syncer/controllers/pods.py",
             "            if e.status == 409:\n                return None",
             "            if False:\n                return None",
             ("tests/test_pod_lifecycle.py", "-k", "already_bound")),
    Mutation("a bound virtual pod bound again", "syncer/controllers/pods.py",
             'if not node or (vpod.get("spec") or {}).get("nodeName"):', "if not node:",
             ("tests/test_pod_lifecycle.py", "-k", "bound_again")),
    Mutation("a headless Service's clusterIP None used as an address", "syncer/controllers/pods.py",
             'return ip if isinstance(ip, str) and ip and ip != "None" else None',
             "return ip if isinstance(ip, str) and ip else None", ("tests/test_workloads.py", "-k", "headless")),
    Mutation("a 404 for a pod gone from the cache taken for a host without the subresource",
             "syncer/controllers/pods.py",
             "if not e.not_found or await self._live_pod(self.host, self.host_namespace, hname, huid) is None:",
             "if not e.not_found:", ("tests/test_pod_parity.py", "-k", "gone_meanwhile")),
    Mutation("ClusterFirstWithHostNet pods not waiting for the DNS Service", "syncer/controllers/pods.py",
             'in ("ClusterFirst", "ClusterFirstWithHostNet"):', 'in ("ClusterFirst",):',
             ("tests/test_workloads.py", "-k", "dns_service_a_pod")),
    Mutation("a host pod deleted without its uid precondition", "syncer/controllers/pods.py",
             'await self.host.delete(PODS, meta["name"], self.host_namespace, uid=meta.get("uid"),',
             'await self.host.delete(PODS, meta["name"], self.host_namespace, uid=None,',
             ("tests/test_pod_lifecycle.py", "-k", "stale_cache")),
    Mutation("a virtual pod deleted without its uid precondition", "syncer/controllers/pods.py",
             'await self.virtual.delete(PODS, meta["name"], meta["namespace"], uid=meta.get("uid"),',
             'await self.virtual.delete(PODS, meta["name"], meta["namespace"], uid=None,',
             ("tests/test_pod_lifecycle.py", "-k", "created_again_behind")),
    Mutation("a status write to a pod gone meanwhile raised", "syncer/controllers/pods.py",
             "                if e.not_found or e.other_object:\n                    return  # gone",
             "                if e.other_object:\n                    return  # gone",
             ("tests/test_pod_lifecycle.py", "-k", "status_copy_to_a_pod_gone")),
    Mutation("a status write refused for another pod of the name raised", "syncer/controllers/pods.py",
             "                if e.not_found or e.other_object:\n                    return  # gone",
             "                if e.not_found:\n                    return  # gone",
             ("tests/test_pod_lifecycle.py", "-k", "neither_the_old_status")),
    Mutation("a status copy that does not name the pod's uid", "syncer/controllers/pods.py",
             'subresource="status", uid=meta.get("uid"),',
             'subresource="status",', ("tests/test_pod_lifecycle.py", "-k", "neither_the_old_status")),
    Mutation("a patch's uid precondition not sent", "syncer/kube/client.py",
             'patch = {**patch, "metadata": {**(patch.get("metadata") or {}), "uid": uid}}', "pass",
             ("tests/test_pod_lifecycle.py", "-k", "neither_the_old_status")),
    Mutation("a host pod patch that does not name the cached host pod's uid", "syncer/controllers/pods.py",
             'patch_type="json", uid=huid),\n                                     written=(hname, huid, ops))',
             'patch_type="json"),\n                                     written=(hname, huid, ops))',
             ("tests/test_pod_lifecycle.py", "-k", "another_owner_put")),
    Mutation("a host pod subresource write (debug container, resize) that does not name the cached uid",
             "syncer/controllers/pods.py",
             "subresource=subresource,\n" + " " * 67 + "uid=huid),", "subresource=subresource),",
             ("tests/test_pod_lifecycle.py", "-k", "subresource_write")),
    Mutation("a token renewal's host pod patch that does not name the cached uid", "syncer/controllers/podtokens.py",
             'self.host_namespace,\n                                  uid=hpod["metadata"].get("uid"))',
             "self.host_namespace)", ("tests/test_token_renewal.py", "-k", "another_owner")),
    Mutation("a host pod created with the virtual pod's ephemeral containers", "syncer/controllers/pods.py",
             'later = bool((desired.get("spec") or {}).pop("ephemeralContainers", None))',
             'later = bool((desired.get("spec") or {}).get("ephemeralContainers", None))',
             ("tests/test_pod_parity.py", "-k", "debugged_before")),
    Mutation("a host pod created without its ephemeral containers taken as settled", "syncer/controllers/pods.py",
             "settled=None if later else namespace_version)", "settled=namespace_version)",
             ("tests/test_pod_parity.py", "-k", "debugged_before")),
    Mutation("the test API server takes ephemeral containers in a pod's create", "kubesim/validation.py",
             '    if spec.get("ephemeralContainers"):\n        errs.append(', '    if False:\n        errs.append(',
             ("tests/test_api_fidelity.py", "-k", "ephemeral")),
    Mutation("the /etc/hosts mount (a subPath) put in ephemeral containers, as vcluster does",
             "syncer/controllers/podtranslate/hosts.py", 'for field in ("containers", "initContainers"):',
             'for field in ("containers", "initContainers", "ephemeralContainers"):',
             ("tests/test_pod_parity.py", "-k", "statefulset_pod_can_be_debugged")),
    Mutation("the test API server takes a volume mount subPath in an ephemeral container", "kubesim/validation.py",
             'for k in ("subPath", "subPathExpr") if vm.get(k)]', 'for k in () if vm.get(k)]',
             ("tests/test_api_fidelity.py", "-k", "only_app_containers")),
    Mutation("a subresource's 404 taken as the host lacking it while only the cache holds the pod",
             "syncer/controllers/pods.py",
             "if not e.not_found or await self._live_pod(self.host, self.host_namespace, hname, huid) is None:",
             'if not e.not_found or self.host_pods.get(f"{self.host_namespace}/{hname}") is None:',
             ("tests/test_pod_lifecycle.py", "-k", "debug_container_for")),
    Mutation("a pod just created taken as up to date with a namespace relabelled since",
             "syncer/controllers/pods.py", "_rv(vpod), _rv(hpod), _rv(self.namespaces.get(namespace))), recheck",
             "_rv(vpod), _rv(hpod), created[2] if created else ''), recheck",
             ("tests/test_pod_parity.py", "-k", "namespace_labels_and_the_vcluster")),
    Mutation("a JSON patch that does not apply to another owner's pod reported as a host refusal",
             "syncer/controllers/pods.py",
             "                if written is not None:\n                    await self._raise_if_behind(e, self.host, "
             "self.host_namespace, *written)",
             "                pass", ("tests/test_pod_lifecycle.py", "-k", "does_not_apply_to_another")),
    Mutation("another pod under the host name reported as a host refusal", "syncer/controllers/pods.py",
             "if e.status in (400, 403, 422) and not e.other_object:", "if e.status in (400, 403, 422):",
             ("tests/test_pod_lifecycle.py", "-k", "another_owner_put")),
    Mutation("a Binding that does not name the pod's uid", "syncer/controllers/pods.py",
             'node, uid=meta.get("uid"))', "node)", ("tests/test_pod_lifecycle.py", "-k", "neither_the_old_status")),
    Mutation("the test API server takes a patch that names another uid", "kubesim/apiserver.py",
             "        if uid and uid != old[\"metadata\"][\"uid\"]:\n            if patched:",
             "        if False:\n            if patched:", ("tests/test_apiserver.py", "-k", "uid_in_a_write")),
    Mutation("a virtual RuntimeClass replaced without its resourceVersion", "syncer/controllers/runtimeclasses.py",
             'update["metadata"] = {**desired["metadata"], "resourceVersion": '
             'actual["metadata"].get("resourceVersion")}',
             'update["metadata"] = dict(desired["metadata"])',
             ("tests/test_runtimeclass_sync.py", "-k", "drift_is_overwritten")),
    Mutation("a virtual RuntimeClass deleted without its uid precondition", "syncer/controllers/runtimeclasses.py",
             'await self.virtual.delete(RUNTIMECLASSES, meta["name"], uid=meta.get("uid"))',
             'await self.virtual.delete(RUNTIMECLASSES, meta["name"])',
             ("tests/test_runtimeclass_sync.py", "-k", "stale_cache")),
    Mutation("a patched copy not looked at again with itself in scope", "syncer/controllers/runtimeclasses.py",
             "if created is not None and self.patcher is None and created ==", "if created is not None and created ==",
             ("tests/test_patches.py", "-k", "itself_in_scope")),
    Mutation("a watch resumed from the list's resourceVersion", "syncer/kube/informer.py",
             "            if rv:\n                self._rv = rv\n", "            pass\n",
             ("tests/test_informer.py", "-k", "cut_watches")),
    Mutation("a re-list that keeps what changed during the outage", "syncer/kube/informer.py",
             "if listing and prev is not None and _rv(prev) == _rv(raw):", "if listing and prev is not None:",
             ("tests/test_informer.py", "-k", "expired_history")),
    Mutation("the token Secret of an earlier try taken for an error", "syncer/controllers/podtokens.py",
             "            if not e.already_exists:\n                raise\n            await self._write_secret",
             "            if True:\n                raise\n            await self._write_secret",
             ("tests/test_token_secrets_and_events.py", "-k", "earlier_try")),
    Mutation("a pod made the owner of a Secret that is not its token Secret", "syncer/controllers/podtokens.py",
             '            *self._ours(vmeta["namespace"], vmeta["name"]),\n            {"op": "add"',
             '            {"op": "add"', ("tests/test_token_secrets_and_events.py", "-k", "made_the_pods")),
    Mutation("a token Secret deleted without its uid precondition", "syncer/controllers/podtokens.py",
             'await self.host.delete(SECRETS, secret, self.host_namespace, uid=meta.get("uid"))',
             "await self.host.delete(SECRETS, secret, self.host_namespace)",
             ("tests/test_token_secrets_and_events.py", "-k", "before_the_delete")),
    Mutation("a warning whose Event expired not recorded again", "syncer/kube/events.py",
             "                if not e.not_found:\n                    raise\n                # the Event expired",
             "                raise\n                # the Event expired",
             ("tests/test_token_secrets_and_events.py", "-k", "expired")),
    Mutation("an Event counted for another pod of the same name", "syncer/kube/events.py",
             'meta["name"], meta.get("uid", ""), type_,', 'meta["name"], type_,',
             ("tests/test_token_secrets_and_events.py", "-k", "own_warning")),
    Mutation("a routine failure never a warning however long it lasts", "syncer/kube/controller.py",
             "logging.WARNING if not transient or retries + 1 >= PERSISTENT_RETRIES else logging.INFO",
             "logging.WARNING if not transient else logging.INFO", ("tests/test_controller.py", "-k", "persists")),
    Mutation("the test API server takes a RuntimeClass update without a resourceVersion", "kubesim/apiserver.py",
             'if res in _CONDITIONAL_UPDATE_ONLY and not body["metadata"].get("resourceVersion"):', "if False:",
             ("tests/test_api_fidelity.py", "-k", "resource_version")),
    Mutation("the test API server sends a bookmark past changes still queued or never queued (a cut watch)",
             "kubesim/apiserver.py", "if bookmarks and watcher.queue.empty():", "if bookmarks:",
             ("tests/test_watch_bookmarks.py",)),
    Mutation("a debug container added after the sync is not checked for the host copies it names (attack 4 again)",
             "syncer/controllers/pods.py", "            if plan.ephemeral:\n                held = ",
             "            if False:\n                held = ",
             ("tests/test_hostile_references.py", "-k", "debug_container")),
    Mutation("a debug container waits for the objects of every container, not only its own",
             "syncer/controllers/pods.py", "[d for d in deps if d.field.startswith(new)]", "deps",
             ("tests/test_workloads.py", "-k", "debug_container_does_not_wait")),
    Mutation("a kubelet pod-folder host path keeps the virtual pod's uid", "syncer/controllers/pods.py",
             "            key = by_uid.get(virtual_uid)\n", "            key = None\n",
             ("tests/test_pod_parity.py", "-k", "kubelet_pod_folder")),
    Mutation("a readiness gate naming a kubelet condition (Ready, PodScheduled) writes it on the host pod",
             "syncer/controllers/translate.py", " and t not in SYSTEM_CONDITIONS]", "]",
             ("tests/test_pod_parity.py", "-k", "kubelet_condition")),
    Mutation("a pod placed by hand on a node escapes the synced nodes' selector (vcluster's rule)",
             "syncer/controllers/translate.py", "    if opts.node_selector:  # SyncToHost",
             '    if opts.node_selector and not spec.get("nodeName"):  # SyncToHost',
             ("tests/test_pod_parity.py", "-k", "placed_by_hand")),
    Mutation("a pod gets the host copy of another namespace's ResourceClaim under a colliding name",
             "syncer/controllers/translate.py", "    deps += claims\n", "\n",
             ("tests/test_hostile_references.py", "-k", "through_a_resource_claim")),
    Mutation("a host ResourceClaim without vcluster's annotations holds the pod back for ever",
             "syncer/controllers/pods.py", "unmarked_ok=d.kind in (RESOURCECLAIM, RESOURCECLAIMTEMPLATE))",
             "unmarked_ok=False)", ("tests/test_hostile_references.py", "-k", "without_vclusters_annotations")),
    Mutation("a refused update stops the pod's token renewal (its tokens expire)", "syncer/controllers/pods.py",
             "        due: float | None = None\n        renew_error: Exception | None = None\n",
             "        if update_error is not None:\n            raise update_error\n"
             "        due: float | None = None\n        renew_error: Exception | None = None\n",
             ("tests/test_token_renewal.py", "-k", "debug_container_the_host_refuses")),
    Mutation("a failed binding stops the pod's token renewal", "syncer/controllers/pods.py",
             "        due: float | None = None\n        renew_error: Exception | None = None\n",
             "        if bind_error is not None:\n            raise bind_error\n"
             "        due: float | None = None\n        renew_error: Exception | None = None\n",
             ("tests/test_token_renewal.py", "-k", "forbidden_binding")),
    Mutation("every made-up class name a tenant's pod names becomes a metric series", "syncer/controllers/pods.py",
             "return rc_name if not rc_name or self.host_rcs.get(rc_name) is not None else UNKNOWN_CLASS",
             "return rc_name", ("tests/test_pod_sync.py", "-k", "share_one_metric")),
    Mutation("a pod certificate projection reaches the host (a host-issued credential)", "syncer/controllers/pods.py",
             "        if credential is not None:  # the spec's", "        if False:  # the spec's",
             ("tests/test_workloads.py", "-k", "pod_certificate")),
    Mutation("two token sources of one volume share a Secret key (the API server's token in the Vault's file)",
             "syncer/controllers/podtranslate/tokens.py",
             'key = source.volume if source.volume not in data else f"{source.volume}.{source.index}"',
             "key = source.volume", ("tests/test_workloads.py", "-k", "two_tokens")),
    Mutation("a scheduling gate the host's admission added (Kueue's) is removed at the first update",
             "syncer/controllers/podupdate.py", "    if not isinstance(synced, str):\n        return desired\n",
             "    return desired\n", ("tests/test_pod_parity.py", "-k", "scheduling_gate_the_host")),
    Mutation("an image a host webhook set is set back to the virtual one at every update (a container restart)",
             "syncer/controllers/podtranslate/metadata.py",
             "return recorded is None or recorded.get(container) != _digest(image)", "return True",
             ("tests/test_pod_parity.py", "-k", "image_a_host_webhook")),
    Mutation("tokens a server shortened are renewed after 80% of the lifetime asked, when they have expired",
             "syncer/controllers/podtokens.py",
             "shortest = min([self.lifetime, *(v for v in valid if v is not None and v > 0)])",
             "shortest = self.lifetime", ("tests/test_token_renewal.py", "-k", "server_shortens")),
    Mutation("a downward-API read of a label vcluster rewrites (release) reads its virtual key, empty on the host",
             "syncer/controllers/podtranslate/downward.py",
             'ref["fieldPath"] = f"metadata.labels[\'{host_label(m.group(1))}\']"', "pass",
             ("tests/test_translate_rules.py", "-k", "single_label")),
    Mutation("a log host path spelled another way (/var//log/pods) escapes the rewrite",
             "syncer/controllers/podtranslate/hostpath.py", 'path = _normal(hp["path"])',
             'path = hp["path"].rstrip("/") if hp["path"] != "/" else "/"',
             ("tests/test_translate_vcluster.py", "-k", "host_paths_are_rewritten")),
    Mutation("a gate condition the host stored without the field its version drops written again on each reconcile",
             "syncer/controllers/podupdate.py", "        elif not same_gate_condition(current[i], c):",
             "        elif current[i] != c:",
             ("tests/test_pod_parity.py", "-k", "changes_nothing_on_the_host")),
    Mutation("a gate condition whose other fields differ taken as in sync when the host lacks observedGeneration",
             "syncer/controllers/podupdate.py", "if k not in _HOST_MAY_DROP}", "if k == \"type\"}",
             ("tests/test_podupdate.py", "-k", "field_the_host_drops")),
    Mutation("the status copy to a gated pod without conditions yet unguarded (its first gate condition undone)",
             "syncer/controllers/translate.py",
             '        ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": rv}]',
             "        ops = []", ("tests/test_pod_parity.py", "-k", "first_gate_condition")),
    Mutation("an optional reference reads another namespace's copy through a colliding host name",
             "syncer/controllers/pods.py", "            if obj is None and d.optional:",
             "            if d.optional:", ("tests/test_hostile_references.py", "-k", "optional")),
    Mutation("with the virtual scheduler, a pod placed by hand on a Node the tenant created escapes the nodes selector",
             "syncer/controllers/translate.py", '    if opts.node_selector:  # SyncToHost "ensure node selector"',
             "    if opts.node_selector and not opts.virtual_scheduler:",
             ("tests/test_pod_parity.py", "-k", "placed_by_hand")),
    Mutation("the sync metric labelled with the class the tenant names (a series per made-up name)",
             "syncer/controllers/pods.py", "self.metrics.pods_synced.labels(self._synced_label(created)).inc()",
             "self.metrics.pods_synced.labels(rc_name).inc()", ("tests/test_pod_sync.py", "-k", "counted_under")),
    Mutation("a synced pod whose host object changed hands is not looked at again", "syncer/controllers/pods.py",
             "        return waiting + [k for k in self._readers_of_another_copy(obj) if k not in waiting]",
             "        return waiting", ("tests/test_hostile_references.py", "-k", "taken_over")),
    Mutation("a synced pod reading another namespace's copy is left running", "syncer/controllers/pods.py",
             "            if conflict := self._reads_another_copy(vpod, hpod, desired, deps):",
             "            if conflict := '':", ("tests/test_hostile_references.py", "-k", "taken_over")),
    Mutation("a hung lease request is never cut", "syncer/kube/leader.py", "async with asyncio.timeout(limit):",
             "async with asyncio.timeout(None):", ("tests/test_leader_faults.py", "-k", "hung_renewal")),
    Mutation("a connection error ends the leader election", "syncer/kube/leader.py", "except _RETRIED as e:",
             "except ApiException as e:", ("tests/test_leader_faults.py", "-k", "outage")),
    Mutation("a watch closed at once, again and again, is re-opened without backoff", "syncer/kube/informer.py",
             "        if self._short_watches > 1:", "        if self._short_watches > 1_000_000:",
             ("tests/test_informer_faults.py", "-k", "closed_at_once")),
    Mutation("a 410 again and again re-lists without backoff", "syncer/kube/informer.py",
             "now - self._expired_at < EXPIRED_BACKOFF_RESET", "now - self._expired_at < 0",
             ("tests/test_informer_faults.py", "-k", "410s")),
    Mutation("a half-open watch is never noticed (events do not feed the watchdog)", "syncer/kube/informer.py",
             "            self._heard_at = clock.now()\n", "", ("tests/test_informer_faults.py", "-k", "silent_watch")),
    Mutation("a kubeconfig's tokenFile or exec credential is loaded once (401 for good once it expires)",
             "syncer/kube/client.py",
             "                cfg.refresh_api_key_hook = _CredentialRefresh(loader, source, credential_refresh)",
             "                pass", ("tests/test_credentials.py",)),
    Mutation("a kubeconfig's tokenFile read on every request", "syncer/kube/client.py",
             "        if now < self._due:\n            return\n", "",
             ("tests/test_credentials.py", "-k", "token_file")),
    Mutation("a replaced client certificate file goes unnoticed", "syncer/kube/client.py",
             '                    out.append(b"\\0" + f.read())', '                    out.append(b"\\0")',
             ("tests/test_credentials.py", "-k", "certificate")),
    Mutation("a pod whose token Secret name is taken is held back without a word to the tenant",
             "syncer/controllers/pods.py", 'holds the name")\n            if w.warned != message:',
             'holds the name")\n            if False:', ("tests/test_trust_boundary.py", "-k", "named_like_a_token")),
    Mutation("a pod whose token Secret name is taken is told so on every retry", "syncer/controllers/pods.py",
             'holds the name")\n            if w.warned != message:', 'holds the name")\n            if True:',
             ("tests/test_trust_boundary.py", "-k", "named_like_a_token")),
    Mutation("a pod whose create was on its way when its host name was taken over is not looked at again",
             "syncer/controllers/pods.py", "                    if spec is None or needle in spec:",
             "                    if (spec is None or needle in spec) and \\\n"
             "                            self.host_pods.get(self.host_key(other, k.split('/', 1)[1])) is not None:",
             ("tests/test_hostile_references.py", "-k", "on_its_way")),
    Mutation("a pod as it was created is not checked again when its host name is taken over",
             "syncer/controllers/pods.py", "        self._recheck.update(keys)\n", "",
             ("tests/test_hostile_references.py", "-k", "taken_over_after")),
    Mutation("every change of a colliding copy wakes every pod of the namespace it splits to (a tenant's updates "
             "keep the syncer busy)", "syncer/controllers/pods.py",
             "                    if spec is None or needle in spec:", "                    if True:",
             ("tests/test_hostile_references.py", "-k", "wakes_only")),
    Mutation("a colliding copy wakes no pod that names it", "syncer/controllers/pods.py",
             "                    if spec is None or needle in spec:", "                    if spec is None:",
             ("tests/test_hostile_references.py", "-k", "taken_over_after")),
    Mutation("a pod that meets Pod Security only in a user namespace is synced to a host that drops hostUsers",
             "syncer/controllers/pods.py", "        if not found:\n            return False\n        try:",
             "        if True:\n            return False\n        try:",
             ("tests/test_podsecurity_http.py", "-k", "user_namespace")),
    Mutation("a created host pod that lost hostUsers (no dry run) is left running as root",
             "syncer/controllers/pods.py", '        if drops is None and (created.get("spec") or {}).get("hostUsers")',
             '        if False and (created.get("spec") or {}).get("hostUsers")',
             ("tests/test_podsecurity_http.py", "-k", "dry_run")),
    Mutation("a pod refused for a dropped hostUsers is created and deleted again and again",
             "syncer/controllers/pods.py",
             '        if self._userns_refused.get(object_key(vpod)) == vpod["metadata"].get("uid"):',
             "        if False:", ("tests/test_podsecurity_http.py", "-k", "dry_run")),
    Mutation("a selector key ending in a newline accepted (Python's `$` before a last newline)",
             "syncer/config/selector.py", "_QUALIFIED_NAME_RE.fullmatch(name)", "_QUALIFIED_NAME_RE.match(name)",
             ("tests/test_selector.py", "-k", "invalid_keys")),
    Mutation("a selector value ending in a newline accepted", "syncer/config/selector.py",
             "_LABEL_VALUE_RE.fullmatch(value)", "_LABEL_VALUE_RE.match(value)",
             ("tests/test_selector.py", "-k", "invalid_values")),
    Mutation("an enforced toleration value ending in a newline accepted", "syncer/config/tolerations.py",
             "_LABEL_VALUE.fullmatch(value)", "_LABEL_VALUE.match(value)",
             ("tests/test_translate_vcluster.py", "-k", "parse_toleration_errors")),
    Mutation("a tenant's integer beyond 2^53 - 1 in its copy fails every patch (the copy is never repaired)",
             "syncer/patches/engine.py",
             '            return _strict_dumps({"hostObject": host_obj, "virtualObject": None})',
             "            raise", ("tests/test_patches.py", "-k", "does_not_stop_the_repair")),
    Mutation("a gated pod's status copied right after its binding, from the cache before it (a failed guard, a retry)",
             "syncer/controllers/pods.py",
             "        if not (binds and bind_error is None and translate.version_guarded(vpod)):",
             "        if True:", ("tests/test_pod_parity.py", "-k", "makes_the_pod_ready")),
    Mutation("a virtual RuntimeClass held by a tenant's finalizer is left in place",
             "syncer/controllers/runtimeclasses.py",
             'if not _terminating(answer) or answer.get("kind") not in (None, RUNTIMECLASSES.kind):', "if True:",
             ("tests/test_runtimeclass_hostile.py", "-k", "finalizer")),
    Mutation("a synced copy a tenant left Terminating is kept", "syncer/controllers/runtimeclasses.py",
             "        if _terminating(actual):\n            # deleted by someone",
             "        if False:\n            # deleted by someone",
             ("tests/test_runtimeclass_hostile.py", "-k", "terminating")),
    Mutation("a patch result without a handler deletes the good copy", "syncer/patches/apply.py",
             'return "the result has no handler: a RuntimeClass needs one"', "return None",
             ("tests/test_runtimeclass_hostile.py", "-k", "handler_null")),
    Mutation("a patched handler not checked as a DNS-1123 label", "syncer/patches/apply.py",
             "errs = dns1123_label_errors(handler)", "errs = []",
             ("tests/test_runtimeclass_hostile.py", "-k", "dns_label")),
    Mutation("patched label values not checked", "syncer/patches/apply.py", "errs = label_value_errors(v)", "errs = []",
             ("tests/test_runtimeclass_hostile.py", "-k", "label_value")),
    Mutation("protected patch paths compared as spelled", "syncer/config/model.py",
             "        if reaches(segments, target):",
             "        if segments == target:", ("tests/test_runtimeclass_hostile.py", "-k", "segment")),
    Mutation("a patch result without metadata crashes the reconcile", "syncer/patches/apply.py",
             '    if not isinstance(meta, dict):\n        return f"the result at metadata must be an object',
             '    if False:\n        return f"the result at metadata must be an object',
             ("tests/test_runtimeclass_hostile.py", "-k", "without_metadata")),
    Mutation("an empty expression counted as one (it deletes the field)", "syncer/config/model.py",
             '("expression", bool(p.expression or p.reverseExpression))',
             '("expression", p.expression is not None or p.reverseExpression is not None)',
             ("tests/test_runtimeclass_hostile.py", "-k", "empty_expression")),
    Mutation("an empty expression run", "syncer/patches/apply.py", '    if p.expression:\n        return "expression"',
             '    if p.expression is not None:\n        return "expression"',
             ("tests/test_runtimeclass_hostile.py", "-k", "reverse_expression")),
)


def run_listed(only: str | None) -> list[tuple[Mutation, bool, str]]:
    """Apply each listed mutation to a scratch copy and run its tests; (mutation, caught, last output line)."""
    out = []
    for m in LISTED:
        if only and only not in m.name:
            continue
        with tempfile.TemporaryDirectory(prefix="mutate-") as tmp:
            work = Path(tmp)
            for name in COPY:
                src = ROOT / name
                if src.is_dir():
                    shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy(src, work / name)
            target = work / m.path
            text = target.read_text(encoding="utf-8")
            if text.count(m.old) != 1:
                raise SystemExit(f"mutation {m.name!r}: the line to break is not in {m.path} exactly once; "
                                 "update tools/mutate.py")
            target.write_text(text.replace(m.old, m.new), encoding="utf-8")
            env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
            try:
                proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
                                       *m.tests], cwd=work, env=env, capture_output=True, text=True, timeout=600)
            except subprocess.TimeoutExpired:  # a mutant that hangs the tests is caught too (as mutmut counts it)
                out.append((m, True, "timed out after 600 s"))
                continue
            lines = [line for line in proc.stdout.splitlines() if line.strip()]
            out.append((m, proc.returncode not in (0, 5), lines[-1] if lines else proc.stderr.strip()[-200:]))
    return out


def run_mutmut() -> dict[str, int]:
    """Run mutmut over the pure modules; its counts (killed, survived, no_tests, timeout, ...)."""
    subprocess.run([sys.executable, "-m", "mutmut", "run"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    subprocess.run([sys.executable, "-m", "mutmut", "export-cicd-stats"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    stats: dict[str, int] = json.loads((ROOT / "mutants" / "mutmut-cicd-stats.json").read_text())
    return stats


def main(argv: list[str] | None = None) -> int:
    """Entry point; see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--min-score", type=float, default=90.0, help="lowest acceptable score over the pure modules (%%)")
    p.add_argument("--listed-only", action="store_true", help="only the listed mutations, not mutmut")
    p.add_argument("--only", help="only the listed mutations whose name contains this")
    args = p.parse_args(argv)
    ok = True
    print("listed mutations of integration paths:")
    for m, caught, last in run_listed(args.only):
        ok &= caught
        print(f"  {'caught' if caught else 'MISSED'}  {m.name}  ({' '.join(m.tests)}: {last})")
    if not args.listed_only and not args.only:
        stats = run_mutmut()
        killed, survived = stats.get("killed", 0), stats.get("survived", 0)
        uncovered = stats.get("no_tests", 0)
        total = stats.get("total", 0) - stats.get("skipped", 0)
        score = 100.0 * (killed + stats.get("timeout", 0)) / total if total else 0.0  # mutmut's own score
        print(f"pure modules (mutmut): {total} mutants, {killed} caught, {stats.get('timeout', 0)} timed out "
              f"(caught), {survived} missed, {uncovered} not covered by the unit tests; score {score:.1f}% "
              f"(at least {args.min_score:g}%)")
        print("  the missed ones: mutmut results; one of them: mutmut show NAME")
        ok &= score >= args.min_score
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
