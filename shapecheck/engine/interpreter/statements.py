"""Statements: the part of the interpreter that executes a function body.

Assignments (with tuple unpacking and ``B, T, C = x.shape`` naming), branches and loops (frames
forked and joined), ``try`` / ``with``, returns checked against annotations, and the divisibility
facts of ``assert d % h == 0`` and ``if d % h: raise``. Mixed into ``Interpreter``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import libcst as cst

from shapecheck.engine.domain import modes
from shapecheck.engine.domain.joins import join_all, join_values
from shapecheck.engine.domain.literals import defaults_to_none
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ClassValue,
    ConstValue,
    EitherSizes,
    FunctionValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    dim_of,
    is_module_value,
    known_sizes,
)
from shapecheck.engine.domain.tags import ParameterTag, PathShapeTag, Repeated
from shapecheck.engine.facts.records import (
    Assignment,
    AttributeAssignment,
    Divisibility,
)
from shapecheck.engine.interpreter.annotation_values import annotation_value
from shapecheck.engine.interpreter.classes import class_info
from shapecheck.engine.interpreter.expressions import truth_of
from shapecheck.engine.interpreter.imports import dotted_name
from shapecheck.engine.ops.training import grad_switch
from shapecheck.engine.ops import base, dispatch
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.shapes import Shape, is_anonymous

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


def _modules_assigned(owner: ObjectValue | None, before: dict[str, Value]) -> dict[str, Value]:
    """The modules a branch put on ``self`` (attributes that changed to a module value)."""
    if owner is None:
        return {}
    return {
        name: value for name, value in owner.attrs.items()
        if before.get(name) is not value and is_module_value(value)
    }


def _restore_sizes(owner: ObjectValue | None, before: dict[str, Value]) -> None:
    """The other path of an ``if`` starts from the sizes ``self`` held before it: a size one branch
    rebinds (``if self.num_heads == 0: self.num_heads = 1``; a size is a number or a parameter the
    engine cannot see, which it reads as one) is not what the other path reads, and
    after the ``if`` an attribute holds what the path analysed last left there (the fall-through of
    an ``if`` without ``else``), as an attribute both branches write holds the ``else``'s value."""
    if owner is None:
        return
    for name, value in list(owner.attrs.items()):
        old = before.get(name)
        if old is not value and isinstance(old, (IntValue, Opaque)) and isinstance(value, (IntValue, Opaque)):
            owner.attrs[name] = old


