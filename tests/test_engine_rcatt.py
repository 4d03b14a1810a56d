"""Attention scores the engine did not recognise (branch rcatt: SC101-SC104 on real model code).

- **Channel-first attention** (iformer, EfficientFormer v2): queries and keys laid out ``(..., d, n)``
  (a conv's channels before its positions), scores ``q.transpose(-2, -1) @ k`` and values weighted
  as ``v @ attn.transpose(-2, -1)``. The left operand is the one transposed: ``q^T k`` is scores
  as ``q k^T`` is (``products._channel_first_scores``); probabilities on the right of the values
  product make an attention output too. ``k.permute(0, 1, 2, 3)`` reorders nothing.
- **Talking heads** (EfficientFormer v2): a 1x1 ``nn.Conv2d(heads, heads, 1)`` over scores or
  weights mixes the heads at each (query, key) pair: still scores, or still weights.
- **Weights met by a bias of unknown shape keep their rank**, as scores already did.
- **BatchNorm** after a projection (LeViT's ``Linear`` + ``BatchNorm1d``, timm's conv-norm) is an
  affine map per channel, not a per-token norm: it does not set the scale of the scores (a
  LayerNorm QK-norm still does). The factories timm and mmpretrain build these with
  (``create_conv2d``, ``create_norm_layer``, ``to_2tuple``, ``build_norm_layer(dict(type='BN1d'),
  n)``, also imported relatively from inside mmpretrain) are the torch layers they build.
- ``self.add_module(name, layer)`` in a subclass of ``nn.Sequential`` (timm's ``ConvNorm``).
- **Strings chosen on a path the engine cannot decide** (audiocraft's ``layout``) are either
  string; f-strings of names and ``str.replace`` map over them, and an einsum or einops call runs
  once per pattern. A ``bool and False`` is False.
- ``x.chunk(1 + self.ngram, dim=2)`` (a computed count) keeps the other axes of each piece.
- **A softmax helper given its dim** (ProphetNet's ``softmax(x, dim=-2, onnx_trace=...)``): SC103
  lands at the call that passes the dim, judged per caller.
- **Score blocks joined along the key axis** (BigBird's block-sparse attention) are scores.

Torch's answers for the shapes asserted here (checked in a scratch script): ``Conv2d(64, 128, 3,
padding=1)`` of ``(2, 64, 7, 7)`` is ``(2, 128, 7, 7)``; ``(q.transpose(-2, -1) @ k)`` of two
``(2, 32, 49)`` is ``(2, 49, 49)`` and ``v @ attn.transpose(-2, -1)`` with ``v`` ``(2, 64, 49)`` is
``(2, 64, 49)``; ``(2, 4, 6, 8).chunk(3, dim=2)`` gives three ``(2, 4, 2, 8)``.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import findings_on_lines, standalone_shapes

from shapecheck.engine import analyze


def _codes(source: str, path: str = "attention.py") -> list[tuple[str, str]]:
    return [(code, line) for code, line in findings_on_lines(source, path) if code.startswith("SC1")]


# ---------------------------------------------------------------------------------- channel first

IFORMER = """
import torch
from torch import nn


class ConvAttention(nn.Module):
    def __init__(self, dim: int = 64, ratio: int = 2):
        super().__init__()
        dim_attn = dim // ratio
        self.scale = dim_attn ** -0.5
        self.q = nn.Conv2d(dim, dim_attn, 1)
        self.k = nn.Conv2d(dim, dim_attn, 1)
        self.v = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        B, _, H, W = x.shape
        q = self.q(x).flatten(2)
        k = self.k(x).flatten(2)
        v = self.v(x).flatten(2)
        q_s = {query}
        attn = (q_s.transpose(-2, -1) @ k).softmax(dim={dim})
        return (v @ attn.transpose(-2, -1)).view(B, -1, H, W)
