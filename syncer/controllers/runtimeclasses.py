"""The RuntimeClass reconciler, host -> virtual (behaviour.md section 2).

Invariant after every reconcile of name N: a virtual RuntimeClass N exists iff a host RuntimeClass N
exists and matches the selector, and its handler, overhead, scheduling, labels and annotations equal
the host's. Names that carry `vcluster.loft.sh/controlled-by` on either side are left alone.

It reads both caches and writes only the difference; the host RuntimeClass is never written. A
`handler` change (immutable in the API) is a delete and re-create. Deletes carry a uid precondition,
so a virtual object that changed identity meanwhile is not deleted by mistake. NotFound on delete is
success; conflicts are retried by the controller with backoff. A class the syncer deletes that finalizers
hold (a tenant's `metadata.finalizers`) would stay Terminating for good and keep the name: its finalizers
are removed (an update that carries its uid and resourceVersion), so it goes; a synced copy a tenant left
Terminating that way is replaced by a new copy (see `_delete`).

With patches configured (behaviour.md section 5) the desired virtual object is the translated host
object after the patches. A failing patch (throw, timeout, out-of-memory) is logged with the object and
the patch path, recorded as a Warning `PatchFailed` event on the virtual RuntimeClass when it exists,
and retried with backoff; other RuntimeClasses are not held up. So is a result the virtual API server would
refuse (syncer/patches/apply.py `_typed_field_problem`, its scheduling and overhead rules in
syncer/patches/fields.py): it is found before anything is deleted or written, and the last good copy is kept.
Should the virtual API server still refuse a patched copy (400/422: a rule the syncer does not know), that is the
same patch failure (`_refused`): the event, the copy kept, a retry with backoff. A host handler change deletes the
copy before it creates the new one (the field is immutable), so the new one is first created as a dry run
(`_would_create`): a refusal keeps the old copy.

The syncer's own write of a patched copy is not evaluated again when its watch event arrives: while the host class
and the virtual copy are at the resourceVersions of that write (`_written`), nothing has changed that the patches
could read, and an expression that gives a new value each time (`Math.random()`, a date, a counter) would
otherwise write on every echo of its last write. A created copy is the exception: it was patched with no
`context.virtualObject`, so it is patched once more with itself in scope (as vcluster does), and that write's echo
is quiet. So each real change (the host class, a tenant's edit of the copy, a restart) writes at most once more.

The copy is compared with the desired object as the API server stores it (fields.stored_view: empty omitempty
fields dropped, quantities by value), so that `0.5` stored as `500m` is not a difference written on every event.
"""

from __future__ import annotations

import logging
from typing import Any, NoReturn

