"""The subcommands of ``shapecheck``: one module per subcommand.

A subcommand module defines four things and is listed in ``shapecheck.cli.COMMANDS``::

    NAME = "shapes"                      # what the user types
    HELP = "print inferred shapes"       # one line for `shapecheck --help`

    def configure(parser: argparse.ArgumentParser) -> None: ...   # add its arguments
    def run(args: argparse.Namespace) -> int: ...                 # do the work, return the exit code

Keep the module's top-level imports light (argparse and the standard library): every module is
imported to build the parser, so heavy imports (rich, libcst, the engine, torch for ``run``) belong
inside ``run``. ``run`` raises ``UsageError`` for bad input: the CLI prints it on one line, exit 2.
"""

from __future__ import annotations


class UsageError(Exception):
    """The command line (or a configuration) asks for something impossible: exit code 2."""


EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