"""


def test_channel_first_scores_unscaled():
    source = IFORMER.format(query="q", dim=-1)
    assert _codes(source) == [("SC101", "attn = (q_s.transpose(-2, -1) @ k).softmax(dim=-1)")]


def test_channel_first_scores_softmax_over_queries():
    source = IFORMER.format(query="q * self.scale", dim=-2)
    assert _codes(source) == [("SC103", "attn = (q_s.transpose(-2, -1) @ k).softmax(dim=-2)")]


def test_channel_first_scores_scaled_are_clean():
    assert _codes(IFORMER.format(query="q * self.scale", dim=-1)) == []


def test_channel_first_shapes():
    source = IFORMER.format(query="q * self.scale", dim=-1)
    assert standalone_shapes(source, "ConvAttention.forward", "attn") == ["(B, H*W, H*W)"]


EFFICIENTFORMER = """
import torch
from torch import nn


class Attention2d(nn.Module):
    def __init__(self, dim: int = 64, key_dim: int = 16, num_heads: int = 4, resolution: int = 7):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.N = resolution * resolution
        kh = key_dim * num_heads
        self.q = nn.Conv2d(dim, kh, 1)
        self.k = nn.Conv2d(dim, kh, 1)
        self.v = nn.Conv2d(dim, kh, 1)
        self.talking_head1 = nn.Conv2d(num_heads, num_heads, kernel_size=1)
        self.talking_head2 = nn.Conv2d(num_heads, num_heads, kernel_size=1)
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, self.N))
        self.register_buffer("attention_bias_idxs", torch.zeros(self.N, self.N, dtype=torch.long))

    def forward(self, x):
        B, C, H, W = x.shape
        q = self.q(x).reshape(B, self.num_heads, -1, self.N).permute(0, 1, 3, 2)
        k = self.k(x).reshape(B, self.num_heads, -1, self.N).permute(0, 1, 2, 3)
        v = self.v(x).reshape(B, self.num_heads, -1, self.N).permute(0, 1, 3, 2)
        attn = (q @ k) * self.scale
        {bias_before}
        attn = self.talking_head1(attn)
        attn = attn.softmax(dim={dim})
        {bias_after}
        attn = self.talking_head2(attn)
        return (attn @ v).transpose(2, 3)
"""

BIAS = "attn = attn + self.attention_biases[:, self.attention_bias_idxs]"


def test_talking_heads_softmax_dim():
    source = EFFICIENTFORMER.format(bias_before=BIAS, bias_after="", dim=-2)
    assert _codes(source) == [("SC103", "attn = attn.softmax(dim=-2)")]


def test_talking_heads_bias_after_softmax():
    source = EFFICIENTFORMER.format(bias_before="", bias_after=BIAS, dim=-1)
    assert _codes(source) == [("SC104", BIAS)]


def test_talking_heads_correct_code_is_clean():
    assert _codes(EFFICIENTFORMER.format(bias_before=BIAS, bias_after="", dim=-1)) == []


def test_identity_permute_keeps_the_key_untransposed():
    """``k.permute(0, 1, 2, 3)`` reorders nothing: the product with the query transposed out of
    the same layout has the scores' shape, ``(B, h, N, N)``."""
    source = EFFICIENTFORMER.format(bias_before=BIAS, bias_after="", dim=-1)
    shapes = standalone_shapes(source, "Attention2d.forward", "attn")
    assert shapes[0] == "(B, 4, 49, 49)"
    # Projections the engine cannot see: the key's head dim is unnamed, the product still fits.
    unseen = "from timm_like import make_conv\n" + source.replace("nn.Conv2d(dim, kh, 1)", "make_conv(dim, kh)")
    shapes = standalone_shapes(unseen, "Attention2d.forward", "attn")
    assert shapes[0] == "(B, 4, 49, 49)"


