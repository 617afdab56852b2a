"""The syncer's configuration beside vcluster's own: `--config` with `--vcluster-config` (run, validate, policy).

In a real install (the README's install section) each setting lives in one place:

- `--config FILE` holds the syncer's own section, `sync.fromHost.runtimeClasses` (enabled, selector, patches),
  and nothing else. It is the only place that section is set.
- `--vcluster-config FILE` is vcluster's configuration, the values vcluster runs with (the chart renders the
  keys the syncer reads from the same values it writes into vcluster's `vc-config-<release>` Secret). The keys
  the syncer shares with vcluster (`sync.toHost.pods.*`, `sync.toHost.configMaps/secrets.all`,
  `controlPlane.advanced.workloadServiceAccount`, ...) are read from there, never set twice.

The configuration in force is vcluster's with `sync.fromHost.runtimeClasses` taken from `--config`. Refused, each
with its file and field path (exit 2 before any API request):

- vcluster's own pod sync on: `sync.toHost.pods.enabled` true, or absent (vcluster's default is true: the chart's
  values.yaml). Two pod syncers would fight over every pod (vcluster `pkg/controllers/resources/register.go`,
  `getSyncers`, starts `pods.New` on that key).
- vcluster's own RuntimeClass syncer on: `sync.fromHost.runtimeClasses.enabled` true in vcluster's config
  (`getSyncers` starts `runtimeclasses.New` on it; with patches open-source vcluster fails on every class with
  its Pro-feature error, `pkg/pro/patches.go`), or a selector or patches left there, which nothing would read.
- multi-namespace mode (`sync.toHost.namespaces.enabled`): pods are synced into one host namespace only.
- private nodes (`privateNodes.enabled`): tenant pods run on the virtual cluster's own nodes, not on the host.
- vcluster Pro's pod settings, which only vcluster's own pod syncer applies (`pro_pod_settings`):
  `sync.toHost.pods.patches`, `sync.toHost.pods.hybridScheduling.enabled`, `integrations.istio.enabled`.

Without `--vcluster-config`, `--config` is a whole vcluster.yaml (the demo, the tests, a file made by hand) and
only the two unsupported modes and vcluster Pro's pod settings are refused.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from syncer.config.model import RC_PATH, ConfigError, SyncerConfig, load_config, parse_config, read_yaml

# vcluster's default of `sync.toHost.pods.enabled` (loft-sh/vcluster chart/values.yaml, every supported version)
VCLUSTER_POD_SYNC_DEFAULT = True


def _read(path: str | Path, what: str) -> Any:
    """The parsed YAML document of `path` (None for an empty file), read as `model.read_yaml` reads it.

    Raises:
        ConfigError: the file cannot be read or is not YAML.
    """
    return read_yaml(path, what)


def _get(doc: Any, dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted key path in a parsed document."""
    for key in dotted.split("."):
        if not isinstance(doc, dict) or key not in doc:
            return False, None
        doc = doc[key]
    return True, doc


def _switch(doc: Any, dotted: str, default: bool) -> tuple[bool | None, str | None]:
    """The value of a boolean switch: (value, None), or (None, error) when it is not a boolean.

    An absent key is `default`: Helm fills the chart's default in. A null value is false: Helm drops a key a
    values file sets to null, chart default included (the Helm docs, "Deleting a default key"), and vcluster
    reads the key it lacks as Go's zero value (`pkg/config/parse.go` `ParseConfigBytes` unmarshals the rendered
    config into its struct with nothing filled in)."""
    present, value = _get(doc, dotted)
    if not present:
        return default, None
    if value is None:
        return False, None
    if isinstance(value, bool):
        return value, None
    return None, f"invalid {dotted}: must be true or false, not {value!r}"


def _must_be_off(document: Any, dotted: str, default: bool, why: str) -> list[str]:
    """The error for boolean switch `dotted` of `document` (absent or null: `default`): its type error, or, when
    it is on, `invalid <dotted>: <why>`; none when it is off."""
    value, err = _switch(document, dotted, default)
    if err:
        return [err]
    return [f"invalid {dotted}: {why}"] if value else []


