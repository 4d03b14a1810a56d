"""The abstract interpreter: walks function bodies and keeps an environment of abstract values.

It evaluates what can hold tensor code (methods of classes, module-level functions) once standalone,
and again inlined where a module of the file is called with known arguments, so that constructor
arguments and input shapes flow into callees. Everything it cannot follow becomes ``UNKNOWN``.

Work is bounded per file (``Budget``) so analysis stays linear in file size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from shapecheck.engine import ops
from shapecheck.engine.dims import Assumptions, Dim
from shapecheck.engine.shapes import Shape
from shapecheck.engine.facts import (
    Assignment,
    AttributeAssignment,
    Divisibility,
    FileFacts,
    FunctionRun,
)
from shapecheck.engine.imports import ImportTable, canonical, dotted_name
from shapecheck.engine.joins import join_values
from shapecheck.engine.literals import literal_value
from shapecheck.engine.tags import Repeated, SplitTuple
from shapecheck.engine.values import (
    UNKNOWN,
    BoundMethod,
    ClassInfo,
    ClassValue,
    ConstValue,
    FunctionValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    QualifiedValue,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    dim_of,
)

MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
#: Base classes from other files that are, by convention, nn.Module subclasses.
MODULE_BASE_SUFFIXES = ("Module", "PreTrainedModel", "Layer", "Block", "Attention", "Model")
MAX_INLINE_DEPTH = 6


class Budget:
    """Bounds the work of one file: a number of evaluation steps, proportional to its size."""

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def spend(self, n: int = 1) -> bool:
        self.steps -= n
        return self.steps > 0


@dataclass(eq=False)
class Frame:
    """One activation of a function: locals, assumptions, the run record, return values."""

    env: dict[str, Value]
    run: FunctionRun
    assumptions: Assumptions
    self_value: ObjectValue | None = None
    returns: list[Value] = field(default_factory=list)
    depth: int = 0
    terminated: bool = False  # a return / raise ended this path

    def fork(self) -> "Frame":
        return Frame(
            dict(self.env),
            self.run,
            self.assumptions.copy(),
            self.self_value,
            self.returns,
            self.depth,
            False,
        )


class Interpreter:
    """Evaluates one file's code. ``ops`` holds the per-op shape rules."""

    def __init__(self, facts: FileFacts, imports: ImportTable, budget: Budget) -> None:
        self.facts = facts
        self.imports = imports
        self.budget = budget
        self.globals: dict[str, Value] = {}
        self.call_stack: list[cst.FunctionDef] = []
        self.pending_name: str | None = None
        self._fresh_counter = 0
        self.depth_limit = MAX_INLINE_DEPTH
        self.nested_classes: set[str] = set()  # classes instantiated by another class of the file

    def fresh_name(self, hint: str, use_target: bool = True) -> str:
        """A symbol for a size nobody named: the assignment target when there is one (``T``)."""
        if use_target and self.pending_name is not None:
            name, self.pending_name = self.pending_name, None
            return name
        self._fresh_counter += 1
        return f"{hint}{self._fresh_counter}"

    # ------------------------------------------------------------------ module level

    def load_module(self, module: cst.Module) -> None:
        for local, qualified in self.imports.names.items():
            self.globals[local] = QualifiedValue(qualified)
        frame = self._module_frame()
        for statement in module.body:
            self._bind_toplevel(statement, frame, prefix="")

    def _module_frame(self) -> Frame:
        run = FunctionRun("<module>", None, None, False)  # type: ignore[arg-type]
        return Frame(self.globals, run, Assumptions())

    def _bind_toplevel(self, statement: cst.BaseStatement, frame: Frame, prefix: str) -> None:
        if isinstance(statement, cst.ClassDef):
            info = self._class_info(statement, prefix)
            self.facts.classes[info.qualname] = info
            self.globals[statement.name.value] = ClassValue(info)
        elif isinstance(statement, cst.FunctionDef):
            self.globals[statement.name.value] = FunctionValue(statement, prefix + statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                    try:
                        self.exec_small(small, frame)
                    except RecursionError:
                        pass
        elif isinstance(statement, cst.If) and _is_main_guard(statement.test):
            # ``if __name__ == "__main__":`` runs the models of the file on concrete inputs.
            self.exec_block(statement.body.body, frame)
        elif isinstance(statement, (cst.If, cst.Try)):
            for inner in _blocks_of(statement):
                for child in inner:
                    self._bind_toplevel(child, frame, prefix)

    def _class_info(self, node: cst.ClassDef, prefix: str) -> ClassInfo:
        bases = []
        for arg in node.bases:
            text = dotted_name(arg.value)
            if text is None:
                continue
            head, _, rest = text.partition(".")
            resolved = self.imports.resolve(head)
            if resolved is not None:
                text = canonical(resolved + ("." + rest if rest else ""))
            bases.append(text)
        methods = {}
        fields: dict[str, cst.CSTNode | None] = {}
        for statement in node.body.body:
            if isinstance(statement, cst.FunctionDef):
                methods[statement.name.value] = statement
            elif isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                        fields[small.target.value] = small.value
                    elif isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Name):
                                fields[target.target.value] = small.value
        is_dataclass = any(
            (dotted_name(d.decorator if not isinstance(d.decorator, cst.Call) else d.decorator.func) or "")
            .split(".")[-1]
            == "dataclass"
            for d in node.decorators
        )
        is_module = False
        for base in bases:
            if base in MODULE_BASES or base.startswith("torch.nn."):
                is_module = True
            elif base.split(".")[-1] in self.globals and isinstance(self.globals[base.split(".")[-1]], ClassValue):
                parent = self.globals[base.split(".")[-1]]
                is_module = is_module or parent.info.is_module  # type: ignore[union-attr]
            elif base.endswith(MODULE_BASE_SUFFIXES) and "forward" in methods:
                is_module = True
        if not is_module and "forward" in methods and bases:
            is_module = True
        return ClassInfo(
            name=node.name.value,
            qualname=prefix + node.name.value,
            node=node,
            bases=tuple(bases),
            methods=methods,
            is_module=is_module,
            is_dataclass=is_dataclass,
            fields=fields,
            docstring=node.get_docstring() or "",
        )

    # ------------------------------------------------------------------ functions

    def run_function(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        bindings: dict[str, Value],
        self_value: ObjectValue | None,
        depth: int,
        inlined: bool,
        assumptions: Assumptions | None = None,
        parent: FunctionRun | None = None,
        call_node: cst.CSTNode | None = None,
    ) -> Value:
        run = FunctionRun(qualname, node, cls, inlined, parent, call_node, instance=self_value)
        self.facts.runs.append(run)
        frame = Frame(
            dict(bindings),
            run,
            assumptions.copy() if assumptions is not None else Assumptions(),
            self_value,
            [],
            depth,
        )
        if self_value is not None and self_value.context is not None and assumptions is None:
            frame.assumptions = self_value.context.copy()
        self.call_stack.append(node)
        try:
            self.exec_block(_body_of(node), frame)
        except RecursionError:
            pass
        finally:
            self.call_stack.pop()
        if node.name.value == "__init__" and self_value is not None:
            self_value.context = frame.assumptions
        result = UNKNOWN
        if frame.returns:
            result = frame.returns[0]
            for other in frame.returns[1:]:
                result = join_values(result, other)
        run.returns = result
        return result

    def bind_parameters(
        self,
        node: cst.FunctionDef,
        args: Sequence[Value],
        kwargs: dict[str, Value],
        standalone: bool,
        skip_self: bool,
    ) -> dict[str, Value]:
        """Bind call arguments (or, standalone, defaults / annotations / named unknowns) to parameters."""
        params = node.params
        positional = list(params.posonly_params) + list(params.params)
        if skip_self and positional:
            positional = positional[1:]
        bindings: dict[str, Value] = {}
        is_init = node.name.value == "__init__"
        for index, param in enumerate(positional):
            name = param.name.value
            if index < len(args):
                bindings[name] = args[index]
            elif name in kwargs:
                bindings[name] = kwargs[name]
            else:
                bindings[name] = self._default_binding(param, standalone, is_init)
        for param in params.kwonly_params:
            name = param.name.value
            bindings[name] = kwargs[name] if name in kwargs else self._default_binding(param, standalone, is_init)
        if isinstance(params.star_arg, cst.Param):
            bindings[params.star_arg.name.value] = UNKNOWN
        if params.star_kwarg is not None:
            bindings[params.star_kwarg.name.value] = UNKNOWN
        return bindings

    def _default_binding(self, param: cst.Param, standalone: bool, is_init: bool) -> Value:
        name = param.name.value
        annotated = self._annotation_value(param.annotation, name)
        if annotated is not None:
            return annotated
        if param.default is not None:
            default = literal_value(param.default)
            # Constructor defaults are configuration: use them. Elsewhere a default like
            # ``mask=None`` says nothing about what callers pass.
            if is_init and isinstance(default, (IntValue,)) or (is_init and _is_number(default)):
                return default
            if not standalone:
                return default if default is not None else UNKNOWN
        return Opaque(name)

    def _annotation_value(self, annotation: cst.Annotation | None, name: str) -> Value | None:
        """A tensor value from a jaxtyping annotation (``Float[Tensor, "b t d"]``), if any."""
        if annotation is None:
            return None
        expr = annotation.annotation
        if isinstance(expr, cst.SimpleString) or isinstance(expr, cst.ConcatenatedString):
            try:
                expr = cst.parse_expression(literal_string(expr) or "")
            except cst.ParserSyntaxError:
                return None
        if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2:
            text = dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
            if text and self._qualify(text) in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
                return TensorValue(node=annotation)
            return None
        head = dotted_name(expr.value)
        if head is None:
            return None
        qualified = self._qualify(head)
        if not qualified.startswith("jaxtyping.") and not head.split(".")[-1] in _JAXTYPING_NAMES:
            return None
        dtype_name = qualified.rsplit(".", 1)[-1]
        spec_node = expr.slice[1].slice
        if not isinstance(spec_node, cst.Index):
            return None
        spec = literal_string(spec_node.value)
        if spec is None:
            return None
        from shapecheck.engine.annotations import dtype_of, parse_dims, to_shape

        specs = parse_dims(spec)
        shape = to_shape(specs) if specs is not None else None
        return TensorValue(shape=shape, dtype=dtype_of(dtype_name), node=annotation)

    def _qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        resolved = self.imports.resolve(head)
        if resolved is None:
            return dotted
        return canonical(resolved + ("." + rest if rest else ""))

    # ------------------------------------------------------------------ statements

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
            info = self._class_info(statement, frame.run.qualname + ".")
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
                declared = self._annotation_value(small.annotation, "")
                if declared is not None and isinstance(value, TensorValue):
                    ops.check_annotation(self, value, declared, small, frame, f"`{_target_text(small.target)}`")
                self.assign(small.target, value, frame, small)
        elif isinstance(small, cst.AugAssign):
            current = self.eval(small.target, frame)
            right = self.eval(small.value, frame)
            operator = _AUG_OPERATORS.get(type(small.operator))
            value = ops.binary(self, operator, current, right, small, frame) if operator else UNKNOWN
            self.assign(small.target, value, frame, small)
        elif isinstance(small, cst.Expr):
            self.eval(small.value, frame)
        elif isinstance(small, cst.Return):
            value = self.eval(small.value, frame) if small.value is not None else ConstValue(None)
            function = frame.run.node
            # Inlined, a wrong return is the echo of wrong arguments, reported at the call.
            if isinstance(value, TensorValue) and function is not None and function.returns is not None and not frame.run.inlined:
                declared = self._annotation_value(function.returns, "return")
                if isinstance(declared, TensorValue):
                    ops.check_annotation(self, value, declared, small, frame, f"the value returned by `{function.name.value}`")
            frame.returns.append(value)
            frame.terminated = True
        elif isinstance(small, cst.Assert):
            self._exec_assert(small, frame)
        elif isinstance(small, cst.Raise):
            frame.terminated = True
        elif isinstance(small, (cst.Import, cst.ImportFrom)):
            from shapecheck.engine.imports import bindings_of

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
            self.assign(node.target, ops.iteration_element(iterable), body_frame, node)
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
            items = ops.unpack(value, len(target.elements))
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
                ops.label_module(value, f"{_target_text(target)}")
                owner.attrs[name] = value
                self.facts.attribute_assignments.append(
                    AttributeAssignment(owner.cls, name, statement, value, frame.run)
                )
                frame.run.assignments.append(Assignment(statement, _target_text(target), value))
        elif isinstance(target, cst.Subscript):
            ops.subscript_assign(self, target, value, frame, statement)
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

    # ------------------------------------------------------------------ expressions

    def eval(self, node: cst.BaseExpression | None, frame: Frame) -> Value:
        if node is None:
            return UNKNOWN
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            return UNKNOWN
        return handler(self, node, frame)

    def lookup(self, name: str, frame: Frame) -> Value:
        if name in frame.env:
            return frame.env[name]
        if name in self.globals:
            return self.globals[name]
        return _BUILTINS.get(name, UNKNOWN)

    def _eval_name(self, node: cst.Name, frame: Frame) -> Value:
        return self.lookup(node.value, frame)

    def _eval_attribute(self, node: cst.Attribute, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        return ops.attribute(self, base, node.attr.value, node, frame)

    def _eval_call(self, node: cst.Call, frame: Frame) -> Value:
        if not self.budget.spend():
            return UNKNOWN
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = self.eval(func.value, frame)
            callee: Value = ops.attribute(self, receiver, func.attr.value, func, frame)
        else:
            callee = self.eval(func, frame)
        args: list[Value] = []
        arg_nodes: list[cst.CSTNode] = []
        kwargs: dict[str, Value] = {}
        kwarg_nodes: dict[str, cst.CSTNode] = {}
        for arg in node.args:
            value = self.eval(arg.value, frame)
            if arg.star == "*":
                items = value.items if isinstance(value, TupleValue) else None
                if items is None:
                    args.append(UNKNOWN)
                    arg_nodes.append(arg.value)
                    kwargs["*"] = UNKNOWN
                else:
                    args.extend(items)
                    arg_nodes.extend([arg.value] * len(items))
            elif arg.star == "**":
                kwargs["**"] = UNKNOWN
            elif arg.keyword is not None:
                kwargs[arg.keyword.value] = value
                kwarg_nodes[arg.keyword.value] = arg.value
            else:
                args.append(value)
                arg_nodes.append(arg.value)
        call = ops.Call(node, tuple(args), kwargs, tuple(arg_nodes), kwarg_nodes)
        return self.call(callee, call, frame)

    def call(self, callee: Value, call: "ops.Call", frame: Frame) -> Value:
        """Apply a callee value to evaluated arguments."""
        if isinstance(callee, QualifiedValue):
            return ops.call_qualified(self, callee.qualname, call, frame)
        if isinstance(callee, BoundMethod):
            return ops.call_method(self, callee.receiver, callee.name, call, frame)
        if isinstance(callee, ModuleValue):
            return ops.call_module(self, callee, call, frame)
        if isinstance(callee, ObjectValue):
            forward = callee.cls.methods.get("forward") or callee.cls.methods.get("__call__")
            if forward is None:
                return ops.unknown_call(call)
            return self.inline(forward, callee.cls.qualname + "." + forward.name.value, callee.cls, call, frame, callee)
        if isinstance(callee, ClassValue):
            return self.instantiate(callee.info, call, frame)
        if isinstance(callee, FunctionValue):
            owner = callee.owner
            return self.inline(callee.node, callee.qualname, owner.cls if owner else None, call, frame, owner)
        return ops.unknown_call(call)

    def inline(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        call: "ops.Call",
        frame: Frame,
        self_value: ObjectValue | None,
    ) -> Value:
        """Analyse a callee of this file with the actual arguments (interprocedural within a file)."""
        if frame.depth >= self.depth_limit or node in self.call_stack or "*" in call.kwargs or "**" in call.kwargs:
            return ops.unknown_call(call)
        if self.budget.steps < 200:
            return ops.unknown_call(call)
        bindings = self.bind_parameters(node, call.args, call.kwargs, standalone=False, skip_self=self_value is not None)
        if self_value is not None and node.params.params:
            bindings[node.params.params[0].name.value] = self_value
        for param_name, value in list(bindings.items()):
            if isinstance(value, Opaque) and value.name == param_name:
                bindings[param_name] = Opaque(param_name)
        self._check_arguments(node, bindings, call, frame)
        result = self.run_function(
            node, qualname, cls, bindings, self_value, frame.depth + 1, inlined=True,
            parent=frame.run if frame.run.node is not None else None, call_node=call.node,
        )
        return result

    def _check_arguments(self, node: cst.FunctionDef, bindings: dict[str, Value], call: "ops.Call", frame: Frame) -> None:
        """Arguments passed to a jaxtyping-annotated function must fit its annotations (SC506).

        Dim names are bound across the arguments in order, as jaxtyping does: ``a: "b t d"`` and
        ``b: "b t d"`` must agree on d."""
        from shapecheck.engine.annotations import Named, parse_dims, to_shape

        names: dict[str, Dim] = {}
        params = list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params)
        for param in params:
            actual = bindings.get(param.name.value)
            specs = self._annotation_specs(param.annotation)
            if not isinstance(actual, TensorValue) or specs is None:
                continue
            declared = to_shape(specs, names)
            if declared is None or actual.shape is None:
                continue
            ops.check_annotation(
                self, actual, TensorValue(declared), call.node, frame,
                f"argument `{param.name.value}` of `{node.name.value}`",
            )
            if not any(type(spec).__name__ == "Variadic" for spec in specs) and actual.shape.rank == len(specs):
                for spec, dim in zip(specs, actual.shape.dims):
                    if isinstance(spec, Named) and spec.name not in names:
                        names[spec.name] = dim
            elif all(type(spec).__name__ != "Variadic" for spec in specs[-len(actual.shape.dims):] if actual.shape.dims):
                trailing = specs[len(specs) - len(actual.shape.dims):] if len(actual.shape.dims) <= len(specs) else []
                for spec, dim in zip(trailing, actual.shape.dims):
                    if isinstance(spec, Named) and spec.name not in names:
                        names[spec.name] = dim
        _ = parse_dims

    def _annotation_specs(self, annotation: cst.Annotation | None) -> list | None:
        """The parsed dims of a jaxtyping annotation ``Float[Tensor, "b t d"]``, if it is one."""
        from shapecheck.engine.annotations import parse_dims

        if annotation is None:
            return None
        expr = annotation.annotation
        if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2:
            return None
        head = dotted_name(expr.value)
        if head is None:
            return None
        qualified = self._qualify(head)
        if not qualified.startswith("jaxtyping.") and head.split(".")[-1] not in _JAXTYPING_NAMES:
            return None
        spec_node = expr.slice[1].slice
        if not isinstance(spec_node, cst.Index):
            return None
        spec = literal_string(spec_node.value)
        return parse_dims(spec) if spec is not None else None

    def instantiate(self, info: ClassInfo, call: "ops.Call", frame: Frame) -> Value:
        self.facts.instantiations.append((call.node, info))
        owner = frame.run.cls
        if owner is not None and owner is not info:
            self.nested_classes.add(info.qualname)
        obj = ObjectValue(info, {}, ModuleIdent(info.name + "(...)", call.node))
        if info.is_dataclass and "__init__" not in info.methods:
            names = list(info.fields)
            for index, name in enumerate(names):
                if index < len(call.args):
                    obj.attrs[name] = call.args[index]
                elif name in call.kwargs:
                    obj.attrs[name] = call.kwargs[name]
                else:
                    default = info.fields[name]
                    obj.attrs[name] = literal_value(default) if default is not None else UNKNOWN
            return obj
        init = info.methods.get("__init__")
        if init is not None and frame.depth < MAX_INLINE_DEPTH and init not in self.call_stack:
            self.inline(init, info.qualname + ".__init__", info, call, frame, obj)
        return obj

    def _eval_binary(self, node: cst.BinaryOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        operator = _OPERATORS.get(type(node.operator))
        if operator is None:
            return UNKNOWN
        return ops.binary(self, operator, left, right, node, frame)

    def _eval_unary(self, node: cst.UnaryOperation, frame: Frame) -> Value:
        value = self.eval(node.expression, frame)
        return ops.unary(self, type(node.operator).__name__, value, node, frame)

    def _eval_comparison(self, node: cst.Comparison, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        result: Value = UNKNOWN
        for comparison in node.comparisons:
            right = self.eval(comparison.comparator, frame)
            result = ops.compare(self, type(comparison.operator).__name__, left, right, node, frame)
            left = right
        return result

    def _eval_boolean(self, node: cst.BooleanOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        if isinstance(left, TensorValue) or isinstance(right, TensorValue):
            return ops.binary(self, "and" if isinstance(node.operator, cst.And) else "or", left, right, node, frame)
        return join_values(left, right)

    def _eval_subscript(self, node: cst.Subscript, frame: Frame) -> Value:
        base = self.eval(node.value, frame)
        return ops.subscript(self, base, node, frame)

    def _eval_sequence(self, node: cst.Tuple | cst.List, frame: Frame) -> Value:
        items: list[Value] = []
        for element in node.elements:
            value = self.eval(element.value, frame)
            if isinstance(element, cst.StarredElement):
                if isinstance(value, TupleValue):
                    items.extend(value.items)
                    continue
                if isinstance(value, ShapeValue) and value.shape is not None and not value.shape.variadic:
                    items.extend(IntValue(d) for d in value.shape.dims)
                    continue
                return UNKNOWN
            items.append(value)
        return TupleValue(tuple(items))

    def _eval_comprehension(self, node: cst.ListComp | cst.GeneratorExp, frame: Frame) -> Value:
        comp_for = node.for_in
        if comp_for.inner_for_in is None and not comp_for.ifs:
            iterable = self.eval(comp_for.iter, frame)
            items = _known_items(iterable)
            if items is not None:
                results = []
                for item in items:
                    inner = frame.fork()
                    self.assign(comp_for.target, item, inner, node)
                    results.append(self.eval(node.elt, inner))
                return TupleValue(tuple(results))
        inner = frame.fork()
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            iterable = self.eval(comp.iter, inner)
            self.assign(comp.target, ops.iteration_element(iterable), inner, node)
            comp = comp.inner_for_in
        element = self.eval(node.elt, inner)
        return Repeated(element)

    def _eval_ifexp(self, node: cst.IfExp, frame: Frame) -> Value:
        self.eval(node.test, frame)
        return join_values(self.eval(node.body, frame), self.eval(node.orelse, frame))

    def _eval_literal(self, node: cst.BaseExpression, frame: Frame) -> Value:
        value = literal_value(node)
        return value if value is not None else UNKNOWN

    def _eval_paren_free(self, node: cst.NamedExpr, frame: Frame) -> Value:
        value = self.eval(node.value, frame)
        self.assign(node.target, value, frame, node)
        return value

    def _eval_dict(self, node: cst.Dict, frame: Frame) -> Value:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.eval(element.value, frame)
        return UNKNOWN

    def _eval_await(self, node: cst.Await, frame: Frame) -> Value:
        self.eval(node.expression, frame)
        return UNKNOWN


_EXPRESSIONS = {
    cst.Name: Interpreter._eval_name,
    cst.Attribute: Interpreter._eval_attribute,
    cst.Call: Interpreter._eval_call,
    cst.BinaryOperation: Interpreter._eval_binary,
    cst.UnaryOperation: Interpreter._eval_unary,
    cst.Comparison: Interpreter._eval_comparison,
    cst.BooleanOperation: Interpreter._eval_boolean,
    cst.Subscript: Interpreter._eval_subscript,
    cst.Tuple: Interpreter._eval_sequence,
    cst.List: Interpreter._eval_sequence,
    cst.ListComp: Interpreter._eval_comprehension,
    cst.GeneratorExp: Interpreter._eval_comprehension,
    cst.IfExp: Interpreter._eval_ifexp,
    cst.Integer: Interpreter._eval_literal,
    cst.Float: Interpreter._eval_literal,
    cst.SimpleString: Interpreter._eval_literal,
    cst.ConcatenatedString: Interpreter._eval_literal,
    cst.FormattedString: Interpreter._eval_literal,
    cst.Ellipsis: Interpreter._eval_literal,
    cst.NamedExpr: Interpreter._eval_paren_free,
    cst.Dict: Interpreter._eval_dict,
    cst.Await: Interpreter._eval_await,
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

_BUILTINS: dict[str, Value] = {
    name: QualifiedValue("builtins." + name)
    for name in ("int", "float", "len", "range", "zip", "enumerate", "min", "max", "abs", "round", "bool", "isinstance", "tuple", "list", "super", "getattr", "hasattr", "reversed", "sum")
}
_BUILTINS["None"] = ConstValue(None)
_BUILTINS["True"] = ConstValue(True)
_BUILTINS["False"] = ConstValue(False)

_JAXTYPING_NAMES = {
    "Float", "Float16", "Float32", "Float64", "BFloat16", "Int", "Int8", "Int16", "Int32", "Int64",
    "UInt", "UInt8", "Integer", "Bool", "Shaped", "Num", "Real", "Inexact", "Complex",
}


def literal_string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _known_items(value: Value) -> tuple[Value, ...] | None:
    """The items of a tuple or split whose length is known and small."""
    items = None
    if isinstance(value, TupleValue):
        items = value.items
    elif isinstance(value, SplitTuple) and value.pieces is not None:
        items = value.pieces
    return items if items is not None and 0 < len(items) <= 16 else None


def _is_number(value: Value | None) -> bool:
    from shapecheck.engine.values import FloatValue

    return isinstance(value, (IntValue, FloatValue)) or (isinstance(value, ConstValue) and isinstance(value.value, bool))


def _body_of(node: cst.FunctionDef) -> Sequence[cst.BaseStatement]:
    body = node.body
    if isinstance(body, cst.IndentedBlock):
        return body.body
    return [cst.SimpleStatementLine(body=body.body)]  # type: ignore[arg-type]


def _blocks_of(statement: cst.If | cst.Try) -> Iterator[Sequence[cst.BaseStatement]]:
    if isinstance(statement, cst.If):
        yield statement.body.body
        orelse = statement.orelse
        while orelse is not None:
            yield orelse.body.body
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
    else:
        yield statement.body.body
        for handler in statement.handlers:
            yield handler.body.body


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, right = test.left, test.comparisons[0].comparator
    names = {getattr(left, "value", None), getattr(right, "value", None)}
    return "__name__" in names and any(
        isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__" for side in (left, right)
    )


def _block_raises(statements: Sequence[cst.BaseStatement]) -> bool:
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, cst.Raise) for small in statement.body):
                return True
    return False


def _target_text(target: cst.BaseExpression) -> str:
    return dotted_name(target) or "<target>"


# ---------------------------------------------------------------------------------------- driver


def analyze_module(module: cst.Module, source: str, path: str) -> FileFacts:
    """Analyse every class and function of a module that can hold tensor code."""
    facts = FileFacts(module, source, path)
    imports = ImportTable.from_module(module)
    facts.imports = imports
    if not imports.uses_torch():
        return facts
    lines = source.count("\n") + 1
    interpreter = Interpreter(facts, imports, Budget(200 + 60 * lines))
    interpreter.load_module(module)
    classes = [v.info for v in interpreter.globals.values() if isinstance(v, ClassValue) and v.info.is_module]
    instances = {info.qualname: _construct_standalone(interpreter, info) for info in classes}
    for info in classes:
        # A class that other classes of the file build is analysed in full through them; on its
        # own it inlines only its direct children, so a deep model costs O(depth), not O(depth^2).
        interpreter.depth_limit = 1 if info.qualname in interpreter.nested_classes else MAX_INLINE_DEPTH
        _analyze_methods(interpreter, info, instances[info.qualname])
    interpreter.depth_limit = MAX_INLINE_DEPTH
    for value in list(interpreter.globals.values()):
        if isinstance(value, FunctionValue) and value.owner is None:
            bindings = interpreter.bind_parameters(value.node, (), {}, standalone=True, skip_self=False)
            interpreter.run_function(value.node, value.qualname, None, bindings, None, 0, inlined=False)
    _analyze_module_level_instances(interpreter)
    for info in list(facts.classes.values()):
        if not info.is_module:
            for name, method in info.methods.items():
                if _touches_tensors(method):
                    bindings = interpreter.bind_parameters(method, (), {}, standalone=True, skip_self=True)
                    obj = ObjectValue(info, {}, ModuleIdent(info.name))
                    if method.params.params:
                        bindings[method.params.params[0].name.value] = obj
                    interpreter.run_function(method, f"{info.qualname}.{name}", info, bindings, obj, 0, inlined=False)
    return facts


def _analyze_module_level_instances(interpreter: Interpreter) -> None:
    """Modules instantiated at module level with known arguments (``layer = EncoderLayer(512, 6)``):
    run their forward with those constructor values."""
    for value in list(interpreter.globals.values()):
        if not isinstance(value, ObjectValue) or not value.cls.is_module or value.ident.node is None:
            continue
        forward = value.cls.methods.get("forward")
        if forward is None:
            continue
        bindings = interpreter.bind_parameters(forward, (), {}, standalone=True, skip_self=True)
        if forward.params.params:
            bindings[forward.params.params[0].name.value] = value
        interpreter.run_function(
            forward, f"{value.cls.qualname}.forward", value.cls, bindings, value, 1, inlined=True, call_node=value.ident.node
        )


def _construct_standalone(interpreter: Interpreter, info: ClassInfo) -> ObjectValue:
    """The class built with its constructor defaults and named unknowns."""
    obj = ObjectValue(info, {}, ModuleIdent(info.name))
    init = info.methods.get("__init__")
    if init is not None:
        bindings = interpreter.bind_parameters(init, (), {}, standalone=True, skip_self=True)
        if init.params.params:
            bindings[init.params.params[0].name.value] = obj
        interpreter.run_function(init, f"{info.qualname}.__init__", info, bindings, obj, 0, inlined=False)
    return obj


def _analyze_methods(interpreter: Interpreter, info: ClassInfo, obj: ObjectValue) -> None:
    for name, method in info.methods.items():
        if name == "__init__":
            continue
        bindings = interpreter.bind_parameters(method, (), {}, standalone=True, skip_self=True)
        if method.params.params:
            bindings[method.params.params[0].name.value] = obj
        interpreter.run_function(method, f"{info.qualname}.{name}", info, bindings, obj, 0, inlined=False)


def _touches_tensors(method: cst.FunctionDef) -> bool:
    return False
