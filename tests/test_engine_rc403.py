"""Head splits of tensors known only by their width (SC403 on diffusers' attention processors).

A diffusers processor projects with the layers of an ``attn`` module the engine often cannot see
(``attn: Attention`` imported from another file), reads the width off one projection
(``inner_dim = key.shape[-1]``) and splits every projection with ``view(batch_size, -1, attn.heads,
head_dim)``. Two things let the engine judge such a split:

- reading ``x.shape[-1]`` / ``x.size(-1)`` of a tensor of unknown shape refines ``x`` to
  ``(*, size)``: its width is the size read (``base.read_trailing_size``);
- a view with a ``-1`` of a tensor known only by its trailing sizes ``(*, e)``, whose sizes after
  the ``-1`` divide ``e`` by a head count (``e // h``) and multiply to ``e`` times a power of a head
  count (``(h, h * (e // h))``), uses the head count once too often
  (``dims.widens_a_head_split``). A head count is a divisor of such a floor division or its quotient
  (``kv_heads = inner_dim // head_dim``).

Torch's answers (checked in a scratch script): ``torch.randn(2, 6, 32).view(2, -1, 4, 32)`` raises
(384 elements are not a multiple of 256) and ``torch.randn(2, 8, 32).view(2, -1, 4, 32)`` runs but
gives ``(2, 2, 4, 32)``: the sequence cut by the head count, each head the whole width.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

PROCESSOR = """
import torch
import torch.nn.functional as F
from ..attention_processor import Attention


class AttnProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor, encoder_hidden_states=None):
        batch_size = hidden_states.shape[0]
        query = attn.to_q(hidden_states)
        key = attn.to_k(hidden_states)
        value = attn.to_v(hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        key = key.view(batch_size, -1, attn.heads, {key_sizes}).transpose(1, 2)
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(query, key, value)
        return out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
"""


def test_a_processor_key_split_with_the_head_count_twice_is_sc403():
    found = findings_on_lines(PROCESSOR.format(key_sizes="head_dim * attn.heads"))
    assert ("SC403", "key = key.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)") in found


def test_a_processor_key_split_by_its_head_dim_is_clean():
    assert findings_on_lines(PROCESSOR.format(key_sizes="head_dim")) == []


def test_reading_the_last_size_of_an_unknown_tensor_gives_it_that_width():
    source = PROCESSOR.format(key_sizes="head_dim").replace(
        "        head_dim = inner_dim // attn.heads\n", "        head_dim = inner_dim // attn.heads\n        probe = key + 0\n"
    )
    assert standalone_shapes(source, "AttnProcessor.__call__", "probe") == ["(*, inner_dim)"]


LUMINA_GQA = """
import torch
from .attention_processor import Attention


class GQAProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor):
        batch_size, sequence_length, _ = hidden_states.shape
        query = attn.to_q(hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        query_dim = query.shape[-1]
        inner_dim = key.size(-1)
        head_dim = query_dim // attn.heads
        kv_heads = inner_dim // head_dim
        query = query.view(batch_size, -1, attn.heads, {query_sizes})
        key = key.view(batch_size, -1, kv_heads, {key_sizes})
        value = value.view(batch_size, -1, kv_heads, head_dim)
        return query, key, value
"""


def test_a_query_split_with_the_head_count_twice_is_sc403():
    source = LUMINA_GQA.format(query_sizes="head_dim * attn.heads", key_sizes="head_dim")
    assert findings_on_lines(source) == [("SC403", "query = query.view(batch_size, -1, attn.heads, head_dim * attn.heads)")]


def test_a_grouped_key_split_with_the_kv_head_count_twice_is_sc403():
    """``kv_heads = inner_dim // head_dim`` is a head count too (the quotient of the division)."""
    source = LUMINA_GQA.format(query_sizes="head_dim", key_sizes="kv_heads * head_dim")
    assert findings_on_lines(source) == [("SC403", "key = key.view(batch_size, -1, kv_heads, kv_heads * head_dim)")]


def test_a_grouped_query_attention_split_is_clean():
    assert findings_on_lines(LUMINA_GQA.format(query_sizes="head_dim", key_sizes="head_dim")) == []


MODULE = """
import torch
from torch import nn


class JointAttention(nn.Module):
    def __init__(self, dim, heads, dim_head):
        super().__init__()
        self.heads = heads
        inner = dim_head * heads
        self.to_q = nn.Linear(dim, inner)
        self.to_k = nn.Linear(dim, inner)
        self.to_v = nn.Linear(dim, inner)

    def forward(self, x, context):
        b = x.shape[0]
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)
        head_dim = k.shape[-1] // self.heads
        q = q.reshape(b, -1, self.heads, head_dim)
        k = k.reshape(b, -1, self.heads, head_dim)
        v = v.reshape(b, -1, self.heads, {value_sizes})
        return q, k, v
"""


def test_a_reshape_of_a_layer_output_of_unknown_rank_with_the_head_count_twice_is_sc403():
    """The Linear keeps the input's unknown leading dims: the value is ``(*, dim_head * heads)``,
    and ``k.shape[-1] // self.heads`` is ``dim_head``: no floor division is left, the width's own
    factor ``heads`` is used twice."""
    found = findings_on_lines(MODULE.format(value_sizes="self.heads * head_dim"))
    assert found == [("SC403", "v = v.reshape(b, -1, self.heads, self.heads * head_dim)")]


def test_a_reshape_of_a_layer_output_of_unknown_rank_is_clean():
    assert findings_on_lines(MODULE.format(value_sizes="head_dim")) == []


FUNCTIONAL = """
import torch


def split_heads(x, heads):
    width = x.size(-1)
    return x.reshape(x.shape[0], -1, heads, {sizes}).transpose(1, 2)


def attend(q, k, v, heads):
    q, k, v = (split_heads(t, heads) for t in (q, k, v))
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
    return torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
"""


def test_a_functional_split_of_the_width_read_with_size_is_sc403():
    found = findings_on_lines(FUNCTIONAL.format(sizes="heads * (width // heads)"))
    assert ("SC403", "return x.reshape(x.shape[0], -1, heads, heads * (width // heads)).transpose(1, 2)") in found


def test_a_functional_split_of_the_width_read_with_size_is_clean():
    assert findings_on_lines(FUNCTIONAL.format(sizes="width // heads")) == []


def test_a_view_that_keeps_a_head_dim_last_axis_is_not_judged():
    """``(*, d // h)`` (a per-head norm's input, of unknown rank) viewed as ``(b, -1, h, d // h)``
    keeps its last axis and takes the heads from the leading dims (a ``(b * t * h, d // h)``
    tensor): not a split of the width, so not judged."""
    source = """
    import torch
    from torch import nn


    class QKNorm(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.head_dim = dim // heads
            self.norm = nn.LayerNorm(self.head_dim)

        def forward(self, q, b):
            q = self.norm(q)
            return q.view(b, -1, self.heads, self.head_dim)
    """
    assert findings_on_lines(source) == []
    assert "(*, dim//heads)" in standalone_shapes(source, "QKNorm.forward", "q")


def test_only_sizes_counted_from_the_end_refine_an_unknown_tensor():
    source = """
    import torch


    def f(x, y, z):
        last = x.shape[-1]
        rows = y.size(-2)
        first = z.shape[0]
        return x, y, z
    """
    assert standalone_shapes(source, "f", "last") == []
    found = {name: standalone_shapes(source, "f", name) for name in ("x", "y", "z")}
    assert found["x"] == []  # parameters are not assignments: read the refined tensors through a return
    probe = source.replace("return x, y, z", "a = x + 0\n        c = y + 0\n        e = z + 0\n        return a, c, e")
    assert standalone_shapes(probe, "f", "a") == ["(*, last)"]
    assert standalone_shapes(probe, "f", "c") == ["(*, rows, _)"]
    assert standalone_shapes(probe, "f", "e") == []


TIMM_FUSED = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, B):
        qkv = self.qkv(x).reshape(B, -1, 3, self.num_heads, {head_sizes}).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        out = attn.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(B, -1, self.num_heads * self.head_dim))
