"""Precision guards found on real code (the precision benchmark's findings, written again from
scratch in the style of the modules they came from): each correct snippet must stay clean, and
the engine fact behind it is pinned.

- a ``@staticmethod`` called through ``self`` is given no ``self`` (the timestep embedding of a
  diffusion transformer: its ``dim`` was bound to the timesteps);
- two paths' projections are not one (a query from a global query on one path and from the fused
  qkv on the other, a key from another piece of it: no shared query and key weights);
- a divisor the engine cannot see (``q / helper(q)``) may be the scale.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

TIMESTEP_EMBEDDER = """
import math

import torch
from torch import nn


class TimestepEmbedder(nn.Module):
    def __init__(self, out_size, frequency_embedding_size=256):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(frequency_embedding_size, out_size),
            nn.SiLU(),
            nn.Linear(out_size, out_size),
        )
        self.frequency_embedding_size = frequency_embedding_size

    @staticmethod
    def timestep_embedding(t, dim, max_period=10000):
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(start=0, end=half, dtype=torch.float32) / half)
        args = t[:, None].float() * freqs[None]
        return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)

    def forward(self, t):
        t_freq = self.timestep_embedding(t, self.frequency_embedding_size)
        return self.mlp(t_freq)


class Model(nn.Module):
    def __init__(self, dim=64, t_scale=1000.0):
        super().__init__()
        self.t_embedder = TimestepEmbedder(dim)
        self.t_scale = t_scale

    def forward(self, x, t):
        return x + self.t_embedder(t * self.t_scale)[:, None]
"""

GLOBAL_QUERY_ATTENTION = """
import torch
from torch import nn


class WindowAttentionGlobal(nn.Module):
    def __init__(self, dim, num_heads, use_global=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.use_global = use_global
        if self.use_global:
            self.qkv = nn.Linear(dim, dim * 2)
        else:
            self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, q_global=None):
        B, N, C = x.shape
        if self.use_global and q_global is not None:
            k, v = self.qkv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
            q = q_global.repeat_interleave(B // q_global.shape[0], dim=0)
            q = q.reshape(B, N, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        else:
            q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))
"""

HELPER_SCALE = """
import torch
from torch import nn


def scaled_size_sqrt(query_layer, scale_factor: int):
    return torch.sqrt(torch.tensor(query_layer.size(-1), dtype=torch.float) * scale_factor)


class DisentangledAttention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4, pos_att_type=("c2p", "p2c")):
        super().__init__()
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.pos_att_type = pos_att_type
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.num_heads, self.head_size).permute(2, 0, 3, 1, 4)
        scale = scaled_size_sqrt(q, 1 + len(self.pos_att_type))
        q = q / scale.to(dtype=q.dtype)
        probs = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return (probs @ v).transpose(1, 2).reshape(b, t, -1)
"""


def test_a_static_method_called_through_self_gets_no_self():
    assert findings_on_lines(TIMESTEP_EMBEDDER) == []
    # ``dim`` is the frequency embedding size (256), not the timesteps.
    assert standalone_shapes(TIMESTEP_EMBEDDER, "TimestepEmbedder.forward", "t_freq") == ["(*, _, 256)"]
    # Its output still meets the MLP: a wrong in_features is found.
    bug = TIMESTEP_EMBEDDER.replace("nn.Linear(frequency_embedding_size, out_size)", "nn.Linear(2 * frequency_embedding_size, out_size)")
    assert [code for code, _ in findings_on_lines(bug)] == ["SC505"]


def test_projections_of_two_paths_are_not_one_shared_weight():
    assert findings_on_lines(GLOBAL_QUERY_ATTENTION) == []
    # One path alone that computes the query and the key with one piece of the projection is SC401.
    shared = GLOBAL_QUERY_ATTENTION.replace(
        "q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)",
        "q, _, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)\n            k = q",
    )
    assert "SC401" in [code for code, _ in findings_on_lines(shared)]


def test_a_divisor_from_a_helper_may_be_the_scale():
    assert findings_on_lines(HELPER_SCALE) == []
    # Without the division the scores are unscaled.
    bug = HELPER_SCALE.replace("        q = q / scale.to(dtype=q.dtype)\n", "")
    assert [code for code, _ in findings_on_lines(bug)] == ["SC101"]


CHUNKED_DIAGONAL = """
from torch import nn


def pad_and_diagonalize(chunked_hidden_states):
    total_num_heads, num_chunks, window_overlap, hidden_dim = chunked_hidden_states.size()
    chunked_hidden_states = nn.functional.pad(chunked_hidden_states, (0, window_overlap + 1))
    chunked_hidden_states = chunked_hidden_states.view(total_num_heads, num_chunks, -1)
    chunked_hidden_states = chunked_hidden_states[:, :, :-window_overlap]
    return chunked_hidden_states.view(total_num_heads, num_chunks, window_overlap, window_overlap + hidden_dim)


def trim(x):
    b, t, d = x.shape
    window = d // 4
    kept = x[:, :-window]
    return kept
"""


def test_a_slice_counted_from_the_end_by_a_symbol_leaves_the_length_minus_it():
    # Longformer's diagonalisation: ``[:, :, :-window_overlap]`` of a length the engine does not
    # know is not ``-window_overlap`` long (and the view after it is no head-split mismatch).
    assert findings_on_lines(CHUNKED_DIAGONAL) == []
    assert standalone_shapes(CHUNKED_DIAGONAL, "trim", "kept") == ["(b, t-d//4, d)"]