def _keep_either_module(owner: ObjectValue | None, then_modules: dict[str, Value], then_frame: Frame, else_frame: Frame) -> None:
    """``if config.sparse: self.attn = SparseAttention(c)`` / ``else: self.attn = FullAttention(c)``:
    both branches write the same attribute, so after the ``if`` it holds one of the two modules,
    not the one the last branch analysed wrote. Two layers of one kind (``nn.Linear(d, 2 * d)`` or
    ``nn.Linear(d, 3 * d)``) and other attributes keep the last value written, as before: the code
    after the ``if`` is written for one configuration, and joined sizes would hide it."""
    if owner is None or then_frame.terminated or else_frame.terminated:
        return
    for name, module in then_modules.items():
        current = owner.attrs.get(name)
        if current is module or not is_module_value(current):
            continue
        if isinstance(module, ModuleValue) and isinstance(current, ModuleValue) and module.kind == current.kind:
            continue
        owner.attrs[name] = join_values(module, current)


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
            grad = frame.grad
            for item in statement.items:
                switch = grad_switch(self, item.item, frame)
                if switch is not None:
                    grad = switch
                value = self.eval(item.item, frame)
                if item.asname is not None:
                    self.assign(item.asname.name, value, frame, item)
            outside, frame.grad = frame.grad, grad
            self.exec_block(statement.body.body, frame)
            frame.grad = outside
        elif isinstance(statement, cst.Try):
            self._exec_try(statement, frame)
        elif isinstance(statement, cst.FunctionDef):
            # A nested function sees its enclosing scope (``def maybe(fn): def inner(x): ... fn(x)``).
            frame.env[statement.name.value] = FunctionValue(
                statement, frame.run.qualname + "." + statement.name.value, closure=frame.env
            )
        elif isinstance(statement, cst.ClassDef):
            info = class_info(statement, frame.run.qualname + ".", self.imports, self.globals)
            frame.env[statement.name.value] = ClassValue(info)

    def exec_small(self, small: cst.BaseSmallStatement, frame: Frame) -> None:
        names = self.used_names.get(small)
        if names is None:
            names = self.used_names[small] = used_unconditionally(small)
        used = [frame.env[name] for name in names if name in frame.env]
        self._exec_small(small, frame)
        for value in used:
            if self.maybe_none(value, frame):
                # ``mask.reshape(...)`` ran on every path through this statement: from here on the
                # ``T | None = None`` parameter is not None (it would have raised), nor what was
                # computed from it.
                frame.not_none.add(id(value.node))

    def _exec_small(self, small: cst.BaseSmallStatement, frame: Frame) -> None:
        kind = type(small)  # exact classes: libcst's are final, and isinstance is slow on them
        if kind is cst.Assign:
            target = small.targets[0].target if len(small.targets) == 1 else None  # type: ignore[attr-defined]
            self.pending_name = target.value if type(target) is cst.Name else None  # type: ignore[union-attr]
            given = _given_back(target, small.value, frame)
            value = self.eval(small.value, frame)
            self.pending_name = None
            if given and isinstance(value, TensorValue) and value.shape is None:
                value = TupleValue(tuple(_updated(self, tensor) for tensor in given))
            for target in small.targets:
                self.assign(target.target, value, frame, small)
        elif kind is cst.AnnAssign:
            if small.value is not None:
                value = self.eval(small.value, frame)
                declared = annotation_value(self.imports, small.annotation, self._sizes(frame))
                if declared is not None and isinstance(value, TensorValue):
                    value = base.check_annotation(self, value, declared, small, frame, f"`{_target_text(small.target)}`")
                self.assign(small.target, value, frame, small)
        elif kind is cst.AugAssign:
            current = self.eval(small.target, frame)
            right = self.eval(small.value, frame)
            operator = _AUG_OPERATORS.get(type(small.operator))
            value = dispatch.binary(self, operator, current, right, small, frame) if operator else UNKNOWN
            self.assign(small.target, value, frame, small)
        elif kind is cst.Expr:
            if not self._grow_list(small.value, frame):
                self.eval(small.value, frame)
        elif kind is cst.Return:
            value = self.eval(small.value, frame) if small.value is not None else ConstValue(None)
            function = frame.run.node
            # Inlined, a wrong return is the echo of wrong arguments, reported at the call.
            if isinstance(value, TensorValue) and function is not None and function.returns is not None and not frame.run.inlined:
                declared = annotation_value(self.imports, function.returns, self._sizes(frame))
                if isinstance(declared, TensorValue):
                    base.check_annotation(self, value, declared, small, frame, f"the value returned by `{function.name.value}`")
            frame.returns.append(value)
            frame.exits.append(dict(frame.modes))
            frame.terminated = True
        elif isinstance(small, cst.Del):
            targets = small.target.elements if isinstance(small.target, (cst.Tuple, cst.List)) else [small.target]
            for target in targets:
                item = target.value if isinstance(target, cst.Element) else target
                if isinstance(item, cst.Subscript):
                    dispatch.subscript_delete(self, item, frame)
        elif isinstance(small, cst.Assert):
            self._exec_assert(small, frame)
        elif isinstance(small, cst.Raise):
            frame.terminated = True
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            from shapecheck.engine.interpreter.imports import bindings_of

            for local, qualified in bindings_of(small):
                frame.env[local] = self.imported_value(qualified)

    def _exec_assert(self, node: cst.Assert, frame: Frame) -> None:
        divisibility = self._divisibility_test(node.test, frame, expect_zero=True)
        if divisibility is not None:
            dividend, divisor, holds = divisibility
            self.facts.divisibility.append(Divisibility(node, dividend, divisor, holds, frame.run))
            self._assume_divisible(dividend, divisor, frame)
        else:
            self._assume_equal(self._equality_test(node.test, frame, cst.Equal), frame)
            self._refine_to_asserted_shape(node.test, frame, cst.Equal)
        self.eval(node.test, frame)

    def _equality_test(self, test: cst.BaseExpression, frame: Frame, operator: type) -> list[tuple[Dim, Dim]]:
        """The size equalities ``a == b`` (or, with ``operator`` NotEqual, the ones ``a != b``
        denies) of a test: ``b == 1``, ``x.size(0) == 1``, ``q.shape == k.shape``."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return []
        comparison = test.comparisons[0]
        if not isinstance(comparison.operator, operator):
            return []
        left, right = self.eval(test.left, frame), self.eval(comparison.comparator, frame)
        a, b = dim_of(left), dim_of(right)
        if a is not None and b is not None:
            return [(a, b)]
        dims = [_sizes_of(value) for value in (left, right)]
        if dims[0] is not None and dims[1] is not None and len(dims[0]) == len(dims[1]):
            return list(zip(dims[0], dims[1]))
        return []

    def _refine_to_asserted_shape(self, test: cst.BaseExpression, frame: Frame, operator: type) -> None:
        """``assert list(attn.size()) == [bsz * num_heads, tgt_len, head_dim]`` (or ``if
        attn.size() != (...): raise``) of a tensor whose shape the engine lost (an unseen rotary
        module upstream): past the test, the tensor named has the sizes written. A known size that
        differs from the one written is left alone (the test then fails, or the engine is wrong);
        an unnamed one (``_``) takes the size written."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return
        comparison = test.comparisons[0]
        if not isinstance(comparison.operator, operator):
            return
        for measured, written in ((test.left, comparison.comparator), (comparison.comparator, test.left)):
            if isinstance(measured, cst.Call) and _called_name(measured) in ("list", "tuple") and len(measured.args) == 1:
                measured = measured.args[0].value
            size = self.eval(measured, frame)
            if not isinstance(size, ShapeValue) or size.dropped or size.extra or not isinstance(size.source, cst.Name):
                continue
            if not isinstance(written, (cst.Tuple, cst.List)):
                continue
            dims = _sizes_of(self.eval(written, frame))
            name = size.source.value
            tensor = frame.env.get(name)
            if dims is None or len(dims) < 2:
                continue
            if tensor is UNKNOWN or isinstance(tensor, Opaque):
                # what an unseen callee gave back, or a parameter: a tensor, since it has these sizes
                frame.env[name] = TensorValue(Shape(dims), None, (), size.source)
                return
            if not isinstance(tensor, TensorValue) or not _fits(tensor.shape, dims, frame):
                continue
            frame.env[name] = tensor.with_shape(Shape(dims))
            return

    def _assume_equal(self, pairs: list[tuple[Dim, Dim]], frame: Frame) -> None:
        for a, b in pairs:
            if not (a.is_const and b.is_const):
                frame.assumptions.add_equal(a, b)

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
        # ``if x.size(0) != 1: raise ...``: past the ``if``, the sizes are equal.
        equalities = self._equality_test(node.test, frame, cst.NotEqual) if raising and divisibility is None else []
        test = self.eval(node.test, frame)
        known = self._none_test(node.test, frame)
        if frame.run.inlined and truth_of(test) is not None and not self._tests_optional_attribute(node.test, frame):
            # Inlined with the caller's values (``if exists(arg): return arg``): only the branch that
            # runs is followed. Standalone runs keep both branches, whatever the defaults say. A layer
            # built on one path only (``self.stem``, None on the other) is no caller's value: both
            # branches, as ``_none_test`` keeps them.
            if truth_of(test):
                self.exec_block(node.body.body, frame)
            elif isinstance(node.orelse, cst.If):
                self._exec_if(node.orelse, frame)
            elif node.orelse is not None:
                self.exec_block(node.orelse.body.body, frame)
            return
        if known is not None:
            # ``if targets is None:`` with a tensor passed: only the branch that runs.
            if known:
                self._snapshot_run(frame, node.body.body)
            elif isinstance(node.orelse, cst.If):
                self._exec_if(node.orelse, frame)
            elif node.orelse is not None:
                self._snapshot_run(frame, node.orelse.body.body)
            return
        then_frame = frame.fork()
        owner = frame.self_value if isinstance(frame.self_value, ObjectValue) else None
        before = dict(owner.attrs) if owner is not None else {}
        self._snapshot_run(then_frame, node.body.body)
        then_modules = _modules_assigned(owner, before)
        _restore_sizes(owner, before)
        else_frame = frame.fork()
        if node.orelse is not None:
            if isinstance(node.orelse, cst.If):
                self._exec_if(node.orelse, else_frame)
            else:
                self._snapshot_run(else_frame, node.orelse.body.body)
        _keep_either_module(owner, then_modules, then_frame, else_frame)
        if divisibility is not None and raising:
            self._assume_divisible(divisibility[0], divisibility[1], else_frame)
        self._assume_equal(equalities, else_frame)
        if raising and divisibility is None:
            self._refine_to_asserted_shape(node.test, else_frame, cst.NotEqual)
        self._merge(frame, [then_frame, else_frame], node)

    def _tests_optional_attribute(self, test: cst.BaseExpression, frame: Frame) -> bool:
        """``self.stem is None`` / ``is not None`` where ``self.stem`` is a layer built on one path of
        the constructor and None on another (``optional_attributes``)."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return False
        comparison = test.comparisons[0]
        if not isinstance(comparison.operator, (cst.Is, cst.IsNot)) or not isinstance(test.left, cst.Attribute):
            return False
        if not (isinstance(comparison.comparator, cst.Name) and comparison.comparator.value == "None"):
            return False
        owner = self.eval(test.left.value, frame)
        return (id(owner), test.left.attr.value) in self.optional_attributes

    def _none_test(self, test: cst.BaseExpression, frame: Frame) -> bool | None:
        """The value of ``x is None`` / ``x is not None`` when x is certainly not None (a tensor or a
        module); None when it cannot be told (a parameter, a default, anything else)."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        comparison = test.comparisons[0]
        if not isinstance(comparison.operator, (cst.Is, cst.IsNot)):
            return None
        if not (isinstance(comparison.comparator, cst.Name) and comparison.comparator.value == "None"):
            return None
        value = self.eval(test.left, frame) if isinstance(test.left, (cst.Name, cst.Attribute)) else None
        if not isinstance(value, (TensorValue, ObjectValue, ModuleValue)):
            return None
        if isinstance(test.left, cst.Attribute):
            owner = self.eval(test.left.value, frame)
            if (id(owner), test.left.attr.value) in self.optional_attributes:
                return None  # a layer built on one path only (``self.qkv = ... if fused else None``)
        if self.maybe_none(value, frame):
            return None  # ``mask: Tensor | None = None`` read standalone: callers may leave it out
        return isinstance(comparison.operator, cst.IsNot)

    def _snapshot_run(self, frame: Frame, body: Sequence[cst.BaseStatement]) -> None:
        self.exec_block(body, frame)

    def _merge(self, frame: Frame, branches: list[Frame], site: cst.CSTNode | None = None) -> None:
        """Join the branches' names into ``frame``. ``site``: the ``if`` whose body and ``else`` the
        two branches ran (values that differ by side are then kept per path where the join can)."""
        live = [branch for branch in branches if not branch.terminated]
        site = site if len(live) == 2 else None
        if not live:
            frame.terminated = True
            return
        names: set[str] = set()
        for branch in live:
            names.update(branch.env)
        merged: dict[str, Value] = {}
        for name in names:
            # A name one path never binds is unbound there: code that reads it after the branch runs
            # only on the paths that bound it (a read of an unbound name raises).
            values = [branch.env[name] for branch in live if name in branch.env]
            value = values[0]
            for other in values[1:]:
                value = join_values(value, other, site)
            value = _with_path_assumptions(value, [branch for branch in live if name in branch.env], values)
            if any(v is UNKNOWN for v in values) and any(v is given for v in values for given in frame.inputs):
                # ``if encoder_hidden_states is None: encoder_hidden_states = hidden_states`` where
                # the name holds a value the engine cannot see (what a caller passed): the other
                # input is not what the caller gave (a text context of another width).
                value = UNKNOWN
            merged[name] = self._filled_in(value, values)
            self._keep_shared_front_sizes(merged[name], values)
        frame.env.clear()
        frame.env.update(merged)
        frame.modes = live[0].modes if len(live) == 1 else modes.join(branch.modes for branch in live)
        frame.not_none = set.intersection(*(branch.not_none for branch in live))
        if len(live) == 1:
            frame.assumptions = live[0].assumptions

    def _keep_shared_front_sizes(self, merged: Value, values: list[Value]) -> None:
        """A size read off an axis of an input of unknown shape (``T = x.shape[1]``, ``front_sizes``)
        that every path's value has at that axis (``x`` on one path, ``x.float()`` on the other) is
        that axis's size after the merge too."""
        if not isinstance(merged, TensorValue) or any(merged is value for value in values):
            return
        for axis in range(4):
            if (id(merged), axis) in self.front_sizes:
                continue
            sizes = [self.front_sizes.get((id(value), axis)) for value in values]
            if any(entry is None or entry[0] is not value for entry, value in zip(sizes, values)):
                continue
            if all(entry[1] == sizes[0][1] for entry in sizes):  # type: ignore[index]
                self.front_sizes[(id(merged), axis)] = (merged, sizes[0][1])  # type: ignore[index]

    def _filled_in(self, merged: Value, values: list[Value]) -> Value:
        """``if inputs_embeds is None: inputs_embeds = self.embed_tokens(input_ids)``: a ``T | None =
        None`` parameter the function fills in where the caller left it out. (Unannotated, it could
        be anything: a filled-in ``text`` or ``mask`` of another meaning gave false findings.) The caller's tensor stands for what the fill-in computes, so the merge
        has the fill-in's shape (its tags and dtype are the join's)."""
        if not isinstance(merged, TensorValue) or merged.shape is not None:
            return merged
        given = [value for value in values if isinstance(value, TensorValue) and self.maybe_none(value) and value.shape is None]
        filled = [value for value in values if isinstance(value, TensorValue) and not any(value is g for g in given)]
        if not given or not filled or any(value.shape is None for value in filled):
            return merged
        shape = filled[0]
        for other in filled[1:]:
            shape = join_values(shape, other)
        if not isinstance(shape, TensorValue) or shape.shape is None:
            return merged
        # A 1 in the fill-in (``self.position_ids[:, :t]`` is (1, t)) may be a batch the caller's
        # tensor has: an unnamed size there, as a broadcast would give.
        dims = tuple(fresh_anonymous() if d.is_const and d.value == 1 else d for d in shape.shape.dims)
        return merged.with_shape(Shape(dims, shape.shape.variadic))

    def _exec_loop(self, node: cst.For | cst.While, frame: Frame) -> None:
        body_frame = frame.fork()
        # The body runs once, from the symbolic state at the loop's head (domain.modes).
        head, entry = modes.LoopHead(node), frame.modes
        body_frame.modes = modes.enter_loop(entry, head)
        body_frame.in_loop = True
        calls_before, exits_before = len(self.facts.model_calls), len(frame.exits)
        if isinstance(node, cst.For):
            iterable = self.eval(node.iter, frame)
            items = base.known_items(iterable)
            if items is not None and len(items) <= MAX_UNROLLED and not _jumps(node.body.body):
                self._unroll(node, items, frame)
                return
            self.assign(node.target, base.iteration_element(iterable, self), body_frame, node)
        else:
            self.eval(node.test, frame)
        self.exec_block(node.body.body, body_frame)
        body_frame.terminated = False
        at_head = modes.loop_head(entry, body_frame.modes, head)
        for call in self.facts.model_calls[calls_before:]:
            call.modes = modes.resolve(call.modes, head, at_head.get(call.ident))
        for index in range(exits_before, len(frame.exits)):
            frame.exits[index] = modes.resolve_all(frame.exits[index], head, at_head)
        body_frame.modes = modes.resolve_all(body_frame.modes, head, at_head)
        self._merge(frame, [frame.fork(), body_frame])
        if node.orelse is not None:
            self.exec_block(node.orelse.body.body, frame)

    def _grow_list(self, expression: cst.BaseExpression, frame: Frame) -> bool:
        """``items.append(x)`` / ``items.extend(more)`` on a local list: the name then holds the
        items with ``x`` after them, or, in a loop body run once for every iteration, any number of
        items like them (a ``Repeated``: ``torch.cat(items)`` then joins however many there are)."""
        if not (
            isinstance(expression, cst.Call)
            and isinstance(expression.func, cst.Attribute)
            and isinstance(expression.func.value, cst.Name)
            and expression.func.attr.value in ("append", "extend")
            and len(expression.args) == 1
            and not expression.args[0].keyword
            and not expression.args[0].star
        ):
            return False
        name = expression.func.value.value
        current = frame.env.get(name)
        if not isinstance(current, (TupleValue, Repeated)):
            return False
        added = self.eval(expression.args[0].value, frame)
        if expression.func.attr.value == "append":
            new_items: tuple[Value, ...] | None = (added,)
        else:
            new_items = added.items if isinstance(added, TupleValue) else None
            if new_items is None and isinstance(added, Repeated):
                current = _repeated(current, (added.element,))
                new_items = ()
        repeated = isinstance(current, Repeated) or frame.in_loop
        if new_items is None or repeated and not all(isinstance(item, TensorValue) for item in new_items):
            # Layers built in a loop differ by iteration (``in_d = dim_in if i == 0 else hidden``):
            # "every item like this one" would chain the wrong sizes. Tensors collected in a loop
            # (outputs, position tables) are alike.
            frame.env[name] = UNKNOWN
        elif repeated:
            frame.env[name] = _repeated(current, new_items)
        else:
            frame.env[name] = TupleValue(current.items + new_items)
        return True

    def _unroll(self, node: cst.For, items: tuple[Value, ...], frame: Frame) -> None:
        """``for arg in (a, b, c):`` over known items runs the body once per item, in order."""
        for item in items:
            if frame.terminated:
                return
            self.assign(node.target, item, frame, node)
            self.exec_block(node.body.body, frame)
        if node.orelse is not None and not frame.terminated:
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
            before, exits_before = dict(frame.modes), len(frame.exits)
            self.exec_block(node.finalbody.body.body, frame)
            # ``finally`` runs on the way out too: its mode switches apply to the returns above.
            switched = {key: value for key, value in frame.modes.items() if before.get(key) != value}
            for index in range(exits_before):
                frame.exits[index] = {**frame.exits[index], **switched}

    # ------------------------------------------------------------------ assignment

    def assign(self, target: cst.BaseExpression, value: Value, frame: Frame, statement: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            frame.env[target.value] = value
            frame.run.assignments.append(Assignment(statement, target.value, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, EitherSizes):
                value = self._name_unknown_sizes(target, ShapeValue(None), frame, value.options)
            elif isinstance(value, ShapeValue):
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
                current = owner.attrs.get(name)
                if _optional(current, value) or _optional(value, current):
                    self.optional_attributes.add((id(owner), name))
                if not _optional(current, value):
                    owner.attrs[name] = value
                self.facts.attribute_assignments.append(
                    AttributeAssignment(owner.cls, name, statement, value, frame.run)
                )
                frame.run.assignments.append(Assignment(statement, _target_text(target), value))
            elif isinstance(owner, ModuleValue):
                self._tie_weight(target, owner, value, frame, statement)
        elif isinstance(target, cst.Subscript):
            dispatch.subscript_assign(self, target, value, frame, statement)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN, frame, statement)

    def _tie_weight(self, target: cst.Attribute, module: ModuleValue, value: Value, frame: Frame, statement: cst.CSTNode) -> None:
        """``self.k_proj.weight = self.q_proj.weight`` (or ``lm_head.weight = wte.weight``): the two
        layers now compute with one parameter, so the layer is rebound as that parameter's module
        (same configuration, the other's identity)."""
        parameter = value.tag(ParameterTag) if isinstance(value, TensorValue) else None
        if target.attr.value != "weight" or parameter is None or not isinstance(parameter.ident, ModuleIdent):
            return
        if parameter.ident is module.ident or not isinstance(target.value, (cst.Name, cst.Attribute)):
            return
        tied = ModuleValue(module.kind, module.params, parameter.ident, module.node, module.items, module.named, module.repeated)
        self.assign(target.value, tied, frame, statement)

    def _name_unknown_sizes(
        self, target: cst.Tuple | cst.List, value: ShapeValue, frame: Frame, options: tuple[ShapeValue, ...] = ()
    ) -> ShapeValue:
        """``B, T, C = x.shape`` on a tensor of unknown shape: the rank is 3 and the sizes are named
        B, T and C (the tensor itself is refined to ``(B, T, C)``). ``options``: the sizes of one
        input or another by path (``EitherSizes``), each refined on its own path."""
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
            named.append(Dim.sym(self.fresh_name("size")) if name == "_" else self.size_named(name, frame))
        dims = tuple(named) + tuple(known)
        refined = Shape(dims)
        source = value.source
        if isinstance(source, cst.Name) and not value.extra:
            self._refine_source(source, value.dropped, dims, frame)
        for option in (*options, *value.also):
            # ``input_shape`` of ``input_ids`` on one path, of ``inputs_embeds`` on the other: each
            # input had these sizes on its path, and was None on the others (a parameter that
            # defaults to None, given one or the other).
            if isinstance(option.source, cst.Name) and _defaults_to_none(frame.run.node, option.source.value):
                self._refine_source(option.source, option.dropped, dims, frame)
        return ShapeValue(refined, source)

    def _refine_source(self, source: cst.Name, dropped: int, dims: tuple[Dim, ...], frame: Frame) -> None:
        """``batch, seq = x.size()[:-1]``: x has these dims, then the sliced-off dims (unnamed)."""
        whole = Shape(dims + tuple(fresh_anonymous() for _ in range(dropped)))
        current = self.lookup(source.value, frame)
        if isinstance(current, TensorValue):
            frame.env[source.value] = current.with_shape(whole)
        elif isinstance(current, Opaque) or current is UNKNOWN:
            frame.env[source.value] = TensorValue(whole, None, (), source)


def _defaults_to_none(function: cst.FunctionDef | None, name: str) -> bool:
    """``name`` is a parameter of ``function`` whose default is None (never at module level,
    where the run has no function)."""
    if not isinstance(function, cst.FunctionDef):
        return False
    params = function.params
    return any(
        param.name.value == name and defaults_to_none(param)
        for param in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _given_back(target: cst.BaseExpression | None, value: cst.BaseExpression, frame: Frame) -> list[TensorValue]:
    """``k, v = cache.update(k, v, layer)``: the tensors a call is given as its first arguments and
    whose names its result is unpacked into, in order (else empty)."""
    if type(target) not in (cst.Tuple, cst.List) or type(value) is not cst.Call:
        return []
    names = [element.value.value for element in target.elements if type(element.value) is cst.Name]  # type: ignore[union-attr]
    if len(names) != len(target.elements) or len(value.args) < len(names):
        return []
    given = []
    for name, arg in zip(names, value.args):
        tensor = frame.env.get(name)
        if arg.keyword is not None or arg.star or not (isinstance(arg.value, cst.Name) and arg.value.value == name):
            return []
        if not isinstance(tensor, TensorValue):
            return []
        given.append(tensor)
    return given


def _updated(interp: "Interpreter", tensor: TensorValue) -> TensorValue:
    """What an unseen callee gives back for ``tensor`` under its own name (a key / value cache
    appending past positions): the same kind of tensor (its provenance), rank and feature width;
    its other sizes may have changed, so they are made up (a tensor known only by its trailing
    sizes keeps the last; one of unknown shape stays so). Heads laid out as ``(b, h, s, d)`` with
    a presumed sequence length ``s`` (``Interpreter.sequence_sizes``) come back as keys and values
    of the same batch and heads, ``(b, h, s', d)``, with ``s'`` another sequence length: what a
    cache appends to is the sequence."""
    if tensor.shape is None or not tensor.shape.dims:
        return base.same_values(tensor, None)
    dims: tuple[Dim, ...] = tensor.shape.dims
    if tensor.shape.variadic:
        # Known only by its trailing sizes: the feature width is still the last of them.
        return base.same_values(tensor, Shape(dims[-1:], variadic=True))
    if len(dims) >= 3 and interp.is_sequence_length(dims[-2]):
        length = Dim.sym(interp.fresh_name("kv_len", use_target=False))
        interp.sequence_sizes.add(length.name)  # type: ignore[arg-type]
        return base.same_values(tensor, Shape(dims[:-2] + (length,) + dims[-1:]))
    return base.same_values(tensor, Shape(tuple(fresh_anonymous() for _ in dims[:-1]) + dims[-1:]))


def _called_name(node: cst.Call) -> str | None:
    return node.func.value if isinstance(node.func, cst.Name) else None


def _fits(shape: Shape | None, written: tuple[Dim, ...], frame: Frame) -> bool:
    """The sizes known of a tensor (``(*, a, b)`` of unknown rank: the last ones) are the sizes
    written, each unnamed or provably equal; some are still to learn."""
    if shape is None:
        return True
    known = shape.dims
    if len(known) > len(written) or (not shape.variadic and len(known) != len(written)):
        return False
    pairs = list(zip(known, written[len(written) - len(known) :]))
    if not all(is_anonymous(k) or equal(k, w, frame.assumptions) is Truth.TRUE for k, w in pairs):
        return False
    return shape.variadic or any(is_anonymous(k) and not is_anonymous(w) for k, w in pairs)


def _sizes_of(value: Value) -> tuple[Dim, ...] | None:
    """The dims of a ``x.shape`` or of a tuple of sizes, when its rank is known."""
    if isinstance(value, ShapeValue):
        shape = value.shape
        return shape.dims if shape is not None and not shape.variadic else None
    if isinstance(value, TupleValue):
        dims = tuple(dim_of(item) for item in value.items)
        return dims if all(d is not None for d in dims) else None  # type: ignore[return-value]
    return None


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


MAX_UNROLLED = 8


def _jumps(statements: Sequence[cst.BaseStatement]) -> bool:
    """Whether a loop body holds a ``break`` or ``continue`` of its own (not of an inner loop)."""
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, (cst.Break, cst.Continue)) for small in statement.body):
                return True
        elif isinstance(statement, (cst.If, cst.With, cst.Try)):
            blocks = [statement.body]
            orelse = getattr(statement, "orelse", None)
            while orelse is not None:
                blocks.append(orelse.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
            blocks += [h.body for h in getattr(statement, "handlers", ())]
            if any(isinstance(b, cst.IndentedBlock) and _jumps(b.body) for b in blocks):
                return True
    return False


def _block_raises(statements: Sequence[cst.BaseStatement]) -> bool:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, cst.Raise) for small in statement.body):
                return True
    return False


