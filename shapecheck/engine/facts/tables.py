"""Where a positional table may reach a computation: the reads of a module attribute or a local.

A per-position table a module declares (``self.pos_embed = nn.Parameter(torch.zeros(1, N, d))``)
reaches the model's output only through code that reads its values. This fact reads the file's
text once, for the attribute names it is asked about, and sorts every read of ``<anything>.name``:

- *presence*: ``x.name is None`` / ``is not None``;
- *metadata*: ``x.name.shape``, ``.size()``, ``.dtype``, ``.requires_grad`` ... (not its values);
- *initialisation*: the tensor an in-place function or method fills (``trunc_normal_(x.name)``,
  ``nn.init.zeros_(x.name)``, ``x.name.data.normal_()``: torch's trailing-underscore convention);
- *rewrite*: inside the value of ``x.name = ...`` (a resample at ``set_input_size``: it flows back
  into the table only);
- *value*: anything else (added, passed on, aliased): the table may reach the stream there.

It also finds *presence guards*: ``if V is not None:`` (a conjunct of the test) where ``V`` is such
an attribute or a local name, and says whether the guarded code may still read ``V``'s values: a
value read that can run on the guard's path (before it, in its body, after it, or anywhere in a loop
around it, i.e. not only in a branch exclusive with the guard), or a method of the instance that
may read it (``self.m(...)`` for a method ``m``, ``super()``), or a nested function or lambda that
reads the local. Doubt always counts as a read: ``getattr`` with a name the text does not spell,
``vars()``, ``__dict__``, ``locals()`` make everything read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import re

import libcst as cst

from shapecheck.engine.domain.values import UNKNOWN, ClassInfo, ConstValue, TensorValue, Value
from shapecheck.engine.facts import walk
from shapecheck.engine.facts.records import AttributeAssignment, FileFacts
from shapecheck.engine.facts.unread import READS_LOCALS, target_leaves

#: Tensor attributes that describe a tensor without reading its values.
_METADATA = frozenset(
    {"shape", "size", "dtype", "device", "requires_grad", "ndim", "dim", "numel", "is_cuda", "grad", "nelement"}
)
#: Calls that read attributes or locals by a name the text may not spell.
_DYNAMIC = READS_LOCALS | {"getattr", "setattr", "delattr"}

Path = tuple[tuple[int, str], ...]  # (id of an If / loop / function node, which child) from the root


@dataclass
class Read:
    node: cst.CSTNode
    kind: str  # "presence", "metadata", "init", "rewrite", "value"
    function: cst.FunctionDef | None
    path: Path


@dataclass
class Guard:
    """``if V is not None:`` (or a conjunction with it), where ``V`` is ``<obj>.name`` or a local."""

    node: cst.If
    name: str
    attribute: bool  # ``<obj>.name`` (True) or a local name
    function: cst.FunctionDef | None
    path: Path  # the path of the guard's body


@dataclass
class TableReads:
    reads: dict[str, list[Read]] = field(default_factory=dict)  # attribute name -> its reads
    local_reads: dict[tuple[int, str], list[Read]] = field(default_factory=dict)  # (function, local)
    method_refs: list[tuple[cst.FunctionDef | None, Path, str]] = field(default_factory=list)
    nested_reads: set[tuple[int, str]] = field(default_factory=set)  # locals read in closures
    guards: list[Guard] = field(default_factory=list)
    #: ``if`` tests of a constructor whose block declares a table (``if self.use_pos_embed:``
    #: ``self.pos_embed = ...``), and the other ``if`` statements, to match against them
    declaring: list[tuple[cst.BaseExpression, str]] = field(default_factory=list)
    ifs: list[tuple[cst.If, cst.FunctionDef | None, Path]] = field(default_factory=list)
    opaque: bool = False  # attributes may be read by a name the text does not spell
    opaque_locals: set[int] = field(default_factory=set)  # functions that read their locals by name

    def values(self, name: str) -> list[Read]:
        return [read for read in self.reads.get(name, []) if read.kind == "value"]

    def guard_reaches(
        self,
        guard: Guard,
        harmless: frozenset[str],
        method: Callable[[cst.FunctionDef, str], cst.FunctionDef | None],
    ) -> bool:
        """Whether code that may run on ``guard``'s path reads the guarded value, or may: an
        attribute of ``self`` other than the ``harmless`` ones (submodules and tables) that is not a
        ``method`` of the file which (with the methods it calls) never mentions the attribute guarded;
        ``super()``; a closure reading the local."""
        if self.opaque or guard.function is None:
            return True
        mentions = self.reads.get(guard.name, []) if guard.attribute else self.local_reads.get((id(guard.function), guard.name), [])
        if any(read.path[: len(guard.path)] == guard.path for read in mentions):
            return True  # the block does something with it (fills it, freezes it, reads its shape)
        if guard.attribute:
            reads = [read for read in self.reads.get(guard.name, []) if read.function is guard.function]
            for function, path, attribute in self.method_refs:
                if function is guard.function and attribute not in harmless and not _exclusive(path, guard.path):
                    if self._method_reaches(guard.name, guard.function, attribute, harmless, method, set()):
                        return True
        else:
            key = (id(guard.function), guard.name)
            if key in self.nested_reads or id(guard.function) in self.opaque_locals:
                return True
            reads = self.local_reads.get(key, [])
        return any(read.kind == "value" and not _exclusive(read.path, guard.path) for read in reads)

    def _method_reaches(
        self,
        name: str,
        caller: cst.FunctionDef,
        attribute: str,
        harmless: frozenset[str],
        method: Callable[[cst.FunctionDef, str], cst.FunctionDef | None],
        seen: set[int],
    ) -> bool:
        """Whether ``self.<attribute>`` read in ``caller`` may read the table ``name``: it is not
        a method of the file, or it (or a method it calls) mentions the table."""
        function = method(caller, attribute)
        if function is None:
            return True
        if id(function) in seen:
            return False
        seen.add(id(function))
        if any(read.function is function for read in self.reads.get(name, [])):
            return True
        return any(
            other is function and inner not in harmless and self._method_reaches(name, function, inner, harmless, method, seen)
            for other, _path, inner in self.method_refs
        )


def _exclusive(a: Path, b: Path) -> bool:
    """Two places on different branches of one ``if``, with no loop around that ``if`` (in the
    function): they never both run in one call."""
    for (node_a, child_a), (node_b, child_b) in zip(a, b):
        if node_a != node_b:
            return False
        if child_a != child_b:
            return child_a in ("body", "orelse") and child_b in ("body", "orelse") and not _looped_since_function(a, (node_a, child_a))
    return False


def _looped_since_function(path: Path, until: tuple[int, str]) -> bool:
    looped = False
    for step in path:
        if step == until:
            return looped
        if step[1] == "function":
            looped = False
        elif step[1] == "loop":
            looped = True
    return looped


class _Visitor(cst.CSTVisitor):
    def __init__(self, names: frozenset[str], local_names: frozenset[str] = frozenset()) -> None:
        self.names = names
        self.local_names = local_names  # the locals whose reads are recorded
        self.result = TableReads()
        self.stack: list[cst.CSTNode] = []
        self.functions: list[cst.FunctionDef] = []
        self.scopes: list[cst.CSTNode] = []  # functions and lambdas, innermost last
        self.stores: set[int] = set()

    # -- the path of the node being visited --------------------------------------------------
    def on_visit(self, node: cst.CSTNode) -> bool:
        self.stack.append(node)
        if isinstance(node, cst.FunctionDef):
            self.functions.append(node)
        if isinstance(node, (cst.FunctionDef, cst.Lambda)):
            self.scopes.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self.stack.pop()
        if isinstance(original_node, cst.FunctionDef):
            self.functions.pop()
        if isinstance(original_node, (cst.FunctionDef, cst.Lambda)):
            self.scopes.pop()

    def _path(self, upto: int | None = None) -> Path:
        stack = self.stack if upto is None else self.stack[:upto]
        path: list[tuple[int, str]] = []
        for index, node in enumerate(stack):
            child = stack[index + 1] if index + 1 < len(stack) else None
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                path.append((id(node), "function"))
            elif isinstance(node, (cst.For, cst.While)):
                path.append((id(node), "loop"))
            elif isinstance(node, cst.If) and child is not None:
                which = "body" if child is node.body else "orelse" if child is node.orelse else "test"
                path.append((id(node), which))
            elif isinstance(node, cst.IfExp) and child is not None:
                which = "body" if child is node.body else "orelse" if child is node.orelse else "test"
                path.append((id(node), which))
        return tuple(path)

    def _function(self) -> cst.FunctionDef | None:
        return self.functions[-1] if self.functions else None

    # -- stores ------------------------------------------------------------------------------
    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._store(node.target)

    def _store(self, target: cst.BaseExpression) -> None:
        self.stores.update(id(leaf) for leaf in target_leaves(target) if isinstance(leaf, (cst.Name, cst.Attribute)))

    # -- reads -------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Name) and func.value in _DYNAMIC):
            return
        if func.value == "locals" or (func.value == "vars" and not node.args):
            # The function's locals by name (attributes are not among them).
            for function in self.functions:
                self.result.opaque_locals.add(id(function))
            return
        spelled = (
            func.value in ("getattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1].value, cst.SimpleString)
        )
        if not spelled:
            self.result.opaque = True
        elif node.args[1].value.evaluated_value in self.names:  # type: ignore[union-attr]
            self._read(node.args[1].value.evaluated_value, node, "value")  # type: ignore[union-attr,arg-type]

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        if attr == "__dict__":
            self.result.opaque = True
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.result.method_refs.append((self._function(), self._path(), attr))
        elif isinstance(node.value, cst.Call) and isinstance(node.value.func, cst.Name) and node.value.func.value == "super":
            self.result.method_refs.append((self._function(), self._path(), "super." + attr))
        if attr in self.names and id(node) not in self.stores:
            self._read(attr, node, self._kind(node))

    def visit_Name(self, node: cst.Name) -> None:
        function = self._function()
        if node.value not in self.local_names or function is None or id(node) in self.stores:
            return
        parent = self.stack[-2] if len(self.stack) > 1 else None
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return
        if isinstance(parent, (cst.Arg,)) and parent.keyword is node:
            return
        if isinstance(parent, (cst.FunctionDef, cst.Param)):
            return
        read = Read(node, self._kind(node), function, self._path())
        scope = self.scopes[-1] if self.scopes else None
        if scope is not function:
            # Read in a closure or lambda: for the function that binds it, any time.
            for outer in self.functions:
                self.result.nested_reads.add((id(outer), node.value))
        self.result.local_reads.setdefault((id(function), node.value), []).append(read)

    def visit_If(self, node: cst.If) -> None:
        function = self._function()
        if function is not None and function.name.value == "__init__":
            if not (isinstance(node.test, cst.Attribute) and _is_self(node.test.value)):
                return  # a flag of the instance only (``if self.use_pos_embed:``)
            for statement in node.body.body:
                if not isinstance(statement, cst.SimpleStatementLine):
                    continue  # a compound statement's body is a block, not small statements
                for small in statement.body:
                    if isinstance(small, cst.Assign):
                        for target in small.targets:
                            if isinstance(target.target, cst.Attribute) and target.target.attr.value in self.names and _is_self(target.target.value):
                                self.result.declaring.append((node.test, target.target.attr.value))
        else:
            self.result.ifs.append((node, function, self._path() + ((id(node), "body"),)))
        for value in _conjuncts(node.test):
            subject = _not_none_subject(value)
            if isinstance(subject, cst.Attribute) and subject.attr.value in self.names and _is_self(subject.value):
                guard = Guard(node, subject.attr.value, True, self._function(), self._path() + ((id(node), "body"),))
            elif isinstance(subject, cst.Name):
                guard = Guard(node, subject.value, False, self._function(), self._path() + ((id(node), "body"),))
            else:
                continue
            self.result.guards.append(guard)

    def _read(self, name: str, node: cst.CSTNode, kind: str) -> None:
        self.result.reads.setdefault(name, []).append(Read(node, kind, self._function(), self._path()))

    def _kind(self, node: cst.CSTNode) -> str:
        """How the expression on top of the stack is used, from its parents."""
        stack = self.stack
        index = len(stack) - 1
        parent = stack[index - 1] if index > 0 else None
        if isinstance(parent, cst.Comparison) and parent.left is node and _against_none(parent):
            return "presence"
        if isinstance(parent, cst.ComparisonTarget) and _is_identity(parent.operator) and _none(parent.comparator):
            return "presence"
        # ``x.name.data`` / ``x.name.weight`` ... then a metadata or in-place method
        current, position = node, index
        while position > 0 and isinstance(stack[position - 1], cst.Attribute) and stack[position - 1].value is current:
            attribute = stack[position - 1]
            name = attribute.attr.value
            if name in _METADATA:
                return "metadata"
            if name.endswith("_") and not name.startswith("_") and position > 1:
                call = stack[position - 2]
                if isinstance(call, cst.Call) and call.func is attribute:
                    return "init"
            if name not in ("data", "weight"):
                break
            current, position = attribute, position - 1
        if isinstance(parent, cst.Arg) and position >= 2:
            call = stack[index - 2]
            if isinstance(call, cst.Call) and call.args and call.args[0] is parent and _callee(call.func).endswith("_"):
                return "init"
        if isinstance(node, cst.Attribute):
            for ancestor in reversed(stack[:index]):
                if isinstance(ancestor, cst.Assign):
                    targets = [target.target for target in ancestor.targets]
                    if all(isinstance(target, cst.Attribute) and target.attr.value == node.attr.value for target in targets):
                        return "rewrite"
                    break
                if isinstance(ancestor, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                    break
        return "value"


def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def _callee(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _is_identity(operator: cst.BaseCompOp) -> bool:
    return isinstance(operator, (cst.Is, cst.IsNot))


def _against_none(comparison: cst.Comparison) -> bool:
    return len(comparison.comparisons) == 1 and _is_identity(comparison.comparisons[0].operator) and _none(comparison.comparisons[0].comparator)


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _not_none_subject(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """``V is not None``: V."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(target.operator, cst.IsNot) and _none(target.comparator):
            return test.left
    return None


