"""Configuration files that are not plain UTF-8 YAML, through the command line as a process: a file in another
encoding (UTF-16 from PowerShell) and a document whose aliases expand it without bound ("billion laughs") are
configuration errors, exit 2 with one line naming the file (behaviour.md section 7: `validate` exits 0, or 2 with
every error; `run` refuses an invalid configuration before any API request), never a traceback or gigabytes of
memory. The aliasing rule is Go's YAML decoder's, the one vcluster reads its configuration with."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from syncer.config.model import ConfigError, allowed_alias_ratio, read_yaml

REPO = Path(__file__).resolve().parent.parent
SECTION = "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n"
PATCHES = "      patches:\n        - path: metadata.labels.x\n          expression: '\"y\"'\n"
# Nested aliases: six lines that expand to a million scalars (the reviewer's file had eight levels, a hundred
# million: `validate` took gigabytes, then V8 crashed serialising it for the patches)
LAUGHS = "zzz:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 6))
VCLUSTER = "sync:\n  toHost:\n    pods:\n      enabled: false\n"


async def _validate(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "syncer", "validate", *args, cwd=REPO,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_utf16_config_is_refused_naming_the_file(tmp_path: Path) -> None:
    own = tmp_path / "runtimeclass-syncer.yaml"
    own.write_bytes(SECTION.encode("utf-16"))  # PowerShell 5's `>` and Out-File: UTF-16LE with its byte-order mark
    assert own.read_bytes()[:2] == b"\xff\xfe"
    assert await _validate("--config", str(own)) == (
        2, "", f"error: cannot read config {own}: not UTF-8 but UTF-16 (it starts with a UTF-16 byte-order mark); "
               "save it as UTF-8\n")
    # vcluster's file beside the syncer's own, and a Latin-1 one without a byte-order mark
    good, shared = tmp_path / "own.yaml", tmp_path / "vcluster.yaml"
    good.write_text(SECTION, encoding="utf-8")
    shared.write_bytes("# café\n".encode("latin-1") + VCLUSTER.encode())
    assert await _validate("--config", str(good), "--vcluster-config", str(shared)) == (
        2, "", f"error: cannot read vcluster config {shared}: not UTF-8 (invalid continuation byte at byte 5); "
               "save it as UTF-8\n")
    # UTF-8 with a byte-order mark (Windows editors) is UTF-8
    shared.write_bytes(b"\xef\xbb\xbf" + VCLUSTER.encode())
    code, out, err = await _validate("--config", str(good), "--vcluster-config", str(shared))
    assert code == 0 and f"{good}: valid" in out, err


async def test_a_document_of_nested_aliases_is_refused_before_it_expands(tmp_path: Path) -> None:
    # gopkg.in/yaml.v3 decode.go: failf("document contains excessive aliasing")
    laughs = tmp_path / "laughs.yaml"
    laughs.write_text(LAUGHS + SECTION + PATCHES)
    assert await _validate("--config", str(laughs)) == (
        2, "", f"error: cannot parse config {laughs}: document contains excessive aliasing\n")
    own = tmp_path / "own.yaml"
    own.write_text(SECTION)
    assert await _validate("--config", str(own), "--vcluster-config", str(laughs)) == (
        2, "", f"error: cannot parse vcluster config {laughs}: document contains excessive aliasing\n")
    # run refuses it too, before any cluster is asked (there is none: the kubeconfigs do not exist)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "syncer", "run", "--config", str(laughs), "--virtual-kubeconfig", "x",
        "--host-kubeconfig", "x", "--vcluster-name", "t", "--host-namespace", "t", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 2
    assert f"error: cannot parse config {laughs}: document contains excessive aliasing" in err.decode()


async def test_anchors_used_as_people_use_them_are_accepted(tmp_path: Path) -> None:
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text("labels: &dev {environment: development}\n" + SECTION
                   + "      selector:\n        matchLabels: *dev\n" + PATCHES)
    code, out, err = await _validate("--config", str(cfg))
    assert code == 0 and "selector: environment in (development)" in out, err


# gopkg.in/yaml.v2 and v3 limit_test.go, the cases of a size a test can afford: "1kb of maps" and "10kb of maps" are
# decoded (an anchor used nowhere else); a self-containing anchor is refused ("anchor '...' value contains itself")
@pytest.mark.parametrize("kb", [1, 10])
def test_go_yaml_limit_cases_without_aliases_load(kb: int, tmp_path: Path) -> None:
    path = tmp_path / "maps.yaml"
    path.write_text("a: &a [{a}" + ",{a}" * (kb * 1024 // 4 - 1) + "]")
    assert len(read_yaml(path)["a"]) == kb * 1024 // 4


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n", "a: &a [1, [2, *a]]\n"])
def test_an_anchor_that_contains_itself_is_refused(text: str, tmp_path: Path) -> None:
    path = tmp_path / "self.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        read_yaml(path, "vcluster config")
    assert err.value.errors == [f"cannot parse vcluster config {path}: anchor at line 1, column 4: value contains "
                                "itself"]


def test_deep_nesting_is_a_parse_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("x: " + "[" * 5000 + "]" * 5000)
    with pytest.raises(ConfigError) as err:
        read_yaml(path)
    assert err.value.errors == [f"cannot parse config {path}: the document is nested too deeply"]


def test_the_allowed_alias_ratio_is_yaml_v3s() -> None:
    # decode.go allowedAliasRatio: 0.99 up to 400,000 decoded nodes, 0.10 from 4,000,000, linear between
    assert [allowed_alias_ratio(n) for n in (1, 400_000, 4_000_000, 10_000_000)] == [0.99, 0.99, 0.10, 0.10]
    assert allowed_alias_ratio(2_200_000) == pytest.approx(0.99 - 0.89 * 0.5)


async def test_a_key_set_twice_is_refused_in_the_config_and_the_policy(tmp_path: Path) -> None:
    # vcluster decodes its config strictly (config/config.go UnmarshalYAMLStrict: sigs.k8s.io/yaml UnmarshalStrict),
    # and go-yaml refuses a mapping that sets a key twice: `line 4: key "enabled" already set in map`
    twice = tmp_path / "twice.yaml"
    twice.write_text(SECTION + "      enabled: false\n")
    assert await _validate("--config", str(twice)) == (
        2, "", f'error: cannot parse config {twice}: line 5: key "enabled" already set in map\n')
    # the policy file is read the same way: its encoding, aliases and repeated keys
    good = tmp_path / "own.yaml"
    good.write_text(SECTION, encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    policy.write_bytes("requireRuntimeClassName: true\n".encode("utf-16"))
    assert await _validate("--config", str(good), "--policy", str(policy)) == (
        2, "", f"error: {policy}: cannot read policy {policy}: not UTF-8 but UTF-16 (it starts with a UTF-16 "
               "byte-order mark); save it as UTF-8\n")
    policy.write_text(LAUGHS.replace("zzz", "namespaces"))
    code, _, err = await _validate("--config", str(good), "--policy", str(policy))
    assert (code, err) == (2, f"error: {policy}: cannot parse policy {policy}: document contains excessive aliasing\n")
