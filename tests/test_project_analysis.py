"""Analysis across the files of a project: every rule family, where findings land, what a run
reports, the shipped example projects (statically and at run time)."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import in_fork
from shapecheck import linter
from shapecheck.runner import LintOptions, run
from shapecheck.shapes_report import shapes_report

REPO = Path(__file__).resolve().parents[1]
PROJECTS = REPO / "examples" / "projects"


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def findings(*paths: Path) -> list[tuple[str, str, int]]:
    """(file name, code, line) of what a run over ``paths`` reports."""
    report = run(LintOptions(paths=[str(p) for p in paths], isolated=True)).report
    return sorted((Path(d.path).name, d.code, d.span.line) for d in report.diagnostics)


def lint_alone(path: Path) -> list[str]:
    """Codes for the file analysed without its project (as before project analysis)."""
    result = linter.lint_source(path.read_text(), str(path))
    return [d.code for d in result.diagnostics]


# ------------------------------------------------------------------ one test per rule family

ATTENTION = """
    import torch.nn as nn

    from helpers import prepare


    class Attention(nn.Module):
        def __init__(self, d_model, n_heads):
            super().__init__()
            self.n_heads = n_heads
            self.d_k = d_model // n_heads
            self.qkv = nn.Linear(d_model, 3 * d_model)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=-1)
            q = q.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
            k = k.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
            v = v.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
            q = prepare(q, self.d_k)
            scores = q @ k.transpose(-2, -1)
            return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
"""

MODEL = """
    import torch.nn as nn

    from attention import Attention


    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Attention(64, 4)

        def forward(self, x):
            return self.attn(x)
