"""Head layouts in real model code (SC403 / SC501 / SC502), five things the engine follows:

- a parameter annotated ``Tuple[int, int]`` is a tuple of two sizes named after it, so ``H, W =
  img_size`` gives the same sizes as ``img_size[0]`` / ``img_size[1]`` (Swin v2's and SAM's window
  reverses; an unannotated parameter still unpacks into unknown values);
- a starred ``torch.Size`` of known length passes one size per axis (``reshape(*x.shape)``,
  ``reshape(*x.shape[:-1], -1, 1, 2)``: rotary helpers that restore the input's shape);
- ``x.chunk(2, dim=-1)`` of a size not known to be even keeps the other axes of each piece;
- ``q @ k.transpose(-2, -1)`` after a head split that used the head count once too often is
  that split's SC403, as ``scaled_dot_product_attention`` already was (a helper such as
  mmpretrain's ``scaled_dot_product_attention_pyimpl``);
- a size one branch of an ``if`` rebinds on ``self`` (``if self.num_heads == 0: self.num_heads =
  1``) is not what the other path reads; after the ``if`` the fall-through's value holds;
- ``assert list(attn.size()) == [bsz * h, tgt_len, head_dim]`` (fairseq) and ``if attn.size() !=
  (...): raise`` (Hugging Face) give a tensor whose shape was lost the sizes written;
- a view that regroups a run of axes, neither merging nor splitting (``(t, b * h, d)`` viewed as
  ``(t, b, h * d)``), needs those axes adjacent in memory as a merge does (SC501).

Torch's answers (checked in a scratch script): the window reverse ``x.permute(0, 1, 3, 2, 4,
5).view(-1, H, W, C)`` raises "view size is not compatible with input tensor's size and stride";
``torch.randn(2, 5, 4, 8)`` reshaped to ``(*q.shape[:-1], -1, 1, 2)`` is ``(2, 5, 4, 4, 1, 2)``;
``torch.zeros(1, *(q.shape[:-1] + (4, 2)))`` of ``q (2, 5, 8)`` is ``(1, 2, 5, 4, 2)``;
``torch.randn(2, 5, 4, 7).chunk(2, -1)`` gives ``(2, 5, 4, 4)`` and ``(2, 5, 4, 3)``;
``randn(2, 4, 5, 32) @ randn(2, 4, 6, 8).transpose(-2, -1)`` raises; ``o.reshape(B, T, h * d)``
of ``o (B, h, T, d)`` runs and differs from ``o.transpose(1, 2).reshape(B, T, h * d)``;
``randn(8, 5, 8).transpose(0, 1).view(5, 2, 32)`` raises (it runs with a sequence of 1 and after
``.contiguous()``).
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

# ------------------------------------------------------------------ unpacking a parameter

WINDOW_REVERSE = """
from typing import Tuple
import torch


def window_reverse(windows: torch.Tensor, window_size: Tuple[int, int], img_size: Tuple[int, int]) -> torch.Tensor:
    H, W = img_size
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size[0], W // window_size[1], window_size[0], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5){contiguous}.view(-1, H, W, C)
    return x
"""


def test_a_window_reverse_of_unpacked_sizes_without_contiguous_is_sc501():
    found = findings_on_lines(WINDOW_REVERSE.format(contiguous=""))
    assert found == [("SC501", "x = x.permute(0, 1, 3, 2, 4, 5).view(-1, H, W, C)")]


def test_a_window_reverse_of_unpacked_sizes_made_contiguous_is_clean():
    assert findings_on_lines(WINDOW_REVERSE.format(contiguous=".contiguous()")) == []


def test_unpacked_items_of_a_parameter_are_its_indexed_items():
    shapes = standalone_shapes(WINDOW_REVERSE.format(contiguous=".contiguous()"), "window_reverse", "x")
    assert shapes == [
        "(_, img_size[0]//window_size[0], img_size[1]//window_size[1], window_size[0], window_size[1], C)",
        "(_, img_size[0], img_size[1], C)",
    ]


UNPARTITION = """
from typing import Tuple
import torch


