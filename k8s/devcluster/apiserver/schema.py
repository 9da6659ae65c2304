"""Admission of custom resources against their CRD's structural schema, the way kube-apiserver's
apiextensions side does it: defaulting, pruning (with strict/warn field validation), OpenAPI schema
validation, list-type invariants and `x-kubernetes-validations` CEL rules, with the real server's
error wording (as of the v1.30 it reports) and field paths."""

from __future__ import annotations

import copy
import datetime
import json
import re
from decimal import Decimal
from typing import Any, Iterator, NamedTuple

import celpy
from celpy import celtypes

from .errors import ApiError, invalid
from .resource_info import ResourceInfo
from .validation import dns1035_label_errors, dns1123_subdomain_errors

# ObjectMeta fields a custom resource keeps; anything else under metadata is an unknown field.
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})
ROOT_FIELDS = ("apiVersion", "kind", "metadata")
FIELD_VALIDATION_MODES = ("Strict", "Warn", "Ignore")

# Errors after which the real server skips CEL rules (their cost estimates assume a valid shape).
CEL_BLOCKING_REASONS = frozenset({"FieldValueNotSupported", "FieldValueRequired",
                                  "FieldValueTooLong", "FieldValueTooMany",
                                  "FieldValueTypeInvalid"})
CEL_SKIPPED_MESSAGE = ("some validation rules were not checked because the object was invalid; "
                       "correct the existing errors to complete validation")

DATE_TIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?"
                       r"([Zz]|[+-]\d{2}:\d{2})$")

Path = tuple[str | int, ...]
Cause = dict[str, str]


# ---------------------------------------------------------------- formatting as Go prints values

def go_value(value: Any) -> str:
    """A value the way apimachinery's field errors print it (%v for scalars, %q for strings,
    %#v for maps and lists)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return go_sharp(value)


def go_quote(text: str) -> str:
    """Go's %q for the strings that occur here: JSON escaping matches it for printable text."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def go_float(number: float) -> str:
    """Go's %v of a float64: shortest digits, exponent form when the exponent is < -4 or >= 21."""
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "0"
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    point = len(text) + int(exponent)  # decimal point position
    exp = point - 1
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def go_sharp(value: Any) -> str:
    """Go's %#v of an unstructured map or list."""
    if isinstance(value, dict):
        inner = ", ".join(f"{go_quote(k)}:{go_sharp(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(go_sharp(v) for v in value) + "}"
    if isinstance(value, str):
        return go_quote(value)
    if value is None:
        return "interface {}(nil)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return go_float(value)


def go_limit(number: Any) -> str:
    """A schema bound as kube-openapi prints it (a float64 with %v)."""
    return go_float(float(number))


def path_text(path: Path) -> str:
    """`spec.workers.minReplicas`, `status.conditions[0].type`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + part
    return text


def cause(reason: str, path: Path | str, message: str) -> Cause:
    """A StatusCause; the root (an empty path) is named `<nil>`, as Go prints a nil path."""
    field_name = path if isinstance(path, str) else (path_text(path) or "<nil>")
    return {"reason": reason, "message": message, "field": field_name}


# ---------------------------------------------------------------- schema lookup

def version_schema(info: ResourceInfo) -> dict[str, Any]:
    """The openAPIV3Schema of the served version of `info.crd`."""
    crd = info.crd or {}
    for version in crd.get("spec", {}).get("versions", []):
        if version.get("name") == info.version:
            return version.get("schema", {}).get("openAPIV3Schema", {})
    raise ApiError(500, "InternalError",
                   f"the server has no schema for {info.group_resource} version {info.version}")


def property_schema(schema: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The schema of property `key` of an object schema, from properties or additionalProperties."""
    properties = schema.get("properties") or {}
    if key in properties:
        return properties[key]
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        return additional
    return None


# ---------------------------------------------------------------- defaulting

def apply_defaults(value: Any, schema: dict[str, Any]) -> None:
    """Structural defaulting: an absent property (or a null one that may not be null) takes a
    copy of its default, then defaulting goes on inside every present value, defaulted ones too."""
    if isinstance(value, dict):
        for key, prop in (schema.get("properties") or {}).items():
            if "default" not in prop:
                continue
            if key not in value or (value[key] is None and not prop.get("nullable", False)):
                value[key] = copy.deepcopy(prop["default"])
        for key, item in value.items():
            prop = property_schema(schema, key)
            if prop is not None:
                apply_defaults(item, prop)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            if item is None and "default" in schema["items"] and not schema["items"].get("nullable"):
                value[index] = copy.deepcopy(schema["items"]["default"])
            apply_defaults(value[index], schema["items"])


