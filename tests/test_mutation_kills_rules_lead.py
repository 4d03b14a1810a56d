"""Kill tests written by the lead (2 Dec 2026, eleventh session) for the rule code changed in that
session: SC402's messages across files, at the finding and at its fallback."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shapecheck.linter import lint_source
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


OFFSET_TABLE = """
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = nn.Embedding(ROWS, config.hidden_size)
        self.norm = nn.LayerNorm(config.max_position_embeddings)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device) + OFFSET
        hidden_states = self.embed_tokens(input_ids) + self.embed_positions(positions)
        return self.norm(hidden_states)
"""


def test_a_positional_table_with_a_small_offset_serves_the_length_before_the_offset():
    """A table of ``max_positions + k`` rows (k from 1 to 4: padding, a class token, BART's 2) serves
    ``max_positions`` positions, so LayerNorm(max_positions) over the features is a sequence length
    (SC404); a table of ``max_positions + 5`` rows, or ``2 * max_positions - 1`` (a relative-distance
    table), says nothing about ``max_positions``."""
    def codes(rows: str, offset: str) -> list[str]:
        source = OFFSET_TABLE.replace("ROWS", rows).replace("OFFSET", offset)
        return [d.code for d in lint_source(source, "embeddings.py").diagnostics]

    assert codes("config.max_position_embeddings + 1", "1") == ["SC404"]
    assert codes("config.max_position_embeddings + 4", "4") == ["SC404"]
    assert codes("config.max_position_embeddings + 5", "5") == []
    assert codes("2 * config.max_position_embeddings - 1", "0") == []
    assert codes("config.max_position_embeddings * 2 + 2", "2") == []


SWIN_WINDOWS = """
import torch


def window_reverse(windows, window_size: int, H: int, W: int):
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size, W // window_size, window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).view(TARGET)
"""


def test_a_leading_count_of_unknown_value_matches_only_when_the_other_axes_group_exactly():
    """Swin's ``view(-1, H, W, C)`` after the permute merges axes the permute separated (SC501);
    ``view(-1, H * W, C)`` merges them too; ``view(-1, C)`` cannot be grouped against the source
    axis by axis (the leading -1 takes several axes), and a view that keeps the permuted axes apart
    (``view(-1, H // window_size, window_size, W // window_size, window_size, C)``) merges nothing."""
    def codes(target: str) -> list[str]:
        return [d.code for d in lint_source(SWIN_WINDOWS.replace("TARGET", target), "swin.py").diagnostics]

    assert codes("-1, H, W, C") == ["SC501"]
    assert codes("-1, H * W, C") == ["SC501"]
    assert codes("-1, H // window_size, window_size, W // window_size, window_size, C") == []


ROTARY_PASSED_IN = """
import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Encoder(nn.Module):
    def __init__(self, vocab=100, d=64, heads=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.heads, self.head_dim = heads, d // heads
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)

    def forward(self, input_ids, position_embeddings):
        x = self.tok(input_ids)
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        ROPE
        w = (q @ k.transpose(-2, -1) * self.head_dim ** -0.5).softmax(dim=-1)
        return (w @ v).transpose(1, 2).reshape(b, t, -1)
"""


def test_rotary_tables_passed_in_and_unsqueezed_may_carry_positions():
    """``q * cos`` with ``cos`` an unseen tuple's item, unsqueezed (a tensor the engine knows nothing
    of): the queries may carry positions, so SC303 stays silent (NeoMMe's partial RoPE); without the
    rotary step the same encoder is reported."""
    with_rope = ROTARY_PASSED_IN.replace("ROPE", "q, k = apply_rotary_pos_emb(q, k, cos, sin)")
    without = ROTARY_PASSED_IN.replace("ROPE", "pass")
    assert [d.code for d in lint_source(with_rope, "encoder.py").diagnostics] == []
    assert [d.code for d in lint_source(without, "encoder.py").diagnostics] == ["SC303"]
