"""SC001 syntax-error: the file does not parse."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.rules.base import Invalid, Report, Rule, Valid


class SyntaxErrorRule(Rule):
    """Reports a file that Python cannot parse.

    ## What it does
    Reports a file that is not valid Python, at the position where parsing failed. The rest of the
    run goes on: other files are still checked.

    ## Why is this bad?
    Python refuses to import the file at all (`SyntaxError`), so no model in it can run, and no
    other rule can check it.

    ## Example
    ```python
    def forward(self, x)
        return self.proj(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.proj(x)
    ```
    """

    code = "SC001"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "The file does not parse."

    VALID = [Valid("x = 1\n", "plain code parses")]
    INVALID = [Invalid("def forward(self, x)  # <-\n    return x\n", "missing colon")]

    def check(self, facts: object) -> Iterator[Report]:
        # Produced by the linter itself when parsing fails; there is nothing to check on a tree.
        return iter(())
