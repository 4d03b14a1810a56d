"""Syntax helpers for the mutation operators: what a call is, where a function's values flow.

The operators in ``mutation_operators.py`` only mutate where a bug really results, so they need a
little structure: which calls are softmaxes and matmuls, which names flow into a softmax's input
inside one function, which ``self.<attr>`` a class builds from what. These helpers read libcst trees
only; nothing is imported or run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

MASK_FILL_METHODS = {"masked_fill", "masked_fill_"}
MATMUL_FUNCTIONS = {"matmul", "bmm", "einsum", "baddbmm"}
SOFTMAX_NAMES = {"softmax"}


def code(node: cst.CSTNode) -> str:
    """The source text of one node (sliced from the source when the node is in the indexed tree)."""
    if _INDEX is not None and _INDEX.source is not None:
        span = _INDEX.span(node)
        if span is not None:
            # positions exclude a node's own parentheses: put them back
            lpar, rpar = len(getattr(node, "lpar", ())), len(getattr(node, "rpar", ()))
            return "(" * lpar + _INDEX.source[span[0] : span[1]] + ")" * rpar
    return cst.Module(body=[]).code_for_node(node)


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def call_name(call: cst.Call) -> str | None:
    """The last name of the called function or method (``softmax`` for ``F.softmax`` and ``x.softmax``)."""
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def is_method_call(call: cst.Call) -> bool:
    """``x.f(...)`` where ``x`` is not a module alias such as ``torch`` / ``F`` / ``nn``."""
    if not isinstance(call.func, cst.Attribute):
        return False
    base = dotted(call.func.value)
    return base not in {"torch", "F", "nn.functional", "torch.nn.functional", "nn", "torch.nn", "np", "math"}


def arg(call: cst.Call, position: int, keyword: str) -> cst.Arg | None:
    """The argument at ``position`` (counting positionals only) or named ``keyword``."""
    positionals = [a for a in call.args if a.keyword is None and a.star == ""]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a
    if position < len(positionals):
        return positionals[position]
    return None


def int_value(node: cst.BaseExpression | None) -> int | None:
    """The value of an int literal, with a unary minus."""
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = int_value(node.expression)
        return None if inner is None else -inner
    return None


def names_in(node: cst.CSTNode) -> set[str]:
    """Every Name and dotted ``self.x`` chain read inside ``node``."""
    found: set[str] = set()
    for n in walk(node):
        if isinstance(n, cst.Name):
            found.add(n.value)
        elif isinstance(n, cst.Attribute):
            chain = dotted(n)
            if chain is not None:
                found.add(chain)
    return found


class TreeIndex:
    """Every node of one tree in pre-order, with subtree bounds and parents: ``walk`` in O(size).

    libcst computes ``children`` by visiting the node each time, which makes repeated recursive
    walks quadratic on large files; one pass here makes them list slices.
    """

    def __init__(self, root: cst.CSTNode, source: str | None = None, positions=None) -> None:
        self.source = source
        self.positions = positions
        self.line_starts: list[int] = [0]
        if source is not None:
            for i, ch in enumerate(source):
                if ch == "\n":
                    self.line_starts.append(i + 1)
        self.cache: dict = {}
        self.nodes: list[cst.CSTNode] = []
        self.position: dict[int, int] = {}
        self.end: dict[int, int] = {}
        self.parent: dict[int, cst.CSTNode] = {}
        index = self

        class Collector(cst.CSTVisitor):
            def __init__(self) -> None:
                self.stack: list[cst.CSTNode] = []

            def on_visit(self, node: cst.CSTNode) -> bool:
                if self.stack:
                    index.parent[id(node)] = self.stack[-1]
                index.position[id(node)] = len(index.nodes)
                index.nodes.append(node)
                self.stack.append(node)
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                self.stack.pop()
                index.end[id(original_node)] = len(index.nodes)

        root.visit(Collector())

    def span(self, node: cst.CSTNode) -> tuple[int, int] | None:
        """Start and end offsets of ``node`` in the source, or None when unknown."""
        if self.positions is None or self.source is None:
            return None
        try:
            where = self.positions[node]
        except KeyError:
            return None
        start = self.line_starts[where.start.line - 1] + where.start.column
        end = self.line_starts[where.end.line - 1] + where.end.column
        return start, end


_INDEX: TreeIndex | None = None


def set_index(root: cst.CSTNode | None, source: str | None = None, positions=None) -> TreeIndex | None:
    """Index ``root`` so that ``walk`` / ``inside`` / ``code`` under it are fast (None: forget)."""
    global _INDEX
    _INDEX = TreeIndex(root, source, positions) if root is not None else None
    return _INDEX


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under ``node`` (itself included), depth first, in source order."""
    if _INDEX is not None and id(node) in _INDEX.position and _INDEX.nodes[_INDEX.position[id(node)]] is node:
        return _INDEX.nodes[_INDEX.position[id(node)] : _INDEX.end[id(node)]]
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(current.children))
    return out