# ---------------------------------------------------------------- pruning

def prune(value: Any, schema: dict[str, Any], path: Path, unknown: list[str]) -> None:
    """Drops fields the schema does not declare (recording their paths) and nulls of non-nullable
    fields without default, except below x-kubernetes-preserve-unknown-fields."""
    preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
    if isinstance(value, dict):
        declared = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in sorted(value):
            prop = property_schema(schema, key)
            if prop is None:
                if not preserve and additional is not True:
                    unknown.append(path_text(path + (key,)))
                    del value[key]
                continue
            if value[key] is None and not prop.get("nullable", False) and key in declared:
                del value[key]
                continue
            prune(value[key], prop, path + (key,), unknown)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            prune(item, schema["items"], path + (index,), unknown)


def prune_object_meta(obj: dict[str, Any], unknown: list[str]) -> None:
    """ObjectMeta of a custom resource keeps its standard fields only."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    for key in sorted(meta):
        if key not in OBJECT_META_FIELDS:
            unknown.append(f"metadata.{key}")
            del meta[key]


def prune_root(obj: dict[str, Any], schema: dict[str, Any], unknown: list[str]) -> None:
    """apiVersion, kind and metadata always stay; the rest follows the schema."""
    kept = {key: obj.pop(key) for key in ROOT_FIELDS if key in obj}
    prune(obj, schema, (), unknown)
    obj.update(kept)
    prune_object_meta(obj, unknown)


# ---------------------------------------------------------------- old values (updates)

class OldValue(NamedTuple):
    """The value a node had before an update, where one correlates with it."""
    present: bool
    value: Any


NO_OLD = OldValue(False, None)


def correlate_key(key: str, parent: OldValue) -> OldValue:
    """Object properties correlate by name."""
    if parent.present and isinstance(parent.value, dict) and key in parent.value:
        return OldValue(True, parent.value[key])
    return NO_OLD


def correlate_item(item: Any, parent: OldValue, schema: dict[str, Any]) -> OldValue:
    """Items of a map list correlate by their keys, items of a set by value; items of other
    lists do not correlate."""
    if not parent.present or not isinstance(parent.value, list):
        return NO_OLD
    list_type = schema.get("x-kubernetes-list-type")
    if list_type == "map" and isinstance(item, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        for candidate in parent.value:
            if isinstance(candidate, dict) and all(candidate.get(k) == item.get(k) for k in keys):
                return OldValue(True, candidate)
    elif list_type == "set" and item in parent.value:
        return OldValue(True, item)
    return NO_OLD


# ---------------------------------------------------------------- OpenAPI validation

def json_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def type_matches(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return json_type(value) in ("integer", "string")
    wanted = schema.get("type")
    if not wanted:
        return True
    actual = json_type(value)
    if value is None:
        return bool(schema.get("nullable"))
    return actual == wanted or (wanted == "number" and actual == "integer")


def valid_date_time(text: str) -> bool:
    """The server's date-time check: a valid calendar date, `T`, hh:mm:ss with optional
    fraction, and `Z` or an offset (hours up to 23, minutes and seconds up to 59)."""
    match = DATE_TIME.match(text)
    if not match:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return hour <= 23 and minute <= 59 and second <= 59


def validate_value(value: Any, schema: dict[str, Any], path: Path, out: list[Cause],
                   old: OldValue = NO_OLD) -> None:
    """kube-openapi's checks on one node, then its children; errors as field causes. A value
    equal to its correlated old value is not checked again (validation ratcheting, on by default
    since v1.30), so an object stored before its CRD tightened can still be updated."""
    if old.present and old.value == value:
        return
    where = path_text(path)
    if not type_matches(value, schema):
        wanted = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
        actual = json_type(value)
        out.append(cause("FieldValueTypeInvalid", path,
                         f"Invalid value: {go_quote(actual)}: {where} in body must be of type "
                         f"{wanted}: {go_quote(actual)}"))
        return
    if value is None:
        return
    validate_scalar(value, schema, path, out)
    if isinstance(value, list):
        validate_array(value, schema, path, out, old)
    elif isinstance(value, dict):
        validate_object(value, schema, path, out, old)


def validate_scalar(value: Any, schema: dict[str, Any], path: Path, out: list[Cause]) -> None:
    where = path_text(path)
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(go_quote(v if isinstance(v, str) else json_text(v))
                              for v in schema["enum"])
        out.append(cause("FieldValueNotSupported", path,
                         f"Unsupported value: {go_value(value)}: supported values: {supported}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        validate_number(value, schema, path, out)
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(cause("FieldValueTooLong", path,
                             f"Too long: may not be longer than {schema['maxLength']}"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            out.append(cause("FieldValueInvalid", path,
                             f"Invalid value: {go_value(value)}: {where} in body should be at "
                             f"least {schema['minLength']} chars long"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(cause("FieldValueInvalid", path,
                             f"Invalid value: {go_value(value)}: {where} in body should match "
                             f"'{schema['pattern']}'"))
        if schema.get("format") == "date-time" and not valid_date_time(value):
            out.append(cause("FieldValueTypeInvalid", path,
                             f"Invalid value: {go_value(value)}: {where} in body must be of type "
                             f"date-time: {go_quote(value)}"))


def json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def validate_number(value: int | float, schema: dict[str, Any], path: Path,
                    out: list[Cause]) -> None:
    where = path_text(path)
    shown = go_value(int(value) if isinstance(value, float) and value.is_integer() else value)
    if "maximum" in schema:
        limit = schema["maximum"]
        if schema.get("exclusiveMaximum") and value >= limit:
            out.append(cause("FieldValueInvalid", path, f"Invalid value: {shown}: {where} in body "
                             f"should be less than {go_limit(limit)}"))
        elif value > limit:
            out.append(cause("FieldValueInvalid", path, f"Invalid value: {shown}: {where} in body "
                             f"should be less than or equal to {go_limit(limit)}"))
    if "minimum" in schema:
        limit = schema["minimum"]
        if schema.get("exclusiveMinimum") and value <= limit:
            out.append(cause("FieldValueInvalid", path, f"Invalid value: {shown}: {where} in body "
                             f"should be greater than {go_limit(limit)}"))
        elif value < limit:
            out.append(cause("FieldValueInvalid", path, f"Invalid value: {shown}: {where} in body "
                             f"should be greater than or equal to {go_limit(limit)}"))
    if "multipleOf" in schema and schema["multipleOf"] and value % schema["multipleOf"] != 0:
        out.append(cause("FieldValueInvalid", path, f"Invalid value: {shown}: {where} in body "
                         f"should be a multiple of {go_limit(schema['multipleOf'])}"))


def validate_array(value: list[Any], schema: dict[str, Any], path: Path, out: list[Cause],
                   old: OldValue) -> None:
    where = path_text(path)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(cause("FieldValueTooMany", path,
                         f"Too many: {len(value)}: must have at most {schema['maxItems']} items"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        out.append(cause("FieldValueInvalid", path, f"Invalid value: {len(value)}: {where} in body "
                         f"should have at least {schema['minItems']} items"))
    items = schema.get("items")
    if isinstance(items, dict):
        for index, item in enumerate(value):
            validate_value(item, items, path + (index,), out, correlate_item(item, old, schema))


def validate_object(value: dict[str, Any], schema: dict[str, Any], path: Path,
                    out: list[Cause], old: OldValue) -> None:
    where = path_text(path)
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        out.append(cause("FieldValueTooMany", path, f"Too many: {len(value)}: must have at most "
                         f"{schema['maxProperties']} items"))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        out.append(cause("FieldValueInvalid", path, f"Invalid value: {len(value)}: {where} in "
                         f"body should have at least {schema['minProperties']} properties"))
    for key in schema.get("required") or []:
        if key not in value:
            out.append(cause("FieldValueRequired", path + (key,), "Required value"))
    for key in sorted(value):
        prop = property_schema(schema, key)
        if prop is not None:
            validate_value(value[key], prop, path + (key,), out, correlate_key(key, old))


# ---------------------------------------------------------------- list types

def validate_list_types(value: Any, schema: dict[str, Any], path: Path, out: list[Cause],
                        old: OldValue = NO_OLD) -> None:
    """x-kubernetes-list-type set (no duplicate items) and map (no duplicate keys), everywhere
    but in unchanged values."""
    if old.present and old.value == value:
        return
    if isinstance(value, list):
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "set":
            seen: list[Any] = []
            for index, item in enumerate(value):
                if item in seen:
                    out.append(cause("FieldValueDuplicate", path + (index,),
                                     f"Duplicate value: {go_value(item)}"))
                else:
                    seen.append(item)
        elif list_type == "map":
            keys = schema.get("x-kubernetes-list-map-keys") or []
            seen_keys: list[dict[str, Any]] = []
            for index, item in enumerate(value):
                if not isinstance(item, dict):
                    continue
                key = {k: item[k] for k in keys if k in item}
                if key in seen_keys:
                    out.append(cause("FieldValueDuplicate", path + (index,),
                                     f"Duplicate value: {go_sharp(key)}"))
                else:
                    seen_keys.append(key)
        items = schema.get("items")
        if isinstance(items, dict):
            for index, item in enumerate(value):
                validate_list_types(item, items, path + (index,), out,
                                    correlate_item(item, old, schema))
    elif isinstance(value, dict):
        for key, item in value.items():
            prop = property_schema(schema, key)
            if prop is not None:
                validate_list_types(item, prop, path + (key,), out, correlate_key(key, old))


# ---------------------------------------------------------------- CEL rules

_PROGRAMS: dict[str, Any] = {}
_CEL_ENV = celpy.Environment()


def cel_index_of(container: Any, item: Any, start: Any = 0) -> Any:
    """indexOf of a string (substring) or of a list (element); -1 when absent."""
    if isinstance(container, str):
        return celtypes.IntType(str(container).find(str(item), int(start)))
    values = list(container)
    return celtypes.IntType(values.index(item) if item in values else -1)


def cel_last_index_of(container: Any, item: Any) -> Any:
    if isinstance(container, str):
        return celtypes.IntType(str(container).rfind(str(item)))
    values = list(container)
    return celtypes.IntType(len(values) - 1 - values[::-1].index(item) if item in values else -1)


def cel_replace(text: Any, old: Any, new: Any, count: Any = -1) -> Any:
    return celtypes.StringType(str(text).replace(str(old), str(new), int(count)))


def cel_split(text: Any, separator: Any, limit: Any = -1) -> Any:
    limit = int(limit)
    if limit == 0:
        return celtypes.ListType([])
    parts = str(text).split(str(separator), limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def cel_substring(text: Any, start: Any, end: Any = None) -> Any:
    value = str(text)
    return celtypes.StringType(value[int(start):] if end is None else value[int(start):int(end)])


# The string and list extensions of the Kubernetes CEL environment that cel-python lacks.
K8S_CEL_FUNCTIONS: dict[str, Any] = {
    "lowerAscii": lambda text: celtypes.StringType(str(text).lower()),
    "upperAscii": lambda text: celtypes.StringType(str(text).upper()),
    "trim": lambda text: celtypes.StringType(str(text).strip()),
    "charAt": lambda text, index: celtypes.StringType(str(text)[int(index):int(index) + 1]),
    "indexOf": cel_index_of,
    "lastIndexOf": cel_last_index_of,
    "replace": cel_replace,
    "split": cel_split,
    "substring": cel_substring,
    "join": lambda items, separator="": celtypes.StringType(
        str(separator).join(str(i) for i in items)),
    "isSorted": lambda items: celtypes.BoolType(list(items) == sorted(items)),
    "sum": lambda items: sum(items[1:], items[0]) if len(items) else celtypes.IntType(0),
    "min": lambda items: min(items),
    "max": lambda items: max(items),
}


def cel_program(expression: str) -> Any:
    """Compiled once per expression: compiling costs far more than evaluating."""
    program = _PROGRAMS.get(expression)
    if program is None:
        program = _CEL_ENV.program(_CEL_ENV.compile(expression), functions=K8S_CEL_FUNCTIONS)
        _PROGRAMS[expression] = program
    return program


def to_cel(value: Any, schema: dict[str, Any] | None) -> Any:
    """A JSON value as CEL sees it under its schema: integral numbers of integer fields are ints,
    date-time strings are timestamps, as in the API server's CEL type mapping."""
    schema = schema or {}
    if isinstance(value, dict):
        return celtypes.MapType({celtypes.StringType(k): to_cel(v, property_schema(schema, k))
                                 for k, v in value.items()})
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema.get("items"), dict) else None
        return celtypes.ListType([to_cel(v, items) for v in value])
    if isinstance(value, float) and schema.get("type") == "integer" and value.is_integer():
        return celtypes.IntType(int(value))
    if isinstance(value, str) and schema.get("format") == "date-time" and valid_date_time(value):
        return celtypes.TimestampType(value.replace(" ", "T").replace("z", "Z").replace("t", "T"))
    if value is None:
        return None
    return celpy.json_to_cel(value)


