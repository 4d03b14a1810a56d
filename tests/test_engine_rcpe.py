"""Positional encodings computed from positions alone, and the modules and terms a standalone run
chose between (issue 8, "Engine II": SC301 / SC303 on real model code).

Three engine capabilities:

- ``ops.base.lineage``: what is computed from position ids and nothing that may be a stream (other
  positions, numbers, a gain of one element, and beside integer ids any offset the engine cannot
  see) is still positions (kind "index"), not "positions added to a stream". A float one is a
  positional encoding (``values.positional_features``): CTRL's ``positional_encoding`` (``pos *
  angle_rates`` then ``sin`` / ``cos`` and ``cat``) and x-transformers' ``ScaledSinusoidalEmbedding``
  (``einsum('i, j -> i j', arange(n) + offset, inv_freq)``, times a ``(1,)`` scale). Before, any
  computation turned the ids into "added", the kind of a token stream positions were added to, so
  SC301 and SC303 did not know the table was positions.
- ``joins.join_values``: a constructor parameter that defaults to None and is replaced by a module
  built by default (``if token_emb is None: token_emb = TokenEmbedding(...)``, or ``norm if norm is
  not None else nn.LayerNorm(d)``), read standalone, is that module (as a tensor parameter's fallback
  already was); and a tensor or ``0`` (``token_type_embeds = self.w(ids) if ids is not None else 0``)
  is the tensor (zero adds nothing).
- SC303: positions computed and never used are not kept quiet by a value the engine cannot see
  somewhere along the stream (an unseen layer); positions known to arrive, or a mask (a causal mask
  tells positions apart, ``create_causal_mask(...)``), still quiet them.
- ``facts.unread.dead_stores``: a store is dead when no read of its name may run after it (flow of
  the function's text), not only when the name is never read: ``pos_emb = rearrange(pos_emb, ...)``
  then dropped (perceiver-pytorch), or bound in one branch and read only in the other (OmniGen).

Torch (checked in a scratch script): ``torch.cat([torch.randn(2, 5, 8), torch.randn(5, 8)], -1)`` raises
("Tensors must have same number of dimensions"); ``torch.cat([torch.randn(2, 5, 8), torch.randn(2, 5, 8)], -1)``
is ``(2, 5, 16)``: the next ``Linear(8, ...)`` fails.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import CTRL_SINUSOID, findings_on_lines, standalone_shapes
from shapecheck.engine import analyze
from shapecheck.engine.domain.values import PositionTag, TensorValue, positional_features

# Hugging Face CTRL: a sinusoidal table computed by module-level helpers from ``arange``, indexed by
# the position ids; the causal mask comes from a builder the engine cannot see.
CTRL = '''
import numpy as np
import torch
from torch import nn
from ...masking_utils import create_causal_mask


''' + CTRL_SINUSOID + '''

class Attention(nn.Module):
    def __init__(self, d_model_size, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.depth = d_model_size // num_heads
        self.Wq = nn.Linear(d_model_size, d_model_size)
        self.Wk = nn.Linear(d_model_size, d_model_size)
        self.Wv = nn.Linear(d_model_size, d_model_size)
        self.dense = nn.Linear(d_model_size, d_model_size)

    def split(self, x, batch_size):
        x = x.reshape(batch_size, -1, self.num_heads, self.depth)
        return x.permute([0, 2, 1, 3])

    def forward(self, x, mask=None):
        b = x.shape[0]
        q = self.split(self.Wq(x), b)
        k = self.split(self.Wk(x), b)
        v = self.split(self.Wv(x), b)
        scores = torch.matmul(q, k.transpose(-1, -2)) / np.sqrt(self.depth)
        if mask is not None:
            scores = scores + mask
        attn = torch.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).permute([0, 2, 1, 3]).reshape(b, -1, self.num_heads * self.depth)
        return self.dense(out)


class CTRLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.d_model_size = config.n_embd
        self.pos_encoding = positional_encoding(config.n_positions, self.d_model_size, torch.float)
        self.w = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([Attention(config.n_embd, config.n_head) for _ in range(config.n_layer)])

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        inputs_embeds = self.w(input_ids)
        if position_ids is None:
            position_ids = torch.arange(0, input_ids.shape[-1], dtype=torch.long).unsqueeze(0)
        if token_type_ids is not None:
            token_type_embeds = self.w(token_type_ids)
            token_type_embeds *= np.sqrt(self.d_model_size)
        else:
            token_type_embeds = 0
        causal_mask = create_causal_mask(config=self.config, inputs_embeds=inputs_embeds)
        inputs_embeds *= np.sqrt(self.d_model_size)
        pos_embeds = self.pos_encoding[position_ids, :]
        hidden_states = {SUM}
        for h in self.h:
            hidden_states = h(hidden_states, causal_mask)
        return hidden_states
'''


def test_ctrl_sinusoids_concatenated_to_the_tokens_are_sc301():
    found = findings_on_lines(CTRL.replace("{SUM}", "torch.cat([inputs_embeds, pos_embeds], dim=-1) + token_type_embeds"))
    assert found == [("SC301", "hidden_states = torch.cat([inputs_embeds, pos_embeds], dim=-1) + token_type_embeds")]


def test_ctrl_sinusoids_computed_and_dropped_are_sc303_without_a_mask():
    source = CTRL.replace("{SUM}", "inputs_embeds + token_type_embeds").replace(
        "hidden_states = h(hidden_states, causal_mask)", "hidden_states = h(hidden_states)"
    )
    assert findings_on_lines(source) == [("SC303", "pos_embeds = self.pos_encoding[position_ids, :]")]


def test_ctrl_sinusoids_dropped_beside_a_causal_mask_from_the_library_are_not_judged():
    # A causal mask tells positions apart (test_engine_hf_models: the library's builder is not read).
    assert findings_on_lines(CTRL.replace("{SUM}", "inputs_embeds + token_type_embeds")) == []


def test_ctrl_as_written_is_clean():
    assert findings_on_lines(CTRL.replace("{SUM}", "inputs_embeds + pos_embeds + token_type_embeds")) == []


# x-transformers: the absolute positional embedding chosen in ``__init__`` (a constant 0, a scaled
# sinusoid or a learned table), the token embedding a caller may pass (built by default).
X_TRANSFORMERS = '''
import torch
from torch import nn, einsum


def exists(val):
    return val is not None


def always(val):
    def inner(*args, **kwargs):
        return val
    return inner


class TokenEmbedding(nn.Module):
    def __init__(self, dim, num_tokens):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)

    def forward(self, x):
        return self.emb(x.long())


class ScaledSinusoidalEmbedding(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        assert dim % 2 == 0
        self.scale = nn.Parameter(torch.ones(1) * dim ** -0.5)
        half_dim = dim // 2
        freq_seq = torch.arange(half_dim).float() / half_dim
        inv_freq = theta ** -freq_seq
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, pos=None, offset=0):
        seq_len, device = x.shape[1], x.device
        if not exists(pos):
            pos = torch.arange(seq_len, device=device) + offset
        emb = einsum("i, j -> i j", pos, self.inv_freq)
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb * self.scale


class TransformerWrapper(nn.Module):
    def __init__(self, *, num_tokens, max_seq_len, dim=512, use_abs_pos_emb=True, token_emb=None):
        super().__init__()
        if not exists(token_emb):
            token_emb = TokenEmbedding(dim, num_tokens)
        self.token_emb = token_emb
        if not use_abs_pos_emb:
            self.pos_emb = always(0)
        else:
            self.pos_emb = ScaledSinusoidalEmbedding(dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x, pos=None, offset=0):
        pos_emb = self.pos_emb(x, pos=pos, offset=offset)
        token_embeds = self.token_emb(x)
        x = {SUM}
        return self.to_logits(x)
'''


def test_scaled_sinusoids_concatenated_to_a_default_token_embedding_are_sc301():
    found = findings_on_lines(X_TRANSFORMERS.replace("{SUM}", "torch.cat([token_embeds, pos_emb], dim=-1)"))
    assert found == [("SC301", "x = torch.cat([token_embeds, pos_emb], dim=-1)")]


def test_scaled_sinusoids_added_are_clean():
    assert findings_on_lines(X_TRANSFORMERS.replace("{SUM}", "token_embeds + pos_emb")) == []


def test_a_module_parameter_with_a_default_module_is_that_module_standalone():
    source = X_TRANSFORMERS.replace("{SUM}", "token_embeds + pos_emb")
    assert standalone_shapes(source, "TransformerWrapper.forward", "token_embeds") == ["(*, 512)"]
    conditional = source.replace(
        "        if not exists(token_emb):\n            token_emb = TokenEmbedding(dim, num_tokens)\n        self.token_emb = token_emb\n",
        "        self.token_emb = token_emb if token_emb is not None else TokenEmbedding(dim, num_tokens)\n",
    )
    assert standalone_shapes(conditional, "TransformerWrapper.forward", "token_embeds") == ["(*, 512)"]


def _tags_of(source: str, function: str, name: str) -> list[TensorValue]:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "model.py")
    return [
        assignment.value
        for run in facts.runs
        if run.qualname == function and not run.inlined
        for assignment in run.assignments
        if assignment.name == name and isinstance(assignment.value, TensorValue)
    ]


SINUSOID = '''
import math
import torch
from torch import nn


class Sinusoid(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.gain = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor, offset: int = 0):
        t = x.shape[1]
        pos = torch.arange(t, device=x.device) + offset
        div = torch.exp(torch.arange(0, self.dim, 2).float() * (-math.log(10000.0) / self.dim))
        angles = pos[:, None].float() * div[None, :]
        pe = torch.cat([angles.sin(), angles.cos()], dim=-1) * self.gain
        mixed = x + pe
        return mixed
'''


def test_positions_computed_alone_stay_positions_and_a_stream_they_reach_is_added():
    pos = _tags_of(SINUSOID, "Sinusoid.forward", "pos")
    pe = _tags_of(SINUSOID, "Sinusoid.forward", "pe")
    mixed = _tags_of(SINUSOID, "Sinusoid.forward", "mixed")
    assert pos and all(v.tag(PositionTag).kind == "index" and v.dtype == "int" for v in pos)
    assert not any(positional_features(v) for v in pos)  # integer ids are no encoding
    assert pe and all(v.tag(PositionTag).kind == "index" and positional_features(v) for v in pe)
    # ``x`` is a stream the engine cannot see into: what positions were added to is not positions.
    assert mixed and all(v.tag(PositionTag).kind == "added" and not positional_features(v) for v in mixed)


def test_positions_first_beside_a_stream_they_were_added_to_are_that_stream():
    source = SINUSOID.replace("        return mixed\n", "        again = pe + mixed\n        return again\n")
    again = _tags_of(source, "Sinusoid.forward", "again")
    assert again and all(v.tag(PositionTag).kind == "added" for v in again)


def test_float_positions_beside_a_tensor_without_provenance_are_a_stream():
    source = SINUSOID.replace("        mixed = x + pe\n", "        mixed = torch.randn(2, t, self.dim) * pe\n")
    mixed = _tags_of(source, "Sinusoid.forward", "mixed")
    assert mixed and all(v.tag(PositionTag).kind == "added" for v in mixed)


def test_a_gain_wider_than_one_element_is_a_stream():
    source = SINUSOID.replace("torch.ones(1)", "torch.ones(7, self.dim)")
    pe = _tags_of(source, "Sinusoid.forward", "pe")
    assert pe and all(v.tag(PositionTag).kind == "added" for v in pe)


OPTIONAL_TERM = '''
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, vocab_size=100, d_model=32):
        super().__init__()
        self.w = nn.Embedding(vocab_size, d_model)

    def forward(self, input_ids, token_type_ids=None):
        if token_type_ids is not None:
            token_type_embeds = self.w(token_type_ids)
        else:
            token_type_embeds = {ZERO}
        scaled = token_type_embeds * 2.0
        return self.w(input_ids) + scaled
'''


def test_an_optional_term_or_zero_is_the_term():
    assert standalone_shapes(OPTIONAL_TERM.replace("{ZERO}", "0"), "Embeddings.forward", "scaled") == ["(*, 32)"]
    assert standalone_shapes(OPTIONAL_TERM.replace("{ZERO}", "0."), "Embeddings.forward", "scaled") == ["(*, 32)"]


def test_an_optional_term_or_another_number_is_not_known():
    assert standalone_shapes(OPTIONAL_TERM.replace("{ZERO}", "1"), "Embeddings.forward", "scaled") == []
    assert standalone_shapes(OPTIONAL_TERM.replace("{ZERO}", "1."), "Embeddings.forward", "scaled") == []


# OpenAI CLIP's attention pool (and mmpretrain's Chinese-CLIP): the tokens kept sequence-first,
# ``(HW + 1, N, C)``, the table ``(HW + 1, C)`` made ``(HW + 1, 1, C)`` to be broadcast-added.
ATTENTION_POOL = '''
import torch
from torch import nn
import torch.nn.functional as F


class AttentionPool2d(nn.Module):
    def __init__(self, spacial_dim=7, embed_dim=64, num_heads=4, output_dim=32):
        super().__init__()
        self.positional_embedding = nn.Parameter(torch.randn(spacial_dim ** 2 + 1, embed_dim) / embed_dim ** 0.5)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.c_proj = nn.Linear(embed_dim, output_dim)
        self.num_heads = num_heads

    def forward(self, x):
        x = x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3]).permute(2, 0, 1)  # NCHW -> (HW)NC
        x = torch.cat([x.mean(dim=0, keepdim=True), x], dim=0)  # (HW+1)NC
        x = {SUM}
        return x
'''


def test_a_sequence_first_table_concatenated_to_the_tokens_is_sc301():
    found = findings_on_lines(ATTENTION_POOL.replace("{SUM}", "torch.cat([x, self.positional_embedding[:, None, :].to(x.dtype)], dim=-1)"))
    assert found == [("SC301", "x = torch.cat([x, self.positional_embedding[:, None, :].to(x.dtype)], dim=-1)")]


def test_a_sequence_first_table_added_or_expanded_and_concatenated_is_clean():
    added = ATTENTION_POOL.replace("{SUM}", "x + self.positional_embedding[:, None, :].to(x.dtype)")
    assert findings_on_lines(added) == []
    expanded = ATTENTION_POOL.replace(
        "{SUM}", "torch.cat([x, self.positional_embedding[:, None, :].expand(-1, x.shape[1], -1)], dim=-1)"
    )
    assert findings_on_lines(expanded) == []


# OPT: token embeddings of ``word_embed_proj_dim`` projected in to ``hidden_size``, positions from a
# learned table of ``hidden_size``.
OPT = '''
import torch
from torch import nn


class OPTDecoder(nn.Module):
    def __init__(self, vocab_size=100, word_embed_proj_dim=16, hidden_size=32, max_positions=64):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, word_embed_proj_dim)
        self.embed_positions = nn.Embedding(max_positions + 2, hidden_size)
        self.project_in = nn.Linear(word_embed_proj_dim, hidden_size, bias=False)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, input_ids: torch.Tensor):
        b, t = input_ids.shape
        inputs_embeds = self.embed_tokens(input_ids)
        positions = torch.arange(t, device=input_ids.device).unsqueeze(0).expand(b, -1) + 2
        pos_embeds = self.embed_positions(positions)
        inputs_embeds = self.project_in(inputs_embeds)
        hidden_states = {SUM}
        return self.out(hidden_states)
'''


def test_projected_token_embeddings_concatenated_to_positions_as_wide_are_sc301():
    found = findings_on_lines(OPT.replace("{SUM}", "torch.cat([inputs_embeds, pos_embeds], dim=-1)"))
    assert ("SC301", "hidden_states = torch.cat([inputs_embeds, pos_embeds], dim=-1)") in found


def test_projected_token_embeddings_added_to_positions_are_clean():
    assert findings_on_lines(OPT.replace("{SUM}", "inputs_embeds + pos_embeds")) == []


# diffusers' OmniGen: a (1, N, d) buffer registered from a helper the engine cannot see, cropped per
# input; the two branches each add it (or, mutated, one drops it while the other still adds it).
OMNIGEN = '''
import torch
from torch import nn
from ..embeddings import get_2d_sincos_pos_embed


class OmniGenPatchEmbed(nn.Module):
    def __init__(self, patch_size=2, in_channels=4, embed_dim=64, pos_embed_max_size=32):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.patch_size = patch_size
        self.pos_embed_max_size = pos_embed_max_size
        pos_embed = get_2d_sincos_pos_embed(embed_dim, pos_embed_max_size, output_type="pt")
        self.register_buffer("pos_embed", pos_embed.float().unsqueeze(0), persistent=True)

    def _cropped_pos_embed(self, height, width):
        height = height // self.patch_size
        width = width // self.patch_size
        top = (self.pos_embed_max_size - height) // 2
        left = (self.pos_embed_max_size - width) // 2
        spatial_pos_embed = self.pos_embed.reshape(1, self.pos_embed_max_size, self.pos_embed_max_size, -1)
        spatial_pos_embed = spatial_pos_embed[:, top : top + height, left : left + width, :]
        spatial_pos_embed = spatial_pos_embed.reshape(1, -1, spatial_pos_embed.shape[-1])
        return spatial_pos_embed

    def _patch_embeddings(self, hidden_states):
        return self.proj(hidden_states).flatten(2).transpose(1, 2)

    def forward(self, hidden_states, padding_latent=None):
        if isinstance(hidden_states, list):
            patched_latents = []
            for sub_latent in hidden_states:
                height, width = sub_latent.shape[-2:]
                sub_latent = self._patch_embeddings(sub_latent)
                pos_embed = self._cropped_pos_embed(height, width)
                sub_latent = {LIST_SUM}
                patched_latents.append(sub_latent)
        else:
            height, width = hidden_states.shape[-2:]
            pos_embed = self._cropped_pos_embed(height, width)
            hidden_states = self._patch_embeddings(hidden_states)
            patched_latents = {SUM}
        return patched_latents
'''


def test_a_broadcast_table_dropped_in_one_branch_and_added_in_the_other_is_sc303():
    one = OMNIGEN.replace("{LIST_SUM}", "sub_latent").replace("{SUM}", "hidden_states + pos_embed")
    assert findings_on_lines(one) == [("SC303", "pos_embed = self._cropped_pos_embed(height, width)")]
    other = OMNIGEN.replace("{LIST_SUM}", "sub_latent + pos_embed").replace("{SUM}", "hidden_states")
    found = findings_on_lines(other)
    assert found == [("SC303", "pos_embed = self._cropped_pos_embed(height, width)")]
    lines = textwrap.dedent(other).splitlines()
    assert [i for i, line in enumerate(lines) if line.strip() == "pos_embed = self._cropped_pos_embed(height, width)"][-1] + 1 == _finding_line(other)


def _finding_line(source: str) -> int:
    from shapecheck.linter import lint_source

    (diagnostic,) = lint_source(textwrap.dedent(source), "attention.py").diagnostics
    return diagnostic.span.line


def test_a_broadcast_table_added_in_both_branches_is_clean():
    source = OMNIGEN.replace("{LIST_SUM}", "sub_latent + pos_embed").replace("{SUM}", "hidden_states + pos_embed")
    assert findings_on_lines(source) == []


def test_a_table_read_later_in_a_loop_or_after_the_if_is_not_dropped():
    # Bound in the loop, read at the top of the next iteration: not dead.
    looped = OMNIGEN.replace("{SUM}", "hidden_states + pos_embed").replace(
        "            for sub_latent in hidden_states:\n",
        "            pos_embed = None\n            for sub_latent in hidden_states:\n                if pos_embed is not None:\n                    patched_latents.append(pos_embed)\n",
    ).replace("{LIST_SUM}", "sub_latent")
    assert "SC303" not in [code for code, _ in findings_on_lines(looped)]
    # Bound in both branches, read after the ``if``: not dead.
    after = OMNIGEN.replace("{LIST_SUM}", "sub_latent").replace("{SUM}", "hidden_states").replace(
        "        return patched_latents\n", "        return patched_latents, pos_embed\n"
    )
    assert "SC303" not in [code for code, _ in findings_on_lines(after)]
    # Read in a closure defined before it is bound: called later, it reads it.
    closure = OMNIGEN.replace("{LIST_SUM}", "sub_latent").replace("{SUM}", "hidden_states").replace(
        "        if isinstance(hidden_states, list):\n",
        "        add = lambda t: t + pos_embed\n        if isinstance(hidden_states, list):\n",
    )
    assert "SC303" not in [code for code, _ in findings_on_lines(closure)]


# perceiver-pytorch's PerceiverLM (lucidrains): the positions rebound by a rearrange, then dropped.
PERCEIVER_LM = '''
import torch
from torch import nn
from einops import rearrange
from .perceiver_io import PerceiverIO


class PerceiverLM(nn.Module):
    def __init__(self, *, dim=32, num_tokens=100, max_seq_len=64, **kwargs):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.perceiver_io = PerceiverIO(dim=dim, queries_dim=dim, logits_dim=num_tokens, **kwargs)

    def forward(self, x, mask=None):
        n, device = x.shape[1], x.device
        x = self.token_emb(x)
        pos_emb = self.pos_emb(torch.arange(n, device=device))
        pos_emb = rearrange(pos_emb, "n d -> () n d")
        x = {SUM}
        return self.perceiver_io(x, mask=mask, queries=x)
'''


def test_positions_rebound_and_then_dropped_are_sc303_where_rebound():
    found = findings_on_lines(PERCEIVER_LM.replace("{SUM}", "x"))
    assert found == [("SC303", 'pos_emb = rearrange(pos_emb, "n d -> () n d")')]


def test_positions_rebound_and_added_are_clean():
    assert findings_on_lines(PERCEIVER_LM.replace("{SUM}", "x + pos_emb")) == []


def test_a_sequence_first_table_beside_tokens_with_a_batch_of_one_is_clean():
    # ``torch.cat([torch.randn(50, 1, 64), torch.randn(50, 1, 64)], -1)`` is fine: nothing to broadcast.
    source = ATTENTION_POOL.replace("{SUM}", "torch.cat([x[:, :1], self.positional_embedding[:, None, :]], dim=-1)")
    assert "SC301" not in [code for code, _ in findings_on_lines(source)]


def test_projected_tokens_and_positions_both_transposed_then_concatenated_are_not_sc301():
    source = OPT.replace(
        "{SUM}", "torch.cat([inputs_embeds.transpose(1, 2), pos_embeds.transpose(1, 2)], dim=-1).transpose(1, 2)"
    )
    assert "SC301" not in [code for code, _ in findings_on_lines(source)]


def test_positions_of_another_width_concatenated_to_projected_tokens_are_not_sc301():
    # Features of a width of their own (Fourier features, a small learned code) may be concatenated on purpose.
    source = OPT.replace("nn.Embedding(max_positions + 2, hidden_size)", "nn.Embedding(max_positions + 2, 8)").replace(
        "nn.Linear(hidden_size, vocab_size)", "nn.Linear(hidden_size + 8, vocab_size)"
    )
    found = findings_on_lines(source.replace("{SUM}", "torch.cat([inputs_embeds, pos_embeds], dim=-1)"))
    assert "SC301" not in [code for code, _ in found]


def test_a_single_row_buffer_dropped_is_not_sc303():
    source = OMNIGEN.replace("{LIST_SUM}", "sub_latent").replace("{SUM}", "hidden_states + pos_embed").replace(
        "spatial_pos_embed = spatial_pos_embed.reshape(1, -1, spatial_pos_embed.shape[-1])",
        "spatial_pos_embed = spatial_pos_embed[:, :1, :1].reshape(1, 1, spatial_pos_embed.shape[-1])",
    )
    assert "SC303" not in [code for code, _ in findings_on_lines(source)]


def test_a_statement_outside_the_function_may_be_read_after():
    from shapecheck.engine.facts.unread import _flow

    function = cst.parse_module("def f(x):\n    y = x\n    return x\n").body[0]
    other = cst.parse_module("y = 1\n").body[0]
    flow = _flow(function)
    assert flow is not None
    assert flow.read_after(other, "y") is True
    assert flow.read_after(function.body.body[0], "y") is False


# Bindings that are not an assignment's targets: what the statement holds runs after them (the
# false positives of a first flow walk on transformers: DAB-DETR's sine embedding, Mask2Former's and
# Grounding DINO's per-level position embeddings).
DETR_LEVELS = '''
import math
import torch
from torch import nn


def gen_sine_position_embeddings(pos_tensor, num_pos_feats=128, temperature=10000):
    scale = 2 * math.pi
    dim_t = torch.arange(num_pos_feats, dtype=torch.float32, device=pos_tensor.device)
    dim_t = temperature ** (2 * torch.div(dim_t, 2, rounding_mode="floor") / num_pos_feats)
    coords = pos_tensor.unbind(-1)
    embeddings = [coord[..., None] * scale / dim_t for coord in coords]
    embeddings = [torch.stack((e[..., 0::2].sin(), e[..., 1::2].cos()), dim=-1).flatten(-2) for e in embeddings]
    return torch.cat(embeddings, dim=-1).to(pos_tensor.dtype)


class Levels(nn.Module):
    def __init__(self, num_levels=3, d_model=32):
        super().__init__()
        self.level_embed = nn.Parameter(torch.randn(num_levels, d_model))

    def forward(self, feature_maps, position_embeddings_list):
        lvl_pos_embed_flatten = []
        for level, (source, pos_embed) in enumerate(zip(feature_maps, position_embeddings_list)):
            pos_embed = pos_embed.flatten(2).transpose(1, 2)
            lvl_pos_embed = pos_embed + self.level_embed[level].view(1, 1, -1)
            lvl_pos_embed_flatten.append(lvl_pos_embed)
        position_embeddings = [embed.flatten(2).transpose(1, 2) for embed in position_embeddings_list]
        return torch.cat(lvl_pos_embed_flatten, 1), position_embeddings


def positions(n):
    pos = torch.arange(n)[:, None].float() / n
    return gen_sine_position_embeddings(pos)
'''


def test_loop_targets_and_comprehension_variables_read_in_their_statement_are_not_dead():
    assert findings_on_lines(DETR_LEVELS) == []


def test_an_assignment_reading_its_own_name_does_not_keep_it_alive():
    from shapecheck.engine.facts.unread import _flow

    function = cst.parse_module(
        "def f(pe, xs):\n    pe = g(pe)\n    ys = [e for e in xs]\n    for t in xs:\n        h(t)\n    q: int = k(q)\n    return ys\n"
    ).body[0]
    flow = _flow(function)
    rebind, comprehension, loop, annotated = (function.body.body[i] for i in range(4))
    assert flow.read_after(rebind, "pe") is False
    assert flow.read_after(annotated, "q") is False
    assert flow.read_after(comprehension, "e") is True
    assert flow.read_after(loop, "t") is True


# The tokens reach a seen attention through a layer the engine cannot see (which may add anything),
# with no mask: positions computed beside them and dropped are still reported.
THROUGH_AN_UNSEEN_LAYER = '''
import torch
from torch import nn
from einops import rearrange
from .layers import PreNormResidual


class Attention(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        q, k, v = self.to_q(x), self.to_k(x), self.to_v(x)
        attn = (q @ k.transpose(-1, -2) * self.scale).softmax(dim=-1)
        return attn @ v


class Model(nn.Module):
    def __init__(self, num_tokens=100, dim=32, max_seq_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        self.pre = PreNormResidual(dim)
        self.attn = Attention(dim)

    def forward(self, x):
        n = x.shape[1]
        x = self.token_emb(x)
        pos_emb = self.pos_emb(torch.arange(n, device=x.device))
        pos_emb = rearrange(pos_emb, "n d -> () n d")
        x = {SUM}
        return self.attn(self.pre(x))
'''


def test_positions_dropped_before_an_unseen_layer_and_a_seen_attention_are_sc303():
    found = findings_on_lines(THROUGH_AN_UNSEEN_LAYER.replace("{SUM}", "x"))
    assert found == [("SC303", 'pos_emb = rearrange(pos_emb, "n d -> () n d")')]
    assert findings_on_lines(THROUGH_AN_UNSEEN_LAYER.replace("{SUM}", "x + pos_emb")) == []


def test_position_ids_beside_a_float_tensor_of_no_provenance_are_added_and_beside_int_offsets_stay_ids():
    source = SINUSOID.replace(
        "        mixed = x + pe\n",
        "        mixed = x + pe\n        noisy = torch.randn(t) + pos\n        shifted = pos + torch.zeros(t, dtype=torch.long)\n",
    )
    noisy = _tags_of(source, "Sinusoid.forward", "noisy")
    shifted = _tags_of(source, "Sinusoid.forward", "shifted")
    assert noisy and all(v.tag(PositionTag).kind == "added" for v in noisy)
    assert shifted and all(v.tag(PositionTag).kind == "index" and v.dtype == "int" for v in shifted)