def test_talking_heads_with_a_wider_kernel_are_no_longer_scores():
    """A 3x3 conv over the scores mixes neighbouring positions, a conv to another number of
    channels is no mixing of the heads: neither is judged as scores."""
    for layer in (
        "nn.Conv2d(num_heads, num_heads, kernel_size=3, padding=1)",
        "nn.Conv2d(num_heads, num_heads, kernel_size=3)",
        "nn.Conv2d(num_heads, num_heads, kernel_size=1, stride=2)",
        "nn.Conv2d(num_heads, 2 * num_heads, kernel_size=1)",
    ):
        source = EFFICIENTFORMER.format(bias_before=BIAS, bias_after="", dim=-2).replace(
            "self.talking_head1 = nn.Conv2d(num_heads, num_heads, kernel_size=1)", "self.talking_head1 = " + layer
        )
        assert _codes(source) == [], layer


# ---------------------------------------------------------------------------------- norms, builders

LEVIT = """
import torch
from torch import nn


class LinearNorm(nn.Module):
    def __init__(self, in_feature, out_feature):
        super().__init__()
        self.linear = nn.Linear(in_feature, out_feature, bias=False)
        self.bn = {norm}

    def forward(self, x):
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class Attention(nn.Module):
    def __init__(self, dim=128, key_dim=16, num_heads=8):
        super().__init__()
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.scale = key_dim ** -0.5
        self.qkv = LinearNorm(dim, 3 * key_dim * num_heads)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, self.num_heads, -1).split([self.key_dim, self.key_dim, self.key_dim], dim=3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1))
        attn = attn.softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, N, -1)
"""


def test_batch_norm_after_the_projection_sets_no_scale():
    source = LEVIT.format(norm="nn.BatchNorm1d(out_feature)")
    assert _codes(source) == [("SC101", "attn = (q @ k.transpose(-2, -1))")]


def test_layer_norm_after_the_projection_still_sets_its_own_scale():
    source = LEVIT.format(norm="nn.LayerNorm(out_feature)")
    assert _codes(source) == []


def test_mmpretrain_norm_builder_relative_import():
    source = "from ..utils import build_norm_layer\n" + LEVIT.format(norm="build_norm_layer(norm_cfg, out_feature)").replace(
        "def __init__(self, in_feature, out_feature):", "def __init__(self, in_feature, out_feature, norm_cfg=dict(type='BN1d')):"
    )
    assert _codes(source, "mmpretrain/models/backbones/levit.py") == [("SC101", "attn = (q @ k.transpose(-2, -1))")]


def test_an_unmodelled_norm_type_stays_unknown():
    source = "from ..utils import build_norm_layer\n" + LEVIT.format(norm="build_norm_layer(norm_cfg, out_feature)").replace(
        "def __init__(self, in_feature, out_feature):", "def __init__(self, in_feature, out_feature, norm_cfg=dict(type='LN')):"
    )
    assert _codes(source, "mmpretrain/models/backbones/levit.py") == []


def test_the_same_relative_import_outside_mmpretrain_is_not_the_builder():
    source = "from ..utils import build_norm_layer\n" + LEVIT.format(norm="build_norm_layer(norm_cfg, out_feature)").replace(
        "def __init__(self, in_feature, out_feature):", "def __init__(self, in_feature, out_feature, norm_cfg=dict(type='BN1d')):"
    )
    assert _codes(source, "mypackage/models/backbones/levit.py") == []


TIMM_CONV_NORM = """
import torch
from torch import nn
from timm.layers import create_conv2d, create_norm_layer, to_2tuple


class ConvNorm(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=''):
        super().__init__()
        self.conv = create_conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)
        self.bn = create_norm_layer('batchnorm2d', out_channels)

    def forward(self, x):
        return self.bn(self.conv(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.resolution = to_2tuple(7)
        self.block = ConvNorm(64, 128, 3)
        self.down = ConvNorm(64, 64, 2, stride=2)

    def forward(self, x):
        y = self.block(x)
        z = self.down(x)
        table = torch.zeros(self.resolution[0] * self.resolution[1])
        return y
"""


