"""What every reporter receives: the findings, the errors and the counts of one run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from shapecheck.diagnostics import Diagnostic, FileError


@dataclass
class LintReport:
    """One run of ``shapecheck lint``, ready to print.

    ``sources`` holds the text of the files that have findings (the text reporter shows their
    lines); ``notes`` are one-line remarks such as an empty file; ``fixed`` counts the fixes written.
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    files_checked: int = 0
    notes: list[FileError] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    fixed: int = 0
    color: str = "auto"
    rules: Sequence[type] = ()

    def __post_init__(self) -> None:
        self.sort()

    def sort(self) -> None:
        """Findings by path, line, column (then code); errors and notes by path."""
        self.diagnostics.sort(key=lambda d: d.sort_key())
        self.errors.sort(key=lambda e: (e.path, e.message))
        self.notes.sort(key=lambda e: e.path)

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


def summary(report: LintReport) -> str:
    """The closing line: ``Found 3 problems in 2 files (1 fixable with --fix).``"""
    parts = []
    if report.fixed:
        parts.append(f"Fixed {plural(report.fixed, 'problem')}.")
    if report.diagnostics:
        line = (
            f"Found {plural(len(report.diagnostics), 'problem')} in "
            f"{plural(report.files_with_findings, 'file')}"
        )
        if report.fixable:
            line += f" ({report.fixable} fixable with --fix)"
        parts.append(line + ".")
    else:
        parts.append(f"All checks passed: no problems in {plural(report.files_checked, 'file')}.")
    if report.errors:
        parts.append(f"{plural(len(report.errors), 'path')} could not be checked.")
    return " ".join(parts)