def unsupported_modes(document: Any) -> list[str]:
    """Errors for the vcluster modes the syncer does not support, as `invalid <path>: <reason>`.

    Sources: multi-namespace mode is `sync.toHost.namespaces.enabled` (vcluster `pkg/setup/controller_context.go`
    `getLocalCacheOptions` then watches every host namespace); private nodes is `privateNodes.enabled`
    (`pkg/setup/controllers.go`: tenant pods run on the virtual cluster's own nodes).
    """
    return [*_must_be_off(document, "sync.toHost.namespaces.enabled", False,
                          "multi-namespace mode is not supported: runtimeclass-syncer syncs every pod into the one "
                          "host namespace (--host-namespace)"),
            *_must_be_off(document, "privateNodes.enabled", False,
                          "private nodes are not supported: tenant pods run on the virtual cluster's own nodes and "
                          "are never synced to the host")]


def pro_pod_settings(document: Any) -> list[str]:
    """Errors for vcluster Pro's settings of the pods vcluster syncs, which only vcluster's own pod syncer applies
    (off beside the sidecar), as `invalid <path>: <reason>`: with vcluster's pod sync off nothing would apply them,
    and nothing would refuse them either (open-source vcluster refuses them only inside its pod syncer, which is not
    started: `pods.New` / `translate.NewTranslator`).

    Sources (vcluster `pkg/controllers/resources/pods/`): `syncer.go` `SyncToHost` and `Sync` apply
    `sync.toHost.pods.patches` (`pro.ApplyPatchesHostObject`, `patcher.TranslatePatches`) and the Istio labels of
    `integrations.istio.enabled` (`pro.ApplyIstioPatches`); `translate/translator.go` `NewTranslator` and
    `scheduling/config.go` `NewConfig` read `sync.toHost.pods.hybridScheduling`, under which a pod naming a virtual
    scheduler is scheduled in the virtual cluster (the host has no scheduler of that name: the pod stays Pending).
    """
    errors: list[str] = []
    present, patches = _get(document, "sync.toHost.pods.patches")
    if present and patches not in (None, [], {}):
        errors.append("invalid sync.toHost.pods.patches: patches on host pods are applied by vcluster's own pod "
                      "syncer (a vcluster Pro feature), which is off beside runtimeclass-syncer; the syncer does not "
                      "apply them, and every pod would reach the host unpatched; remove them")
    errors += _must_be_off(document, "sync.toHost.pods.hybridScheduling.enabled", False,
                           "hybrid scheduling (a vcluster Pro feature) is done by vcluster's own pod syncer, which is "
                           "off beside runtimeclass-syncer; a pod naming a virtual scheduler would reach the host with "
                           "a schedulerName the host does not have and stay Pending; set it to false")
    errors += _must_be_off(document, "integrations.istio.enabled", False,
                           "vcluster's Istio integration (a vcluster Pro feature) labels host pods in vcluster's own "
                           "pod syncer, which is off beside runtimeclass-syncer; the syncer does not, and pods would "
                           "reach the host without the mesh; set it to false")
    return errors


def vcluster_conflicts(document: Any) -> list[str]:
    """Errors for a vcluster configuration the syncer cannot run beside, as `invalid <path>: <reason>`, in this
    order: pod sync, RuntimeClass sync (switch, selector, patches), `pro_pod_settings`, then `unsupported_modes`.

    `document` is vcluster's configuration (chart values, merged with the chart's defaults or not: an absent
    `sync.toHost.pods.enabled` is vcluster's default, true; a null one is off, see `_switch`).
    """
    errors = [*_must_be_off(document, "sync.toHost.pods.enabled", VCLUSTER_POD_SYNC_DEFAULT,
                            "vcluster's own pod sync is on (true is vcluster's default); set it to false: "
                            "runtimeclass-syncer syncs this virtual cluster's pods to the host, and two pod syncers "
                            "would fight over every pod"),
              *_must_be_off(document, f"{RC_PATH}.enabled", False,
                            "vcluster would sync RuntimeClasses too (two writers of every virtual RuntimeClass; with "
                            "patches open-source vcluster fails on each); keep it false in vcluster's config: the "
                            "syncer's own section (--config) turns RuntimeClass sync on")]
    for key in ("selector", "patches"):
        present, value = _get(document, f"{RC_PATH}.{key}")
        if present and value not in (None, {}, []):
            errors.append(f"invalid {RC_PATH}.{key}: set in vcluster's config, where nothing reads it; it belongs "
                          "in the syncer's own section (--config), the one place it is read")
    return errors + pro_pod_settings(document) + unsupported_modes(document)