def rule_uses_old_self(rule: dict[str, Any]) -> bool:
    return re.search(r"\boldSelf\b", rule.get("rule", "")) is not None


def rule_failure(rule: dict[str, Any], schema: dict[str, Any], path: Path,
                 activation: dict[str, Any]) -> Cause:
    """The cause for a rule that evaluated to false, worded by its reason, message or
    messageExpression."""
    message = rule.get("message") or f"failed rule: {rule['rule']}"
    if rule.get("messageExpression"):
        try:
            computed = cel_program(rule["messageExpression"]).evaluate(activation)
            if isinstance(computed, str) and computed.strip() and "\n" not in computed:
                message = str(computed)
        except Exception:  # noqa: BLE001 - the real server falls back to the static message
            pass
    field_path = path + tuple(p for p in rule.get("fieldPath", "").split(".") if p)
    reason = rule.get("reason", "FieldValueInvalid")
    prefix = {"FieldValueForbidden": "Forbidden", "FieldValueRequired": "Required value",
              "FieldValueDuplicate": "Duplicate value"}.get(reason)
    if prefix is not None:
        return cause(reason, field_path, f"{prefix}: {message}")
    return cause("FieldValueInvalid", field_path,
                 f"Invalid value: {go_quote(schema.get('type', 'object'))}: {message}")