def inside(node: cst.CSTNode, container: cst.CSTNode) -> bool:
    """``node`` is ``container`` or one of its descendants."""
    if _INDEX is not None and id(node) in _INDEX.position and id(container) in _INDEX.position:
        start = _INDEX.position[id(container)]
        if _INDEX.nodes[start] is container:
            return start <= _INDEX.position[id(node)] < _INDEX.end[id(container)]
    return any(n is node for n in walk(container))


def parent_of(node: cst.CSTNode) -> cst.CSTNode | None:
    if _INDEX is not None:
        return _INDEX.parent.get(id(node))
    return None


def is_matmul(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
        return True
    return isinstance(node, cst.Call) and call_name(node) in MATMUL_FUNCTIONS


def contains_matmul(node: cst.CSTNode) -> bool:
    return any(is_matmul(n) for n in walk(node))


def softmax_input(call: cst.Call) -> tuple[cst.BaseExpression, cst.Arg | None] | None:
    """For a softmax call: its input expression and its dim argument."""
    if call_name(call) not in SOFTMAX_NAMES:
        return None
    if is_method_call(call):
        assert isinstance(call.func, cst.Attribute)
        return call.func.value, arg(call, 0, "dim")
    first = arg(call, 0, "input")
    if first is None:
        return None
    return first.value, arg(call, 1, "dim")


@dataclass
class Assignment:
    """``targets = value`` (or ``target op= value``) in one function, in statement order."""

    targets: set[str]
    value: cst.BaseExpression
    statement: cst.SimpleStatementLine
    small: cst.BaseSmallStatement
    augmented: bool = False


@dataclass
class FunctionFlow:
    """The assignments of one function and which names feed which."""

    function: cst.FunctionDef
    assignments: list[Assignment] = field(default_factory=list)
    deps: dict[str, set[str]] = field(default_factory=dict)
    _scores: list[tuple[cst.Call, set[str]]] | None = None

    def upstream(self, names: set[str]) -> set[str]:
        """``names`` and every name their values were computed from, transitively."""
        seen = set(names)
        todo = list(names)
        while todo:
            for dep in self.deps.get(todo.pop(), ()):
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    def softmaxes(self) -> list[cst.Call]:
        return [n for n in walk(self.function.body) if isinstance(n, cst.Call) and softmax_input(n) is not None]

    def score_softmaxes(self) -> list[tuple[cst.Call, set[str]]]:
        """Softmaxes whose input comes from a matmul (attention scores), with the names upstream of it."""
        if self._scores is None:
            self._scores = self._find_score_softmaxes()
        return self._scores

    def _find_score_softmaxes(self) -> list[tuple[cst.Call, set[str]]]:
        found = []
        for call in self.softmaxes():
            parsed = softmax_input(call)
            assert parsed is not None
            value, _ = parsed
            upstream = self.upstream(names_in(value))
            direct = contains_matmul(value)
            via_names = any(
                contains_matmul(a.value) for a in self.assignments if a.targets & upstream
            )
            if direct or via_names:
                found.append((call, upstream))
        return found


def target_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, (cst.Name, cst.Attribute)):
        chain = dotted(target)
        return {chain} if chain else set()
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in target.elements:
            out |= target_names(element.value)
        return out
    return set()


