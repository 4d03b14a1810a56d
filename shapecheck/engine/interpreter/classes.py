"""Class statements as ``ClassInfo``: bases resolved through the imports, methods, dataclass fields,
and whether the class is an ``nn.Module`` (by its bases, through a parent class of the file, or by
the naming conventions of model code)."""

from __future__ import annotations

import libcst as cst

from shapecheck.engine.domain.values import ClassInfo, ClassValue, Value
from shapecheck.engine.interpreter.imports import ImportTable, canonical, dotted_name

MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
#: Base classes from other files that are, by convention, nn.Module subclasses.
MODULE_BASE_SUFFIXES = ("Module", "PreTrainedModel", "Layer", "Block", "Attention", "Model")


def class_info(node: cst.ClassDef, prefix: str, imports: ImportTable, globals_: dict[str, Value]) -> ClassInfo:
    """A class statement as a ClassInfo; ``globals_`` holds the classes defined before it."""
    bases = []
    for arg in node.bases:
        text = dotted_name(arg.value)
        if text is None:
            continue
        head, _, rest = text.partition(".")
        resolved = imports.resolve(head)
        if resolved is not None:
            text = canonical(resolved + ("." + rest if rest else ""))
        bases.append(text)
    methods = {}
    fields: dict[str, cst.CSTNode | None] = {}
    for statement in node.body.body:
        if isinstance(statement, cst.FunctionDef):
            methods[statement.name.value] = statement
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                    fields[small.target.value] = small.value
                elif isinstance(small, cst.Assign):
                    for target in small.targets:
                        if isinstance(target.target, cst.Name):
                            fields[target.target.value] = small.value
    is_dataclass = any(
        (dotted_name(d.decorator if not isinstance(d.decorator, cst.Call) else d.decorator.func) or "")
        .split(".")[-1]
        == "dataclass"
        for d in node.decorators
    )
    is_module = False
    for base in bases:
        if base in MODULE_BASES or base.startswith("torch.nn."):
            is_module = True
        elif base.split(".")[-1] in globals_ and isinstance(globals_[base.split(".")[-1]], ClassValue):
            parent = globals_[base.split(".")[-1]]
            is_module = is_module or parent.info.is_module  # type: ignore[union-attr]
        elif base.endswith(MODULE_BASE_SUFFIXES) and "forward" in methods:
            is_module = True
    if not is_module and "forward" in methods and bases:
        is_module = True
    nn_base = next((base for base in bases if base.startswith("torch.nn.") and base not in MODULE_BASES), None)
    info = ClassInfo(
        name=node.name.value,
        qualname=prefix + node.name.value,
        node=node,
        bases=tuple(bases),
        methods=methods,
        is_module=is_module,
        is_dataclass=is_dataclass,
        fields=fields,
        docstring=node.get_docstring() or "",
        nn_base=nn_base,
        own_methods=dict(methods),
    )
    for base in bases:
        parent = globals_.get(base.split(".")[-1])
        if isinstance(parent, ClassValue):
            info.inherit(parent.info)
    return info
