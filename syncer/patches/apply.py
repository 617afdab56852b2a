"""Applying `sync.fromHost.runtimeClasses.patches` to the virtual copy of a host RuntimeClass.

Patches run in order, each on the result of the previous one. For an `expression` patch every place
its path resolves to (path.py) is evaluated with `value`, `valueExists` and `context`, and the result
replaces the value; null/undefined deletes it. The whole virtual copy is patched every time it is
computed, so the result is a pure function of the host object (and of the current virtual object, if
an expression reads `context.virtualObject`): what the reconciler compares against is stable, and host
changes still flow through.

A result the virtual API server would refuse (metadata not an object; labels or annotations not string maps,
or with keys or values Kubernetes does not take; a missing handler or one that is not a DNS-1123 label; a
nodeSelector, toleration or overhead quantity Kubernetes refuses: `_typed_field_problem`) is a patch failure
naming the patch, like a throw: nothing is deleted or written and the last good copy is kept.

`reference` and `labels` patches follow vcluster's reference: they translate names and label selectors
between host and virtual. A RuntimeClass is cluster-scoped and keeps its name and labels on both sides,
so for RuntimeClasses (the only objects patched here) both are the identity; they are accepted so a
vcluster.yaml that uses them stays valid.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from syncer.config.model import RC_PATH, Patch, SyncerConfig
from syncer.config.selector import dns1123_label_errors, label_value_errors, qualified_name_errors
from syncer.kube.jsonutil import copy_json
from syncer.patches.engine import CompileError, EngineUnavailable, JSEngine, PatchError
from syncer.patches.fields import spec_problem
from syncer.patches.path import Match, Segment, parse, resolve, segments_overlap

Obj = dict[str, Any]


class PatchFailed(Exception):
    """A patch failed for one object. `path` is the patch's configured path, `reason` what happened."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f'patch "{path}": {reason}')
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class CompiledPatch:
    """A validated patch: its configured path, parsed segments, and kind (expression/reference/labels)."""

    index: int
    path: str
    segments: tuple[Segment, ...]
    kind: str


def _kind(p: Patch) -> str:
    """What a patch does to a RuntimeClass: `expression` when it has a non-empty `expression` (vcluster's
    pkg/config/validation.go validatePatches counts an expression only when it is not ""); else `reference`,
    `labels`, or `reverse` (only a `reverseExpression`: the virtual -> host direction, nothing host -> virtual)."""
    if p.expression:
        return "expression"
    if p.reference is not None:
        return "reference"
    return "labels" if p.labels is not None else "reverse"


def compile_paths(patches: list[Patch]) -> list[CompiledPatch]:
    """Parse the patch paths (already validated by config loading, so this does not fail)."""
    return [CompiledPatch(i, p.path, parse(p.path), _kind(p)) for i, p in enumerate(patches)]


def paths_overlap(a: tuple[Segment, ...], b: tuple[Segment, ...]) -> bool:
    """Whether two patch paths can reach the same place or one the inside of the other (a wildcard
    reaches anything): then the later patch must see the earlier one's result (path.segments_overlap)."""
    return segments_overlap(a, b)


def _independent(patches: list[CompiledPatch]) -> bool:
    """No two expression patches overlap: all of an object's evaluations can go to V8 in one call, with
    the same results as one call per patch in order (an expression sees its `value` and `context`, which
    holds the unpatched objects, never another patch's result)."""
    exprs = [p.segments for p in patches if p.kind == "expression"]
    return not any(paths_overlap(a, b) for i, a in enumerate(exprs) for b in exprs[i + 1:])


def _apply_results(matches: list[Match], results: list[Any]) -> None:
    deletions: list[Match] = []
    for m, r in zip(matches, results, strict=True):
        if r is None:
            if m.exists:
                deletions.append(m)
        else:
            m.container[m.key] = r  # type: ignore[index]
    # delete list items from the highest index down so earlier indexes stay valid
    for m in sorted(deletions, key=lambda d: d.key if isinstance(d.key, int) else -1, reverse=True):
        if isinstance(m.container, list):
            del m.container[m.key]  # type: ignore[arg-type]
        else:
            m.container.pop(m.key, None)  # type: ignore[arg-type]


