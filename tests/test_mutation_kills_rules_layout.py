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



SC301_FEATURES = """import torch
import torch.nn as nn


class SeriesEncoder(nn.Module):
    def __init__(self, n_features=8, d_model=32, max_len=64):
        super().__init__()
        self.input_proj = nn.Linear(n_features, d_model)
        self.pos = nn.Parameter(torch.zeros(1, max_len, d_model))

    def forward(self, series):
        b, t, f = series.shape
        x = self.input_proj(series)
        return torch.cat([x, self.pos[:, :t]], dim=-1)


class PointEncoder(nn.Module):
    def __init__(self, vocab=100, d_model=32, d_content=24, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.content = nn.Linear(d_model, d_content)
        self.positions = nn.Embedding(block, d_model - d_content)

    def forward(self, ids):
        b, t = ids.shape
        pos = self.positions(torch.arange(t)).expand(b, t, -1)
        return torch.cat([self.content(self.tokens(ids)), pos], dim=-1)


class LostShape(nn.Module):
    def __init__(self, vocab=100, d_model=32, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(block, d_model)

    def forward(self, ids):
        b, t = ids.shape
        tok = self.tokens(ids).reshape(*ids.shape, -1)
        pos = self.positions(torch.arange(t)).expand(b, t, -1)
        return torch.cat([tok, pos], dim=-1)


if __name__ == "__main__":
    print(PointEncoder()(torch.randint(0, 100, (2, 16))).shape)
    print(LostShape()(torch.randint(0, 100, (2, 16))).shape)
    try:
        SeriesEncoder()(torch.randn(2, 16, 8))
    except RuntimeError as e:
        print("series:", e)
"""


def test_SC301_a_table_made_to_broadcast_and_tokens_of_their_own_width_are_concatenated_positions() -> None:
    """``_made_to_broadcast`` / ``_token_features`` / ``_last_is`` / ``_fix``: a ``(1, max_len, d)``
    table sliced to ``t`` beside projected series features of the same rank (torch raises: "Sizes of
    tensors must match except in dimension 2") and token embeddings reshaped on the way are reported,
    with the fix's title; tokens projected to another width (24 content features) beside an 8-wide
    position embedding are a deliberate concatenation to 32 features (it runs), not reported."""
    result = lint_source(SC301_FEATURES, "snippet.py", {"SC301"})
    assert result.error is None, result.error
    title = "add the positional encoding instead of concatenating it"
    assert [(d.line, d.column, d.fix.message) for d in result.diagnostics] == [(14, 16, title), (40, 16, title)]


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


def _project_findings(*paths: Path, full: bool = False) -> list[tuple[str, int, str]]:
    """(file name, or path with ``full``, line, message) of SC402's findings in a run over ``paths``
    (their imports read too). No result cache: a cached result would hide a change of the rule."""
    from shapecheck.runner import LintOptions, run

    report = run(LintOptions(paths=[str(p) for p in paths], isolated=True, cache=False)).report
    return sorted(
        (d.path if full else Path(d.path).name, d.span.line, d.message) for d in report.diagnostics if d.code == "SC402"
    )


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


SC402_PACKAGE = {
    "configs/gpt.py": """from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 100
    block_size: int = 16
    n_embd: int = 768
    n_head: int = 10
""",
    "models/attention.py": """import torch.nn as nn


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.head_dim = config.n_embd // config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        y = (q @ k.transpose(-2, -1) / self.head_dim**0.5).softmax(dim=-1) @ v
        return y.transpose(1, 2).reshape(B, T, C)
""",
    "models/mlp.py": """import torch.nn as nn


class GroupedMLP(nn.Module):
    def __init__(self, width, groups):
        super().__init__()
        assert width % groups == 0, "the groups must split the width"
        self.fc = nn.Linear(width // groups, 4 * width // groups)
""",
    "train.py": """import torch

from configs.gpt import GPTConfig
from models.attention import CausalSelfAttention
from models.mlp import GroupedMLP


def main():
    config = GPTConfig()
    attention = CausalSelfAttention(config)
    mlp = GroupedMLP(config.n_embd, 5 * 2)
    y = attention(torch.randn(2, config.block_size, config.n_embd))
    return mlp, y


if __name__ == "__main__":
    main()
""",
}