def evaluate_rules(value: Any, old: Any, has_old: bool, schema: dict[str, Any], path: Path,
                   out: list[Cause]) -> None:
    """Every x-kubernetes-validations rule at this node, then below it. Transition rules
    (those naming oldSelf) run only where an old value correlates; none run on a value equal
    to its old one (ratcheting)."""
    if has_old and old == value:
        return
    for rule in schema.get("x-kubernetes-validations") or []:
        if rule_uses_old_self(rule) and not has_old:
            continue
        activation = {"self": to_cel(value, schema)}
        if has_old:
            activation["oldSelf"] = to_cel(old, schema)
        expression = rule.get("rule", "")
        try:
            result = cel_program(expression).evaluate(activation)
        except Exception as error:  # noqa: BLE001 - any failure is reported, never a pass
            out.append(cause("FieldValueInvalid", path,
                             f"Invalid value: {go_quote(schema.get('type', 'object'))}: "
                             f"{cel_error_text(error)} evaluating rule: {expression}"))
            continue
        if not isinstance(result, (bool, celtypes.BoolType)):
            out.append(cause("FieldValueInvalid", path,
                             f"Invalid value: {go_quote(schema.get('type', 'object'))}: rule "
                             f"did not evaluate to a bool evaluating rule: {expression}"))
        elif not result:
            out.append(rule_failure(rule, schema, path, activation))
    for child, child_old, child_has_old, child_schema, child_path in children(
            value, old, has_old, schema, path):
        evaluate_rules(child, child_old, child_has_old, child_schema, child_path, out)


