"""Position schemes: the sinusoidal formula and its shift property, learned tables, RoPE, ALiBi.

Dims: b batch, h heads, t time, d_model width, head_dim rotary head width.
"""

import math

import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402

from reference_model import (  # noqa: E402
    LearnedPositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    scaled_dot_product_attention,
    sinusoidal_table,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def test_sinusoidal_table_matches_formula():
    max_len, d_model = 50, 16
    table = sinusoidal_table(max_len, d_model)
    for pos in (0, 1, 7, 49):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert table[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def shift_matrix(k: int, d_model: int) -> torch.Tensor:
    """The fixed linear map M_k with PE(pos + k) = M_k PE(pos): a rotation per (sin, cos) pair."""
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        w = 1.0 / 10000 ** (2 * i / d_model)
        c, s = math.cos(k * w), math.sin(k * w)
        # sin(a + b) = sin a cos b + cos a sin b;  cos(a + b) = cos a cos b - sin a sin b
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = c, s
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -s, c
    return m


@pytest.mark.parametrize("k", [1, 3, 10])
def test_sinusoidal_shift_is_a_fixed_linear_map(k):
    """PE(pos + k) = M_k PE(pos) with one M_k for every pos (seed 2, section 3.3)."""
    d_model, max_len = 16, 64
    table = sinusoidal_table(max_len, d_model).double()
    m = shift_matrix(k, d_model)
    shifted = table[:-k] @ m.T  # row pos -> M_k PE(pos)
    torch.testing.assert_close(shifted, table[k:], atol=1e-6, rtol=0)
    # M_k is a rotation, and shifting by 2 then by k is shifting by k + 2.
    torch.testing.assert_close(m @ m.T, torch.eye(d_model, dtype=torch.float64))
    torch.testing.assert_close(m @ shift_matrix(2, d_model), shift_matrix(k + 2, d_model))


def test_positional_encodings_are_added_and_sliced():
    x = torch.randn(2, 5, 16)
    sinusoidal = SinusoidalPositionalEncoding(d_model=16, max_len=32)
    torch.testing.assert_close(sinusoidal(x), x + sinusoidal_table(32, 16)[:5])
    learned = LearnedPositionalEncoding(d_model=16, max_len=32)
    torch.testing.assert_close(learned(x), x + learned.embedding.weight[:5])
    assert sum(p.numel() for p in sinusoidal.parameters()) == 0
    assert sum(p.numel() for p in learned.parameters()) == 32 * 16


def test_positional_encoding_rejects_too_long_sequences():
    with pytest.raises(ValueError, match=r"t=9 exceeds the table's max_len=8"):
        SinusoidalPositionalEncoding(d_model=16, max_len=8)(torch.randn(1, 9, 16))


def test_rope_dot_product_depends_on_relative_position_only():
    head_dim, t = 16, 12
    rope = RotaryEmbedding(head_dim, max_len=t)
    q, k = torch.randn(head_dim), torch.randn(head_dim)
    q_rot = rope(q.expand(t, head_dim))  # q placed at every position 0..t-1: (t, head_dim)
    k_rot = rope(k.expand(t, head_dim))
    dots = q_rot @ k_rot.T  # (t, t): dots[m, n] = q at m . k at n
    for offset in range(-(t - 1), t):
        diagonal = torch.diagonal(dots, offset=offset)  # all pairs with n - m = offset
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal), atol=1e-5, rtol=0)
    assert not torch.allclose(dots[0, 0], dots[0, 3])  # ...but it does depend on the offset
    torch.testing.assert_close(q_rot.norm(dim=-1), q.norm().expand(t))  # rotations keep the norm
    torch.testing.assert_close(q_rot[0], q)  # position 0 is not rotated


def test_rope_applies_to_heads():
    rope = RotaryEmbedding(head_dim=8, max_len=16)
    x = torch.randn(2, 4, 10, 8)  # (b, h, t, head_dim)
    assert rope(x).shape == x.shape
    with pytest.raises(ValueError, match="head_dim=7 must be even"):
        RotaryEmbedding(head_dim=7, max_len=16)


def test_alibi_slopes_and_bias():
    assert alibi_slopes(8) == [2.0 ** -(i + 1) for i in range(8)]
    assert alibi_slopes(4) == [2.0 ** -(2 * (i + 1)) for i in range(4)]
    six = alibi_slopes(6)  # not a power of two: 4 slopes of n=4, then every other slope of n=8
    assert six == alibi_slopes(4) + [2.0**-1, 2.0**-3]
    bias = alibi_bias(n_heads=4, t=5)
    assert bias.shape == (4, 5, 5)
    assert bool((torch.diagonal(bias, dim1=-2, dim2=-1) == 0).all())
    assert bias[1, 4, 0].item() == pytest.approx(-alibi_slopes(4)[1] * 4)
    torch.testing.assert_close(bias, bias.transpose(-2, -1))


def test_alibi_bias_in_attention_equals_torch_float_mask():
    q, k, v = (torch.randn(2, 4, 5, 8) for _ in range(3))  # (b, h, t, d_k)
    bias = alibi_bias(4, 5)
    out, _ = scaled_dot_product_attention(q, k, v, bias=bias)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias), atol=1e-6, rtol=0)
