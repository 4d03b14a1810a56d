"""Names a function binds and never reads: dead stores.

A value assigned to a local name that no code of the function reads again (not later, not in a loop,
not in a nested function or comprehension) reaches nothing. Rules ask which of the values the engine
computed at such an assignment were dropped (SC303: positional embeddings computed and never added).
This is a fact of the function's text, the same in every run of it; what the value was is the run's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from shapecheck.engine.facts.records import Assignment, FileFacts, FunctionRun

#: Calls that read a function's locals by name: a function that makes one has no dead stores we can tell.
READS_LOCALS = frozenset({"locals", "vars", "eval", "exec"})


def target_leaves(target: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The places an assignment target binds: ``x``, each of ``a, (b, *c)``, ``self.x``."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_leaves(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_leaves(target.value)
    else:
        yield target


class _Names(cst.CSTVisitor):
    """Every ``Name`` of a function, and which of them are plain assignment targets (stores). A name
    anywhere else counts as a read, so doubt always makes a name read: ``x += 1``, ``del x``, a
    ``with ... as x``, a keyword of ``global`` / ``nonlocal``."""

    def __init__(self) -> None:
        self.stores: set[int] = set()
        self.names: list[cst.Name] = []
        self.opaque = False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def _store(self, target: cst.BaseExpression) -> None:
        self.stores.update(id(leaf) for leaf in target_leaves(target) if isinstance(leaf, cst.Name))

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)  # ``self.pos_emb``: the attribute's name is no local
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)  # ``f(pos_emb=...)``: the keyword is no local
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in READS_LOCALS:
            self.opaque = True

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)


def unread_names(function: cst.FunctionDef) -> frozenset[str]:
    """The local names ``function`` assigns (plainly: ``x = ...``, ``a, b = ...``, ``for x in``) and
    never reads anywhere in its body. Empty when the function reads its locals by name
    (``locals()``, ``vars()``, ``eval``)."""
    visitor = _Names()
    function.body.visit(visitor)
    if visitor.opaque:
        return frozenset()
    stored = {name.value for name in visitor.names if id(name) in visitor.stores}
    read = {name.value for name in visitor.names if id(name) not in visitor.stores}
    return frozenset(stored - read)


def dead_stores(facts: FileFacts, candidate: Callable[[Assignment], bool]) -> Iterator[tuple[FunctionRun, Assignment]]:
    """Every assignment of a run that ``candidate`` accepts, to a local name its function never
    reads, with the value the run computed there (one per run: a function run standalone and inlined
    gives one each). Only functions with a candidate are read (a walk of the function's text)."""
    read: dict[int, frozenset[str]] = {}  # per function (its runs share its text), for this file only
    for run in facts.runs:
        if not isinstance(run.node, cst.FunctionDef):
            continue
        candidates = [assignment for assignment in run.assignments if "." not in assignment.name and candidate(assignment)]
        if not candidates:
            continue
        if id(run.node) not in read:
            read[id(run.node)] = unread_names(run.node)
        unread = read[id(run.node)]
        for assignment in candidates:
            if assignment.name in unread:
                yield run, assignment
