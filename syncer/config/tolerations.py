"""vcluster's toleration syntax (`sync.toHost.pods.enforceTolerations`), after `pkg/util/toleration/toleration.go`
(`ParseToleration`), with apimachinery's label-value rule for the value."""

from __future__ import annotations

import re
from typing import Any

Obj = dict[str, Any]
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class TolerationError(ValueError):
    """An `enforceTolerations` entry that vcluster's `ParseToleration` would not accept."""


def parse_toleration(text: str) -> Obj:
    """A toleration from vcluster's `enforceTolerations` syntax: `*` (tolerate everything), `key`,
    `key=value` (operator left to the API server's default, Equal), `key:Effect` (Exists) or
    `key=value:Effect` (Equal). Raises TolerationError naming the entry, as vcluster refuses to start on it
    (`pkg/config/validation.go` `ValidateConfigAndSetDefaults`)."""
    if text == "*":
        return {"operator": "Exists"}
    colon, equals = text.split(":"), text.split("=")
    tol: Obj = {}
    if len(colon) == 1:
        if len(equals) > 2:
            raise TolerationError(f"invalid toleration spec: {text}")
        tol["key"] = equals[0]
        if len(equals) == 2:
            tol["value"] = equals[1]
    elif len(colon) == 2:
        kv = colon[0].split("=")
        if len(kv) > 2:
            raise TolerationError(f"invalid toleration spec: {text}")
        tol["key"] = kv[0]
        tol["operator"] = "Equal" if len(kv) == 2 else "Exists"
        if len(kv) == 2:
            tol["value"] = kv[1]
        tol["effect"] = colon[1]
    else:
        raise TolerationError(f"invalid toleration spec: {text}")
    value = tol.get("value", "")
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise TolerationError(f"invalid toleration spec: {text}, a valid label must be an empty string or consist "
                              "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                              "alphanumeric character")
    return tol
