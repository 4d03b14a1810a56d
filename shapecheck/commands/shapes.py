"""``shapecheck shapes FILE[::QUALNAME]``: the shape the engine infers for every tensor assigned in
each function of a file, line by line. The command to see the Q, K, V matrices of a model."""

from __future__ import annotations

import argparse
import json
import sys

from shapecheck.commands import EXIT_OK, UsageError

NAME = "shapes"
HELP = "print the inferred shape of every tensor assigned in a file's functions"
DESCRIPTION = """\
Print, for every function or method of FILE (or only QUALNAME, e.g. `model.py::Attention.forward`
or `model.py::Attention`), each assignment with the shape inferred for the tensor assigned there.
Dims are ints or symbols (`d_model//n_heads`); `*` stands for leading dims of unknown number; an
unknown shape is shown as `?` (null in JSON); `a|b` is a dim that is `a` on one path and `b` on
another. Tensors computed without being assigned are listed too, by their expression. Shapes are
those of the function analysed on its own, with constructor defaults and named unknowns.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="FILE[::QUALNAME]", help="a Python file, optionally ::Class.method")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def run(args: argparse.Namespace) -> int:
    from shapecheck.shapes_report import ShapesError, shapes_report

    path, _, qualname = args.target.partition("::")
    try:
        report = shapes_report(path, qualname or None)
    except ShapesError as error:
        raise UsageError(str(error)) from None
    if args.format == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    _print_tables(report)
    return EXIT_OK


def _print_tables(report: dict) -> None:
    from rich.table import Table

    from shapecheck.terminal import make_console

    console = make_console()
    shown = [function for function in report["functions"] if function["values"] or function["computed"]]
    if not shown:
        console.print("no functions with tensor code found", markup=False)
    joined = False
    for function in shown:
        console.print(f"{function['path']}:{function['line']} {function['qualname']}", style="bold", markup=False)
        table = Table()
        table.add_column("Line", justify="right")
        table.add_column("Name")
        table.add_column("Shape")
        table.add_column("Dtype")
        rows = [(v["line"], 0, v["name"], v) for v in function["values"]]
        rows += [(v["line"], 1, v["expression"], v) for v in function["computed"]]
        for line, computed, name, value in sorted(rows, key=lambda row: row[:2]):
            shape = value["shape"]
            text = "?" if shape is None else "(" + ", ".join(str(d) for d in shape) + ")"
            joined = joined or (shape is not None and any("|" in str(d) for d in shape))
            table.add_row(str(line), name, text, value["dtype"] or "", style="dim" if computed else None)
        console.print(table)
    if shown:
        console.print(LEGEND + (JOINED if joined else ""), markup=False, style="dim")


LEGEND = "Rows named by an expression (grey) are tensors computed without being assigned; ? is an unknown shape, * leading dims of unknown number."
JOINED = " a|b is a dim that is a on one path through the function and b on another."