def _target_text(target: cst.BaseExpression) -> str:
    return dotted_name(target) or "<target>"


def _optional(current: Value | None, value: Value | None) -> bool:
    """``if n: self.pos_embed = nn.Parameter(...)`` / ``else: self.pos_embed = None``: an optional
    tensor or layer. Attributes are not forked per branch, so the ``None`` would erase the tensor
    that the code guarded by ``if self.pos_embed is not None:`` uses; it keeps the tensor instead,
    and the attribute is recorded as optional so that such tests keep both branches."""
    return isinstance(current, (TensorValue, ModuleValue)) and isinstance(value, ConstValue) and value.value is None


def _repeated(current: Value, added: tuple[Value, ...]) -> Value:
    """Any number of items, each like one of ``current``'s or of ``added``."""
    items = (current.element,) if isinstance(current, Repeated) else current.items  # type: ignore[union-attr]
    values = items + added
    return Repeated(join_all(values)) if values else current


def _surely_run_parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The sub-expressions that run every time ``node`` does. Only the test of a conditional
    expression and the left side of ``and`` / ``or`` surely run; a lambda's or a comprehension's
    body may never run. Kinds not listed here are not looked into (nothing proven there)."""
    parts = _SURELY_RUN.get(type(node))  # exact classes: libcst's are final, and isinstance is slow on them
    return parts(node) if parts is not None else []


#: For each kind of expression, the sub-expressions that run every time it does.
_SURELY_RUN: dict[type, Callable[[Any], list[cst.CSTNode]]] = {
    cst.Call: lambda node: [node.func, *(arg.value for arg in node.args)],
    cst.Attribute: lambda node: [node.value],
    cst.Subscript: lambda node: [
        node.value, *(element.slice.value for element in node.slice if type(element.slice) is cst.Index)
    ],
    cst.BinaryOperation: lambda node: [node.left, node.right],
    cst.UnaryOperation: lambda node: [node.expression],
    cst.Comparison: lambda node: [node.left, *(target.comparator for target in node.comparisons)],
    cst.Tuple: lambda node: [element.value for element in node.elements],
    cst.List: lambda node: [element.value for element in node.elements],
    cst.IfExp: lambda node: [node.test],
    cst.BooleanOperation: lambda node: [node.left],
}


#: The small statements with one value that runs whenever they do.
_VALUED_STATEMENTS = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr, cst.Return})


def used_unconditionally(small: cst.BaseSmallStatement) -> frozenset[str]:
    """The names whose attribute the statement reads on every path through it (``mask.reshape(...)``,
    ``x.shape``): the statement raises if one of them is None."""
    if type(small) not in _VALUED_STATEMENTS:
        return frozenset()
    found: set[str] = set()
    pending: list[cst.CSTNode] = [small.value] if small.value is not None else []  # type: ignore[attr-defined]
    while pending:
        node = pending.pop()
        if type(node) is cst.Attribute and type(node.value) is cst.Name:
            found.add(node.value.value)
        pending.extend(_surely_run_parts(node))
    return frozenset(found)


def _with_path_assumptions(merged: Value, branches: list[Frame], values: list[Value]) -> Value:
    """A shape kept for the path that built a tensor (``PathShapeTag``) holds under that path's
    assumptions (``assert query.shape[1] == key.shape[1]`` before the mask is built from one of them)."""
    if not isinstance(merged, TensorValue):
        return merged
    built = merged.tag(PathShapeTag)
    if built is None or built.assumptions is not None:
        return merged
    for branch, value in zip(branches, values):
        if isinstance(value, TensorValue) and value.shape == built.shape:
            tag = replace(built, assumptions=branch.assumptions)
            return replace(merged, tags=tuple(tag if t is built else t for t in merged.tags))
    return merged
