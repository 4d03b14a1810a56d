"""What every reporter receives: the findings, the errors and the counts of one run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from shapecheck.coverage import Coverage
from shapecheck.diagnostics import Diagnostic, FileError


@dataclass
class LintReport:
    """One run of ``shapecheck lint``, ready to print.

    ``sources`` holds the text of the files that have findings (the text reporter shows their
    lines); ``notes`` are one-line remarks such as an empty file; ``fixed`` counts the fixes written;
    ``skipped`` are files named on the command line that were deliberately not checked (excluded by
    the configuration); ``coverage`` adds up what the engine could see of the checked files.
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    notes: list[FileError] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    fixed: int = 0
    color: str = "auto"
    rules: Sequence[type] = ()
    skipped: list[FileError] = field(default_factory=list)
    coverage: Coverage = field(default_factory=Coverage)
    #: Exceptions the engine caught (shapecheck bugs), each ``path:line:col: what``.
    internal_errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sort()

    def sort(self) -> None:
        """Findings by path, line, column (then code); errors and notes by path."""
        self.diagnostics.sort(key=lambda d: d.sort_key())
        self.errors.sort(key=lambda e: (e.path, e.message))
        self.notes.sort(key=lambda e: e.path)
        self.skipped.sort(key=lambda e: e.path)

    @property
    def fixable(self) -> int:
        """How many of the remaining findings ``--fix`` could mend."""
        return sum(1 for d in self.diagnostics if d.fix is not None)

    @property
    def files_with_findings(self) -> int:
        return len({d.path for d in self.diagnostics})

    def counts(self) -> Counter[tuple[str, str]]:
        """Findings per rule, keyed by (code, name)."""
        return Counter((d.code, d.name) for d in self.diagnostics)


def plural(count: int, word: str) -> str:
    """``plural(1, "file")`` -> ``1 file``; ``plural(2, "problem")`` -> ``2 problems``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


#: How many unchecked paths the summary names before "and N more".
NAMED_IN_SUMMARY = 3


def summary(report: LintReport) -> str:
    """The closing line: ``Found 3 problems in 2 files (1 fixable with --fix).``

    "All checks passed" only when every path given was checked; otherwise the line says what was
    not checked and why (the reasons per path are printed above it, on stderr).
    """
    parts = []
    if report.fixed:
        parts.append(f"Fixed {plural(report.fixed, 'problem')}.")
    complete = not report.errors and not report.skipped
    if report.diagnostics:
        line = (
            f"Found {plural(len(report.diagnostics), 'problem')} in "
            f"{plural(report.files_with_findings, 'file')}"
        )
        if report.fixable:
            line += f" ({report.fixable} fixable with --fix)"
        parts.append(line + ".")
    elif report.files_checked == 0:
        parts.append("Nothing was checked" + ("." if complete else ":" if report.errors else ","))
    elif complete:
        parts.append(f"All checks passed: no problems in {plural(report.files_checked, 'file')}.")
    else:
        parts.append(f"No problems in the {plural(report.files_checked, 'file')} checked.")
    lead = "" if report.files_checked == 0 and not report.diagnostics else "Not checked: "
    if report.errors:
        parts.append(f"{lead}{_named(report.errors)}.")
        lead = "Not checked: "
    if report.skipped:
        parts.append(f"{'skipped' if report.files_checked == 0 and not report.errors else 'Skipped'}: {_named(report.skipped)}.")
    if report.files_checked == 0 and complete:
        parts.append("No Python files were found in the paths given.")
    return " ".join(parts)


def _named(problems: Sequence[FileError]) -> str:
    """``a.py (no such file or directory), b.bin (binary file) and 2 more``."""
    shown = [f"{p.path} ({_reason(p.message)})" for p in problems[:NAMED_IN_SUMMARY]]
    rest = len(problems) - len(shown)
    return ", ".join(shown) + (f" and {rest} more" if rest > 0 else "")


def _reason(message: str) -> str:
    """The gist of an error message: up to its first ``;`` or parenthesis."""
    return message.split(";")[0].split(" (")[0].strip()