def test_timm_conv_norm_builders():
    source = TIMM_CONV_NORM + """

model = Net()
out = model(torch.randn(2, 64, 7, 7))
"""
    facts = analyze(cst.parse_module(source), source, "net.py")
    shapes = {str(a.value.shape) for run in facts.runs if run.qualname == "Net.forward" and run.inlined for a in run.assignments if a.name == "y"}
    assert "(2, 128, 7, 7)" in shapes
    # timm's padding for a 2x2 kernel of stride 2 is ((2 - 1) + (2 - 1)) // 2 = 1: 7 -> 4.
    shapes = {str(a.value.shape) for run in facts.runs if run.qualname == "Net.forward" and run.inlined for a in run.assignments if a.name == "z"}
    assert "(2, 64, 4, 4)" in shapes
    shapes = {str(a.value.shape) for run in facts.runs if run.qualname == "Net.forward" for a in run.assignments if a.name == "table"}
    assert shapes == {"(49)"}


def test_timm_dynamic_same_padding_stays_unknown():
    source = TIMM_CONV_NORM.replace("ConvNorm(64, 128, 3)", "ConvNorm(64, 128, 3, stride=2, padding='same')") + """

model = Net()
out = model(torch.randn(2, 64, 8, 8))
"""
    facts = analyze(cst.parse_module(source), source, "net.py")
    shapes = {str(a.value.shape) for run in facts.runs if run.qualname == "Net.forward" and run.inlined for a in run.assignments if a.name == "y"}
    assert shapes and not any(shape.startswith("(2, 128") for shape in shapes)


SEQUENTIAL_SUBCLASS = """
import torch
from torch import nn


class ConvNorm(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 1):
        super().__init__()
        self.add_module("c", nn.Conv2d(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size, bias=False))
        self.add_module("bn", nn.BatchNorm2d(out_channels))
        nn.init.constant_(self.bn.weight, 1)


class Attn(nn.Module):
    def __init__(self, dim: int, ratio: int = 2):
        super().__init__()
        dim_attn = dim // ratio
        self.scale = dim_attn ** {power}
        self.q = ConvNorm(dim, dim_attn, 1)
        self.k = ConvNorm(dim, dim_attn, 1)
        self.v = nn.Conv2d(dim, dim, 1)

    def forward(self, x):
        B, _, H, W = x.shape
        q = self.q(x).flatten(2)
        k = self.k(x).flatten(2)
        v = self.v(x).flatten(2)
        attn = ((q * self.scale).transpose(-2, -1) @ k).softmax(dim=-1)
        return (v @ attn.transpose(-2, -1)).view(B, -1, H, W)
"""


def test_sequential_subclass_built_with_add_module():
    assert _codes(SEQUENTIAL_SUBCLASS.format(power="-1")) == [("SC102", "self.scale = dim_attn ** -1")]
    assert _codes(SEQUENTIAL_SUBCLASS.format(power="-0.5")) == []
    shapes = standalone_shapes(SEQUENTIAL_SUBCLASS.format(power="-0.5"), "Attn.forward", "q")
    assert shapes == ["(B, dim//2, H*W)"]


# ---------------------------------------------------------------------------------- either strings

AUDIOCRAFT = """
import torch
from torch import nn
from einops import rearrange

_backend: str = 'torch'


def _time_dimension(memory_efficient: bool) -> int:
    if _backend == 'torch' and memory_efficient:
        return 2
    else:
        return 1


class StreamingAttention(nn.Module):
    def __init__(self, embed_dim: int = 64, num_heads: int = 4, efficient: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.efficient = efficient
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)

    def forward(self, x, attn_mask=None):
        time_dim = _time_dimension(self.efficient)
        layout = "b h t d" if time_dim == 2 else "b t h d"
        packed = rearrange(self.in_proj(x), f"b t (p h d) -> b t p h d", p=3, h=self.num_heads)
        q, k, v = [rearrange(packed[:, :, i], f"b t h d -> {layout}") for i in range(3)]
        q = q / q.shape[-1] ** 0.5
        key_layout = layout.replace('t', 'k')
        pre_w = torch.einsum(f"{layout},{key_layout}-> b h t k", q, k)
        MASK_BEFORE
        w = torch.softmax(pre_w, dim=DIM)
        MASK_AFTER
        x = torch.einsum(f"b h t k, {key_layout} -> {layout}", w, v)
        return rearrange(x, f"{layout} -> b t (h d)")
"""