def window_unpartition(windows: torch.Tensor, window_size: int, pad_hw: Tuple[int, int], hw: Tuple[int, int]):
    Hp, Wp = pad_hw
    H, W = hw
    B = windows.shape[0] // (Hp * Wp // window_size // window_size)
    x = windows.view(B, Hp // window_size, Wp // window_size, window_size, window_size, -1)
    x = x.permute(0, 1, 3, 2, 4, 5){contiguous}.view(B, Hp, Wp, -1)
    if Hp > H or Wp > W:
        x = x[:, :H, :W, :].contiguous()
    return x
"""


def test_an_unpartition_with_unpacked_padded_sizes_without_contiguous_is_sc501():
    found = findings_on_lines(UNPARTITION.format(contiguous=""))
    assert found == [("SC501", "x = x.permute(0, 1, 3, 2, 4, 5).view(B, Hp, Wp, -1)")]


def test_an_unpartition_with_unpacked_padded_sizes_made_contiguous_is_clean():
    assert findings_on_lines(UNPARTITION.format(contiguous=".contiguous()")) == []


# ------------------------------------------------------------------ starred sizes, chunks

STARRED = """
import torch


def rope(x: torch.Tensor, freqs: torch.Tensor):
    q = x.view(2, 5, 4, 8)
    pairs = q.float().reshape(*q.shape[:-1], -1, 1, 2)
    rotated = freqs[..., 0] * pairs[..., 0] + freqs[..., 1] * pairs[..., 1]
    back = rotated.reshape(*q.shape)
    first, second = x.view(2, 5, 4, 7).chunk(2, dim=-1)
    return back, first, second
"""


def test_a_starred_size_of_known_length_passes_one_size_per_axis():
    assert standalone_shapes(STARRED, "rope", "pairs") == ["(2, 5, 4, 4, 1, 2)"]
    assert standalone_shapes(STARRED, "rope", "back") == ["(2, 5, 4, 8)"]


SIZES = """
import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.proj = nn.Linear(n, 8)

    def forward(self, x):
        y = self.proj(x)
        unknown_rank = torch.zeros(3, *y.shape[:-1], 4)
        q = torch.zeros(2, 5, 8)
        new_shape = q.shape[:-1] + (4, 2)
        extended = torch.zeros(1, *new_shape)
        return unknown_rank, extended
"""


def test_a_starred_size_with_sizes_appended_passes_each_once():
    assert standalone_shapes(SIZES, "M.forward", "extended") == ["(1, 2, 5, 4, 2)"]


def test_a_starred_size_of_unknown_length_passes_no_sizes():
    assert standalone_shapes(SIZES, "M.forward", "unknown_rank") == []


def test_a_chunk_of_a_constant_size_is_exact():
    assert standalone_shapes(STARRED, "rope", "first") == ["(2, 5, 4, 4)"]
    assert standalone_shapes(STARRED, "rope", "second") == ["(2, 5, 4, 3)"]


CHUNKED = """
import torch


def halves(x: torch.Tensor, n: int):
    first, second = x.view(2, 5, 4, n).chunk(2, dim=-1)
    return first, second
"""


def test_a_chunk_of_a_size_not_known_to_be_even_keeps_the_other_axes():
    assert standalone_shapes(CHUNKED, "halves", "first") == ["(2, 5, 4, _)"]
    assert standalone_shapes(CHUNKED, "halves", "second") == ["(2, 5, 4, _)"]


PROCESSOR = """
import torch
import torch.nn.functional as F
from ..attention import Attention


def apply_rope(xq, xk, freqs_cis):
    xq_ = xq.float().reshape(*xq.shape[:-1], -1, 1, 2)
    xk_ = xk.float().reshape(*xk.shape[:-1], -1, 1, 2)
    xq_out = freqs_cis[..., 0] * xq_[..., 0] + freqs_cis[..., 1] * xq_[..., 1]
    xk_out = freqs_cis[..., 0] * xk_[..., 0] + freqs_cis[..., 1] * xk_[..., 1]
    return xq_out.reshape(*xq.shape).type_as(xq), xk_out.reshape(*xk.shape).type_as(xk)


class AttnProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor, image_rotary_emb: torch.Tensor = None):
        batch_size = hidden_states.shape[0]
        query = attn.to_q(hidden_states)
        key = attn.to_k(hidden_states)
        value = attn.to_v(hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim)
        key = key.view(batch_size, -1, attn.heads, head_dim)
        value = value.view(batch_size, -1, attn.heads, head_dim)
        query_1, query_2 = query.chunk(2, dim=-1)
        key_1, key_2 = key.chunk(2, dim=-1)
        query_1, key_1 = apply_rope(query_1, key_1, image_rotary_emb)
        query = torch.cat([query_1, query_2], dim=-1)
        key = torch.cat([key_1, key_2], dim=-1)
        hidden_states = F.scaled_dot_product_attention(query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2))
        hidden_states = hidden_states{merge}.reshape(batch_size, -1, attn.heads * head_dim)
        return hidden_states