"""


def test_a_fused_qkv_split_of_unknown_rank_is_clean():
    """``(*, 3 * dim)`` viewed as ``(B, -1, 3, h, dim // h)``: the constant 3 and the heads both
    split the width."""
    assert findings_on_lines(TIMM_FUSED.format(head_sizes="self.head_dim")) == []


def test_a_fused_qkv_split_of_unknown_rank_with_the_head_count_twice_is_sc403():
    found = findings_on_lines(TIMM_FUSED.format(head_sizes="self.num_heads * self.head_dim"))
    assert found[0][0] == "SC403" and "reshape(B, -1, 3, self.num_heads, self.num_heads * self.head_dim)" in found[0][1]


def test_a_constant_ratio_is_not_judged():
    """Numbers only (``(*, 512)`` viewed as ``(b, -1, 8, 512)``): 8 cannot be told from a count
    the leading dims hold, so nothing is said (a limit, not a promise)."""
    source = MODULE.format(value_sizes="self.heads * head_dim").replace("def __init__(self, dim, heads, dim_head):", "def __init__(self, dim, heads=8, dim_head=64):")
    assert findings_on_lines(source) == []


SLIDING_TILES = """
import torch


def sliding_tile_mask(num_frames: int, height: int, width: int, window: int, device):
    positions = torch.arange(max(num_frames, height, width), device=device)
    distance = (positions[:, None] - positions[None, :]).abs()
    near_t = (distance[:num_frames, :num_frames] <= window).flatten()
    near_h = (distance[:height, :height] <= window).flatten()
    near_w = (distance[:width, :width] <= window).flatten()
    near_hw = (near_h[:, None] & near_w[None, :]).reshape(height, height, width, {last}).transpose(1, 2).flatten()
    near = (near_t[:, None] & near_hw[None, :]).reshape(num_frames, num_frames, height * width, height * width)
    return near.transpose(1, 2).reshape(num_frames * height * width, num_frames * height * width)
"""


def test_max_of_named_sizes_is_a_size_whose_rows_can_be_cut():
    """``torch.arange(max(f, h, w))`` has ``max(...)`` rows; ``[:h]`` of it is ``h`` rows, so the
    block mask's sizes are known (torch: ``sliding_tile_mask(2, 3, 4, 1, "cpu")`` is ``(24, 24)``)."""
    source = SLIDING_TILES.format(last="width")
    assert standalone_shapes(source, "sliding_tile_mask", "positions") == ["(max(height,num_frames,width))"]
    assert standalone_shapes(source, "sliding_tile_mask", "near") == ["(num_frames, num_frames, height*width, height*width)"]
    assert findings_on_lines(source) == []


def test_a_block_mask_reshaped_with_a_size_squared_is_sc403():
    """torch: ``shape '[3, 3, 4, 16]' is invalid for input of size 144``."""
    found = findings_on_lines(SLIDING_TILES.format(last="width * width"))
    assert [code for code, _ in found] == ["SC403"]


def test_max_of_one_size_is_that_size_and_of_unseen_sizes_nothing():
    source = """
    import torch


    def f(n: int, x):
        a = torch.zeros(max(n, n))
        b = torch.zeros(max(n, helper(x)))
        return a, b
    """
    assert standalone_shapes(source, "f", "a") == ["(n)"]
    assert standalone_shapes(source, "f", "b") == []


BIGBIRD = """
import torch
from torch import nn


class BlockSparseAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError("heads")
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.block_size = config.block_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)

    def forward(self, hidden_states):
        batch_size, seqlen, _ = hidden_states.size()
        if seqlen % self.block_size != 0:
            raise ValueError("Query sided sequence length must be multiple of block size")
        query_layer = (
            self.query(hidden_states)
            .view(batch_size, -1, self.num_attention_heads, {query_sizes})
            .transpose(1, 2)
        )
        key_layer = self.key(hidden_states).view(batch_size, -1, self.num_attention_heads, self.attention_head_size).transpose(1, 2)
        blocked_query = query_layer.view(batch_size, self.num_attention_heads, seqlen // self.block_size, self.block_size, -1)
        blocked_key = key_layer.view(batch_size, self.num_attention_heads, seqlen // self.block_size, self.block_size, -1)
        return torch.einsum("bhnqd,bhnkd->bhnqk", blocked_query, blocked_key)
"""


def test_a_head_count_the_constructor_checked_divides_the_width_counts_for_the_minus_one():
    """``hidden_size % num_attention_heads`` is checked, so the head count is a head count even
    where no floor division is left: ``view(b, -1, h, h * d)`` of ``(b, t, h * d)`` makes the -1
    ``t / h``. The block views after it (``-1`` the head dim, the sequence cut by the checked block
    size) stay clean."""
    found = findings_on_lines(BIGBIRD.format(query_sizes="self.attention_head_size * self.num_attention_heads"))
    assert [code for code, _ in found] == ["SC403"]
    assert findings_on_lines(BIGBIRD.format(query_sizes="self.attention_head_size")) == []


BART_MERGE = """
import torch
from torch import nn


class DetrAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, batch_size):
        return tensor.view(batch_size, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states):
        batch_size, target_len, embed_dim = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, batch_size)
        value_states = self._shape(self.v_proj(hidden_states), -1, batch_size)
        proj_shape = (batch_size * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, target_len, batch_size).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        value_states = value_states.view(*proj_shape)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        attn_probs = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_probs, value_states)
        attn_output = attn_output.view(batch_size, self.num_heads, target_len, {last})
        attn_output = attn_output.transpose(1, 2)
        attn_output = attn_output.reshape(batch_size, target_len, embed_dim)
        return self.out_proj(attn_output)
"""


def test_a_merge_view_whose_sizes_differ_by_a_sequence_length_once_the_head_dim_is_exact_is_sc403():
    """``(b * h, t, e // h)`` viewed as ``(b, h, t, t * (e // h))``: with ``e = h * q`` the counts
    are ``b h t q`` and ``b h t t q``, a factor ``t`` (torch, b=2 t=5 e=8 h=2: ``shape '[2, 2, 5,
    20]' is invalid for input of size 80``)."""
    found = findings_on_lines(BART_MERGE.format(last="self.head_dim * target_len"))
    assert found == [("SC403", "attn_output = attn_output.view(batch_size, self.num_heads, target_len, self.head_dim * target_len)")]
    assert findings_on_lines(BART_MERGE.format(last="self.head_dim")) == []


def test_divisibility_cancels_a_common_factor():
    from shapecheck.engine.symbolic.dims import Assumptions, Truth, divides, sym

    b, hidden, h, s = sym("b"), sym("hidden"), sym("h"), sym("s")
    facts = Assumptions()
    facts.add_divisible(hidden, h)
    assert divides(b * h * s, b * hidden * s, facts) is Truth.TRUE  # hidden % h == 0 checked
    assert divides(b * h * s, b * hidden * s) is Truth.UNKNOWN
    assert divides(3 * s, 4 * s) is Truth.FALSE  # 4s / 3s = 4/3 for every s
    assert divides(2 * s, 4 * s * h) is Truth.TRUE
    assert divides(s * h, s * s) is Truth.UNKNOWN  # s / h: h may divide s


SANA = """
import torch
import torch.nn.functional as F
from ..attention_processor import Attention


class SanaAttnProcessor:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor, encoder_hidden_states: torch.Tensor | None = None):
        batch_size, sequence_length, _ = hidden_states.shape
        query = attn.to_q(hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, {query_sizes}).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        hidden_states = F.scaled_dot_product_attention(query, key, value, dropout_p=0.0, is_causal=False)
        hidden_states = hidden_states.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
        return attn.to_out[0](hidden_states)
"""


def test_a_query_split_whose_head_dim_sdpa_cannot_contract_with_the_keys_is_sc403_at_the_view():
    """The query's width is never read (``attn.to_q`` is not seen), but SDPA contracts its head dim
    ``h * (e // h)`` with the key's ``e // h`` (torch: ``F.scaled_dot_product_attention`` of
    ``(2, 4, 3, 32)`` and ``(2, 4, 3, 8)`` raises)."""
    found = findings_on_lines(SANA.format(query_sizes="head_dim * attn.heads"))
    assert found == [("SC403", "query = query.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)")]
    assert findings_on_lines(SANA.format(query_sizes="head_dim")) == []


def test_a_value_head_dim_of_its_own_is_not_judged_by_sdpa():
    """SDPA's value may have a head dim of its own: only the query and the key are contracted."""
    source = SANA.format(query_sizes="head_dim").replace(
        "value = value.view(batch_size, -1, attn.heads, head_dim)", "value = value.view(batch_size, -1, attn.heads, head_dim * attn.heads)"
    )
    assert findings_on_lines(source) == []


def test_a_constant_ratio_from_the_other_branch_of_a_standalone_run_is_not_judged():
    """GCViT builds ``qkv`` as ``Linear(dim, 2 * dim)`` or ``Linear(dim, 3 * dim)``; the standalone
    run keeps the last one, and the global path's ``reshape(B, N, 2, h, dim // h)`` meets
    ``(B, N, 3 * dim)``: a ratio 3/2, a configuration the code is not written for, not a bug."""
    source = """
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
                kv = self.qkv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                k, v = kv.unbind(0)
                q = q_global.reshape(B, N, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
            else:
                qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
                q, k, v = qkv.unbind(0)
            attn = (q * self.scale) @ k.transpose(-2, -1)
            x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
            return self.proj(x)
    """
    assert findings_on_lines(source) == []
