"""Kill tests written by the lead (2 Dec 2026, eleventh session) for the rule code changed in that
session: SC402's messages across files, at the finding and at its fallback."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shapecheck.runner import LintOptions, run

from test_project_analysis import heads_config_as_a_package


def _diagnostics(*paths: Path):
    # cache=False: under mutmut every mutant is forked from one parent, so a cached result of the
    # first mutant would be read by the next (benchmarks/README.md, "Result cache under mutmut").
    return run(LintOptions(paths=[str(p) for p in paths], isolated=True, cache=False)).report.diagnostics


def test_SC402_the_head_split_is_named_relative_to_the_file_the_finding_is_reported_in(tmp_path: Path) -> None:
    """The head count's default in ``gpt/configs/config.py``, the split in ``gpt/models/layers.py``:
    at the default the split is ``../models/layers.py:20``; linting only ``gpt/train.py``, the finding
    moves to the model's construction there and names ``models/layers.py:20``."""
    package = heads_config_as_a_package(tmp_path)

    (whole,) = _diagnostics(package)
    assert (Path(whole.path).name, whole.span.line, whole.code) == ("config.py", 11, "SC402")
    assert whole.message.endswith(" lose 8 features (the head split in ../models/layers.py:20)")
    (moved,) = _diagnostics(package / "train.py")
    assert (Path(moved.path).name, moved.span.line, moved.code) == ("train.py", 12, "SC402")
    assert moved.message.endswith(" lose 8 features (the head split in models/layers.py:20)")


def test_SC402_a_divisibility_check_in_another_file_is_named(tmp_path: Path) -> None:
    """The model is built in ``model.py`` from the defaults of ``config.py``; the check that fails is
    the ``assert`` of ``layers.py``: the message says where it is."""
    files = {
        "config.py": """
            from dataclasses import dataclass


            @dataclass
            class Config:
                n_embd: int = 768
                n_head: int = 10
        """,
        "layers.py": """
            import torch.nn as nn


            class SelfAttention(nn.Module):
                def __init__(self, config):
                    super().__init__()
                    assert config.n_embd % config.n_head == 0
                    self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        """,
        "model.py": """
            import torch.nn as nn

            from config import Config
            from layers import SelfAttention


            class Model(nn.Module):
                def __init__(self, config: Config):
                    super().__init__()
                    self.attn = SelfAttention(config)


            def build():
                return Model(Config())
        """,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    (found,) = _diagnostics(tmp_path / "model.py")
    assert (found.code, found.span.line) == ("SC402", 14)
    assert found.message == (
        "768 is not divisible by 10 (768 % 10 = 8): the heads cannot split the model width (checked in layers.py:7)"
    )
