"""The benchmark scripts run end to end on a tiny folder (``--dir``: no install, no network).

Nothing here looks at times: it only checks that each script runs, exits 0 and prints its figures.
Most scripts run in this process (``bench``: their ``main(argv)`` with the output captured); the ones
that time or measure whole processes (workflow_speed, project's memory figures) run as ``python
benchmarks/SCRIPT.py``, as a user runs them.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

ATTENTION = '''import math
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        k = k.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        v = v.view(b, t, self.n_heads, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
'''


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fake_corpus")
    (root / "modeling_a.py").write_text(ATTENTION)
    (root / "modeling_b.py").write_text("import torch\n\nx = torch.zeros(2, 3)\n")
    (root / "broken.py").write_text("def f(:\n")
    (root / "empty.py").write_text("")
    return root


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``benchmarks/SCRIPT.py ARGS`` in this process: its ``main(argv)``, exit code and captured output."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))

    def call(script: str, *args: str) -> subprocess.CompletedProcess[str]:
        module = importlib.import_module(script.removesuffix(".py"))
        capsys.readouterr()
        try:
            code = module.main(list(args))
        except SystemExit as exit:
            code = exit.code
        captured = capsys.readouterr()
        return subprocess.CompletedProcess(args, int(code or 0), captured.out, captured.err)

    return call


def test_throughput_runs_on_a_folder(bench, corpus_dir: Path) -> None:
    completed = bench("throughput.py", "--dir", str(corpus_dir), "--limit", "3", "--runs", "1", "--min-lines", "1")
    assert completed.returncode == 0, completed.stderr
    assert "3 files" in completed.stdout
    assert "lint/parse =" in completed.stdout


def test_precision_runs_on_a_folder(bench, corpus_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    completed = bench("precision.py", "--dir", str(corpus_dir), "--out", str(out), "--crash-log", str(tmp_path / "crashes.log"))
    assert completed.returncode == 0, completed.stderr
    report = out.read_text()
    assert "## Findings per rule" in report
    assert "| fake_corpus" in report


def test_mutation_plants_bugs_and_reports(bench, corpus_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "mutation.md"
    data = tmp_path / "mutation.json"
    completed = bench("mutation.py", "--dir", str(corpus_dir), "--jobs", "1", "--out", str(out), "--json", str(data))
    assert completed.returncode == 0, completed.stderr
    report = out.read_text()
    assert "## Recall per code" in report
    assert "## Findings on the unmodified originals" in report
    mutants = json.loads(data.read_text())["mutants"]
    codes = {mutant["spec"]["code"] for mutant in mutants}
    # the attention module above has a scale, a softmax over the keys and a head split / merge
    assert {"SC101", "SC102", "SC103", "SC503", "SC505"} <= codes
    assert all(mutant["spec"]["display"].endswith("modeling_a.py") for mutant in mutants)


def test_mutants_parse_and_differ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")
    path = tmp_path / "modeling_a.py"
    path.write_text(ATTENTION)
    specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_a.py", tuple(sorted(mutation.OPERATORS)), 5, 0))
    assert specs and not broken
    for spec in specs:
        source = mutation.mutant_source(spec)
        assert source != ATTENTION
        compile(source, "mutant", "exec")
        assert source.count("\n") - ATTENTION.count("\n") == spec.delta


def test_shapes_coverage_exits_cleanly(bench, corpus_dir: Path) -> None:
    completed = bench("shapes_coverage.py", "--dir", str(corpus_dir))
    assert completed.returncode == 0, completed.stderr


def test_workflow_speed_runs_on_a_folder(bench, corpus_dir: Path) -> None:
    completed = bench("workflow_speed.py", "--dir", str(corpus_dir), "--max-jobs", "2")
    assert completed.returncode == 0, completed.stderr
    assert "cold / warm" in completed.stdout and "| 2 |" in completed.stdout


def test_robustness_runs_on_a_folder(bench, corpus_dir: Path) -> None:
    completed = bench("robustness.py", "--dir", str(corpus_dir), "--jobs", "1")
    assert completed.returncode == 0, completed.stderr
    assert "| escaped | swallowed |" in completed.stdout


def test_layout_sites_counts_what_the_rules_examined(bench, corpus_dir: Path) -> None:
    completed = bench("layout_sites.py", "--dir", str(corpus_dir))
    assert completed.returncode == 0, completed.stderr
    header, _, row = completed.stdout.splitlines()[:3]
    cells = dict(zip((c.strip() for c in header.split("|")), (c.strip() for c in row.split("|"))))
    # the fixture's attention: three head splits, one merge after the transpose, one q @ k^T
    assert (cells["files"], cells["SC503"], cells["SC502"], cells["SC504"]) == ("4", "3", "1", "1")


def test_project_runs_on_a_folder(bench, corpus_dir: Path) -> None:
    completed = bench("project.py", "--dir", str(corpus_dir))
    assert completed.returncode == 0, completed.stderr
    assert "whole / per-file:" in completed.stdout


def test_project_synthetic_memory_runs(bench) -> None:
    completed = bench("project.py", "--synthetic", "6")
    assert completed.returncode == 0, completed.stderr
    assert "peak RSS" in completed.stdout and "6 files" in completed.stdout


@pytest.mark.parametrize(
    "script",
    ["corpus", "throughput", "precision", "shapes_coverage", "startup", "project", "mutation_testing", "mutation", "layout_sites", "workflow_speed", "robustness", "fuzz", "positions"],
)
def test_scripts_have_help(script: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = importlib.import_module(script)
    with pytest.raises(SystemExit) as exit_info:
        module.main(["--help"])
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_mutation_testing_targets_every_rule_and_the_engine_op_and_shape_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    module = importlib.import_module("mutation_testing")
    targets = module.targets()
    rules = sorted(path.name for path in (BENCHMARKS.parent / "shapecheck" / "rules").glob("sc[0-9]*.py"))
    assert [name for name in targets if name.startswith("shapecheck/rules/")] == [f"shapecheck/rules/{r}" for r in rules]
    assert {"shapecheck/engine/symbolic/shapes.py", "shapecheck/engine/ops/shapes.py", "shapecheck/engine/ops/base.py"} <= set(targets)
    for module_path, test_args in targets.items():
        assert (BENCHMARKS.parent / module_path).is_file(), module_path
        files = [arg for arg in test_args if arg.endswith(".py")]
        assert files and all((BENCHMARKS.parent / name).is_file() for name in files), (module_path, files)


EMBEDDINGS = '''
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, vocab: int = 100, n_positions: int = 32, d: int = 16) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, d)
        self.position_embeddings = nn.Embedding(n_positions, d)
        self.token_type_embeddings = nn.Embedding(2, d)

    def forward(self, ids, types, positions):
        words = self.word_embeddings(ids)
        return words + self.position_embeddings(positions) + self.token_type_embeddings(types)
'''


def test_pe_operators_drop_only_the_positional_term_of_a_chain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``words + positions + types``: dropping the PE leaves ``words + types`` (never ``types``
    alone, which drops the words too and is another bug), and concatenating it cats the PE term."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")
    path = tmp_path / "modeling_e.py"
    path.write_text(EMBEDDINGS)
    specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_e.py", ("SC301", "SC303"), 5, 0))
    assert not broken
    lines = {spec.code: [] for spec in specs}
    for spec in specs:
        lines[spec.code].append(mutation.mutant_source(spec).splitlines()[-1].strip())
    assert lines["SC303"] == ["return words + self.token_type_embeddings(types)"]
    assert lines["SC301"] == [
        "return torch.cat([words, self.position_embeddings(positions)], dim=-1) + self.token_type_embeddings(types)"
    ]


SCALED_AT_PROJECTION = '''
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_proj(x) * self.scaling
        k = self.k_proj(x)
        v = self.v_proj(x)
        q = q.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.heads, self.head_dim).transpose(1, 2)
        weights = torch.matmul(q, k.transpose(-1, -2))
        weights = weights.softmax(dim=-1)
        out = torch.matmul(weights, v)
        return out.transpose(1, 2).reshape(b, t, -1)


def unrelated(scores):
    return scores.softmax(dim=-1)
'''


def test_a_finding_in_the_function_of_the_site_counts_as_found_in_function_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The scale removed from the query projection is reported at the softmax, seven lines below:
    outside a window of 3 lines, inside the ``def`` that holds the site."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")
    path = tmp_path / "modeling_far.py"
    path.write_text(SCALED_AT_PROJECTION)
    specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_far.py", ("SC101",), 5, 0))
    removed = [spec for spec in specs if "* self.scaling" not in mutation.mutant_source(spec)]
    assert removed and not broken
    result = mutation.lint_mutant((removed[0], [], 3, 60.0))
    assert result.found_anywhere and result.found_in_function and not result.found_near
    assert mutation.enclosing_function(SCALED_AT_PROJECTION, removed[0].line) == (16, 27)
    assert mutation.enclosing_function(SCALED_AT_PROJECTION, 31) == (30, 31)
    assert mutation.enclosing_function(SCALED_AT_PROJECTION, 2) is None


def test_precision_in_project_mode_follows_the_imports(bench, tmp_path: Path) -> None:
    """``--project`` lints each file in its package: the polarity bug of ``bug_mask_polarity`` (a
    mask built in masks.py, applied in attention.py) is seen only then."""
    project = BENCHMARKS.parent / "examples" / "projects" / "bug_mask_polarity"
    alone, together = tmp_path / "alone.md", tmp_path / "project.md"
    assert bench("precision.py", "--dir", str(project), "--out", str(alone)).returncode == 0
    assert bench("precision.py", "--dir", str(project), "--project", "--out", str(together)).returncode == 0
    assert "attention.py | 24 | SC203 |" not in alone.read_text()
    report = together.read_text()
    assert "imports followed (--project)" in report
    assert "attention.py | 24 | SC203 |" in report


CLASS_TOKEN = '''import torch
from torch import nn


class ClassAttention(nn.Module):
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        B, N, C = x.shape
        kv = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = self.q(x[:, :1, :]).reshape(B, self.num_heads, 1, self.head_dim)
        attn = (q @ k.transpose(-2, -1) * self.head_dim ** -0.5).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, 1, C)
'''


def test_operators_plant_no_change_of_a_single_token_or_a_factor_of_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A class token's merge ``(B, h, 1, d) -> (B, 1, C)`` reads the same memory with or without the
    transpose, and ``head_dim * 1`` is ``head_dim``: neither is a bug, so neither is planted; the
    same attention over every token gets both."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")

    def planted(source: str) -> list[str]:
        path = tmp_path / "modeling_f.py"
        path.write_text(source)
        specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_f.py", ("SC403", "SC502"), 5, 0))
        assert not broken
        return sorted(spec.description for spec in specs)

    assert planted(CLASS_TOKEN) == []
    every_token = CLASS_TOKEN.replace("reshape(B, 1, C)", "reshape(B, N, C)").replace(
        "reshape(B, self.num_heads, 1, self.head_dim)", "reshape(B, N, self.num_heads, self.head_dim)"
    ).replace("self.q(x[:, :1, :])", "self.q(x)")
    assert planted(every_token) == ["transpose before the merge removed", "view(b, t, h, d) -> view(b, t, h, d * h)"]


FUSED_3D_KEYS = '''import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        B, H, W, _ = x.shape
        qkv = self.qkv(x).reshape(B, H * W, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.num_heads, H * W, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        return (attn @ v).view(B, self.num_heads, H, W, -1)
'''


def test_a_3d_key_is_not_planted_a_transpose_of_its_axes_1_and_2(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Keys ``(B * h, N, d)`` (SAM's windowed attention): ``k.transpose(1, 2)`` is ``k.transpose(-2,
    -1)``, no bug; ``k.T`` (``(d, N, B * h)``) is one. Keys of a 4-D layout get ``transpose(1, 2)``."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")

    def planted(source: str) -> list[str]:
        path = tmp_path / "modeling_w.py"
        path.write_text(source)
        specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_w.py", ("SC504",), 5, 0))
        assert not broken
        return sorted(spec.description for spec in specs)

    assert planted(FUSED_3D_KEYS) == ["transpose(-2, -1) -> .T"]
    four_d = FUSED_3D_KEYS.replace(
        "q, k, v = qkv.reshape(3, B * self.num_heads, H * W, -1).unbind(0)", "q, k, v = qkv.unbind(0)"
    )
    assert planted(four_d) == ["transpose(-2, -1) -> transpose(1, 2)"]


def test_precision_counts_a_finding_placed_in_a_file_of_the_package_it_does_not_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``shapecheck lint PACKAGE/`` reports what the analysis of one file places in another file of the
    package (timm's ``layers/`` for ``models/``): ``--project`` counts it too, though that file is not
    in the corpus's list (here only ``model.py`` is listed; the mask polarity bug lands in
    ``attention.py``)."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    precision = importlib.import_module("precision")
    corpora = importlib.import_module("corpus")
    root = BENCHMARKS.parent / "examples" / "projects" / "bug_mask_polarity" / "src" / "tinylm"
    listed = corpora.SourceFile("p", root / "model.py", "tinylm/model.py", (root / "model.py").read_text())
    with open(os.devnull, "w") as log:
        run = precision.lint_all({"p": [listed]}, None, log, 0, project=True)
    assert [(f.path, f.line, f.code) for f in run.findings] == [("tinylm/attention.py", 24, "SC203")]