"""


def test_heads_merged_without_transpose_after_a_half_rotary_is_sc502():
    found = findings_on_lines(PROCESSOR.format(merge=""))
    assert found == [("SC502", "hidden_states = hidden_states.reshape(batch_size, -1, attn.heads * head_dim)")]


def test_heads_merged_after_the_transpose_after_a_half_rotary_are_clean():
    assert findings_on_lines(PROCESSOR.format(merge=".transpose(1, 2)")) == []


# ------------------------------------------------------------------ a product after a wrong head split

PYIMPL = """
import torch
from torch import nn


def attention_pyimpl(query, key, value, scale=None):
    scale = scale or query.size(-1) ** 0.5
    weights = query @ key.transpose(-2, -1) / scale
    weights = torch.softmax(weights, dim=-1)
    return weights @ value


class PromptAttention(nn.Module):
    def __init__(self, embed_dims: int, num_heads: int):
        super().__init__()
        self.embed_dims = embed_dims
        self.num_heads = num_heads
        self.head_dims = embed_dims // num_heads
        self.q = nn.Linear(embed_dims, embed_dims)
        self.kv = nn.Linear(embed_dims, embed_dims * 2)

    def forward(self, x, context):
        B, _, _ = context.shape
        q = self.q(x).reshape(B, x.shape[1], self.num_heads, {q_head_dim}).permute(0, 2, 1, 3)
        kv = self.kv(context).reshape(B, context.shape[1], 2, self.num_heads, self.head_dims).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        out = attention_pyimpl(q, k, v)
        return out.transpose(1, 2).reshape(B, x.shape[1], self.embed_dims)
"""


def test_a_query_split_with_the_head_count_twice_met_by_a_product_is_sc403():
    found = findings_on_lines(PYIMPL.format(q_head_dim="self.head_dims * self.num_heads"))
    assert found == [
        (
            "SC403",
            "q = self.q(x).reshape(B, x.shape[1], self.num_heads, self.head_dims * self.num_heads).permute(0, 2, 1, 3)",
        )
    ]


def test_a_query_split_by_its_head_dim_met_by_a_product_is_clean():
    assert findings_on_lines(PYIMPL.format(q_head_dim="self.head_dims")) == []


NANO = """
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, n_embd: int, n_head: int):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, -1, self.n_head, {q_head_dim}).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.softmax(dim=-1)
        y = att @ v
        return y.transpose(1, 2).contiguous().view(B, T, C)