def cel_error_text(error: Exception) -> str:
    """The evaluation error in the server's words where they differ from cel-python's."""
    text = error.args[0] if error.args and isinstance(error.args[0], str) else str(error)
    missing = re.fullmatch(r"no such member in mapping: '(.*)'", text)
    if missing:
        return f"no such key: {missing.group(1)}"
    return text or type(error).__name__


def children(value: Any, old: Any, has_old: bool, schema: dict[str, Any],
             path: Path) -> Iterator[tuple[Any, Any, bool, dict[str, Any], Path]]:
    """Child nodes with their correlated old values: object properties by name, map-list items
    by key, set-list items by value; other list items do not correlate."""
    parent = OldValue(has_old, old)
    if isinstance(value, dict):
        for key, item in value.items():
            prop = property_schema(schema, key)
            if prop is not None:
                child = correlate_key(key, parent)
                yield item, child.value, child.present, prop, path + (key,)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            child = correlate_item(item, parent, schema)
            yield item, child.value, child.present, schema["items"], path + (index,)


# ---------------------------------------------------------------- entry points

def unknown_fields_error(info: ResourceInfo, unknown: list[str]) -> ApiError:
    """The 400 a strict decoding of a custom resource answers."""
    listed = ", ".join(f"unknown field {go_quote(p)}" for p in unknown)
    return ApiError(400, "BadRequest",
                    f"{info.kind} in version {go_quote(info.version)} cannot be handled as a "
                    f"{info.kind}: strict decoding error: {listed}")


