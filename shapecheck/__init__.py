"""shapecheck: a static shape and dimension checker and linter for PyTorch Transformer code.

The runtime API (``shapecheck.checked``, ``shapecheck.install``, ``shapecheck.trace`` ...) lives in
``shapecheck.runtime`` and is imported on first use, so ``import shapecheck`` and ``shapecheck lint``
never import torch, jaxtyping or beartype.
"""

from typing import Any

from shapecheck.diagnostics import Diagnostic, Edit, FileError, Fix, Severity, Span

__version__ = "0.1.0"

#: Names re-exported from ``shapecheck.runtime`` on first access.
_RUNTIME_NAMES = frozenset(
    {"ShapeCheckError", "ShapeCheckWarning", "checked", "checking", "enabled", "install", "set_enabled", "trace"}
)

__all__ = [
    "Diagnostic",
    "Edit",
    "FileError",
    "Fix",
    "Severity",
    "ShapeCheckError",
    "ShapeCheckWarning",
    "Span",
    "__version__",
    "checked",
    "checking",
    "enabled",
    "install",
    "runtime",
    "set_enabled",
    "trace",
]


def __getattr__(name: str) -> Any:
    """Import ``shapecheck.runtime`` (torch, jaxtyping, beartype) only when its names are used."""
    if name == "runtime" or name in _RUNTIME_NAMES:
        import importlib

        runtime = importlib.import_module("shapecheck.runtime")
        return runtime if name == "runtime" else getattr(runtime, name)
    raise AttributeError(f"module 'shapecheck' has no attribute {name!r}")
