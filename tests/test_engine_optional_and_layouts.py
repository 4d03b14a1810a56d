"""Real-code idioms of the fourth engine session (issue 8): optional tensors and layers, fallbacks
of ``None`` parameters, buffers, factories with unseen sizes, an untransposed key, a written scale
after a layer with its own gain, ``einops.einsum`` and numpy's ``axis=``.

Each idiom is pinned twice: what the engine infers (through ``shapecheck.engine.analyze``) and a
rule-level pair, a snippet with the bug the idiom used to hide and its corrected twin, which stays
clean. Snippets are written from scratch in the styles of published code (timm / mmpretrain ViTs,
Hugging Face embeddings, lucidrains' einops attention).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import PositionTag, TensorValue
from shapecheck.linter import lint_source


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "idiom.py")


def values(source: str, function: str) -> dict:
    """name -> value in the standalone run of ``function`` (the last assignment wins)."""
    runs = [run for run in facts_of(source).runs if run.qualname == function and not run.inlined]
    assert runs, f"no standalone run of {function}"
    return {a.name: a.value for a in runs[0].assignments}


def findings(source: str, select: str | None = None) -> list[tuple[str, int]]:
    result = lint_source(textwrap.dedent(source), "idiom.py")
    assert result.error is None
    return [(d.code, d.span.line) for d in result.diagnostics if select is None or d.code == select]


def twin(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new)


# --- factories with a size the engine cannot see --------------------------------------------------

PATCH_TABLE = """
import torch
from torch import nn
from somewhere import PatchEmbed

class Backbone(nn.Module):
    def __init__(self, embed_dims=768, img_size=224):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size=img_size)
        self.patch_resolution = self.patch_embed.init_out_size
        num_patches = self.patch_resolution[0] * self.patch_resolution[1]
        self.absolute_pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dims))

    def forward(self, x):
        x, _ = self.patch_embed(x)
        x = x + self.absolute_pos_embed
        return x
"""


def test_a_factory_keeps_its_rank_and_known_sizes_when_one_size_is_unseen():
    table = values(PATCH_TABLE, "Backbone.__init__")["self.absolute_pos_embed"]
    assert isinstance(table, TensorValue) and table.shape is not None
    assert table.shape.rank == 3
    assert table.shape.dims[0].value == 1 and table.shape.dims[2].value == 768
    # The patch grid read off the unseen embedder, named by its text: ``init_out_size[0] * [1]``.
    assert not table.shape.dims[1].is_const and "self.patch_embed.init_out_size" in str(table.shape.dims[1])


@pytest.mark.parametrize("call", ["torch.zeros(shape)", "torch.zeros(*shape)", "torch.ones(size=shape)"])
def test_a_factory_given_a_whole_unseen_shape_stays_unknown(call):
    source = f"""
    import torch
    from somewhere import get_shape

    def f():
        shape = get_shape()
        t = {call}
        return t
    """
    assert values(source, "f")["t"].shape is None


def test_a_per_token_table_concatenated_instead_of_added_is_reported():
    buggy = twin(PATCH_TABLE, "x = x + self.absolute_pos_embed", "x = torch.cat([x, self.absolute_pos_embed], dim=-1)")
    assert [code for code, _ in findings(buggy)] == ["SC301"]
    assert findings(PATCH_TABLE) == []


def test_a_table_expanded_to_the_batch_and_concatenated_is_a_design_not_a_bug():
    """Perceiver-style: Fourier or learned position features expanded to the batch, then
    concatenated to raw inputs that are not token embeddings."""
    source = twin(
        PATCH_TABLE,
        "x = x + self.absolute_pos_embed",
        "x = torch.cat([x, self.absolute_pos_embed.expand(x.shape[0], -1, -1)], dim=-1)",
    )
    assert findings(source, "SC301") == []


def test_a_padding_parameter_of_higher_rank_concatenated_is_not_a_positional_table():
    source = """
    import torch
    from torch import nn

    class Prompter(nn.Module):
        def __init__(self, frames=8, pad=16, size=224):
            super().__init__()
            self.pad_left = nn.Parameter(torch.randn([1, frames, 3, size, pad]))

        def forward(self, base):
            return torch.cat([self.pad_left, base], dim=4)
    """
    assert findings(source) == []


# --- optional tensors and layers ------------------------------------------------------------------

OPTIONAL_TABLE = """
import torch
from torch import nn

