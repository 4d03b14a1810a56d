"""``install(*packages)``: check every function and class of the user's packages as they are imported.

The hook is a meta path finder. For a module inside one of the packages it hands out a loader that
compiles the source with ``checked`` added as the innermost decorator of every top-level function
and class (``instrument.py``), so the module's own calls go through the checks too. Line numbers
are unchanged. A package imported before ``install`` cannot be hooked any more: that is a warning.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import warnings
from typing import Any

from shapecheck.runtime.wrapping import ShapeCheckWarning
from shapecheck.runtime.instrument import instrument_source
from shapecheck.runtime.switch import disabled_by_environment

#: Packages that must never be instrumented (the checker would check itself).
_REFUSED = frozenset({"shapecheck", "jaxtyping", "beartype", "typing", "builtins"})


class CheckingFinder(importlib.abc.MetaPathFinder):
    """Finds modules of ``packages`` with the other finders and swaps in a checking loader."""

    def __init__(self, packages: tuple[str, ...]) -> None:
        self.packages = packages

    def covers(self, name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in self.packages)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if not self.covers(fullname):
            return None
        for finder in sys.meta_path:
            if isinstance(finder, CheckingFinder) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if type(loader) is importlib.machinery.SourceFileLoader:
            spec.loader = CheckingLoader(loader.name, loader.path)
        return spec

    def remove(self) -> None:
        """Stop checking modules imported from now on."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class CheckingLoader(importlib.machinery.SourceFileLoader):
    """Compiles the instrumented source (never from, nor into, the bytecode cache)."""

    def get_code(self, fullname: str) -> Any:
        source = self.get_data(self.path).decode("utf-8")
        return compile(instrument_source(source, self.path), self.path, "exec", dont_inherit=True)


def install(*packages: str) -> CheckingFinder | None:
    """Check the functions and classes of ``packages`` (and their submodules) imported from now on.

    Returns the hook (``.remove()`` stops it), or None when ``SHAPECHECK_RUNTIME=0``.
    """
    if disabled_by_environment():
        return None
    for package in packages:
        if package.split(".")[0] in _REFUSED:
            raise ValueError(f"shapecheck cannot check the package {package!r}")
        already = sorted(name for name in sys.modules if name == package or name.startswith(package + "."))
        if already:
            warnings.warn(
                f"shapecheck: {package} is already imported ({', '.join(already[:3])}"
                f"{', ...' if len(already) > 3 else ''}); install() checks modules imported after it. "
                "Call install() before importing it, or decorate with @shapecheck.checked",
                ShapeCheckWarning,
                stacklevel=2,
            )
    finder = CheckingFinder(tuple(packages))
    sys.meta_path.insert(0, finder)
    return finder