MASK = "pre_w = pre_w + attn_mask"


def _audiocraft(mask_before: str, mask_after: str, dim: int, decided: bool = False) -> str:
    source = AUDIOCRAFT.replace("MASK_BEFORE", mask_before).replace("MASK_AFTER", mask_after).replace("DIM", str(dim))
    if decided:
        return source
    # The flag from a configuration the engine cannot read: the layout is either string.
    return source.replace("efficient: bool = False):", "config=None):").replace(
        "self.efficient = efficient", "self.efficient = config.memory_efficient"
    )


def test_patterns_chosen_on_a_path_softmax_dim():
    source = _audiocraft(mask_before="", mask_after="", dim=-2)
    assert _codes(source) == [("SC103", "w = torch.softmax(pre_w, dim=-2)")]


def test_patterns_chosen_on_a_path_mask_after_softmax():
    source = _audiocraft(mask_before="", mask_after=MASK.replace("pre_w", "w"), dim=-1)
    assert _codes(source) == [("SC104", "w = w + attn_mask")]


def test_patterns_chosen_on_a_path_correct_code_is_clean():
    assert _codes(_audiocraft(mask_before=MASK, mask_after="", dim=-1)) == []


def test_patterns_decided_by_the_defaults():
    assert _codes(_audiocraft(mask_before="", mask_after="", dim=-2, decided=True)) == [("SC103", "w = torch.softmax(pre_w, dim=-2)")]
    assert _codes(_audiocraft(mask_before=MASK, mask_after="", dim=-1, decided=True)) == []


def test_either_layout_shapes():
    source = _audiocraft(mask_before=MASK, mask_after="", dim=-1)
    shapes = standalone_shapes(source, "StreamingAttention.forward", "pre_w")
    # Heads and time on one path, time and heads on the other: joined axis by axis.
    assert shapes and all(shape.startswith("(b, 4|t") and shape.count(",") == 3 for shape in shapes)


def test_f_string_of_a_known_layout():
    source = textwrap.dedent(
        """
        import torch
        from einops import rearrange


        def split(x: "Float[Tensor, 'b t 64']"):
            layout = "b h t d"
            heads = 4
            return rearrange(x, f"b t (h d) -> {layout}", h=heads)
        """
    )
    source = "from jaxtyping import Float\nfrom torch import Tensor\n" + source
    facts = analyze(cst.parse_module(source), source, "split.py")
    events = [e for e in facts.events if e.op == "einops.rearrange"]
    assert [str(e.result_tensor.shape) for e in events] == ["(b, 4, t, 16)"]


def test_bool_and_false_is_false():
    source = textwrap.dedent(
        """
        import torch

        BACKEND: str = 'torch'


        def pick(flag: bool = False):
            return 2 if (BACKEND == 'torch' and flag) else 1


        def pick_or(flag: bool = False):
            return 2 if (BACKEND == 'torch' or flag) else 1


        def make():
            n = pick(False)
            return torch.zeros(n, 5)


        def make_or():
            n = pick_or(False)
            return torch.ones(n, 5)
        """
    )
    facts = analyze(cst.parse_module(source), source, "pick.py")
    shapes = {str(e.result_tensor.shape) for e in facts.events if e.op == "zeros"}
    assert shapes == {"(1, 5)"}
    # ``bool or False`` is that bool: not decided.
    shapes = {str(e.result_tensor.shape) for e in facts.events if e.op == "ones"}
    assert "(1, 5)" not in shapes


# ---------------------------------------------------------------------------------- chunk, helpers, blocks


