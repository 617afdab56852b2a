"""The JavaScript engine for patch expressions: V8 through PyMiniRacer (PyPI `mini-racer`).

One long-lived context per process. Every expression is compiled once, at start-up, into a function
`(value, valueExists, context) => <expression>`; a syntax error is a configuration error naming the
patch. Evaluations run from the event loop without blocking it (`eval_cancelable` runs V8 on
mini-racer's own thread) under a time limit; the context has a hard memory limit. After an
out-of-memory the context is unusable, so it is rebuilt and the expressions compiled again.

Values go in and out as JSON. Integers beyond 2^53 - 1 cannot be represented exactly by JavaScript
numbers, so inputs containing them are refused (PatchError naming where) instead of silently
corrupted. Bare V8 has no network, file or process access; the prelude adds only pure helpers
(`btoa`, `atob`, `virtualToHostDNS`).

`py_mini_racer` is imported only when an engine is created, so a process without patches never loads V8.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from importlib import resources
from typing import Any

import orjson

MAX_SAFE_INTEGER = 2**53 - 1


class PatchError(Exception):
    """A patch failed for one object: `reason` says how (throw, timeout, out of memory, bad value)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EngineUnavailable(Exception):
    """The JavaScript engine (PyPI `mini-racer`) cannot be loaded; the message says why."""


class CompileError(Exception):
    """Expressions do not compile: `failures` holds, for each, the patch's position and V8's message,
    in patch order (every expression is compiled, so one run names them all)."""

    def __init__(self, failures: list[tuple[int, str]]) -> None:
        super().__init__("; ".join(f"patches[{i}]: {reason}" for i, reason in failures))
        self.failures = failures


def find_unsafe_integer(value: Any, where: str = "") -> str | None:
    """The path of the first integer JavaScript cannot hold exactly (|n| > 2^53 - 1), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return where or "<value>" if abs(value) > MAX_SAFE_INTEGER else None
    if isinstance(value, dict):
        for k, v in value.items():
            found = find_unsafe_integer(v, f"{where}.{k}" if where else str(k))
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = find_unsafe_integer(v, f"{where}[{i}]")
            if found:
                return found
    return None


def _strict_dumps(value: Any) -> str:
    """JSON text of `value`. Raises TypeError for an integer beyond 2^53 - 1 (or what is not JSON)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_STRICT_INTEGER).decode()
    except orjson.JSONEncodeError as e:
        raise TypeError(str(e)) from None


def _first_line(e: BaseException) -> str:
    """V8's message without its location prefix: `SyntaxError: Unexpected token '}'`."""
    text = str(e).strip()
    for line in text.splitlines():
        m = re.search(r"\b([A-Z][A-Za-z]*Error\b.*)", line)
        if m:
            return m.group(1).strip()
    return text.splitlines()[0] if text else type(e).__name__


