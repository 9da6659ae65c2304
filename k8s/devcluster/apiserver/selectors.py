"""Label and field selectors with the grammar and error messages of the real API server."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ApiError

_TOKEN = re.compile(r"\s*(==|!=|=|\(|\)|,|!|[^\s=!(),]+)")


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str        # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if self.operator in ("=", "in"):
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values   # "!=", "notin"


class LabelSelector:
    """A parsed `labelSelector` query value: comma-separated requirements, all of which must hold."""

    def __init__(self, text: str):
        self.text = text
        self.requirements = _parse_label_selector(text) if text.strip() else []

    def matches(self, labels: dict[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


# A metav1.LabelSelector's matchExpressions operators as Requirement operators.
_EXPRESSION_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_matches(selector: dict[str, Any], labels: dict[str, str] | None) -> bool:
    """A metav1.LabelSelector object (matchLabels and matchExpressions, all of which must hold; an
    empty one matches everything) against an object's labels. Validation refuses unknown operators
    on write; one met here matches nothing."""
    requirements = [Requirement(key, "=", (value,)) for key, value in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or []:
        operator = _EXPRESSION_OPERATORS.get(expression.get("operator", ""))
        if operator is None:
            return False
        requirements.append(Requirement(expression.get("key", ""), operator, tuple(expression.get("values") or ())))
    return all(requirement.matches(labels or {}) for requirement in requirements)


def _parse_label_selector(text: str) -> list[Requirement]:
    tokens = _TOKEN.findall(text)
    if "".join(tokens).replace(" ", "") != re.sub(r"\s+", "", text):
        raise _bad_selector(text, "unable to parse requirement: found unexpected characters")
    requirements: list[Requirement] = []
    pos = 0

    def take() -> str:
        nonlocal pos
        if pos >= len(tokens):
            raise _bad_selector(text, "unable to parse requirement: found '', expected: identifier")
        pos += 1
        return tokens[pos - 1]

    while pos < len(tokens):
        token = take()
        if token == "!":
            key = take()
            requirements.append(Requirement(_checked_key(text, key), "!"))
        else:
            key = _checked_key(text, token)
            if pos >= len(tokens) or tokens[pos] == ",":
                requirements.append(Requirement(key, "exists"))
            else:
                op = take()
                if op in ("=", "==", "!="):
                    value = "" if pos >= len(tokens) or tokens[pos] == "," else take()
                    requirements.append(Requirement(key, "!=" if op == "!=" else "=",
                                                    (_checked_value(text, value),)))
                elif op in ("in", "notin"):
                    requirements.append(Requirement(key, op, _value_set(text, take)))
                else:
                    raise _bad_selector(text, f"unable to parse requirement: found '{op}', expected: "
                                        "in, notin, =, ==, !=, gt, lt")
        if pos < len(tokens):
            if take() != ",":
                raise _bad_selector(text, "found unexpected token, expected: ','")
            if pos >= len(tokens):
                raise _bad_selector(text, "found '', expected: identifier after ','")
    return requirements


def _value_set(text: str, take: Callable[[], str]) -> tuple[str, ...]:
    if take() != "(":
        raise _bad_selector(text, "found unexpected token, expected: '('")
    values: list[str] = []
    while True:
        token = take()
        if token == ")" and not values:
            break
        values.append(_checked_value(text, token))
        closer = take()
        if closer == ")":
            break
        if closer != ",":
            raise _bad_selector(text, f"found '{closer}', expected: ',', ')'")
    return tuple(values)


def _checked_key(text: str, key: str) -> str:
    from .validation import label_key_errors
    if key in ("(", ")", ",", "=", "==", "!=", "!"):
        raise _bad_selector(text, f"unable to parse requirement: found '{key}', expected: identifier")
    errors = label_key_errors(key)
    if errors:
        raise _bad_selector(text, f"unable to parse requirement: values[0][{key}]: Invalid value: "
                            f'"{key}": {errors[0]}')
    return key


def _checked_value(text: str, value: str) -> str:
    from .validation import label_value_errors
    if value in ("(", ")", ",", "=", "==", "!=", "!"):
        raise _bad_selector(text, f"unable to parse requirement: found '{value}', expected: identifier")
    errors = label_value_errors(value)
    if errors:
        raise _bad_selector(text, f'unable to parse requirement: values[0]: Invalid value: "{value}": '
                            f"{errors[0]}")
    return value


def _bad_selector(text: str, why: str) -> ApiError:
    message = why if why.startswith("unable") else f"unable to parse requirement: {why}"
    return ApiError(400, "BadRequest", f"{message} (labelSelector {text!r})")


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    value: str
    equal: bool


class FieldSelector:
    """A parsed `fieldSelector`: `a=b,c!=d` over the fields a resource supports."""

    def __init__(self, text: str, supported: dict[str, Callable[[dict[str, Any]], str]]):
        self.requirements: list[FieldRequirement] = []
        self.extractors = supported
        for part in (p for p in text.split(",") if p.strip()):
            match = re.fullmatch(r"\s*([^=!\s]+)\s*(==|!=|=)\s*(.*?)\s*", part)
            if not match:
                raise ApiError(400, "BadRequest", f"invalid selector: '{text}'; can't understand '{part}'")
            name, op, value = match.groups()
            if name not in supported:
                raise ApiError(400, "BadRequest", f"field label not supported: {name}")
            self.requirements.append(FieldRequirement(name, value, op != "!="))

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((self.extractors[r.field](obj) == r.value) == r.equal for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def exact_name(self) -> str | None:
        """The name a `metadata.name=X` selector pins, so a lookup can replace a scan."""
        for r in self.requirements:
            if r.field == "metadata.name" and r.equal:
                return r.value
        return None


def path_value(*path: str) -> Callable[[dict[str, Any]], str]:
    """An extractor returning the string form of a nested field ("" when absent)."""

    def extract(obj: dict[str, Any]) -> str:
        value: Any = obj
        for key in path:
            if not isinstance(value, dict):
                return ""
            value = value.get(key)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return extract


META_FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "metadata.name": path_value("metadata", "name"),
    "metadata.namespace": path_value("metadata", "namespace"),
}
