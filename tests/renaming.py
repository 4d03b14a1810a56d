"""Rename the user's own identifiers in a snippet, consistently, keeping what the code means.

Used by tests/test_rule_renaming.py: a rule must find the same bug whatever the user called their
classes, functions, variables and attributes. Renamed: classes, functions and methods (not
``forward`` or dunders), parameters (not ``self`` / ``cls``), assigned names, attributes assigned on
any object (``self.q_proj``, dataclass fields) and the string names given to ``register_buffer`` /
``register_parameter`` / ``getattr``, and the dim names inside string annotations
(``Float[Tensor, "b t d_model"]``). Kept: builtins, imported names, and every name the snippet
passes as a keyword to something it did not define (``dim=``, ``batch_first=``, einops axes), plus
the attribute names of torch's own objects (``protected``), so that no renaming changes behaviour.
Names are replaced by neutral ones of the same kind (``C0``, ``f1``, ``v2``, ``a3``) so that no
rule can lean on a word the examples happen to use; ``keep_words`` keeps a documented vocabulary
(e.g. SC204's "Causal" in a class name, which is user evidence by design) as a prefix.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable

import libcst as cst

NAME_REGISTRARS = {"register_buffer", "register_parameter", "add_module", "getattr", "setattr", "hasattr"}
KEEP = {"self", "cls", "forward", "super"}
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Collector(cst.CSTVisitor):
    """Find what the snippet defines, and what must keep its name."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self.functions: list[str] = []
        self.variables: list[str] = []
        self.attributes: list[str] = []
        self.imported: set[str] = set()
        self.foreign_keywords: set[str] = set()

    @staticmethod
    def _add(bucket: list[str], name: str) -> None:
        if name not in bucket:
            bucket.append(name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(self.classes, node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(self.functions, node.name.value)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(self.variables, node.name.value)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            bound = alias.asname.name if alias.asname else alias.name
            self.imported.add(cst.helpers.get_full_name_for_node(bound).split(".")[0])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            bound = alias.asname.name if alias.asname else alias.name
            self.imported.add(cst.helpers.get_full_name_for_node(bound))

    def _targets(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self._add(self.variables, target.value)
        elif isinstance(target, cst.Attribute):
            self._add(self.attributes, target.attr.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._targets(element.value)
        elif isinstance(target, cst.StarredElement):
            self._targets(target.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._targets(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_Call(self, node: cst.Call) -> None:
        callee = node.func
        called = callee.attr.value if isinstance(callee, cst.Attribute) else getattr(callee, "value", None)
        index = 0 if isinstance(callee, cst.Attribute) else 1
        if called in NAME_REGISTRARS and len(node.args) > index and isinstance(node.args[index].value, cst.SimpleString):
            self._add(self.attributes, node.args[index].value.evaluated_value)
        own = isinstance(node.func, cst.Name) and node.func.value not in self.imported
        if not own:
            self.foreign_keywords.update(arg.keyword.value for arg in node.args if arg.keyword is not None)


JAXTYPING_TYPES = re.compile(r"(Float|Int|Bool|Shaped|Num|Real|Inexact|Integer|UInt|Complex|Key)(\d*)")


class _Renamer(cst.CSTTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def _new(self, old: str) -> str:
        return self.names.get(old, old)

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self._new(original.value))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        callee = original.func
        called = callee.attr.value if isinstance(callee, cst.Attribute) else getattr(callee, "value", None)
        if called not in NAME_REGISTRARS:
            return updated
        index = 0 if isinstance(callee, cst.Attribute) else 1
        args = list(updated.args)
        if len(args) > index and isinstance(args[index].value, cst.SimpleString):
            text = args[index].value.evaluated_value
            if text in self.names:
                args[index] = args[index].with_changes(value=cst.SimpleString(repr(self.names[text])))
                return updated.with_changes(args=args)
        return updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.Subscript:
        """Dim names in a jaxtyping string (``Float[Tensor, "b d_model"]``) follow their variables."""
        head = original.value.attr if isinstance(original.value, cst.Attribute) else original.value
        if not (isinstance(head, cst.Name) and JAXTYPING_TYPES.fullmatch(head.value)):
            return updated
        elements = []
        for element in updated.slice:
            value = element.slice.value if isinstance(element.slice, cst.Index) else None
            if isinstance(value, cst.SimpleString) and value.prefix == "":
                quote = value.quote
                body = value.value[len(quote) : -len(quote)]
                renamed = WORD.sub(lambda match: self._new(match.group(0)), body)
                element = element.with_changes(slice=cst.Index(cst.SimpleString(f"{quote}{renamed}{quote}")))
            elements.append(element)
        return updated.with_changes(slice=elements)


def rename(code: str, protected: Iterable[str] = (), keep_words: re.Pattern[str] | None = None) -> str:
    """``code`` with every user-defined identifier renamed consistently (see the module docstring)."""
    module = cst.parse_module(code)
    found = _Collector()
    module.visit(found)
    kept = set(dir(builtins)) | KEEP | found.imported | found.foreign_keywords | set(protected)
    names: dict[str, str] = {}
    buckets = (("C", found.classes), ("f", found.functions), ("v", found.variables), ("a", found.attributes))
    for prefix, bucket in buckets:
        for old in bucket:
            if old in kept or old in names or (old.startswith("__") and old.endswith("__")):
                continue
            word = keep_words.search(old) if keep_words else None
            names[old] = f"{word.group(0)}_{prefix}{len(names)}" if word else f"{prefix}{len(names)}"
    return module.visit(_Renamer(names)).code
