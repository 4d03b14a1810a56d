"""The abstract interpreter: walks function bodies and keeps an environment of abstract values.

``Interpreter`` holds one file's state (globals, budget, call stack), binds parameters, runs
functions over frames (locals, assumptions, the run record) and inlines callees of the file with the
actual arguments, so that constructor arguments and input shapes flow into them. Everything it
cannot follow becomes ``UNKNOWN``. It executes statements with ``statements`` and evaluates
expressions with ``expressions``; calls, operators and attributes go to ``ops``. ``driver`` decides
what to run; ``classes`` and ``annotation_values`` read class statements and annotations for it.

Work is bounded per file (``Budget``) so analysis stays linear in file size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from shapecheck.engine.domain.joins import join_values
from shapecheck.engine.domain.literals import literal_value
from shapecheck.engine.domain.values import (
    Origin,
    UNKNOWN,
    BoundMethod,
    ClassInfo,
    ClassValue,
    ConstValue,
    FloatValue,
    FunctionValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    QualifiedValue,
    Value,
    known_sizes,
)
from shapecheck.engine.facts.records import FileFacts, FunctionRun
from shapecheck.engine.interpreter.annotation_values import (
    annotation_value,
    check_arguments,
)
from shapecheck.engine.interpreter.classes import class_info
from shapecheck.engine.interpreter.expressions import ExpressionEvaluator
from shapecheck.engine.interpreter.imports import ImportTable
from shapecheck.engine.interpreter.statements import StatementExecutor
from shapecheck.engine.ops import base, dispatch
from shapecheck.engine.symbolic.dims import Assumptions, Dim

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


class Interpreter(StatementExecutor, ExpressionEvaluator):
    """Evaluates one file's code: statements and expressions come from the two mixins, ``ops`` holds
    the per-op shape rules; this class keeps the state, runs functions and inlines calls."""

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
            info = class_info(statement, prefix, self.imports, self.globals)
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
            self_value.sizes = {name: value.dim for name, value in bindings.items() if isinstance(value, IntValue)}
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
        self_value: ObjectValue | None = None,
    ) -> dict[str, Value]:
        """Bind call arguments (or, standalone, defaults / annotations / named unknowns) to parameters.

        Dim names of jaxtyping annotations are unified with the module's known sizes of the same
        name (``self.d_model = 512`` makes ``"b t d_model"`` read ``(b, t, 512)``)."""
        names = known_sizes(self_value)
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
                bindings[name] = self._default_binding(param, standalone, is_init, names)
        for param in params.kwonly_params:
            name = param.name.value
            bindings[name] = kwargs[name] if name in kwargs else self._default_binding(param, standalone, is_init, names)
        if isinstance(params.star_arg, cst.Param):
            bindings[params.star_arg.name.value] = UNKNOWN
        if params.star_kwarg is not None:
            bindings[params.star_kwarg.name.value] = UNKNOWN
        return bindings

    def _default_binding(self, param: cst.Param, standalone: bool, is_init: bool, names: dict[str, Dim]) -> Value:
        name = param.name.value
        annotated = annotation_value(self.imports, param.annotation, names)
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

    # ------------------------------------------------------------------ calls

    def call(self, callee: Value, call: "base.Call", frame: Frame) -> Value:
        """Apply a callee value to evaluated arguments."""
        if isinstance(callee, QualifiedValue):
            return dispatch.call_qualified(self, callee.qualname, call, frame)
        if isinstance(callee, BoundMethod):
            return dispatch.call_method(self, callee.receiver, callee.name, call, frame)
        if isinstance(callee, ModuleValue):
            return dispatch.call_module(self, callee, call, frame)
        if isinstance(callee, ObjectValue):
            forward = callee.cls.methods.get("forward") or callee.cls.methods.get("__call__")
            if forward is None:
                return dispatch.unknown_call(call)
            return self.inline(forward, callee.cls.qualname + "." + forward.name.value, callee.cls, call, frame, callee)
        if isinstance(callee, ClassValue):
            return self.instantiate(callee.info, call, frame)
        if isinstance(callee, FunctionValue):
            owner = callee.owner
            return self.inline(callee.node, callee.qualname, owner.cls if owner else None, call, frame, owner)
        return dispatch.unknown_call(call)

    def inline(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        call: "base.Call",
        frame: Frame,
        self_value: ObjectValue | None,
    ) -> Value:
        """Analyse a callee of this file with the actual arguments (interprocedural within a file)."""
        if frame.depth >= self.depth_limit or node in self.call_stack or "*" in call.kwargs or "**" in call.kwargs:
            return dispatch.unknown_call(call)
        if self.budget.steps < 200:
            return dispatch.unknown_call(call)
        bindings = self.bind_parameters(
            node, call.args, call.kwargs, standalone=False, skip_self=self_value is not None, self_value=self_value
        )
        if self_value is not None and node.params.params:
            bindings[node.params.params[0].name.value] = self_value
        for param_name, value in list(bindings.items()):
            if isinstance(value, Opaque) and value.name == param_name:
                bindings[param_name] = Opaque(param_name)
        check_arguments(self, node, bindings, call, frame)
        result = self.run_function(
            node, qualname, cls, bindings, self_value, frame.depth + 1, inlined=True,
            parent=frame.run if frame.run.node is not None else None, call_node=call.node,
        )
        return result

    def instantiate(self, info: ClassInfo, call: "base.Call", frame: Frame) -> Value:
        self.facts.instantiations.append((call.node, info))
        owner = frame.run.cls
        if owner is not None and owner is not info:
            self.nested_classes.add(info.qualname)
        obj = ObjectValue(info, {}, ModuleIdent(info.name + "(...)", call.node))
        if info.is_dataclass and "__init__" not in info.methods:
            names = list(info.fields)
            for index, name in enumerate(names):
                if index < len(call.args):
                    obj.attrs[name] = _with_origin(call.args[index], call.arg_nodes[index] if index < len(call.arg_nodes) else None, f"{info.name}({name}=...)")
                elif name in call.kwargs:
                    obj.attrs[name] = _with_origin(call.kwargs[name], call.kwarg_nodes.get(name), f"{info.name}({name}=...)")
                else:
                    default = info.fields[name]
                    value = literal_value(default) if default is not None else UNKNOWN
                    obj.attrs[name] = _with_origin(value, default, f"{info.name}.{name} default")
            return obj
        init = info.methods.get("__init__")
        if init is not None and frame.depth < MAX_INLINE_DEPTH and init not in self.call_stack:
            self.inline(init, info.qualname + ".__init__", info, call, frame, obj)
        return obj


def _with_origin(value: Value | None, node: cst.CSTNode | None, label: str) -> Value:
    """A configuration number keeps where it was written (a finding about it lands there)."""
    if isinstance(value, IntValue) and value.origin is None and node is not None:
        return IntValue(value.dim, Origin(node, label))
    return value if value is not None else UNKNOWN


def _is_number(value: Value | None) -> bool:

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
