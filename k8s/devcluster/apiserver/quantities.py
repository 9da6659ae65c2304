"""resource.Quantity arithmetic and printing as apimachinery does them, for the messages and the
status that quotas report: exact values, the format (BinarySI, DecimalSI, DecimalExponent) a sum
keeps, and the canonical string (`1500m`, `1536Mi`, `2`, `1e3`). Parsing is kube.py's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..kube import QUANTITY_PATTERN, exact_quantity

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_NANO = 10**9


@dataclass(frozen=True)
class Quantity:
    value: Fraction = Fraction(0)
    format: str = DECIMAL_SI

    @staticmethod
    def parse(text: Any) -> Quantity:
        """Raises ValueError for text that is no quantity."""
        value, fmt = exact_quantity(text)
        # a Quantity holds at most nano precision; finer values round up
        return Quantity(Fraction(math.ceil(value * _NANO), _NANO), fmt)

    def __add__(self, other: Quantity) -> Quantity:
        """A sum keeps the left operand's format unless that operand is zero (Quantity.Add)."""
        return Quantity(self.value + other.value, other.format if self.value == 0 else self.format)

    def __str__(self) -> str:
        if self.value == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI and (abs(self.value) < 1024 or self.value.denominator != 1):
            fmt = DECIMAL_SI            # small or fractional values would lose precision in Ki
        if fmt == BINARY_SI:
            return _binary(int(self.value))
        return _decimal(self.value, fmt)


def _binary(number: int) -> str:
    power = 0
    while number % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
        number //= 1024
        power += 1
    return f"{number}{_BINARY_SUFFIXES[power]}"


def _decimal(value: Fraction, fmt: str) -> str:
    """Mantissa and an exponent that is a multiple of 3, the mantissa as short as that allows."""
    mantissa, exponent = math.ceil(value * _NANO), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    mantissa *= 10 ** (exponent % 3)
    exponent -= exponent % 3
    if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIXES:
        return f"{mantissa}{_DECIMAL_SUFFIXES[exponent]}"
    return f"{mantissa}e{exponent}" if exponent else str(mantissa)


def canonical(text: Any) -> str:
    """The string a real server stores for a quantity it was sent (`1000m` -> `1`)."""
    return str(Quantity.parse(text))


def quantity_error(kind: str) -> str:
    """The decoding error of a resource list holding something that is no quantity."""
    return (f'{kind} in version "v1" cannot be handled as a {kind}: quantities must match the regular '
            f"expression '{QUANTITY_PATTERN}'")
