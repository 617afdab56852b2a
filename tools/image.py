"""`make image`: build the container image from the `Dockerfile` without a Docker engine, and run it.

    python tools/image.py build [--arch ARCH]
        builds localhost/runtimeclass-syncer:<version> and prints its name (for another architecture than
        this machine's, through qemu-user-static: localhost/runtimeclass-syncer:<version>-<arch>)
    python tools/image.py run [--arch ARCH] [--bind DIR[:PATH]]... [--tmpfs PATH]... [--entrypoint PROGRAM]
                              [-- ARGS...]
        runs the built image's entrypoint as its user (65532) on a read-only root, as a container runtime
        would

Needs root (mmdebstrap, chroot, buildah's storage) and Debian's (or Ubuntu's) `buildah`, `umoci` and
`mmdebstrap`; they are installed with apt-get when missing. Network: a Debian mirror and the Python package
index pip is configured with; no container registry.

The build, for the machine's own architecture (amd64 or arm64) unless `--arch` names the other one (then the
kernel runs its binaries through qemu-user-static, installed and enabled when missing; CI builds each
architecture natively):

1. **Base** (`BASE` of the Dockerfile): a Debian root filesystem (`SUITE`, bookworm: Python 3.11) made by
   mmdebstrap from Debian packages: Essential packages and `python3`, no apt, no pip, no compiler, no
   documentation but the copyright files (dpkg's status stays, for image scanners), and the user `nonroot`
   (65532:65532). The tarball is cached in `build/image/` (git-ignored) under a key of the mmdebstrap
   arguments; `make image-clean` removes it, so that the next build takes the newest Debian packages
   (security updates; CI builds in a fresh clone, so always afresh). It is imported as the local image
   `localhost/runtimeclass-syncer-base:<suite>-<arch>` (`buildah from scratch` + `add`), labelled with the
   tarball's SHA-256, and imported again only when the tarball changes.
2. **Virtualenv** (`build/image/venv`, what the Dockerfile copies to `/opt/venv`): the host's pip builds this
   checkout's wheel and downloads the wheels of its dependencies for the base's Python version, glibc and
   architecture (binary wheels only: mini-racer's V8 is a manylinux glibc library); then, in a chroot of the
   base, the base's own `python3` makes a virtualenv without pip and installs them from those files alone,
   with pip run from its wheel (no pip stays in the image), and compiles the bytecode (the image runs with a
   read-only root and `PYTHONDONTWRITEBYTECODE=1`).
3. **Image**: `buildah bud` of the `Dockerfile` (COPY only: no RUN step, so no container runs during the
   build), never pulling, tagged `localhost/runtimeclass-syncer:<version of pyproject.toml>`.

`run` exports the image (`buildah push` to an OCI layout in `build/image/oci-<arch>`), unpacks it with umoci (as a
runtime would: whiteouts applied, its runtime configuration derived from the image's), and executes the
image's entrypoint + cmd (or the given ARGS), environment and user from that configuration: in a private
mount namespace, on the unpacked root bound read-only, with `/proc`, a `/dev` of the usual devices, the
host's `/etc/hosts` and `/etc/resolv.conf`, the given host directories bound read-only (at the same path
by default) and the given empty writable tmpfs mounts, in a chroot as uid/gid 65532 with no new privileges
(the deploy manifests' securityContext: runAsNonRoot, allowPrivilegeEscalation false,
readOnlyRootFilesystem). The network is the host's. The exit status is the entrypoint's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "build" / "image"
NAME = "localhost/runtimeclass-syncer"
BASE_NAME = "localhost/runtimeclass-syncer-base"
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MERGED_USR_HOOKS = "/usr/share/mmdebstrap/hooks/merged-usr"
UID = 65532
KEY_LABEL = "io.github.runtimeclass-syncer.base-sha256"  # the base image's: the tarball it was imported from
# the kernel's machine name (as wheels name it) -> the Debian architecture
ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}
# what the wheel is built from (pyproject.toml's packages; kubesim.examples is examples/)
SOURCES = ("pyproject.toml", "README.md", "syncer", "kubesim", "examples")
# what `make image` needs from apt (each package provides the program of its name)
APT = ("buildah", "umoci", "mmdebstrap")


class ImageError(RuntimeError):
    """A build or run step failed; the message names the step."""


def version() -> str:
    """The project version from pyproject.toml (the image's tag)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def requires_python() -> tuple[int, int]:
    """The lowest Python version pyproject.toml's `requires-python` (">=X.Y") allows."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        spec = str(tomllib.load(f)["project"]["requires-python"])
    major, minor = spec.removeprefix(">=").split(".")[:2]
    return int(major), int(minor)


def image_name(arch: str | None = None) -> str:
    """The name `make image` gives the image: `localhost/runtimeclass-syncer:<version>` for this machine's
    architecture, `...:<version>-<arch>` for another `arch` (amd64, arm64)."""
    if arch is None or arch == host_arch():
        return f"{NAME}:{version()}"
    return f"{NAME}:{version()}-{arch}"


def _sh(*cmd: str | Path, capture: bool = False, env: dict[str, str] | None = None) -> str:
    """Run `cmd`; its output goes to ours unless `capture` (then it is returned). Raises ImageError naming the
    command when it fails."""
    args = [str(c) for c in cmd]
    try:
        done = subprocess.run(args, check=True, text=True, env=env,
                              stdout=subprocess.PIPE if capture else None)
    except (OSError, subprocess.CalledProcessError) as e:
        raise ImageError(f"{' '.join(args)}: {e}") from e
    return done.stdout if capture else ""


def ensure_tools() -> None:
    """Check for root and for buildah, umoci, mmdebstrap (and Debian's archive keyring); install what is
    missing with apt-get. Raises ImageError when not root or when apt-get is not there."""
    if os.geteuid() != 0:
        raise ImageError("building and running the image needs root (mmdebstrap, chroot, buildah's storage)")
    missing = [pkg for pkg in APT if shutil.which(pkg) is None]
    if not Path(KEYRING).is_file():
        missing.append("debian-archive-keyring")
    if not missing:
        return
    if shutil.which("apt-get") is None:
        raise ImageError(f"install {', '.join(missing)} (Debian/Ubuntu packages); apt-get is not available here")
    print(f"image: installing {' '.join(missing)} with apt-get", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _sh("apt-get", "update", "-q", env=env)
    _sh("apt-get", "install", "-y", "-q", *missing, env=env)


def host_arch() -> str:
    """The Debian architecture of this machine (amd64, arm64). Raises ImageError for any other."""
    machine = platform.machine()
    if machine not in ARCHES:
        raise ImageError(f"no image for the {machine} architecture (only {', '.join(ARCHES)})")
    return ARCHES[machine]


def ensure_emulation(arch: str) -> None:
    """For an `arch` other than this machine's: check that the kernel runs its binaries through
    qemu-user-static (binfmt_misc), installing qemu-user-static and binfmt-support and enabling the handler
    when needed. Raises ImageError for an unknown architecture or when the handler cannot be enabled."""
    machines = {debian: machine for machine, debian in ARCHES.items()}
    if arch not in machines:
        raise ImageError(f"no image for the {arch} architecture (only {', '.join(machines)})")
    if arch == host_arch():
        return
    handler = Path("/proc/sys/fs/binfmt_misc") / f"qemu-{machines[arch]}"
    if handler.is_file() and handler.read_text().startswith("enabled"):
        return
    print(f"image: {arch} binaries run through qemu-user-static here (slower; native builds in CI)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if shutil.which("update-binfmts") is None or not Path(f"/usr/bin/qemu-{machines[arch]}-static").is_file():
        _sh("apt-get", "install", "-y", "-q", "qemu-user-static", "binfmt-support", env=env)
    if not Path("/proc/sys/fs/binfmt_misc/register").exists():
        _sh("mount", "-t", "binfmt_misc", "binfmt_misc", "/proc/sys/fs/binfmt_misc")
    _sh("update-binfmts", "--enable", f"qemu-{machines[arch]}")
    if not (handler.is_file() and handler.read_text().startswith("enabled")):
        raise ImageError(f"the kernel does not run {arch} binaries (binfmt_misc handler {handler.name})")


def mmdebstrap_args(suite: str, arch: str) -> list[str]:
    """The mmdebstrap options and suite of the base root filesystem (what comes before the output path)."""
    nonroot = f"nonroot:x:{UID}:{UID}:nonroot:/home/nonroot:/usr/sbin/nologin"
    return [
        "--mode=root", "--variant=essential", "--include=python3", f"--architectures={arch}", f"--keyring={KEYRING}",
        # merged /usr set up as debootstrap does (Debian's usrmerge package would bring the whole of perl)
        f"--hook-dir={MERGED_USR_HOOKS}", "--aptopt=APT::Install-Recommends \"false\"",
        "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
        "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/info/*",
        "--dpkgopt=path-exclude=/usr/share/locale/*",
        f"--customize-hook=echo '{nonroot}' >> \"$1/etc/passwd\"",
        f"--customize-hook=echo 'nonroot:x:{UID}:' >> \"$1/etc/group\"",
        f"--customize-hook=install -d -o {UID} -g {UID} -m 0750 \"$1/home/nonroot\"",
        # mmdebstrap copies the build machine's; a container runtime provides its own
        "--customize-hook=rm \"$1/etc/resolv.conf\" \"$1/etc/hostname\"",
        suite,
    ]


def sources(suite: str) -> list[str]:
    """The apt sources: the suite, its updates and its security updates."""
    return [f"deb {MIRROR} {suite} main", f"deb {MIRROR} {suite}-updates main",
            f"deb {SECURITY} {suite}-security main"]


def base_tarball(suite: str, arch: str) -> Path:
    """Make (or reuse) the base root filesystem tarball, cached under a key of the mmdebstrap arguments.
    Returns its path."""
    args = mmdebstrap_args(suite, arch)
    key = hashlib.sha256(json.dumps([args, sources(suite)]).encode()).hexdigest()[:16]
    tarball = WORK / f"base-{suite}-{arch}-{key}.tar"
    if tarball.is_file():
        print(f"image: base root filesystem {tarball.relative_to(ROOT)} (cached)", flush=True)
        return tarball
    for old in [*WORK.glob(f"base-{suite}-{arch}-*.tar"), *WORK.glob(f"partial-base-{suite}-{arch}-*.tar")]:
        old.unlink()  # an older key's, or a build that was interrupted
    partial = WORK / f"partial-{tarball.name}"  # renamed once complete: a cached tarball is always whole
    print(f"image: mmdebstrap {suite} ({arch}) with python3 -> {tarball.relative_to(ROOT)}", flush=True)
    _sh("mmdebstrap", "--quiet", *args, partial, *sources(suite))
    partial.rename(tarball)
    return tarball


def _image_labels(name: str) -> dict[str, str] | None:
    """The labels of local image `name`, or None when there is no such image."""
    done = subprocess.run(["buildah", "inspect", "--type", "image", name], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    labels = json.loads(done.stdout).get("OCIv1", {}).get("config", {}).get("Labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def base_image(tarball: Path, suite: str, arch: str) -> str:
    """Import `tarball` as the local base image, labelled with the tarball's SHA-256, unless the image of that
    name has that label already. Returns the image name."""
    name = f"{BASE_NAME}:{suite}-{arch}"
    digest = hashlib.sha256()
    with tarball.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    key = digest.hexdigest()
    if (_image_labels(name) or {}).get(KEY_LABEL) == key:
        return name
    print(f"image: importing the base as {name}", flush=True)
    previous = _image_id(name)
    ctr = _sh("buildah", "from", "scratch", capture=True).strip()
    try:
        _sh("buildah", "add", "--quiet", ctr, tarball, "/")
        _sh("buildah", "config", "--os", "linux", "--arch", arch, "--label", f"{KEY_LABEL}={key}",
            "--env", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "--cmd", "/usr/bin/python3", ctr)
        _sh("buildah", "commit", "--quiet", "--rm", ctr, name)
    except ImageError:
        subprocess.run(["buildah", "rm", ctr], capture_output=True)
        raise
    _remove_replaced(previous, name)
    return name


@dataclass(frozen=True)
class Target:
    """The base's Python, as wheels name it: version "3.11", glibc (2, 36), machine "x86_64"."""

    python: str
    glibc: tuple[int, int]
    machine: str

    def pip_options(self) -> list[str]:
        """pip download options for binary wheels that run on this target (manylinux tags down to glibc 2.5)."""
        major, minor = self.glibc
        tags = [f"manylinux_{major}_{m}_{self.machine}" for m in range(minor, 4, -1)]
        tags += [f"manylinux2014_{self.machine}"]
        if self.machine == "x86_64":
            tags += ["manylinux2010_x86_64", "manylinux1_x86_64"]
        nodot = self.python.replace(".", "")
        return ["--only-binary=:all:", "--python-version", self.python, "--implementation", "cp",
                "--abi", f"cp{nodot}", "--abi", "abi3", "--abi", "none",
                *(opt for tag in tags for opt in ("--platform", tag))]


def _chroot(rootfs: Path, *cmd: str) -> str:
    """Run `cmd` as root in a chroot of `rootfs` with a clean environment; returns its output."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
    return _sh("chroot", rootfs, *cmd, capture=True, env=env)


def virtualenv(tarball: Path) -> Path:
    """Build `build/image/venv`: the application's virtualenv made by the base's python3 (see the module
    docstring). Returns its path."""
    stage = WORK / "stage"
    venv = WORK / "venv"
    for path in (stage, venv):
        if path.exists():
            shutil.rmtree(path)
    rootfs = stage / "rootfs"
    rootfs.mkdir(parents=True)
    _sh("tar", "--numeric-owner", "-xf", tarball, "-C", rootfs)
    facts = json.loads(_chroot(rootfs, "python3", "-c", "import json, platform, sys; print(json.dumps("
                               "[f'{sys.version_info[0]}.{sys.version_info[1]}', platform.libc_ver()[1], "
                               "platform.machine()]))"))
    glibc = tuple(int(p) for p in facts[1].split(".")[:2])
    target = Target(facts[0], (glibc[0], glibc[1]), facts[2])
    required = requires_python()
    if tuple(int(p) for p in target.python.split(".")) < required:
        raise ImageError(f"the {tarball.name} Python is {target.python}; the project requires "
                         f">={required[0]}.{required[1]} (pyproject.toml): choose a newer Debian suite")
    print(f"image: wheels for Python {target.python}, glibc {facts[1]}, {target.machine}", flush=True)
    wheels = rootfs / "tmp" / "wheels"
    # -qq: pip's warnings about the host's own configuration are not the build's
    pip = [sys.executable, "-m", "pip", "-qq", "--disable-pip-version-check"]
    src = stage / "src"  # a clean copy: setuptools' build/ of an earlier build would leak removed modules
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(ROOT / name, src / name)
    _sh(*pip, "wheel", "--no-deps", "--wheel-dir", wheels, src)
    project = next(wheels.glob("runtimeclass_syncer-*.whl"))
    _sh(*pip, "download", "--dest", wheels, *target.pip_options(), project)
    _sh(*pip, "download", "--dest", stage / "pip", "--no-deps", *target.pip_options(), "pip")
    pip_wheel = next((stage / "pip").glob("pip-*.whl"))
    shutil.copy(pip_wheel, rootfs / "tmp" / pip_wheel.name)
    _chroot(rootfs, "python3", "-m", "venv", "--without-pip", "/opt/venv")
    _chroot(rootfs, "/opt/venv/bin/python", f"/tmp/{pip_wheel.name}/pip", "install", "--quiet", "--no-index",
            "--find-links", "/tmp/wheels", "--no-cache-dir", "--no-compile", "--disable-pip-version-check",
            f"/tmp/wheels/{project.name}")
    _chroot(rootfs, "/opt/venv/bin/python", "-m", "compileall", "-q", "/opt/venv/lib")
    shutil.move(rootfs / "opt" / "venv", venv)
    shutil.rmtree(stage)
    return venv


def _image_id(name: str) -> str | None:
    """The full ID of local image `name`, or None when there is none."""
    done = subprocess.run(["buildah", "images", "--quiet", "--no-trunc", name], capture_output=True, text=True)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _remove_replaced(previous: str | None, name: str) -> None:
    """Remove the image `name` named before it was rebuilt (now untagged), if there was one and it changed."""
    if previous is not None and previous != _image_id(name):
        subprocess.run(["buildah", "rmi", previous], capture_output=True)


def build(suite: str = SUITE, arch: str | None = None) -> str:
    """`make image`: the base, the virtualenv, then `buildah bud` of the Dockerfile, for `arch` (default this
    machine's; another through qemu-user-static). Returns the image name."""
    ensure_tools()
    arch = arch or host_arch()
    ensure_emulation(arch)
    WORK.mkdir(parents=True, exist_ok=True)
    tarball = base_tarball(suite, arch)
    base = base_image(tarball, suite, arch)
    virtualenv(tarball)
    name = image_name(arch)
    previous = _image_id(name)
    print(f"image: buildah bud -> {name}", flush=True)
    _sh("buildah", "bud", "--quiet", "--pull=never", "--layers=false", "--os", "linux", "--arch", arch,
        "--build-arg", f"BASE={base}",
        "--build-arg", f"VERSION={version()}", "-f", ROOT / "Dockerfile", "-t", name, ROOT)
    _remove_replaced(previous, name)
    shutil.rmtree(WORK / "venv")
    return name


def oci_layout(arch: str) -> Path:
    """Where `unpack` exports the image of `arch`: an OCI layout of one image tagged `latest`."""
    return WORK / f"oci-{arch}"


def unpack(arch: str | None = None) -> Path:
    """Export the image of `arch` (default this machine's) to an OCI layout (`oci_layout`, layers
    gzip-compressed as a registry stores them) and unpack it with umoci into a bundle
    (`build/image/bundle-<arch>`: a root filesystem and a runtime-spec config.json); both are reused while
    the image stays the same. Returns the bundle's path. Raises ImageError when there is no such image."""
    ensure_tools()
    arch = arch or host_arch()
    ensure_emulation(arch)
    name = image_name(arch)
    image_id = _image_id(name)
    if image_id is None:
        raise ImageError(f"no image {name}: run make image first")
    bundle = WORK / f"bundle-{arch}"
    stamp = bundle / "image-id"
    if stamp.is_file() and stamp.read_text() == image_id:
        return bundle
    oci = oci_layout(arch)
    for path in (bundle, oci):
        if path.exists():
            shutil.rmtree(path)
    _sh("buildah", "push", "--quiet", "--compression-format", "gzip", name, f"oci:{oci}:latest")
    _sh("umoci", "unpack", "--image", f"{oci}:latest", bundle)
    stamp.write_text(image_id)
    return bundle


# Runs in a private mount namespace (unshare --mount). $1: the root filesystem; $2: "host:path ..." binds;
# $3: "path ..." writable tmpfs mounts (an emptyDir); the rest: the command for chroot. The root is bound
# onto itself, mount points are made (as runc does), /proc, /dev, the host's /etc/hosts and
# /etc/resolv.conf, the binds and the tmpfs are mounted, then the root is made read-only and the command
# runs in a chroot.
_RUNNER = r"""
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
root=$1; binds=$2; tmpfs=$3; shift 3
mount --make-rprivate /
mount --bind "$root" "$root"
mount -t proc proc "$root/proc"
mount -t tmpfs -o nosuid,noexec,mode=0755 tmpfs "$root/dev"
for dev in null zero full random urandom tty; do
  touch "$root/dev/$dev"; mount --bind "/dev/$dev" "$root/dev/$dev"
done
for file in hosts resolv.conf; do  # as a runtime provides them (the network is the host's)
  if [ -f "/etc/$file" ]; then touch "$root/etc/$file"; mount --bind "/etc/$file" "$root/etc/$file"; fi
done
for bind in $binds; do
  src=${bind%%:*}; dst=$root${bind#*:}
  mkdir -p "$dst"; mount --bind "$src" "$dst"; mount -o remount,bind,ro "$dst"
done
for dir in $tmpfs; do
  mkdir -p "$root$dir"; mount -t tmpfs -o nosuid,nodev,mode=1777 tmpfs "$root$dir"
done
mount -o remount,bind,ro "$root"
exec "$@"
"""


def run_command(bundle: Path, args: list[str] | None = None, binds: list[str] | None = None,
                entrypoint: str | None = None, tmpfs: list[str] | None = None) -> list[str]:
    """The command line that runs the unpacked image in `bundle` (see the module docstring), to be started
    with the host's environment; the entrypoint gets exactly the image's. `args` replace the image's cmd,
    `entrypoint` its entrypoint; `binds` are "HOST" or "HOST:PATH" directories, `tmpfs` absolute paths where
    an empty writable file system is mounted (as an emptyDir volume). Raises ImageError when a bind is not a
    directory, a tmpfs path is not absolute or a host program is missing."""
    config = json.loads((bundle / "config.json").read_text())
    process = config["process"]
    command: list[str] = list(process["args"])  # entrypoint + cmd
    if entrypoint is not None or args is not None:
        # the image's entrypoint is the first word of config.json's args (an exec-form ENTRYPOINT of one word)
        command = [entrypoint or command[0], *(args or [])]
    uid, gid = process["user"]["uid"], process["user"]["gid"]
    bind_specs = []
    for spec in binds or []:
        host, _, path = spec.partition(":")
        if not Path(host).is_dir():
            raise ImageError(f"--bind {spec}: {host} is not a directory")
        bind_specs.append(f"{Path(host).resolve()}:{path or Path(host).resolve()}")
    for path in tmpfs or []:
        if not path.startswith("/") or " " in path:
            raise ImageError(f"--tmpfs {path}: an absolute path without spaces")
    programs = {}
    for program in ("unshare", "env", "setpriv", "chroot"):
        found = shutil.which(program, path="/usr/sbin:/usr/bin:/sbin:/bin")
        if found is None:
            raise ImageError(f"{program} is missing (util-linux, coreutils)")
        programs[program] = found
    rootfs = str((bundle / config["root"]["path"]).resolve())
    return [programs["unshare"], "--mount", "/bin/sh", "-c", _RUNNER, "runner", rootfs, " ".join(bind_specs),
            " ".join(tmpfs or []), programs["env"], "-i", *process["env"], programs["setpriv"], "--no-new-privs",
            programs["chroot"], f"--userspec={uid}:{gid}", f"--groups={gid}", rootfs, *command]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/image.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the image")
    b.add_argument("--suite", default=SUITE, help=f"Debian suite of the base (default {SUITE})")
    b.add_argument("--arch", help="amd64 or arm64 (default this machine's; another one through qemu-user-static)")
    r = sub.add_parser("run", help="run the built image's entrypoint as its user on a read-only root")
    r.add_argument("--bind", action="append", default=[], metavar="DIR[:PATH]",
                   help="a host directory to bind read-only (at PATH, default the same path)")
    r.add_argument("--tmpfs", action="append", default=[], metavar="PATH",
                   help="mount an empty writable file system at PATH (as an emptyDir volume)")
    r.add_argument("--entrypoint", help="run this program instead of the image's entrypoint")
    r.add_argument("--arch", help="the image of this architecture (default this machine's)")
    r.add_argument("args", nargs="*", help="the arguments (instead of the image's cmd)")
    opts = parser.parse_args(argv)
    try:
        if opts.command == "build":
            print(build(opts.suite, opts.arch))
            return 0
        cmd = run_command(unpack(opts.arch), opts.args or None, opts.bind, opts.entrypoint, opts.tmpfs)
    except ImageError as e:
        print(f"image: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main())