class ImageEmbedding(nn.Module):
    def __init__(self, in_features: int, pos_embed_seq_len=None):
        super().__init__()
        self.norm = nn.LayerNorm(in_features)
        if pos_embed_seq_len is not None:
            self.pos_embed = nn.Parameter(torch.zeros(1, pos_embed_seq_len, in_features))
        else:
            self.pos_embed = None

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.pos_embed is not None:
            batch, length, width = hidden.shape
            hidden = hidden.view(-1, 2 * length, width)
            hidden = hidden + self.pos_embed
        return self.norm(hidden)
"""


def test_an_attribute_set_to_none_on_the_other_branch_keeps_the_tensor():
    seen = values(OPTIONAL_TABLE, "ImageEmbedding.forward")
    assert "hidden" in seen
    instance = [run for run in facts_of(OPTIONAL_TABLE).runs if run.qualname == "ImageEmbedding.forward"][0].instance
    table = instance.attrs["pos_embed"]
    assert isinstance(table, TensorValue) and str(table.shape) == "(1, pos_embed_seq_len, in_features)"


def test_the_optional_table_concatenated_is_reported_and_added_is_clean():
    buggy = twin(OPTIONAL_TABLE, "hidden = hidden + self.pos_embed", "hidden = torch.cat([hidden, self.pos_embed], dim=-1)")
    assert [code for code, _ in findings(buggy)] == ["SC301"]
    assert findings(OPTIONAL_TABLE) == []


def test_a_reset_to_none_of_an_attribute_never_set_stays_none():
    source = """
    import torch
    from torch import nn

    class Cache(nn.Module):
        def __init__(self):
            super().__init__()
            self.cache = None

        def forward(self, x):
            return x
    """
    instance = [run for run in facts_of(source).runs if run.qualname == "Cache.forward"][0].instance
    assert not isinstance(instance.attrs.get("cache"), TensorValue)


HF_EMBEDDINGS = """
import torch
from torch import nn

class TextEmbeddings(nn.Module):
    def __init__(self, vocab_size=30522, hidden_size=768, max_position_embeddings=512):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab_size, hidden_size)
        self.position_embeddings = nn.Embedding(max_position_embeddings, hidden_size)
        self.position_ids = nn.Buffer(torch.arange(max_position_embeddings).expand((1, -1)), persistent=False)

    def forward(self, input_ids: torch.LongTensor, position_ids: torch.LongTensor | None = None):
        seq_length = input_ids.size(1)
        if position_ids is None:
            position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.word_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = inputs_embeds + position_embeddings
        return embeddings
"""


def test_a_buffer_is_the_tensor_it_registers():
    seen = values(twin(HF_EMBEDDINGS, "        seq_length = input_ids.size(1)\n", "        seq_length = input_ids.size(1)\n        ids = self.position_ids\n"), "TextEmbeddings.forward")
    assert str(seen["ids"].shape) == "(1, 512)"  # constructor defaults are configuration
    assert seen["ids"].has(PositionTag)


@pytest.mark.parametrize("parameter", ["position_ids: torch.LongTensor | None = None", "position_ids=None"])
def test_a_none_parameter_with_a_fallback_keeps_the_fallbacks_provenance(parameter):
    source = twin(HF_EMBEDDINGS, "position_ids: torch.LongTensor | None = None", parameter)
    seen = values(source, "TextEmbeddings.forward")
    assert seen["position_embeddings"].has(PositionTag)
    buggy = twin(source, "embeddings = inputs_embeds + position_embeddings", "embeddings = torch.cat([inputs_embeds, position_embeddings], dim=-1)")
    assert [code for code, _ in findings(buggy)] == ["SC301"]
    assert findings(source) == []


def test_an_optional_parameter_used_without_a_fallback_is_still_the_callers_tensor():
    source = """
    import torch
    from torch import nn

    class Head(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.proj = nn.Linear(d, d)

        def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None):
            y = self.proj(x)
            if bias is not None:
                y = y + bias
            return y
    """
    assert findings(source) == []


# --- an untransposed key --------------------------------------------------------------------------

TIMM_ATTENTION = """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, dim=256, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)
"""


@pytest.mark.parametrize("product", ["(q @ k)", "torch.matmul(q, k)"])
def test_a_key_that_is_not_transposed_is_a_matmul_mismatch(product):
    buggy = twin(TIMM_ATTENTION, "(q @ k.transpose(-2, -1))", product)
    line = textwrap.dedent(buggy).splitlines().index(f"        attn = {product} * self.scale") + 1
    assert findings(buggy) == [("SC505", line)]
    assert findings(TIMM_ATTENTION) == []


SWIN_STYLE_ATTENTION = """
from typing import Optional

