"""The README's troubleshooting table covers every message the syncer emits for an operator: each event
reason, and each line logged at warning or error (found in the code by its constant text)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the syncer's own path (kubesim/, the API server and the demo, is test and demo infrastructure)
SOURCES = list((REPO / "syncer").rglob("*.py"))
LEVELS = {"warning", "error", "exception"}


def _table() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return readme.split("## Troubleshooting", 1)[1].split("\n## ", 1)[0]


def _fragments(fmt: str) -> list[str]:
    """The constant phrases of a %-format string (between placeholders, colons and parentheses), in order:
    the first is how the line starts, the words an operator would search the table for."""
    parts = re.split(r"%(?:\.\d+)?[sdr]|: |\(|\)|;", fmt)
    return [p.strip(" ,.") for p in parts if len(p.strip(" ,.")) >= 6]


def _messages() -> list[tuple[str, str]]:
    """(where, constant text) of every log call at warning or above, and of every event reason."""
    out: list[tuple[str, str]] = []
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            where = f"{path.relative_to(REPO)}:{node.lineno}"
            args = node.args
            if node.func.attr in LEVELS and args and isinstance(args[0], ast.Constant) and \
                    isinstance(args[0].value, str):
                out += [(where, f) for f in _fragments(args[0].value)[:1]]
            if node.func.attr == "record" and len(args) >= 4 and all(isinstance(a, ast.Constant) for a in args[2:4]):
                out.append((where, f"event `{args[3].value}`"))  # recorder.record(res, obj, type, reason, ...)
    return out


def test_every_operator_message_is_in_the_troubleshooting_table() -> None:
    messages = _messages()
    assert len(messages) > 20, "the scan found the log calls and events"
    table = _table()
    missing = [(where, text) for where, text in messages if text not in table]
    assert not missing, f"add these to the README's troubleshooting table: {missing}"