def admit_custom_resource(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, *,
                          field_validation: str,
                          subresource: str | None) -> tuple[dict[str, Any], list[str]]:
    """Defaults, prunes and validates a custom resource written to `info`'s served version.

    Returns the object to store and the warnings to send (unknown fields under Warn). Raises
    ApiError 400 (unknown fields under Strict, or a bad fieldValidation) or 422 Invalid."""
    mode = field_validation or "Warn"
    if mode not in FIELD_VALIDATION_MODES:
        raise ApiError(400, "BadRequest",
                       f"fieldValidation: Invalid value: {go_quote(mode)}: fieldValidation must be "
                       'one of "Ignore", "Warn", or "Strict"')
    schema = version_schema(info)
    result = copy.deepcopy(obj)
    apply_defaults(result, schema)
    unknown: list[str] = []
    prune_root(result, schema, unknown)
    unknown.sort()
    warnings: list[str] = []
    if unknown and mode == "Strict":
        raise unknown_fields_error(info, unknown)
    if mode == "Warn":
        warnings = [f"unknown field {go_quote(p)}" for p in unknown]
    causes = validation_causes(result, old, schema, subresource, scale_paths(info))
    if causes:
        name = (result.get("metadata") or {}).get("name", "")
        raise invalid(info.kind, info.group, name, causes)
    return integral_numbers_as_ints(result), warnings


def validation_causes(obj: dict[str, Any], old: dict[str, Any] | None, schema: dict[str, Any],
                      subresource: str | None,
                      scale: dict[str, Any] | None = None) -> list[Cause]:
    """Schema, scale-path, list-type and CEL errors of the whole object, or of its status alone,
    in the server's order."""
    if subresource == "status":
        status_schema = (schema.get("properties") or {}).get("status") or {}
        value, old_value = obj.get("status"), (old or {}).get("status")
        if value is None:
            return []
        nodes = [(value, old_value, old is not None and "status" in old, status_schema,
                  ("status",))]
    else:
        body = {k: v for k, v in obj.items() if k not in ROOT_FIELDS}
        old_body = {k: v for k, v in (old or {}).items() if k not in ROOT_FIELDS}
        nodes = [(body, old_body, old is not None, without_meta(schema), ())]
    causes: list[Cause] = []
    for value, old_value, has_old, node_schema, path in nodes:
        validate_value(value, node_schema, path, causes, OldValue(has_old, old_value))
    if scale is not None:
        if subresource != "status":
            causes += scale_replicas_causes(obj, scale.get("specReplicasPath"))
        causes += scale_replicas_causes(obj, scale.get("statusReplicasPath"))
        causes += scale_selector_causes(obj, scale.get("labelSelectorPath"))
    for value, old_value, has_old, node_schema, path in nodes:
        validate_list_types(value, node_schema, path, causes, OldValue(has_old, old_value))
    if any(c["reason"] in CEL_BLOCKING_REASONS for c in causes):
        causes.append(cause("FieldValueInvalid", "<nil>",
                            f'Invalid value: "null": {CEL_SKIPPED_MESSAGE}'))
        return causes
    if subresource == "status":
        for value, old_value, has_old, node_schema, path in nodes:
            evaluate_rules(value, old_value, has_old, node_schema, path, causes)
    else:
        evaluate_rules(cel_view(obj), cel_view(old) if old is not None else None, old is not None,
                       cel_root_schema(schema), (), causes)
    return causes


def cel_view(obj: dict[str, Any] | None) -> dict[str, Any]:
    """The object as root-level rules see it: metadata shows only name and generateName."""
    view = dict(obj or {})
    if isinstance(view.get("metadata"), dict):
        view["metadata"] = {k: v for k, v in view["metadata"].items()
                            if k in ("name", "generateName")}
    return view


def cel_root_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The root schema for CEL: apiVersion, kind and the visible metadata typed as strings."""
    root = dict(schema)
    root["properties"] = {
        **(schema.get("properties") or {}),
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {"name": {"type": "string"},
                                                      "generateName": {"type": "string"}}},
    }
    return root


# ---------------------------------------------------------------- scale subresource paths

INT32_MAX = 2**31 - 1


def scale_paths(info: ResourceInfo) -> dict[str, Any] | None:
    """The served version's scale subresource paths, if it has one."""
    for version in ((info.crd or {}).get("spec") or {}).get("versions") or []:
        if version.get("name") == info.version:
            return (version.get("subresources") or {}).get("scale")
    return None


def go_type_name(value: Any) -> str:
    """Go's %T of a decoded JSON value."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, dict):
        return "map[string]interface {}"
    return "<nil>"


def go_plain(value: Any) -> str:
    """Go's %v of a decoded JSON value, as accessor errors print it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_plain(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_plain(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    return go_value(value)


