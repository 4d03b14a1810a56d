"""The driver: analyses one file. It loads the module, builds every nn.Module class standalone
(constructor defaults and named unknowns), runs each method, function and module-level instance once
on its own, and lets calls between them inline with the actual arguments (``Interpreter.inline``)."""

from __future__ import annotations

import libcst as cst

from shapecheck.engine.domain.values import (
    ClassInfo,
    ClassValue,
    FunctionValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    Value,
)
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.interpreter.annotation_values import annotated_class_name, annotation_value
from shapecheck.engine.interpreter.core import (
    MAX_INLINE_DEPTH,
    Budget,
    Interpreter,
    foreign_allowance,
    is_static,
    module_level_foreign_allowance,
)
from shapecheck.engine.interpreter.imports import ImportTable
from shapecheck.engine.interpreter.project import ModuleGraph, SourceModule, definitions


def analyze_module(
    module: cst.Module,
    source: str,
    path: str,
    graph: ModuleGraph | None = None,
    this: SourceModule | None = None,
) -> FileFacts:
    """Analyse every class and function of a module that can hold tensor code.

    With a ``graph`` (and ``this``, the file as a module of the project), names imported from the
    project's other modules are followed; without, the file is analysed alone."""
    if graph is None or this is None:
        return _analyze(module, source, path, None, None)
    with graph.recording() as reads:
        facts = _analyze(module, source, path, graph, this)
    facts.project_reads = sorted(reads - {this.path})
    return facts


def _analyze(
    module: cst.Module, source: str, path: str, graph: ModuleGraph | None, this: SourceModule | None
) -> FileFacts:
    facts = FileFacts(module, source, path)
    imports = graph.import_table(this) if graph is not None and this is not None else ImportTable.from_module(module)
    facts.imports = imports
    if not imports.uses_torch() and not _imports_project_code(imports, graph):
        return facts
    lines = source.count("\n") + 1
    interpreter = Interpreter(facts, imports, Budget(200 + 60 * lines), graph=graph)
    if graph is not None and this is not None:
        interpreter.home_path, interpreter.home_module = this.path, this
        interpreter.own_path = this.path
        interpreter.foreign_allowance = foreign_allowance(lines)
    interpreter.load_module(module)
    if graph is not None and this is not None:
        interpreter.own_names = (interpreter.globals, interpreter.imports, interpreter.own_path, this)
        interpreter.own_definitions = set(definitions(module))
    classes = [v.info for v in interpreter.globals.values() if isinstance(v, ClassValue) and v.info.is_module]
    instances = {info.qualname: _construct_standalone(interpreter, info) for info in classes}
    for info in classes:
        passed = _passed_in_modules(interpreter, info)
        if passed:
            _forget(facts, instances[info.qualname])
            instances[info.qualname] = _construct_standalone(interpreter, info, passed)
    interpreter.standalone_instances = instances
    for info in classes:
        # A class that other classes of the file build is analysed in full through them; on its
        # own it inlines only its direct children, so a deep model costs O(depth), not O(depth^2).
        interpreter.depth_limit = 1 if info.qualname in interpreter.nested_classes else MAX_INLINE_DEPTH
        _analyze_methods(interpreter, info, instances[info.qualname])
    interpreter.depth_limit = MAX_INLINE_DEPTH
    _analyze_tensor_methods_of_plain_classes(interpreter)
    interpreter.foreign_contexts = {}  # MAX_FOREIGN_CONTEXTS: many variants, few contexts each
    if interpreter.foreign_allowance is not None:
        interpreter.foreign_allowance = module_level_foreign_allowance(lines, interpreter.foreign_allowance)
    for value in list(interpreter.globals.values()):
        if isinstance(value, FunctionValue) and value.owner is None:
            bindings = interpreter.bind_parameters(value.node, (), {}, standalone=True, skip_self=False)
            interpreter.run_function(value.node, value.qualname, None, bindings, None, 0, inlined=False)
    _analyze_module_level_instances(interpreter)
    # Methods of classes that are not modules (configs, tokenizers) run only when a module calls them.
    return facts


def _analyze_tensor_methods_of_plain_classes(interpreter: Interpreter) -> None:
    """Classes that are not modules but compute with tensors (a diffusers attention processor:
    ``__call__(self, attn: "Attention", hidden_states: torch.Tensor, ...)``): the methods that take
    a tensor or one of the file's module classes by annotation run standalone, that parameter
    bound to the annotation's tensor or the class's standalone instance. Other methods of such
    classes (configs, tokenizers) run only when a module calls them."""
    for value in list(interpreter.globals.values()):
        if not isinstance(value, ClassValue) or value.info.is_module:
            continue
        methods = [
            (name, method) for name, method in value.info.methods.items()
            if name != "__init__" and _takes_tensors(interpreter, method)
        ]
        if not methods:
            continue
        obj = _construct_standalone(interpreter, value.info)
        for name, method in methods:
            bindings = interpreter.bind_parameters(method, (), {}, standalone=True, skip_self=True, self_value=obj)
            if method.params.params and not is_static(method):
                bindings[method.params.params[0].name.value] = obj
            interpreter.run_function(method, f"{value.info.qualname}.{name}", value.info, bindings, obj, 0, inlined=False)


def _takes_tensors(interpreter: Interpreter, method: cst.FunctionDef) -> bool:
    params = method.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if annotation_value(interpreter.imports, param.annotation) is not None:
            return True
        name = annotated_class_name(interpreter.imports, param.annotation)
        if name is not None and isinstance(interpreter.globals.get(name), ClassValue):
            if interpreter.globals[name].info.qualname in interpreter.standalone_instances:
                return True
    return False


