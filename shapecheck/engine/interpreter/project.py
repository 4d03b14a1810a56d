"""Following the project's own imports: the other modules of the project as scopes.

A ``ModuleGraph`` turns qualified names (``pkg.layers.Attention``) into the values the interpreter
knows (a class, a function, a module-level constant) by loading the module that defines them. Each
module is loaded once per graph: its top-level statements are read by an interpreter of its own
(classes, functions, constants; never the ``if __name__ == "__main__":`` block) into a ``ModuleScope``
that every importer shares. Functions of a scope run later in the importer's interpreter, with the
importer's actual arguments, but look names up in their own module (``Interpreter.run_function``
switches to the scope that ``home`` gives for their node).

The graph never touches the file system: a ``ModuleLoader`` (``shapecheck.project.Workspace``) says
which dotted names are project modules and gives them parsed. Names outside the project (the standard
library, torch, any installed package) stay qualified names, as in a single file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

import libcst as cst

from shapecheck.engine.domain.values import QualifiedValue, Value
from shapecheck.engine.interpreter.imports import ImportTable, bindings_of, dotted_name, import_statements

#: Top-level names that are never project code, whatever the roots hold.
OPAQUE_TOP_LEVEL = frozenset(sys.stdlib_module_names) | {
    "torch", "numpy", "einops", "jaxtyping", "beartype", "typing_extensions", "builtins",
}


class SourceModule(Protocol):
    """A project module, read and parsed once."""

    name: str  # dotted name (``pkg.layers``; ``pkg`` for ``pkg/__init__.py``)
    path: str
    module: cst.Module
    source: str
    is_package: bool


class ModuleLoader(Protocol):
    def load(self, dotted: str) -> SourceModule | None:
        """The project module of that dotted name, or None when it is not one."""

    def exists(self, dotted: str) -> bool:
        """Whether ``load`` would find a module (without reading it)."""


@dataclass(eq=False)
class ModuleScope:
    """One project module's top level as the interpreter sees it."""

    source: SourceModule
    imports: ImportTable
    globals: dict[str, Value] = field(default_factory=dict)
    #: Paths of the other modules its loading read (its imports that were resolved).
    reads: set[str] = field(default_factory=set)


