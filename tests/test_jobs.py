"""``--jobs N``: the same bytes, in the same order, whatever the number of processes.

The comparisons run the CLI in this process (its worker processes are real: forked by the run);
``test_fix_in_parallel_writes_every_file`` runs ``python -m shapecheck -j 2 --fix`` end to end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, run_forked

EXAMPLES = REPO / "examples"


#: The bug examples these tests lint: more files than processes, four of them with fixes (a --diff
#: and a --fix to write), one finding of each kind of rule (syntax-level, dataflow, engine conflict).
#: The whole folder is linted by tests/test_examples_promises.py; here only the order and the bytes
#: across process counts matter, and every extra file costs a lint per process count.
SOME_BUGS = (
    "sc101_missing_scale.py", "sc201_mask_dtype.py", "sc205_causal_mask_diagonal.py", "sc301_pe_concatenated.py",
    "sc401_shared_qk_weights.py", "sc403_head_split_mismatch.py", "sc501_view_non_contiguous.py",
    "sc504_wrong_key_transpose.py",
)


def copy_some_bugs(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in SOME_BUGS:
        shutil.copy2(EXAMPLES / "bugs" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    copy_some_bugs(root / "examples")
    (root / "broken.py").write_text("def f(x)\n")
    (root / "blob.py").write_bytes(b"\0\0")
    (root / "empty.py").write_text("")
    source = (EXAMPLES / "bugs" / "sc201_mask_dtype.py").read_text()
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "source": source.splitlines(keepends=True)}
    (root / "nb.ipynb").write_text(json.dumps({"cells": [cell], "nbformat": 4}, indent=1))
    return root


@pytest.mark.parametrize("output", ["text", "json"])
def test_output_is_identical_for_any_number_of_jobs(cli, mixed: Path, output: str) -> None:
    runs = {}
    for jobs in ("1", "2", "3"):
        done = cli("lint", "--no-cache", "--jobs", jobs, "--format", output, ".", "empty.py", "missing.py", cwd=mixed)
        assert done.code == 2, done.err
        runs.setdefault(jobs, []).append((done.out, done.err))
    outputs = {out for pairs in runs.values() for out, _ in pairs}
    errors = {err for pairs in runs.values() for _, err in pairs}
    assert len(outputs) == 1 and len(errors) == 1
    assert "nb.ipynb" in outputs.pop()


def test_diff_is_identical_too(cli, mixed: Path) -> None:
    outs = {cli("lint", "--no-cache", "-j", jobs, "--diff", "examples", cwd=mixed).out for jobs in "12"}
    assert len(outs) == 1 and outs.pop().strip()


def test_fix_in_parallel_writes_every_file(cli, tmp_path: Path) -> None:
    copy_some_bugs(tmp_path / "bugs")
    listed = cli("lint", "--no-cache", "-j", "1", "--format", "json", "bugs", cwd=tmp_path)
    fixable = sum(1 for d in json.loads(listed.out)["diagnostics"] if d.get("fix"))
    assert fixable >= 4
    done = run_forked(["lint", "--no-cache", "-j", "2", "--fix", "bugs"], cwd=tmp_path)
    assert f"Fixed {fixable} problems" in done.stdout, done.stdout + done.stderr
    assert ".bool()" in (tmp_path / "bugs" / "sc201_mask_dtype.py").read_text()


def test_jobs_must_be_a_count(cli) -> None:
    ran = cli("lint", "--jobs", "-1")
    assert ran.code == 2 and "expected a number of processes" in ran.err
