"""YAML documents read as vcluster reads its config: `yaml.safe_load`, and a key repeated in one mapping refused.

vcluster decodes its vcluster.yaml with sigs.k8s.io/yaml's `UnmarshalStrict` (loft-sh/vcluster `config/config.go`,
`UnmarshalYAMLStrict`), whose YAML decoder refuses a mapping that sets a key twice (go-yaml `decode.go`:
`line N: key "k" already set in map`). PyYAML keeps the last value silently: a policy whose `namespaces` names
`team-a` twice would drop the first, stricter, entry without a word.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode


class _StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a key set twice in one mapping (merge keys `<<` excepted: their keys may be
    overridden, as YAML's merge rules say)."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                repeated = key in seen
            except TypeError:  # an unhashable key: SafeConstructor's own error follows
                continue
            if repeated:
                raise ConstructorError(problem=f'line {key_node.start_mark.line + 1}: key "{key}" already set in map')
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def safe_load_strict(text: str | bytes) -> Any:
    """Parse one YAML document as `yaml.safe_load` does, refusing a key set twice in one mapping.

    Args:
        text: the document (bytes: its encoding detected as PyYAML does, UTF-8/16 with or without a BOM).
    Returns:
        The document's value (None for an empty document).
    Raises:
        yaml.YAMLError: a syntax error, or a repeated key (`line N: key "k" already set in map`, go-yaml's words).
    """
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass: no arbitrary objects