def function_flow(function: cst.FunctionDef) -> FunctionFlow:
    flow = FunctionFlow(function)
    for node in walk(function.body):
        if not isinstance(node, cst.SimpleStatementLine):
            continue
        for small in node.body:
            if isinstance(small, cst.Assign):
                targets: set[str] = set()
                for t in small.targets:
                    targets |= target_names(t.target)
                assignment = Assignment(targets, small.value, node, small)
            elif isinstance(small, cst.AugAssign):
                assignment = Assignment(target_names(small.target), small.value, node, small, augmented=True)
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                assignment = Assignment(target_names(small.target), small.value, node, small)
            else:
                continue
            flow.assignments.append(assignment)
            used = names_in(assignment.value)
            for target in assignment.targets:
                flow.deps.setdefault(target, set()).update(used - {target} if not assignment.augmented else used)
    return flow


def of_type(root: cst.CSTNode, kind: type) -> list:
    """The nodes of one type under ``root`` (cached per type for the indexed tree's root)."""
    if _INDEX is not None and _INDEX.nodes and _INDEX.nodes[0] is root:
        cached = _INDEX.cache.get(kind)
        if cached is None:
            cached = _INDEX.cache[kind] = [n for n in _INDEX.nodes if isinstance(n, kind)]
        return cached
    return [n for n in walk(root) if isinstance(n, kind)]


def functions(module: cst.Module) -> list[cst.FunctionDef]:
    return of_type(module, cst.FunctionDef)


def classes(module: cst.Module) -> list[cst.ClassDef]:
    return of_type(module, cst.ClassDef)


def flows(module: cst.Module) -> list[FunctionFlow]:
    """The data flow of every function (cached for the indexed tree)."""
    if _INDEX is not None and _INDEX.nodes and _INDEX.nodes[0] is module:
        cached = _INDEX.cache.get("flows")
        if cached is None:
            cached = _INDEX.cache["flows"] = [function_flow(f) for f in functions(module)]
        return cached
    return [function_flow(f) for f in functions(module)]


def source_of(module: cst.Module) -> str:
    if _INDEX is not None and _INDEX.source is not None and _INDEX.nodes and _INDEX.nodes[0] is module:
        return _INDEX.source
    return module.code


def class_methods(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    return [s for s in cls.body.body if isinstance(s, cst.FunctionDef)]


def self_attribute_assignments(cls: cst.ClassDef) -> dict[str, list[cst.Assign]]:
    """``self.x = value`` statements of every method, by attribute name."""
    out: dict[str, list[cst.Assign]] = {}
    for method in class_methods(cls):
        for node in walk(method.body):
            if isinstance(node, cst.Assign):
                for t in node.targets:
                    target = t.target
                    if isinstance(target, cst.Attribute) and dotted(target.value) == "self":
                        out.setdefault(target.attr.value, []).append(node)
    return out


def imports_torch(module: cst.Module) -> bool:
    return "import torch" in source_of(module)


def looks_positional(node: cst.BaseExpression) -> bool:
    """A value named as a positional embedding / encoding table (``pos_embed``, ``self.pe``, ``wpe(...)``)."""
    names = names_in(node)
    for name in names:
        last = name.rsplit(".", 1)[-1].lower()
        if last.endswith(("_ids", "ids", "idx", "index", "indices", "_len", "length", "offset", "pos_drop")):
            continue
        if last in {"pe", "wpe", "pos", "pos_emb", "pos_embed", "pos_embedding", "absolute_pos_emb"}:
            return True
        if "pos_emb" in last or "position_emb" in last or "positional" in last or "pos_enc" in last:
            return True
    return False


def is_number(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or (
        isinstance(node, cst.UnaryOperation) and isinstance(node.expression, (cst.Integer, cst.Float))
    )