import torch
from torch import nn

class WindowAttention(nn.Module):
    def __init__(self, dim: int, num_heads: int, head_dim: Optional[int] = None):
        super().__init__()
        self.num_heads = num_heads
        head_dim = head_dim or dim // num_heads
        attn_dim = head_dim * num_heads
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, attn_dim * 3)
        self.proj = nn.Linear(attn_dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
        return self.proj(x)
"""


def test_a_key_left_untransposed_is_found_when_the_head_dim_differs_between_paths():
    # timm / Swin: ``head_dim = head_dim or dim // num_heads`` is one of two sizes the code named,
    # still the features both operands end in.
    buggy = twin(SWIN_STYLE_ATTENTION, "(q @ k.transpose(-2, -1))", "(q @ k)")
    line = textwrap.dedent(buggy).splitlines().index("        attn = (q @ k) * self.scale") + 1
    assert findings(buggy) == [("SC505", line)]
    assert findings(SWIN_STYLE_ATTENTION) == []


OPT_STYLE_ATTENTION = """
import torch
from torch import nn

class OPTAttention(nn.Module):
    def __init__(self, embed_dim=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, key_value_states=None, past_key_value=None):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        if key_value_states is not None and past_key_value is not None:
            key_states = past_key_value[0]
        elif key_value_states is not None:
            key_states = self._shape(self.k_proj(key_value_states), -1, bsz)
        else:
            key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.view(*proj_shape)
        attn_weights = torch.bmm(query_states, key_states.transpose(1, 2))
        return attn_weights.softmax(dim=-1)
"""


def test_a_key_left_untransposed_is_found_when_a_cache_path_lost_its_length():
    # OPT / BART: the key comes from a cache on one path, so its length is unknown after the join;
    # it is still laid out as the query, (bsz * heads, positions, head_dim), so its rows are positions.
    buggy = twin(OPT_STYLE_ATTENTION, "torch.bmm(query_states, key_states.transpose(1, 2))", "torch.bmm(query_states, key_states)")
    line = textwrap.dedent(buggy).splitlines().index("        attn_weights = torch.bmm(query_states, key_states)") + 1
    assert findings(buggy) == [("SC505", line)]
    assert findings(OPT_STYLE_ATTENTION) == []


def test_a_right_operand_of_unknown_rows_that_is_not_laid_out_as_the_left_is_not_judged():
    source = """
    import torch
    from torch import nn

    class Mixer(nn.Module):
        def __init__(self, width=64):
            super().__init__()
            self.proj = nn.Linear(width, width)

        def forward(self, x, rotations):
            b, t, _ = x.shape
            h = self.proj(x)
            square = rotations.view(b, -1, 64)
            return torch.bmm(h, square)
    """
    assert findings(source) == []


SAM_STYLE_ATTENTION = """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, embed_dims, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        head_embed_dims = embed_dims // num_heads
        self.scale = head_embed_dims**-0.5
        self.qkv = nn.Linear(embed_dims, embed_dims * 3)
        self.proj = nn.Linear(embed_dims, embed_dims)

    def forward(self, x):
        B, N, _ = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, B * self.num_heads, N, -1).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).view(B, self.num_heads, N, -1).permute(0, 2, 1, 3).reshape(B, N, -1)
        return self.proj(x)