def test_chunk_by_a_computed_count_keeps_the_other_axes():
    source = textwrap.dedent(
        """
        import torch
        from torch import nn


        class Ngram(nn.Module):
            def __init__(self, ngram: int = 2):
                super().__init__()
                self.ngram = ngram

            def forward(self, b: int, h: int, t: int, d: int):
                x = torch.randn(b, h, t, d)
                main = x.chunk(1 + self.ngram, dim=2)[0]
                return main
        """
    )
    assert standalone_shapes(source, "Ngram.forward", "main") == ["(b, h, _, d)"]
    # A count the configuration gives (no default): a size of its own.
    source = source.replace("ngram: int = 2", "ngram: int")
    assert standalone_shapes(source, "Ngram.forward", "main") == ["(b, h, _, d)"]


PROPHETNET = """
import torch
from torch import nn


def softmax(hidden_state, dim, onnx_trace=False):
    if onnx_trace:
        return nn.functional.softmax(hidden_state.float(), dim=dim)
    else:
        return nn.functional.softmax(hidden_state, dim=dim, dtype=torch.float32)


class NgramAttention(nn.Module):
    def __init__(self, hidden: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, t, c = x.size()
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2) / (self.head_dim ** 0.5)
        k = self.k(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        main = torch.einsum("bntc,bncs->bnts", q, k.transpose(2, 3))
        main_probs = softmax(main, dim={main_dim}, onnx_trace=False)
        main_out = torch.einsum("bntc,bncs->bnts", main_probs, v)
        pred = torch.einsum("bntc,bncs->bnts", q, k.transpose(2, 3))
        pred_probs = softmax(pred, dim=-1, onnx_trace=False)
        pred_out = torch.einsum("bntc,bncs->bnts", pred_probs, v)
        return main_out + pred_out
"""


def test_softmax_helper_lands_where_the_dim_is_passed():
    assert _codes(PROPHETNET.format(main_dim=-2)) == [("SC103", "main_probs = softmax(main, dim=-2, onnx_trace=False)")]
    assert _codes(PROPHETNET.format(main_dim=-1)) == []


BIGBIRD = """
import torch
from torch import nn


class BlockSparse(nn.Module):
    def __init__(self, hidden: int = 64, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)

    def forward(self, x, y):
        b, t, c = x.size()
        rsqrt_d = 1 / {scale}
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k1 = self.k(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k2 = self.k(y).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v1 = self.v(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v2 = self.v(y).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        first = torch.matmul(q, k1.transpose(-1, -2)) * rsqrt_d
        second = torch.einsum("bhqd,bhkd->bhqk", q, k2) * rsqrt_d
        band = torch.cat([first, second], dim=-1)
        probs = nn.functional.softmax(band, dim=-1)
        return torch.matmul(probs[:, :, :, :t], v1) + torch.matmul(probs[:, :, :, t:], v2)
"""


def test_score_blocks_joined_along_the_key_axis():
    assert _codes(BIGBIRD.format(scale="self.head_dim")) == [("SC102", "rsqrt_d = 1 / self.head_dim")]
    assert _codes(BIGBIRD.format(scale="self.head_dim ** 0.5")) == []


def test_chunk_whose_count_divides_the_axis():
    source = textwrap.dedent(
        """
        import torch
        from torch import nn


        class Fused(nn.Module):
            def __init__(self, n: int):
                super().__init__()
                self.n = n

            def forward(self, b: int, t: int, d: int):
                x = torch.randn(b, t, 3 * d)
                q, k, v = x.chunk(3, dim=-1)
                y = torch.randn(b, t, (1 + self.n) * d)
                first = y.chunk(1 + self.n, dim=-1)[0]
                return q, first
        """
    )
    assert standalone_shapes(source, "Fused.forward", "q") == ["(b, t, d)"]
    assert standalone_shapes(source, "Fused.forward", "first") == ["(b, t, d)"]


