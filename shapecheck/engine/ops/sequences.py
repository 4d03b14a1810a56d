"""Op rules for the builtins that build and walk sequences: ``map`` (with a lambda or a function),
``tuple`` / ``list``, ``dict``, ``zip`` and ``enumerate``. Known items stay known item by item, so
``q, k, v = map(lambda t: rearrange(t, ...), qkv)`` gives three tensors, and zipping a ModuleList
built by a comprehension with three tensors gives each tensor its own layer.
Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import DictValue, OpenTuple, Repeated
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    FloatValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    TensorValue,
    TupleValue,
    Value,
)
from shapecheck.engine.ops.base import Call, iteration_element, known_items, loop_index, register

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


def _item_at(value: Value, index: int) -> Value:
    """Item ``index`` of a sequence whose length another argument fixes."""
    items = known_items(value)
    if items is not None:
        return items[index] if index < len(items) else UNKNOWN
    if isinstance(value, ModuleValue):
        return value.item(index)
    return iteration_element(value)


def _common_length(values: tuple[Value, ...]) -> int | None:
    """The number of items zip / map would produce, when one argument's length is known."""
    lengths = [len(items) for items in map(known_items, values) if items is not None]
    return min(lengths) if lengths else None


def _map(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    if len(call.args) < 2:
        return UNKNOWN
    function, sequences = call.args[0], call.args[1:]
    count = _common_length(sequences)
    if count is None:
        element = tuple(iteration_element(s) for s in sequences)
        return Repeated(interp.call(function, Call(call.node, element, {}, (None,) * len(element)), frame))
    results = []
    for index in range(count):
        element = tuple(_item_at(s, index) for s in sequences)
        results.append(interp.call(function, Call(call.node, element, {}, (None,) * len(element)), frame))
    return TupleValue(tuple(results))


def _sequence(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    if not call.args:
        return TupleValue(())
    value = call.args[0]
    items = known_items(value)
    if items is not None:
        return TupleValue(items)
    if isinstance(value, (Repeated, OpenTuple)):
        return value
    return UNKNOWN


def _dict(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    if call.args or "**" in call.kwargs or "*" in call.kwargs:
        return UNKNOWN
    return DictValue(tuple(call.kwargs.items()))


def _ordered_dict(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``OrderedDict([("fc1", nn.Linear(...)), ("act", nn.GELU())])`` (the named form of
    ``nn.Sequential``) or ``OrderedDict(fc1=...)``: the pairs, in order, when every key is a
    string the engine reads."""
    if "**" in call.kwargs or "*" in call.kwargs or len(call.args) > 1:
        return UNKNOWN
    if not call.args:
        return DictValue(tuple(call.kwargs.items()))
    pairs = call.args[0]
    if call.kwargs or not isinstance(pairs, TupleValue):
        return UNKNOWN
    entries = []
    for pair in pairs.items:
        if not (isinstance(pair, TupleValue) and len(pair.items) == 2):
            return UNKNOWN
        key, value = pair.items
        if not (isinstance(key, ConstValue) and isinstance(key.value, str)):
            return UNKNOWN
        entries.append((key.value, value))
    return DictValue(tuple(entries))


def _zip(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    count = _common_length(call.args)
    if count is None:
        return Repeated(TupleValue(tuple(iteration_element(a) for a in call.args)))
    return TupleValue(tuple(TupleValue(tuple(_item_at(a, i) for a in call.args)) for i in range(count)))


def _enumerate(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    items = known_items(value)
    # One index symbol for every item, counting from 0 like range's.
    if items is None:
        return Repeated(TupleValue((IntValue(loop_index(interp)), iteration_element(value))))
    index = IntValue(loop_index(interp))
    return TupleValue(tuple(TupleValue((index, item)) for item in items))


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

def _deepcopy(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``copy.deepcopy(layer)`` (timm's ``q_pool=deepcopy(self.pool)``): the same kind of layer with
    weights of its own, so a new identity (never shared weights with the original). A tensor is
    itself. A container or an instance of the file's classes would need its children copied too:
    unknown."""
    value = call.arg(0, "x")
    if isinstance(value, ModuleValue) and not value.items and not value.named:
        return replace(value, ident=ModuleIdent(value.ident.label + " (deep copy)", call.node), node=call.node)
    if isinstance(value, (TensorValue, IntValue, FloatValue, ConstValue)):
        return value
    return UNKNOWN


register(_deepcopy, "copy.deepcopy")
register(_map, "builtins.map")
register(_sequence, "builtins.tuple", "builtins.list")
register(_dict, "builtins.dict")
register(_ordered_dict, "collections.OrderedDict")
register(_zip, "builtins.zip")
register(_enumerate, "builtins.enumerate")