"""


def test_a_head_dim_solved_by_a_view_is_the_one_the_scale_was_computed_from():
    # ``reshape(B, N, 3, heads, -1)`` of (B, N, 3 * d) makes the head dim d / heads, exactly: the
    # view runs only if heads divides d, so ``(d // heads) ** -1`` is the head dim itself (SC102).
    buggy = twin(SAM_STYLE_ATTENTION, "self.scale = head_embed_dims**-0.5", "self.scale = head_embed_dims**-1")
    line = textwrap.dedent(buggy).splitlines().index("        self.scale = head_embed_dims**-1") + 1
    assert findings(buggy) == [("SC102", line)]
    assert findings(SAM_STYLE_ATTENTION) == []


TWO_SOFTMAX_PATHS = """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if scores.dtype == torch.float16:
            attn = nn.functional.softmax(scores, dim=-1, dtype=torch.float32).to(torch.float16)
        else:
            attn = nn.functional.softmax(scores, dim=-1)
        return (attn @ v).transpose(1, 2).reshape(b, t, d)
"""


@pytest.mark.parametrize("path", [0, 1])
def test_each_of_two_softmaxes_that_reach_the_values_is_attention(path):
    # OPT: ``softmax(..., dtype=float32)`` on one path, ``softmax(...)`` on the other; the weights
    # joined after the ``if`` carry both, so each softmax is judged (SC103 on either).
    written = ["nn.functional.softmax(scores, dim=-1, dtype=torch.float32)", "nn.functional.softmax(scores, dim=-1)"][path]
    buggy = twin(TWO_SOFTMAX_PATHS, written, written.replace("dim=-1", "dim=-2"))
    line = next(i for i, text in enumerate(textwrap.dedent(buggy).splitlines(), 1) if "dim=-2" in text)
    assert findings(buggy) == [("SC103", line)]
    assert findings(TWO_SOFTMAX_PATHS) == []


VECTOR_QUANTIZER = """
import torch
from torch import nn

class VectorQuantizer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_dim = config.embed_dim
        self.embedding = nn.Embedding(config.codebook_size, config.embed_dim)
        self.mix = nn.Parameter(torch.randn(config.embed_dim, config.embed_dim))

    def forward(self, hidden_state):
        flat = hidden_state.reshape(-1, self.embed_dim) @ self.mix
        distances = torch.matmul(flat, self.embedding.weight.t())
        return torch.argmin(distances, dim=1)
"""


def test_a_codebook_weight_left_untransposed_is_found_whatever_the_rows_of_the_input():
    # ``x.view(-1, d) @ self.embedding.weight``: (n, d) against (codebook, d), rows the constructor
    # named; the input's rows are any count. A square (d, d) weight is fine either way.
    buggy = twin(VECTOR_QUANTIZER, "self.embedding.weight.t()", "self.embedding.weight")
    line = textwrap.dedent(buggy).splitlines().index("        distances = torch.matmul(flat, self.embedding.weight)") + 1
    assert findings(buggy) == [("SC505", line)]
    assert findings(VECTOR_QUANTIZER) == []


def test_a_square_right_operand_and_rows_of_unknown_size_are_not_judged():
    source = """
    import torch
    from jaxtyping import Float
    from torch import Tensor

    def rotate(x: Float[Tensor, "b t d"], rotation: Float[Tensor, "d d"], other: Float[Tensor, "b n d"], w):
        y = x @ rotation
        z = x @ w
        return y, z
    """
    assert findings(source) == []


# --- a written scale after a layer with its own gain ----------------------------------------------

QK_NORM = """
import torch
from torch import nn

class Attention(nn.Module):
    def __init__(self, dim=256, heads=8, dim_head=32):
        super().__init__()
        self.heads = heads
        self.scale = dim_head ** -0.5
        self.to_q = nn.Linear(dim, heads * dim_head)
        self.to_k = nn.Linear(dim, heads * dim_head)
        self.q_norm = nn.LayerNorm(dim_head)
        self.k_norm = nn.LayerNorm(dim_head)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.to_k(x).view(b, n, self.heads, -1).transpose(1, 2)
        q, k = self.q_norm(q), self.k_norm(k)
        sim = (q @ k.transpose(-2, -1)) * self.scale
        return sim.softmax(dim=-1)
