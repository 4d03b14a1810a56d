"""The engine's own import table: local names to qualified names, for one file.

libcst's ``QualifiedNameProvider`` is correct but costs several parses; this table reads only import
statements (at module level and inside top-level ``if`` / ``try`` blocks), which is all that callee
matching needs. Shadowing is the interpreter's job: a name bound locally is looked up locally first.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

#: Canonical spellings: the same object reached by another path.
_CANONICAL_PREFIXES = {
    "torch.nn.modules.linear.": "torch.nn.",
    "torch.nn.modules.sparse.": "torch.nn.",
    "torch.nn.modules.normalization.": "torch.nn.",
    "torch.nn.modules.activation.": "torch.nn.",
    "torch.nn.modules.dropout.": "torch.nn.",
    "torch.nn.modules.container.": "torch.nn.",
    "torch.nn.modules.module.": "torch.nn.",
    "torch.nn.modules.transformer.": "torch.nn.",
    "torch.nn.parameter.": "torch.nn.",
    "torch.functional.": "torch.",
    "torch._C._nn.": "torch.nn.functional.",
    "numpy.": "numpy.",
}


def canonical(qualname: str) -> str:
    for prefix, replacement in _CANONICAL_PREFIXES.items():
        if qualname.startswith(prefix):
            return replacement + qualname[len(prefix) :]
    return qualname


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` as text for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _module_name(node: cst.Attribute | cst.Name | None, dots: int) -> str:
    name = dotted_name(node) if node is not None else ""
    return "." * dots + (name or "")


def import_statements(body: "list[cst.BaseStatement] | tuple[cst.BaseStatement, ...]") -> Iterator[cst.BaseSmallStatement]:
    for statement in body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)):
                    yield small
        elif isinstance(statement, cst.If):
            yield from import_statements(statement.body.body)
            orelse = statement.orelse
            while orelse is not None:
                yield from import_statements(orelse.body.body)
                orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        elif isinstance(statement, cst.Try):
            yield from import_statements(statement.body.body)
            for handler in statement.handlers:
                yield from import_statements(handler.body.body)


def bindings_of(small: cst.Import | cst.ImportFrom) -> Iterator[tuple[str, str]]:
    """(local name, qualified name) pairs an import statement binds."""
    if isinstance(small, cst.Import):
        for alias in small.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, canonical(full)
            else:
                # ``import torch.nn`` binds ``torch``.
                head = full.split(".", 1)[0]
                yield head, head
        return
    module = _module_name(small.module, len(small.relative))
    if isinstance(small.names, cst.ImportStar):
        return
    for alias in small.names:
        name = dotted_name(alias.name) or ""
        local = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            local = alias.asname.name.value
        if not module:
            qualified = name
        elif module.endswith("."):
            qualified = module + name  # ``from . import mod`` -> ``.mod``
        else:
            qualified = f"{module}.{name}"
        yield local, canonical(qualified)


class ImportTable:
    """Local name -> qualified name for the imports of one module."""

    def __init__(self, names: dict[str, str], stars: tuple[str, ...] = ()) -> None:
        self.names = names
        #: Modules of the project imported with ``from x import *`` (their names resolve lazily).
        self.stars = stars

    @classmethod
    def from_module(cls, module: cst.Module) -> "ImportTable":
        names: dict[str, str] = {}
        for small in import_statements(module.body):
            for local, qualified in bindings_of(small):
                names[local] = qualified
        return cls(names)

    def resolve(self, local: str) -> str | None:
        return self.names.get(local)

    def uses_torch(self) -> bool:
        return any(
            q == "torch" or q.startswith(("torch.", "einops", "jaxtyping")) for q in self.names.values()
        )