def nested(obj: dict[str, Any], json_path: str) -> tuple[bool, Any, str]:
    """(found, value, error) at a `.a.b.c` path, with the accessor error of a non-object on the
    way, as the server's unstructured helpers report it."""
    value: Any = obj
    fields = [f for f in json_path.lstrip(".").split(".") if f]
    for index, name in enumerate(fields):
        if not isinstance(value, dict):
            where = "." + ".".join(fields[:index])
            return False, None, (f"{where} accessor error: {go_plain(value)} is of the type "
                                 f"{go_type_name(value)}, expected map[string]interface{{}}")
        if name not in value:
            return False, None, ""
        value = value[name]
    return True, value, ""


def scale_replicas_causes(obj: dict[str, Any], json_path: str | None) -> list[Cause]:
    """The scale subresource's replicas paths hold a non-negative int32 when set."""
    if not json_path:
        return []
    found, value, error = nested(obj, json_path)
    if not error and found and (isinstance(value, bool) or not isinstance(value, int)):
        error = (f"{json_path} accessor error: {go_plain(value)} is of the type "
                 f"{go_type_name(value)}, expected int64")
    if error:
        return [cause("FieldValueInvalid", json_path, f"Invalid value: 0: {error}")]
    if not found:
        return []
    if value < 0:
        return [cause("FieldValueInvalid", json_path,
                      f"Invalid value: {value}: should be a non-negative integer")]
    if value > INT32_MAX:
        return [cause("FieldValueInvalid", json_path,
                      f"Invalid value: {value}: should be less than or equal to {INT32_MAX}")]
    return []


def scale_selector_causes(obj: dict[str, Any], json_path: str | None) -> list[Cause]:
    """The scale subresource's selector path holds a string when set."""
    if not json_path:
        return []
    found, value, error = nested(obj, json_path)
    if not error and found and not isinstance(value, str):
        error = (f"{json_path} accessor error: {go_plain(value)} is of the type "
                 f"{go_type_name(value)}, expected string")
    return [cause("FieldValueInvalid", json_path, f'Invalid value: "": {error}')] if error else []