"""


def test_a_scale_by_the_head_dim_itself_is_judged_after_a_qk_norm():
    buggy = twin(QK_NORM, "self.scale = dim_head ** -0.5", "self.scale = dim_head ** -1")
    assert findings(buggy, "SC102") == [("SC102", 9)]  # where the factor is written
    assert findings(QK_NORM) == []


def test_a_qk_norm_without_a_written_scale_is_not_a_missing_scale():
    assert findings(twin(QK_NORM, "(q @ k.transpose(-2, -1)) * self.scale", "(q @ k.transpose(-2, -1))"), "SC101") == []


# --- einops.einsum, numpy's axis= ------------------------------------------------------------------

LUCIDRAINS = """
import torch
from torch import nn
from einops import rearrange, einsum

class Attention(nn.Module):
    def __init__(self, dim=512, heads=8, dim_head=64):
        super().__init__()
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(dim, heads * dim_head, bias=False)
        self.to_kv = nn.Linear(dim, heads * dim_head * 2, bias=False)

    def forward(self, x):
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = (rearrange(t, 'b n (h d) -> (b h) n d', h=h) for t in (q, k, v))
        sim = einsum(q, k, 'b i d, b j d -> b i j') * self.scale
        attn = sim.softmax(dim=-1)
        out = einsum(attn, v, 'b i j, b j d -> b i d')
        return out
"""


def test_einops_einsum_reads_its_pattern_last_and_with_words():
    seen = values(LUCIDRAINS, "Attention.forward")
    assert str(seen["sim"].shape) == "(8*b, n, n)"
    assert str(seen["out"].shape) == "(8*b, n, 64)"


def test_einops_einsum_scores_are_attention_scores():
    assert [code for code, _ in findings(twin(LUCIDRAINS, "self.scale = dim_head ** -0.5", "self.scale = dim_head ** -1"))] == ["SC102"]
    assert [code for code, _ in findings(twin(LUCIDRAINS, "sim.softmax(dim=-1)", "sim.softmax(dim=1)"))] == ["SC103"]
    assert findings(LUCIDRAINS) == []


def test_numpy_axis_keyword_is_torch_dim():
    source = """
    import torch

    def f(labels: "torch.Tensor"):
        x = torch.zeros(4, 10)
        a = torch.argmax(x, axis=1)
        b = torch.argmax(x, dim=1)
        c = x.sum(axis=-1, keepdims=True)
        return a, b, c
    """
    seen = values(source, "f")
    assert str(seen["a"].shape) == str(seen["b"].shape) == "(4)"
    assert str(seen["c"].shape) == "(4, 1)"


# --- a table made for the input's formula ---------------------------------------------------------

VISION_EMBEDDINGS = """
import torch
from torch import nn

class VisionEmbeddings(nn.Module):
    def __init__(self, image_size=224, patch_size=16, hidden_size=768, channels=3):
        super().__init__()
        self.patch_embedding = nn.Conv2d(channels, hidden_size, kernel_size=patch_size, stride=patch_size)
        self.num_positions = (image_size // patch_size) ** 2
        self.position_embedding = nn.Embedding(self.num_positions, hidden_size)
        self.position_ids = nn.Buffer(torch.arange(self.num_positions).expand((1, -1)), persistent=False)

    def forward(self, pixel_values):
        patch_embeds = self.patch_embedding(pixel_values)
        embeddings = patch_embeds.flatten(2).transpose(1, 2)
        embeddings = embeddings + self.position_embedding(self.position_ids)
        return embeddings
"""


def test_a_patch_table_for_the_configured_image_is_not_an_unsliced_maximum():
    assert findings(VISION_EMBEDDINGS, "SC302") == []


def test_an_unsliced_maximum_length_table_is_still_reported():
    source = """
    import torch
    from torch import nn

    class Embeddings(nn.Module):
        def __init__(self, vocab=1000, max_len=512, d=64):
            super().__init__()
            self.tok = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(1, max_len, d))

        def forward(self, ids):
            b, t = ids.shape
            return self.tok(ids) + self.pos
    """
    assert [code for code, _ in findings(source)] == ["SC302"]


# --- a table of implementations with a visible fallback --------------------------------------------

HF_DISPATCH = """
import torch
from torch import nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    return torch.matmul(attn_weights, value), attn_weights


class Attention(nn.Module):
    def __init__(self, hidden_size=256, num_heads=4):
        super().__init__()
        self.head_dim = hidden_size // num_heads
        self.num_heads = num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(hidden_size, hidden_size)
        self.k_proj = nn.Linear(hidden_size, hidden_size)
        self.v_proj = nn.Linear(hidden_size, hidden_size)
        self.implementation = "eager"

    def forward(self, hidden_states: torch.Tensor, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        attention_interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.implementation, eager_attention_forward)
        out, weights = attention_interface(self, q, k, v, attention_mask, scaling=self.scaling)
        return out
