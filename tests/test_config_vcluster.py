"""vcluster's own configurations load, and every key the syncer reads is as strict as vcluster's schema
(issue 23, item 4).

The oracle is vcluster itself (Apache-2.0, vcluster's LICENSE beside each copy): its chart's `values.schema.json`
and `values.yaml` of the next minor and of the two before it (tests/data/vcluster-chart-*, the charts
tests/test_chart.py renders), and in tests/data/vcluster-configs/ (SOURCE.md: which commit and tag each file comes
from) the chart's `values.yaml` of v0.26 (the older image shape), its e2e `vcluster-*.yaml` (Go templates, filled
as its e2e suite fills them), `test/*.yaml`, and the `set:` blocks of its chart's helm-unittest suites.
"""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from pydantic import BaseModel

from syncer.cli import main as cli_main
from syncer.config.model import VCLUSTER_KEYS, ConfigError, parse_config
from syncer.controllers.podtranslate.options import PodOptions

Obj = dict[str, Any]
REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "vcluster-configs"
CHARTS = {"main": REPO / "tests" / "data" / "vcluster-chart-main-487667546",
          "v0.36.1": REPO / "tests" / "data" / "vcluster-chart-0.36.1",
          "v0.35.3": REPO / "tests" / "data" / "vcluster-chart-0.35.3",
          "v0.26.5": DATA / "v0.26.5"}
SCHEMA_VERSIONS = ("main", "v0.36.1", "v0.35.3")
OURS = json.loads((REPO / "config" / "schema.json").read_text(encoding="utf-8"))  # the keys the syncer reads


def vcluster_schema(version: str) -> Obj:
    schema: Obj = json.loads((CHARTS[version] / "values.schema.json").read_text(encoding="utf-8"))
    return schema


def resolve(schema: Obj, node: Obj) -> Obj:
    """`node` with its `$ref` followed and `X | None` (pydantic's anyOf with null) read as X; of the syncer's
    `ImageRef | str | None` (the image's two shapes) the mapping, the shape of vcluster's schema."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node and {"type": "null"} in node["anyOf"]:
            options = [n for n in node["anyOf"] if n != {"type": "null"}]
            (node,) = options if len(options) == 1 else [n for n in options if "$ref" in n]
        else:
            return node


def key_paths(schema: Obj, node: Obj | None = None, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of a JSON schema's properties, `[]` standing for a list item:
    ("sync", "fromHost", "runtimeClasses", "patches", "[]", "expression")."""
    node = resolve(schema, schema if node is None else node)
    for name, sub in node.get("properties", {}).items():
        yield (*path, name)
        yield from key_paths(schema, sub, (*path, name))
    items = node.get("items")
    if items is not None and "properties" in resolve(schema, items):
        yield from key_paths(schema, items, (*path, "[]"))


def node_at(schema: Obj, path: tuple[str, ...]) -> Obj | None:
    node = resolve(schema, schema)
    for part in path:
        node = resolve(schema, node.get("items", {}) if part == "[]" else node.get("properties", {}).get(part, {}))
        if not node:
            return None
    return node


PATHS = list(key_paths(OURS))


def dotted(path: tuple[str, ...]) -> str:
    return ".".join(path).replace(".[]", "[0]")


def nested(path: tuple[str, ...], value: Any) -> Obj:
    """A document holding `value` at `path` (a list item for `[]`)."""
    for part in reversed(path):
        value = [value] if part == "[]" else {part: value}
    assert isinstance(value, dict)
    return value


# -------------------------------------------------------------------------- types, against vcluster's schema

# vcluster's schema leaves these untyped (map[string]interface{} in config.go); the syncer reads them as vcluster's
# NewTranslator does (pods/translate/translator.go parseResources): quantity strings, a number refused.
QUANTITY_MAPS = {("sync", "toHost", "pods", "rewriteHosts", "initContainer", "resources", "limits"),
                 ("sync", "toHost", "pods", "rewriteHosts", "initContainer", "resources", "requests")}