class ModuleGraph:
    """The project modules reached from the analysed files, loaded lazily and once."""

    def __init__(self, loader: ModuleLoader) -> None:
        self.loader = loader
        self.scopes: dict[str, ModuleScope | None] = {}
        #: Function nodes of loaded modules -> their module, for name lookup when they run.
        self.home: dict[cst.FunctionDef, ModuleScope] = {}
        #: Class statements (and their name nodes) of loaded modules -> their module.
        self.class_home: dict[cst.CSTNode, ModuleScope] = {}
        self._resolved: dict[str, tuple[Value | None, frozenset[str]]] = {}
        self._resolving: set[str] = set()
        self._exported: dict[str, frozenset[str]] = {}
        #: Open records of the module paths read (``recording``), innermost last.
        self._records: list[set[str]] = []
        #: Facts of a statement's text the interpreters of every importer share
        #: (``Interpreter.used_names``).
        self.used_names: dict[cst.BaseSmallStatement, frozenset[str]] = {}

    def recording(self) -> "_Recording":
        """``with graph.recording() as reads:`` collects the paths of every project module that
        the analysis inside reads, also through scopes and names loaded before (cached)."""
        return _Recording(self)

    def _read(self, paths: "set[str] | frozenset[str]") -> None:
        for record in self._records:
            record.update(paths)

    # ------------------------------------------------------------------ imports

    def import_table(self, source: SourceModule) -> ImportTable:
        """The module's imports with relative names made absolute; ``from x import *`` of a project
        module is kept as a star, whose names resolve when they are looked up (``star_value``)."""
        names: dict[str, str] = {}
        stars: list[str] = []
        for small in import_statements(source.module.body):
            if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                target = absolute_module(small, source)
                if target is not None and self.exists(target):
                    stars.append(target)
                continue
            for local, qualified in bindings_of(small):
                names[local] = absolute_name(qualified, source)
        return ImportTable(names, tuple(stars))

    def star_value(self, imports: ImportTable, name: str) -> Value | None:
        """A name bound by ``from x import *`` (the names of ``__all__`` when x defines it as a
        literal list, else its public names)."""
        for target in imports.stars:
            exported = self.load(target)
            if exported is None:
                continue
            self._read({exported.path})
            if name not in self._exports(exported):
                continue
            value = self.resolve(f"{target}.{name}")
            if value is not None:
                return value
        return None

    def _exports(self, source: SourceModule) -> frozenset[str]:
        if source.path not in self._exported:
            self._exported[source.path] = frozenset(public_names(source.module))
        return self._exported[source.path]

    def exists(self, dotted: str) -> bool:
        """True when the dotted name is a module of the project (without reading it)."""
        if not dotted or dotted.split(".", 1)[0] in OPAQUE_TOP_LEVEL:
            return False
        return self.loader.exists(dotted)

    def load(self, dotted: str) -> SourceModule | None:
        if not dotted or dotted.split(".", 1)[0] in OPAQUE_TOP_LEVEL:
            return None
        return self.loader.load(dotted)

    # ------------------------------------------------------------------ scopes

    def scope(self, dotted: str) -> ModuleScope | None:
        """The loaded top level of a project module (None when the name is not one)."""
        if dotted in self.scopes:
            cached = self.scopes[dotted]
            if cached is not None:
                self._read({cached.source.path} | cached.reads)
            return cached
        source = self.load(dotted)
        if source is None:
            self.scopes[dotted] = None
            return None
        self._records.append(set())
        try:
            scope = self._load_scope(dotted, source)
        finally:
            reads = self._records.pop()
        self.scopes[dotted].reads = reads - {source.path}  # type: ignore[union-attr]
        self._read(reads | {source.path})
        return scope

    def _load_scope(self, dotted: str, source: SourceModule) -> ModuleScope:
        scope = ModuleScope(source, self.import_table(source))
        self.scopes[dotted] = scope  # before loading: an import cycle finds the partial scope
        for node in definitions(source.module):
            if isinstance(node, cst.FunctionDef):
                self.home.setdefault(node, scope)
            else:
                self.class_home.setdefault(node, scope)
                self.class_home.setdefault(node.name, scope)
        from shapecheck.engine.interpreter.core import Budget, Interpreter  # core imports this module
        from shapecheck.engine.facts.records import FileFacts

        scratch = FileFacts(source.module, source.source, source.path)
        loader = Interpreter(scratch, scope.imports, Budget(200 + 60 * source.source.count("\n")), graph=self)
        loader.globals = scope.globals
        loader.home_path, loader.home_module = source.path, source
        loader.own_path = source.path
        loader.run_main_guard = False
        loader.load_module(source.module)
        return scope

    def resolve(self, qualname: str) -> Value | None:
        """The value a qualified name stands for in the project, or None when it is not project code
        (or is a module: modules stay qualified names, their members resolve one by one)."""
        if qualname in self._resolved:
            value, reads = self._resolved[qualname]
            self._read(reads)
            return value
        if qualname in self._resolving or qualname.split(".", 1)[0] in OPAQUE_TOP_LEVEL:
            return None
        self._resolving.add(qualname)
        self._records.append(set())
        try:
            value = self._resolve(qualname)
        finally:
            self._resolving.discard(qualname)
            reads = self._records.pop()
        self._resolved[qualname] = (value, frozenset(reads))
        self._read(reads)
        return value

    def _resolve(self, qualname: str) -> Value | None:
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            scope = self.scope(".".join(parts[:cut]))
            if scope is None:
                continue
            value = scope.globals.get(parts[cut])
            if value is None and scope.imports.stars:
                value = self.star_value(scope.imports, parts[cut])
            rest = parts[cut + 1 :]
            if value is None:
                return None  # a submodule (tried first, longer prefix) or a name the module lacks
            if isinstance(value, QualifiedValue):
                target = ".".join([value.qualname, *rest])
                resolved = self.resolve(target)
                if resolved is not None:
                    return resolved
                # A re-export of something outside the project (``from torch import nn``): its
                # canonical name, so that the ops know it.
                return None if self.exists(target) else QualifiedValue(target)
            return value if not rest else None
        return None

    def loaded_paths(self) -> list[str]:
        return [scope.source.path for scope in self.scopes.values() if scope is not None]


