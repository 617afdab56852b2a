"""Configuration loading: vcluster.yaml keys, defaults, and every validation message of behaviour.md §1/§5."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config.model import ConfigError, load_config, parse_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def errors_of(doc: object) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    return err.value.errors


def test_defaults_disable_the_feature() -> None:
    cfg = parse_config({})
    assert cfg.enabled is False
    assert cfg.selector.empty
    assert cfg.forced_runtime_class == ""
    assert parse_config(None).enabled is False


def test_real_vcluster_yaml_keys_are_ignored() -> None:
    doc = {
        "controlPlane": {"distro": {"k8s": {"enabled": True}}, "statefulSet": {"resources": {}}},
        "networking": {"replicateServices": {"toHost": []}},
        "sync": {
            "toHost": {"pods": {"enabled": True, "translateImage": {"a": "b"}, "runtimeClassName": "gvisor"},
                       "services": {"enabled": True}},
            "fromHost": {"nodes": {"enabled": False}, "runtimeClasses": {"enabled": True}},
        },
        "experimental": {"whatever": 1},
    }
    cfg = parse_config(doc)
    assert cfg.enabled and cfg.forced_runtime_class == "gvisor"


@pytest.mark.parametrize("name", ["vcluster-matchlabels.yaml", "vcluster-matchexpressions.yaml",
                                  "vcluster-patches.yaml", "vcluster-combined.yaml", "vcluster-all.yaml"])
def test_examples_load(name: str) -> None:
    assert load_config(EXAMPLES / name).enabled


def test_combined_example_selects_like_the_docs() -> None:
    sel = load_config(EXAMPLES / "vcluster-combined.yaml").selector
    assert sel.matches({"environment": "development", "kubernetes.io/runtime.class": "youki"})
    assert not sel.matches({"environment": "development", "kubernetes.io/runtime.class": "kata-fc"})
    assert not sel.matches({"environment": "production", "kubernetes.io/runtime.class": "gvisor"})


def test_unknown_keys_inside_the_section_are_errors() -> None:
    assert errors_of({"sync": {"fromHost": {"runtimeClasses": {"enabled": True, "selectr": {}}}}}) == [
        'invalid sync.fromHost.runtimeClasses.selectr: unknown field "selectr" (did you mean "selector"?)']
    assert errors_of({"sync": {"fromHost": {"runtimeClasses": {"selector": {"matchLabel": {}}}}}}) == [
        'invalid sync.fromHost.runtimeClasses.selector.matchLabel: unknown field "matchLabel" (did you mean '
        '"matchLabels"?)']
    assert errors_of({"sync": {"fromHost": {"runtimeClasses": {"selector": {"matchExpressions": [
        {"key": "a", "operator": "Exists", "value": ["x"]}]}}}}}) == [
        'invalid sync.fromHost.runtimeClasses.selector.matchExpressions[0].value: unknown field "value" (did you '
        'mean "values"?)']


def test_selector_errors_name_the_field() -> None:
    doc = {"sync": {"fromHost": {"runtimeClasses": {"enabled": True, "selector": {"matchExpressions": [
        {"key": "kubernetes.io/runtime.class", "operator": "In", "values": ["gvisor"]},
        {"key": "kubernetes.io/runtime.class", "operator": "Equals", "values": ["gvisor"]}]}}}}}
    assert errors_of(doc) == [
        'invalid sync.fromHost.runtimeClasses.selector: "Equals" is not a valid label selector operator '
        "(at sync.fromHost.runtimeClasses.selector.matchExpressions[1].operator)"]


def test_type_errors_name_the_field() -> None:
    assert errors_of({"sync": {"fromHost": {"runtimeClasses": {"enabled": "maybe"}}}}) == [
        'invalid sync.fromHost.runtimeClasses.enabled: expected a boolean (true or false), got the string "maybe"']


@pytest.mark.parametrize(("patches", "message"), [
    ([{"path": "handler", "expression": "value", "labels": {}}],
     "invalid sync.fromHost.runtimeClasses.patches[0]: can only use one of: expression, labels or reference"),
    ([{"path": "handler"}],
     "invalid sync.fromHost.runtimeClasses.patches[0]: need to use one of: expression, labels or reference"),
    ([{"path": "handler", "expression": "value"}, {"path": "handler", "expression": "value + 'x'"}],
     'invalid sync.fromHost.runtimeClasses.patches[1]: have the same path "handler"'),
    ([{"path": "handler", "expression": "value", "extra": 1}],
     'invalid sync.fromHost.runtimeClasses.patches[0].extra: unknown field "extra"'),
])
def test_patch_rules(patches: list[dict], message: str) -> None:
    assert message in errors_of({"sync": {"fromHost": {"runtimeClasses": {"patches": patches}}}})


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "missing.yaml")
    assert err.value.errors[0].startswith(f"cannot read config {tmp_path / 'missing.yaml'}")
    bad = tmp_path / "bad.yaml"
    bad.write_text("sync: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        load_config(bad)
    assert err.value.errors[0].startswith(f"cannot parse config {bad}")
    lst = tmp_path / "list.yaml"
    lst.write_text("- a\n- b\n")
    with pytest.raises(ConfigError) as err:
        load_config(lst)
    assert err.value.errors == ["invalid config: the document must be a mapping, not list"]


def test_generated_schema_and_defaults_are_current() -> None:
    from syncer.config.schema import render

    for name, text in render().items():
        committed = (EXAMPLES.parent / "config" / name).read_text()
        assert committed == text, f"config/{name} is stale: run `python -m syncer.config.schema`"


def test_the_readme_embeds_the_current_configuration_reference() -> None:
    from syncer.config.schema import embed_reference
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert embed_reference(readme) == readme, "the README's configuration reference is stale: run " \
                                              "`python -m syncer.config.schema`"