VOLO_STEM = """
import torch
from torch import nn


class PatchEmbed(nn.Module):
    def __init__(self, in_chans=3, hidden_dim=64, embed_dim=384, patch_size=8):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_chans, hidden_dim, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(hidden_dim),
            nn.ReLU(inplace=True),
        )
        self.proj = nn.Conv2d(hidden_dim, embed_dim, kernel_size=patch_size // 2, stride=patch_size // 2)

    def forward(self, x):
        return self.proj(self.conv(x))


class Net(nn.Module):
    def __init__(self, img_size=224, embed_dim=384):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, img_size // 8 // 2, img_size // 8 // 2, embed_dim))

    def forward(self, x):
        B, _, height, width = x.shape
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        x = x + self.pos_embed
        return x
"""


def test_table_for_the_configured_image_size_is_not_unsliced():
    """Analysed alone, the table has the defaults' length (14) and the tokens a formula of the
    input's height through the stem's strides: an image of the configured size, not SC302."""
    assert [code for code, _ in findings_on_lines(VOLO_STEM)] == []
    shapes = standalone_shapes(VOLO_STEM, "Net.forward", "x")
    assert shapes[-1].startswith("(B, ") and shapes[-1].endswith(", 384)")


def test_text_table_added_unsliced_is_still_reported():
    source = """
import torch
from torch import nn


class LM(nn.Module):
    def __init__(self, vocab=100, d=64, max_len=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.zeros(1, max_len, d))

    def forward(self, ids):
        b, t = ids.shape
        x = torch.cat([self.cls.expand(b, -1, -1), self.tok(ids)], dim=1)
        return x + self.pos
"""
    assert [code for code, _ in findings_on_lines(source)] == ["SC302"]


ESM = """
import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self, d: int = 64):
        super().__init__()
        self.scaling = d ** SCALE
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q(x)
        q *= self.scaling
        k = self.k(x)
        w = torch.bmm(q, k.transpose(1, 2))
        w = Attn.apply_sparse_mask(w, t, t, b)
        w = torch.softmax(w, dim=-1)
        return torch.bmm(w, x)

    DECORATOR
    def apply_sparse_mask(attn_weights, tgt_len: int, src_len: int, bsz: int):
        return attn_weights
"""


def test_method_read_off_its_class_is_a_plain_function():
    """fair-esm's ``MultiheadAttention.apply_sparse_mask(attn_weights, ...)`` (no ``self``, no
    decorator) and the same as a ``@staticmethod``: the scores go through unchanged."""
    for decorator in ("", "@staticmethod"):
        source = ESM.replace("DECORATOR", decorator)
        assert _codes(source.replace("SCALE", "-1")) == [("SC102", "self.scaling = d ** -1")]
        assert _codes(source.replace("SCALE", "-0.5")) == []


def test_learned_queries_against_channel_first_features_are_no_scores():
    """``x.transpose(1, 2) @ self.queries`` (a learned parameter): a pooling, not ``q^T k``."""
    source = """
import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self, dim: int = 64, slots: int = 4):
        super().__init__()
        self.queries = nn.Parameter(torch.randn(dim, slots))

    def forward(self, x):
        b, c, n = x.shape
        w = (x.transpose(1, 2) @ self.queries).softmax(dim=1)
        return x @ w
"""
    assert _codes(source) == []


def test_a_transposed_activation_times_a_vector_is_no_scores():
    source = textwrap.dedent(
        """
        import torch


        def pool(x: "Float[Tensor, 'b c n']", w: "Float[Tensor, 'c']"):
            return x.transpose(-2, -1) @ w
        """
    )
    source = "from jaxtyping import Float\nfrom torch import Tensor\n" + source
    facts = analyze(cst.parse_module(source), source, "pool.py")
    (event,) = [e for e in facts.events if e.op == "matmul"]
    assert str(event.result_tensor.shape) == "(b, n)"
    assert not any(type(tag).__name__ == "ScoresTag" for tag in event.result_tensor.tags)


