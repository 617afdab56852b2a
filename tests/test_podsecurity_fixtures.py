"""Every pod fixture of k8s.io/pod-security-admission (`test/testdata`, copied into
tests/data/pod-security-admission with its SOURCE and LICENSE) judged by syncer/controllers/podsecurity.py exactly as
its directory says: `<level>/v1.<minor>/pass/*.yaml` allowed at `<level>:v1.<minor>`, `fail/*.yaml` refused, with
the words the library's own runner expects in the refusal (`test/run.go`, `expectErrorSubstring` of
`test/fixtures_*.go`). The newest version's fixtures are judged at `latest` too, which is what
`policies.podSecurityStandard` and a namespace labelled only `pod-security.kubernetes.io/enforce` evaluate. The test
API server's PodSecurity admission is run against the fixtures over HTTP as the library's runner does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.controllers.podsecurity import violations
from syncer.kube.client import ApiError
from syncer.kube.resources import NAMESPACES, PODS
from tests.conftest import Clusters

DATA = Path(__file__).parent / "data" / "pod-security-admission"
NEWEST = "v1.37"  # the newest version directory of the copied fixtures (SOURCE)
Obj = dict[str, Any]

# test/fixtures_*.go `expectErrorSubstring` by fixture file prefix (the lower-cased check ID); unset there, the
# check ID itself (test/fixtures.go `getFixtures`)
EXPECTED_WORDS = {
    "allowprivilegeescalation": "allowPrivilegeEscalation", "apparmorprofile": "forbidden AppArmor profile",
    "capabilities_baseline": "capabilities", "capabilities_restricted": "unrestricted capabilities",
    "hostnamespaces": "host namespaces", "hostpathvolumes": "hostPath", "hostports": "hostPort",
    "hostprobesandhostlifecycle": "probe or lifecycle host", "privileged": "privileged", "procmount": "procMount",
    "procmount_restricted": "procMount", "restrictedvolumes": "restricted volume types",
    "runasnonroot": "runAsNonRoot", "runasuser": "runAsUser", "seccompprofile_baseline": "seccompProfile",
    "seccompprofile_restricted": "seccompProfile", "selinuxoptions": "seLinuxOptions",
    "sysctls": "forbidden sysctl", "windowshostprocess": "hostProcess",
}


def fixtures() -> list[tuple[str, str, str, Path]]:
    """(level, version, pass or fail, file) of every fixture."""
    return [(f.parts[-4], f.parts[-3], f.parts[-2], f) for f in sorted(DATA.glob("*/v1.*/*/*.yaml"))]


def load(path: Path) -> Obj:
    """The fixture pod as the API server hands it to admission: decoded with its defaults, of which one matters
    here (`SetDefaults_Volume`: a volume without a source is an emptyDir, "implicit empty dir" in
    test/fixtures_restrictedVolumes.go)."""
    pod = yaml.safe_load(path.read_text())
    assert isinstance(pod, dict) and pod.get("kind") == "Pod", path
    for volume in pod["spec"].get("volumes") or []:
        if set(volume) == {"name"}:
            volume["emptyDir"] = {}
    return pod


def judge(level: str, version: str | None, pod: Obj) -> list[str]:
    minor = None if version is None else int(version.removeprefix("v1."))
    return violations(level, pod.get("metadata") or {}, pod.get("spec") or {}, minor)


def wrong_judgement(expected: str, path: Path, found: list[str]) -> str | None:
    if expected == "pass":
        return None if not found else f"expected to pass, refused: {found}"
    words = EXPECTED_WORDS[path.stem.rstrip("0123456789")]
    if not found or not any(words in f for f in found):
        return f"expected to fail with {words!r}, got {found or 'allowed'}"
    return None


def test_the_copied_fixtures_are_all_there() -> None:
    # counts of the library's test/testdata at the commit of SOURCE
    found = fixtures()
    newest = [f for f in found if f[1] == NEWEST]
    assert len(found) == 4537
    assert len(newest) == 148
    assert sum(1 for f in newest if f[2] == "fail") == 110
    assert {f[1] for f in found} == {f"v1.{m}" for m in range(38)}


@pytest.mark.parametrize("level", ["baseline", "restricted"])
def test_every_fixture_of_every_version_is_judged_as_the_library_judges_it(level: str) -> None:
    wrong = []
    judged = 0
    for lvl, version, expected, path in fixtures():
        if lvl != level:
            continue
        judged += 1
        why = wrong_judgement(expected, path, judge(level, version, load(path)))
        if why is not None:
            wrong.append(f"{path.relative_to(DATA)}: {why}")
    assert judged == {"baseline": 1555, "restricted": 2982}[level]
    assert wrong == []


@pytest.mark.parametrize(("level", "expected", "path"), [
    (f[0], f[2], f[3]) for f in fixtures() if f[1] == NEWEST],
    ids=[f"{f[0]}-{f[2]}-{f[3].stem}" for f in fixtures() if f[1] == NEWEST])
def test_the_newest_fixtures_at_latest(level: str, expected: str, path: Path) -> None:
    assert wrong_judgement(expected, path, judge(level, None, load(path))) is None


@pytest.mark.parametrize("version", ["v1.0", "v1.36", NEWEST])
async def test_the_test_api_server_admits_and_refuses_the_fixtures_as_the_library_does(
        clusters: Clusters, version: str) -> None:
    # the library's own runner (test/run.go): a namespace per level labelled enforce=<level>,
    # enforce-version=<version>; each fixture created there as written (the API server applies its defaults);
    # pass: created, fail: 403 `pods "<name>" is forbidden: violates PodSecurity "<level>:<version>": ...` with the
    # check's words. v1.36 is the newest policy of the library vcluster vendors (v0.36.0). The runner needs a server
    # as new as the newest policy: an older one drops fields the fixtures set (`hostUsers` before 1.33, with
    # UserNamespacesSupport off: kubesim/features.py), and the pod it judges is not the fixture.
    clusters.host_server.minor = int(NEWEST.removeprefix("v1."))
    for level in ("baseline", "restricted"):
        await clusters.host.create(NAMESPACES, {"metadata": {"name": level, "labels": {
            "pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": version}}})
    wrong = []
    for level, v, expected, path in fixtures():
        if v != version:
            continue
        pod = yaml.safe_load(path.read_text())
        name = pod["metadata"]["name"] = path.stem.replace("_", "-")
        try:
            await clusters.host.create(PODS, pod, level)
            found = []
        except ApiError as e:
            prefix = f'pods "{name}" is forbidden: violates PodSecurity "{level}:{version}": '
            if e.status != 403 or not e.message.startswith(prefix):
                wrong.append(f"{level}/{path.stem}: {e}")
                continue
            found = [e.message.removeprefix(prefix)]
        why = wrong_judgement(expected, path, found)
        if why is not None:
            wrong.append(f"{level}/{path.stem}: {why}")
    assert wrong == []
