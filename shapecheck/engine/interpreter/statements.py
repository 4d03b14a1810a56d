"""Statements: the part of the interpreter that executes a function body.

Assignments (with tuple unpacking and ``B, T, C = x.shape`` naming), branches and loops (frames
forked and joined), ``try`` / ``with``, returns checked against annotations, and the divisibility
facts of ``assert d % h == 0`` and ``if d % h: raise``. Mixed into ``Interpreter``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.joins import join_values
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ClassValue,
    ConstValue,
    FunctionValue,
    ObjectValue,
    Opaque,
    QualifiedValue,
    ShapeValue,
    TensorValue,
    Value,
    dim_of,
    known_sizes,
)
from shapecheck.engine.facts.records import (
    Assignment,
    AttributeAssignment,
    Divisibility,
)
from shapecheck.engine.interpreter.annotation_values import annotation_value
from shapecheck.engine.interpreter.classes import class_info
from shapecheck.engine.interpreter.imports import dotted_name
from shapecheck.engine.ops import base, dispatch
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame


class StatementExecutor:
    """Mixin of ``Interpreter``: executes statements in a frame. Uses the interpreter's state
    (``facts``, ``imports``, ``globals``, ``budget``, ``pending_name``) and its ``eval`` / ``lookup`` /
    ``fresh_name``."""

    # ------------------------------------------------------------------ statements

    def _sizes(self, frame: "Frame") -> dict:
        """The module's known sizes by name, to read annotations of its methods with."""

        return known_sizes(frame.self_value)

    def exec_block(self, statements: Sequence[cst.BaseStatement], frame: Frame) -> None:
        for statement in statements:
            if frame.terminated:
                return
            if not self.budget.spend():
                return
            self.exec_statement(statement, frame)

    def exec_statement(self, statement: cst.BaseStatement, frame: Frame) -> None:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                self.exec_small(small, frame)
                if frame.terminated:
                    return
        elif isinstance(statement, cst.If):
            self._exec_if(statement, frame)
        elif isinstance(statement, (cst.For, cst.While)):
            self._exec_loop(statement, frame)
        elif isinstance(statement, cst.With):
            for item in statement.items:
                value = self.eval(item.item, frame)
                if item.asname is not None:
                    self.assign(item.asname.name, value, frame, item)
            self.exec_block(statement.body.body, frame)
        elif isinstance(statement, cst.Try):
            self._exec_try(statement, frame)
        elif isinstance(statement, cst.FunctionDef):
            frame.env[statement.name.value] = FunctionValue(statement, frame.run.qualname + "." + statement.name.value)
        elif isinstance(statement, cst.ClassDef):
            info = class_info(statement, frame.run.qualname + ".", self.imports, self.globals)
            frame.env[statement.name.value] = ClassValue(info)

    def exec_small(self, small: cst.BaseSmallStatement, frame: Frame) -> None:
        if isinstance(small, cst.Assign):
            target = small.targets[0].target if len(small.targets) == 1 else None
            self.pending_name = target.value if isinstance(target, cst.Name) else None
            value = self.eval(small.value, frame)
            self.pending_name = None
            for target in small.targets:
                self.assign(target.target, value, frame, small)
        elif isinstance(small, cst.AnnAssign):
            if small.value is not None:
                value = self.eval(small.value, frame)
                declared = annotation_value(self.imports, small.annotation, self._sizes(frame))
                if declared is not None and isinstance(value, TensorValue):
                    value = base.check_annotation(self, value, declared, small, frame, f"`{_target_text(small.target)}`")
                self.assign(small.target, value, frame, small)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target, frame)
            right = self.eval(small.value, frame)
            operator = _AUG_OPERATORS.get(type(small.operator))
            value = dispatch.binary(self, operator, current, right, small, frame) if operator else UNKNOWN
            self.assign(small.target, value, frame, small)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, frame)
        elif isinstance(small, cst.Return):
            value = self.eval(small.value, frame) if small.value is not None else ConstValue(None)
            function = frame.run.node
            # Inlined, a wrong return is the echo of wrong arguments, reported at the call.
            if isinstance(value, TensorValue) and function is not None and function.returns is not None and not frame.run.inlined:
                declared = annotation_value(self.imports, function.returns, self._sizes(frame))
                if isinstance(declared, TensorValue):
                    base.check_annotation(self, value, declared, small, frame, f"the value returned by `{function.name.value}`")
            frame.returns.append(value)
            frame.terminated = True
        elif isinstance(small, cst.Assert):
            self._exec_assert(small, frame)
        elif isinstance(small, cst.Raise):
            frame.terminated = True
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            from shapecheck.engine.interpreter.imports import bindings_of

            for local, qualified in bindings_of(small):
                frame.env[local] = QualifiedValue(qualified)

    def _exec_assert(self, node: cst.Assert, frame: Frame) -> None:
        divisibility = self._divisibility_test(node.test, frame, expect_zero=True)
        if divisibility is not None:
            dividend, divisor, holds = divisibility
            self.facts.divisibility.append(Divisibility(node, dividend, divisor, holds, frame.run))
            self._assume_divisible(dividend, divisor, frame)
        self.eval(node.test, frame)

    def _assume_divisible(self, dividend: Value, divisor: Value, frame: Frame) -> None:
        a, b = dim_of(dividend), dim_of(divisor)
        if a is not None and b is not None:
            frame.assumptions.add_divisible(a, b)

    def _divisibility_test(
        self, test: cst.BaseExpression, frame: Frame, expect_zero: bool
    ) -> tuple[Value, Value, bool | None] | None:
        """``a % b == 0`` (expect_zero) or ``a % b != 0`` / ``a % b`` (not expect_zero): the operands."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            if not expect_zero and isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo):
                return self._modulo_operands(test, frame)
            return None
        comparison = test.comparisons[0]
        wanted = cst.Equal if expect_zero else cst.NotEqual
        if not isinstance(comparison.operator, wanted):
            return None
        left, right = test.left, comparison.comparator
        if isinstance(right, cst.BinaryOperation) and isinstance(right.operator, cst.Modulo):
            left, right = right, left
        if not (isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo)):
            return None
        if not (isinstance(right, cst.Integer) and right.evaluated_value == 0):
            return None
        return self._modulo_operands(left, frame)

    def _modulo_operands(self, node: cst.BinaryOperation, frame: Frame) -> tuple[Value, Value, bool | None]:
        dividend = self.eval(node.left, frame)
        divisor = self.eval(node.right, frame)
        holds: bool | None = None
        a, b = dim_of(dividend), dim_of(divisor)
        if a is not None and b is not None:
            a, b = frame.assumptions.simplify(a), frame.assumptions.simplify(b)
            if a.is_const and b.is_const and b.value:
                holds = a.value % b.value == 0
        return dividend, divisor, holds

    def _exec_if(self, node: cst.If, frame: Frame) -> None:
        raising = _block_raises(node.body.body)
        divisibility = self._divisibility_test(node.test, frame, expect_zero=False)
        if divisibility is not None and raising:
            dividend, divisor, holds = divisibility
            self.facts.divisibility.append(Divisibility(node, dividend, divisor, holds, frame.run))
        self.eval(node.test, frame)
        then_frame = frame.fork()
        self._snapshot_run(then_frame, node.body.body)
        else_frame = frame.fork()
        if node.orelse is not None:
            if isinstance(node.orelse, cst.If):
                self._exec_if(node.orelse, else_frame)
            else:
                self._snapshot_run(else_frame, node.orelse.body.body)
        if divisibility is not None and raising:
            self._assume_divisible(divisibility[0], divisibility[1], else_frame)
        self._merge(frame, [then_frame, else_frame])

    def _snapshot_run(self, frame: Frame, body: Sequence[cst.BaseStatement]) -> None:
        self.exec_block(body, frame)

    def _merge(self, frame: Frame, branches: list[Frame]) -> None:
        live = [branch for branch in branches if not branch.terminated]
        if not live:
            frame.terminated = True
            return
        names: set[str] = set()
        for branch in live:
            names.update(branch.env)
        merged: dict[str, Value] = {}
        for name in names:
            values = [branch.env.get(name, UNKNOWN) for branch in live]
            value = values[0]
            for other in values[1:]:
                value = join_values(value, other)
            merged[name] = value
        frame.env.clear()
        frame.env.update(merged)
        if len(live) == 1:
            frame.assumptions = live[0].assumptions

    def _exec_loop(self, node: cst.For | cst.While, frame: Frame) -> None:
        body_frame = frame.fork()
        if isinstance(node, cst.For):
            iterable = self.eval(node.iter, frame)
            self.assign(node.target, base.iteration_element(iterable), body_frame, node)
        else:
            self.eval(node.test, frame)
        self.exec_block(node.body.body, body_frame)
        body_frame.terminated = False
        self._merge(frame, [frame.fork(), body_frame])
        if node.orelse is not None:
            self.exec_block(node.orelse.body.body, frame)

    def _exec_try(self, node: cst.Try, frame: Frame) -> None:
        self.exec_block(node.body.body, frame)
        if frame.terminated:
            frame.terminated = False
        for handler in node.handlers:
            handler_frame = frame.fork()
            self.exec_block(handler.body.body, handler_frame)
        if node.orelse is not None:
            self.exec_block(node.orelse.body.body, frame)
        if node.finalbody is not None:
            self.exec_block(node.finalbody.body.body, frame)

    # ------------------------------------------------------------------ assignment

    def assign(self, target: cst.BaseExpression, value: Value, frame: Frame, statement: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            frame.env[target.value] = value
            frame.run.assignments.append(Assignment(statement, target.value, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, ShapeValue):
                value = self._name_unknown_sizes(target, value, frame)
            items = base.unpack(value, len(target.elements))
            starred = [i for i, e in enumerate(target.elements) if isinstance(e, cst.StarredElement)]
            if starred:
                for element in target.elements:
                    inner = element.value
                    self.assign(inner, UNKNOWN, frame, statement)
                return
            for element, item in zip(target.elements, items):
                self.assign(element.value, item, frame, statement)
        elif isinstance(target, cst.Attribute):
            owner = self.eval(target.value, frame)
            if isinstance(owner, ObjectValue):
                name = target.attr.value
                dispatch.label_module(value, f"{_target_text(target)}")
                owner.attrs[name] = value
                self.facts.attribute_assignments.append(
                    AttributeAssignment(owner.cls, name, statement, value, frame.run)
                )
                frame.run.assignments.append(Assignment(statement, _target_text(target), value))
        elif isinstance(target, cst.Subscript):
            dispatch.subscript_assign(self, target, value, frame, statement)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN, frame, statement)

    def _name_unknown_sizes(self, target: cst.Tuple | cst.List, value: ShapeValue, frame: Frame) -> ShapeValue:
        """``B, T, C = x.shape`` on a tensor of unknown shape: the rank is 3 and the sizes are named
        B, T and C (the tensor itself is refined to ``(B, T, C)``)."""
        elements = target.elements
        if any(isinstance(e, cst.StarredElement) or not isinstance(e.value, cst.Name) for e in elements):
            return value
        shape = value.shape
        count = len(elements)
        if shape is not None and (not shape.variadic or len(shape.dims) > count):
            return value
        known = shape.dims if shape is not None else ()
        named = []
        for element in elements[: count - len(known)]:
            name = element.value.value  # type: ignore[union-attr]
            named.append(Dim.sym(self.fresh_name("size") if name == "_" else name))
        dims = tuple(named) + tuple(known)
        refined = Shape(dims)
        source = value.source
        if isinstance(source, cst.Name):
            current = self.lookup(source.value, frame)
            if isinstance(current, TensorValue):
                frame.env[source.value] = current.with_shape(refined)
            elif isinstance(current, Opaque) or current is UNKNOWN:
                frame.env[source.value] = TensorValue(refined, None, (), source)
        return ShapeValue(refined, source)


_AUG_OPERATORS = {
    cst.AddAssign: "add",
    cst.SubtractAssign: "sub",
    cst.MultiplyAssign: "mul",
    cst.DivideAssign: "truediv",
    cst.FloorDivideAssign: "floordiv",
    cst.ModuloAssign: "mod",
    cst.PowerAssign: "pow",
    cst.MatrixMultiplyAssign: "matmul",
    cst.BitAndAssign: "and",
    cst.BitOrAssign: "or",
}


def _block_raises(statements: Sequence[cst.BaseStatement]) -> bool:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, cst.Raise) for small in statement.body):
                return True
    return False


def _target_text(target: cst.BaseExpression) -> str:
    return dotted_name(target) or "<target>"
