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
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain import modes
from shapecheck.engine.domain.joins import join_all, join_values, path_sizes
from shapecheck.engine.domain.literals import defaults_to_none, literal_value
from shapecheck.engine.domain.tags import DictValue, LambdaValue, PartialValue
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
    EitherFunction,
    EitherModule,
    ModuleValue,
    ObjectValue,
    Opaque,
    OptionalNumber,
    QualifiedValue,
    TensorValue,
    TupleValue,
    Value,
    known_sizes,
)
from shapecheck.engine.facts.records import FileFacts, FunctionRun
from shapecheck.engine.interpreter.annotation_values import (
    annotated_class_name,
    annotation_value,
    int_tuple_length,
    check_arguments,
)
from shapecheck.engine.interpreter.classes import class_info
from shapecheck.engine.interpreter.expressions import ExpressionEvaluator
from shapecheck.engine.interpreter.imports import ImportTable
from shapecheck.engine.interpreter.statements import StatementExecutor
from shapecheck.engine.ops.training import (
    adopt_children,
    forget_modes,
    mark_output,
    grad_disabled_by_decorator,
    record_model_call,
    track_new_model,
)
from shapecheck.engine.ops import base, dispatch, windows
from shapecheck.engine.symbolic.dims import Assumptions, Dim
from shapecheck.engine.domain.values import Scale

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.project import ModuleGraph, ModuleScope, SourceModule

MAX_INLINE_DEPTH = 6
#: Calls into another project module are inlined up to this depth: each importer analyses imported
#: code with its own arguments, so this bounds the work an import adds to a file (the imported
#: module's own lint analyses it in full).
MAX_FOREIGN_DEPTH = 4
#: The file's module-level functions (factories, registered variants: timm has 1,382) run after its
#: classes; the first calling contexts of a function of another project module are followed from
#: them, and later ones are opaque, as in per-file lint. Without this bound, each of timm's variants
#: rebuilds its model through ``build_model_with_cfg`` with the variant's arguments (7x the file's
#: own analysis on ``vision_transformer.py``).
MAX_FOREIGN_CONTEXTS = 8
#: What a file may spend in code of other project modules, in evaluation steps: this many per line
#: of the file, plus ``FOREIGN_STEPS_FLOOR``. Per-file lint costs about the same per line (parsing and
#: the rules are proportional to the file's size), so this keeps a whole project's lint within a
#: bounded factor of its files linted one by one (issue 9), however much of the project each file
#: reaches. The classes are analysed first, so they spend it first; a call into another module
#: once it is spent is opaque, as in per-file lint.
FOREIGN_STEPS_PER_LINE = 5
FOREIGN_STEPS_FLOOR = 300
#: Of that, what the module-level functions (which run last) may spend, per line of the file: the
#: factories and registered variants, each rebuilding a model through another module's builder.
MODULE_LEVEL_FOREIGN_STEPS_PER_LINE = 1


def foreign_allowance(lines: int) -> int:
    """The evaluation steps a file of ``lines`` lines may spend in code of other project modules."""
    return FOREIGN_STEPS_FLOOR + FOREIGN_STEPS_PER_LINE * lines


def module_level_foreign_allowance(lines: int, left: int) -> int:
    """What the module-level functions may spend of the ``left`` steps of a file of ``lines`` lines."""
    return min(left, FOREIGN_STEPS_FLOOR + MODULE_LEVEL_FOREIGN_STEPS_PER_LINE * lines)


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
    modes: dict = field(default_factory=dict)  # model ident -> modes it may be in (domain.modes)
    grad: bool | None = True  # gradients on (False under no_grad); None: a standalone run cannot tell
    exits: list = field(default_factory=list)  # the modes at each return (shared by forks)
    #: inside a loop body run once for any number of iterations (not unrolled): a list appended to
    #: here holds any number of such items
    in_loop: bool = False
    #: the ``T | None = None`` parameters' tensors (by annotation node) this path has used as objects
    not_none: set[int] = field(default_factory=set)
    #: the tensors the function was given (its parameters' values at entry)
    inputs: tuple = ()

    def fork(self) -> "Frame":
        return Frame(
            dict(self.env),
            self.run,
            self.assumptions.copy(),
            self.self_value,
            self.returns,
            self.depth,
            False,
            dict(self.modes),
            self.grad,
            self.exits,
            self.in_loop,
            set(self.not_none),
            self.inputs,
        )


