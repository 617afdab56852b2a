"""`make mutate`'s list of integration mutations stays runnable: each line it breaks is still in its file exactly
once. Three entries went stale when the code under them changed (a write gained `written=`, a 404 check became a
read of the host) and `make mutate` stopped at the first with "update tools/mutate.py": nothing in the default run
noticed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.mutate import LISTED, Mutation

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("mutation", LISTED, ids=[m.name for m in LISTED])
def test_the_line_each_listed_mutation_breaks_is_there_once(mutation: Mutation) -> None:
    text = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert text.count(mutation.old) == 1, f"update tools/mutate.py: {mutation.name!r} no longer fits {mutation.path}"
    assert mutation.new != mutation.old