def table_reads(roots: list[cst.CSTNode], names: frozenset[str], local_names: frozenset[str] = frozenset()) -> TableReads:
    """The reads of the attributes ``names`` in ``roots`` (a module, or some of its classes and
    functions), and of the locals ``local_names`` there, with the presence guards; sorted as the
    module docstring says."""
    visitor = _Visitor(names, local_names)
    for root in roots:
        walk.visit(root, visitor)
    result = visitor.result
    # ``if self.use_pos_embed:`` where the constructor declared the table under that same test:
    # the block is where the table is there to be used.
    for node, function, path in result.ifs if result.declaring else ():
        for value in _conjuncts(node.test):
            for test, name in result.declaring:
                if not isinstance(value, cst.Comparison) and value.deep_equals(test):
                    result.guards.append(Guard(node, name, True, function, path))
    return result


def _guarded_in_text(source: str, name: str) -> bool:
    """``name is not None`` in the text, or ``if <test>:`` right above ``self.name = ...``."""
    # The name first and its word boundary checked apart: a pattern that starts with ``\b`` cannot
    # skip through the text to the name's first letter (20x slower on a modeling file).
    for match in re.finditer(rf"{re.escape(name)}\s+is\s+not\s+None", source):
        before = source[match.start() - 1] if match.start() > 0 else " "
        if not (before.isalnum() or before == "_"):
            return True
    return re.search(rf"^\s*if [^\n]+:[ \t]*\n\s+self\.{re.escape(name)}\s*=[^=]", source, re.MULTILINE) is not None


