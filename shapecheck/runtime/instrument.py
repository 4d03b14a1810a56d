"""Adding ``checked`` to a module's source: the innermost decorator of each top-level def and class."""

from __future__ import annotations

import ast

#: The global name the instrumented module binds ``checked`` to.
DECORATOR_NAME = "__shapecheck_checked__"

# Decorators that need the undecorated function (TorchScript, typing): their defs are left alone.
_LEAVE_ALONE = frozenset({"script", "overload", "no_type_check", "ignore", "unused", "export", "script_method"})


def instrument_source(source: str, filename: str) -> ast.Module:
    """The module's AST with ``checked`` applied to its top-level functions and classes."""
    tree = ast.parse(source, filename)
    _decorate(tree.body)
    tree.body.insert(_import_position(tree.body), _import_checked(tree.body))
    return ast.fix_missing_locations(tree)


def _decorate(body: list[ast.stmt]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not any(_last_name(d) in _LEAVE_ALONE for d in node.decorator_list):
                node.decorator_list.append(ast.Name(DECORATOR_NAME, ast.Load(), lineno=node.lineno, col_offset=0))
        elif isinstance(node, ast.If):
            _decorate(node.body)
            _decorate(node.orelse)
        elif isinstance(node, ast.Try):
            _decorate(node.body)
            _decorate(node.orelse)


def _last_name(decorator: ast.expr) -> str:
    if isinstance(decorator, ast.Call):
        decorator = decorator.func
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return decorator.id if isinstance(decorator, ast.Name) else ""


def _import_position(body: list[ast.stmt]) -> int:
    """After the docstring and the ``from __future__`` imports."""
    position = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        position = 1
    while position < len(body) and isinstance(body[position], ast.ImportFrom) and body[position].module == "__future__":
        position += 1
    return position


def _import_checked(body: list[ast.stmt]) -> ast.stmt:
    line = body[0].lineno if body else 1
    node = ast.ImportFrom(
        module="shapecheck.runtime.wrapping",
        names=[ast.alias("checked", DECORATOR_NAME)],
        level=0,
    )
    return ast.copy_location(node, ast.Pass(lineno=line, col_offset=0, end_lineno=line, end_col_offset=0))
