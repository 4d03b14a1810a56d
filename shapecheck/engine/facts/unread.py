"""Names a function binds and never reads: dead stores.

A value assigned to a local name that no code of the function reads again (not later, not in a loop,
not in a nested function or comprehension) reaches nothing. Rules ask which of the values the engine
computed at such an assignment were dropped (SC303: positional embeddings computed and never added).
This is a fact of the function's text, the same in every run of it; what the value was is the run's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import libcst as cst

from shapecheck.engine.facts import walk
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
        walk.visit(node.value, self)  # ``self.pos_emb``: the attribute's name is no local
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk.visit(node.value, self)  # ``f(pos_emb=...)``: the keyword is no local
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
    walk.visit(function.body, visitor)
    if visitor.opaque:
        return frozenset()
    stored = {name.value for name in visitor.names if id(name) in visitor.stores}
    read = {name.value for name in visitor.names if id(name) not in visitor.stores}
    return frozenset(stored - read)


#: A frame of the statement nesting: (id of an ``if`` and the branch, "body" or "else"), or (id of
#: a loop, "loop") for what a loop repeats (its body; a ``while``'s test too).
_Frame = tuple[int, str]


#: The nodes that open a scope of their own: a read inside runs whenever it is called.
_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


class _Flow(cst.CSTVisitor):
    """Where each statement and each read of a function sits: its place in the text (entry and exit
    counters of a pre-order walk) and its frames (the ``if`` branches and loops around it), and
    which reads are in a nested function, lambda or class (a closure: read whenever it is called)."""

    def __init__(self, reads: set[int]) -> None:
        self.counter = 0
        self.entry: dict[int, int] = {}
        self.exit: dict[int, int] = {}
        self.frames_of: dict[int, tuple[_Frame, ...]] = {}
        self.frames: tuple[_Frame, ...] = ()  # the frames around the node being visited
        self.scopes = 0
        self._reads = reads
        #: name -> [(entry counter, frames, in a nested scope)]
        self.reads: dict[str, list[tuple[int, tuple[_Frame, ...], bool]]] = {}

    def _inside(self, frame: _Frame, *children: cst.CSTNode | None) -> None:
        outer = self.frames
        self.frames = outer + (frame,)
        for child in children:
            if child is not None:
                walk.visit(child, self)
        self.frames = outer

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Exact classes, not ``isinstance``: libcst's node classes are abstract-base subclasses, slow
        # to test, and these are final.
        self.counter += 1
        self.entry[id(node)] = self.counter
        self.frames_of[id(node)] = self.frames
        kind = type(node)
        if kind is cst.Name:
            if id(node) in self._reads:
                self.reads.setdefault(node.value, []).append((self.counter, self.frames, self.scopes > 0))
            return True
        if kind is cst.If:
            walk.visit(node.test, self)
            self._inside((id(node), "body"), node.body)
            self._inside((id(node), "else"), node.orelse)
            return False
        if kind is cst.For:
            walk.visit(node.target, self)
            walk.visit(node.iter, self)
            self._inside((id(node), "loop"), node.body)
            if node.orelse is not None:
                walk.visit(node.orelse, self)
            return False
        if kind is cst.While:
            self._inside((id(node), "loop"), node.test, node.body)
            if node.orelse is not None:
                walk.visit(node.orelse, self)
            return False
        if kind in _SCOPES:
            self.scopes += 1
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.counter += 1
        self.exit[id(original_node)] = self.counter
        if type(original_node) in _SCOPES:
            self.scopes -= 1

    def read_after(self, statement: cst.CSTNode, name: str) -> bool:
        """Some read of ``name`` may run after ``statement``: later in the text and not in the other
        branch of an ``if`` the statement is in, or anywhere in a loop around both, or in a closure.
        A statement outside the walk (unknown) may be read after."""
        end = self.exit.get(id(statement))
        if end is None:
            return True
        begin = self.entry[id(statement)]
        # An assignment binds its targets once its value is computed: reads inside it come before.
        # A ``for`` loop, a comprehension's variable, a ``with ... as``: reads inside come after.
        inside_first = _assigns(statement, name)
        mine = self.frames_of[id(statement)]
        loops = {frame for frame in mine if frame[1] == "loop"}
        branches = {frame[0]: frame[1] for frame in mine if frame[1] != "loop"}
        for start, frames, closure in self.reads.get(name, ()):
            if closure or any(frame in loops for frame in frames):
                return True
            if begin < start < end and not inside_first:
                return True
            if any(branches.get(node, branch) != branch for node, branch in frames if branch != "loop"):
                continue  # the other branch of an ``if`` this statement is in
            if start > end:
                return True
        return False


def _assigns(statement: cst.CSTNode, name: str) -> bool:
    """``statement`` is an assignment (``name = ...``, ``a, name = ...``, ``name: T = ...``) with
    ``name`` among its targets."""
    smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,)
    for small in smalls:
        if isinstance(small, cst.Assign):
            targets = [leaf for target in small.targets for leaf in target_leaves(target.target)]
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            targets = list(target_leaves(small.target))
        else:
            continue
        if any(isinstance(leaf, cst.Name) and leaf.value == name for leaf in targets):
            return True
    return False


def _flow(function: cst.FunctionDef) -> _Flow | None:
    """The flow of ``function``'s body, or None when it reads its locals by name."""
    names = _Names()
    walk.visit(function.body, names)
    if names.opaque:
        return None
    flow = _Flow({id(name) for name in names.names if id(name) not in names.stores})
    walk.visit(function.body, flow)
    return flow


def dead_stores(facts: FileFacts, candidate: Callable[[Assignment], bool]) -> Iterator[tuple[FunctionRun, Assignment]]:
    """Every assignment of a run that ``candidate`` accepts, to a local name that no code of its
    function reads after it (not later in the text, except in the other branch of an ``if`` it is in;
    not in a loop around it; not in a nested function or lambda), with the value the run computed
    there (one per run: a function run standalone and inlined gives one each). Only functions with a
    candidate are read (a walk of the function's text)."""
    flows: dict[int, _Flow | None] = {}  # per function (its runs share its text), for this file only
    for run in facts.runs:
        if not isinstance(run.node, cst.FunctionDef):
            continue
        candidates = [assignment for assignment in run.assignments if "." not in assignment.name and candidate(assignment)]
        if not candidates:
            continue
        if id(run.node) not in flows:
            flows[id(run.node)] = _flow(run.node)
        flow = flows[id(run.node)]
        if flow is None:
            continue
        for assignment in candidates:
            if not flow.read_after(assignment.node, assignment.name):
                yield run, assignment
