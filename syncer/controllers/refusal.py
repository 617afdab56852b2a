"""Why a pod is not synced, as data, and the one place its words are made (behaviour.md sections 3 and 6).

The gate (gate.py) and the runtime policy (policy.py) return a `Refusal`; the pod reconciler, the
`policy` command and the logs render it. The sentences are the contract's:
`did not sync pod "<pod>" to host because <subject> <predicate>`, where the subject is
`the runtime class "<rc>"`, or `its default runtime class "<rc>"` for the policy's default.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

SELECTOR_PATH = "sync.fromHost.runtimeClasses.selector"
PRIORITY_SELECTOR_PATH = "sync.fromHost.priorityClasses.selector"


class Why(enum.Enum):
    """The kinds of refusal. The first four are the gate's (section 3), the rest the policy's (section 6)."""

    NOT_FOUND = "not_found"  # the host has no class of that name
    DELETING = "deleting"  # the host class is being deleted
    UNCHECKABLE = "uncheckable"  # the selector cannot be evaluated against the class (detail: why)
    NO_MATCH = "no_match"  # the class does not match the selector
    NO_CLASS = "no_class"  # the pod names no class and the policy requires one (allowed: the usable classes)
    HANDLER = "handler"  # the class's handler is not in the list (detail: the handler; allowed: the list)
    HANDLER_UNKNOWN = "handler_unknown"  # the class the pod runs with is missing, so its handler is unknown


GATE = frozenset({Why.NOT_FOUND, Why.DELETING, Why.UNCHECKABLE, Why.NO_MATCH})


@dataclass(frozen=True)
class Refusal:
    """One refusal.

    Attributes:
        why: the kind.
        runtime_class: the class the subject names ("" for NO_CLASS).
        default: the class is the namespace's default (the subject says `its default runtime class`).
        detail: NOT_FOUND/DELETING/UNCHECKABLE: the lookup's or the selector's error ("" for the
            contract's own words); HANDLER: the handler.
        allowed: NO_CLASS: the classes a pod may name here (None: any, the RuntimeClass sync being off, no class
            is judged); HANDLER: the allowed handlers.
        priority_class: set when the refusal is the priority-class gate's (vcluster's `applyLimitByPriorityClass`,
            its words with `priority class` and `sync.fromHost.priorityClasses.selector`); `why` is then one of
            the gate's four.
    """

    why: Why
    runtime_class: str = ""
    default: bool = False
    detail: str = ""
    allowed: tuple[str, ...] | None = ()
    priority_class: str = ""

    @property
    def subject(self) -> str:
        """`the runtime class "<rc>"`, `its default runtime class "<rc>"` or `the priority class "<pc>"`."""
        if self.priority_class:
            return f'the priority class "{self.priority_class}"'
        return f'{"its default" if self.default else "the"} runtime class "{self.runtime_class}"'

    @property
    def predicate(self) -> str:
        """What is wrong with the subject, e.g. `in the host does not match the selector under '...'`."""
        listed = "any" if self.allowed is None else ", ".join(self.allowed) or "none"
        if self.priority_class:
            noun, name, resource, path = ("priority class", self.priority_class, "priorityclasses.scheduling.k8s.io",
                                          PRIORITY_SELECTOR_PATH)
        else:
            noun, name, resource, path = ("runtime class", self.runtime_class, "runtimeclasses.node.k8s.io",
                                          SELECTOR_PATH)
        if self.why is Why.NOT_FOUND:
            return "couldn't be reached in the host: " + (self.detail or f'{resource} "{name}" not found')
        if self.why is Why.DELETING:
            return f"couldn't be reached in the host: {noun} is being deleted"
        if self.why is Why.UNCHECKABLE:
            return f"in the host could not be checked against the selector under '{path}': {self.detail}"
        if self.why is Why.NO_MATCH:
            return f"in the host does not match the selector under '{path}'"
        if self.why is Why.HANDLER:
            return f'uses the handler "{self.detail}", which the policy does not allow (allowed handlers: {listed})'
        if self.why is Why.HANDLER_UNKNOWN:
            return "couldn't be reached in the host, so its handler cannot be checked against the policy"
        return f"set spec.runtimeClassName (allowed: {listed})"

    @property
    def reason(self) -> str:
        """The part of the message after `because`."""
        if self.why is Why.NO_CLASS:
            return f"it names no runtime class and the policy requires one: {self.predicate}"
        return f"{self.subject} {self.predicate}"

    def message(self, pod: str) -> str:
        """The SyncWarning text for pod `pod`."""
        return f'did not sync pod "{pod}" to host because {self.reason}'

    @property
    def metric(self) -> str:
        """The `reason` label of the refused-by-policy metric: `gate` (the pod's own class fails the gate,
        counted as a gate refusal), `default` (an unusable default), `no_class` or `handler`."""
        if self.why is Why.NO_CLASS:
            return "no_class"
        if self.default:
            return "default"
        return "gate" if self.why in GATE else "handler"
