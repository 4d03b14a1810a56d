"""Seed 1's Transformer encoder layer, repaired: multi-head attention, FFN, Add & Norm, and both
positional encodings (learned and sinusoidal), run on the sentence "[CLS] I love NLP [SEP]".

Dims: b batch, t time (seq_len), d d_model, h n_heads, k d_k = d_model // n_heads, f d_ff, v vocab.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SimpleMultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention with separate W_Q, W_K, W_V projections."""

    def __init__(self, d_model: int = 512, n_heads: int = 8, dropout: float = 0.1):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} must be divisible by n_heads {n_heads}"
        self.d_model = d_model
        self.n_heads = n_heads
        self.d_k = d_model // n_heads  # 64 for d_model=512, n_heads=8
        # One (d_model, d_model) matrix per role holds all heads side by side.
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)
        self.W_V = nn.Linear(d_model, d_model, bias=False)
        self.W_O = nn.Linear(d_model, d_model, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        """x: (b, t, d); mask: broadcastable to (b, h, t, t), 1 where a query may look, 0 where not."""
        batch_size, seq_len, d_model = x.size()
        # 1. Project, then split d into (h, k) and move heads before time: (b, t, d) -> (b, h, t, k)
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        # 2. Scaled scores: (b, h, t, k) x (b, h, k, t) -> (b, h, t, t)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        # 3. Softmax over the key dim (last), then weight the values: (b, h, t, t) x (b, h, t, k) -> (b, h, t, k)
        attn_weights = self.dropout(F.softmax(scores, dim=-1))
        context = torch.matmul(attn_weights, V)
        # 4. Merge heads: (b, h, t, k) -> (b, t, h, k) -> (b, t, d)
        context = context.transpose(1, 2).contiguous().view(batch_size, seq_len, d_model)
        return self.W_O(context), attn_weights


class PositionwiseFeedForward(nn.Module):
    """Linear(d -> f) -> GELU -> Dropout -> Linear(f -> d), applied to every position."""

    def __init__(self, d_model: int = 512, d_ff: int = 2048, dropout: float = 0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        x = F.gelu(self.linear1(x))  # (b, t, f)
        x = self.dropout(x)
        return self.linear2(x)  # (b, t, d)


class EncoderLayer(nn.Module):
    """Post-norm encoder layer: x = Norm(x + MHA(x)); x = Norm(x + FFN(x))."""

    def __init__(self, d_model: int = 512, n_heads: int = 8, d_ff: int = 2048, dropout: float = 0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, n_heads, dropout)
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attn_output, _ = self.self_attn(x, mask)
        x = self.norm1(x + self.dropout1(attn_output))
        x = self.norm2(x + self.dropout2(self.feed_forward(x)))
        return x


class LearnedPositionalEncoding(nn.Module):
    """A trained (max_position, d) table, looked up for positions 0..t-1 and added."""

    def __init__(self, max_position: int = 512, d_model: int = 512):
        super().__init__()
        self.pe = nn.Embedding(max_position, d_model)
        nn.init.normal_(self.pe.weight, mean=0.0, std=0.02)  # small, so it does not swamp the tokens

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        position_ids = torch.arange(seq_len, dtype=torch.long, device=x.device)  # (t,)
        position_ids = position_ids.unsqueeze(0).expand(batch_size, -1)  # (b, t)
        return x + self.pe(position_ids)  # (b, t, d)


class SinusoidalPositionalEncoding(nn.Module):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), added."""

    def __init__(self, max_len: int = 512, d_model: int = 512):
        super().__init__()
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)  # (max_len, 1)
        div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))  # (1, max_len, d)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]  # slice to the t positions present


if __name__ == "__main__":
    torch.manual_seed(0)
    vocab_size, d_model = 30522, 512
    token_ids = torch.tensor([[101, 1045, 2293, 17953, 102]])  # [CLS] I love NLP [SEP]
    embedding = nn.Embedding(vocab_size, d_model)
    layer = EncoderLayer(d_model=d_model, n_heads=8)
    layer.eval()
    with torch.no_grad():
        for pos_enc in (SinusoidalPositionalEncoding(d_model=d_model), LearnedPositionalEncoding(d_model=d_model)):
            x = pos_enc(embedding(token_ids) * math.sqrt(d_model))  # (1, 5, 512)
            padding = (token_ids != 0)[:, None, None, :]  # (b, 1, 1, t): 1 = real token
            out = layer(x, mask=padding)
            print(f"{type(pos_enc).__name__}: input {tuple(x.shape)} -> output {tuple(out.shape)}")
