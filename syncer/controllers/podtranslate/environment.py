"""What a container sees of its cluster: DNS, the API server's address, service links (pure).

Follows vcluster's pod translator: `translateDNSConfig`/`translateDNSClusterFirstConfig` (translator.go),
`ServicesToEnvironmentVariables` (translator.go) with `buildEnvironmentVariables`/`makeLinkVariables`
(envvars.go, the kubelet's service environment), `TranslateContainerEnv` (the service variables come
first, sorted, and never replace a variable the container sets itself) and the `kubernetes` host alias
of `Translate`.

- `dnsPolicy: ClusterFirst` (not on the host network) and `ClusterFirstWithHostNet` become `None` with the
  virtual cluster's DNS Service as nameserver, the searches `<ns>.svc.<domain> svc.<domain> <domain>` and
  `ndots:5`, merged with the pod's own `dnsConfig` as the kubelet merges a ClusterFirst pod's (kubernetes
  pkg/kubelet/network/dns/dns.go: `GetPodDNS` -> `appendDNSConfig`, then `formDNSConfigFitsLimits`): the pod's
  nameservers and searches after the cluster's, duplicates dropped, its options overriding the cluster's of the same
  name (`mergeDNSOptions`); then cut to what the kubelet applies and the host API server accepts for a `None` pod
  (`validatePodDNSConfig`): the first 3 nameservers, the first 32 searches without those over 253 characters, and
  the last searches dropped until the line fits 2048 characters. The cluster's come first, so they are always kept;
  where the kubelet would also record a `DNSConfigForming` event, the cut is silent here. vcluster keeps only
  `ndots:5` and does not cut, so its host refuses a pod with 3 nameservers of its own. `Default` and `None` are
  left.
- `KUBERNETES_SERVICE_HOST`/`_PORT` (and the rest of the `KUBERNETES_*` family) point at `kube_ip`, the
  ClusterIP of the vcluster's Service in the host namespace, so in-cluster clients reach the virtual API
  server; the pod's namespace's Services with a ClusterIP become `<NAME>_SERVICE_HOST` ... variables
  unless `enableServiceLinks` is false; the host pod gets `enableServiceLinks: false` (the host's
  Services must not leak in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
CLUSTER_DOMAIN = "cluster.local"
# what the kubelet applies of a pod's DNS configuration and the API server accepts for a `None` pod (kubernetes
# pkg/apis/core/validation: MaxDNSNameservers, MaxDNSSearchPathsExpanded, MaxDNSSearchListCharsExpanded; the
# kubelet's formDNSSearchFitsLimits drops a search longer than DNS1123SubdomainMaxLength)
MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32
MAX_SEARCH_LINE_CHARS = 2048
MAX_SEARCH_PATH_CHARS = 253


def translate_dns(spec: Obj, namespace: str, dns_ip: str, cluster_domain: str = CLUSTER_DOMAIN) -> None:
    """Point a (copied) pod spec's DNS at the virtual cluster's DNS Service `dns_ip` (mutates `spec`)."""
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        return  # falls back to Default on the host network
    if policy not in ("ClusterFirst", "ClusterFirstWithHostNet") or not dns_ip:
        return
    own = spec.get("dnsConfig") or {}
    searches = [f"{namespace}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain]
    options: dict[Any, Any] = {"ndots": {"name": "ndots", "value": "5"}}  # the kubelet's defaultDNSOptions
    for opt in own.get("options") or []:
        if isinstance(opt, dict):
            options[opt.get("name")] = opt  # mergeDNSOptions: the pod's value wins, by name
    config: Obj = {"nameservers": _unique([dns_ip, *(own.get("nameservers") or [])])[:MAX_NAMESERVERS],
                   "searches": _fit_searches(_unique([*searches, *(own.get("searches") or [])])),
                   "options": list(options.values())}
    spec["dnsPolicy"] = "None"
    spec["dnsConfig"] = config


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _fit_searches(searches: list[str]) -> list[str]:
    """`formDNSSearchFitsLimits`: the first MAX_SEARCH_PATHS searches, without any over MAX_SEARCH_PATH_CHARS, then
    the last ones dropped until the search line (joined by spaces) is at most MAX_SEARCH_LINE_CHARS."""
    out = [s for s in searches[:MAX_SEARCH_PATHS] if len(s) <= MAX_SEARCH_PATH_CHARS]
    while len(" ".join(out)) > MAX_SEARCH_LINE_CHARS:
        out.pop()
    return out


def _env_name(name: str) -> str:
    return name.upper().replace("-", "_")


def service_environment(services: Sequence[Mapping[str, Any]], enable_links: bool, kube_ip: str) -> dict[str, str]:
    """The environment the kubelet would give a pod of the virtual cluster: the Services of its namespace
    that have a ClusterIP (only when `enable_links`), then the `KUBERNETES_*` variables for `kube_ip`."""
    env: dict[str, str] = {}
    for svc in services if enable_links else []:
        spec = svc.get("spec") or {}
        ip, ports = spec.get("clusterIP"), [p for p in spec.get("ports") or [] if isinstance(p, dict)]
        if not ip or ip == "None" or not ports:
            continue
        prefix = _env_name(svc["metadata"]["name"])
        env[f"{prefix}_SERVICE_HOST"] = ip
        env[f"{prefix}_SERVICE_PORT"] = str(ports[0].get("port"))
        for p in ports:
            if p.get("name"):
                env[f"{prefix}_SERVICE_PORT_{_env_name(p['name'])}"] = str(p.get("port"))
        for i, p in enumerate(ports):
            proto = str(p.get("protocol") or "TCP")
            host_port = f"[{ip}]:{p.get('port')}" if ":" in ip else f"{ip}:{p.get('port')}"
            url = f"{proto.lower()}://{host_port}"
            if i == 0:
                env[f"{prefix}_PORT"] = url
            pp = f"{prefix}_PORT_{p.get('port')}_{proto.upper()}"
            env.update({pp: url, f"{pp}_PROTO": proto.lower(), f"{pp}_PORT": str(p.get("port")), f"{pp}_ADDR": ip})
    env.update({"KUBERNETES_PORT": f"tcp://{kube_ip}:443", "KUBERNETES_PORT_443_TCP": f"tcp://{kube_ip}:443",
                "KUBERNETES_PORT_443_TCP_ADDR": kube_ip, "KUBERNETES_PORT_443_TCP_PORT": "443",
                "KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_SERVICE_HOST": kube_ip,
                "KUBERNETES_SERVICE_PORT": "443", "KUBERNETES_SERVICE_PORT_HTTPS": "443"})
    return env


CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")
# The largest host pod the syncer builds, in bytes of JSON: etcd refuses a request over its default 1.5 MiB
# (`--max-request-bytes` 1572864, "etcdserver: request is too large"); a bigger pod is refused by every host.
MAX_HOST_POD_BYTES = 1572864
_ENTRY_BYTES = len('{"name":"","value":""},')


def environment_bytes(env: Mapping[str, str], spec: Obj, fields: Sequence[str] = CONTAINER_FIELDS) -> int:
    """The bytes (JSON, at least) the variables of `env` add to `spec` when each container of `fields` gets them
    (`add_environment`); counted without building them: a tenant's namespace of Services with thousands of ports
    times a pod of hundreds of containers is millions of variables (about 5 per port, in each container)."""
    one = sum(len(k) + len(v) for k, v in env.items()) + _ENTRY_BYTES * len(env)
    return one * sum(len(spec.get(f) or []) for f in fields)


def add_environment(spec: Obj, env: dict[str, str], kube_ip: str, cluster_domain: str = CLUSTER_DOMAIN,
                    fields: Sequence[str] = CONTAINER_FIELDS) -> None:
    """Give every container of `fields` (by default init, app and ephemeral) the variables of `env` it does not set
    itself, first and sorted; add the `kubernetes` host alias for `kube_ip`; set `enableServiceLinks: false`
    (mutates `spec`). The variables are sorted once and shared by the containers."""
    ordered = [(k, {"name": k, "value": env[k]}) for k in sorted(env)]
    for field in fields:
        for c in spec.get(field) or []:
            if not isinstance(c, dict):
                continue
            own = c.get("env") or []
            names = {e.get("name") for e in own if isinstance(e, dict)}
            c["env"] = [entry for k, entry in ordered if k not in names] + own
    aliases = [a for a in spec.get("hostAliases") or []]
    aliases.append({"ip": kube_ip, "hostnames": [f"kubernetes.default.svc.{cluster_domain}", "kubernetes",
                                                  "kubernetes.default", "kubernetes.default.svc"]})
    spec["hostAliases"] = aliases
    spec["enableServiceLinks"] = False