"""


@pytest.mark.parametrize("lookup", [
    "ALL_ATTENTION_FUNCTIONS.get_interface(self.implementation, eager_attention_forward)",
    "ALL_ATTENTION_FUNCTIONS.get(self.implementation, eager_attention_forward)",
])
def test_a_lookup_with_a_visible_fallback_follows_the_fallback(lookup):
    source = twin(HF_DISPATCH, "ALL_ATTENTION_FUNCTIONS.get_interface(self.implementation, eager_attention_forward)", lookup)
    assert findings(source) == []
    unscaled = twin(source, "torch.matmul(query, key.transpose(2, 3)) * scaling", "torch.matmul(query, key.transpose(2, 3))")
    assert [code for code, _ in findings(unscaled)] == ["SC101"]
    by_width = twin(source, "scaling=self.scaling)", "scaling=self.head_dim ** -1)")
    assert [code for code, _ in findings(by_width)] == ["SC102"]


def test_a_lookup_without_a_function_fallback_stays_unknown():
    source = twin(HF_DISPATCH, "ALL_ATTENTION_FUNCTIONS.get_interface(self.implementation, eager_attention_forward)",
                  "ALL_ATTENTION_FUNCTIONS.get_interface(self.implementation, None)")
    unscaled = twin(source, "torch.matmul(query, key.transpose(2, 3)) * scaling", "torch.matmul(query, key.transpose(2, 3))")
    # Only the standalone run of the helper is left, where the head dim is unknown: no claim.
    assert findings(unscaled) == []


# --- keys transposed over the wrong axes, with less known about the query ---------------------------

POOLED_QUERY = """
import torch
from torch import nn
from somewhere import LinearNorm

class AttentionSubsample(nn.Module):
    def __init__(self, dim=128, key_dim=16, num_heads=8, resolution=7):
        super().__init__()
        self.num_heads, self.key_dim = num_heads, key_dim
        self.scale = key_dim ** -0.5
        self.kv = nn.Linear(dim, 2 * key_dim * num_heads)
        self.q = LinearNorm(dim, key_dim * num_heads)
        self.resolution = resolution

    def forward(self, x):
        B, N, C = x.shape
        k, v = self.kv(x).view(B, N, self.num_heads, -1).split([self.key_dim, self.key_dim], dim=3)
        k = k.permute(0, 2, 1, 3)
        v = v.permute(0, 2, 1, 3)
        q = self.q(x[:, :self.resolution ** 2]).view(B, self.resolution ** 2, self.num_heads, self.key_dim).permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, -1, self.num_heads * self.key_dim)
"""


def test_a_key_transposed_over_heads_and_tokens_against_a_pooled_query_is_reported():
    buggy = twin(POOLED_QUERY, "k.transpose(-2, -1)", "k.transpose(1, 2)")
    assert [code for code, _ in findings(buggy)] == ["SC504"]
    assert findings(POOLED_QUERY) == []


def test_a_key_transposed_over_the_wrong_axes_against_a_query_of_unknown_shape_is_reported():
    source = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim=128, num_heads=8):
            super().__init__()
            self.num_heads, self.head_dim = num_heads, dim // num_heads
            self.q = nn.Linear(dim, dim)
            self.kv = nn.Linear(dim, 2 * dim)

        def forward(self, x, cls_token):
            B, N, C = x.shape
            k, v = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
            q = self.q(cls_token)
            attn = q @ k.transpose(-2, -1)
            return attn.softmax(dim=-1) @ v
    """
    buggy = twin(source, "k.transpose(-2, -1)", "k.transpose(1, 2)")
    found = findings(buggy)
    assert [code for code, _ in found] == ["SC504"]
    message = [d.message for d in lint_source(textwrap.dedent(buggy), "idiom.py").diagnostics][0]
    assert "None" not in message
    assert [code for code, _ in findings(source) if code == "SC504"] == []


