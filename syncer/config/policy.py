"""The runtime policy file (`--policy FILE`, behaviour.md section 6): pydantic v2 models and the loader.

```yaml
defaultRuntimeClassName: gvisor
requireRuntimeClassName: false
allowedHandlers: [runsc, kata-fc]
namespaces:
  team-kata: {defaultRuntimeClassName: kata-fc}
  "tier=gold": {requireRuntimeClassName: true}
```

A `namespaces` key containing `=`, `!`, `(` or a space is a label selector over the virtual namespace's
labels; any other key is a namespace name. Errors are reported like the vcluster.yaml's, every one of them
in document order, each naming its path (`invalid namespaces["tier=gold"].allowedHandlers: ...`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from syncer.config.model import ConfigError, SyncerConfig, _document_order, _pydantic_errors, yaml_document
from syncer.config.selector import Selector, SelectorError, dns1123_label_errors, dns1123_subdomain_errors
from syncer.config.selector import parse as parse_selector

SELECTOR_CHARS = ("=", "!", "(", " ", ">", "<")  # what a selector needs and a namespace name cannot hold


class PolicyEntry(BaseModel):
    """The keys a policy sets, at the top level or for a namespace entry (None = not set here)."""

    model_config = ConfigDict(extra="forbid", strict=True)  # a boolean is true or false, as in the vcluster.yaml

    defaultRuntimeClassName: str | None = None
    requireRuntimeClassName: bool | None = None
    allowedHandlers: list[str] | None = None

    @field_validator("defaultRuntimeClassName")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        """A RuntimeClass name: a DNS-1123 subdomain (kubernetes pkg/apis/node/validation `ValidateRuntimeClass`,
        `ValidateObjectMeta` with `NameIsDNSSubdomain`); another could never name a host class."""
        if v is not None and not v:
            raise ValueError("must not be empty (leave the key out for no default)")
        if v is not None and (errs := dns1123_subdomain_errors(v)):
            raise ValueError(f'"{v}" is not a RuntimeClass name: {"; ".join(errs)}')
        return v

    @field_validator("allowedHandlers")
    @classmethod
    def _handlers(cls, v: list[str] | None) -> list[str] | None:
        """RuntimeClass handlers: DNS-1123 labels (kubernetes pkg/apis/node/validation `ValidateRuntimeClass`:
        `apivalidation.NameIsDNSLabel(rc.Handler)`); another could never match a host class's handler."""
        if v is not None and any(not h for h in v):
            raise ValueError("a handler name must not be empty")
        bad = [f'"{h}": {"; ".join(errs)}' for h in v or [] if (errs := dns1123_label_errors(h))]
        if bad:
            raise ValueError(f"not a RuntimeClass handler: {', '.join(bad)}")
        return v


class PolicyDocument(PolicyEntry):
    """The whole file: the top-level keys and the per-namespace overrides."""

    namespaces: dict[str, PolicyEntry] = {}

    @field_validator("namespaces", mode="before")
    @classmethod
    def _namespaces(cls, v: Any) -> Any:
        return {} if v is None else v


@dataclass(frozen=True)
class Effective:
    """The policy that applies in one namespace: every key resolved (top level, then the entry's keys).

    Attributes:
        default: the default RuntimeClass name ("" = none).
        require: strict mode: a pod must end up with a class.
        handlers: the allowed handlers (None = any handler).
        entry: which entry applied (`"<top level>"`, a namespace name or a selector key).
    """

    default: str = ""
    require: bool = False
    handlers: tuple[str, ...] | None = None
    entry: str = "<top level>"


def is_selector_key(key: str) -> bool:
    """Whether a `namespaces` key is a label selector rather than a namespace name."""
    return any(c in key for c in SELECTOR_CHARS)


