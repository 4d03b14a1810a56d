"""Expressions: the part of the interpreter that evaluates an expression to an abstract value.

Names, attributes, calls (arguments evaluated, then ``Interpreter.call``), operators, subscripts,
tuples and comprehensions, each through one handler found by node type in ``_EXPRESSIONS``.
Mixed into ``Interpreter``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Sequence

import libcst as cst

from shapecheck.engine.domain.joins import join_values, unseen_or_size
from shapecheck.engine.domain.literals import literal_value
from shapecheck.engine.facts import walk
from shapecheck.engine.domain.tags import DictValue, LambdaValue, OpenTuple, Repeated
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ClassValue,
    ConstValue,
    EitherString,
    FloatValue,
    FunctionValue,
    ModuleValue,
    ObjectValue,
    IntValue,
    Opaque,
    UnseenSizes,
    QualifiedValue,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    either_string,
    string_options,
)
from shapecheck.engine.interpreter.imports import dotted_name
from shapecheck.engine.ops import base, dispatch
from shapecheck.engine.ops.scalars import scalar_binary

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame


class ExpressionEvaluator:
    """Mixin of ``Interpreter``: evaluates expressions in a frame. Uses the interpreter's state
    (``globals``, ``budget``) and its ``call`` / ``assign``."""

    def eval(self, node: cst.BaseExpression | None, frame: Frame) -> Value:
        if node is None:
            return UNKNOWN
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            return UNKNOWN
        value = handler(self, node, frame)
        if type(value) is FloatValue and value.node is None:
            value = replace(value, node=node)  # where the number was computed (a scale's origin)
        return value

    def lookup(self, name: str, frame: Frame) -> Value:
        if name in frame.env:
            value = frame.env[name]
            return self.project_value(value) if isinstance(value, QualifiedValue) else value
        if name in self.globals:
            value = self.globals[name]
            return self.project_value(value) if isinstance(value, QualifiedValue) else value
        if self.imports.stars and self.graph is not None and name not in _BUILTINS:
            starred = self.graph.star_value(self.imports, name)
            if starred is not None:
                return starred
        return _BUILTINS.get(name, UNKNOWN)

    def _eval_name(self, node: cst.Name, frame: Frame) -> Value:
        return self.lookup(node.value, frame)

    def _eval_attribute(self, node: cst.Attribute, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        if base is UNKNOWN:
            # ``self.backbone.config.hidden_size`` with ``self.backbone`` built by code the engine
            # cannot see: a value nobody wrote in the file, but one value, named by its text (a
            # size read twice is one size).
            named = dotted_name(node.value)
            if node.attr.value == "shape":
                # Sizes, whatever the value is (``cache["k"].shape[1]``), named by its text; those of
                # a call's result are read afresh each time (two calls may differ).
                text = named if named is not None else " ".join(cst.Module([]).code_for_node(node.value).split())
                return UnseenSizes(f"{text}.shape", fresh=named is None and walk.contains(node.value, cst.Call))
            if named is not None:
                return Opaque(named).attribute(node.attr.value)
        return self.member(base, node.attr.value, node, frame)

    def member(self, base: Value, attr: str, node: cst.CSTNode, frame: Frame) -> Value:
        """``base.attr``: a member of a project module (``layers.Attention``) resolves to its value."""
        value = dispatch.attribute(self, base, attr, node, frame)
        if isinstance(base, QualifiedValue) and isinstance(value, QualifiedValue):
            return self.project_value(value)
        return value

    def _eval_call(self, node: cst.Call, frame: Frame) -> Value:
        if not self.budget.spend():
            return UNKNOWN
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = self.eval(func.value, frame)
            callee: Value = self.member(receiver, func.attr.value, func, frame)
        else:
            callee = self.eval(func, frame)
        args: list[Value] = []
        arg_nodes: list[cst.CSTNode] = []
        kwargs: dict[str, Value] = {}
        kwarg_nodes: dict[str, cst.CSTNode] = {}
        for index, arg in enumerate(node.args):
            value = self.eval(arg.value, frame)
            if arg.star == "*" and index == 0 and _leading_of_unknown_rank(value) and _plain(node.args[1:]):
                # ``out.reshape(*input_shape, -1)``: one size value, as ``reshape((*input_shape, -1))``.
                rest = TupleValue(tuple(self.eval(a.value, frame) for a in node.args[1:]))
                args.append(scalar_binary("add", value, rest, frame))
                arg_nodes.append(arg.value)
                break
            if arg.star == "*":
                items = base.known_items(value) if not isinstance(value, TupleValue) else value.items
                if items is None:
                    items = _size_items(value)  # ``zeros(*x.shape[:-1], d)``: each size one argument
                if items is None:
                    # ``nn.Sequential(*[Block() for _ in range(n)])``: the repeated item is kept.
                    args.append(value if isinstance(value, Repeated) else UNKNOWN)
                    arg_nodes.append(arg.value)
                    # ``nn.Sequential(*[Block() for _ in range(n)])``: the list stays readable.
                    kwargs["*"] = value if isinstance(value, Repeated) else UNKNOWN
                else:
                    args.extend(items)
                    arg_nodes.extend([arg.value] * len(items))
            elif arg.star == "**":
                if isinstance(value, DictValue):
                    for key, item in value.entries:  # ``**kwargs`` of known keywords
                        kwargs[key] = item
                        kwarg_nodes[key] = arg.value
                else:
                    kwargs["**"] = UNKNOWN
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = value
                kwarg_nodes[arg.keyword.value] = arg.value
            else:
                args.append(value)
                arg_nodes.append(arg.value)
        call = base.Call(node, tuple(args), kwargs, tuple(arg_nodes), kwarg_nodes)
        return self.call(callee, call, frame)

    def _eval_binary(self, node: cst.BinaryOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        operator = _OPERATORS.get(type(node.operator))
        if operator is None:
            return UNKNOWN
        return dispatch.binary(self, operator, left, right, node, frame)

    def _eval_unary(self, node: cst.UnaryOperation, frame: Frame) -> Value:
        value = self.eval(node.expression, frame)
        return dispatch.unary(self, type(node.operator).__name__, value, node, frame)

    def _eval_comparison(self, node: cst.Comparison, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        result: Value = UNKNOWN
        for comparison in node.comparisons:
            right = self.eval(comparison.comparator, frame)
            result = dispatch.compare(self, type(comparison.operator).__name__, left, right, node, frame)
            left = right
        return result

    def _eval_boolean(self, node: cst.BooleanOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        decided = truth_of(left)
        if decided is not None and decided == isinstance(node.operator, cst.Or):
            return left  # ``a or b`` with a true / ``a and b`` with a false: b never runs
        right = self.eval(node.right, frame)
        if decided is not None:
            return right  # ``n_heads or 8`` with n_heads None: the operand Python returns
        if _boolean(node.left, left) and isinstance(right, ConstValue) and type(right.value) is bool:
            if right.value == isinstance(node.operator, cst.Or):
                # ``backend == "torch" and memory_efficient`` with the flag False: a bool ``and``
                # False is False whatever the bool (``or`` True is True).
                return right
        if isinstance(left, TensorValue) or isinstance(right, TensorValue):
            return dispatch.binary(self, "and" if isinstance(node.operator, cst.And) else "or", left, right, node, frame)
        if isinstance(node.operator, cst.Or):
            either = unseen_or_size(left, right)
            if either is not None:
                return either
        return join_values(left, right)

    def _eval_subscript(self, node: cst.Subscript, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        return dispatch.subscript(self, base, node, frame)

    def _eval_sequence(self, node: cst.Tuple | cst.List, frame: Frame) -> Value:
        items: list[Value] = []
        for index, element in enumerate(node.elements):
            value = self.eval(element.value, frame)
            if isinstance(element, cst.StarredElement):
                if isinstance(value, TupleValue):
                    items.extend(value.items)
                    continue
                if isinstance(value, ShapeValue) and value.shape is not None and not value.shape.variadic:
                    items.extend(IntValue(d) for d in value.shape.dims)
                    continue
                if _leading_of_unknown_rank(value) and index == 0 and not any(
                    isinstance(e, cst.StarredElement) for e in node.elements[1:]
                ):
                    # ``(*x.shape[:-1], -1, head_dim)``: the leading dims of x, whatever their
                    # number, then sizes (the same size value as ``x.shape[:-1] + (-1, head_dim)``).
                    rest = TupleValue(tuple(self.eval(e.value, frame) for e in node.elements[1:]))
                    return scalar_binary("add", value, rest, frame)
                return UNKNOWN
            items.append(value)
        return TupleValue(tuple(items))

    def _eval_comprehension(self, node: cst.ListComp | cst.GeneratorExp, frame: Frame) -> Value:
        comp_for = node.for_in
        if comp_for.inner_for_in is None:
            iterable = self.eval(comp_for.iter, frame)
            items = base.known_items(iterable)
            if items is not None:
                results = []
                for item in items:
                    inner = frame.fork()
                    self.assign(comp_for.target, item, inner, node)
                    kept = self._kept_by_filters(comp_for.ifs, inner)
                    if kept is None:
                        # ``tuple(v for v in [h, all_h] if v is not None)``: the items kept before
                        # the first one the filters cannot decide start the result.
                        if results:
                            return OpenTuple(tuple(results))
                        break
                    if kept:
                        results.append(self.eval(node.elt, inner))
                else:
                    return TupleValue(tuple(results))
        inner = frame.fork()
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            iterable = self.eval(comp.iter, inner)
            self.assign(comp.target, base.iteration_element(iterable, self), inner, node)
            comp = comp.inner_for_in
        element = self.eval(node.elt, inner)
        return Repeated(element)

    def _kept_by_filters(self, filters: Sequence[cst.CompIf], frame: Frame) -> bool | None:
        """Whether a comprehension's ``if`` clauses keep the item bound in ``frame``; None when
        one of them cannot be decided."""
        for clause in filters:
            test = truth_of(self.eval(clause.test, frame))
            if test is None or not test:
                return test
        return True

    def _eval_ifexp(self, node: cst.IfExp, frame: Frame) -> Value:
        test = truth_of(self.eval(node.test, frame))
        if test is not None:
            # ``dim_out if exists(dim_out) else dim``: a test the engine can decide picks its branch.
            return self.eval(node.body if test else node.orelse, frame)
        return join_values(self.eval(node.body, frame), self.eval(node.orelse, frame), node)

    def _eval_literal(self, node: cst.BaseExpression, frame: Frame) -> Value:
        value = literal_value(node)
        return value if value is not None else UNKNOWN

    def _eval_formatted(self, node: cst.FormattedString, frame: Frame) -> Value:
        """``f"{query_layout},{key_layout}-> b h t k"``: an f-string whose fields are names holding
        known strings or integers is that string (audiocraft builds its einsum and einops patterns
        so). Other fields (expressions, conversions, format specs) leave the placeholder
        ``"<f-string>"``; only names are read, so an error message's fields record nothing."""
        texts: list[str] = [""]  # one per option of the fields read so far (``EitherString``)
        raw = "r" in node.prefix.lower()
        if "b" in node.prefix.lower():
            return ConstValue("<f-string>")
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                if "\\" in part.value and not raw:
                    return ConstValue("<f-string>")
                piece = part.value.replace("{{", "{").replace("}}", "}")
                texts = [text + piece for text in texts]
                continue
            if part.conversion is not None or part.format_spec is not None or not isinstance(part.expression, cst.Name):
                return ConstValue("<f-string>")
            value = self.eval(part.expression, frame)
            options = string_options(value)
            if options is None and isinstance(value, IntValue) and value.dim.is_const:
                options = (str(value.dim.value),)
            if options is None or len(texts) * len(options) > EitherString.MAX_OPTIONS:
                return ConstValue("<f-string>")
            texts = [text + option for text in texts for option in options]
        result = either_string(texts)
        return result if result is not UNKNOWN else ConstValue("<f-string>")

    def _eval_paren_free(self, node: cst.NamedExpr, frame: Frame) -> Value:
        value = self.eval(node.value, frame)
        self.assign(node.target, value, frame, node)
        return value

    def _eval_dict(self, node: cst.Dict, frame: Frame) -> Value:
        entries: list[tuple[str, Value]] | None = []
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                value = self.eval(element.value, frame)
                key = element.key
                if entries is not None and isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                    entries.append((key.evaluated_value, value))
                else:
                    entries = None
            else:
                entries = None
        return DictValue(tuple(entries)) if entries is not None else UNKNOWN

    def _eval_lambda(self, node: cst.Lambda, frame: Frame) -> Value:
        return LambdaValue(node, frame.env)

    def _eval_await(self, node: cst.Await, frame: Frame) -> Value:
        self.eval(node.expression, frame)
        return UNKNOWN