def _imports_project_code(imports: ImportTable, graph: ModuleGraph | None) -> bool:
    """True when the file imports a module of the project that holds tensor code."""
    if graph is None:
        return False
    for qualified in imports.names.values():
        parts = qualified.split(".")
        for cut in range(len(parts), 0, -1):
            scope = graph.scope(".".join(parts[:cut]))
            if scope is not None:
                if scope.imports.uses_torch():
                    return True
                break
    return False


def _analyze_module_level_instances(interpreter: Interpreter) -> None:
    """Modules instantiated at module level with known arguments (``layer = EncoderLayer(512, 6)``):
    run their forward with those constructor values."""
    for value in list(interpreter.globals.values()):
        if not isinstance(value, ObjectValue) or not value.cls.is_module or value.ident.node is None:
            continue
        forward = value.cls.methods.get("forward")
        if forward is None:
            continue
        bindings = interpreter.bind_parameters(forward, (), {}, standalone=True, skip_self=True, self_value=value)
        if forward.params.params:
            bindings[forward.params.params[0].name.value] = value
        interpreter.run_function(
            forward, f"{value.cls.qualname}.forward", value.cls, bindings, value, 1, inlined=True, call_node=value.ident.node
        )


def _passed_in_modules(interpreter: Interpreter, info: ClassInfo) -> dict[str, Value]:
    """Constructor parameters that receive a module (``Attention(q_proj=nn.Linear(...))``, a
    builder function's product): the module, when the file builds the class at one place."""
    init = info.methods.get("__init__")
    calls = interpreter.sites.get(info.qualname, [])
    if init is None or not calls or len({id(call.node) for call in calls}) != 1:
        return {}
    passed: dict[str, Value] = {}
    for call in calls:
        if "*" in call.kwargs or "**" in call.kwargs:
            return {}
        bindings = interpreter.bind_parameters(init, call.args, call.kwargs, standalone=False, skip_self=True)
        for name, value in bindings.items():
            if name not in passed and (isinstance(value, ModuleValue) or isinstance(value, ObjectValue) and value.cls.is_module):
                passed[name] = value
    return passed


def _forget(facts: FileFacts, obj: ObjectValue) -> None:
    """Drop what the standalone construction of ``obj`` recorded (it is built again)."""
    first = next((run for run in facts.runs if run.instance is obj and not run.inlined), None)
    if first is None:
        return

    def gone(run) -> bool:
        return run is not None and any(link is first for link in run.chain())

    facts.runs = [run for run in facts.runs if not gone(run)]
    facts.events = [event for event in facts.events if not gone(event.run)]
    facts.conflicts = [item for item in facts.conflicts if not gone(item.run)]
    facts.constructions = [item for item in facts.constructions if not gone(item.run)]
    facts.attribute_assignments = [item for item in facts.attribute_assignments if not gone(item.run)]
    facts.divisibility = [item for item in facts.divisibility if not gone(item.run)]
    facts._by_op = None


def _construct_standalone(interpreter: Interpreter, info: ClassInfo, passed: dict[str, Value] | None = None) -> ObjectValue:
    """The class built with its constructor defaults and named unknowns (and the modules ``passed``
    in where the file builds it)."""
    obj = ObjectValue(info, {}, ModuleIdent(info.name))
    init = info.methods.get("__init__")
    if init is not None:
        bindings = interpreter.bind_parameters(init, (), {}, standalone=True, skip_self=True)
        for name, value in (passed or {}).items():
            if isinstance(bindings.get(name), Opaque):
                bindings[name] = value
        if init.params.params:
            bindings[init.params.params[0].name.value] = obj
        interpreter.run_function(init, f"{info.qualname}.__init__", info, bindings, obj, 0, inlined=False)
    return obj


def _analyze_methods(interpreter: Interpreter, info: ClassInfo, obj: ObjectValue) -> None:
    """Each method runs on the instance as its constructor left it: what one method assigns to
    ``self`` (a setter's ``self.embed_tokens = value``, with ``value`` unknown when run alone) does
    not leak into the next method's run, as if the setter had been called before ``forward``."""
    for name, method in info.methods.items():
        if name == "__init__":
            continue
        bindings = interpreter.bind_parameters(method, (), {}, standalone=True, skip_self=True, self_value=obj)
        if method.params.params and not is_static(method):
            bindings[method.params.params[0].name.value] = obj
        saved = _attribute_snapshot(obj)
        interpreter.run_function(method, f"{info.qualname}.{name}", info, bindings, obj, 0, inlined=False)
        for instance, attrs in saved:  # restored whole: comparing values first would cost more
            instance.attrs.clear()
            instance.attrs.update(attrs)


def _attribute_snapshot(obj: ObjectValue) -> list[tuple[ObjectValue, dict[str, Value]]]:
    """The attributes of ``obj`` and of every instance of the file's classes reachable from it
    (its submodules, their children, the modules in its containers), copied."""
    saved: list[tuple[ObjectValue, dict[str, Value]]] = []
    seen: set[int] = set()
    pending: list[Value] = [obj]
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, ObjectValue):
            saved.append((value, dict(value.attrs)))
            pending.extend(value.attrs.values())
        elif isinstance(value, ModuleValue):
            pending.extend(value.items)
            pending.extend(value.named.values())
    return saved