from syncer.config.model import SyncerConfig
from syncer.controllers.gate import runtime_class_matches
from syncer.controllers.sources import Sources
from syncer.controllers.translate import (
    is_controlled_by_other,
    runtime_class_shape_error,
    runtime_class_view,
    virtual_runtime_class,
)
from syncer.kube.builder import ControllerBuilder, OwnWrites, own_key
from syncer.kube.cache import Store
from syncer.kube.cache import resource_version as _rv
from syncer.kube.client import ApiError, KubeClient
from syncer.kube.controller import ReconcileError
from syncer.kube.events import EventRecorder
from syncer.kube.resources import RUNTIMECLASSES
from syncer.patches.apply import Patcher, PatchFailed
from syncer.patches.fields import stored_view

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class RuntimeClassReconciler:
    """Reconciles one RuntimeClass name.

    Args:
        config: the validated configuration (selector).
        host_rcs: cache of host RuntimeClasses (key = name).
        virtual_rcs: cache of virtual RuntimeClasses (key = name).
        virtual: client for the virtual cluster (the only cluster it writes).
        patcher: the configured patches, or None.
        recorder: writes events on virtual RuntimeClasses (patch failures).
    """

    def __init__(self, config: SyncerConfig, host_rcs: Store, virtual_rcs: Store, virtual: KubeClient,
                 patcher: Patcher | None = None, recorder: EventRecorder | None = None) -> None:
        self.config = config
        self.host_rcs = host_rcs
        self.virtual_rcs = virtual_rcs
        self.virtual = virtual
        self.patcher = patcher
        self.recorder = recorder
        self._refusal_logged: dict[str, str] = {}  # name -> host resourceVersion already logged
        # classes this process just created: name -> (host, virtual) resourceVersion then. The reconcile the
        # creation brings finds both unchanged and has nothing to compare; popped by it (see reconcile).
        self._created: dict[str, tuple[str, str]] = {}
        # the virtual classes this process created, whose watch event (the echo) enqueues nothing: without
        # patches its reconcile would find both classes as the create left them (with patches it runs, since a
        # patch may read context.virtualObject)
        self.own_writes = OwnWrites()
        # with patches: name -> (host, virtual) resourceVersion after this process last replaced the patched copy;
        # a reconcile that finds both so has nothing new to evaluate (the echo of that write; module doc)
        self._written: dict[str, tuple[str, str]] = {}

    def watches(self, b: ControllerBuilder, sources: Sources) -> ControllerBuilder:
        """Declare the RuntimeClass controller's watches: for virtual RuntimeClasses (a class made locally is
        deleted, a deleted copy re-created) and host RuntimeClasses (every change, by name). A re-list of
        either enqueues every name on both sides."""
        def every_name() -> list[str]:
            return list(dict.fromkeys([*self.host_rcs.list_keys(), *self.virtual_rcs.list_keys()]))

        b.for_(sources.virtual_rcs, relist=every_name, own_writes=self.own_writes if self.patcher is None else None)
        b.watches(sources.host_rcs, own_key, relist=every_name)
        return b

    async def desired(self, name: str, actual: Obj | None, host: Obj | None = None) -> Obj | None:
        """The virtual RuntimeClass that should exist for `name` (patched), or None when none should.
        `host`: the host class when the caller has it whole already (else read from the cache).

        Raises:
            PatchFailed: a patch failed for this object.
        """
        if host is None:
            host = self.host_rcs.full(name)
        if host is None or not runtime_class_matches(self.config, host):
            return None
        out = virtual_runtime_class(host)  # callers have checked runtime_class_shape_error(host)
        if self.patcher is not None:
            out = await self.patcher.apply(out, host, actual)
            out["metadata"]["name"] = name
        return out

    async def reconcile(self, name: str) -> float | None:
        """Bring virtual RuntimeClass `name` to the desired state. Raises ApiError to be retried."""
        self.own_writes.reconciling(name)  # this reconcile may decide before the echo of an earlier create
        created = self._created.pop(name, None)
        if created is not None and self.patcher is None and created == (_rv(self.host_rcs.get(name)),
                                                                        _rv(self.virtual_rcs.get(name))):
            return None  # both as this process left them when it created the class (patches may read it)
        written = self._written.get(name)
        if written is not None and written == (_rv(self.host_rcs.get(name)), _rv(self.virtual_rcs.get(name))):
            return None  # the patched copy as this process last wrote it, from this host class
        self._written.pop(name, None)
        host = self.host_rcs.full(name)
        actual = self.virtual_rcs.full(name)
        if is_controlled_by_other(host) or is_controlled_by_other(actual):
            return None
        problem = runtime_class_shape_error(host) if host is not None else None
        if problem is not None:
            assert host is not None
            self._log_once(name, host, f"skipped host runtime class {name!r}: {problem}")
            return None
        try:
            desired = await self.desired(name, actual, host)
        except PatchFailed as e:
            await self._patch_failed(actual, f'runtime class "{name}": patch "{e.path}" failed: {e.reason}')
        if desired is None:
            if host is not None:
                self._log_not_matching(name, host)
            if actual is not None:
                why = ("because physical object is missing" if host is None else
                       "because it does not match the selector under 'sync.fromHost.runtimeClasses.selector'")
                log.info("delete virtual runtime class %s, %s", name, why)
                await self._delete(actual)
            return None
        self._refusal_logged.pop(name, None)
        if actual is None:
            log.info("create virtual runtime class %s: host runtime class %s matches the selector", name, name)
            stored = await self._create(desired, actual)
            self.own_writes.created(stored, name)
            if host is not None:
                self._created[name] = (_rv(host), _rv(stored))
            return None
        if _terminating(actual):
            # deleted by someone (a tenant) and held by a finalizer: a class being deleted is not the copy, and it
            # would stay so; it goes (its finalizers removed) and the copy is made again
            log.info("re-create virtual runtime class %s: it is being deleted", name)
            await self._delete(actual)
            self.own_writes.created(await self._create(desired, None), name)
            return None
        if stored_view(runtime_class_view(desired)) == stored_view(runtime_class_view(actual)):
            return None
        if desired.get("handler") != actual.get("handler"):
            log.info("re-create virtual runtime class %s: handler changed from %r to %r (the field is immutable)",
                     name, actual.get("handler"), desired.get("handler"))
            if self.patcher is not None:
                await self._would_create(desired, actual)
            await self._delete(actual)
            self.own_writes.created(await self._create(desired, None), name)
            return None
        log.info("update virtual runtime class %s: host runtime class %s changed", name, name)
        update = dict(desired)
        update["metadata"] = {**desired["metadata"], "resourceVersion": actual["metadata"].get("resourceVersion")}
        try:
            stored = await self.virtual.replace(RUNTIMECLASSES, update)
        except ApiError as e:
            await self._refused(e, actual, name)
            raise
        if self.patcher is not None and host is not None:
            self._written[name] = (_rv(host), _rv(stored))
        return None

    async def _patch_failed(self, actual: Obj | None, msg: str) -> NoReturn:
        """A patch failed (`msg` says which and why): log it, record the Warning `PatchFailed` event on the virtual
        class `actual` when there is one, and raise ReconcileError (retried with backoff, nothing written).

        Raises:
            ReconcileError: always.
        """
        log.warning("%s", msg)
        if actual is not None and self.recorder is not None:
            await self.recorder.record(RUNTIMECLASSES, actual, "Warning", "PatchFailed", msg, "SyncRuntimeClass")
        raise ReconcileError(msg) from None

    async def _refused(self, e: ApiError, actual: Obj | None, name: str) -> None:
        """With patches, a write of the patched copy of `name` that the virtual API server refused as invalid
        (400 BadRequest: it could not decode it; 422 Invalid: validation; apiserver pkg/endpoints/handlers) is a
        patch failure (`_patch_failed`, the event on `actual`); any other error, or any error without patches,
        returns for the caller to raise.

        Raises:
            ReconcileError: the refusal, as a patch failure.
        """
        if self.patcher is not None and e.status in (400, 422):
            await self._patch_failed(actual, f'runtime class "{name}": patches failed: the virtual API server '
                                             f"refused the patched copy: {e.message}")

    def _log_not_matching(self, name: str, host: Obj) -> None:
        self._log_once(name, host, f"did not sync runtime class \"{name}\" because it does not match the selector "
                                   "under 'sync.fromHost.runtimeClasses.selector'", logging.INFO)

    def _log_once(self, name: str, host: Obj, message: str, level: int = logging.WARNING) -> None:
        """Log `message` once per host resourceVersion of `name` (reconciles of an unchanged object are quiet)."""
        rv = str((host.get("metadata") or {}).get("resourceVersion") or "")
        if self._refusal_logged.get(name) != rv:
            self._refusal_logged[name] = rv
            log.log(level, "%s", message)

    async def _would_create(self, desired: Obj, actual: Obj) -> None:
        """Before the copy `actual` is deleted for a handler change: a dry-run create of the patched `desired`, so
        that a refusal for a rule the syncer does not check (400/422, `_refused`) keeps the last good copy. The API
        server admits and validates a create before its storage finds the name taken (endpoints/handlers/create.go,
        registry Store.Create), so the 409 AlreadyExists of the copy still there means the new one passed.

        Raises:
            ReconcileError: the virtual API server refused the patched copy.
            ApiError: any other failure of the dry run (retried with backoff; nothing deleted).
        """
        try:
            await self.virtual.create(RUNTIMECLASSES, desired, dry_run=True)
        except ApiError as e:
            await self._refused(e, actual, desired["metadata"]["name"])
            if not e.already_exists:
                raise

    async def _create(self, desired: Obj, actual: Obj | None) -> Obj:
        """Create `desired`; `actual`: the virtual class to attach a patch failure's event to (`_refused`).

        Raises:
            ApiError: the create failed (409 when the cache was behind).
            ReconcileError: the virtual API server refused a patched copy.
        """
        try:
            return await self.virtual.create(RUNTIMECLASSES, desired)
        except ApiError as e:
            await self._refused(e, actual, desired["metadata"]["name"])
            if not e.already_exists:
                raise
            # The cache was behind: the next watch event brings the object and a fresh reconcile.
            raise ApiError(409, "AlreadyExists", f"virtual runtime class {desired['metadata']['name']} appeared "
                           "before the cache saw it; retrying", cluster="virtual", verb="create",
                           resource=RUNTIMECLASSES.qualified) from e

    async def _delete(self, actual: Obj) -> None:
        """Delete the virtual class `actual` (that object only: a uid precondition) and see that it is gone.

        A finalizer would keep it, Terminating, for good (the API server only sets its deletionTimestamp, and
        answers the DELETE with the object: apiserver pkg/registry/generic/registry/store.go Delete,
        updateForGracefulDeletionAndFinalizers), so the finalizers of such an answer are removed, which
        completes the deletion (store.go Update: an object with a deletionTimestamp and no finalizers left is
        deleted). Nothing but the syncer's own copies may hold a name the host decides (behaviour.md section 2:
        a class created locally is deleted promptly), and no finalizer is the syncer's. The removal is a PUT of
        the answered object (the `update` verb of deploy/virtual-rbac.yaml) that carries its uid and
        resourceVersion, both preconditions: a class re-made or changed meanwhile is a 409, retried.

        Raises:
            ApiError: the DELETE or the finalizer removal failed (NotFound is success).
        """
        meta = actual["metadata"]
        name = meta["name"]
        try:
            answer = await self.virtual.delete(RUNTIMECLASSES, meta["name"], uid=meta.get("uid"))
        except ApiError as e:
            if not e.not_found:
                raise
            return
        if not _terminating(answer) or answer.get("kind") not in (None, RUNTIMECLASSES.kind):
            return  # gone (the answer is a Status or the deleted object)
        held = answer["metadata"]
        log.info("delete virtual runtime class %s: removing its finalizers %s, which hold it", name,
                 ", ".join(str(f) for f in held.get("finalizers") or []))
        update = {**answer, "apiVersion": RUNTIMECLASSES.api_version, "kind": RUNTIMECLASSES.kind,
                  "metadata": {**held, "finalizers": []}}
        try:
            await self.virtual.replace(RUNTIMECLASSES, update)
        except ApiError as e:
            if not e.not_found:
                raise


def _terminating(obj: Obj) -> bool:
    """Whether `obj` is a RuntimeClass being deleted that finalizers hold (deletionTimestamp set, finalizers
    left; kubernetes' ObjectMeta: an object stays until its finalizers are gone)."""
    meta = obj.get("metadata")
    return isinstance(meta, dict) and bool(meta.get("deletionTimestamp")) and bool(meta.get("finalizers"))