def _types(node: Obj) -> set[str]:
    return {n["type"] for n in node["anyOf"]} if "anyOf" in node else {node["type"]}


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_every_key_the_syncer_reads_has_the_type_vclusters_schema_gives_it(version: str) -> None:
    theirs = vcluster_schema(version)
    assert len(PATHS) > 60  # every key of the reference table, the sections and the list items' keys
    for path in PATHS:
        mine, their = node_at(OURS, path), node_at(theirs, path)
        assert mine is not None
        assert their is not None, f"{dotted(path)} is not a key of vcluster {version}"
        assert mine["type"] == their["type"], dotted(path)
        if "items" in their:  # a list: the same item type
            assert resolve(OURS, mine["items"])["type"] == resolve(theirs, their["items"])["type"], dotted(path)
        if isinstance(their.get("additionalProperties"), dict):  # a mapping: the same value type
            assert _types(mine["additionalProperties"]) == _types(their["additionalProperties"]), dotted(path)
        elif "additionalProperties" not in their and "properties" not in their and their["type"] == "object":
            assert path in QUANTITY_MAPS, f"{dotted(path)}: vcluster leaves its values untyped"
            assert _types(mine["additionalProperties"]) == {"string"}


# Values of the wrong YAML type for each type of vcluster's schema: the strings "yes" and "true" for a
# boolean, numbers for a string, a scalar for a list or a mapping, and wrong-typed members inside them.
WRONG: dict[str, list[Any]] = {
    "boolean": ["yes", "true", "false", 1, 0, "", ["true"], {"enabled": True}],
    "string": [1, 0.5, True, ["a"], {"a": "b"}],
    "array": ["a", {"a": "b"}, [1], [True], [["a"]]],
    "object": ["a", 1, True, ["a"]],
    "string map": ["a", ["a"], {"k": 1}, {"k": True}, {"k": ["v"]}],
}


def _wrong_values(theirs: Obj, path: tuple[str, ...]) -> list[Any]:
    node = node_at(theirs, path)
    assert node is not None
    if node["type"] == "object" and isinstance(node.get("additionalProperties"), dict):
        return WRONG["string map"]
    if node["type"] == "array" and resolve(theirs, node["items"])["type"] == "object":
        return WRONG["object"]  # a list of sections (patches, matchExpressions): a scalar is wrong
    return WRONG[node["type"]]


# The one type the syncer reads more widely than vcluster's schema: the image of v0.26 and before, a string that
# vcluster's Go code still reads (config.go, Image.UnmarshalJSON) from the values of an upgraded vcluster.
IMAGE = ("sync", "toHost", "pods", "rewriteHosts", "initContainer", "image")


def test_every_value_vclusters_schema_refuses_by_type_the_syncer_refuses_too() -> None:
    theirs = vcluster_schema("main")
    helm = Draft202012Validator(theirs)  # what `helm install` checks the values with
    checked = 0
    for path in PATHS:
        for value in _wrong_values(theirs, path):
            if path == IMAGE and isinstance(value, str):
                continue
            doc = nested(path, value)
            where = [e for e in helm.iter_errors(doc) if tuple(
                "[]" if isinstance(p, int) else p for p in e.absolute_path)[:len(path)] == path]
            assert where, f"vcluster's schema accepts {value!r} at {dotted(path)}: not a wrong value"
            with pytest.raises(ConfigError) as err:
                parse_config(doc)
            assert any(m.startswith(f"invalid {dotted(path)}") for m in err.value.errors), (dotted(path), value)
            checked += 1
    assert checked > 300


