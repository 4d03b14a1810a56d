"""Jupyter notebooks: code cells linted, magics skipped, findings per cell, --fix keeps the layout."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import REPO, assert_no_traceback
from shapecheck import notebooks

BUGGY = (REPO / "examples" / "bugs" / "sc201_mask_dtype.py").read_text()
BUG_LINE = next(i for i, line in enumerate(BUGGY.splitlines(), 1) if "BUG: SC201" in line)


def cell(source: str, kind: str = "code", **extra) -> dict:
    data = {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
    if kind == "code":
        data.update({"execution_count": 1, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}]})
    data.update(extra)
    return data


def write_notebook(path: Path, cells: list[dict], indent: int = 1) -> str:
    document = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text)
    return text


def buggy_notebook(path: Path) -> str:
    return write_notebook(
        path,
        [
            cell("# Masks \u00e9\n", kind="markdown"),
            cell("%matplotlib inline\n!pip install torch\nimport math\n"),
            cell("%%bash\necho this is not python (\n"),
            # Magics inside the model cell: the line numbers after them must stay right.
            cell("%load_ext autoreload\n" + BUGGY),
        ],
    )


def test_findings_name_the_cell_and_the_line_inside_it(cli, tmp_path: Path) -> None:
    buggy_notebook(tmp_path / "model.ipynb")
    ran = cli("lint", "model.ipynb", cwd=tmp_path)
    assert ran.code == 1, ran.err
    assert f"model.ipynb:cell 4:{BUG_LINE + 1}:" in ran.out
    assert "BUG: SC201" in ran.out  # the excerpt is the cell's own line
    data = json.loads(cli("lint", "--format", "json", "model.ipynb", cwd=tmp_path).out)
    (finding,) = [d for d in data["diagnostics"] if d["code"] == "SC201"]
    assert finding["cell"] == 4 and finding["line"] == BUG_LINE + 1 and finding["path"] == "model.ipynb"
    concise = cli("lint", "--format", "concise", "model.ipynb", cwd=tmp_path)
    assert f"model.ipynb:cell 4:{BUG_LINE + 1}:" in concise.out


def test_magics_and_markdown_are_not_checked(cli, tmp_path: Path) -> None:
    write_notebook(
        tmp_path / "clean.ipynb",
        [cell("# not code (\n", kind="markdown"), cell("%%time\nthis is ( not python\n"), cell("!ls -la\nx = 1\n")],
    )
    ran = cli("lint", "clean.ipynb", cwd=tmp_path)
    assert ran.code == 0 and "All checks passed: no problems in 1 file." in ran.out


def test_syntax_error_points_into_its_cell(cli, tmp_path: Path) -> None:
    write_notebook(tmp_path / "bad.ipynb", [cell("x = 1\n"), cell("y = 2\ndef f(x)\n    return x\n")])
    data = json.loads(cli("lint", "--format", "json", "bad.ipynb", cwd=tmp_path).out)
    (finding,) = data["diagnostics"]
    assert (finding["code"], finding["cell"], finding["line"]) == ("SC001", 2, 2)


def test_folders_are_searched_for_notebooks(cli, tmp_path: Path) -> None:
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir(parents=True)
    buggy_notebook(tmp_path / "nb" / "model.ipynb")
    buggy_notebook(tmp_path / "nb" / ".ipynb_checkpoints" / "model-checkpoint.ipynb")
    data = json.loads(cli("lint", "--format", "json", ".", cwd=tmp_path).out)
    assert data["files_checked"] == 1
    assert {d["path"] for d in data["diagnostics"]} == {"nb/model.ipynb"}


def test_fix_writes_the_notebook_back_with_its_layout_and_outputs(cli, tmp_path: Path) -> None:
    path = tmp_path / "model.ipynb"
    before = buggy_notebook(path)
    ran = cli("lint", "--fix", "model.ipynb", cwd=tmp_path)
    assert "Fixed 1 problem" in ran.out, ran.out + ran.err
    after = path.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(before.splitlines()) == len(after.splitlines()) and len(changed) == 1
    assert ".bool()" in changed[0][1]
    document = json.loads(after)
    assert document["cells"][1]["source"][:2] == ["%matplotlib inline\n", "!pip install torch\n"]
    assert document["cells"][3]["source"][0] == "%load_ext autoreload\n"
    assert all(c["outputs"] for c in document["cells"] if c["cell_type"] == "code")
    assert "\u00e9" in after  # non-ASCII text stays as it was written
    assert cli("lint", "model.ipynb", cwd=tmp_path).code == 0


def test_fix_keeps_an_indent_of_two_and_string_sources(tmp_path: Path) -> None:
    document = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": BUGGY}], "nbformat": 4}
    text = json.dumps(document, indent=2)
    notebook = notebooks.parse(text)
    assert notebook.with_source(notebook.source) == text
    rewritten = notebook.with_source(notebook.source.replace("float(\"-inf\")", "-1e9"))
    assert json.loads(rewritten)["cells"][0]["source"] == BUGGY.replace("float(\"-inf\")", "-1e9")
    assert rewritten.splitlines()[1].startswith('  "cells"')


def test_broken_notebook_is_a_clear_error(cli, tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text("{not json")
    (tmp_path / "list.ipynb").write_text("[1, 2]")
    ran = cli("lint", "broken.ipynb", "list.ipynb", cwd=tmp_path)
    assert ran.code == 2
    assert "broken.ipynb: error: not a valid notebook: JSON error at line 1" in ran.err
    assert "list.ipynb: error: not a valid notebook" in ran.err
    assert_no_traceback(ran.out, ran.err)


def test_diff_shows_the_change_to_the_notebook_file(cli, tmp_path: Path) -> None:
    before = buggy_notebook(tmp_path / "model.ipynb")
    ran = cli("lint", "--diff", "model.ipynb", cwd=tmp_path)
    assert (tmp_path / "model.ipynb").read_text() == before  # nothing written
    changed = [line for line in ran.out.splitlines() if line.startswith(("+ ", "- ", '+  ', '-  '))]
    assert len(changed) == 2 and ".bool()" in changed[1]
    assert notebooks.BOUNDARY not in ran.out
