"""config/schema.json (generated from the model, `python -m syncer.config.schema`) and the model give the same
verdict on the same documents: an editor or CI checking a vcluster.yaml against the schema is told what `validate`
says.

The schema checks types and enumerations; the rules it cannot express (label selector semantics, patch paths, a
quantity's suffix beyond apimachinery's expression, toleration syntax, near-miss keys of vcluster's) are the
model's alone and are not in this table.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from syncer.config.model import ConfigError, parse_config
from syncer.config.schema import schema

SCHEMA = Draft202012Validator(schema())  # what config/schema.json holds (a test keeps the file current)
PODS = ("sync", "toHost", "pods")


def at(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    for key in reversed(path):
        value = {key: value}
    assert isinstance(value, dict)
    return value


INIT = (*PODS, "rewriteHosts", "initContainer")
DOCUMENTS: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    # the image's two shapes (vcluster's Image.UnmarshalJSON; the charts up to v0.26 wrote a string)
    (at((*INIT, "image"), "library/alpine:3.20"), True),
    (at((*INIT, "image"), {"registry": "r.example", "repository": "alpine", "tag": "3"}), True),
    (at((*INIT, "image"), 3.2), False),
    (at((*INIT, "image", "tag"), 3.2), False),
    # a null key is its zero value (Helm drops it; vcluster keeps Go's zero)
    (at((*PODS, "rewriteHosts"), None), True),
    (at(("experimental", "syncSettings", "setOwner"), None), True),
    (at(("sync",), None), True),
    (at(("sync", "fromHost", "runtimeClasses", "selector"), None), True),
    (at(("policies", "podSecurityStandard"), None), True),
    (at(("experimental", "syncSettings", "setOwner"), "true"), False),
    # Pod Security Standards by their lower-case names only
    (at(("policies", "podSecurityStandard"), "restricted"), True),
    (at(("policies", "podSecurityStandard"), ""), True),
    (at(("policies", "podSecurityStandard"), "Restricted"), False),
    (at(("policies", "podSecurityStandard"), "strict"), False),
    # quantity strings (vcluster's parseResources)
    (at((*INIT, "resources", "limits"), {"cpu": "500m", "memory": "64Mi", "nvidia.com/gpu": "1"}), True),
    (at((*INIT, "resources", "limits"), {"cpu": "lots"}), False),
    (at((*INIT, "resources", "requests"), {"cpu": 1}), False),
    (at((*INIT, "resources", "requests"), {"cpu": None}), False),
    # types and the syncer's own section
    (at(("sync", "fromHost", "runtimeClasses"), {"enabled": True, "selector": {"matchLabels": {"a": "b"}}}), True),
    (at(("sync", "fromHost", "runtimeClasses", "enabled"), "yes"), False),
    (at(("sync", "fromHost", "runtimeClasses", "color"), "blue"), False),
    (at(("sync", "fromHost", "runtimeClasses", "selector", "matchLabels"), {"a": 1}), False),
    (at((*PODS, "runtimeClassName"), "gvisor"), True),
    (at((*PODS, "runtimeClassName"), 1), False),
    (at((*PODS, "enforceTolerations"), "key"), False),
    (at((*PODS, "translateImage"), {"a": "b"}), True),
    (at(("controlPlane", "advanced", "workloadServiceAccount"), "tenant"), False),
    ({"someOtherTool": {"x": 1}}, True),  # other keys are vcluster's
]


def _model_accepts(doc: dict[str, Any]) -> bool:
    try:
        parse_config(doc)
    except ConfigError:
        return False
    return True


@pytest.mark.parametrize(("doc", "valid"), DOCUMENTS, ids=lambda v: json.dumps(v) if isinstance(v, dict) else None)
def test_the_schema_and_the_model_give_the_same_verdict(doc: dict[str, Any], valid: bool) -> None:
    errors = [e.message for e in SCHEMA.iter_errors(doc)]
    assert (not errors, _model_accepts(doc)) == (valid, valid), errors