def integral_numbers_as_ints(value: Any) -> Any:
    """Whole numbers written as 2.0 are stored and answered as 2, as the server's JSON does."""
    if isinstance(value, dict):
        return {k: integral_numbers_as_ints(v) for k, v in value.items()}
    if isinstance(value, list):
        return [integral_numbers_as_ints(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def without_meta(schema: dict[str, Any]) -> dict[str, Any]:
    """The root schema minus apiVersion/kind/metadata, which the server checks on its own."""
    trimmed = dict(schema)
    trimmed["properties"] = {k: v for k, v in (schema.get("properties") or {}).items()
                             if k not in ROOT_FIELDS}
    trimmed["required"] = [k for k in schema.get("required") or [] if k not in ROOT_FIELDS]
    return trimmed


# ---------------------------------------------------------------- CRD structural checks

def structural_causes(schema: Any, path: str, out: list[Cause]) -> None:
    """A light structural-schema check: every node has a type (unless it preserves unknown
    fields or is int-or-string), properties and items are schemas, CEL rules compile."""
    if not isinstance(schema, dict):
        out.append(cause("FieldValueInvalid", path, "Invalid value: \"\": must be a schema object"))
        return
    if not schema.get("type") and not schema.get("x-kubernetes-preserve-unknown-fields") \
            and not schema.get("x-kubernetes-int-or-string"):
        out.append(cause("FieldValueRequired", f"{path}.type",
                         "Required value: must not be empty for specified object fields"))
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        out.append(cause("FieldValueRequired", f"{path}.items",
                         "Required value: must be specified"))
    for key, prop in (schema.get("properties") or {}).items():
        structural_causes(prop, f"{path}.properties[{key}]", out)
    if isinstance(schema.get("items"), dict):
        structural_causes(schema["items"], f"{path}.items", out)
    if isinstance(schema.get("additionalProperties"), dict):
        structural_causes(schema["additionalProperties"], f"{path}.additionalProperties", out)
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        rule_path = f"{path}.x-kubernetes-validations[{index}].rule"
        try:
            cel_program(rule.get("rule", ""))
        except Exception as error:  # noqa: BLE001 - reported as the CRD's error
            out.append(cause("FieldValueInvalid", rule_path,
                             f"Invalid value: {go_quote(str(rule.get('rule', '')))}: "
                             f"compilation failed: {cel_error_text(error)}"))


def crd_group_causes(spec: dict[str, Any]) -> list[Cause]:
    group = spec.get("group")
    if not group:
        return [cause("FieldValueRequired", "spec.group", "Required value")]
    errors = dns1123_subdomain_errors(str(group))
    if errors:
        return [cause("FieldValueInvalid", "spec.group",
                      f"Invalid value: {go_quote(str(group))}: {','.join(errors)}")]
    if "." not in str(group):
        return [cause("FieldValueInvalid", "spec.group", f"Invalid value: {go_quote(str(group))}: "
                      "should be a domain with at least one dot")]
    return []


def crd_names_causes(names: dict[str, Any]) -> list[Cause]:
    """Plural, singular, short names and categories are DNS-1035 labels; kind and listKind are
    too once lower-cased, and differ."""
    out = [cause("FieldValueRequired", f"spec.names.{key}", "Required value")
           for key in ("plural", "kind") if not names.get(key)]
    for key in ("plural", "singular"):
        errors = dns1035_label_errors(str(names.get(key) or "a"))
        if names.get(key) and errors:
            out.append(cause("FieldValueInvalid", f"spec.names.{key}",
                             f"Invalid value: {go_quote(str(names[key]))}: {','.join(errors)}"))
    for key in ("kind", "listKind"):
        errors = dns1035_label_errors(str(names.get(key) or "a").lower())
        if names.get(key) and errors:
            out.append(cause("FieldValueInvalid", f"spec.names.{key}",
                             f"Invalid value: {go_quote(str(names[key]))}: may have mixed case, "
                             f"but should otherwise match: {','.join(errors)}"))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        out.append(cause("FieldValueInvalid", "spec.names.listKind",
                         f"Invalid value: {go_quote(str(names['listKind']))}: kind and listKind "
                         "may not be the same"))
    for key in ("shortNames", "categories"):
        for index, value in enumerate(names.get(key) or []):
            errors = dns1035_label_errors(str(value))
            if errors:
                out.append(cause("FieldValueInvalid", f"spec.names.{key}[{index}]",
                                 f"Invalid value: {go_quote(str(value))}: {','.join(errors)}"))
    return out


def crd_versions_causes(versions: list[Any]) -> list[Cause]:
    """Exactly one storage version; each version named and with a structural schema."""
    out: list[Cause] = []
    storage = sum(1 for v in versions if isinstance(v, dict) and v.get("storage"))
    if storage != 1:
        shown = "[]apiextensions.CustomResourceDefinitionVersion(nil)" if not versions else \
            "[]apiextensions.CustomResourceDefinitionVersion{...}"
        out.append(cause("FieldValueInvalid", "spec.versions", f"Invalid value: {shown}: must have "
                         "exactly one version marked as storage version"))
    for index, version in enumerate(versions):
        version = version if isinstance(version, dict) else {}
        if not version.get("name"):
            out.append(cause("FieldValueRequired", f"spec.versions[{index}].name",
                             "Required value"))
        elif dns1035_label_errors(str(version["name"])):
            out.append(cause("FieldValueInvalid", f"spec.versions[{index}].name",
                             f"Invalid value: {go_quote(str(version['name']))}: "
                             f"{','.join(dns1035_label_errors(str(version['name'])))}"))
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        base = f"spec.versions[{index}].schema.openAPIV3Schema"
        if schema is None:
            out.append(cause("FieldValueRequired", base, "Required value: schemas are required"))
            continue
        structural_causes(schema, base, out)
        if isinstance(schema, dict) and schema.get("type") not in (None, "object"):
            out.append(cause("FieldValueInvalid", f"{base}.type",
                             f"Invalid value: {go_quote(str(schema.get('type')))}: must be object "
                             "at the root"))
    return out


def validate_crd(crd: dict[str, Any]) -> None:
    """Raises 422 Invalid for a CustomResourceDefinition the server would refuse: group, names,
    scope, versions (one storage version), or a schema that is not structural."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    name = (crd.get("metadata") or {}).get("name", "")
    out = crd_group_causes(spec) + crd_names_causes(names)
    if not spec.get("scope"):
        out.append(cause("FieldValueRequired", "spec.scope", "Required value"))
    elif spec["scope"] not in ("Namespaced", "Cluster"):
        out.append(cause("FieldValueNotSupported", "spec.scope",
                         f"Unsupported value: {go_quote(str(spec['scope']))}: supported values: "
                         '"Cluster", "Namespaced"'))
    if names.get("plural") and spec.get("group") and name != f"{names['plural']}.{spec['group']}":
        out.append(cause("FieldValueInvalid", "metadata.name",
                         f"Invalid value: {go_quote(name)}: must be spec.names.plural+\".\"+"
                         "spec.group"))
    out += crd_versions_causes(spec.get("versions") or [])
    if out:
        raise invalid("CustomResourceDefinition", "apiextensions.k8s.io", name, out)
