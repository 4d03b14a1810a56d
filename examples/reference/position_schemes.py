"""The second seed's comparison of position schemes, as shapes: what each one touches, and how.

    python examples/reference/position_schemes.py

Dims: b batch, h heads, t time, d_model model width, d_k head width.
"""

import torch

from reference_model import (
    LearnedPositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    scaled_dot_product_attention,
)

B, T, D_MODEL, N_HEADS, MAX_LEN = 1, 5, 64, 4, 32
D_K = D_MODEL // N_HEADS  # 16


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(B, T, D_MODEL)  # token embeddings (b, t, d_model)

    # 1-2. Absolute tables are added to the embeddings, sliced to the first t rows.
    sinusoidal = SinusoidalPositionalEncoding(D_MODEL, MAX_LEN)  # table (max_len, d_model), no parameters
    learned = LearnedPositionalEncoding(D_MODEL, MAX_LEN)  # nn.Embedding(max_len, d_model), trained
    schemes = (("sinusoidal", sinusoidal, "x + table[:t]"), ("learned", learned, "x + embedding(arange(t))"))
    for name, pe, how in schemes:
        n_params = sum(p.numel() for p in pe.parameters())
        print(f"{name + ':':11}", tuple(pe(x).shape), f"= {how}; parameters: {n_params}")

    # 3. RoPE rotates queries and keys inside every head; values and the embeddings are untouched.
    q = torch.randn(B, N_HEADS, T, D_K)  # (b, h, t, d_k)
    k = torch.randn(B, N_HEADS, T, D_K)
    v = torch.randn(B, N_HEADS, T, D_K)
    rope = RotaryEmbedding(D_K, MAX_LEN)
    out, _ = scaled_dot_product_attention(rope(q), rope(k), v)
    print("RoPE:      ", tuple(rope(q).shape), "rotated q and k; attention out", tuple(out.shape))

    # 4. ALiBi adds -slope_h * |i - j| to the scores: no table, nothing added to the embeddings.
    bias = alibi_bias(N_HEADS, T)  # (h, t, t), broadcast over the batch
    out, weights = scaled_dot_product_attention(q, k, v, bias=bias)
    print("ALiBi:     ", tuple(bias.shape), "bias on the scores; weights", tuple(weights.shape))
    print("ALiBi head 0, query 4, bias per key:", [round(b, 3) + 0.0 for b in bias[0, 4].tolist()])


if __name__ == "__main__":
    main()
