"""Rule decisions of SC301-SC603 that mutation testing found unpinned (benchmarks/mutation_testing.py).

Each test names its rule code, so ``-k SCnnn`` selects it with the rule's other tests. The snippets are
small PyTorch code; each test pins where the rule reports (exact lines and columns) and where it must
stay silent.
"""

from __future__ import annotations

from pathlib import Path

from shapecheck.linter import lint_source


def _found(code: str, rule: str) -> list[tuple[int, int]]:
    result = lint_source(code, "snippet.py", {rule})
    assert result.error is None, result.error
    return sorted((d.line, d.column) for d in result.diagnostics if d.code == rule)


# ------------------------------------------------------------------------------------------- SC301

SC301_UNKNOWN_AXIS = """import torch
import torch.nn as nn


class Embed(nn.Module):
    def __init__(self, vocab=100, width=32, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)

    def forward(self, ids, axis):
        b, t = ids.shape
        tok, pos = self.tokens(ids), self.positions(torch.arange(t)).expand(b, t, -1)
        joined = torch.cat([tok, pos], dim=axis)
        last = torch.cat([tok, pos], dim=-1)
        return joined, last
"""


def test_SC301_a_concatenation_along_an_axis_the_engine_cannot_read_is_no_claim() -> None:
    """``_concatenates_positions``: ``dim=axis`` with ``axis`` unknown (no caller gives it) may be the
    sequence axis, which is a legitimate concatenation: only the ``dim=-1`` one is reported."""
    assert _found(SC301_UNKNOWN_AXIS, "SC301") == [(15, 16)]


# ------------------------------------------------------------------------------------------- SC303

SC303_POSITIONAL_MASK = '''import torch
import torch.nn.functional as F
from torch import nn


class ALiBiEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4):
        super().__init__()
        self.h = n_heads
        self.tok = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, n_heads + 1) / n_heads))

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.tok(idx)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        pos = torch.arange(T, device=idx.device)
        bias = -self.slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()
        y = F.scaled_dot_product_attention(q, k, v, bias)
        return y.transpose(1, 2).reshape(B, T, -1)


class BagEncoder(nn.Module):
    def __init__(self, vocab_size=50, d_model=32, n_heads=4):
        super().__init__()
        self.h = n_heads
        self.tok = nn.Embedding(vocab_size, d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, idx):
        B, T = idx.shape
        q, k, v = self.qkv(self.tok(idx)).view(B, T, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, None, 0.0, True)
        return y.transpose(1, 2).reshape(B, T, -1)
'''


def test_SC303_an_alibi_bias_given_to_sdpa_by_position_gives_the_positions() -> None:
    """``_attention_operands``: SDPA's ``attn_mask`` is its 4th argument (index 3) by position too;
    an ALiBi distance bias passed there is the positional information (the encoder is silent), while
    the same encoder with no bias (``None``, then dropout and ``is_causal``) is reported at its lookup."""
    assert _found(SC303_POSITIONAL_MASK, "SC303") == [(32, 28)]


# ------------------------------------------------------------------------------------------- SC302

SC302_WINDOWED_TABLE = """import torch
from torch import nn


class WindowedEncoder(nn.Module):
    def __init__(self, vocab_size, d_model, max_len, window):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.max_positions = (max_len // window) * window
        self.pos = nn.Parameter(torch.zeros(1, self.max_positions, d_model))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids)
        return x + self.pos
"""


def test_SC302_a_table_sized_by_a_formula_against_a_plain_sequence_length_is_unsliced() -> None:
    """``_same_formula``'s first guard: a plain sequence length ``t`` is no formula, so a table of
    ``(max_len // window) * window`` rows (rounded down to whole windows) added whole is reported. With
    every symbol renamed to one, the two would look equal (``size * (size // size)``); the guard keeps
    that renaming for two formulas (a patch count against a table made for it)."""
    result = lint_source(SC302_WINDOWED_TABLE, "snippet.py", {"SC302"})
    assert [(d.line, d.column) for d in result.diagnostics] == [(15, 20)]
    assert "window*(max_len//window)" in result.diagnostics[0].message