@dataclass
class Policy:
    """A validated policy. `entries` keeps the file's order: names and compiled selectors."""

    top: PolicyEntry = field(default_factory=PolicyEntry)
    names: dict[str, PolicyEntry] = field(default_factory=dict)
    selectors: list[tuple[str, Selector, PolicyEntry]] = field(default_factory=list)
    source: str = ""  # the file it came from ("" = no policy)
    text: bytes = b""  # the file's content it was built from (what a reload compares with)

    @property
    def empty(self) -> bool:
        """No key set anywhere: the syncer behaves exactly as without a policy."""
        return not self.source

    def defaults(self) -> set[str]:
        """Every default class the file names (top level and entries)."""
        return {e.defaultRuntimeClassName for e in (self.top, *self.names.values(), *(e for _, _, e in self.selectors))
                if e.defaultRuntimeClassName}

    def effective(self, namespace: str, labels: dict[str, str] | None) -> Effective:
        """The policy for a virtual namespace with these labels: a namespace-name entry beats a selector
        entry; among matching selectors the first in the file wins; its keys override the top level's one
        by one (behaviour.md section 6)."""
        entry, which = self.names.get(namespace), namespace
        if entry is None:
            entry, which = next(((e, key) for key, sel, e in self.selectors if sel.matches(labels or {})),
                                (None, "<top level>"))
        return merge(self.top, entry, which)


def merge(top: PolicyEntry, entry: PolicyEntry | None, which: str = "<top level>") -> Effective:
    """`entry`'s keys over `top`'s, key by key."""
    keys = [top] if entry is None else [top, entry]
    default, require, handlers = "", False, None
    for e in keys:
        if e.defaultRuntimeClassName is not None:
            default = e.defaultRuntimeClassName
        if e.requireRuntimeClassName is not None:
            require = e.requireRuntimeClassName
        if e.allowedHandlers is not None:
            handlers = tuple(e.allowedHandlers)
    return Effective(default, require, handlers, which if entry is not None else "<top level>")


def parse_policy(document: Any, config: SyncerConfig, source: str = "policy") -> Policy:
    """Validate a parsed policy document against the vcluster.yaml it runs with.

    Raises:
        ConfigError: every problem, in document order, each naming its path.
    """
    if document is None:  # an empty file, or one caught half-written by a reload, would lift every restriction
        raise ConfigError(["invalid policy: the file holds no document (write {} for a policy that sets nothing)"])
    if not isinstance(document, dict):
        raise ConfigError([f"invalid policy: the document must be a mapping, not {type(document).__name__}"])
    errors: list[tuple[str, str]] = []
    doc: PolicyDocument | None = None
    entries: dict[Any, Any] = document["namespaces"] if isinstance(document.get("namespaces"), dict) else {}
    for i, key in enumerate(entries):
        if not isinstance(key, str):  # YAML 1.1 reads an unquoted no, on, yes, null or 123 as another type
            errors.append((f"namespaces.{i}", f"invalid namespaces: the key {json.dumps(key, default=str)} "
                           f"(read as {_a_type(key)}) is not a namespace name or selector: quote it"))
    if len(errors) > 0:
        document = {**document, "namespaces": {k: v for k, v in entries.items() if isinstance(k, str)}}
        entries = document["namespaces"]
    try:
        doc = PolicyDocument.model_validate(document)
    except ValidationError as e:
        for path, msg in _pydantic_errors(e, PolicyDocument):
            parts = path.split(".", 2)  # a namespace key is quoted, as it may hold dots: namespaces["a.b/c=d"]
            if parts[0] == "namespaces" and len(parts) > 1:
                key = path[len("namespaces."):].rsplit(".", 1)[0] if len(parts) > 2 else parts[1]
                msg = msg.replace(f"invalid namespaces.{key}", f'invalid namespaces["{key}"]', 1)
            errors.append((path, msg))
    selectors: list[tuple[str, Selector, PolicyEntry]] = []
    names: dict[str, PolicyEntry] = {}
    for key in entries:
        path = f"namespaces.{key}"
        entry = doc.namespaces.get(key) if doc is not None else None
        if is_selector_key(str(key)):
            try:
                sel = parse_selector(str(key))
            except SelectorError as e:
                errors.append((path, f'invalid namespaces["{key}"]: not a valid label selector: {e.reason}'))
                continue
            if entry is not None:
                selectors.append((str(key), sel, entry))
        elif name_errors := dns1123_label_errors(str(key)):  # a namespace name (ValidateNamespaceName): no other
            errors.append((path, f'invalid namespaces["{key}"]: not a namespace name (nor a label selector): '
                           f'{"; ".join(name_errors)}'))  # would ever match, and the entry would silently not apply
        elif entry is not None:
            names[str(key)] = entry
    # The rules that involve the vcluster.yaml are checked on every well-formed key, so one run reports all
    top_keys = {k: v for k, v in document.items() if k in PolicyEntry.model_fields}
    located = [("", "", _entry(top_keys)), *((f"namespaces.{k}.", f'namespaces["{k}"].', _entry(v))
                                            for k, v in (entries or {}).items())]
    for at, where, entry in located:  # (sort path prefix, message prefix, its well-formed keys)
        if entry.allowedHandlers is not None and not config.enabled:
            errors.append((f"{at}allowedHandlers", f"invalid {where}allowedHandlers: needs "
                           "sync.fromHost.runtimeClasses.enabled: true (the handlers are read from the host "
                           "RuntimeClasses)"))
        if entry.defaultRuntimeClassName is not None and config.forced_runtime_class:
            errors.append((f"{at}defaultRuntimeClassName", f"invalid {where}defaultRuntimeClassName: "
                           f'sync.toHost.pods.runtimeClassName ("{config.forced_runtime_class}") is forced on '
                           "every host pod, so a default could never apply"))
    if errors:
        order = _document_order(document)
        raise ConfigError([msg for _, msg in sorted(errors, key=lambda e: order(e[0]))])
    assert doc is not None
    return Policy(PolicyEntry(defaultRuntimeClassName=doc.defaultRuntimeClassName,
                              requireRuntimeClassName=doc.requireRuntimeClassName,
                              allowedHandlers=doc.allowedHandlers), names, selectors, source)