def test_SC402_findings_name_evidence_in_another_folder_relative_to_the_finding(tmp_path) -> None:
    """``check``'s ``facts.elsewhere(evidence, finding)`` in both loops: in a package layout the place
    of the evidence is written relative to the finding's folder. The head split of ``models/`` is
    reported at the ``configs/`` default (``../models/attention.py:14``); the failed ``assert width %
    groups == 0`` of ``models/mlp.py`` at the construction in ``train.py`` (``models/mlp.py:7``)."""
    for name, text in SC402_PACKAGE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    found = [(Path(path).relative_to(tmp_path).as_posix(), line, message) for path, line, message in _project_findings(tmp_path, full=True)]
    assert [(name, line) for name, line, _ in found] == [("configs/gpt.py", 9), ("train.py", 11)]
    assert found[0][2].endswith(": 10 heads of 768 // 10 = 76 lose 8 features (the head split in ../models/attention.py:14)")
    assert found[1][2] == "768 is not divisible by 10 (768 % 10 = 8): the heads cannot split the model width (checked in models/mlp.py:7)"


SC402_GROUPED = """import torch.nn as nn


class GroupedAttention(nn.Module):
    def __init__(self, d_model=512, n_kv_groups=3, block_size=256, window=64):
        super().__init__()
        assert block_size % window == 0, "the sequence must split into whole windows"
        self.n_heads = 2 * n_kv_groups
        assert d_model % self.n_heads == 0, "the heads must split the model width"
        self.qkv = nn.Linear(d_model, 3 * d_model)
"""


def test_SC402_a_failed_check_after_one_that_holds_lands_on_the_width_default() -> None:
    """``check``'s divisibility loop: the window check holds and comes first (later checks still
    count); the head count ``2 * n_kv_groups`` was written nowhere as one number (``_written`` gives
    nothing for it), so the class analysed alone reports the width's default, ``d_model=512``."""
    assert _found(SC402_GROUPED, "SC402") == [(5, 32)]


SC402_CONSTRUCTED_LATER = """import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, width=512, heads=6):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        return self.q(x).view(b, t, self.heads, c // self.heads)


def main():
    model = Attention()
    large = Attention(width=768, heads=10)
    out = model(torch.randn(2, 8, 512)) + large(torch.randn(2, 8, 768)).sum()
    print(out.shape)
"""


def test_SC402_a_split_met_alone_first_lands_on_the_construction_met_later() -> None:
    """``_one_per_split`` / ``_origin``: the method analysed alone meets the split first (its sizes are
    the defaults), ``main`` meets it again through ``Attention()``: the context that knows the
    construction wins, so the one finding is at ``Attention()`` (line 17), not the ``heads=6``
    default; a second construction whose sizes fail too (line 18) meets the same split: one split, one
    finding, at the first construction."""
    assert _found(SC402_CONSTRUCTED_LATER, "SC402") == [(17, 13)]


SC402_LAYERS = """import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d_model=512, head_dim=1024):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, d_model // head_dim, batch_first=True)


class CrossBlock(nn.Module):
    def __init__(self, d_model, n_heads=8):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)


class Encoder(nn.Module):
    def __init__(self, width=512, heads=6):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.layer = nn.TransformerEncoderLayer(width, heads, batch_first=True)


model = Encoder(width=768, heads=10)


class ConfiguredBlock(nn.Module):
    def __init__(self, n_heads=6, **attn_kwargs):
        super().__init__()
        self.attn = nn.MultiheadAttention(num_heads=n_heads, **attn_kwargs)
"""