class JSEngine:
    """Compiles and evaluates patch expressions.

    Args:
        expressions: the expressions, by patch index (None for patches without one).
        vcluster: `{"name", "namespace", "config"}` exposed as `context.vcluster` (namespace is the host
            namespace the vcluster runs in).
        timeout: seconds one evaluation may run before it is stopped.
        memory_limit: bytes the V8 heap may use before evaluations fail with out-of-memory.
    """

    def __init__(self, expressions: list[str | None], vcluster: dict[str, Any], *, timeout: float = 1.0,
                 memory_limit: int = 64 * 1024 * 1024) -> None:
        self.expressions = expressions
        self.vcluster = vcluster
        self.timeout = timeout
        self.memory_limit = memory_limit
        self.evaluations = 0
        self.rebuilds = 0
        self.busy_seconds = 0.0  # time spent evaluating (holding the context), for metrics and benchmarks
        self._ctx: Any = None
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Create the context and compile every expression.

        Raises:
            CompileError: every expression that does not compile (the others are compiled all the same).
            EngineUnavailable: V8 cannot be loaded (the package is missing or broken).
        """
        try:
            from py_mini_racer import MiniRacer  # V8 is loaded only when patches exist

            ctx = MiniRacer()
        except Exception as e:  # a missing package, or a V8 library that does not load on this machine
            raise EngineUnavailable(f"{type(e).__name__}: {_first_line(e) if str(e) else type(e).__name__}") from None
        try:
            ctx.set_hard_memory_limit(self.memory_limit)
            prelude = resources.files("syncer.patches").joinpath("prelude.js").read_text(encoding="utf-8")
            await ctx.eval_cancelable(prelude.replace("__VCLUSTER__", json.dumps(self.vcluster)))
            failures = [(i, why) for i, expr in enumerate(self.expressions)
                        if expr is not None and (why := await self._compile(ctx, i, expr)) is not None]
            if failures:
                raise CompileError(failures)
            await ctx.eval_cancelable("__rcs.seal()")
        except BaseException:
            ctx.close()  # its thread would otherwise keep the process from exiting
            raise
        self._ctx = ctx

    async def _compile(self, ctx: Any, i: int, expr: str) -> str | None:
        """Define expression `i` in `ctx`; None when it compiles, else why it does not (V8's first line)."""
        # An expression compiles to a function returning it. Text that only parses as a script (e.g.
        # `if (...) {...} else {...}`) is run with eval, whose result is the script's completion value,
        # as vcluster evaluates its patch scripts; its syntax is still checked here.
        as_expression = (f"__rcs.define({i}, function (value, valueExists, context) {{ \"use strict\";\n"
                         f"return ({expr}\n); }}); true")
        as_script = (f"new Function({json.dumps(expr)}); __rcs.define({i}, function (value, valueExists, "
                     f"context) {{ \"use strict\"; return eval({json.dumps(expr)}); }}); true")
        try:
            try:
                await asyncio.wait_for(ctx.eval_cancelable(as_expression), self.timeout)
            except TimeoutError:
                raise
            except Exception:
                await asyncio.wait_for(ctx.eval_cancelable(as_script), self.timeout)
        except TimeoutError:
            return "compiling the expression took too long"
        except Exception as e:
            return _first_line(e)
        return None

    async def close(self) -> None:
        """Release the V8 context."""
        if self._ctx is not None:
            self._ctx.close()
            self._ctx = None

    @staticmethod
    def encode_objects(host_obj: Any, virtual_obj: Any) -> str:
        """Check and JSON-encode `context.hostObject` / `context.virtualObject` (None when absent) once
        per object, for every `run_object` call on that object. A virtual object holding an integer JavaScript
        cannot represent exactly is passed as null (as when there is none): it is the tenant's copy, which the
        sync overwrites, and a value the tenant wrote there must not stop that (a `tolerationSeconds` of 2^53 + 1
        would otherwise fail every patch, and keep the tenant's copy for good).

        Raises:
            PatchError: an integer beyond 2^53 - 1 in the host object (the message says where).
        """
        try:  # orjson refuses integers beyond 2^53 - 1 itself; the walk below only names where
            return _strict_dumps({"hostObject": host_obj, "virtualObject": virtual_obj})
        except TypeError:
            bad = find_unsafe_integer(host_obj)
            if bad:
                raise PatchError(f"context.hostObject.{bad} holds an integer beyond 2^53 - 1 that JavaScript "
                                 "cannot represent exactly") from None
            return _strict_dumps({"hostObject": host_obj, "virtualObject": None})

    async def run_object(self, objects: str, calls: list[tuple[int, Any, bool, str]]) -> list[Any]:
        """Evaluate patch functions for one object.

        Args:
            objects: the context objects, from `encode_objects`.
            calls: (patch index, value, valueExists, concrete path) per evaluation.
        Returns:
            the results in order; None where the expression returned null or undefined.
        Raises:
            PatchError: a throw, a timeout, out-of-memory, or an input integer beyond 2^53 - 1 (the
                message says which and where).
        """
        async with self._lock:
            started = time.perf_counter()
            try:
                return await self._run_locked(objects, calls)
            finally:
                self.busy_seconds += time.perf_counter() - started

    async def _run_locked(self, objects: str, calls: list[tuple[int, Any, bool, str]]) -> list[Any]:
        if self._ctx is None:
            await self.start()
        try:
            batch = _strict_dumps({"objects": objects, "calls": [{"i": i, "value": v, "valueExists": e, "path": p}
                                                                  for i, v, e, p in calls]})
        except TypeError:
            for _, value, _, path in calls:
                bad = find_unsafe_integer(value, path)
                if bad:
                    raise PatchError(f"{bad} holds an integer beyond 2^53 - 1 that JavaScript cannot represent "
                                     "exactly") from None
            raise
        raw = await self._eval(f"__rcs.runBatch({orjson.dumps(batch).decode()})")
        self.evaluations += len(calls)
        if not isinstance(raw, str):
            raise PatchError(f"the expression returned something that is not JSON: {raw!r}")
        try:
            return [r.get("v") for r in json.loads(raw)]
        except RecursionError:  # the prelude's checkResult refuses deeper results first; this stays a PatchError
            raise PatchError("the expression returned a result nested too deeply to decode") from None

    async def _eval(self, code: str) -> Any:
        from py_mini_racer import JSOOMException

        try:
            async with asyncio.timeout(self.timeout):  # cancels the evaluation, which stops V8
                return await self._ctx.eval_cancelable(code)
        except TimeoutError:
            where = await self._ctx.eval_cancelable("__rcs.current()")
            raise PatchError(f"the expression ran longer than the {self.timeout:g}s limit and was stopped"
                             + (f" (at {where})" if where else "")) from None
        except JSOOMException:
            await self._rebuild()
            raise PatchError(f"the expression ran out of memory (limit {self.memory_limit // (1024 * 1024)} MiB); "
                             "the JavaScript context was rebuilt") from None
        except PatchError:
            raise
        except Exception as e:
            line = _first_line(e)
            if line.startswith("NotJSONError: "):  # the prelude's check of the result
                raise PatchError(line.removeprefix("NotJSONError: ")) from None
            raise PatchError(f"the expression threw: {line}") from None

    async def _rebuild(self) -> None:
        await self.close()
        self.rebuilds += 1
        await self.start()
