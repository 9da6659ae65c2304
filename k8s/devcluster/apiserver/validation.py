"""Object-metadata validation worded as the real API server words it (field path, `Invalid value`,
`Required value`, ...). Kind-specific checks live with each kind's strategy."""

from __future__ import annotations

import json
import re
from typing import Any

_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + r")*"
_DNS1035_LABEL = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"

Cause = dict[str, str]


def quote(value: Any) -> str:
    """A value the way Go's %q / field.Invalid prints it in a message."""
    if isinstance(value, str):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, (int, float)) else str(value)


def invalid(field: str, value: Any, why: str) -> Cause:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {quote(value)}: {why}",
            "field": field}


def required(field: str, why: str = "") -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value" + (f": {why}" if why else ""),
            "field": field}


def forbidden(field: str, why: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {why}", "field": field}


def duplicate(field: str, value: Any) -> Cause:
    return {"reason": "FieldValueDuplicate", "message": f"Duplicate value: {quote(value)}", "field": field}


def unsupported(field: str, value: Any, allowed: list[str]) -> Cause:
    listed = ", ".join(quote(a) for a in allowed)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {quote(value)}: supported values: {listed}", "field": field}


def _pattern_errors(value: str, longest: int, pattern: str, what: str) -> list[str]:
    errors = []
    if len(value) > longest:
        errors.append(f"must be no more than {longest} characters")
    if not re.fullmatch(pattern, value):
        errors.append(f"{what}, regex used for validation is '{pattern}')")
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    return _pattern_errors(value, 253, _DNS1123_SUBDOMAIN,
                           "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                           "'-' or '.', and must start and end with an alphanumeric character (e.g. "
                           "'example.com'")


def dns1123_label_errors(value: str) -> list[str]:
    return _pattern_errors(value, 63, _DNS1123_LABEL,
                           "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                           "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                           "'123-abc'")


def dns1035_label_errors(value: str) -> list[str]:
    return _pattern_errors(value, 63, _DNS1035_LABEL,
                           "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                           "with an alphabetic character, and end with an alphanumeric character (e.g. "
                           "'my-name',  or 'abc-123'")


def label_value_errors(value: str) -> list[str]:
    return _pattern_errors(value, 63, _LABEL_VALUE,
                           "a valid label must be an empty string or consist of alphanumeric characters, '-', "
                           "'_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  "
                           "or 'my_value',  or '12345'")


def config_key_errors(key: str) -> list[str]:
    """Errors of a ConfigMap or Secret key."""
    errors = _pattern_errors(key, 253, r"[-._a-zA-Z0-9]+",
                             "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                             "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name'")
    if key in (".", "..") or key.startswith(".."):
        errors.append(f"must not be '{key}'" if key in (".", "..") else "must not start with '..'")
    return errors


def label_key_errors(key: str) -> list[str]:
    """Errors of a qualified name (label and annotation keys): optional DNS prefix, then a name."""
    prefix, _, name = key.rpartition("/")
    errors = []
    if "/" in key and not prefix:
        errors.append("prefix part must be non-empty")
    elif prefix:
        errors += ["prefix part " + e for e in dns1123_subdomain_errors(prefix)]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if name and not re.fullmatch(_QUALIFIED_NAME, name):
        errors.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
                      "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                      "'123-abc', regex used for validation is '" + _QUALIFIED_NAME + "')")
    return errors


def label_selector_causes(path: str, selector: Any) -> list[Cause]:
    """Errors of a metav1.LabelSelector (matchLabels keys and values, matchExpressions operators,
    keys and values) as the server words them."""
    if not isinstance(selector, dict):
        return [invalid(path, selector, "must be a label selector")]
    causes = []
    for key, value in (selector.get("matchLabels") or {}).items():
        causes += [invalid(f"{path}.matchLabels", key, e) for e in label_key_errors(key)]
        causes += [invalid(f"{path}.matchLabels", value, e) for e in label_value_errors(str(value))]
    for index, expression in enumerate(selector.get("matchExpressions") or []):
        where = f"{path}.matchExpressions[{index}]"
        operator, values = expression.get("operator", ""), expression.get("values") or []
        if operator in ("In", "NotIn") and not values:
            causes.append(required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(forbidden(f"{where}.values",
                                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append(invalid(f"{where}.operator", operator, "not a valid selector operator"))
        key = expression.get("key", "")
        causes += [invalid(f"{where}.key", key, e) for e in label_key_errors(key)]
    return causes


def name_errors(name: str, rule: str) -> list[str]:
    """Errors of metadata.name under a naming rule: "subdomain", "label" (RFC 1123) or "dns1035"."""
    if rule == "label":
        return dns1123_label_errors(name)
    if rule == "dns1035":
        return dns1035_label_errors(name)
    if rule == "path":
        return [f"may not be '{name}'"] if name in (".", "..") else \
            ([f"may not contain '{c}'" for c in ("/", "%") if c in name])
    return dns1123_subdomain_errors(name)


def validate_metadata(obj: dict[str, Any], namespaced: bool, name_rule: str) -> list[Cause]:
    """Generic ObjectMeta checks the real server runs on every create and update."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    name = meta.get("name", "")
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    else:
        causes += [invalid("metadata.name", name, e) for e in name_errors(name, name_rule)]
    for key, value in (meta.get("labels") or {}).items():
        causes += [invalid("metadata.labels", key, e) for e in label_key_errors(key)]
        if not isinstance(value, str):
            causes.append(invalid(f"metadata.labels", value, "must be a string"))
        else:
            causes += [invalid("metadata.labels", value, e) for e in label_value_errors(value)]
    annotations = meta.get("annotations") or {}
    for key in annotations:
        causes += [invalid("metadata.annotations", key, e) for e in label_key_errors(key.lower())]
    if sum(len(k) + len(str(v)) for k, v in annotations.items()) > 256 * 1024:
        causes.append({"reason": "FieldValueTooLong", "message": "Too long: must have at most 262144 bytes",
                       "field": "metadata.annotations"})
    for index, ref in enumerate(meta.get("ownerReferences") or []):
        causes += _owner_reference_errors(f"metadata.ownerReferences[{index}]", ref, namespaced)
    controllers = [r for r in meta.get("ownerReferences") or [] if r.get("controller")]
    if len(controllers) > 1:
        names = ", ".join(f"{r.get('kind')}/{r.get('name')}" for r in controllers)
        causes.append(invalid("metadata.ownerReferences", meta.get("ownerReferences"),
                              f"Only one reference can have Controller set to true. Found \"true\" in "
                              f"references for {names}"))
    for index, finalizer in enumerate(meta.get("finalizers") or []):
        causes += _finalizer_errors(f"metadata.finalizers[{index}]", finalizer)
    return causes


def _owner_reference_errors(path: str, ref: dict[str, Any], namespaced: bool) -> list[Cause]:
    causes = []
    api_version = ref.get("apiVersion", "")
    if not api_version:
        causes.append(invalid(f"{path}.apiVersion", api_version, "version must not be empty"))
    if not ref.get("kind"):
        causes.append(invalid(f"{path}.kind", ref.get("kind", ""), "kind must not be empty"))
    if not ref.get("name"):
        causes.append(invalid(f"{path}.name", ref.get("name", ""), "name must not be empty"))
    if not ref.get("uid"):
        causes.append(invalid(f"{path}.uid", ref.get("uid", ""), "uid must not be empty"))
    return causes


def _finalizer_errors(path: str, finalizer: Any) -> list[Cause]:
    if not isinstance(finalizer, str) or not finalizer:
        return [invalid(path, finalizer, "name must be a non-empty string")]
    return [invalid(path, finalizer, e) for e in label_key_errors(finalizer)]