def test_SC402_headed_layers_with_zero_or_symbolic_heads_are_no_claim_and_others_land_on_the_instantiation() -> None:
    """``check``'s constructions loop: ``d_model // head_dim`` = 0 heads (torch refuses a zero head
    count with a ValueError of its own, no divisibility to check), a symbolic width with 8 heads and a
    width given in ``**attn_kwargs`` (not known) are no claim; a layer after a ``nn.Linear`` still counts; ``TransformerEncoderLayer(512, 6)`` of the
    class analysed alone is reported at the layer (line 21), and the instantiation ``Encoder(width=768,
    heads=10)`` whose values reach it at that call (line 24: ``run.origin()``)."""
    assert _found(SC402_LAYERS, "SC402") == [(21, 22), (24, 9)]


# ------------------------------------------------------------------------------------------- SC404

SC404_TIME_AXIS = """import torch.nn as nn
import torch.nn.functional as F


class Embedder(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)

    def forward(self, ids):
        b, t = ids.shape
        x = self.embed(ids)
        return F.layer_norm(x, (t,))
"""


def test_SC404_a_functional_norm_over_the_time_axis_names_the_sequence_length() -> None:
    """``_sequence_length``: ``F.layer_norm(x, (t,))`` on token embeddings ``(b, t, d_model)`` with
    symbolic sizes normalizes over the sequence length, axis 1 (torch raises: normalized_shape [16]
    against an input of size [2, 16, 32]); the message says which axis it is and what to use."""
    result = lint_source(SC404_TIME_AXIS, "snippet.py", {"SC404"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            13,
            16,
            "F.layer_norm normalized_shape (t,) is the sequence length (axis 1), not the feature dim d_model of its "
            "input (b, t, d_model): expected F.layer_norm(d_model)",
        )
    ]


SC404_HELPER_NORM = {
    "norms.py": """import torch.nn as nn


def make_norm(size):
    return nn.LayerNorm(size)
""",
    "model.py": """import torch
import torch.nn as nn

from norms import make_norm


class TinyLM(nn.Module):
    def __init__(self, vocab_size=100, d_model=32, block_size=16):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.norm = make_norm(block_size)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        return self.head(self.norm(self.embed(ids)))


if __name__ == "__main__":
    logits = TinyLM()(torch.randint(0, 100, (2, 16)))
""",
}


def test_SC404_a_norm_built_by_a_helper_of_a_file_not_reported_falls_back_to_its_application(tmp_path) -> None:
    """``check``'s ``fallback``: ``make_norm(block_size)`` of ``norms.py`` builds ``LayerNorm(16)``
    for ``(2, 16, 32)`` token states (torch raises). Over the project the finding is where the layer
    is built (the size to change); linting ``model.py`` alone (``norms.py`` read, not reported) it
    falls back to where the layer is applied."""
    from shapecheck.runner import LintOptions, run

    for name, text in SC404_HELPER_NORM.items():
        (tmp_path / name).write_text(text)

    def found(path):
        report = run(LintOptions(paths=[str(path)], isolated=True, cache=False)).report
        return [(Path(d.path).name, d.span.line, d.span.column) for d in report.diagnostics if d.code == "SC404"]

    assert found(tmp_path) == [("norms.py", 5, 12)]
    assert found(tmp_path / "model.py") == [("model.py", 15, 26)]


# ------------------------------------------------------------------------------------------- SC501

SC501_HELPER = """import torch
from jaxtyping import Float
from torch import Tensor


def merge_heads(y):
    b, t = y.size(0), y.size(1)
    return y.view(b, t, -1)


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    att = torch.softmax(q @ k.transpose(-2, -1) / 8.0, dim=-1)
    flat = merge_heads(torch.zeros(2, 16, 512))
    return merge_heads((att @ v).transpose(1, 2)), flat
"""