def test_transposing_the_last_two_axes_of_a_fused_three_dim_key_is_right():
    source = """
    import torch
    from torch import nn

    class Fused(nn.Module):
        def __init__(self, dim=128, num_heads=8):
            super().__init__()
            self.num_heads, self.head_dim = num_heads, dim // num_heads
            self.qkv = nn.Linear(dim, 3 * dim)

        def forward(self, x):
            B, N, C = x.shape
            q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).reshape(3, B * self.num_heads, N, -1).unbind(0)
            attn = (q * self.head_dim ** -0.5) @ k.transpose(1, 2)
            return attn.softmax(dim=-1) @ v
    """
    assert findings(source) == []


def test_an_embedding_broadcast_over_the_patches_is_a_bias_not_the_tokens():
    """A per-tile embedding of aspect-ratio ids, reshaped to ``(n, tiles, 1, d)`` and added to
    the patches: the stream is still the patches (which got their positions elsewhere), so no
    missing-positional-encoding finding comes from the ids."""
    source = """
    import torch
    from torch import nn

    class AspectRatioEmbedding(nn.Module):
        def __init__(self, max_id=8, tiles=4, d=64):
            super().__init__()
            self.tiles, self.d = tiles, d
            self.embedding = nn.Embedding(max_id + 1, tiles * d)

        def forward(self, patches, aspect_ratio_ids):
            e = self.embedding(aspect_ratio_ids).reshape(-1, self.tiles, 1, self.d)
            return patches + e

    class Encoder(nn.Module):
        def __init__(self, tiles=4, patches=16, d=64):
            super().__init__()
            self.aspect = AspectRatioEmbedding(tiles=tiles, d=d)
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
            self.tiles, self.patches, self.d = tiles, patches, d

        def forward(self, x, aspect_ratio_ids):
            x = self.aspect(x.reshape(-1, self.tiles, self.patches, self.d), aspect_ratio_ids)
            x = x.reshape(-1, self.patches, self.d)
            return self.attn(x, x, x)[0]
    """
    assert [code for code, _ in findings(source) if code == "SC303"] == []


def test_a_layer_built_on_one_path_only_keeps_both_paths_of_its_none_test():
    """timm's EVA: a fused qkv Linear or three projections, chosen in __init__; forward tests
    ``if self.qkv is not None``. Both forward paths are analysed, so a bug in either is found."""
    source = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim=256, num_heads=8, qkv_fused=True):
            super().__init__()
            self.num_heads = num_heads
            if qkv_fused:
                self.qkv = nn.Linear(dim, dim * 3)
                self.q_proj = self.k_proj = self.v_proj = None
            else:
                self.qkv = None
                self.q_proj = nn.Linear(dim, dim)
                self.k_proj = nn.Linear(dim, dim)
                self.v_proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, N, C = x.shape
            if self.qkv is not None:
                q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
            else:
                q = self.q_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
                k = self.k_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
                v = self.v_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
            attn = (q @ k.transpose(-2, -1)) * (C // self.num_heads) ** -0.5
            return (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
    """
    assert findings(source) == []
    buggy = twin(source, "k = self.k_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)",
                 "k = self.k_proj(x).reshape(B, self.num_heads, N, -1)")
    assert [code for code, _ in findings(buggy)] == ["SC503"]


def test_a_query_divided_by_a_tensor_of_unknown_shape_may_be_scaled():
    """DeBERTa: ``query_layer / scaled_size_sqrt(query_layer, factor)`` with the helper out of
    sight; a missing-scale finding needs scores the engine knows were not scaled."""
    source = """
    import torch
    from torch import nn
    from somewhere import scaled_size_sqrt

    class Attention(nn.Module):
        def __init__(self, dim=256, heads=8):
            super().__init__()
            self.heads = heads
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)

        def forward(self, x):
            b, t, c = x.shape
            q = self.q(x).view(b, t, self.heads, -1).transpose(1, 2)
            k = self.k(x).view(b, t, self.heads, -1).transpose(1, 2)
            q = q / scaled_size_sqrt(q, 2)
            return torch.matmul(q, k.transpose(-1, -2)).softmax(dim=-1)
    """
    assert findings(source) == []
    assert [code for code, _ in findings(twin(source, "q = q / scaled_size_sqrt(q, 2)", "q = q"))] == ["SC101"]