#: Lines that mention a table and read no value of it, as the text shows them: a declaration or
#: a rewrite, a presence test, metadata, an in-place fill, a string (``no_weight_decay``), a comment.
_HARMLESS_LINE = (
    r"\.{name}\s*=[^=]",
    r"\b{name}\s+is(\s+not)?\s+None",
    r"\.{name}\.(shape|size|dtype|device|requires_grad|ndim|numel|data\.\w+_)\b",
    r"\.{name}\.\w+_\(",
    r"\w_\(\s*[\w.]*\.{name}\b",
    r"['\"][^'\"]*\b{name}\b[^'\"]*['\"]",
    r"^\s*#",
)


def _unread_in_text(source: str, name: str) -> bool:
    """Every line of ``source`` that spells ``name`` looks like one that reads none of its values
    (a cheap filter: the text walk decides)."""
    patterns = [re.compile(pattern.format(name=re.escape(name))) for pattern in _HARMLESS_LINE]
    word = re.compile(rf"\b{re.escape(name)}\b")
    return all(
        any(pattern.search(line) for pattern in patterns)
        for line in source.splitlines()
        if name in line and word.search(line)
    )


#: Attributes every ``nn.Module`` has that read no table.
_MODULE_STATE = frozenset({"training"})


def dropped_tables(
    facts: FileFacts, is_table: Callable[[Value], bool]
) -> list[tuple[cst.CSTNode, str, str, cst.FunctionDef | None]]:
    """Positional tables (``is_table``) that the code which should use them never reads.

    Each as (node, name, how): ``"guard"``, an ``if V is not None:`` whose guarded path never reads
    ``V`` (an attribute of ``self`` or a local, bound to tables or ``None`` only); ``"declared"``,
    an attribute declared a table (``self.pos_embed = nn.Parameter(...)``) that no code of the file
    reads the values of, in a class whose ``forward`` is in the file and that calls no method the
    engine cannot see. With the function that holds the guard (or the declaration). Text is read
    only when some table was declared or bound."""
    declared: dict[str, list[AttributeAssignment]] = {}
    for assignment in facts.attribute_assignments:
        declared.setdefault(assignment.name, []).append(assignment)
    tables = {name for name, assignments in declared.items() if _all_tables(
        [assignment.value for assignment in assignments], is_table)}
    locals_: dict[tuple[int, str], list[Value]] = {}
    for run in facts.runs:
        for assignment in run.assignments:
            if "." not in assignment.name:
                locals_.setdefault((id(run.node), assignment.name), []).append(assignment.value)
    bound = {key for key, values in locals_.items() if _all_tables(values, is_table)}
    if not tables and not bound:
        return []
    # The text is walked only where it may hold a finding: the classes that declare a table
    # tested with ``is not None`` in the text, the functions binding such a local (and the whole
    # file for a table whose every line looks unread).
    source = facts.source
    owners = {id(a.owner.node): a.owner for name in tables for a in declared[name] if a.owner is not None and _guarded_in_text(source, name)}
    ours = {id(info.node) for info in facts.classes.values()}
    roots: dict[int, cst.CSTNode] = {}
    for owner in owners.values():
        for info in (owner, *owner.parents):
            if id(info.node) in ours:
                roots[id(info.node)] = info.node
    inside = {id(function) for node in roots.values() for function in _methods(node)}
    functions = {id(run.node): run.node for run in facts.runs if isinstance(run.node, cst.FunctionDef)}
    for key in bound:
        if key[0] not in inside and _guarded_in_text(source, key[1]):
            roots[key[0]] = functions[key[0]]
    found: list[tuple[cst.CSTNode, str, str, cst.FunctionDef | None]] = []
    guarded: set[str] = set()
    if roots:
        found = _guard_findings(facts, table_reads(list(roots.values()), frozenset(tables), frozenset(name for _, name in bound)), tables, bound, declared)
        guarded = {name.removeprefix("self.") for _, name, _, _ in found}
    unread = [name for name in sorted(tables - guarded) if _unread_in_text(source, name)]
    if not unread:
        return found
    reads = table_reads([facts.module], frozenset(unread))
    if reads.opaque:
        return found
    harmless = _harmless(facts, declared)
    for name in unread:
        if reads.values(name):
            continue
        assignment = next(a for a in declared[name] if is_table(a.value))
        owner = assignment.owner
        if not _self_contained(owner, facts, reads, harmless):
            continue
        found.append((assignment.node, name, "declared", assignment.run.node if assignment.run else None))
    return found