class _Recording:
    def __init__(self, graph: ModuleGraph) -> None:
        self.graph = graph
        self.reads: set[str] = set()

    def __enter__(self) -> set[str]:
        self.graph._records.append(self.reads)
        return self.reads

    def __exit__(self, *exc: object) -> None:
        popped = self.graph._records.pop()
        assert popped is self.reads


# ---------------------------------------------------------------------- helpers


def absolute_module(small: cst.ImportFrom, source: SourceModule) -> str | None:
    """The absolute module a ``from ... import`` names (None for a relative import beyond the top)."""
    module = dotted_name(small.module) if small.module is not None else ""
    dots = len(small.relative)
    if not dots:
        return module or None
    return _from_package(source, dots, module or "")


def absolute_name(qualified: str, source: SourceModule) -> str:
    """``.layers.Attention`` in ``pkg/model.py`` -> ``pkg.layers.Attention``."""
    if not qualified.startswith("."):
        return qualified
    dots = len(qualified) - len(qualified.lstrip("."))
    resolved = _from_package(source, dots, qualified[dots:])
    return resolved if resolved is not None else qualified


def _from_package(source: SourceModule, dots: int, rest: str) -> str | None:
    package = source.name.split(".") if source.is_package else source.name.split(".")[:-1]
    if dots - 1 > len(package) or (dots - 1 == len(package) and not rest):
        return None
    base = package[: len(package) - (dots - 1)]
    return ".".join([*base, rest] if rest else base) or None


def public_names(module: cst.Module) -> list[str]:
    """What ``from module import *`` binds: ``__all__`` when it is a literal list, else the names
    defined or imported at top level that do not start with an underscore."""
    names: list[str] = []
    for statement in module.body:
        if isinstance(statement, (cst.ClassDef, cst.FunctionDef)):
            names.append(statement.name.value)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            if target.target.value == "__all__":
                                declared = _literal_strings(small.value)
                                if declared is not None:
                                    return declared
                            names.append(target.target.value)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    names.append(small.target.value)
                elif isinstance(small, (cst.Import, cst.ImportFrom)):
                    names.extend(local for local, _ in bindings_of(small))
    return [name for name in names if not name.startswith("_")]


def _literal_strings(node: cst.BaseExpression) -> list[str] | None:
    if not isinstance(node, (cst.List, cst.Tuple)):
        return None
    values = []
    for element in node.elements:
        if not isinstance(element.value, cst.SimpleString):
            return None
        evaluated = element.value.evaluated_value
        if not isinstance(evaluated, str):
            return None
        values.append(evaluated)
    return values


def definitions(module: cst.Module) -> Iterator[cst.FunctionDef | cst.ClassDef]:
    """Top-level functions and classes, and the methods and classes inside those classes (also
    inside ``if`` / ``try``)."""
    pending: list[cst.CSTNode] = list(module.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, cst.FunctionDef):
            yield statement
        elif isinstance(statement, cst.ClassDef):
            yield statement
            pending.extend(statement.body.body)
        elif isinstance(statement, cst.If):
            pending.extend(statement.body.body)
            if statement.orelse is not None:
                pending.append(statement.orelse if isinstance(statement.orelse, cst.If) else statement.orelse.body)
        elif isinstance(statement, cst.IndentedBlock):
            pending.extend(statement.body)
        elif isinstance(statement, cst.Try):
            pending.extend(statement.body.body)
            for handler in statement.handlers:
                pending.extend(handler.body.body)