def test_SC501_a_helper_viewing_a_contiguous_tensor_first_and_transposed_heads_later() -> None:
    """``_verdict`` and ``_fix``: ``merge_heads`` is met with a contiguous ``(2, 16, 512)`` tensor (no
    claim) and with heads transposed to ``(b, t, h, 64)`` (torch raises "view size is not compatible
    with input tensor's size and stride"): the later context is the finding, with its fix's title."""
    result = lint_source(SC501_HELPER, "snippet.py", {"SC501"})
    assert [(d.line, d.column) for d in result.diagnostics] == [(8, 12)]
    assert result.diagnostics[0].fix.message == "insert .contiguous() before .view()"


SC501_FOLLOW_ON = """import torch
import torch.nn as nn


class Embed(nn.Module):
    def __init__(self, vocab=100, width=32, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)

    def forward(self, ids):
        b, t = ids.shape
        tok, pos = self.tokens(ids), self.positions(torch.arange(t)).expand(b, t, -1)
        x = torch.cat([tok, pos], dim=-1)
        return x.transpose(1, 2).view(b, -1)


class Heads(nn.Module):
    def forward(self, att, v):
        b, h, t, d = v.shape
        return (att @ v).transpose(1, 2).view(b, t * h, d)


if __name__ == "__main__":
    out = Embed()(torch.randint(0, 100, (2, 16)))
    y = Heads()(torch.softmax(torch.randn(2, 4, 16, 16), -1), torch.randn(2, 4, 16, 8))
"""


def test_SC501_a_view_of_a_widened_concatenation_is_a_follow_on_and_the_merged_sizes_are_named() -> None:
    """``check``'s ``causes`` and message: with every rule on, the non-contiguous view of the
    concatenation SC301 reports (line 14) is its follow-on and is left out; the view of transposed
    heads ``(2, 16, 4, 8)`` merging axes 1..2 names exactly those two sizes (both raise at run time:
    "view size is not compatible with input tensor's size and stride")."""
    result = lint_source(SC501_FOLLOW_ON, "snippet.py")
    assert result.error is None, result.error
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("SC301", 14, 13), ("SC501", 21, 16)]
    assert result.diagnostics[1].message == (
        ".view() merges axes 1..2 (16, 4) of a tensor of shape (2, 16, 4, 8) that was reordered to axis order "
        "(0, 2, 1, 3) and is not contiguous: those axes are not adjacent in memory, so view raises at run time"
    )


# ------------------------------------------------------------------------------------------- SC504

SC504_FIXES = """import torch
import torch as th
from jaxtyping import Float
from torch import Tensor


def scores(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"]):
    a = q @ k.transpose(1, 2)
    b = q @ (k.transpose(1, 2))
    c = q @ k.T
    d = torch.matmul(q, torch.transpose(k, 1, 2))
    e = q @ th.swapaxes(k, 1, 2)
    f = q @ torch.transpose(k, dim0=1, dim1=2)
    g = q @ k.permute(0, 2, 1, 3)
    h = q @ torch.transpose(input=k, dim0=1, dim1=2)
    i = q @ k.swapdims(1, 2)
    return a, b, c, d, e, f, g, h, i
"""


