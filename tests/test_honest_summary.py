"""Honest summaries: "All checks passed" only when every path was checked; coverage; skipped files."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst

from shapecheck import coverage
from shapecheck.engine import analyze

CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"

UNANNOTATED = '''\
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, d_model: int = 64):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        y = self.proj(x)
        return y @ y.transpose(-2, -1)
'''

ANNOTATED = '''\
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


class Attention(nn.Module):
    def __init__(self, d_model: int = 64):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: Float[Tensor, "b t d_model"]):
        y = self.proj(x)
        return y @ y.transpose(-2, -1)
'''


def _facts(source: str):
    return analyze(cst.parse_module(source), source, "m.py")


def test_all_checks_passed_only_when_everything_was_checked(cli, tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text(CLEAN)
    (tmp_path / "blob.py").write_bytes(b"\x00\x01binary")
    (tmp_path / "empty").mkdir()
    ran = cli("lint", "ok.py", cwd=tmp_path)
    assert ran.code == 0 and "All checks passed: no problems in 1 file." in ran.out
    for args in (["missing.py"], ["blob.py"], ["empty"], ["ok.py", "missing.py"]):
        ran = cli("lint", *args, cwd=tmp_path)
        assert ran.code == 2, args
        assert "All checks passed" not in ran.out, args
        assert f"{args[-1]} (" in ran.out, (args, ran.out)  # the summary names what was not checked
    ran = cli("lint", "ok.py", "missing.py", cwd=tmp_path)
    assert "No problems in the 1 file checked. Not checked: missing.py (no such file or directory)." in ran.out


def test_select_matching_no_implemented_rule_is_a_usage_error(cli, tmp_path: Path) -> None:
    from shapecheck.catalogue import BY_CODE
    from shapecheck.linter import registry

    implemented = {rule.code for rule in registry()}
    unwritten = sorted(set(BY_CODE) - implemented)
    (tmp_path / "ok.py").write_text(CLEAN)
    if unwritten:
        ran = cli("lint", "--select", unwritten[0], "ok.py", cwd=tmp_path)
        assert ran.code == 2
        assert f"--select {unwritten[0]} selects no implemented rule" in ran.err
    some = sorted(implemented)[0]
    ran = cli("lint", "--select", some, "--ignore", some, "ok.py", cwd=tmp_path)
    assert ran.code == 2 and "selects no implemented rule" in ran.err
    assert cli("lint", "--select", some, "ok.py", cwd=tmp_path).code == 0


def test_explicit_excluded_file_is_reported_as_skipped(cli, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.shapecheck]\nexclude = ['gen_*.py']\n")
    (tmp_path / "gen_a.py").write_text(CLEAN)
    (tmp_path / "ok.py").write_text(CLEAN)
    ran = cli("lint", "gen_a.py", "ok.py", cwd=tmp_path)
    assert ran.code == 0
    assert "gen_a.py: skipped: excluded by the configuration" in ran.err
    assert "All checks passed" not in ran.out and "Skipped: gen_a.py" in ran.out
    data = json.loads(cli("lint", "--format", "json", "gen_a.py", cwd=tmp_path).out)
    assert data["skipped"][0]["path"] == "gen_a.py" and data["files_checked"] == 0
    quiet = cli("lint", "--force-exclude", "gen_a.py", "ok.py", cwd=tmp_path)
    assert quiet.code == 0 and "skipped" not in quiet.err.lower()
    assert "All checks passed: no problems in 1 file." in quiet.out
    # A folder walk leaves excluded files out silently, as before.
    assert "All checks passed" in cli("lint", ".", cwd=tmp_path).out


def test_coverage_line_and_json_field(cli, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(ANNOTATED)
    ran = cli("lint", "model.py", cwd=tmp_path)
    lines = ran.out.strip().splitlines()
    assert lines[-2].startswith("All checks passed")
    assert lines[-1].startswith("Coverage: 2 functions analysed;")
    data = json.loads(cli("lint", "--format", "json", "model.py", cwd=tmp_path).out)
    figures = data["coverage"]
    assert figures["functions"] == 2
    assert figures["tensor_values"] == figures["full"] + figures["partial"] + figures["unknown"] >= 1
    assert figures["known_share"] == round(figures["full"] / figures["tensor_values"], 4)


def test_coverage_counts_known_and_unknown_shapes() -> None:
    known = coverage.count(_facts(ANNOTATED))
    unknown = coverage.count(_facts(UNANNOTATED))
    assert known.full >= 1 and known.unknown == 0
    assert unknown.full == 0 and unknown.values >= 1
    assert coverage.count(_facts("x = 1\n")).values == 0


def test_verbose_names_the_inputs_that_stayed_unknown(cli, tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(UNANNOTATED)
    (tmp_path / "annotated.py").write_text(ANNOTATED)
    ran = cli("lint", "--verbose", "model.py", "annotated.py", cwd=tmp_path)
    assert 'model.py: annotate x: Float[Tensor, "b t d"] (its own dims) in Attention.forward' in ran.err
    assert "annotated.py: annotate" not in ran.err
    assert [i.parameter for i in coverage.count(_facts(ANNOTATED)).unknown_inputs] == []


def test_json_diagnostic_has_hint(cli, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("def f(x)\n")
    data = json.loads(cli("lint", "--format", "json", "bad.py", cwd=tmp_path).out)
    assert data["version"] == 1
    assert "hint" in data["diagnostics"][0]
    example = Path(__file__).resolve().parents[1] / "examples" / "bugs"
    found = json.loads(cli("lint", "--format", "json", str(example)).out)["diagnostics"]
    assert any(isinstance(d["hint"], str) and d["hint"] for d in found)
