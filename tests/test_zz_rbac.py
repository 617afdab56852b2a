"""RBAC from the code: every request the syncer sent to the test API servers during this session's
end-to-end tests is allowed by deploy/ (host Role and ClusterRole, virtual ClusterRole), and every verb
deploy/ grants was used (least privilege). Named to run last: it reads what the other tests recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesim.apiserver import EmbeddedAPIServer

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
TESTS = Path(__file__).resolve().parent
Rule = tuple[str, str, str]  # (group, resource, verb)


def _granted(path: Path, kind: str) -> set[Rule]:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d and d.get("kind") == kind]
    return {(g, r, v) for d in docs for rule in d["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def _is_syncer(agent: str) -> bool:
    """The syncer's clients (in process, the CLI, chaos scenarios, the leader-election tests)."""
    return agent.startswith(("runtimeclass-syncer", "syncer ("))


def test_the_syncer_needs_exactly_what_deploy_grants(all_api_servers: list[EmbeddedAPIServer],
                                                     request: pytest.FixtureRequest) -> None:
    ran = {Path(str(item.path)).name for item in request.session.items}
    wanted = {p.name for p in TESTS.glob("test_*.py")}
    if ran != wanted:
        pytest.skip(f"needs the whole suite's requests (this run collected {len(ran)} of {len(wanted)} test files)")
    used: dict[str, set[tuple[str, str, str, bool]]] = {"host": set(), "virtual": set()}
    for server in all_api_servers:
        for e in server.audit:
            if _is_syncer(e.agent) and server.name in used:
                used[server.name].add((e.group, e.resource, e.verb, bool(e.namespace)))
    host_ns = _granted(DEPLOY / "host-rbac.yaml", "Role")
    host_cluster = _granted(DEPLOY / "host-rbac.yaml", "ClusterRole")
    virtual = _granted(DEPLOY / "virtual-rbac.yaml", "ClusterRole")
    # a namespaced request on the host is allowed by the Role in the vcluster namespace; a cluster-wide one
    # (or one on a cluster-scoped resource) needs the ClusterRole
    denied = [("host", u) for u in used["host"] if u[:3] not in (host_ns if u[3] else host_cluster)]
    denied += [("virtual", u) for u in used["virtual"] if u[:3] not in virtual]
    assert not denied, f"requests deploy/ does not allow (cluster, (group, resource, verb, namespaced)): {denied}"
    unused = sorted(("host Role", r) for r in host_ns - {u[:3] for u in used["host"] if u[3]})
    unused += sorted(("host ClusterRole", r) for r in host_cluster - {u[:3] for u in used["host"] if not u[3]})
    unused += sorted(("virtual ClusterRole", r) for r in virtual - {u[:3] for u in used["virtual"]})
    assert not unused, f"granted but never used (least privilege): {unused}"