"""


@pytest.mark.parametrize(
    ("helper", "expected"),
    [
        ("def prepare(q, d_k):\n    return q * d_k ** -0.5\n", []),
        ("def prepare(q, d_k):\n    return q\n", [("attention.py", "SC101", 20)]),
        # The fix goes in the helper, where the wrong scale is.
        ("def prepare(q, d_k):\n    return q / d_k\n", [("helpers.py", "SC102", 5)]),
    ],
)
def test_attention_scale_family_across_files(tmp_path: Path, helper: str, expected: list) -> None:
    write(tmp_path, {"helpers.py": "import torch\n\n" + helper, "attention.py": ATTENTION, "model.py": MODEL})
    got = [f for f in findings(tmp_path) if f[1].startswith("SC1")]
    assert [(name, code) for name, code, _ in got] == [(name, code) for name, code, _ in expected]
    # Alone, attention.py cannot know what the helper did.
    assert not [c for c in lint_alone(tmp_path / "attention.py") if c.startswith("SC1")]


def test_mask_family_across_files() -> None:
    project = PROJECTS / "bug_mask_polarity"
    assert findings(project) == [("attention.py", "SC203", 24)]
    assert lint_alone(project / "src" / "tinylm" / "attention.py") == []


def test_missing_causal_mask_evidence_in_another_file() -> None:
    project = PROJECTS / "bug_missing_causal_mask"
    assert findings(project) == [("attention.py", "SC204", 21)]
    assert lint_alone(project / "attention.py") == []


def test_positional_family_across_files() -> None:
    project = PROJECTS / "bug_pe_concatenated"
    got = findings(project)
    assert ("encoder.py", "SC301", 21) in got
    assert lint_alone(project / "seq2vec" / "encoder.py") == []


def test_pe_table_not_sliced_in_another_module(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pe.py": """
                import torch
                import torch.nn as nn


                class LearnedPositions(nn.Module):
                    def __init__(self, max_len, d_model):
                        super().__init__()
                        self.table = nn.Parameter(torch.zeros(max_len, d_model))

                    def forward(self, x):
                        return self.table
            """,
            "model.py": """
                import torch
                import torch.nn as nn

                from pe import LearnedPositions


                class Model(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.embed = nn.Embedding(100, 32)
                        self.pos = LearnedPositions(512, 32)

                    def forward(self, idx):
                        x = self.embed(idx)
                        return x + self.pos(x)


                if __name__ == "__main__":
                    Model()(torch.zeros(2, 10, dtype=torch.long))
            """,
        },
    )
    got = findings(tmp_path)
    assert any(code in ("SC302", "SC405") and name == "model.py" for name, code, _ in got), got


def test_heads_family_config_in_another_file() -> None:
    project = PROJECTS / "bug_heads_config"
    # reported on the configuration default a user would change, naming where the heads are split
    assert findings(project) == [("config.py", "SC402", 11)]
    # pre-commit passes only the changed file: the finding falls back to the line there that led to it
    assert findings(project / "train.py") == [("train.py", "SC402", 12)]
    assert lint_alone(project / "train.py") == []
    assert lint_alone(project / "config.py") == []


def test_shape_family_module_level_constants_across_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "sizes.py": "D_MODEL = 64\nD_FF = 128\n",
            "ff.py": """
                import torch.nn as nn

                from sizes import D_FF, D_MODEL


                class FeedForward(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.up = nn.Linear(D_MODEL, D_FF)
                        self.down = nn.Linear(D_MODEL, D_MODEL)

                    def forward(self, x):
                        return self.down(self.up(x))
            """,
        },
    )
    assert [(n, c) for n, c, _ in findings(tmp_path)] == [("ff.py", "SC406")]
    assert lint_alone(tmp_path / "ff.py") == []


LAYER_BUILT_ELSEWHERE = {
    "layers.py": """
        import torch.nn as nn

        DOWN = nn.Linear(64, 64)


        def projection(d_in, d_out):
            return nn.Linear(d_in, d_out)
    """,
    "model.py": """
        import torch.nn as nn

        from layers import DOWN, projection


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.up = nn.Linear(64, 128)
                self.down = projection(64, 64)

            def forward(self, x):
                return self.down(self.up(x))


        class Shared(nn.Module):
            def __init__(self):
                super().__init__()
                self.up = nn.Linear(64, 128)

            def forward(self, x):
                return DOWN(self.up(x))
    """,
}


def test_a_layer_chain_finding_lands_where_the_sizes_were_written(tmp_path: Path) -> None:
    """SC406 goes to the constructor of the layer that receives the wrong width: the call of the
    helper that built it from its arguments (``projection(64, 64)``), or a layer built in another
    file, reported there and naming the call, or at the call when that file is not reported."""
    write(tmp_path, LAYER_BUILT_ELSEWHERE)
    assert findings(tmp_path / "model.py") == [("model.py", "SC406", 11), ("model.py", "SC406", 23)]
    assert findings(tmp_path) == [("layers.py", "SC406", 4), ("model.py", "SC406", 11)]
    report = run(LintOptions(paths=[str(tmp_path)], isolated=True)).report
    (foreign,) = [d for d in report.diagnostics if Path(d.path).name == "layers.py"]
    assert "`Shared.forward` applies it in model.py:23" in foreign.message
    # At its fallback, the application itself, the finding does not name its own line as elsewhere.
    alone = run(LintOptions(paths=[str(tmp_path / "model.py")], isolated=True, cache=False)).report
    (fallback,) = [d for d in alone.diagnostics if d.span.line == 23]
    assert "model.py" not in fallback.message and "layers.py" not in fallback.message


# ------------------------------------------------------------------ the clean projects and their traps


@pytest.mark.parametrize("project", sorted(p.name for p in PROJECTS.iterdir() if p.name.startswith("clean_")))
def test_clean_projects_stay_clean(project: str) -> None:
    assert findings(PROJECTS / project) == []


@pytest.mark.parametrize(
    ("file", "old", "new", "code"),
    [
        # The scale applied in scaling.py is what keeps SC101 quiet.
        ("nanolm/layers.py", "q = scale_queries(q, self.head_dim)", "q = q", "SC101"),
        # The mask passed in from train.py is causal; without it the model leaks the future.
        ("nanolm/layers.py", '.masked_fill(mask, float("-inf"))', "", "SC204"),
        # The config's bad default is overridden at construction; using it is a bug.
        ("train.py", "GPTConfig(n_head=4)", "GPTConfig()", "SC402"),
        # The mask builder's polarity matters to masked_fill in layers.py.
        ("nanolm/masks.py", "torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)",
         "torch.tril(torch.ones(size, size, dtype=torch.bool))", "SC203"),
    ],
)
def test_clean_gpt_traps_are_understood(tmp_path: Path, file: str, old: str, new: str, code: str) -> None:
    """Each trap of clean_gpt is clean because the analysis follows it: break it and it reports."""
    copy = tmp_path / "clean_gpt"
    shutil.copytree(PROJECTS / "clean_gpt", copy)
    target = copy / file
    text = target.read_text()
    assert old in text
    target.write_text(text.replace(old, new))
    assert code in [c for _, c, _ in findings(copy)]


def test_sdpa_encoder_pe_module_is_followed(tmp_path: Path) -> None:
    """The PE module of clean_sdpa_encoder is analysed with the classifier's input: make it
    concatenate and the finding lands in positional.py."""
    copy = tmp_path / "clean_sdpa_encoder"
    shutil.copytree(PROJECTS / "clean_sdpa_encoder", copy)
    target = copy / "positional.py"
    target.write_text(target.read_text().replace(
        "return x + self.pe[: x.size(1)]",
        "return torch.cat([x, self.pe[: x.size(1)].expand(x.size(0), -1, -1)], dim=-1)",
    ))
    assert ("positional.py", "SC301", 20) in findings(copy)


# ------------------------------------------------------------------ where findings are reported


def test_imports_are_read_not_reported() -> None:
    """Only the files named are reported; the evidence in their imports is still read."""
    project = PROJECTS / "bug_missing_causal_mask"
    assert findings(project / "attention.py") == []  # the evidence is in an importer
    assert findings(project / "train.py", project / "attention.py") == [("attention.py", "SC204", 21)]
    assert findings(project / "train.py") == []  # the finding belongs to attention.py


def test_a_file_named_by_a_relative_path_gets_the_fallback_of_a_finding_in_its_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Linting only the script, named as ``train.py`` from its own folder: the config's default
    is not linted, so the finding lands on the script's construction of the model, as it does when
    the script is named by an absolute path."""
    project = tmp_path / "project"
    shutil.copytree(PROJECTS / "bug_heads_config", project)
    expected = [("train.py", "SC402", 12)]
    assert findings(project / "train.py") == expected
    monkeypatch.chdir(project)
    assert findings(Path("train.py")) == expected
    monkeypatch.chdir(tmp_path)
    assert findings(Path("project") / "train.py") == expected


def heads_config_as_a_package(root: Path) -> Path:
    """``bug_heads_config`` laid out as the package ``gpt``: ``configs/config.py`` (the head count's
    default), ``models/layers.py`` (the split), ``models/model.py`` and ``train.py``."""
    source = PROJECTS / "bug_heads_config"
    package = root / "gpt"
    for folder in ("configs", "models"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    shutil.copy(source / "config.py", package / "configs" / "config.py")
    shutil.copy(source / "layers.py", package / "models" / "layers.py")
    imports = {
        "from config import": "from gpt.configs.config import",
        "from layers import": "from gpt.models.layers import",
        "from model import": "from gpt.models.model import",
    }
    for name, folder in (("model.py", package / "models"), ("train.py", package)):
        text = (source / name).read_text()
        for old, new in imports.items():
            text = text.replace(old, new)
        (folder / name).write_text(text)
    return package


def test_a_finding_moved_to_its_fallback_names_the_evidence_from_the_fallback_file(tmp_path: Path) -> None:
    """The head count's default is in ``gpt/configs/``; linting only ``gpt/train.py`` reports the
    model's construction there, and the head split is named relative to ``train.py``
    (``models/layers.py``), not to the config's folder (``../models/layers.py``)."""
    package = heads_config_as_a_package(tmp_path)
    alone = run(LintOptions(paths=[str(package / "train.py")], isolated=True, cache=False)).report.diagnostics
    assert [(Path(d.path).name, d.code, d.span.line) for d in alone] == [("train.py", "SC402", 12)]
    assert alone[0].message.endswith("(the head split in models/layers.py:20)")
    together = run(LintOptions(paths=[str(package)], isolated=True, cache=False)).report.diagnostics
    assert [(Path(d.path).name, d.code) for d in together] == [("config.py", "SC402")]
    assert together[0].message.endswith("(the head split in ../models/layers.py:20)")


def test_suppression_applies_in_the_file_of_the_finding(tmp_path: Path) -> None:
    copy = tmp_path / "p"
    shutil.copytree(PROJECTS / "bug_missing_causal_mask", copy)
    attention = copy / "attention.py"
    attention.write_text(attention.read_text().replace(
        "F.scaled_dot_product_attention(q, k, v)", "F.scaled_dot_product_attention(q, k, v)  # shapecheck: ignore[SC204]"
    ))
    assert findings(copy) == []


def test_per_file_ignores_apply_in_the_file_of_the_finding(tmp_path: Path) -> None:
    copy = tmp_path / "p"
    shutil.copytree(PROJECTS / "bug_missing_causal_mask", copy)
    (copy / "pyproject.toml").write_text('[tool.shapecheck.per-file-ignores]\n"attention.py" = ["SC204"]\n')
    report = run(LintOptions(paths=[str(copy)])).report
    assert report.diagnostics == []
    (copy / "pyproject.toml").write_text('[tool.shapecheck.per-file-ignores]\n"model.py" = ["SC204"]\n')
    report = run(LintOptions(paths=[str(copy)])).report
    assert [d.code for d in report.diagnostics] == ["SC204"]


def test_result_lists_the_files_it_depends_on() -> None:
    project = PROJECTS / "bug_mask_polarity"
    result = linter.lint_path(project / "train.py", "train.py")
    names = sorted(Path(path).name for path, _ in result.dependencies)
    assert names == ["__init__.py", "attention.py", "masks.py", "model.py", "train.py"]
    assert all(len(digest) == 64 for _, digest in result.dependencies)


# ------------------------------------------------------------------ values through calls (one file too)


def test_or_default_and_factory_arguments_flow(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """
        import torch.nn as nn


        class Attention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                assert d_model % n_heads == 0


        def make(d_model, n_heads=None):
            n_heads = n_heads or 8
            return Attention(d_model=d_model, n_heads=n_heads)


        bad = make(512, n_heads=6)
        good = make(512)
        """
    )
    codes = [(d.code, d.span.line) for d in linter.lint_source(source, "one.py").diagnostics]
    assert codes == [("SC402", 16)]


def test_module_passed_as_constructor_argument(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn as nn


        class Wrapper(nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)


        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Wrapper(nn.Linear(32, 64))
                self.out = nn.Linear(32, 10)

            def forward(self, x):
                return self.out(self.block(x))
        """
    )
    assert [d.code for d in linter.lint_source(source, "one.py").diagnostics] == ["SC406"]


# ------------------------------------------------------------------ shapes across files


def test_shapes_show_values_from_imported_modules() -> None:
    path = PROJECTS / "bug_pe_concatenated" / "seq2vec" / "encoder.py"
    report = shapes_report(str(path), "Encoder.forward")
    values = {v["name"]: v["shape"] for v in report["functions"][0]["values"]}
    assert values["pos"][-1] == 32  # the width of the PE table built in pe.py
    # The cat takes its other axes from the operand that knows them (pos: (x.size(0), T, 32)).
    assert values["x"] == ["size1", "pos", 64]


# ------------------------------------------------------------------ the projects run with torch


RUNNER = """
import runpy, sys, json
import torch  # once: the projects' own modules are dropped between runs, torch is not
results = {}
for project, script in json.loads(sys.argv[1]):
    before = set(sys.modules)
    sys.path.insert(0, project)
    try:
        runpy.run_path(f"{project}/{script}", run_name="__main__")
        results[project] = "ok"
    except Exception as error:  # noqa: BLE001 - the point is to see it fail
        results[project] = type(error).__name__
    finally:
        sys.path.remove(project)
        for name in set(sys.modules) - before:
            del sys.modules[name]
print(json.dumps(results))
"""

ENTRY = {
    "bug_heads_config": "train.py",
    "bug_mask_polarity": "train.py",
    "bug_pe_concatenated": "run.py",
    "bug_missing_causal_mask": "train.py",
    "clean_gpt": "train.py",
    "clean_sdpa_encoder": "classifier.py",
    "clean_bert_src": "run.py",
}


def test_every_project_is_listed() -> None:
    assert sorted(ENTRY) == sorted(p.name for p in PROJECTS.iterdir() if p.is_dir())
    assert sum(name.startswith("bug_") for name in ENTRY) >= 4
    assert sum(name.startswith("clean_") for name in ENTRY) >= 3


@pytest.mark.slow
def test_bugs_show_at_run_time_and_clean_projects_run() -> None:
    pytest.importorskip("torch")
    jobs = [[str(PROJECTS / name), script] for name, script in ENTRY.items()]
    # in a process of its own (a fork of this one: torch is already imported, as the runner expects)
    argv = [sys.executable, "-c", RUNNER, json.dumps(jobs)]

    def runner() -> None:
        sys.argv = ["-c", argv[-1]]
        exec(compile(RUNNER, "<runner>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the projects' scripts

    done = in_fork(runner, argv, cwd=REPO)
    assert done.returncode == 0, done.stderr
    results = {Path(k).name: v for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    for name, outcome in results.items():
        if name.startswith("bug_"):
            assert outcome in ("RuntimeError", "AssertionError"), (name, outcome)
        else:
            assert outcome == "ok", (name, outcome)


def test_every_bug_project_has_a_finding_only_the_project_shows() -> None:
    for name in ENTRY:
        if name.startswith("bug_"):
            project = PROJECTS / name
            assert findings(project), name
            assert all(not lint_alone(path) for path in project.rglob("*.py")), name


def test_messages_name_the_evidence_in_another_file() -> None:
    messages = {
        d.code: d.message
        for d in run(LintOptions(paths=[str(PROJECTS)], isolated=True)).report.diagnostics
    }
    assert "(built in masks.py:10)" in messages["SC203"]
    assert "next-token loss (logits and targets shifted by one) in train.py:14" in messages["SC204"]
    assert "(the head split in layers.py:20)" in messages["SC402"]


def test_lint_examples_counts() -> None:
    """``shapecheck lint examples/``: one finding per examples/bugs file, none in examples/clean,
    and the findings of examples/projects only in its bug_* projects (one or more each)."""
    report = run(LintOptions(paths=[str(REPO / "examples")], isolated=True, jobs=1)).report
    by_file: dict[str, int] = {}
    for diagnostic in report.diagnostics:
        relative = Path(diagnostic.path).resolve().relative_to(REPO / "examples").as_posix()
        by_file[relative] = by_file.get(relative, 0) + 1
    bugs = sorted(p.name for p in (REPO / "examples" / "bugs").glob("*.py"))
    assert {name: by_file.get(f"bugs/{name}", 0) for name in bugs} == {name: 1 for name in bugs}
    assert not [name for name in by_file if name.startswith("clean/") or name.startswith("projects/clean_")]
    projects = {name.split("/")[1] for name in by_file if name.startswith("projects/")}
    assert projects == {p for p in ENTRY if p.startswith("bug_")}


def test_dataclass_defaults_from_constants_of_another_module(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "sizes.py": "WIDTH = 96\nHEADS = 5\n",
            "config.py": """
                from dataclasses import dataclass

                from sizes import HEADS, WIDTH


                @dataclass
                class Config:
                    width: int = WIDTH
                    heads: int = HEADS
            """,
            "model.py": """
                import torch.nn as nn

                from config import Config


                class Attention(nn.Module):
                    def __init__(self, config):
                        super().__init__()
                        assert config.width % config.heads == 0


                model = Attention(Config())
                fine = Attention(Config(heads=4))
            """,
        },
    )
    assert findings(tmp_path) == [("model.py", "SC402", 13)]


def test_text_other_than_the_file_on_disk_is_analysed_as_that_module_of_the_project(tmp_path: Path) -> None:
    """An editor's unsaved buffer, or a mutant of the recall harness: the text differs from the file
    on disk, and its imports are still followed (the helper of helpers.py is read, not opaque)."""
    from shapecheck.project import LintContext, Workspace

    write(tmp_path, {
        "helpers.py": "import torch\n\ndef prepare(q, d_k):\n    return q\n",
        "attention.py": ATTENTION.replace("q = prepare(q, self.d_k)", "q = q * self.d_k ** -0.5"),
        "model.py": MODEL,
    })
    path = tmp_path / "attention.py"
    assert linter.lint_path(path, str(path)).diagnostics == []  # on disk: scaled, correct
    edited = textwrap.dedent(ATTENTION)  # the buffer calls the helper, which does not scale
    context = LintContext.for_file(Workspace(), path)
    in_project = linter.lint_source(edited, str(path), context=context)
    scores_line = next(n for n, line in enumerate(edited.splitlines(), 1) if "scores = q @" in line)
    assert [(d.code, d.span.line) for d in in_project.diagnostics] == [("SC101", scores_line)]
    assert str(tmp_path / "helpers.py") in {p for p, _ in in_project.dependencies}
    # Alone, the same text cannot know what the helper did.
    assert linter.lint_source(edited, str(path)).diagnostics == []


REGISTRY = """
    from collections.abc import MutableMapping


    class AttentionInterface(MutableMapping):
        _global_mapping = {}

        def __init__(self):
            self._local_mapping = {}

        def __getitem__(self, key):
            if key in self._local_mapping:
                return self._local_mapping[key]
            return self._global_mapping[key]

        def __setitem__(self, key, value):
            self._local_mapping.update({key: value})

        def __delitem__(self, key):
            del self._local_mapping[key]

        def __iter__(self):
            return iter({**self._global_mapping, **self._local_mapping})

        def __len__(self):
            return len(self._global_mapping.keys() | self._local_mapping.keys())

        def get_interface(self, implementation, default):
            if implementation is not None and implementation != "eager" and implementation not in self:
                raise KeyError(implementation)
            return super().get(implementation, default)

        def lookup(self, implementation, default):
            return self._local_mapping.get(implementation, default)


    ALL_ATTENTION_FUNCTIONS = AttentionInterface()
"""

REGISTERED_ATTENTION = """
    import torch
    from torch import nn

    from interfaces import ALL_ATTENTION_FUNCTIONS


    def eager_attention_forward(module, query, key, value, scaling):
        weights = torch.matmul(query, key.transpose(2, 3)) * scaling
        weights = weights.softmax(dim=-1)
        return torch.matmul(weights, value).transpose(1, 2)


    class Attention(nn.Module):
        def __init__(self, hidden_size=256, heads=8, implementation="eager"):
            super().__init__()
            self.heads, self.head_dim = heads, hidden_size // heads
            self.scaling = SCALING
            self.implementation = implementation
            self.q_proj = nn.Linear(hidden_size, hidden_size)
            self.k_proj = nn.Linear(hidden_size, hidden_size)
            self.v_proj = nn.Linear(hidden_size, hidden_size)

        def forward(self, hidden_states):
            b, t, _ = hidden_states.shape
            shape = (b, t, -1, self.head_dim)
            q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
            k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
            v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
            interface = ALL_ATTENTION_FUNCTIONS.LOOKUP(self.implementation, eager_attention_forward)
            out = interface(self, q, k, v, scaling=self.scaling)
            return out.reshape(b, t, -1)
"""


@pytest.mark.parametrize("lookup", ["get_interface", "lookup"])
def test_a_project_table_of_attention_functions_is_followed_to_its_fallback(tmp_path: Path, lookup: str) -> None:
    """transformers' ``ALL_ATTENTION_FUNCTIONS.get_interface(impl, eager_attention_forward)``, read
    in its project: the table's entries are not known, so the eager fallback is the implementation
    followed, as for a table the engine cannot read at all (a file linted alone)."""
    wrong = REGISTERED_ATTENTION.replace("SCALING", "self.head_dim ** -1").replace("LOOKUP", lookup)
    write(tmp_path, {"interfaces.py": REGISTRY, "attention.py": wrong})
    line = next(n for n, text in enumerate(textwrap.dedent(wrong).splitlines(), 1) if "self.scaling =" in text)
    assert findings(tmp_path / "attention.py") == [("attention.py", "SC102", line)]
    right = REGISTERED_ATTENTION.replace("SCALING", "self.head_dim ** -0.5").replace("LOOKUP", lookup)
    write(tmp_path, {"attention.py": right})
    assert findings(tmp_path / "attention.py") == []


FOLLOW_ON = {
    "layers.py": """
        import torch
        import torch.nn as nn


        class Embed(nn.Module):
            def __init__(self, vocab, d_model, max_len):
                super().__init__()
                self.tok = nn.Embedding(vocab, d_model)
                self.pos = nn.Embedding(max_len, d_model)

            def forward(self, ids):
                positions = torch.arange(ids.shape[1], device=ids.device)
                pos = self.pos(positions).unsqueeze(0).expand(ids.shape[0], -1, -1)
                return torch.cat([self.tok(ids), pos], dim=-1)
    """,
    "model.py": """
        import torch.nn as nn

        from layers import Embed


        class Model(nn.Module):
            def __init__(self, vocab=100, d_model=64, max_len=128):
                super().__init__()
                self.embed = Embed(vocab, d_model, max_len)
                self.head = nn.Linear(d_model, vocab)

            def forward(self, ids):
                return self.head(self.embed(ids))
    """,
}


def test_a_follow_on_stands_when_its_root_cause_is_in_a_file_the_run_does_not_report(tmp_path: Path) -> None:
    """The cat in layers.py doubles the width the head of model.py gets. Linting both reports the
    root cause only; linting model.py alone (pre-commit with only it changed) must still show the
    problem: its follow-on, since the root cause's file is read, not reported."""
    write(tmp_path, FOLLOW_ON)
    assert findings(tmp_path) == [("layers.py", "SC301", 15)]
    assert findings(tmp_path / "model.py") == [("model.py", "SC505", 14)]
    # the root cause's rule not selected in its file: not shown there either
    (tmp_path / "pyproject.toml").write_text("[tool.shapecheck]\nper-file-ignores = { \"layers.py\" = [\"SC301\"] }\n")
    report = run(LintOptions(paths=[str(tmp_path)])).report
    assert sorted((Path(d.path).name, d.code) for d in report.diagnostics) == [("model.py", "SC505")]
