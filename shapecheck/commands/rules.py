"""``shapecheck rules``: every rule with its code, name, severity and whether it can be fixed."""

from __future__ import annotations

import argparse
import json
import sys

NAME = "rules"
HELP = "list every rule (code, name, severity, fixable)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def rule_rows() -> list[dict[str, object]]:
    """One dict per registered rule, in code order."""
    from shapecheck.linter import registry

    return [
        {
            "code": rule.code,
            "name": rule.name,
            "severity": str(rule.severity),
            "fixable": bool(rule.fixable),
            "summary": rule.short_description(),
        }
        for rule in registry()
    ]


def run(args: argparse.Namespace) -> int:
    rows = rule_rows()
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.table import Table

    from shapecheck.terminal import make_console

    table = Table()
    for column in ("Code", "Name", "Severity", "Fixable", "What it flags"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(
            str(row["code"]), str(row["name"]), str(row["severity"]), "yes" if row["fixable"] else "", str(row["summary"])
        )
    console = make_console()
    console.print(f"shapecheck rules ({len(rows)})", style="bold", markup=False)
    console.print(table)
    console.print("Run `shapecheck explain CODE` for a rule's documentation.", markup=False)
    return 0
