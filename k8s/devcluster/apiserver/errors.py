"""API errors in the shape a real API server returns them: a meta/v1 Status object."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answered as a `Status` with its HTTP code.

    `reason` is a metav1.StatusReason (NotFound, AlreadyExists, Conflict, Invalid, BadRequest,
    Forbidden, Unauthorized, Expired, Gone, MethodNotAllowed, UnsupportedMediaType, ...)."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(group_resource: str, name: str, kind_plural: str) -> ApiError:
    """404 as the real server words it: `pods "x" not found`, `fiberjobs.fibermpi.io "x" not found`."""
    return ApiError(404, "NotFound", f'{group_resource} "{name}" not found',
                    {"name": name, "kind": kind_plural,
                     **({"group": group_resource.split(".", 1)[1]} if "." in group_resource else {})})


def already_exists(group_resource: str, name: str, kind_plural: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{group_resource} "{name}" already exists',
                    {"name": name, "kind": kind_plural,
                     **({"group": group_resource.split(".", 1)[1]} if "." in group_resource else {})})


def conflict(group_resource: str, name: str, kind_plural: str) -> ApiError:
    return ApiError(409, "Conflict",
                    f'Operation cannot be fulfilled on {group_resource} "{name}": the object has been '
                    "modified; please apply your changes to the latest version and try again",
                    {"name": name, "kind": kind_plural,
                     **({"group": group_resource.split(".", 1)[1]} if "." in group_resource else {})})


def invalid(kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 Invalid. Each cause is {"reason": "FieldValueInvalid"|"FieldValueRequired"|...,
    "message": "Invalid value: ...: why", "field": "spec.workers.minReplicas"}; the message joins
    them the way the real server does: `Kind.group "name" is invalid: [field: message, ...]`."""
    qualified = f"{kind}.{group}" if group else kind
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}',
                    {"name": name, "group": group, "kind": kind, "causes": causes})


def internal(error: str) -> ApiError:
    """500 InternalError as apimachinery's NewInternalError builds it: the error as its one cause."""
    return ApiError(500, "InternalError", f"Internal error occurred: {error}", {"causes": [{"message": error}]})


def expired(message: str) -> ApiError:
    """410 for a watch or list from a resourceVersion older than the kept history."""
    return ApiError(410, "Expired", message)
