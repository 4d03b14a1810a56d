"""The projects a run lints: where their roots are, which dotted names are their modules, and each of
their files read and parsed once per run.

Roots of a file, in order: the ``src = [...]`` folders of its ``[tool.shapecheck]`` table (relative to
that ``pyproject.toml``); the folder above its top package (the highest folder of ``__init__.py``
files that holds it; its own folder for a loose script); the folder of the nearest
``pyproject.toml`` and its ``src/`` when there is one. ``pkg.layers`` is then ``ROOT/pkg/layers.py``
or ``ROOT/pkg/layers/__init__.py`` under the first root that has it. Nothing is imported or run.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from pathlib import Path

import libcst as cst

from shapecheck.engine import ModuleGraph
from shapecheck.engine.interpreter.project import OPAQUE_TOP_LEVEL
from shapecheck.positions import PositionIndex
from shapecheck.suppression import Suppressions, has_ignore_file

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.facts.records import FileFacts

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: ``path -> src roots`` from the configuration (``[tool.shapecheck] src``), already absolute.
ConfiguredRoots = Callable[[Path], Sequence[Path]]


@dataclass(eq=False)
class ProjectModule:
    """One file of the project: its dotted name, text and tree (``SourceModule`` for the engine)."""

    name: str
    path: str
    module: cst.Module
    source: str
    is_package: bool
    digest: str


class Workspace:
    """One run's view of the code it reads. Files are parsed once and shared by every importer and
    by the lint of the file itself; one ``ModuleGraph`` per set of roots shares the analysis of each
    module's top level across its importers."""

    def __init__(self, configured_roots: ConfiguredRoots | None = None) -> None:
        self._configured = configured_roots
        self._files: dict[Path, ProjectModule | None] = {}
        self._roots: dict[Path, tuple[Path, ...]] = {}
        self._graphs: dict[tuple[Path, ...], ModuleGraph] = {}
        self._located: dict[tuple[tuple[Path, ...], str], Path | None] = {}
        self._homes: dict[str, ModuleHome] = {}
        #: The files this run reports (resolved paths) with the codes selected in each; None: every
        #: file and code (a library caller that keeps every finding it is given).
        self.reported: dict[str, frozenset[str]] | None = None

    # ------------------------------------------------------------------ roots

    def roots_for(self, path: Path) -> tuple[Path, ...]:
        folder = path.resolve().parent
        if folder not in self._roots:
            roots: list[Path] = []
            if self._configured is not None:
                roots.extend(root.resolve() for root in self._configured(path))
            top = folder
            while (top / "__init__.py").is_file() and top.parent != top:
                top = top.parent
            roots.append(top)
            pyproject = _nearest_pyproject(folder)
            if pyproject is not None:
                if self._configured is None:
                    roots.extend(pyproject.parent / src for src in _src_setting(pyproject))
                roots.append(pyproject.parent)
                if (pyproject.parent / "src").is_dir():
                    roots.append(pyproject.parent / "src")
            self._roots[folder] = tuple(dict.fromkeys(r.resolve() for r in roots))
        return self._roots[folder]

    def module_name(self, path: Path, roots: Sequence[Path]) -> tuple[str, bool] | None:
        """(dotted name, is a package) of a file under one of the roots."""
        resolved = path.resolve()
        for root in roots:
            try:
                relative = resolved.relative_to(root)
            except ValueError:
                continue
            parts = list(relative.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            if parts and all(part.isidentifier() for part in parts):
                return ".".join(parts), is_package
        return None

    def locate(self, dotted: str, roots: tuple[Path, ...]) -> Path | None:
        key = (roots, dotted)
        if key not in self._located:
            found = None
            parts = dotted.split(".")
            if parts[0] not in OPAQUE_TOP_LEVEL and all(part.isidentifier() for part in parts):
                relative = Path(*parts)
                for root in roots:
                    for candidate in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
                        if candidate.is_file():
                            found = candidate.resolve()
                            break
                    if found is not None:
                        break
            self._located[key] = found
        return self._located[key]

    # ------------------------------------------------------------------ files

    def file(self, path: Path, name: str = "", is_package: bool = False) -> ProjectModule | None:
        """The file read and parsed (once); None when it cannot be read or parsed."""
        resolved = path.resolve()
        if resolved not in self._files:
            from shapecheck.hostile import MAX_OPERATOR_CHAIN, longest_operator_chain
            from shapecheck.linter import MAX_BRACKET_DEPTH, SourceError, max_bracket_depth, read_source
            from shapecheck.parsing import parse_module

            try:
                source = read_source(resolved)
                if max_bracket_depth(source) > MAX_BRACKET_DEPTH:
                    raise SourceError("too deeply nested")  # libcst's parser would overflow the C stack
                if longest_operator_chain(source)[0] > MAX_OPERATOR_CHAIN:
                    raise SourceError("operator chain too long")  # libcst's parse time explodes on it
                module = parse_module(source)
            except (SourceError, cst.ParserSyntaxError, RecursionError, MemoryError):
                self._files[resolved] = None
            else:
                digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
                self._files[resolved] = ProjectModule(name, str(resolved), module, source, is_package, digest)
        found = self._files[resolved]
        if found is not None and name and not found.name:
            found.name, found.is_package = name, is_package
        return found

    def context(self, path: Path) -> tuple[ModuleGraph, ProjectModule] | None:
        """The graph and the module object for a linted file (None when it is not parseable)."""
        roots = self.roots_for(path)
        named = self.module_name(path, roots)
        name, is_package = named if named is not None else (path.stem, False)
        this = self.file(path, name, is_package)
        if this is None:
            return None
        return self.graph(roots), this

    def graph(self, roots: tuple[Path, ...]) -> ModuleGraph:
        if roots not in self._graphs:
            self._graphs[roots] = ModuleGraph(_Loader(self, roots))
        return self._graphs[roots]

    # ------------------------------------------------------------------ dependencies

    def digests(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """(path, sha256 of its text) of files this run read, sorted: what a cached result of a
        file depends on (the file and the project modules its analysis read)."""
        found = (self._files.get(Path(path)) for path in set(paths))
        return sorted((module.path, module.digest) for module in found if module is not None)

    def reports(self, path: str, code: str) -> bool:
        """Whether a finding of ``code`` placed in the file at ``path`` is shown by this run."""
        return self.reported is None or code in self.reported.get(path, frozenset())

    def home(self, module: ProjectModule) -> "ModuleHome":
        """Positions and suppression comments of a project module (computed once per run)."""
        if module.path not in self._homes:
            self._homes[module.path] = ModuleHome(
                module.path,
                PositionIndex(module.module),
                Suppressions.from_source(module.source),
                not has_ignore_file(module.source),
            )
        return self._homes[module.path]


@dataclass(eq=False)
class ModuleHome:
    """Where a finding in another module of the project is reported."""

    path: str
    positions: PositionIndex
    suppressions: Suppressions
    reportable: bool  # False for a file marked ``# shapecheck: ignore-file``


@dataclass(eq=False)
class LintContext:
    """A linted file placed in its project: the graph of the modules it imports and itself."""

    workspace: Workspace
    graph: ModuleGraph
    this: ProjectModule
    _functions: dict = field(default_factory=dict)

    @classmethod
    def for_file(cls, workspace: Workspace, path: Path) -> "LintContext | None":
        found = workspace.context(path)
        return cls(workspace, *found) if found is not None else None

    def index(self, facts: "FileFacts") -> None:
        """Remember the function each node of the facts was evaluated in, so that ``home_of``
        finds a node's module without computing the positions of every imported module."""
        functions: dict[cst.CSTNode, cst.CSTNode] = {}
        for event in facts.events:
            if event.run is not None and event.run.node is not None:
                for node in (event.node, *event.arg_nodes, *event.kwarg_nodes.values()):
                    if node is not None:
                        functions.setdefault(node, event.run.node)
        for record in (*facts.conflicts, *facts.constructions, *facts.divisibility, *facts.attribute_assignments):
            if record.run is not None and record.run.node is not None:
                functions.setdefault(record.node, record.run.node)
        for run in facts.runs:
            if run.call_node is not None and run.parent is not None and run.parent.node is not None:
                functions.setdefault(run.call_node, run.parent.node)
        self._functions = functions

    def home_of(self, node: cst.CSTNode, positions: PositionIndex) -> ModuleHome | None:
        """The other project module that holds ``node`` (None: this file, or not found)."""
        function = self._functions.get(node)
        scope = self.graph.home.get(function) if function is not None else self.graph.class_home.get(node)  # type: ignore[arg-type]
        if function is not None or scope is not None:
            if scope is None or scope.source.path == self.this.path:
                return None
            return self.workspace.home(scope.source)  # type: ignore[arg-type]
        if node in positions:
            return None
        for scope in list(self.graph.scopes.values()):
            if scope is None or scope.source.path == self.this.path:
                continue
            home = self.workspace.home(scope.source)  # type: ignore[arg-type]
            if node in home.positions:
                return home
        return None


class _Loader:
    """The ``ModuleLoader`` of one set of roots."""

    def __init__(self, workspace: Workspace, roots: tuple[Path, ...]) -> None:
        self.workspace = workspace
        self.roots = roots

    def exists(self, dotted: str) -> bool:
        return self.workspace.locate(dotted, self.roots) is not None

    def load(self, dotted: str) -> ProjectModule | None:
        located = self.workspace.locate(dotted, self.roots)
        if located is None:
            return None
        return self.workspace.file(located, dotted, located.name == "__init__.py")


def _nearest_pyproject(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            return pyproject
    return None


def _src_setting(pyproject: Path) -> list[str]:
    """``[tool.shapecheck] src`` of a pyproject.toml read outside a run's configuration."""
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []
    table = data.get("tool", {}).get("shapecheck", {})
    src = table.get("src", []) if isinstance(table, dict) else []
    return [item for item in src if isinstance(item, str)] if isinstance(src, list) else []
