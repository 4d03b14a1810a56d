"""A slice keeps its axis whatever its bounds (issue 8 item 3: unknown inputs keep their structure).

``self.query[:query_num]`` with ``query_num`` looked up at run time (a dict of patch counts), or a
stepped window ``x[:, a:b:2]``, is still a tensor of the same rank: the sliced axis gets an unnamed
size, the same one wherever it is read again (``queries.size(1)``), and the other axes keep theirs.
Before, the whole shape was lost.

With it, SC507 reads a 3-D attention mask ``(batch * heads, L, S)`` whose ``L`` is axis 1 of a
query given to a seq-first ``nn.MultiheadAttention``: the query is ``(batch, seq, feature)``
(Aria's projector, built without ``batch_first=True``).

Torch's answers (scratch script, torch 2.13 CPU): ``torch.zeros(6, 8)[:n]`` for ``n = 4`` is
``(4, 8)``; ``torch.zeros(2, 9, 8)[:, 1:7:2]`` is ``(2, 3, 8)``. ``nn.MultiheadAttention(8, 2)``
(seq-first) called on a query ``(3, 5, 8)`` (batch 3, 5 tokens) with a key ``(3, 7, 8)`` and an
``attn_mask`` of ``(3 * 2, 5, 7)`` raises (``The shape of the 3D attn_mask is torch.Size([6, 5, 7]),
but should be (10, 3, 3)``); built with ``batch_first=True`` it gives ``(3, 5, 8)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

LOOKUP = """
import torch
from torch import nn


class Resampler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.latents = nn.Parameter(torch.zeros(config.max_queries, config.hidden_size))
        self.patch_to_query = config.patch_to_query

    def forward(self, features: torch.Tensor, stride: int):
        batch_size, num_patches = features.shape[0], features.shape[1]
        query_num = self.patch_to_query.get(num_patches)
        latents = self.latents[:query_num]
        queries = latents.unsqueeze(0).repeat(batch_size, 1, 1)
        again = queries.size(1)
        every_other = queries[:, 1:7:stride]
        return queries
"""


def test_a_slice_with_a_bound_the_engine_cannot_read_keeps_the_other_axes():
    [latents] = standalone_shapes(LOOKUP, "Resampler.forward", "latents")
    assert latents == "(_, config.hidden_size)"
    [queries] = standalone_shapes(LOOKUP, "Resampler.forward", "queries")
    assert queries.strip("()").split(", ")[1:] == ["_", "config.hidden_size"]


def test_a_stepped_window_keeps_its_rank():
    [window] = standalone_shapes(LOOKUP, "Resampler.forward", "every_other")
    [queries] = standalone_shapes(LOOKUP, "Resampler.forward", "queries")
    assert len(window.strip("()").split(", ")) == 3
    assert window.strip("()").split(", ")[::2] == queries.strip("()").split(", ")[::2]


ARIA = """
import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        hidden_size = config.vision_config.hidden_size
        self.q_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.k_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.v_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.multihead_attn = nn.MultiheadAttention(hidden_size, config.vision_config.num_attention_heads{flag})

    def forward(self, key_value_states, hidden_states, attn_mask=None):
        query = self.q_proj(hidden_states)
        key = self.k_proj(key_value_states)
        value = self.v_proj(key_value_states)
        attn_output, _ = self.multihead_attn(query, key, value, attn_mask=attn_mask)
        return attn_output


class Projector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.patch_to_query_dict = config.projector_patch_to_query_dict
        self.num_heads = config.vision_config.num_attention_heads
        self.query = nn.Parameter(torch.zeros(config.max_queries, config.vision_config.hidden_size))
        self.cross_attn = CrossAttention(config)

    def forward(self, key_value_states: torch.Tensor, attn_mask: torch.Tensor | None = None):
        batch_size, num_patches = key_value_states.shape[0], key_value_states.shape[1]
        query_num = None
        for patches, queries in self.patch_to_query_dict.items():
            if num_patches == patches:
                query_num = queries
                break
        if query_num is None:
            raise KeyError(num_patches)
        queries = self.query[:query_num].unsqueeze(0).repeat(batch_size, 1, 1)
        if attn_mask is not None:
            attn_mask = attn_mask.repeat_interleave(self.num_heads, 0)
            attn_mask = attn_mask.unsqueeze(1).expand(-1, queries.size(1), -1)
        return self.cross_attn(key_value_states, queries, attn_mask=attn_mask)
"""


def test_a_3d_attention_mask_whose_query_length_is_axis_1_shows_a_batch_first_query():
    found = findings_on_lines(ARIA.format(flag=""))
    # Reported where the layer is built: that is where ``batch_first=True`` goes.
    assert found == [("SC507", "self.multihead_attn = nn.MultiheadAttention(hidden_size, config.vision_config.num_attention_heads)")]


def test_the_same_model_built_batch_first_is_clean():
    assert findings_on_lines(ARIA.format(flag=", batch_first=True")) == []


SEQ_FIRST = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        # x: (seq, batch, d_model); bias: (batch, seq, seq) repeated per head
        seq_len, batch = x.shape[0], x.shape[1]
        mask = bias.repeat_interleave(self.n_heads, 0)[:, :seq_len, :seq_len]
        out, _ = self.attn(x, x, x, attn_mask=mask)
        return out
"""


def test_a_seq_first_layer_with_a_3d_mask_over_axis_0_is_clean():
    assert findings_on_lines(SEQ_FIRST) == []
