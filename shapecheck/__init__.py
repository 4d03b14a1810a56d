"""shapecheck: a static shape and dimension checker and linter for PyTorch Transformer code."""

from shapecheck.diagnostics import Diagnostic, Edit, FileError, Fix, Severity, Span

__version__ = "0.1.0"

__all__ = ["Diagnostic", "Edit", "FileError", "Fix", "Severity", "Span", "__version__"]