class Interpreter(StatementExecutor, ExpressionEvaluator):
    """Evaluates one file's code: statements and expressions come from the two mixins, ``ops`` holds
    the per-op shape rules; this class keeps the state, runs functions and inlines calls."""

    def __init__(
        self, facts: FileFacts, imports: ImportTable, budget: Budget, graph: "ModuleGraph | None" = None
    ) -> None:
        self.facts = facts
        self.imports = imports
        #: The project's other modules (None: this file alone); ``home_path`` is the file whose
        #: ``globals`` are current, ``run_main_guard`` False for a module loaded as an import.
        self.graph = graph
        self.home_path = self.own_path = facts.path
        self.home_module: "SourceModule | None" = None
        #: this file's names (globals, imports, path, module) and definitions, for its code called
        #: back from another module's (set by the driver in a project)
        self.own_names: tuple | None = None
        self.own_definitions: set[cst.CSTNode] = set()
        self.run_main_guard = True
        self.budget = budget
        self.globals: dict[str, Value] = {}
        self.call_stack: list[cst.FunctionDef] = []
        self.pending_name: str | None = None
        #: running a callee once more with a number argument left out (``_run_number_fallbacks``)
        self.hypothetical = False
        self._fresh_counter = 0
        self.invented: set[str] = facts.invented_sizes  # names of the sizes fresh_name made up
        self.depth_limit = MAX_INLINE_DEPTH
        self.nested_classes: set[str] = set()  # classes instantiated by another class of the file
        #: When set: how many more calling contexts each function of another module may be followed
        #: in (``MAX_FOREIGN_CONTEXTS``), by function node; None: no bound (the classes' analysis).
        self.foreign_contexts: dict[cst.FunctionDef, int] | None = None
        #: Evaluation steps left for code of other modules (``FOREIGN_STEPS_PER_LINE``); None: no
        #: bound. Spent by the outermost call into another module, whatever it calls in turn.
        self.foreign_allowance: int | None = None
        self._foreign_entry: int | None = None  # the budget's steps when the call under way entered
        # (id of an object, attribute) set to None on one path and to a tensor or layer on another:
        # ``if self.qkv is not None:`` stays undecided for them (see statements._none_test).
        self.optional_attributes: set[tuple[int, str]] = set()
        # ids of the annotations of parameters that default to None (``mask: Tensor | None = None``),
        # read standalone: the tensor they give may be None, wherever it is passed on to.
        self.optional_annotations: set[int] = set()
        #: each statement's names it uses as objects on every path (``used_unconditionally``): a
        #: fact of its text, shared by the importers of its module when a project graph is followed
        self.used_names: dict[cst.BaseSmallStatement, frozenset[str]] = graph.used_names if graph is not None else {}
        #: Names of the ``int | None = None`` parameters read standalone: sizes that may be None.
        self.optional_sizes: set[str] = set()
        #: Module classes of the file built standalone (constructor defaults, named unknowns), by
        #: qualified name: a parameter annotated with one of them is that instance (driver).
        self.standalone_instances: dict[str, ObjectValue] = {}
        self.sites: dict[str, list["base.Call"]] = {}  # class qualname -> the calls that built it
        #: id of a tensor of unknown rank -> (the tensor, the batch and sequence dims presumed for its
        #: leading dims when its head split moved the heads: ``ops.shapes.presumed_leading``).
        self.presumed_leading: dict[int, tuple[Value, tuple[Dim, Dim]]] = {}
        #: ``x.shape[i]`` (i >= 0) read off a tensor of unknown size there: one size per tensor and
        #: position (``ops.base.read_trailing_size``), keyed by id with the tensor kept alive.
        #: The facts hold it: a size read off an input's axis tells rules that axis's role (SC507).
        self.front_sizes: dict[tuple[int, int], tuple[Value, Dim]] = facts.front_sizes
        #: Names of made-up sizes that are sequence lengths by the layout the code spells out: the
        #: sequence dim ``presumed_leading`` gives a head split, and the key length a cache gives
        #: back for it (``k, v = cache.update(k, v, ...)``). Their value is unknown, their role is
        #: not: a sequence length is not a feature width (``ops.products``).
        self.sequence_sizes: set[str] = set()

    def fresh_name(self, hint: str, use_target: bool = True) -> str:
        """A symbol for a size nobody named: the assignment target when there is one (``T``)."""
        if use_target and self.pending_name is not None:
            name, self.pending_name = self.pending_name, None
            return name
        self._fresh_counter += 1
        name = f"{hint}{self._fresh_counter}"
        self.invented.add(name)
        return name

    def size_named(self, name: str, frame: "Frame") -> Dim:
        """The size the code names ``name`` (``B, T, C = x.shape`` of a tensor it cannot see): that
        symbol, unless the path's facts already speak of a ``name`` (an inlined callee's ``C`` is not
        its caller's ``C``: the caller's facts flow in), then a numbered one. Either is a size the
        code named, not one the engine made up."""
        if not frame.assumptions.mentions(name):
            return Dim.sym(name)
        self._fresh_counter += 1
        return Dim.sym(f"{name}{self._fresh_counter}")

    def is_sequence_length(self, dim: Dim) -> bool:
        """A made-up size presumed to be a sequence length on every path (``sequence_sizes``)."""
        return dim.name is not None and all(part in self.sequence_sizes for part in path_sizes(dim.name))

    def is_invented(self, dim: Dim) -> bool:
        """A size the engine made up for an input it could not see (not one the code named)."""
        return dim.name is not None and dim.name in self.invented

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
                if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Expr)):
                    try:
                        self.exec_small(small, frame)
                    except RecursionError:
                        pass
        elif isinstance(statement, cst.If) and _is_main_guard(statement.test):
            # ``if __name__ == "__main__":`` runs the models of the file on concrete inputs.
            if self.run_main_guard:
                self.exec_block(statement.body.body, frame)
        elif isinstance(statement, (cst.For, cst.While, cst.With)) and self.run_main_guard:
            # A script's training loop at module level (not in a module loaded as an import).
            try:
                self.exec_statement(statement, frame)
            except RecursionError:
                pass
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
        caller: Frame | None = None,
        arguments: dict[str, cst.CSTNode] | None = None,
    ) -> Value:
        run = FunctionRun(qualname, node, cls, inlined, parent, call_node, instance=self_value, arguments=arguments or {})
        self.facts.runs.append(run)
        frame = Frame(
            dict(bindings),
            run,
            assumptions.copy() if assumptions is not None else Assumptions(),
            self_value,
            [],
            depth,
        )
        frame.inputs = tuple(value for value in bindings.values() if isinstance(value, TensorValue))
        # Train / eval modes and the grad switch flow from the caller into the callee and back.
        frame.modes = dict(caller.modes) if caller is not None else {}
        frame.grad = caller.grad if caller is not None else None
        if grad_disabled_by_decorator(self, node):
            frame.grad = False
        if self_value is not None and self_value.context is not None:
            if assumptions is None:
                frame.assumptions = self_value.context.copy()
            elif self_value.context is not assumptions:
                # Inlined: the caller's path facts (``if seqlen % block != 0: raise``) and the
                # instance's constructor facts (``d_model % n_heads == 0``) both hold here.
                frame.assumptions.include(self_value.context)
        self.call_stack.append(node)
        names = self.names_of(self.graph.home.get(node) if self.graph is not None else None, node)
        saved = None
        if names is not None and names[2] != self.home_path:
            # A function of another project module (or of this file, called back from one): its
            # names are that module's names.
            saved = (self.globals, self.imports, self.home_path, self.home_module)
            self.globals, self.imports, self.home_path, self.home_module = names
        try:
            self.exec_block(_body_of(node), frame)
        except RecursionError:
            pass
        finally:
            self.call_stack.pop()
            if saved is not None:
                self.globals, self.imports, self.home_path, self.home_module = saved
        if caller is not None:
            ends = list(frame.exits) + ([frame.modes] if not frame.terminated else [])
            if ends:
                caller.modes = modes.join(ends)
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

    def names_of(self, scope: "ModuleScope | None", node: cst.CSTNode) -> tuple | None:
        """The top-level names a definition's code sees, as (globals, imports, path, module): its
        project module's (``scope``), or this file's own for a definition of this file (a class of
        the file built by another module's factory, ``build_model_with_cfg(ConVit, ...)``, runs
        with this file's ``torch``, not the factory's names). None: the current names."""
        if scope is not None:
            return scope.globals, scope.imports, scope.source.path, scope.source
        if self.own_names is not None and node in self.own_definitions:
            return self.own_names
        return None

    def bind_parameters(
        self,
        node: cst.FunctionDef,
        args: Sequence[Value],
        kwargs: dict[str, Value],
        standalone: bool,
        skip_self: bool,
        self_value: ObjectValue | None = None,
        open_kwargs: bool = False,
    ) -> dict[str, Value]:
        """Bind call arguments (or, standalone, defaults / annotations / named unknowns) to parameters.
        With ``open_kwargs`` (the call passes ``**kwargs``) a parameter not given is a named unknown.

        Dim names of jaxtyping annotations are unified with the module's known sizes of the same
        name (``self.d_model = 512`` makes ``"b t d_model"`` read ``(b, t, 512)``)."""
        names = known_sizes(self_value)
        params = node.params
        positional = list(params.posonly_params) + list(params.params)
        if skip_self and positional and not is_static(node):
            positional = positional[1:]
        bindings: dict[str, Value] = {}
        is_init = node.name.value == "__init__" and not open_kwargs
        standalone = standalone or open_kwargs
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
        for param in positional + list(params.kwonly_params):
            name = param.name.value
            if isinstance(bindings[name], Opaque) or bindings[name] is UNKNOWN:
                if _declares_a_real_number(self.imports, param):
                    # ``eps=1e-6`` given ``config.rms_norm_eps``: a number the engine cannot read,
                    # never a tensor (``variance + eps`` keeps the variance's shape).
                    bindings[name] = unread_number(name)
                elif _declares_an_optional_real_number(self.imports, param):
                    # ``softcap: float | None = None`` given ``config.attn_logit_softcapping``: None
                    # or a number, never a tensor (``scores / softcap`` keeps the scores' shape).
                    given = bindings[name]
                    bindings[name] = OptionalNumber(given.name if isinstance(given, Opaque) else name)
        if isinstance(params.star_arg, cst.Param):
            extra = args[len(positional):] if not standalone else ()
            # ``def default(*args)`` called with known arguments: args is their tuple.
            bindings[params.star_arg.name.value] = TupleValue(tuple(extra)) if extra else UNKNOWN
        if params.star_kwarg is not None:
            # ``def forward(self, x, **kwargs)`` called with known keywords: kwargs is their dict, so
            # that ``self.fn(x, **kwargs)`` passes them on (a PreNorm wrapper).
            named = {p.name.value for p in positional} | {p.name.value for p in params.kwonly_params}
            extra = tuple((key, value) for key, value in kwargs.items() if key not in named and key not in ("*", "**"))
            bindings[params.star_kwarg.name.value] = UNKNOWN if standalone else DictValue(extra)
        return bindings

    def _default_binding(self, param: cst.Param, standalone: bool, is_init: bool, names: dict[str, Dim]) -> Value:
        name = param.name.value
        optional = defaults_to_none(param)
        if optional and not standalone:
            return ConstValue(None)  # left out by the caller: the default, whatever the annotation says
        if standalone:
            instance = self._annotated_instance(param)
            if instance is not None:
                return instance
        if optional and standalone and annotated_class_name(self.imports, param.annotation) == "int":
            # ``attn_head_dim: int | None = None`` read standalone: a size callers may give (a
            # symbol of its own), or None (``interp.maybe_none``): ``is None`` stays undecided.
            self.optional_sizes.add(name)
            return IntValue(Dim.sym(name))
        annotated = annotation_value(self.imports, param.annotation, names)
        if annotated is not None:
            if optional and isinstance(annotated, TensorValue):
                self.optional_annotations.add(id(annotated.node))
            return annotated
        if param.default is not None:
            default = literal_value(param.default) or _literal_dict(param.default)
            if default is None and isinstance(param.default, cst.Name):
                # ``dim_head=DEFAULT_DIM_HEAD``: a module-level constant of the file.
                constant = self.globals.get(param.default.value)
                default = constant if isinstance(constant, (IntValue, FloatValue, ConstValue)) else None
            # Constructor defaults are configuration: use them. Elsewhere a default like
            # ``mask=None`` says nothing about what callers pass.
            if is_init and isinstance(default, (IntValue,)) or (is_init and _is_number(default)):
                # A constructor's default is configuration. Analysed on its own (no instantiation
                # gives the values), a finding about it lands on it.
                return _with_origin(default, param.default, f"the {name} default") if standalone else default
            if not standalone:
                return default if default is not None else UNKNOWN
        length = int_tuple_length(self.imports, param.annotation)
        if length is not None and not optional:
            # ``img_size: Tuple[int, int]``: a tuple of sizes named after it, the same whether
            # indexed (``img_size[0]``) or unpacked (``H, W = img_size``)
            return TupleValue(tuple(Opaque(name).item(i) for i in range(length)))
        return Opaque(name)

    def _annotated_instance(self, param: cst.Param) -> ObjectValue | None:
        """A parameter annotated with a module class of this file (``attn: "Attention"`` in an
        attention processor) read standalone: that class's standalone instance."""
        name = annotated_class_name(self.imports, param.annotation)
        value = self.globals.get(name) if name is not None else None
        if not isinstance(value, ClassValue):
            return None
        return self.standalone_instances.get(value.info.qualname)

    def maybe_none(self, value: Value, frame: Frame | None = None) -> bool:
        """``value`` is still the tensor a ``T | None = None`` parameter's annotation gave it (in
        this run or passed on from the run that bound it), or the size an ``int | None = None``
        parameter gave: it may be None. Not where ``frame`` has seen it used as an object on every
        path (``mask.reshape(...)``: it would have raised)."""
        if isinstance(value, IntValue):
            return value.dim.name is not None and value.dim.name in self.optional_sizes
        if not isinstance(value, TensorValue) or id(value.node) not in self.optional_annotations:
            return False
        return frame is None or id(value.node) not in frame.not_none

    # ------------------------------------------------------------------ project names

    def project_value(self, value: Value) -> Value:
        """A qualified name of the project's own code as the value it stands for (a class, function
        or constant of another module); anything else unchanged."""
        if self.graph is not None and isinstance(value, QualifiedValue):
            resolved = self.graph.resolve(value.qualname)
            if resolved is not None:
                return resolved
        return value

    def imported_value(self, qualified: str) -> Value:
        """What an import inside a function binds: a project value, else the qualified name."""
        if self.graph is not None and self.home_module is not None:
            from shapecheck.engine.interpreter.project import absolute_name

            qualified = absolute_name(qualified, self.home_module)
        return self.project_value(QualifiedValue(qualified))

    # ------------------------------------------------------------------ calls

    def call(self, callee: Value, call: "base.Call", frame: Frame) -> Value:
        """Apply a callee value to evaluated arguments."""
        if isinstance(callee, QualifiedValue):
            if callee.qualname == "functools.partial" and call.args and "*" not in call.kwargs and "**" not in call.kwargs:
                return PartialValue(call.args[0], call.args[1:], dict(call.kwargs))
            resolved = self.project_value(callee)
            if resolved is not callee:
                return self.call(resolved, call, frame)
            result = dispatch.call_qualified(self, callee.qualname, call, frame)
            forget_modes(frame, call, passed_only=True)  # an imported helper may switch a model passed to it
            return result
        if isinstance(callee, BoundMethod):
            result = dispatch.call_method(self, callee.receiver, callee.name, call, frame)
            if not isinstance(callee.receiver, (ObjectValue, ModuleValue)):
                forget_modes(frame, call, passed_only=True)
            return result
        if isinstance(callee, ModuleValue):
            return dispatch.call_module(self, callee, call, frame)
        if isinstance(callee, (EitherModule, EitherFunction)):
            return join_all([self.call(option, call, frame) for option in callee.options])
        if isinstance(callee, ObjectValue):
            forward = callee.cls.methods.get("forward") or callee.cls.methods.get("__call__")
            layer = callee.attrs.get(dispatch.NN_BASE)
            if forward is None and isinstance(layer, ModuleValue):
                return dispatch.call_module(self, layer, call, frame)  # a torch.nn layer subclassed without a forward
            tracked = record_model_call(self, callee, call, frame)
            if tracked:
                call = windows.tag_model_inputs(self, call, frame)
            if forward is None:
                result = dispatch.unknown_call(call)
            else:
                owner = callee.cls.owner_of(forward.name.value)
                result = self.inline(forward, owner.qualname + "." + forward.name.value, owner, call, frame, callee)
                result = windows.forward_result(self, callee, call, result)
            return mark_output(result, call) if tracked else result
        if isinstance(callee, ClassValue):
            return self.instantiate(callee.info, call, frame)
        if isinstance(callee, FunctionValue):
            owner = callee.owner
            cls = owner.cls.owner_of(callee.node.name.value) if owner is not None else None
            result = self.inline(callee.node, callee.qualname, cls, call, frame, owner, callee.closure)
            if owner is not None and callee.node.name.value == "forward":
                result = windows.forward_result(self, owner, call, result)  # ``self.forward(x)``
            return result
        if isinstance(callee, LambdaValue):
            return self.call_lambda(callee, call, frame)
        if isinstance(callee, PartialValue):
            bound = base.Call(
                call.node, callee.args + call.args, {**callee.kwargs, **call.kwargs},
                (None,) * len(callee.args) + call.arg_nodes, call.kwarg_nodes,
            )
            return self.call(callee.function, bound, frame)
        # A layer the engine cannot see (``self.net(inp)`` with ``net`` passed in): its output is
        # computed from its input's tokens, position by position.
        return windows.unseen_call_result(self, call, dispatch.unknown_call(call))

    def call_lambda(self, function: LambdaValue, call: "base.Call", frame: Frame) -> Value:
        """``lambda t: rearrange(t, ...)`` applied: its body evaluated with the parameters bound,
        seeing the names of the scope it was written in."""
        params = function.node.params
        if frame.depth >= self.depth_limit or isinstance(params.star_arg, cst.Param) or params.star_kwarg is not None:
            return dispatch.unknown_call(call)
        env = dict(function.env)
        positional = list(params.posonly_params) + list(params.params)
        for index, param in enumerate(positional + list(params.kwonly_params)):
            name = param.name.value
            if index < len(call.args) and index < len(positional):
                env[name] = call.args[index]
            elif name in call.kwargs:
                env[name] = call.kwargs[name]
            elif param.default is not None:
                env[name] = self.eval(param.default, frame)
            else:
                env[name] = UNKNOWN
        inner = Frame(env, frame.run, frame.assumptions, frame.self_value, [], frame.depth + 1)
        return self.eval(function.node.body, inner)

    def inline(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        call: "base.Call",
        frame: Frame,
        self_value: ObjectValue | None,
        closure: dict[str, Value] | None = None,
    ) -> Value:
        """Analyse a callee of this file with the actual arguments (interprocedural within a file);
        a nested function also sees the names of its enclosing scope (``closure``)."""
        # A method of the same instance (``self.split(t)``, ``super().forward(x)``) is part of this
        # module's own code, and a plain function (``eager_attention_forward`` -> ``repeat_kv``) a
        # helper of it: the shallow limit of a standalone run of a nested class cuts only the
        # modules it builds (each is analysed in full through its parents anyway).
        own_code = self_value is None or self_value is frame.self_value
        limit = MAX_INLINE_DEPTH if own_code else self.depth_limit
        if (
            frame.depth >= limit
            or node in self.call_stack
            or "*" in call.kwargs
        ):
            forget_modes(frame, call, passed_only=False)  # a callee not followed may switch any model
            return dispatch.unknown_call(call)
        if self.budget.steps < 200:
            forget_modes(frame, call, passed_only=False)
            return dispatch.unknown_call(call)
        entering_foreign = False
        if self.graph is not None:
            scope = self.graph.home.get(node)
            if scope is not None and scope.source.path != self.own_path:
                if frame.depth >= MAX_FOREIGN_DEPTH or not self._foreign_allowed(node):
                    forget_modes(frame, call, passed_only=False)  # as any callee not followed
                    return dispatch.unknown_call(call)
                entering_foreign = self._foreign_entry is None
        if not entering_foreign:
            return self._inline(node, qualname, cls, call, frame, self_value, closure)
        self._foreign_entry = self.budget.steps
        try:
            return self._inline(node, qualname, cls, call, frame, self_value, closure)
        finally:
            if self.foreign_allowance is not None:
                self.foreign_allowance = self._foreign_steps_left()
            self._foreign_entry = None

    def _inline(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        call: "base.Call",
        frame: Frame,
        self_value: ObjectValue | None,
        closure: dict[str, Value] | None,
    ) -> Value:
        # ``self.fn(self.norm(x), **kwargs)``: a wrapper delegating to its child is followed; the
        # parameters ``**kwargs`` may fill are unknown, never their defaults.
        kwargs = {name: value for name, value in call.kwargs.items() if name != "**"}
        bindings = self.bind_parameters(
            node, call.args, kwargs, standalone=False, skip_self=self_value is not None, self_value=self_value,
            open_kwargs="**" in call.kwargs,
        )
        if self_value is not None and node.params.params and not is_static(node):
            bindings[node.params.params[0].name.value] = self_value
        check_arguments(self, node, bindings, call, frame)
        if closure:
            bindings = {**closure, **bindings}
        result = self.run_function(
            node, qualname, cls, bindings, self_value, frame.depth + 1, inlined=True,
            assumptions=frame.assumptions,
            parent=frame.run if frame.run.node is not None else None, call_node=call.node, caller=frame,
            arguments=_argument_nodes(node, call, skip_self=self_value is not None),
        )
        self._run_number_fallbacks(node, qualname, cls, call, bindings, frame, self_value)
        return result

    def _foreign_allowed(self, node: cst.FunctionDef) -> bool:
        """Whether a call of this function of another module is followed: with steps left for code
        of other modules (counted where such code is entered, whatever it calls in turn) and, from
        a module-level function, a calling context left."""
        if self.foreign_allowance is not None and self._foreign_steps_left() <= 0:
            return False
        return self._foreign_context_left(node)

    def _foreign_steps_left(self) -> int:
        """The steps left for code of other modules, counting those of the call into another
        module under way."""
        assert self.foreign_allowance is not None
        if self._foreign_entry is None:
            return self.foreign_allowance
        return self.foreign_allowance - (self._foreign_entry - self.budget.steps)

    def _foreign_context_left(self, node: cst.FunctionDef) -> bool:
        """Whether this function of another module may be followed in one more calling context
        (and count it)."""
        if self.foreign_contexts is None:
            return True
        left = self.foreign_contexts.get(node, MAX_FOREIGN_CONTEXTS)
        if left <= 0:
            return False
        self.foreign_contexts[node] = left - 1
        return True

    def _run_number_fallbacks(
        self,
        node: cst.FunctionDef,
        qualname: str,
        cls: ClassInfo | None,
        call: "base.Call",
        bindings: dict[str, Value],
        frame: Frame,
        self_value: ObjectValue | None,
    ) -> None:
        """``if scaling is None: scaling = query.size(-1) ** -0.5`` in a helper every caller passes
        ``scaling=self.scaling``: the fallback is code a caller reaches by leaving the argument out,
        and only a run with the caller's tensors can judge it. So a callee given a number for a
        parameter whose default is ``None`` and that it fills in when ``None`` runs once more with
        the argument left out (its own context; what it returns is dropped). Numbers only: the
        other run differs from this one by a number, not by which tensors flow."""
        if self.hypothetical or self_value is not None:
            return  # plain functions only: a method's run could leave its other numbers on the instance
        names = [
            name for name in _number_fallbacks(node)
            if isinstance(bindings.get(name), FloatValue) and _given(node, name, call, self_value is not None)
        ]
        if not names or self.budget.steps < 200:
            return
        left_out = dict(bindings)
        for name in names:
            left_out[name] = ConstValue(None)
        saved_modes = dict(frame.modes)
        self.hypothetical = True
        try:
            self.run_function(
                node, qualname, cls, left_out, self_value, frame.depth + 1, inlined=True,
                parent=frame.run if frame.run.node is not None else None, call_node=call.node, caller=frame,
            )
        finally:
            self.hypothetical = False
            frame.modes = saved_modes

    def instantiate(self, info: ClassInfo, call: "base.Call", frame: Frame) -> Value:
        self.facts.instantiations.append((call.node, info))
        self.sites.setdefault(info.qualname, []).append(call)
        owner = frame.run.cls
        if owner is not None and owner is not info:
            self.nested_classes.add(info.qualname)
        self._inherit_from_project(info)
        obj = ObjectValue(info, {}, ModuleIdent(info.name + "(...)", call.node))
        if info.is_module:
            adopt_children(list(call.args) + list(call.kwargs.values()), frame)
            track_new_model(obj.ident, call.node, frame)
        if info.is_dataclass and "__init__" not in info.methods:
            names = list(info.fields)
            for index, name in enumerate(names):
                if index < len(call.args):
                    obj.attrs[name] = _with_origin(call.args[index], call.arg_nodes[index] if index < len(call.arg_nodes) else None, f"{info.name}({name}=...)")
                elif name in call.kwargs:
                    obj.attrs[name] = _with_origin(call.kwargs[name], call.kwarg_nodes.get(name), f"{info.name}({name}=...)")
                else:
                    default = info.fields[name]
                    value = self.class_level_value(info, default) if default is not None else UNKNOWN
                    obj.attrs[name] = _with_origin(value, default, f"{info.name}.{name} default")
            return obj
        init = info.methods.get("__init__")
        if init is not None and frame.depth < MAX_INLINE_DEPTH and init not in self.call_stack:
            owner = info.owner_of("__init__")
            self.inline(init, owner.qualname + ".__init__", owner, call, frame, obj)
        elif init is None and info.nn_base is not None:
            layer = dispatch.call_qualified(self, info.nn_base, call, frame)  # ``LayerNorm(d)`` of a subclass
            if isinstance(layer, ModuleValue):
                obj.attrs[dispatch.NN_BASE] = layer
        return obj

    def _inherit_from_project(self, info: ClassInfo) -> None:
        """Parents in other project files (``class Decoder(layers.Block)``): inherit their methods,
        once, when the class is first instantiated."""
        if self.graph is None or info.project_parents_done:
            return
        info.project_parents_done = True
        from shapecheck.engine.interpreter.project import absolute_name

        scope = self.graph.class_home.get(info.node)
        home = scope.source if scope is not None else self.home_module
        for base in info.bases:
            if base.startswith("."):
                if home is None:
                    continue
                base = absolute_name(base, home)  # ``from ..modules import Block`` in that class's file
            resolved = self.project_value(QualifiedValue(base))
            if isinstance(resolved, ClassValue) and resolved.info is not info:
                self._inherit_from_project(resolved.info)
                info.inherit(resolved.info)


    def class_level_value(self, info: ClassInfo, node: cst.BaseExpression) -> Value:
        """A dataclass field's default: a literal, else the expression evaluated at the top level of
        the class's own module (``n_embd: int = N_EMBD`` with ``N_EMBD`` from another file)."""
        value = literal_value(node)
        if value is not None:
            return value
        names = self.names_of(self.graph.class_home.get(info.node) if self.graph is not None else None, info.node)
        saved = None
        if names is not None and names[2] != self.home_path:
            saved = (self.globals, self.imports, self.home_path, self.home_module)
            self.globals, self.imports, self.home_path, self.home_module = names
        try:
            return self.eval(node, self._module_frame())
        except RecursionError:
            return UNKNOWN
        finally:
            if saved is not None:
                self.globals, self.imports, self.home_path, self.home_module = saved


