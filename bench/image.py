"""The image `make image` builds: its size (what a node pulls, and on disk) and the start-up of its entrypoint
run as a container runtime runs it (`tools/image.py run`: uid 65532, read-only root): process start to
`/readyz` answering 200, against empty clusters and against 2,000 host RuntimeClasses and 10,000 virtual pods.

    python -m bench.image          (make image-check runs it after make image; needs root)

Sizes: the compressed size is the sum of the image's gzip-compressed layers, what a registry stores and a node
downloads; the unpacked sizes are bytes of the files of its root filesystem (their apparent size, as
`du --apparent-size` counts). Times are seconds, the median of 3.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench import harness
from tools import image

MIB = 1024 * 1024


def size_bytes(path: Path) -> int:
    """Total apparent size of the regular files under `path` (symlinks not followed)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def compressed_bytes(oci: Path) -> int:
    """Sum of the layer sizes of the one image in OCI layout `oci` (its manifest's layer descriptors)."""
    index = json.loads((oci / "index.json").read_text())
    digest = index["manifests"][0]["digest"].split(":", 1)[1]
    manifest = json.loads((oci / "blobs" / "sha256" / digest).read_text())
    return sum(int(layer["size"]) for layer in manifest["layers"])


def run_prefix(*binds: Path) -> tuple[str, ...]:
    """The command that runs the built image with the given host directories bound at the same paths; the
    syncer's arguments follow it."""
    opts = [opt for bind in binds for opt in ("--bind", str(bind))]
    return (sys.executable, str(harness.ROOT / "tools" / "image.py"), "run", *opts, "--")


async def startup_seconds(classes: int, pods: int) -> float:
    """Median of 3: the image's `runtimeclass-syncer run` from process start to `/readyz` 200."""
    times = []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)  # the kubeconfigs: a volume the container's user can read
            async with harness.servers(Path(tmp), classes, pods) as s:
                port = harness.free_port()
                proc = harness.start_syncer(s, probe_port=port, command=run_prefix(Path(tmp), harness.CONFIG.parent))
                try:
                    times.append(await harness.wait_ready(port, proc) - proc.started)
                finally:
                    proc.stop()
    return statistics.median(times)


async def measure(bundle: Path) -> dict[str, float]:
    """Sizes (MiB) of the image compressed and unpacked, of its virtualenv and of the largest packages in it,
    and the start-up times (seconds)."""
    rootfs = bundle / "rootfs"
    venv = rootfs / "opt" / "venv"
    site = next((venv / "lib").glob("python3*/site-packages"))
    return {"compressed_mib": compressed_bytes(image.oci_layout(image.host_arch())) / MIB,
            "unpacked_mib": size_bytes(rootfs) / MIB,
            "venv_mib": size_bytes(venv) / MIB,
            "v8_mib": size_bytes(site / "py_mini_racer") / MIB,
            "kubernetes_asyncio_mib": size_bytes(site / "kubernetes_asyncio") / MIB,
            "ready_empty_seconds": await startup_seconds(0, 0),
            "ready_12000_objects_seconds": await startup_seconds(2000, 10_000)}


def main() -> None:
    if os.geteuid() != 0:
        sys.exit("bench.image runs the image: it needs root (chroot, mount namespaces); run make image-check")
    name = image.image_name()
    figures = asyncio.run(measure(image.unpack()))
    print(f"{name}: {figures['compressed_mib']:.0f} MiB to pull (gzip layers), {figures['unpacked_mib']:.0f} MiB "
          f"unpacked, of which the virtualenv {figures['venv_mib']:.0f} MiB (V8 in py_mini_racer "
          f"{figures['v8_mib']:.0f} MiB, kubernetes_asyncio {figures['kubernetes_asyncio_mib']:.0f} MiB) and the "
          f"Debian base {figures['unpacked_mib'] - figures['venv_mib']:.0f} MiB")
    print(f"start-up to /readyz as uid 65532 on a read-only root: {figures['ready_empty_seconds']:.2f} s with empty "
          f"clusters, {figures['ready_12000_objects_seconds']:.2f} s with 2,000 host RuntimeClasses and 10,000 "
          "virtual pods")


if __name__ == "__main__":
    main()