def _boolean(node: cst.BaseExpression, value: Value) -> bool:
    """A Python bool for sure: a comparison or a ``not`` of values that are not tensors."""
    if isinstance(value, TensorValue):
        return False
    if isinstance(node, cst.Comparison):
        return True
    return isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not)


_EXPRESSIONS = {
    cst.Name: ExpressionEvaluator._eval_name,
    cst.Attribute: ExpressionEvaluator._eval_attribute,
    cst.Call: ExpressionEvaluator._eval_call,
    cst.BinaryOperation: ExpressionEvaluator._eval_binary,
    cst.UnaryOperation: ExpressionEvaluator._eval_unary,
    cst.Comparison: ExpressionEvaluator._eval_comparison,
    cst.BooleanOperation: ExpressionEvaluator._eval_boolean,
    cst.Subscript: ExpressionEvaluator._eval_subscript,
    cst.Tuple: ExpressionEvaluator._eval_sequence,
    cst.List: ExpressionEvaluator._eval_sequence,
    cst.ListComp: ExpressionEvaluator._eval_comprehension,
    cst.GeneratorExp: ExpressionEvaluator._eval_comprehension,
    cst.IfExp: ExpressionEvaluator._eval_ifexp,
    cst.Integer: ExpressionEvaluator._eval_literal,
    cst.Float: ExpressionEvaluator._eval_literal,
    cst.SimpleString: ExpressionEvaluator._eval_literal,
    cst.ConcatenatedString: ExpressionEvaluator._eval_literal,
    cst.FormattedString: ExpressionEvaluator._eval_formatted,
    cst.Ellipsis: ExpressionEvaluator._eval_literal,
    cst.NamedExpr: ExpressionEvaluator._eval_paren_free,
    cst.Dict: ExpressionEvaluator._eval_dict,
    cst.Lambda: ExpressionEvaluator._eval_lambda,
    cst.Await: ExpressionEvaluator._eval_await,
}


