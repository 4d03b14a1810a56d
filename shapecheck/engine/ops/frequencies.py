"""Sinusoidal positional encodings: the engine follows ``arange`` indices through the arithmetic
that builds the angles, so that a rule can compare the frequencies with the formula.

Three tags describe a tensor as a function of an integer index k = 0, 1, 2, ... (``arange``):

- ``IndexLinear(coef)``: the tensor is ``coef * k`` (``arange(0, d, 2)`` is ``2k``; ``/ d`` scales);
- ``LogLinear(slope)``: the tensor is ``exp(slope * k)`` (``torch.exp(...)``, ``10000 ** (...)``);
- ``Phase(slope)``: the tensor is ``position * exp(slope * k)``: the angle fed to sin / cos.

The reference encoding PE(pos, 2i) = sin(pos / 10000^(2i/d)) has, over the pair index i, the slope
``-2 ln(10000) / d``. ``Trig`` marks the output of sin / cos with the phase it was given.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import libcst as cst

from shapecheck.engine.domain.values import Scale, TensorValue, Value, scale_of
from shapecheck.engine.symbolic.dims import Dim


@dataclass(frozen=True, slots=True)
class IndexLinear:
    coef: Scale


@dataclass(frozen=True, slots=True)
class LogLinear:
    slope: Scale
    node: cst.CSTNode


@dataclass(frozen=True, slots=True)
class Phase:
    slope: Scale
    node: cst.CSTNode  # where the frequency was made (exp / pow)


@dataclass(frozen=True, slots=True)
class Trig:
    function: str  # "sin" | "cos"
    phase: Phase | None


FREQUENCY_TAGS = (IndexLinear, LogLinear, Phase)


def expected_slope(width: object) -> Scale | None:
    """The slope of ln(frequency) over the pair index for a table of ``width`` features."""

    if not isinstance(width, Dim):
        return None
    return Scale(-2 * math.log(10000.0)) / Scale.of_dim(width)


def slope_ratio(actual: Scale, expected: Scale) -> float | None:
    """actual / expected when decidable (same bases, or both numbers), None otherwise."""
    if actual.factors == expected.factors and expected.coef:
        return actual.coef / expected.coef
    x, y = actual.value, expected.value
    if x is not None and y:
        return x / y
    return None


def arange_index(start: Value | None, step: Value | None) -> IndexLinear | None:
    """``arange(start, end, step)`` as ``step * k`` when it starts at 0."""
    step_scale = scale_of(step) if step is not None else Scale(1.0)
    start_scale = scale_of(start) if start is not None else Scale(0.0)
    if step_scale is None or start_scale is None or start_scale.value != 0:
        return None
    return IndexLinear(step_scale)


def combine(operator: str, left: Value, right: Value, node: cst.CSTNode) -> object | None:
    """The frequency tag of ``left <operator> right``, if the operands carry one."""
    lt = _tag(left)
    rt = _tag(right)
    ls, rs = scale_of(left), scale_of(right)
    if isinstance(lt, IndexLinear) and rs is not None and operator in ("mul", "truediv"):
        return IndexLinear(lt.coef * rs if operator == "mul" else lt.coef / rs)
    if isinstance(rt, IndexLinear) and ls is not None and operator == "mul":
        return IndexLinear(rt.coef * ls)
    if isinstance(rt, IndexLinear) and ls is not None and operator == "pow":
        return _power(ls, rt, node)
    if isinstance(lt, LogLinear) and rs is not None and operator == "truediv" and rs.value is not None:
        return lt  # a constant factor does not change the slope
    if isinstance(rt, LogLinear) and ls is not None and operator == "truediv" and not isinstance(lt, IndexLinear):
        return LogLinear(Scale(-rt.slope.coef, rt.slope.factors), rt.node)
    position, frequency = _position_and_frequency(lt, rt, left, right)
    if frequency is not None and operator == "mul":
        return Phase(frequency.slope, frequency.node)
    if position is not None and isinstance(rt, LogLinear) and operator == "truediv":
        return Phase(Scale(-rt.slope.coef, rt.slope.factors), rt.node)
    return None


def _power(base: Scale, exponent: IndexLinear, node: cst.CSTNode) -> LogLinear | None:
    value = base.value
    if value is None or value <= 0:
        return None
    return LogLinear(Scale(math.log(value)) * exponent.coef, node)


def exp(value: Value, node: cst.CSTNode) -> LogLinear | None:
    tag = _tag(value)
    if isinstance(tag, IndexLinear):
        return LogLinear(tag.coef, node)
    return None


def reciprocal(value: Value) -> LogLinear | None:
    tag = _tag(value)
    if isinstance(tag, LogLinear):
        return LogLinear(Scale(-tag.slope.coef, tag.slope.factors), tag.node)
    return None


def _position_and_frequency(lt, rt, left, right):
    for position_tag, frequency_tag in ((lt, rt), (rt, lt)):
        if isinstance(position_tag, IndexLinear) and position_tag.coef.value == 1 and isinstance(frequency_tag, LogLinear):
            return position_tag, frequency_tag
    return None, None


def _tag(value: Value) -> object | None:
    if isinstance(value, TensorValue):
        for tag in value.tags:
            if type(tag) in FREQUENCY_TAGS:
                return tag
    return None