def _foreign_keys(document: dict[str, Any]) -> list[str]:
    """The topmost key paths of the syncer's own file that are not part of `sync.fromHost.runtimeClasses`."""
    out: list[str] = []
    for key, value in document.items():
        if key != "sync":
            out.append(str(key))
            continue
        for sub, sub_value in (value.items() if isinstance(value, dict) else []):
            if sub != "fromHost":
                out.append(f"sync.{sub}")
                continue
            out += [f"sync.fromHost.{k}" for k in (sub_value if isinstance(sub_value, dict) else {})
                    if k != "runtimeClasses"]
    return out


def load_beside_vcluster(config_path: str | Path, vcluster_path: str | Path) -> SyncerConfig:
    """The configuration in force: vcluster's (`vcluster_path`) with `sync.fromHost.runtimeClasses` from the
    syncer's own file (`config_path`).

    Returns:
        SyncerConfig whose `source` is the combined document (what patches see as `context.vcluster.config`).
    Raises:
        ConfigError: every problem, each as `<file>: invalid <path>: <reason>` (or what could not be read).
    """
    own = _read(config_path, "config")
    vcluster = _read(vcluster_path, "vcluster config")
    errors: list[str] = []
    for doc, path in ((own, config_path), (vcluster, vcluster_path)):
        if doc is not None and not isinstance(doc, dict):
            errors.append(f"{path}: invalid config: the document must be a mapping, not {type(doc).__name__}")
    if errors:
        raise ConfigError(errors)
    own, vcluster = own or {}, vcluster or {}
    errors += [f"{config_path}: invalid {key}: the syncer's own file holds only {RC_PATH}; {key} is read from "
               f"vcluster's config ({vcluster_path})" for key in _foreign_keys(own)]
    present, section = _get(own, RC_PATH)
    if not present:
        errors.append(f"{config_path}: invalid {RC_PATH}: missing: this file holds the syncer's own section")
    errors += [f"{vcluster_path}: {e}" for e in vcluster_conflicts(vcluster)]
    # Each file's own validation errors name that file: the section alone, then vcluster's keys without it.
    try:
        parse_config({"sync": {"fromHost": {"runtimeClasses": section}}})
    except ConfigError as e:
        errors += [f"{config_path}: {m}" for m in e.errors]
    without_section = copy.deepcopy(vcluster)
    sync = without_section.get("sync")
    from_host = sync.get("fromHost") if isinstance(sync, dict) else None
    if isinstance(from_host, dict):
        from_host.pop("runtimeClasses", None)
    try:
        parse_config(without_section)
    except ConfigError as e:
        errors += [f"{vcluster_path}: {m}" for m in e.errors]
    if errors:
        raise ConfigError(errors)
    sync = vcluster.get("sync") or {}  # a mapping or null: parse_config refused anything else
    combined = {**vcluster, "sync": {**sync, "fromHost": {**(sync.get("fromHost") or {}), "runtimeClasses": section}}}
    return parse_config(combined)


def load(config_path: str | Path, vcluster_path: str | Path | None = None) -> SyncerConfig:
    """What `run`, `validate` and `policy` load: `load_beside_vcluster` with `--vcluster-config`, else the whole
    vcluster.yaml `config_path` (`model.load_config`) with vcluster Pro's pod settings (`pro_pod_settings`) and the
    unsupported modes refused.

    Raises:
        ConfigError: every problem found.
    """
    if vcluster_path is not None:
        return load_beside_vcluster(config_path, vcluster_path)
    config = load_config(config_path)
    errors = pro_pod_settings(config.source) + unsupported_modes(config.source)
    if errors:
        raise ConfigError(errors)
    return config