"""


def test_a_nanogpt_query_split_with_the_head_count_twice_is_sc403():
    found = findings_on_lines(NANO.format(q_head_dim="(C // self.n_head) * self.n_head"))
    assert ("SC403", "q = q.view(B, -1, self.n_head, (C // self.n_head) * self.n_head).transpose(1, 2)") in found


def test_a_nanogpt_query_split_by_its_head_dim_is_clean():
    assert findings_on_lines(NANO.format(q_head_dim="C // self.n_head")) == []


# ------------------------------------------------------------------ sizes rebound in one branch

CLAMPED = """
import torch
from torch import nn
from typing import Optional


class Attention(nn.Module):
    def __init__(self, dim: int, head_dim: int = 32, num_heads: Optional[int] = None):
        super().__init__()
        self.head_dim = head_dim
        self.num_heads = num_heads if num_heads else dim // head_dim
        if self.num_heads == 0:
            self.num_heads = 1
        self.attention_dim = self.num_heads * self.head_dim
        self.qkv = nn.Linear(dim, self.attention_dim * 3)
        self.proj = nn.Linear(self.attention_dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
        x = attn.softmax(dim=-1) @ v
        x = x{merge}.reshape(B, N, C)
        return self.proj(x)
"""


def test_heads_merged_without_transpose_after_a_clamped_head_count_are_sc502():
    assert findings_on_lines(CLAMPED.format(merge="")) == [("SC502", "x = x.reshape(B, N, C)")]


def test_heads_merged_after_the_transpose_after_a_clamped_head_count_are_clean():
    assert findings_on_lines(CLAMPED.format(merge=".transpose(1, 2)")) == []


def test_the_fall_through_keeps_the_size_held_before_the_if():
    shapes = standalone_shapes(CLAMPED.format(merge=".transpose(1, 2)"), "Attention.forward", "q")
    assert shapes == ["(B, num_heads|dim//32, N, 32)"]


OTHER_BRANCH = """
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, wide: bool):
        super().__init__()
        self.heads = heads
        if wide:
            self.heads = 2 * heads
            self.width = dim
        else:
            self.width = self.heads * 64
        self.proj = nn.Linear(dim, self.width)

    def forward(self, x):
        y = self.proj(x)
        return y
"""


def test_the_other_branch_reads_the_size_held_before_the_if():
    assert standalone_shapes(OTHER_BRANCH, "Block.forward", "y") == ["(*, 64*heads)"]


# ------------------------------------------------------------------ asserted shapes, regrouping views

FAIRSEQ = """
import torch
import torch.nn.functional as F
from torch import nn
from .rotary_embedding import RotaryEmbedding


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.rot_emb = RotaryEmbedding(dim=self.head_dim)

    def forward(self, query):
        tgt_len, bsz, embed_dim = query.size()
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(query)
        v = self.v_proj(query)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        q, k = self.rot_emb(q, k)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        attn_probs = F.softmax(attn_weights, dim=-1)
        attn = torch.bmm(attn_probs, v)
        assert list(attn.size()) == [bsz * self.num_heads, tgt_len, self.head_dim]
        checked = attn
        attn = attn.transpose(0, 1){contiguous}.view(tgt_len, bsz, embed_dim)
        return self.out_proj(attn)
"""


def test_a_regrouping_view_of_a_transposed_asserted_output_is_sc501():
    found = findings_on_lines(FAIRSEQ.format(contiguous=""))
    assert found == [("SC501", "attn = attn.transpose(0, 1).view(tgt_len, bsz, embed_dim)")]


def test_a_regrouping_view_made_contiguous_is_clean():
    assert findings_on_lines(FAIRSEQ.format(contiguous=".contiguous()")) == []


def test_an_asserted_size_list_gives_the_tensor_its_shape():
    shapes = standalone_shapes(FAIRSEQ.format(contiguous=".contiguous()"), "MultiheadAttention.forward", "checked")
    assert shapes == ["(bsz*num_heads, tgt_len, embed_dim//num_heads)"]


HF_CHECK = """
import torch
from torch import nn
from .rotary import apply_rotary


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.out_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, attn_output, bsz: int, tgt_len: int):
        attn_output = apply_rotary(attn_output)
        if attn_output.size() != (bsz, self.num_heads, tgt_len, self.head_dim):
            raise ValueError(f"wrong size {attn_output.size()}")
        checked = attn_output
        return checked
