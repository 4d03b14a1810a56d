"""``shapecheck run [--check PKG]... (script.py | -m module) [args...]``: a program, shape-checked."""

from __future__ import annotations

import argparse
from pathlib import Path

from shapecheck.commands import UsageError

NAME = "run"
HELP = "run a Python program with runtime shape checks on its own code"
DESCRIPTION = """\
Run script.py (or `-m module`) like `python` does, with the jaxtyping annotations of its functions
and classes checked by beartype at every call (shapecheck.runtime.install). Checked by default: the
script and the modules and packages beside it (for `-m pkg.mod`, the package `pkg`); `--check PKG`
(repeatable) names the packages instead. Arguments, stdin, stdout and the exit code pass through;
an uncaught exception prints a traceback without the checker's own frames and exits with 1.
Set SHAPECHECK_RUNTIME=0 to run the program unchecked.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="append", metavar="PKG", help="a package to check (repeatable)")
    parser.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE [ARGS]", help="run a module")
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="script.py [ARGS]", help="the script and its arguments")


def run(args: argparse.Namespace) -> int:
    if args.module is not None and args.program:
        raise UsageError("give either script.py or -m MODULE, not both")
    if args.module is not None:
        if not args.module:
            raise UsageError("-m needs a module name")
        from shapecheck.runtime.launcher import ProgramNotFound, run_module

        try:
            return run_module(args.module[0], args.module[1:], args.check)
        except ProgramNotFound as error:
            raise UsageError(str(error)) from None
    if not args.program:
        raise UsageError("nothing to run: give script.py or -m MODULE")
    script = Path(args.program[0])
    if not script.is_file():
        raise UsageError(f"{script}: no such file")
    from shapecheck.runtime.launcher import run_script

    return run_script(script, args.program[1:], args.check)