def _literal_dict(node: cst.BaseExpression) -> DictValue | None:
    """A default written as a dict of literals, ``norm_cfg=dict(type='BN1d')`` or
    ``{'type': 'BN1d'}`` (mmpretrain's layer configurations): that dict."""
    entries: list[tuple[str, Value]] = []
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "dict":
        for arg in node.args:
            value = literal_value(arg.value)
            if arg.keyword is None or arg.star or value is None:
                return None
            entries.append((arg.keyword.value, value))
        return DictValue(tuple(entries))
    if isinstance(node, cst.Dict):
        for element in node.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            key, value = element.key.evaluated_value, literal_value(element.value)
            if not isinstance(key, str) or value is None:
                return None
            entries.append((key, value))
        return DictValue(tuple(entries))
    return None


def _with_origin(value: Value | None, node: cst.CSTNode | None, label: str) -> Value:
    """A configuration number keeps where it was written (a finding about it lands there)."""
    if isinstance(value, IntValue) and value.origin is None and node is not None:
        return IntValue(value.dim, Origin(node, label))
    return value if value is not None else UNKNOWN


def _number_fallbacks(node: cst.FunctionDef) -> list[str]:
    """Parameters defaulting to ``None`` that the body fills in at its top level when left out
    (``if scaling is None: scaling = ...``)."""
    params = list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params)
    optional = {
        param.name.value for param in params
        if defaults_to_none(param)
    }
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    found = []
    for statement in body:
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            continue
        test = statement.test
        if not (
            isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value in optional
            and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name) and test.comparisons[0].comparator.value == "None"
        ):
            continue
        name = test.left.value
        for line in statement.body.body:
            small = line.body if isinstance(line, cst.SimpleStatementLine) else ()
            for part in small:
                if (
                    isinstance(part, cst.Assign) and len(part.targets) == 1
                    and isinstance(part.targets[0].target, cst.Name) and part.targets[0].target.value == name
                ):
                    found.append(name)
    return found