# ------------------------------------------------------------------------------------------- SC401

SC401_QUERY_USED_FOR_KEYS = """import math

import torch
import torch.nn as nn


class SelfAttention(nn.Module):
    def __init__(self, query, d_model=32):
        super().__init__()
        self.query = query
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)

    def forward(self, x):
        q = self.query(x)
        k = self.query(x)
        v = self.value(x)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return att.softmax(dim=-1) @ v

    def forward_padded(self, x, pad):
        q, k, v = self.query(x), self.query(x), self.value(x)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        att = att.masked_fill(pad[:, None, :], float("-inf"))
        return att.softmax(dim=-1) @ v


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.shared_query = nn.Linear(d_model, d_model)
        self.attn = SelfAttention(self.shared_query, d_model)

    def forward(self, ids):
        return self.attn(self.embed(ids))
"""


def test_SC401_a_query_projection_used_for_the_keys_is_reported_at_each_key() -> None:
    """``_second_binding`` and ``check``: the query projection is built by the encoder and bound once
    in each class (``Encoder.shared_query``, ``SelfAttention.query``): that is no second binding of one class
    (nor is ``SelfAttention.__init__`` met again in another context), so there is no assignment to
    blame, and each key computed with it (``k = self.query(x)`` in ``forward``, the second projection of
    ``forward_padded``) is reported: each is a line to fix."""
    assert _found(SC401_QUERY_USED_FOR_KEYS, "SC401") == [(16, 13), (22, 34)]


SC401_SHARED_HELPER = """import math

import torch
import torch.nn as nn


def attend(q, k, v):
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    return att.softmax(dim=-1) @ v


class SelfAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return attend(self.q_proj(x), self.k_proj(x), self.v_proj(x))


class TiedAttention(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = self.q_proj
        self.v_proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        return attend(self.q_proj(x), self.k_proj(x), self.v_proj(x))


class Encoder(nn.Module):
    def __init__(self, vocab_size=100, d_model=32):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.first = SelfAttention(d_model)
        self.second = TiedAttention(d_model)

    def forward(self, ids):
        return self.second(self.first(self.embed(ids)))
"""


def test_SC401_a_helper_called_with_distinct_projections_first_and_tied_ones_later() -> None:
    """``check``: the softmax of ``attend`` is met first with distinct query and key projections (no
    finding from that context) and then with tied ones: the later context still counts, reported where
    ``self.k_proj = self.q_proj`` ties them."""
    assert _found(SC401_SHARED_HELPER, "SC401") == [(27, 9)]


# ------------------------------------------------------------------------------------------- SC402

PROJECTS = Path(__file__).resolve().parents[1] / "examples" / "projects"


def _project_findings(*paths: Path) -> list[tuple[str, int, str]]:
    """(file name, line, message) of SC402's findings in a run over ``paths`` (imports read too)."""
    from shapecheck.runner import LintOptions, run

    report = run(LintOptions(paths=[str(p) for p in paths], isolated=True)).report
    return sorted((Path(d.path).name, d.span.line, d.message) for d in report.diagnostics if d.code == "SC402")


def test_SC402_an_uneven_head_split_configured_in_another_file_lands_on_the_default() -> None:
    """``check``'s head-split conflicts: the split is in ``layers.py`` (line 20), the sizes come from
    ``GPTConfig()``'s defaults in ``config.py``. The whole project reports once, at the default
    ``n_head = 10`` (``conflict.at``), naming the split's place; linting ``train.py`` alone (the other
    files read, not reported) falls back to the line there that built the model with those defaults."""
    project = PROJECTS / "bug_heads_config"
    ((name, line, message),) = _project_findings(project)
    assert (name, line) == ("config.py", 11)
    assert message.endswith("(the head split in layers.py:20)")
    ((name, line, message),) = _project_findings(project / "train.py")
    assert (name, line) == ("train.py", 12)
    assert "(the head split in layers.py:20)" in message