"""


def test_a_size_test_that_raises_gives_the_tensor_its_shape_past_it():
    shapes = standalone_shapes(HF_CHECK, "Attention.forward", "checked")
    assert shapes == ["(bsz, config.num_attention_heads, tgt_len, config.hidden_size//config.num_attention_heads)"]


BLOCKS = """
import torch


def merge(attn: torch.Tensor, bsz: int, heads: int, tgt_len: int, head_dim: int):
    attn = attn.view(bsz * heads, tgt_len, head_dim)
    return attn.transpose(0, 1){contiguous}.view(tgt_len, bsz, heads * head_dim)
"""


def test_a_view_regrouping_axes_a_transpose_left_apart_is_sc501():
    found = findings_on_lines(BLOCKS.format(contiguous=""))
    assert found == [("SC501", "return attn.transpose(0, 1).view(tgt_len, bsz, heads * head_dim)")]


def test_a_view_regrouping_axes_made_contiguous_is_clean():
    assert findings_on_lines(BLOCKS.format(contiguous=".contiguous()")) == []


SPLIT_ONLY = """
import torch


def split(x: torch.Tensor, b: int, t: int, h: int, d: int):
    x = x.view(b, t, h * d)
    return x.transpose(0, 1).view(t, b, h, d)
"""


def test_a_view_that_only_splits_an_axis_after_a_transpose_is_clean():
    assert findings_on_lines(SPLIT_ONLY) == []


RESAMPLED = """
import torch
import torch.nn.functional as F
from ...utils import torch_int


def resample(patch_pos_embed: torch.Tensor, dim: int, num_positions: int, new_height: int, new_width: int):
    n = torch_int(num_positions**0.5)
    patch_pos_embed = patch_pos_embed.reshape(1, n, n, dim).permute(0, 3, 1, 2)
    patch_pos_embed = F.interpolate(patch_pos_embed, size=(new_height, new_width), mode="bicubic")
    return patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
"""


def test_a_view_with_a_minus_one_after_a_permute_is_not_read_as_one_run():
    # (1, dim, H, W) permuted to (1, H, W, dim): H and W are still adjacent, so view(1, -1, dim)
    # runs (Hugging Face's interpolate_pos_encoding, git / kosmos2 / mlcd); the -1 matches any run
    assert findings_on_lines(RESAMPLED) == []


HALVES = """
import torch


def halves(x: torch.Tensor, t: int, n: int, m: int):
    x = x.view(n, t, m)
    return x.transpose(0, 1).view(t, 2, n * m // 2)
"""


def test_a_run_that_may_split_into_shorter_ones_is_not_judged():
    # (t, n, m) viewed as (t, 2, n * m // 2): with n == 2 the run is two single axes and the view
    # runs (torch: randn(2, 5, 6).transpose(0, 1).view(5, 2, 6)); n is not known
    assert findings_on_lines(HALVES) == []


# ------------------------------------------------------------------ a presence check that computes nothing

NAMES_ONLY = """
from typing import Tuple
import torch
from torch import nn


class Hiera(nn.Module):
    def __init__(self, img_size: Tuple[int, int] = (224, 224), embed_dim: int = 96, patch: int = 4):
        super().__init__()
        num_tokens = (img_size[0] // patch) * (img_size[1] // patch)
        self.patch_embed = nn.Conv2d(3, embed_dim, patch, patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, num_tokens, embed_dim))

    def no_weight_decay(self):
        if self.pos_embed is not None:
            return ["pos_embed"]
        return []

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        return x + self.pos_embed
"""


def test_a_presence_check_in_a_method_that_computes_nothing_is_clean():
    # timm's hiera: the table's name for the optimizer, not the path of the token stream
    assert findings_on_lines(NAMES_ONLY) == []