def _given(node: cst.FunctionDef, name: str, call: "base.Call", skip_self: bool) -> bool:
    """The call passes parameter ``name`` (by keyword or by position)."""
    if name in call.kwargs:
        return True
    positional = [param.name.value for param in list(node.params.posonly_params) + list(node.params.params)]
    if skip_self and positional and not is_static(node):
        positional = positional[1:]
    return name in positional and positional.index(name) < len(call.args)


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


def is_static(node: cst.FunctionDef) -> bool:
    """A ``@staticmethod``: called through an instance, it is given no ``self``."""
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in node.decorators)


def _declares_a_real_number(imports: ImportTable, param: cst.Param) -> bool:
    """A parameter whose default is a float literal (``eps=1e-6``) or annotated ``float`` without a
    ``None`` default (``softcap: float | None = None`` may be None: ``is not None`` stays open)."""
    if isinstance(literal_value(param.default), FloatValue):
        return True
    if defaults_to_none(param):
        return False
    return annotated_class_name(imports, param.annotation) == "float"


def _declares_an_optional_real_number(imports: ImportTable, param: cst.Param) -> bool:
    """A parameter annotated ``float`` with a ``None`` default (``softcap: float | None = None``)."""
    return defaults_to_none(param) and annotated_class_name(imports, param.annotation) == "float"


def unread_number(name: str) -> FloatValue:
    """A real number the engine cannot read, named after the parameter that holds it."""
    return FloatValue(Scale.of_dim(Dim.sym(name)))


def _argument_nodes(node: cst.FunctionDef, call: "base.Call", skip_self: bool) -> dict[str, cst.CSTNode]:
    """The argument expression the call passes for each parameter it gives, bound as
    ``Interpreter.bind_parameters`` binds their values (by position, then by keyword)."""
    params = node.params
    positional = list(params.posonly_params) + list(params.params)
    if skip_self and positional and not is_static(node):
        positional = positional[1:]
    found: dict[str, cst.CSTNode] = {}
    starred = isinstance(call.node, cst.Call) and any(arg.star for arg in call.node.args)
    for index, param in enumerate(positional if not starred else ()):  # ``f(*xs)``: positions unknown
        if index < len(call.arg_nodes) and index < len(call.args) and call.arg_nodes[index] is not None:
            found[param.name.value] = call.arg_nodes[index]  # type: ignore[assignment]
    for param in positional + list(params.kwonly_params):
        name = param.name.value
        if call.kwarg_nodes.get(name) is not None:  # (Python refuses a parameter given twice)
            found[name] = call.kwarg_nodes[name]
    return found