_OPERATORS = {
    cst.Add: "add",
    cst.Subtract: "sub",
    cst.Multiply: "mul",
    cst.Divide: "truediv",
    cst.FloorDivide: "floordiv",
    cst.Modulo: "mod",
    cst.Power: "pow",
    cst.MatrixMultiply: "matmul",
    cst.BitAnd: "and",
    cst.BitOr: "or",
    cst.BitXor: "xor",
}


_BUILTINS: dict[str, Value] = {
    name: QualifiedValue("builtins." + name)
    for name in (
        "int", "float", "len", "range", "zip", "enumerate", "min", "max", "abs", "round", "bool", "isinstance",
        "tuple", "list", "super", "getattr", "hasattr", "reversed", "sum", "map", "dict",
    )
}
_BUILTINS["None"] = ConstValue(None)
_BUILTINS["True"] = ConstValue(True)
_BUILTINS["False"] = ConstValue(False)


def _leading_of_unknown_rank(value: Value) -> bool:
    """``x.shape[:-1]`` of a tensor whose rank is unknown."""
    return isinstance(value, ShapeValue) and value.base is not None and (value.shape is None or value.shape.variadic)


def _size_items(value: Value) -> tuple[Value, ...] | None:
    """The sizes of ``x.shape[:-1]`` (a torch.Size that remembers its tensor) of known rank, one
    ``IntValue`` each, as ``*`` unpacks them into a call: ``x.new_empty(*x.shape[:-1], d)``. A size
    of unknown rank stays unknown (the starred-first case is read as one shape by the caller)."""
    if not isinstance(value, ShapeValue) or value.shape is None or value.shape.variadic:
        return None
    return tuple(IntValue(dim) for dim in value.shape.dims)


def _plain(args: Sequence[cst.Arg]) -> bool:
    """Positional arguments, none starred."""
    return all(arg.star == "" and arg.keyword is None for arg in args)


def truth_of(value: Value) -> bool | None:
    """Whether a value is truthy, when that is known (None, constants, numbers, objects)."""
    if isinstance(value, ConstValue):
        return bool(value.value) if isinstance(value.value, (bool, str, type(None), int, float)) else None
    if isinstance(value, IntValue):
        known = value.dim.value
        return None if known is None else known != 0
    if isinstance(value, (ObjectValue, ClassValue, FunctionValue, ModuleValue)):
        return True
    if isinstance(value, DictValue):
        return bool(value.entries)  # its keys are all known: ``conv_kwargs or {}``
    if isinstance(value, EitherString):
        truths = {bool(option) for option in value.options}
        return truths.pop() if len(truths) == 1 else None
    return None