def _methods(node: cst.CSTNode) -> list[cst.FunctionDef]:
    if not isinstance(node, cst.ClassDef):
        return []
    return [statement for statement in node.body.body if isinstance(statement, cst.FunctionDef)]


def _harmless(facts: FileFacts, declared: dict[str, list[AttributeAssignment]]) -> frozenset[str]:
    """Attributes of ``self`` that read no table when used: those the file assigns (layers,
    tables, numbers), not its methods."""
    methods = {name for info in facts.classes.values() for name in info.methods}
    return frozenset(set(declared) - methods) | _MODULE_STATE


def _guard_findings(
    facts: FileFacts,
    reads: TableReads,
    tables: set[str],
    bound: set[tuple[int, str]],
    declared: dict[str, list[AttributeAssignment]],
) -> list[tuple[cst.CSTNode, str, str, cst.FunctionDef | None]]:
    if reads.opaque:
        return []
    harmless = _harmless(facts, declared)
    ours = {id(info.node) for info in facts.classes.values()}
    classes = {id(function): info for info in facts.classes.values() for function in info.own_methods.values()}

    def method(caller: cst.FunctionDef, attribute: str) -> cst.FunctionDef | None:
        """The method of the file ``self.<attribute>`` names in ``caller`` (its class's, or an
        in-file parent's, when every class it may come from is the file's)."""
        info = classes.get(id(caller))
        if info is None or any(id(parent.node) not in ours for parent in info.parents) or not _bases_seen(info):
            return None
        return info.methods.get(attribute)

    found: list[tuple[cst.CSTNode, str, str, cst.FunctionDef | None]] = []
    for guard in reads.guards:
        if guard.function is not None and not _calls_anything(guard.function):
            # a function that calls nothing (timm's ``no_weight_decay``: ``if self.pos_embed is not
            # None: return ["pos_embed"]``) names the table; it is not the token stream's path
            continue
        if guard.attribute:
            if guard.name not in tables or _aliased(reads, guard.name):
                continue
        elif (id(guard.function), guard.name) not in bound or _parameter(guard.function, guard.name):
            continue
        if not reads.guard_reaches(guard, harmless, method):
            found.append((guard.node, f"self.{guard.name}" if guard.attribute else guard.name, "guard", guard.function))
    return found