@pytest.mark.parametrize(("doc", "message"), [
    # issue 23: "yes" is a string in YAML (quoted, or in YAML 1.2); vcluster's schema wants a boolean
    ({"sync": {"fromHost": {"runtimeClasses": {"enabled": "yes"}}}},
     'invalid sync.fromHost.runtimeClasses.enabled: expected a boolean (true or false), got the string "yes"'),
    ({"sync": {"toHost": {"pods": {"useSecretsForSATokens": 1}}}},
     "invalid sync.toHost.pods.useSecretsForSATokens: expected a boolean (true or false), got the integer 1"),
    ({"sync": {"toHost": {"secrets": {"all": "false"}}}},
     'invalid sync.toHost.secrets.all: expected a boolean (true or false), got the string "false"'),
    ({"sync": {"toHost": {"pods": {"runtimeClassName": 1.5}}}},
     "invalid sync.toHost.pods.runtimeClassName: expected a string, got the number 1.5"),
    ({"sync": {"fromHost": {"runtimeClasses": {"selector": {"matchLabels": {"tier": 1}}}}}},
     "invalid sync.fromHost.runtimeClasses.selector.matchLabels.tier: expected a string, got the integer 1"),
    ({"controlPlane": {"advanced": {"workloadServiceAccount": "tenant"}}},
     'invalid controlPlane.advanced.workloadServiceAccount: expected a mapping, got the string "tenant"'),
    ({"policies": {"podSecurityStandard": True}},
     "invalid policies.podSecurityStandard: expected a string, got the boolean true"),
])
def test_type_errors_say_what_was_expected_and_what_was_given(doc: Obj, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert err.value.errors == [message]


def test_a_yaml_boolean_written_yes_is_a_boolean(tmp_path: Path) -> None:
    # YAML 1.1, which PyYAML and vcluster's sigs.k8s.io/yaml (go-yaml v2) both read: unquoted yes is true
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text("sync:\n  fromHost:\n    runtimeClasses:\n      enabled: yes\n")
    assert parse_config(yaml.safe_load(cfg.read_text())).enabled is True
    cfg.write_text('sync:\n  fromHost:\n    runtimeClasses:\n      enabled: "yes"\n')
    out = subprocess.run([sys.executable, "-m", "syncer", "validate", "--config", str(cfg)], capture_output=True,
                         text=True, cwd=REPO)
    assert (out.returncode, out.stderr) == (2, 'error: invalid sync.fromHost.runtimeClasses.enabled: expected a '
                                               'boolean (true or false), got the string "yes"\n')


# ------------------------------------------------------------------------------------------------- nulls

def _is_zero(value: Any) -> bool:
    if isinstance(value, BaseModel):
        return all(_is_zero(getattr(value, name)) for name in type(value).model_fields)
    return value is None or value in (False, "", {}, [])


@pytest.mark.parametrize("path", [p for p in PATHS if "[]" not in p], ids=dotted)
def test_a_null_key_is_the_zero_value_of_its_type(path: tuple[str, ...]) -> None:
    # Helm drops a null key before it checks the values against the schema, so vcluster accepts a null anywhere
    # (its chart tests set `sync.toHost: null` and `sync: null`), and its Go struct keeps the zero value
    value: Any = parse_config(nested(path, None)).raw
    for part in path:
        value = getattr(value, part)
    assert _is_zero(value), (dotted(path), value)


@pytest.mark.parametrize(("item", "null", "message"), [
    # a null is the zero value, "", which these keys do not allow (Kubernetes' label selector rules; a patch path)
    ({"key": "a", "operator": "Exists"}, "key", "name part must be non-empty"),
    ({"key": "a", "operator": "Exists"}, "operator", '"" is not a valid label selector operator'),
    ({"path": "handler", "expression": "value"}, "path", "invalid sync.fromHost.runtimeClasses.patches[0].path: "),
])
def test_a_null_required_key_of_a_list_item_is_refused(item: Obj, null: str, message: str) -> None:
    section = "patches" if "path" in item else "selector"
    items = [{**item, null: None}]
    doc = {"sync": {"fromHost": {"runtimeClasses": {section: items if section == "patches" else {
        "matchExpressions": items}}}}}
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    (error,) = err.value.errors
    assert message in error and f"[0].{null}" in error


def test_a_null_section_is_the_zero_value_vcluster_runs_with() -> None:
    # Helm removes a null key and the chart's default under it (helm's chartutil.CoalesceValues); vcluster reads
    # the rendered values with yaml.UnmarshalStrict into an empty Config (pkg/config/parse.go), so every key
    # under it is Go's zero value: rewriteHosts.enabled false, although the chart's default is true.
    default = PodOptions.from_config(parse_config({}))
    assert (default.rewrite_hosts, default.set_owner) == (True, True)
    nulled = PodOptions.from_config(parse_config({"sync": {"toHost": None}, "experimental": {"syncSettings": None}}))
    assert (nulled.rewrite_hosts, nulled.set_owner, nulled.rewrite_hosts_resources) == (False, False, {})
    cfg = parse_config({"sync": {"fromHost": {"runtimeClasses": {"enabled": None, "selector": None,
                                                                 "patches": None}}}})
    assert (cfg.enabled, cfg.selector.empty, cfg.rc.patches) == (False, True, [])
    assert parse_config({"sync": None}).forced_runtime_class == ""
    assert parse_config({"controlPlane": {"advanced": {"workloadServiceAccount": {"name": None}}}}) \
        .workload_service_account("my-vc") == "vc-workload-my-vc"


# -------------------------------------------------------------------------------------- misspelt sections

@pytest.mark.parametrize(("doc", "message"), [
    ({"sync": {"fromhost": {"runtimeClasses": {"enabled": True}}}},
     'invalid sync.fromhost: unknown field "fromhost" (did you mean "fromHost"?)'),
    ({"sync": {"fromHost": {"runtimeClass": {"enabled": True}}}},
     'invalid sync.fromHost.runtimeClass: unknown field "runtimeClass" (did you mean "runtimeClasses"?)'),
    ({"sync": {"fromHost": {"runtimeclasses": {"enabled": True}}}},
     'invalid sync.fromHost.runtimeclasses: unknown field "runtimeclasses" (did you mean "runtimeClasses"?)'),
    ({"sync": {"FromHost": {}}}, 'invalid sync.FromHost: unknown field "FromHost" (did you mean "fromHost"?)'),
    ({"Sync": {"fromHost": {}}}, 'invalid Sync: unknown field "Sync" (did you mean "sync"?)'),
    ({"snyc": {}}, 'invalid snyc: unknown field "snyc" (did you mean "sync"?)'),
    ({"sync": {"tohost": {}}}, 'invalid sync.tohost: unknown field "tohost" (did you mean "toHost"?)'),
    ({"sync": {"fromHost": {"runtimeClasses": {"enable": True}}}},
     'invalid sync.fromHost.runtimeClasses.enable: unknown field "enable" (did you mean "enabled"?)'),
    ({"sync": {"fromHost": {"runtimeClasses": {"selector": {"matchlabels": {}}}}}},
     'invalid sync.fromHost.runtimeClasses.selector.matchlabels: unknown field "matchlabels" (did you mean '
     '"matchLabels"?)'),
    ({"sync": {"fromHost": {"runtimeClasses": {"patches": [{"path": "handler", "expresion": "value"}]}}}},
     'invalid sync.fromHost.runtimeClasses.patches[0].expresion: unknown field "expresion" (did you mean '
     '"expression"?)'),
    # beside the keys the syncer reads outside its section (sync.toHost.pods, controlPlane.advanced, ...)
    ({"sync": {"toHost": {"podz": {}}}}, 'invalid sync.toHost.podz: unknown field "podz" (did you mean "pods"?)'),
    ({"sync": {"toHost": {"pods": {"rewritehosts": {}}}}},
     'invalid sync.toHost.pods.rewritehosts: unknown field "rewritehosts" (did you mean "rewriteHosts"?)'),
    ({"sync": {"toHost": {"pods": {"rewriteHosts": {"initcontainer": {}}}}}},
     'invalid sync.toHost.pods.rewriteHosts.initcontainer: unknown field "initcontainer" (did you mean '
     '"initContainer"?)'),
    ({"sync": {"toHost": {"pods": {"rewriteHosts": {"initContainer": {"resource": {}}}}}}},
     'invalid sync.toHost.pods.rewriteHosts.initContainer.resource: unknown field "resource" (did you mean '
     '"resources"?)'),
    ({"controlPlane": {"advanced": {"workloadServiceAcount": {"name": "x"}}}},
     'invalid controlPlane.advanced.workloadServiceAcount: unknown field "workloadServiceAcount" (did you mean '
     '"workloadServiceAccount"?)'),
    ({"networking": {"advanced": {"clusterdomain": "corp.local"}}},
     'invalid networking.advanced.clusterdomain: unknown field "clusterdomain" (did you mean "clusterDomain"?)'),
    # inside the section every unknown key is an error, close to a known one or not
    ({"sync": {"fromHost": {"runtimeClasses": {"color": "blue"}}}},
     'invalid sync.fromHost.runtimeClasses.color: unknown field "color"'),
])
def test_a_misspelt_section_names_the_key_it_meant(doc: Obj, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    assert err.value.errors == [message]


@pytest.mark.parametrize("doc", [
    {"sync": {"fromHost": {"volumeAttributesClasses": {"enabled": True}}}},  # a key a newer vcluster might add
    {"myTeam": {"owner": "platform"}},
    # off the levels the syncer reads: vcluster's to judge
    {"sync": {"toHost": {"ingresses": {"enabld": True}}, "fromHost": {"nodes": {"selectr": {}}}}},
    # on them, but close to no key of vcluster's: a key a newer vcluster might add
    {"sync": {"toHost": {"pods": {"enabled": False, "dnsPolicy": "x"}}}, "networking": {"advanced": {"ipv6": True}}},
    {"sync": {"fromHost": {"runtimeClasses": {"enabled": True}}}, "sleepMode": {}, "plugin": {}, "plugins": {}},
])
def test_unknown_keys_not_close_to_one_on_the_path_are_left_to_vcluster(doc: Obj) -> None:
    parse_config(doc)


@pytest.mark.parametrize("version", SCHEMA_VERSIONS)
def test_the_known_vcluster_keys_cover_vclusters_schema(version: str) -> None:
    theirs = vcluster_schema(version)
    for level, known in VCLUSTER_KEYS.items():
        node = node_at(theirs, level)
        assert node is not None
        assert set(node["properties"]) <= known, (level, set(node["properties"]) - known)


def test_validate_reports_a_misspelt_section_instead_of_sync_disabled(tmp_path: Path) -> None:
    cfg = tmp_path / "vcluster.yaml"
    cfg.write_text("sync:\n  fromhost:\n    runtimeClass:\n      enabled: true\n  toHost:\n    pods:\n"
                   "      enabled: false\n")
    out = subprocess.run([sys.executable, "-m", "syncer", "validate", "--config", str(cfg)], capture_output=True,
                         text=True, cwd=REPO)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == 'error: invalid sync.fromhost: unknown field "fromhost" (did you mean "fromHost"?)\n'


# ---------------------------------------------------------------------------------- the image's two shapes

@pytest.mark.parametrize(("image", "expected"), [
    # vcluster config/config_test.go: TestImage_UnmarshalYAML and the ParseImageRef() cases of TestImage_String
    ("registry:5000/some/repo:sometag", ("registry:5000", "some/repo", "sometag")),
    ("registry.k8s.io/coredns/coredns:1.11.3", ("registry.k8s.io", "coredns/coredns", "1.11.3")),
    ("coredns/coredns:1.11.3", ("", "coredns/coredns", "1.11.3")),
    ("alpine:3.20", ("", "alpine", "3.20")),
    ("alpine", ("", "alpine", "")),
    ("ghcr.io/library/alpine:3.20", ("ghcr.io", "alpine", "3.20")),
    ("host.docker.internal:5000/coredns/coredns:1.11.3", ("host.docker.internal:5000", "coredns/coredns", "1.11.3")),
    ("localhost:5000/coredns/coredns", ("localhost:5000", "coredns/coredns", "")),
    ("", ("", "", "")),
])
def test_an_image_written_as_a_string_is_split_as_vcluster_splits_it(image: str, expected: tuple[str, ...]) -> None:
    cfg = parse_config({"sync": {"toHost": {"pods": {"rewriteHosts": {"initContainer": {"image": image}}}}}})
    got = cfg.raw.sync.toHost.pods.rewriteHosts.initContainer.image
    assert (got.registry, got.repository, got.tag) == expected


def test_the_v0_26_chart_values_give_the_image_vcluster_uses() -> None:
    # v0.26 wrote `image: "library/alpine:3.20"`; vcluster splits it (registry "", repository "alpine") and its
    # pod translator fills the registry with docker.io (pkg/controllers/resources/pods/translate/translator.go)
    values = chart_values("v0.26.5")
    assert values["sync"]["toHost"]["pods"]["rewriteHosts"]["initContainer"]["image"] == "library/alpine:3.20"
    assert PodOptions.from_config(parse_config(values)).rewrite_hosts_image == "docker.io/library/alpine:3.20"


# ------------------------------------------------------------------------------ vcluster's real configs

E2E_VARS = {"Repository": "ghcr.io/loft-sh/vcluster", "Tag": "dev-next", "HostClusterName": "kind-cluster"}


def fill(template: str) -> str:
    """The e2e files' Go template, filled as vcluster's e2e suite fills it (SOURCE.md)."""
    text = re.sub(r'\{\{\s*printf\s+"((?:[^"\\]|\\.)*)"\s*\}\}', lambda m: m.group(1), template)
    text = re.sub(r"\{\{\s*\.(\w+)\s*\}\}", lambda m: E2E_VARS[m.group(1)], text)
    assert "{{ ." not in text.replace("{{ .Release.Name }}", "")  # printf's output, rendered later by vcluster
    return text


def helm_merge(base: Obj, override: Obj) -> Obj:
    """`helm -f base -f override`: mappings merge key by key, anything else in `override` replaces (helm's
    cli/values mergeMaps)."""
    out = dict(base)
    for key, value in override.items():
        out[key] = helm_merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else value
    return out


def helm_coalesce(user: Obj, chart: Obj) -> Obj:
    """The values the chart renders into the config Secret the sidecar reads: the user's over the chart's,
    mappings merged, and a user's null removing the key and the chart's default (helm's CoalesceValues)."""
    out = dict(chart)
    for key, value in user.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = helm_coalesce(value, out[key])
        else:
            out[key] = value
    return out


@functools.cache
def chart_values(version: str) -> Obj:
    """The chart's values.yaml of a version (never modified: the merges copy what they change)."""
    values = yaml.safe_load((CHARTS[version] / "values.yaml").read_text(encoding="utf-8"))
    assert isinstance(values, dict)
    return values


def _configs() -> Iterator[Any]:
    for version in ("main", "v0.36.1", "v0.35.3", "v0.26.5"):
        yield pytest.param(version, "values.yaml", None, id=f"{version}/values.yaml")
    for path in sorted((DATA / "main" / "test").glob("*.yaml")):
        yield pytest.param("main", f"main/test/{path.name}", None, id=f"test/{path.name}")
    for path in sorted((DATA / "main" / "e2e").glob("vcluster-*.yaml")):
        yield pytest.param("main", f"main/e2e/{path.name}", None, id=f"e2e/{path.name}")
    for path in sorted((DATA / "main" / "chart-tests").glob("*_test.yaml")):
        for i, case in enumerate(_suite(f"main/chart-tests/{path.name}")["tests"]):
            if "set" in case:
                yield pytest.param("main", f"main/chart-tests/{path.name}", i, id=f"{path.stem}[{i}]")


@functools.cache
def _suite(rel: str) -> Obj:
    """A helm-unittest suite of vcluster's chart (never modified)."""
    (suite,) = [s for s in yaml.safe_load_all((DATA / rel).read_text(encoding="utf-8")) if s]
    assert isinstance(suite, dict)
    return suite


def _load(version: str, rel: str, case: int | None) -> Obj:
    if rel == "values.yaml":  # the chart's own values
        return chart_values(version)
    if case is not None:  # a chart test's `set:` block (the values helm-unittest renders the chart with)
        values = _suite(rel)["tests"][case]["set"] or {}
        assert isinstance(values, dict)
        return values
    text = (DATA / rel).read_text(encoding="utf-8")
    doc = yaml.safe_load(fill(text) if "/e2e/" in rel else text)
    assert isinstance(doc, dict)
    return doc


def unsupported_mode(values: Obj) -> str:
    """The vcluster mode of these values the syncer cannot run in (the README's install section), or "": private
    nodes, multi-namespace mode, or a vcluster Pro pod setting only vcluster's own pod syncer applies (hybrid
    scheduling, the Istio integration, patches on pods: syncer/config/vcluster.py `pro_pod_settings`). Such a config
    loads, and `validate` refuses it naming only that key."""
    to_host = (values.get("sync") or {}).get("toHost") or {}
    if (values.get("privateNodes") or {}).get("enabled") is True:
        return "privateNodes.enabled"
    if (to_host.get("namespaces") or {}).get("enabled") is True:
        return "sync.toHost.namespaces.enabled"
    if (to_host.get("pods") or {}).get("patches"):
        return "sync.toHost.pods.patches"
    if ((to_host.get("pods") or {}).get("hybridScheduling") or {}).get("enabled") is True:
        return "sync.toHost.pods.hybridScheduling.enabled"
    if (((values.get("integrations") or {}).get("istio")) or {}).get("enabled") is True:
        return "integrations.istio.enabled"
    return ""


DEPLOY = yaml.safe_load((REPO / "deploy" / "vcluster.yaml").read_text(encoding="utf-8"))
# The syncer's own file as deploy/vcluster.yaml's ConfigMap holds it (README, "One writer per resource")
SECTION: Obj = {"enabled": True, "selector": {"matchLabels": {"environment": "development"}}}


def install(values: Obj, version: str) -> tuple[Obj, Obj]:
    """(the syncer's own file, the values vcluster runs with) for a user's vcluster.yaml installed as
    the README's install section says: deploy/vcluster.yaml merged into it, a `sync.fromHost.runtimeClasses` of its
    own moved into the syncer's file (vcluster's stays at its default), rendered over the chart's values of
    `version`."""
    values = helm_merge(values, DEPLOY)
    sync = values.get("sync") if isinstance(values.get("sync"), dict) else {}
    from_host = sync.get("fromHost") if isinstance(sync.get("fromHost"), dict) else {}
    section = from_host.get("runtimeClasses")
    if not isinstance(section, dict) or not (section.get("enabled") is True or section.get("selector")
                                             or section.get("patches")):
        section = None  # vcluster's default (off), or nothing: the sidecar's section is deploy/vcluster.yaml's
    else:
        values = {**values, "sync": {**sync, "fromHost": {k: v for k, v in from_host.items() if k != "runtimeClasses"}}}
    own = {"sync": {"fromHost": {"runtimeClasses": section or SECTION}}}
    return own, helm_coalesce(values, chart_values(version))


@pytest.mark.parametrize(("version", "rel", "case"), list(_configs()))
def test_vclusters_own_configs_load(version: str, rel: str, case: int | None, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    values = _load(version, rel, case)
    # 1. the file as written: a whole vcluster.yaml, or a fragment of one
    parse_config(values)
    # 2. installed beside the sidecar: the two files it reads, through the command line (in process)
    own, runs_with = install(values, version)
    own_file, vcluster_file = tmp_path / "runtimeclass-syncer.yaml", tmp_path / "vcluster.yaml"
    own_file.write_text(yaml.safe_dump(own), encoding="utf-8")
    vcluster_file.write_text(yaml.safe_dump(runs_with), encoding="utf-8")
    code = cli_main(["validate", "--config", str(own_file), "--vcluster-config", str(vcluster_file)])
    out, err = capsys.readouterr()
    mode = unsupported_mode(runs_with)
    if mode:  # refused, and for that reason only
        assert code == 2 and err.startswith(f"error: {vcluster_file}: invalid {mode}: "), err
        assert len(err.splitlines()) == 1, err
    else:
        assert (code, err) == (0, ""), err
        assert out.startswith(f"{own_file}: valid (runtime class sync ")


def test_the_table_covers_every_config_and_some_are_refused() -> None:
    cases = list(_configs())
    assert len(cases) == 4 + 3 + 25 + 202  # values.yaml of 4 minors, test/, e2e/, the chart tests' set blocks
    modes = [unsupported_mode(install(_load(version, rel, case), version)[1])
             for version, rel, case in (c.values for c in cases)]
    assert modes.count("privateNodes.enabled") == 9 and modes.count("sync.toHost.namespaces.enabled") == 4
    # the chart tests "enable hybrid scheduling" (clusterrole_test), "istio enabled", "istio integration" (role_test)
    assert modes.count("sync.toHost.pods.hybridScheduling.enabled") == 1
    assert modes.count("integrations.istio.enabled") == 2
