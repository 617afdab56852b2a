"""What `runtimeclass-syncer policy` prints (behaviour.md section 6), as pure functions: the effective policy
of each entry of the file (the top level, then each namespace entry in file order) and, for each entry, every
host RuntimeClass with whether tenants there may use it and, if not, why.

A problem the host shows is a default that is unusable there (missing, refused by the selector, being
deleted, or a handler the entry does not allow), or a forced class (`sync.toHost.pods.runtimeClassName`, which every
pod runs with) whose handler the entry does not allow or the host lacks; vcluster's own CoreDNS refused in kube-system
is one too
(`system_pod_problems`): `problems` lists them, and the command exits 1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from syncer.config.model import SyncerConfig
from syncer.config.policy import Effective, Policy, merge, system_pod_problems
from syncer.controllers import gate
from syncer.controllers.policy import handler_of

Obj = dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """One host class under one entry: `allowed`, else `reason` says why not."""

    entry: str
    runtime_class: str
    handler: str
    allowed: bool
    reason: str = ""


def entries(policy: Policy) -> list[Effective]:
    """The effective policy of the top level and of each namespace entry, in file order."""
    out = [merge(policy.top, None)]
    out += [merge(policy.top, e, name) for name, e in policy.names.items()]
    out += [merge(policy.top, e, key) for key, _, e in policy.selectors]
    return out


def judge(config: SyncerConfig, effective: Effective, rc: Obj, forced: Obj | None = None) -> Verdict:
    """Whether a pod under `effective` may name host class `rc`. With `sync.toHost.pods.runtimeClassName` the pod
    runs with that class, `forced` (None when the host lacks it), and the handler list judges that one, as
    `policy.resolve` does."""
    name = str((rc.get("metadata") or {}).get("name"))
    handler = handler_of(rc) or ""
    decision = gate.evaluate(config, "", name, rc)
    if decision.refusal is not None:
        return Verdict(effective.entry, name, handler, False, decision.refusal.predicate)
    if (why := _handler_refused(config, effective, handler, forced)) is not None:
        return Verdict(effective.entry, name, handler, False, why)
    return Verdict(effective.entry, name, handler, True)


def _handler_refused(config: SyncerConfig, effective: Effective, handler: str, forced: Obj | None) -> str | None:
    """Why the handler list refuses a pod whose class has `handler` (the forced class's when one is forced), None
    when it does not."""
    if effective.handlers is None:
        return None
    listed = ", ".join(effective.handlers) or "none"
    if config.forced_runtime_class:
        subject = f'the forced runtime class "{config.forced_runtime_class}"'
        runs_with = handler_of(forced)
        if runs_with is None:
            return f"{subject} does not exist in the host, so its handler cannot be checked"
        if runs_with not in effective.handlers:
            return f'{subject} uses the handler "{runs_with}", which is not allowed (allowed handlers: {listed})'
        return None
    if handler not in effective.handlers:
        return f'the handler "{handler}" is not allowed (allowed handlers: {listed})'
    return None


def report(config: SyncerConfig, policy: Policy, host_rcs: list[Obj]) -> dict[str, Any]:
    """`{"entries": [...], "runtimeClasses": [...], "problems": [...]}` (the `-o json` document)."""
    classes = sorted(host_rcs, key=lambda o: str((o.get("metadata") or {}).get("name")))
    by_name = {str((o.get("metadata") or {}).get("name")): o for o in classes}
    forced = by_name.get(config.forced_runtime_class) if config.forced_runtime_class else None
    out_entries, verdicts, problems = [], [], []
    for eff in entries(policy):
        out_entries.append({"entry": eff.entry, "defaultRuntimeClassName": eff.default or None,
                            "requireRuntimeClassName": eff.require,
                            "allowedHandlers": list(eff.handlers) if eff.handlers is not None else None})
        judged = [judge(config, eff, rc, forced) for rc in classes]
        verdicts += [asdict(v) for v in judged]
        if config.forced_runtime_class and (why := _handler_refused(config, eff, "", forced)) is not None:
            problems.append(f"{eff.entry}: {why}: every pod is refused")
        if eff.default:
            rc = by_name.get(eff.default)
            if rc is None:
                problems.append(f'{eff.entry}: the default runtime class "{eff.default}" does not exist in the host')
            else:
                v = judge(config, eff, rc)
                if not v.allowed:
                    problems.append(f'{eff.entry}: the default runtime class "{eff.default}" is unusable: {v.reason}')
    problems += system_pod_problems(config, policy)
    return {"entries": out_entries, "runtimeClasses": verdicts, "problems": problems}


def render(doc: dict[str, Any]) -> str:
    """The report as two aligned tables and the problems, for a terminal."""
    def table(rows: list[list[str]]) -> list[str]:
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]

    lines = table([["ENTRY", "DEFAULT", "REQUIRE", "ALLOWED HANDLERS"]] + [
        [e["entry"], e["defaultRuntimeClassName"] or "-", str(e["requireRuntimeClassName"]).lower(),
         ", ".join(e["allowedHandlers"]) if e["allowedHandlers"] is not None else "any"] for e in doc["entries"]])
    lines.append("")
    rows = [["ENTRY", "RUNTIME CLASS", "HANDLER", "TENANTS MAY USE IT"]] + [
        [v["entry"], v["runtime_class"], v["handler"] or "-", "allowed" if v["allowed"] else f"refused: {v['reason']}"]
        for v in doc["runtimeClasses"]]
    lines += table(rows) if len(rows) > 1 else ["(no RuntimeClass in the host)"]
    if doc["problems"]:
        lines += ["", *(f"problem: {p}" for p in doc["problems"])]
    return "\n".join(lines)
