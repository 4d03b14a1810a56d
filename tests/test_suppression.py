"""Inline suppression, as the linter applies it to every rule."""

from __future__ import annotations

import pytest

from shapecheck.linter import lint_source


@pytest.mark.parametrize(
    ("line", "suppressed"),
    [
        ("bad_name = 1  # shapecheck: ignore[SC990]", True),
        ("bad_name = 1  # shapecheck: ignore[bad-name]", True),
        ("bad_name = 1  # shapecheck: ignore[SC101, SC990]", True),
        ("bad_name = 1  # shapecheck: ignore", True),
        ("bad_name = 1  # shapecheck: ignore[SC101]", False),
        ("bad_name = 1  # noqa: SC990", True),
        ("bad_name = 1  # noqa", True),
        ("bad_name = 1  # noqa: E501", False),
        ("bad_name = 1  # ShapeCheck: Ignore[sc990]", True),
        ("bad_name = '# shapecheck: ignore'", False),
    ],
)
def test_inline_suppression(line: str, suppressed: bool, test_rules) -> None:
    result = lint_source(line + "\n", "m.py", {"SC990"})
    assert (result.diagnostics == []) is suppressed
    assert result.suppressed == (1 if suppressed else 0)


def test_suppression_is_per_line(test_rules) -> None:
    result = lint_source("bad_name = 1  # shapecheck: ignore\nbad_name = 2\n", "m.py", {"SC990"})
    assert [d.line for d in result.diagnostics] == [2]


def test_ignore_file(test_rules) -> None:
    source = "# shapecheck: ignore-file\nbad_name = 1\n"
    assert lint_source(source, "m.py", {"SC990"}).diagnostics == []
    late = "\n" * 60 + "# shapecheck: ignore-file\nbad_name = 1\n"
    assert len(lint_source(late, "m.py", {"SC990"}).diagnostics) == 1


def test_cli_honours_noqa(cli, tmp_path, test_rules) -> None:
    (tmp_path / "m.py").write_text("bad_name = 1  # noqa: SC990\n")
    assert cli("lint", "m.py", cwd=tmp_path).code == 0


def test_a_file_without_suppression_text_is_not_tokenized(monkeypatch) -> None:
    """The tokenizer (about 6% of the lint of a small file with findings) runs only when a suppression
    comment's text appears somewhere in the file; a match inside a string is still no comment."""
    import tokenize

    from shapecheck.suppression import Suppressions

    calls: list[int] = []
    generate = tokenize.generate_tokens
    monkeypatch.setattr(tokenize, "generate_tokens", lambda readline: calls.append(1) or generate(readline))
    assert Suppressions.from_source("x = 1  # a comment\ny = '#'\n").by_line == {}
    assert calls == []
    assert Suppressions.from_source("x = '# noqa'\n").by_line == {}
    assert calls == [1]
    assert Suppressions.from_source("x = 1  # noqa: SC101\n").by_line == {1: {"SC101"}}
