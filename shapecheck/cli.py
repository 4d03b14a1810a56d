"""The ``shapecheck`` command: argparse front door to the subcommands in ``shapecheck.commands``.

Exit codes: 0 no findings, 1 findings, 2 usage error, unreadable path or internal error. No input
ever produces a Python traceback (set ``SHAPECHECK_DEBUG=1`` to see one for an internal error).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from shapecheck import __version__
from shapecheck.commands import EXIT_ERROR, UsageError

#: Subcommand modules under ``shapecheck.commands``, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("lint", "shapes", "rules", "explain", "run", "trace")


def build_parser() -> argparse.ArgumentParser:
    """The full parser: global options and one subparser per entry of ``COMMANDS``."""
    parser = argparse.ArgumentParser(
        prog="shapecheck",
        description="Static shape checker and linter for PyTorch Transformer code.",
        epilog="Run `shapecheck COMMAND --help` for the options of a command.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"shapecheck {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"shapecheck.commands.{name}")
        sub = subparsers.add_parser(
            module.NAME,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            allow_abbrev=False,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.configure(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return int(handler(args))
    except UsageError as error:
        _error(str(error))
        return EXIT_ERROR
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (`shapecheck lint | head`): stop quietly, like other tools.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except Exception as error:  # noqa: BLE001 - the last line of defence against tracebacks
        if os.environ.get("SHAPECHECK_DEBUG"):
            raise
        text = str(error).strip().splitlines()
        detail = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
        _error(f"internal error ({detail}); please report it, SHAPECHECK_DEBUG=1 shows the traceback")
        return EXIT_ERROR


def _error(message: str) -> None:
    sys.stderr.write(f"shapecheck: error: {message}\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