SYSTEM_NAMESPACE = "kube-system"


def system_pod_problems(config: SyncerConfig, policy: Policy) -> list[str]:
    """What the policy refuses of the pods vcluster itself runs in the virtual kube-system: its CoreDNS, a
    Deployment whose pods name no runtime class (vcluster's pkg/coredns/template.go; none with
    `controlPlane.coredns.enabled: false` or `embedded: true`). Refused, the tenants lose DNS; a default class
    for kube-system lets it run (examples/policy-strict.yaml). One message per problem, naming the entry."""
    coredns = config.raw.controlPlane.coredns
    if not coredns.enabled or coredns.embedded or config.forced_runtime_class:
        return []  # no CoreDNS pod, or the forced class gives it one (the handler list judges that for every pod)
    effective = policy.effective(SYSTEM_NAMESPACE, {"kubernetes.io/metadata.name": SYSTEM_NAMESPACE})
    if effective.default or not (effective.require or effective.handlers is not None):
        return []
    return [f"{effective.entry}: vcluster's CoreDNS in {SYSTEM_NAMESPACE} names no runtime class and would be "
            f"refused, and the tenants would lose DNS: give {SYSTEM_NAMESPACE} a defaultRuntimeClassName"]


def _a_type(value: Any) -> str:
    """`value`'s type in words, for a message ("a boolean", "an integer", "null")."""
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number"}.get(type(value), f"a {type(value).__name__}")


def _entry(doc: Any) -> PolicyEntry:
    """The well-formed keys of an entry (its errors are reported by the whole-document validation)."""
    if not isinstance(doc, dict):
        return PolicyEntry()
    good: dict[str, Any] = {}
    for key, value in doc.items():
        try:
            PolicyEntry.model_validate({key: value})
        except ValidationError:
            continue
        good[key] = value
    return PolicyEntry.model_validate(good)


def load_policy(path: str | Path, config: SyncerConfig) -> Policy:
    """Read and validate a policy file (YAML, read as the vcluster.yaml is: `model.yaml_document`).

    Raises:
        ConfigError: the file cannot be read or parsed, or the policy is invalid.
    """
    try:
        text = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError([f"cannot read policy {path}: {e.strerror or e}"]) from None
    return policy_from_text(text, path, config)


def policy_from_text(text: bytes, path: str | Path, config: SyncerConfig) -> Policy:
    """A policy from the file's content (`path` names it in errors).

    Raises:
        ConfigError: the YAML does not parse, or the policy is invalid.
    """
    document = yaml_document(text, path, "policy")
    policy = parse_policy(document, config, str(path))
    policy.text = text
    return policy