def test_SC504_fixes_of_every_key_transpose_form() -> None:
    """``_fix``: the method forms (``.transpose(1, 2)``, parenthesized, ``.T``, ``.permute``,
    ``.swapdims``) become ``.transpose(-2, -1)`` keeping the parentheses; the function forms of an
    imported module (``torch.transpose(k, 1, 2)``, its dims given by keyword) keep the function and
    swap the last two axes; a key given by keyword (``input=k``) gets no fix (and ``th.swapaxes`` is
    not followed by the engine). Every one of these products raises in torch for ``t != h``."""
    from shapecheck.fixes import fix_module

    result = lint_source(SC504_FIXES, "snippet.py", {"SC504"})
    assert result.error is None, result.error
    method, function = "transpose the key's last two axes: .transpose(-2, -1)", "transpose the key's last two axes: transpose(k, -2, -1)"
    assert [(d.line, d.column, d.fix.message) for d in result.diagnostics] == [
        (8, 13, method), (9, 14, method), (10, 13, method), (11, 25, function), (13, 13, function),
        (14, 13, method), (16, 13, method),
    ]
    fixed = fix_module(result.module, SC504_FIXES, result.diagnostics).fixed.splitlines()
    assert fixed[7:16] == [
        "    a = q @ k.transpose(-2, -1)",
        "    b = q @ (k.transpose(-2, -1))",
        "    c = q @ k.transpose(-2, -1)",
        "    d = torch.matmul(q, torch.transpose(k, -2, -1))",
        "    e = q @ th.swapaxes(k, 1, 2)",
        "    f = q @ torch.transpose(k, -2, -1)",
        "    g = q @ k.transpose(-2, -1)",
        "    h = q @ torch.transpose(input=k, dim0=1, dim1=2)",
        "    i = q @ k.transpose(-2, -1)",
    ]


SC504_HELPER = """import torch
from jaxtyping import Float
from torch import Tensor


def scores(q, k_t):
    return q @ k_t


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"]):
    right = scores(q, k.transpose(-2, -1))
    wrong = scores(q, k.swapaxes(1, 2))
    return right, wrong
"""


def test_SC504_a_product_helper_met_with_the_right_key_first_and_a_swapped_one_later() -> None:
    """``_verdict``: ``scores`` is met first with ``k.transpose(-2, -1)`` (right: no claim) and then with
    ``k.swapaxes(1, 2)`` (the method form of a head/time swap): the later context is the finding, at
    the swap, with the method fix."""
    result = lint_source(SC504_HELPER, "snippet.py", {"SC504"})
    assert [(d.line, d.column, d.fix.message) for d in result.diagnostics] == [
        (12, 23, "transpose the key's last two axes: .transpose(-2, -1)")
    ]


# ------------------------------------------------------------------------------------------- SC602

SC602_SCALAR_TARGET = """import torch
import torch.nn.functional as F


def main():
    head = torch.nn.Linear(32, 10)
    features = torch.randn(4, 32)
    return F.cross_entropy(head(features), torch.tensor(3))
"""


def test_SC602_a_scalar_target_for_a_batch_of_logits_names_the_class_dim() -> None:
    """``mismatch``'s rank branch: ``(4, 10)`` logits with a 0-d target (torch raises "Expected input
    batch_size (4) to match target batch_size (0)"); the message names the classes, dim 1 of the
    logits (10), not the batch."""
    result = lint_source(SC602_SCALAR_TARGET, "snippet.py", {"SC602"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            8,
            12,
            "cross_entropy gets logits (4, 10) with targets (): the ranks do not fit, expected targets (4) "
            "(the classes are dim 1 of the logits, 10)",
        )
    ]


SC602_POSITIONS = """import torch
import torch.nn.functional as F


def main():
    logits = torch.randn(4, 10, 16)
    ids = torch.randint(0, 10, (4, 17))
    return F.cross_entropy(logits, ids[:, 1:-1])
"""


def test_SC602_classes_on_dim_1_with_targets_one_position_short() -> None:
    """``mismatch``'s position pairs: ``(4, 10, 16)`` logits (classes on dim 1) against ``(4, 15)``
    targets cut one too short (torch raises "Expected target size [4, 16], got [4, 15]"): logits
    dim 2 is compared with targets dim 1."""
    result = lint_source(SC602_POSITIONS, "snippet.py", {"SC602"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            8,
            12,
            "cross_entropy gets logits (4, 10, 16) with targets (4, 15): logits dim 2 (16) must equal targets "
            "dim 1 (15), expected targets (4, 16)",
        )
    ]
