"""Applying `sync.fromHost.runtimeClasses.patches` to the virtual copy of a host RuntimeClass.

Patches run in order, each on the result of the previous one. For an `expression` patch every place
its path resolves to (path.py) is evaluated with `value`, `valueExists` and `context`, and the result
replaces the value; null/undefined deletes it. The whole virtual copy is patched every time it is
computed, so the result is a pure function of the host object (and of the current virtual object, if
an expression reads `context.virtualObject`): what the reconciler compares against is stable, and host
changes still flow through.

`reference` and `labels` patches follow vcluster's reference: they translate names and label selectors
between host and virtual. A RuntimeClass is cluster-scoped and keeps its name and labels on both sides,
so for RuntimeClasses (the only objects patched here) both are the identity; they are accepted so a
vcluster.yaml that uses them stays valid.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from syncer.config.model import RC_PATH, Patch, SyncerConfig
from syncer.patches.engine import CompileError, EngineUnavailable, JSEngine, PatchError
from syncer.patches.path import Match, Segment, parse, resolve

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


def compile_paths(patches: list[Patch]) -> list[CompiledPatch]:
    """Parse the patch paths (already validated by config loading, so this does not fail)."""
    return [CompiledPatch(i, p.path, parse(p.path),
                          "expression" if p.expression is not None else "reference" if p.reference is not None
                          else "labels") for i, p in enumerate(patches)]


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


def _typed_field_problem(obj: Obj) -> str | None:
    """Why a patched RuntimeClass would not decode on a real API server (labels and annotations are
    string maps, handler a string), or None. Caught here so it is a patch failure naming the patch, not
    a 400 from the virtual API server retried forever."""
    meta = obj.get("metadata") or {}
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
    return None


class Patcher:
    """Applies the configured patches with one JavaScript engine."""

    def __init__(self, patches: list[CompiledPatch], engine: JSEngine | None) -> None:
        self.patches = patches
        self.engine = engine

    @classmethod
    async def create(cls, config: SyncerConfig, *, vcluster_name: str, host_namespace: str,
                     timeout: float = 1.0, memory_limit: int = 64 * 1024 * 1024) -> Patcher | None:
        """Compile the configured patches; None when there are none (V8 is then never loaded).

        Raises:
            PatchConfigError: an expression does not compile (`invalid <field>: <reason>`).
        """
        patches = config.rc.patches
        if not patches:
            return None
        compiled = compile_paths(patches)
        errors: list[str] = []
        engine = None
        expressions = [p.expression for p in patches]
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
                errors.append(f"invalid {RC_PATH}.patches[{e.index}].expression: {e.reason} "
                              f'(patch path "{patches[e.index].path}")')
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
        out = copy.deepcopy(obj)
        objects: str | None = None  # encoded once, on the first patch that applies
        for p in self.patches:
            if p.kind != "expression":
                continue  # reference / labels: identity for cluster-scoped RuntimeClasses (module doc)
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
