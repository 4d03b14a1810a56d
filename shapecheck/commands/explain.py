"""``shapecheck explain CODE|NAME``: a rule's documentation, rendered as Markdown."""

from __future__ import annotations

import argparse
import difflib
import sys

from shapecheck.commands import UsageError

NAME = "explain"
HELP = "show the documentation of one rule"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("rule", metavar="CODE|NAME", help="a rule code (SC101) or name (missing-attention-scale)")
    parser.add_argument("--raw", action="store_true", help="print the Markdown source instead of rendering it")


def markdown(rule: type) -> str:
    """The page shown for ``rule``: a title, its severity and fixability, then its docstring."""
    fixable = "yes" if rule.fixable else "no"
    return f"# {rule.code} {rule.name}\n\n*Severity: {rule.severity} · fixable: {fixable}*\n\n{rule.doc()}\n"


def run(args: argparse.Namespace) -> int:
    from shapecheck.catalogue import BY_CODE, BY_NAME
    from shapecheck.linter import registry

    rules = registry()
    rule = rules.get(args.rule)
    if rule is None:
        key = args.rule.strip()
        planned = BY_CODE.get(key.upper()) or BY_NAME.get(key.lower())
        if planned is not None:
            raise UsageError(f"{planned.code} {planned.name} is catalogued but not implemented yet: {planned.description}")
        known = [r.code for r in rules] + [r.name for r in rules]
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UsageError(f"unknown rule {args.rule!r}{hint} (`shapecheck rules` lists them)")
    text = markdown(rule)
    if args.raw:
        sys.stdout.write(text)
        return 0
    from rich.markdown import Markdown

    from shapecheck.terminal import make_console

    make_console(prose=True).print(Markdown(text))
    return 0
