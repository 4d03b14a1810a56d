"""Follow one sentence through an encoder layer, printing the shape of every tensor on the way.

    python examples/reference/walkthrough.py

The first seed's sentence "[CLS] I love NLP [SEP]" (5 tokens), d_model 512, 8 heads of d_k 64,
d_ff 2048, batch 1: the same numbers as the seed's illustrated walk-through, computed by the
reference modules instead of by hand.

Dims: b batch, t time, d_model model width, h heads, d_k head width, d_ff FFN width.
"""

import math

import torch

from reference_model import (
    EncoderLayer,
    SinusoidalPositionalEncoding,
    causal_mask,
    scaled_dot_product_attention,
)

B, T, D_MODEL, N_HEADS, D_FF, VOCAB = 1, 5, 512, 8, 2048, 30522
D_K = D_MODEL // N_HEADS  # 64


def show(step: str, name: str, tensor: torch.Tensor, dims: str) -> None:
    print(f"{step:<28} {name:<10} {str(tuple(tensor.shape)):<18} {dims}")


def main() -> None:
    torch.manual_seed(0)
    ids = torch.tensor([[101, 1045, 2293, 17953, 102]])  # [CLS] I love NLP [SEP]
    show("0. token ids", "ids", ids, "(b, t)")

    embedding = torch.nn.Embedding(VOCAB, D_MODEL)
    x = embedding(ids)
    show("1. token embedding", "x", x, "(b, t, d_model): one 512-vector per token")

    pe = SinusoidalPositionalEncoding(D_MODEL, max_len=512)
    show("2. PE table", "pe.table", pe.table, "(max_len, d_model): built once")
    x = pe(x)  # x + table[:5]: added, never concatenated
    show("   embedding + PE[:t]", "x", x, "(b, t, d_model): same shape, now ordered")

    layer = EncoderLayer(D_MODEL, N_HEADS, D_FF).eval()
    attn = layer.self_attn
    show("3. W_Q weight", "W_Q", attn.W_Q.weight, "(d_model, d_model) = 8 heads x (64, 512) stacked")
    q = attn.W_Q(x).view(B, T, N_HEADS, D_K).transpose(1, 2)  # (b, t, h, d_k) -> (b, h, t, d_k)
    k = attn.W_K(x).view(B, T, N_HEADS, D_K).transpose(1, 2)
    v = attn.W_V(x).view(B, T, N_HEADS, D_K).transpose(1, 2)
    show("   queries per head", "q", q, "(b, h, t, d_k)")

    scores = q @ k.transpose(-2, -1) / math.sqrt(D_K)  # (b, h, t, d_k) @ (b, h, d_k, t)
    show("4. q k^T / sqrt(d_k)", "scores", scores, "(b, h, t_q, t_k): 8 heads of 5x5")
    heads, weights = scaled_dot_product_attention(q, k, v)
    show("5. softmax over keys", "weights", weights, "(b, h, t_q, t_k): rows sum to 1")
    show("6. weights @ v", "heads", heads, "(b, h, t, d_k)")
    concat = heads.transpose(1, 2).reshape(B, T, D_MODEL)  # (b, t, h, d_k) -> (b, t, d_model)
    show("7. concatenate heads", "concat", concat, "(b, t, d_model)")
    show("8. W_O", "out", attn.W_O(concat), "(b, t, d_model): ready for the residual")

    ffn_hidden = layer.ffn.W_1(x)
    show("9. FFN widen", "hidden", ffn_hidden, "(b, t, d_ff)")
    y = layer(x)
    show("10. whole layer", "y", y, "(b, t, d_model): layers stack")

    mask = causal_mask(T)
    _, masked = scaled_dot_product_attention(q, k, v, mask)
    show("11. decoder's causal mask", "mask", mask, "(t, t), True above the diagonal = blocked")
    print("row 0 of head 0 with the causal mask:", [round(w, 3) for w in masked[0, 0, 0].tolist()])


if __name__ == "__main__":
    main()
