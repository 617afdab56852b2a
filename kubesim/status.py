"""API errors of the embedded server as Kubernetes `Status` objects (metav1.Status)."""

from __future__ import annotations

from typing import Any

from kubesim.fielderrors import FieldError
from syncer.kube.resources import APIResource

_REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}


class StatusError(Exception):
    """An API error: HTTP `code`, machine `reason` (NotFound, AlreadyExists, ...) and message."""

    def __init__(self, code: int, message: str, reason: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        """The metav1.Status body."""
        body: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def _details(res: APIResource, name: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": res.plural}
    if res.group:
        d["group"] = res.group
    return d


def not_found(res: APIResource, name: str) -> StatusError:
    """`<plural>[.<group>] "<name>" not found` (404 NotFound)."""
    return StatusError(404, f'{res.qualified} "{name}" not found', "NotFound", _details(res, name))


def already_exists(res: APIResource, name: str) -> StatusError:
    """`<plural>[.<group>] "<name>" already exists` (409 AlreadyExists)."""
    return StatusError(409, f'{res.qualified} "{name}" already exists', "AlreadyExists", _details(res, name))


def conflict(res: APIResource, name: str, why: str) -> StatusError:
    """`Operation cannot be fulfilled on <plural> "<name>": <why>` (409 Conflict)."""
    return StatusError(409, f'Operation cannot be fulfilled on {res.qualified} "{name}": {why}', "Conflict",
                       _details(res, name))


def kind_conflict(res: APIResource, name: str, why: str) -> StatusError:
    """`Operation cannot be fulfilled on <Kind>[.<group>] "<name>": <why>` (409 Conflict): `errors.NewConflict` given
    `schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}`, the kind in the resource's place, as
    `rest.BeforeDelete` (a delete's preconditions) and the TokenRequest REST (a bound object's uid) name it."""
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    details: dict[str, Any] = {"name": name, "kind": res.kind}
    if res.group:
        details["group"] = res.group
    return StatusError(409, f'Operation cannot be fulfilled on {qualified} "{name}": {why}', "Conflict", details)


def invalid(res: APIResource | None, name: str, errors: list[FieldError], *, by_resource: bool = False) -> StatusError:
    """422 Invalid as `errors.NewInvalid` makes it: `<Kind>[.<group>] "<name>" is invalid: <error>`, or
    `[<error>, <error>]` for several (repeats dropped, as `ErrorList.ToAggregate`), with one
    `StatusCause` (type, field, message) per error. `res` None is the kind-less form the patch handler
    uses for a patch that does not decode. `by_resource`: the resource's plural in the kind's place, as the
    generic registry's `Store.Update` names it (`runtimeclasses.node.k8s.io`)."""
    unique = list(dict.fromkeys(str(e) for e in errors))
    text = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    kind_name = "" if res is None else res.plural if by_resource else res.kind
    kind = f"{kind_name}.{res.group}" if res is not None and res.group else kind_name
    details: dict[str, Any] = {"name": name, "causes": [
        {"reason": e.cause_type, "message": e.body(), "field": e.field} for e in errors]}
    if res is not None:
        details["kind"] = kind_name
        if res.group:
            details["group"] = res.group
    return StatusError(422, f'{kind} "{name}" is invalid: {text}', "Invalid", details)


def kind_invalid(group: str, kind: str, name: str, errors: list[FieldError]) -> StatusError:
    """422 Invalid as `errors.NewInvalid(schema.GroupKind{Group: group, Kind: kind}, name, errs)` makes it for a kind
    that is no resource served here: `<Kind>.<group> "<name>" is invalid: <error>`."""
    unique = list(dict.fromkeys(str(e) for e in errors))
    text = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    details: dict[str, Any] = {"name": name} if name else {}
    details.update(group=group, kind=kind, causes=[
        {"reason": e.cause_type, "message": e.body(), "field": e.field} for e in errors])
    return StatusError(422, f'{kind}.{group} "{name}" is invalid: {text}', "Invalid", details)


def options_invalid(kind: str, errors: list[FieldError]) -> StatusError:
    """422 for request options that do not validate, as the handlers make it (`errors.NewInvalid(schema.GroupKind{
    Group: metav1.GroupName, Kind: "CreateOptions"}, "", errs)`): `<Kind>.meta.k8s.io "" is invalid: <error>`."""
    return kind_invalid("meta.k8s.io", kind, "", errors)


def forbidden(res: APIResource, name: str, why: str) -> StatusError:
    """`<plural> "<name>" is forbidden: <why>` (403 Forbidden), as admission plugins report."""
    return StatusError(403, f'{res.qualified} "{name}" is forbidden: {why}', "Forbidden", _details(res, name))