def test_score_blocks_joined_along_another_axis_are_not_scores():
    source = BIGBIRD.format(scale="self.head_dim").replace("band = torch.cat([first, second], dim=-1)", "band = torch.cat([first, second], dim=1)")
    assert _codes(source) == []


def test_softmax_dim_written_in_the_helper_lands_there():
    source = PROPHETNET.format(main_dim=-1).replace(
        "        return nn.functional.softmax(hidden_state, dim=dim, dtype=torch.float32)",
        "        axis = -2\n        return nn.functional.softmax(hidden_state, dim=axis, dtype=torch.float32)",
    )
    assert _codes(source) == [("SC103", "return nn.functional.softmax(hidden_state, dim=axis, dtype=torch.float32)")]


ATTEND = """
import torch
from torch import nn, einsum


class Attend(nn.Module):
    def __init__(self, heads: int = 4):
        super().__init__()
        self.post_softmax_talking_heads = nn.Conv2d(heads, heads, 1, bias=False)

    def forward(self, q, k, v, mask=None, attn_delta=None, bias=None):
        b, h, n, d = q.shape
        kv_einsum_eq = 'b j d' if k.ndim == 3 else 'b h j d'
        sim = einsum(f'b h i d, {kv_einsum_eq} -> b h i j', q, k) * d ** -0.5
        MASK
        attn = sim.softmax(dim=-1)
        ADDED
        attn = self.post_softmax_talking_heads(attn)
        return einsum(f'b h i j, {kv_einsum_eq} -> b h i d', attn, v)
"""


def test_a_value_passed_in_added_after_a_masked_softmax_is_not_judged():
    """x-transformers' ``attn = attn + attn_delta`` (a delta the caller passes, on purpose after the
    softmax, whose scores were masked before it): this context cannot tell it from a mask."""
    source = ATTEND.replace("MASK", "sim = sim.masked_fill(~mask, -torch.finfo(sim.dtype).max)").replace(
        "ADDED", "attn = attn + attn_delta"
    )
    assert _codes(source) == []


def test_the_mask_itself_moved_after_the_softmax_is_still_reported():
    source = ATTEND.replace("MASK", "").replace("ADDED", "attn = attn + bias")
    assert _codes(source) == [("SC104", "attn = attn + bias")]


VISFORMER = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, embed_dim=64, use_pos_embed=True, vit_stem=False):
        super().__init__()
        self.use_pos_embed = use_pos_embed
        self.vit_stem = vit_stem
        self.patch_embed1 = nn.Sequential(nn.Conv2d(3, embed_dim, 16, stride=16), nn.BatchNorm2d(embed_dim))
        if self.use_pos_embed:
            if self.vit_stem:
                self.pos_embed1 = nn.Parameter(torch.zeros(1, embed_dim, 14, 14))
            else:
                self.pos_embed1 = nn.Parameter(torch.zeros(1, embed_dim, 14, 14))
            self.pos_drop = nn.Dropout(p=0.0)
        else:
            self.pos_embed1 = None

    def forward(self, x):
        x = self.patch_embed1(x)
        if self.pos_embed1 is not None:
            x = self.pos_drop(x + self.pos_embed1)
        return x
"""


def test_table_declared_under_a_nested_if_of_a_flag():
    """timm's visformer: the flag's block holds an ``if`` (a block, not small statements); reading
    it crashed SC303's table walk once the patch embedding's BatchNorm was known."""
    assert findings_on_lines(VISFORMER) == []


def test_a_value_passed_in_after_a_softmax_of_biased_scores_is_still_reported():
    """mmpretrain's BEiT attention: a relative position table added before the softmax is a bias,
    not a mask; the shared ``rel_pos_bias`` moved after the softmax is still the catalogue bug."""
    source = ATTEND.replace("MASK", "sim = sim + self.post_softmax_talking_heads.weight.sum()").replace(
        "ADDED", "attn = attn + attn_delta"
    )
    assert _codes(source) == [("SC104", "attn = attn + attn_delta")]