def _calls_anything(function: cst.FunctionDef) -> bool:
    return walk.contains(function.body, cst.Call)


def _bases_seen(info: ClassInfo) -> bool:
    """Every base of the class is ``nn.Module`` or a class of the file (through its parents)."""
    names = {parent.name for parent in info.parents}
    return all(base in ("torch.nn.Module", "torch.nn.modules.module.Module") or base.split(".")[-1] in names for base in info.bases) and all(
        _bases_seen(parent) for parent in info.parents
    )


def _all_tables(values: list[Value], is_table: Callable[[Value], bool]) -> bool:
    """Every value a table or ``None`` (or unseen), and one at least a table."""
    seen = False
    for value in values:
        if is_table(value):
            seen = True
        elif isinstance(value, TensorValue):
            if value.shape is not None or value.tags:
                return False
        elif not (value is UNKNOWN or (isinstance(value, ConstValue) and value.value is None)):
            return False
    return seen


def _aliased(reads: TableReads, name: str) -> bool:
    """The table's values read in a constructor (handed to a layer, stored under another name):
    code that never spells its name may use it."""
    return any(read.function is None or read.function.name.value == "__init__" for read in reads.values(name))


def _parameter(function: cst.FunctionDef | None, name: str) -> bool:
    if function is None:
        return True
    params = function.params
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    every += [param for param in (params.star_arg, params.star_kwarg) if isinstance(param, cst.Param)]
    return any(param.name.value == name for param in every)


def _self_contained(owner: ClassInfo | None, facts: FileFacts, reads: TableReads, harmless: frozenset[str]) -> bool:
    """A class of this file whose ``forward`` is in the file, whose methods reach no method or
    parent the engine cannot see: nothing unseen may read its attributes."""
    if owner is None or "forward" not in owner.methods:
        return False
    ours = {id(info.node) for info in facts.classes.values()}
    family = [owner, *owner.parents]
    if any(id(info.node) not in ours for info in family):
        return False
    functions = {id(function) for info in family for function in info.methods.values()}
    known = set(harmless) | set(owner.methods) | {"super.__init__"}
    return not any(
        function is not None and id(function) in functions and attribute not in known
        for function, _path, attribute in reads.method_refs
    )
