"""`runtimeclass-syncer demo`: the whole main job on the embedded default, no cluster needed.

It starts a host and a virtual API server in-process (real HTTP) and a stand-in kubelet for the host,
writes their kubeconfigs to a folder
it prints, creates the example host RuntimeClasses, runs the syncer with the example vcluster.yaml,
creates a RuntimeClass locally in the virtual cluster (which the syncer removes) and the example
tenant pods, waits (by watching, not polling) until every pod is synced or refused, prints what
happened and why, and keeps serving until Ctrl-C so `kubectl --kubeconfig <path>` can be tried.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import yaml

from kubesim.apiserver import EmbeddedAPIServer
from kubesim.kubelet import FakeKubelet
from kubesim.tokens import whoami
from kubesim.vcluster_standin import VClusterResourceSyncers, create_vcluster_host_objects
from syncer import logs
from syncer.config.model import ConfigError, SyncerConfig, load_config
from syncer.controllers import gate, translate
from syncer.controllers.podtranslate.tokens import TOKEN_ANNOTATION_PREFIX
from syncer.kube.client import KubeClient
from syncer.kube.resources import CONFIGMAPS, EVENTS, NAMESPACES, PODS, PRIORITYCLASSES, RUNTIMECLASSES, SECRETS
from syncer.kube.wait import wait_for
from syncer.manager import Options, Syncer
from syncer.patches.apply import PatchConfigError, Patcher

Obj = dict[str, Any]
VCLUSTER = "demo"
HOST_NAMESPACE = "vcluster-demo"
LOCAL_RC = "tenant-made-class"
LATE_OBJECTS = {"web-settings"}  # created after the pods, to show a pod waiting for its ConfigMap
OBJECT_RESOURCES = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS, "PriorityClass": PRIORITYCLASSES}


def default_examples() -> Path:
    """The example manifests: the repository's `examples/` folder, which is installed with the package as
    `kubesim/examples` (pyproject.toml), so the demo works from a checkout and from `pip install .` alike."""
    here = Path(__file__).resolve().parent
    installed = here / "examples"
    return installed if installed.is_dir() else here.parent / "examples"


def _docs(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


async def run_demo(config_path: Path, examples: Path, workdir: Path, wait: bool, out: TextIO) -> int:
    """Run the demo; returns the exit status. Raises TimeoutError if the syncer does not converge."""
    config = load_config(config_path)
    host_rcs = _docs(examples / "host-runtimeclasses.yaml")
    pods = _docs(examples / "pods.yaml")
    objects = _docs(examples / "tenant-objects.yaml") if (examples / "tenant-objects.yaml").is_file() else []
    try:  # the config's patches, compiled as `run` compiles them
        patcher = await Patcher.create(config, vcluster_name=VCLUSTER, host_namespace=HOST_NAMESPACE)
    except PatchConfigError as e:
        for msg in e.errors:
            print(f"error: {msg}", file=sys.stderr)
        return 1
    async with EmbeddedAPIServer("host", runtime_class_admission=True) as host_srv, \
            EmbeddedAPIServer("virtual", runtime_class_admission=False) as virt_srv:
        host_kc = host_srv.write_kubeconfig(workdir / "host.kubeconfig", HOST_NAMESPACE)
        virt_kc = virt_srv.write_kubeconfig(workdir / "virtual.kubeconfig")
        host = await KubeClient.from_kubeconfig(str(host_kc), "host")
        virtual = await KubeClient.from_kubeconfig(str(virt_kc), "virtual")
        stop = asyncio.Event()
        syncer = Syncer(config, host, virtual, Options(vcluster_name=VCLUSTER, host_namespace=HOST_NAMESPACE),
                        patcher=patcher)
        task = asyncio.create_task(syncer.run(stop))
        kubelet = asyncio.create_task(FakeKubelet(host, HOST_NAMESPACE).run(stop))
        # vcluster's own ConfigMap/Secret/PVC syncers keep running beside the sidecar; stood in here
        to_host = config.raw.sync.toHost
        standin = asyncio.create_task(VClusterResourceSyncers(
            virtual, host, HOST_NAMESPACE, VCLUSTER, all_configmaps=to_host.configMaps.all,
            all_secrets=to_host.secrets.all).run(stop))
        try:
            await host.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": HOST_NAMESPACE}})
            await create_vcluster_host_objects(host, HOST_NAMESPACE, VCLUSTER)
            for rc in host_rcs:
                await host.create(RUNTIMECLASSES, rc)
            await asyncio.wait_for(syncer.ready_event.wait(), 30)
            await virtual.create(RUNTIMECLASSES, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                                                  "metadata": {"name": LOCAL_RC}, "handler": "runc"})
            for obj in objects:
                if obj["metadata"]["name"] not in LATE_OBJECTS:
                    await virtual.create(OBJECT_RESOURCES[obj["kind"]], obj, "default")
            for pod in pods:
                await virtual.create(PODS, pod, "default")
            waited = await _create_late_objects(host, virtual, objects, pods)
            await _print_summary(config, config_path, host_srv, virt_srv, host, virtual, host_rcs, pods, workdir, out,
                                 waited)
            if wait:
                print("\nPress Ctrl-C to stop.", file=out, flush=True)
                ended = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, ended.set)
                await ended.wait()
        finally:
            stop.set()
            await task
            await kubelet
            await standin
            await host.close()
            await virtual.close()
            if patcher is not None:
                await patcher.close()
    return 0


def _references(pod: Obj) -> list[tuple[str, str]]:
    """(kind, name) of the ConfigMaps, Secrets and PVCs a pod references, each once, as the syncer reads them."""
    pod = {**pod, "metadata": {**pod["metadata"], "namespace": "default"}}
    deps = translate.host_pod_and_dependencies(pod, vcluster_name=VCLUSTER, host_namespace=HOST_NAMESPACE)[1]
    return list(dict.fromkeys((d.kind, d.name) for d in deps))


async def _create_late_objects(host: KubeClient, virtual: KubeClient, objects: list[Obj],
                               pods: list[Obj]) -> dict[str, str]:
    """Once the other pods with references are on the host, check that the pods referencing a late object
    are not (they wait), then create the late objects. Returns pod name -> what it was seen waiting for."""
    waiting = {p["metadata"]["name"]: f'{kind} "{name}"' for p in pods for kind, name in _references(p)
               if name in LATE_OBJECTS}
    if not waiting:
        return {}
    others = {translate.host_pod_name(p["metadata"]["name"], "default", VCLUSTER) for p in pods
              if _references(p) and p["metadata"]["name"] not in waiting}
    await wait_for(host, PODS, lambda objs: {k.split("/", 1)[1] for k in objs} >= others, namespace=HOST_NAMESPACE,
                   what="pods whose objects exist on the host")
    on_host = {o["metadata"]["name"] for o in (await host.list(PODS, HOST_NAMESPACE))["items"]}
    waiting = {name: what for name, what in waiting.items()
               if translate.host_pod_name(name, "default", VCLUSTER) not in on_host}
    for obj in objects:
        if obj["metadata"]["name"] in LATE_OBJECTS:
            await virtual.create(OBJECT_RESOURCES[obj["kind"]], obj, "default")
    return waiting


async def _print_summary(config: SyncerConfig, config_path: Path, host_srv: EmbeddedAPIServer,
                         virt_srv: EmbeddedAPIServer, host: KubeClient, virtual: KubeClient, host_rcs: list[Obj],
                         pods: list[Obj], workdir: Path, out: TextIO, waited: dict[str, str]) -> None:
    rcs_by_name = {rc["metadata"]["name"]: rc for rc in host_rcs}
    expected_rcs = {n for n, rc in rcs_by_name.items() if gate.runtime_class_matches(config, rc)}
    virtual_rcs = await wait_for(virtual, RUNTIMECLASSES, lambda objs: set(objs) == expected_rcs,
                                 what=f"virtual runtime classes to be exactly {sorted(expected_rcs)}")
    refused: dict[str, str] = {}
    allowed: list[str] = []
    for pod in pods:
        name = pod["metadata"]["name"]
        rcn = (pod.get("spec") or {}).get("runtimeClassName") or ""
        decision = gate.evaluate(config, name, rcn, rcs_by_name.get(rcn))
        if not decision.allowed:
            refused[name] = decision.message
        else:
            allowed.append(name)
    host_names = {translate.host_pod_name(n, "default", VCLUSTER): n for n in allowed}
    host_pods = await wait_for(host, PODS, lambda objs: {k.split("/", 1)[1] for k in objs} >= set(host_names),
                               namespace=HOST_NAMESPACE, what="allowed pods on the host")
    running = await wait_for(virtual, PODS, lambda objs: all(
        (objs.get(f"default/{n}") or {}).get("status", {}).get("phase") == "Running" for n in allowed),
        namespace="default", what="allowed pods Running in the virtual cluster")
    events = await wait_for(virtual, EVENTS, lambda objs: {e["involvedObject"]["name"] for e in objs.values()
                                                           if e.get("reason") == "SyncWarning"} >= set(refused),
                            namespace="default", what="SyncWarning events on refused pods")

    w = out.write
    w("runtimeclass-syncer demo: two in-process Kubernetes API servers and the syncer\n\n")
    w(f"  host cluster     {host_srv.url}   kubeconfig {workdir / 'host.kubeconfig'}\n")
    w(f"  virtual cluster  {virt_srv.url}   kubeconfig {workdir / 'virtual.kubeconfig'}\n")
    w(f"  config           {config_path}\n")
    w(f"  selector         {config.selector or '<everything>'}\n")
    w("\nRuntimeClasses, host -> virtual\n")
    width = max(len(n) for n in [*rcs_by_name, LOCAL_RC])
    for name, rc in rcs_by_name.items():
        labels = ", ".join(f"{k}={v}" for k, v in sorted((rc["metadata"].get("labels") or {}).items()))
        if name in virtual_rcs:  # the virtual copy as the syncer wrote it: patches show
            copy = virtual_rcs[name]
            labels = ", ".join(f"{k}={v}" for k, v in sorted((copy["metadata"].get("labels") or {}).items()))
            handler = str(copy.get("handler")) + ("" if copy.get("handler") == rc["handler"] else
                                                  f" (host: {rc['handler']})")
            w(f"  SYNCED   {name:<{width}}  handler {handler:<10} labels: {labels}\n")
        else:
            w(f"  skipped  {name:<{width}}  does not match the selector (labels: {labels})\n")
    gone = LOCAL_RC not in virtual_rcs
    w(f"  {'DELETED' if gone else 'PRESENT'}  {LOCAL_RC:<{width}}  created locally in the virtual cluster; "
      f"{'removed by the syncer' if gone else 'NOT removed'}\n")
    w("\nPods, virtual -> host\n")
    pwidth = max(len(p["metadata"]["name"]) for p in pods)
    for pod in pods:
        name = pod["metadata"]["name"]
        rcn = (pod.get("spec") or {}).get("runtimeClassName") or "<none>"
        if name in refused:
            msgs = [e["message"] for e in events.values() if e["involvedObject"]["name"] == name]
            w(f"  REFUSED  default/{name:<{pwidth}}  runtime class {rcn}\n           event: {msgs[0]}\n")
        else:
            hname = translate.host_pod_name(name, "default", VCLUSTER)
            hp = host_pods[f"{HOST_NAMESPACE}/{hname}"]
            vp = running[f"default/{name}"]
            extra = ""
            if hp["spec"].get("overhead"):
                extra = "  overhead " + ",".join(f"{k}={v}" for k, v in hp["spec"]["overhead"].items())
            w(f"  SYNCED   default/{name:<{pwidth}}  runtime class {rcn:<9} -> host pod {HOST_NAMESPACE}/{hname}"
              f"{extra}\n           {vp['status']['phase']} on {vp['spec'].get('nodeName')}, "
              f"IP {vp['status'].get('podIP')}\n")
            for kind, ref in _references(pod):
                w(f"           {kind} {ref} -> host {kind} {translate.host_pod_name(ref, 'default', VCLUSTER)}\n")
            if name in waited:
                w(f"           waited (not on the host) until {waited[name]} was created and synced by vcluster\n")
    _print_translation(w, pods, host_pods, allowed)
    if allowed:
        name = next((n for n in allowed if n in waited), allowed[-1])  # the workload pod, when there is one
        hp = host_pods[f"{HOST_NAMESPACE}/{translate.host_pod_name(name, 'default', VCLUSTER)}"]
        w("\nService-account token (projected into the host pod from an annotation, requested from the virtual "
          "cluster)\n")
        for key, token in sorted(hp["metadata"].get("annotations", {}).items()):
            if key.startswith(TOKEN_ANNOTATION_PREFIX):
                w(f"  default/{name}: the virtual API server answers the token in {key} with "
                  f"{await whoami(virtual, token)}\n")
    kv, kh = workdir / "virtual.kubeconfig", workdir / "host.kubeconfig"
    w("\nTry it (another terminal):\n")
    w(f"  kubectl --kubeconfig {kv} get runtimeclasses\n")
    w(f"  kubectl --kubeconfig {kv} describe pod {next(iter(refused), 'plain')}\n")
    w(f"  kubectl --kubeconfig {kh} get pods -n {HOST_NAMESPACE}\n")
    w(f"  kubectl --kubeconfig {kh} label runtimeclass kata-fc kubernetes.io/runtime.class=gvisor --overwrite"
      "   # then watch microvm-kata-fc sync\n")
    w(f"  (syncer log: {workdir / 'syncer.log'})\n")
    out.flush()


def _print_translation(w: Any, pods: list[Obj], host_pods: dict[str, Obj], allowed: list[str]) -> None:
    """What the host received for the pods that show vcluster's translation: a Deployment's pod (anti-affinity,
    priority class, owner) and a StatefulSet's (hostname and subdomain)."""
    lines: list[str] = []
    for pod in pods:
        name, spec = pod["metadata"]["name"], pod.get("spec") or {}
        if name not in allowed or not (spec.get("affinity") or spec.get("subdomain")):
            continue
        hp = host_pods[f"{HOST_NAMESPACE}/{translate.host_pod_name(name, 'default', VCLUSTER)}"]
        hs, ann = hp["spec"], hp["metadata"].get("annotations") or {}
        lines.append(f"  default/{name}\n")
        terms = ((hs.get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or []
        for term in terms:
            sel = ", ".join(f"{k}={v}" for k, v in sorted(term["labelSelector"].get("matchLabels", {}).items()))
            lines.append(f"    anti-affinity selector on the host: {sel}\n")
        if spec.get("priorityClassName"):
            lines.append(f"    priority class {spec['priorityClassName']} (virtual) -> host "
                         f"{hs.get('priorityClassName') or '<host default>'}, priority {hs.get('priority')}\n")
        owners = ", ".join(f"{o['kind']} {o['name']}" for o in hp["metadata"].get("ownerReferences") or [])
        if owners:
            evict = ann.get("cluster-autoscaler.kubernetes.io/safe-to-evict")
            lines.append(f"    owned by {owners}; safe-to-evict {evict}\n")
        if spec.get("subdomain"):
            init = [c["name"] for c in hs.get("initContainers") or []]
            lines.append(f"    hostname {hs.get('hostname')}, subdomain removed; init containers {', '.join(init)} "
                         f"make {spec.get('hostname')}.{spec['subdomain']}.default.svc.cluster.local resolve\n")
    if lines:
        w("\nvcluster's pod translation (what the host received)\n")
        for line in lines:
            w(line)


def main(args: argparse.Namespace) -> int:
    """`runtimeclass-syncer demo` entry point."""
    examples = Path(args.examples) if args.examples else default_examples()
    config_path = Path(args.config) if args.config else examples / "vcluster-combined.yaml"
    if not (examples / "host-runtimeclasses.yaml").is_file():
        print(f"error: no example manifests in {examples} (give --examples DIR)", file=sys.stderr)
        return 2
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="runtimeclass-syncer-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    logs.setup("text")
    root = logging.getLogger()
    root.handlers[:] = [logging.FileHandler(workdir / "syncer.log")]
    root.handlers[0].setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    try:
        with contextlib.suppress(KeyboardInterrupt):
            return asyncio.run(run_demo(config_path, examples, workdir, not args.no_wait, sys.stdout))
        return 0
    except ConfigError as e:
        for msg in e.errors:
            print(f"error: {msg}", file=sys.stderr)
        return 2
    except TimeoutError as e:
        print(f"error: the syncer did not converge: {e} (see {workdir / 'syncer.log'})", file=sys.stderr)
        return 1
