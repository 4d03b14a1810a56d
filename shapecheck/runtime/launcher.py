"""Running a user's program with checks installed: what ``shapecheck run`` does.

Like ``python script.py`` / ``python -m module``: same process, so arguments, stdin, stdout and the
exit code pass through. The script (or the module run as ``__main__``) is instrumented like the
modules of the checked packages. An uncaught exception prints a traceback without the frames of
jaxtyping, beartype, shapecheck and the import machinery, and exits with 1, as Python does.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import runpy
import sys
import traceback
import types
from pathlib import Path

import beartype
import jaxtyping

import shapecheck
from shapecheck.runtime.hook import _REFUSED, install
from shapecheck.runtime.instrument import instrument_source

_HIDDEN_PREFIXES = tuple(
    str(Path(package.__file__).parent) + os.sep for package in (jaxtyping, beartype, shapecheck)
) + (str(Path(runpy.__file__)),)


def modules_beside(folder: Path, script: Path | None = None) -> list[str]:
    """Importable modules and packages in ``folder`` (the default ``--check`` of a script)."""
    names = []
    for entry in sorted(folder.iterdir()):
        if entry.suffix == ".py" and entry.stem.isidentifier() and entry != script:
            names.append(entry.stem)
        elif entry.is_dir() and (entry / "__init__.py").is_file() and entry.name.isidentifier():
            names.append(entry.name)
    return [n for n in names if n not in _REFUSED and n not in sys.modules]


def run_script(path: Path, argv: list[str], packages: list[str] | None) -> int:
    """Run ``path`` as ``__main__`` with ``argv``; the exit code."""
    path = path.resolve()
    sys.argv = [str(path), *argv]
    sys.path[0:1] = [str(path.parent)]
    install(*(packages if packages is not None else modules_beside(path.parent, path)))
    code = compile(instrument_source(path.read_text(encoding="utf-8"), str(path)), str(path), "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": str(path), "__builtins__": builtins, "__spec__": None, "__cached__": None})
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        return _report_uncaught(lambda: exec(code, main.__dict__))  # noqa: S102 - running the user's program
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


class ProgramNotFound(Exception):
    """The module to run cannot be found."""


def run_module(name: str, argv: list[str], packages: list[str] | None) -> int:
    """Run module ``name`` as ``__main__`` (``python -m name``) with ``argv``; the exit code."""
    sys.argv = [name, *argv]
    sys.path[0:1] = [os.getcwd()]
    install(*(packages if packages is not None else [name.split(".")[0]]))
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ProgramNotFound(f"no module named {name!r}")
    return _report_uncaught(lambda: runpy.run_module(name, run_name="__main__", alter_sys=True))


def _report_uncaught(body: types.FunctionType | object) -> int:
    try:
        body()  # type: ignore[operator]
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as error:  # noqa: BLE001 - the user's program failed: report it like Python
        sys.stdout.flush()
        sys.stderr.write(format_user_traceback(error))
        return 1
    return 0


def format_user_traceback(error: BaseException) -> str:
    """The traceback of ``error`` without the frames of the checking machinery."""
    report = traceback.TracebackException.from_exception(error)
    seen = report
    while seen is not None:
        kept = [frame for frame in seen.stack if not _hidden(frame.filename)]
        seen.stack = traceback.StackSummary.from_list(kept)
        seen = seen.__cause__ or seen.__context__
    return "".join(report.format())


def _hidden(filename: str) -> bool:
    return filename.startswith(_HIDDEN_PREFIXES) or filename.startswith("<frozen importlib")