# apimachinery pkg/api/validation/objectmeta.go: TotalAnnotationSizeLimitB
_TOTAL_ANNOTATION_SIZE_LIMIT = 256 * (1 << 10)


def _typed_field_problem(obj: Obj) -> str | None:
    """Why the virtual API server would refuse a patched RuntimeClass, or None when it would store it.

    Caught here so that such a result is a patch failure naming the patch, like a throw, before anything is
    deleted or written (the last good copy is kept), not a 400/422 from the virtual API server retried forever.

    Args:
        obj: the patched virtual RuntimeClass.
    Returns:
        The first problem, as `the result at <field> ...`, or None. The rules, in the API server's order:
        - metadata is an object; labels and annotations are string maps, handler a string (a typed decode,
          apimachinery's JSON decoder into metav1.ObjectMeta / node.RuntimeClass);
        - labels: each key a qualified name, each value a label value (apimachinery
          pkg/apis/meta/v1/validation/validation.go ValidateLabels: ValidateLabelName, IsValidLabelValue);
        - annotations: each key, lower-cased, a qualified name, keys and values together at most 256 KiB
          (apimachinery pkg/api/validation/objectmeta.go ValidateAnnotations);
        - handler present and a DNS-1123 label (kubernetes pkg/apis/node/validation/validation.go
          ValidateRuntimeClass: NameIsDNSLabel(rc.Handler); a missing handler decodes as "", which fails it);
        - overhead.podFixed (quantities and resource names) and scheduling (nodeSelector, tolerations): the rest
          of ValidateRuntimeClass, fields.spec_problem.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return f"the result at metadata must be an object, got {json.dumps(meta)}"
    for k in ("labels", "annotations"):
        m = meta.get(k)
        if m is None:
            continue
        if not isinstance(m, dict):
            return f"metadata.{k} must be a map of strings, got {type(m).__name__}"
        for key, v in m.items():
            if not isinstance(v, str):
                return f'the result at metadata.{k}["{key}"] must be a string, got {json.dumps(v)}'
    if "handler" in obj and not isinstance(obj["handler"], str):
        return f"the result at handler must be a string, got {json.dumps(obj['handler'])}"
    for key, v in (meta.get("labels") or {}).items():
        errs = qualified_name_errors(key)
        if errs:
            return f"the result at metadata.labels has an invalid label key {json.dumps(key)}: {'; '.join(errs)}"
        errs = label_value_errors(v)
        if errs:
            return (f'the result at metadata.labels["{key}"] is not a valid label value {json.dumps(v)}: '
                    f"{'; '.join(errs)}")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        errs = qualified_name_errors(key.lower())
        if errs:
            return (f"the result at metadata.annotations has an invalid annotation key {json.dumps(key)}: "
                    f"{'; '.join(errs)}")
    size = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    if size > _TOTAL_ANNOTATION_SIZE_LIMIT:
        return (f"the result at metadata.annotations is too long: keys and values together may not be more than "
                f"{_TOTAL_ANNOTATION_SIZE_LIMIT} bytes, got {size}")
    handler = obj.get("handler")
    if handler is None:
        return "the result has no handler: a RuntimeClass needs one"
    errs = dns1123_label_errors(handler)
    if errs:
        return f"the result at handler is not a valid handler {json.dumps(handler)}: {'; '.join(errs)}"
    return spec_problem(obj)


class Patcher:
    """Applies the configured patches with one JavaScript engine."""

    def __init__(self, patches: list[CompiledPatch], engine: JSEngine | None) -> None:
        self.patches = patches
        self.engine = engine
        self.batched = _independent(patches)  # one V8 call per object instead of one per patch

    @classmethod
    async def create(cls, config: SyncerConfig, *, vcluster_name: str, host_namespace: str,
                     timeout: float = 1.0, memory_limit: int = 64 * 1024 * 1024) -> Patcher | None:
        """Compile the configured patches; None when there are none (V8 is then never loaded).

        Raises:
            PatchConfigError: expressions do not compile, one `invalid <field>: <reason>` for each.
        """
        patches = config.rc.patches
        if not patches:
            return None
        compiled = compile_paths(patches)
        errors: list[str] = []
        engine = None
        expressions = [p.expression or None for p in patches]  # "" is no expression (vcluster)
        if any(e is not None for e in expressions):
            engine = JSEngine(expressions, {"name": vcluster_name, "namespace": host_namespace,
                                            "config": config.source}, timeout=timeout, memory_limit=memory_limit)
            try:
                await engine.start()
            except EngineUnavailable as e:
                raise PatchConfigError([f"invalid {RC_PATH}.patches: the JavaScript engine for patch expressions "
                                        f"cannot be loaded ({e}); it comes with the PyPI package mini-racer, a "
                                        "dependency of runtimeclass-syncer: reinstall it"]) from None
            except CompileError as e:
                errors += [f"invalid {RC_PATH}.patches[{i}].expression: {reason} "
                           f'(patch path "{patches[i].path}")' for i, reason in e.failures]
        if errors:
            if engine is not None:
                await engine.close()
            raise PatchConfigError(errors)
        return cls(compiled, engine)

    async def close(self) -> None:
        """Release the engine."""
        if self.engine is not None:
            await self.engine.close()

    async def apply(self, obj: Obj, host_obj: Obj, virtual_obj: Obj | None) -> Obj:
        """Return a patched deep copy of `obj` (the translated virtual object).

        Raises:
            PatchFailed: naming the patch path and what went wrong.
        """
        if self.batched and self.engine is not None:
            out = await self._apply_batched(obj, host_obj, virtual_obj)
            if out is not None:
                return out
        return await self._apply_in_order(obj, host_obj, virtual_obj)

    async def _apply_batched(self, obj: Obj, host_obj: Obj, virtual_obj: Obj | None) -> Obj | None:
        """All expression patches in one evaluation; None when one fails (the caller then runs them in order,
        which names the failing patch)."""
        assert self.engine is not None
        out = copy_json(obj)
        found = [(p, resolve(out, p.segments)) for p in self.patches if p.kind == "expression"]
        calls = [(p.index, m.value, m.exists, m.path) for p, matches in found for m in matches]
        if not calls:
            return out
        try:
            results = await self.engine.run_object(self.engine.encode_objects(host_obj, virtual_obj), calls)
        except PatchError:
            return None
        at = 0
        for _, matches in found:
            _apply_results(matches, results[at:at + len(matches)])
            at += len(matches)
        return None if _typed_field_problem(out) else out

    async def _apply_in_order(self, obj: Obj, host_obj: Obj, virtual_obj: Obj | None) -> Obj:
        out = copy_json(obj)
        objects: str | None = None  # encoded once, on the first patch that applies
        for p in self.patches:
            if p.kind != "expression":
                continue  # reference / labels / reverse only: identity host -> virtual (module doc)
            matches = resolve(out, p.segments)
            if not matches:
                continue
            assert self.engine is not None
            try:
                if objects is None:
                    objects = self.engine.encode_objects(host_obj, virtual_obj)
                results = await self.engine.run_object(objects, [(p.index, m.value, m.exists, m.path)
                                                                 for m in matches])
            except PatchError as e:
                raise PatchFailed(p.path, e.reason) from None
            _apply_results(matches, results)
            problem = _typed_field_problem(out)
            if problem:
                raise PatchFailed(p.path, problem)
        return out


class PatchConfigError(Exception):
    """Patches that cannot be used: `errors` lists each as `invalid <field>: <reason>`."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = errors
