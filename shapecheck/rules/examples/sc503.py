"""SC503 heads-split-without-transpose: rule examples.

Marker (``# <-``): the ``view`` / ``reshape`` that turns ``(b, t, d_model)`` straight into
``(b, h, t, d_model / h)``.
"""

INVALID = [
    ("seed 1: Q = W_Q(x).view(batch, n_heads, seq, d_k)", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, self.n_heads, seq_len, self.d_k)  # <-
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        return torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
'''),
    ("nanoGPT: k.view(B, n_head, T, C // n_head)", '''\
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, self.n_head, T, C // self.n_head)  # <-
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("Hugging Face: reshape(batch, heads, -1, head_dim)", '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden_size // num_heads
        self.q_proj = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        bsz, q_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states).reshape(bsz, self.num_heads, q_len, self.head_dim)  # <-
        return torch.matmul(query_states, query_states.transpose(2, 3))


Attention()(torch.randn(2, 10, 64))
'''),
    ("einsum attention fed by a straight head split", '''\
import torch
import torch.nn as nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads, self.dim_head = heads, dim // heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.to_q(x).view(b, self.heads, n, self.dim_head)  # <-
        k = self.to_k(x).view(b, n, self.heads, self.dim_head).transpose(1, 2)
        return torch.einsum("bhid,bhjd->bhij", q, k) * self.dim_head ** -0.5
'''),
    ("functional: split_heads helper on a projection", '''\
import torch
import torch.nn.functional as F


def split_heads(x: torch.Tensor, heads: int) -> torch.Tensor:
    b, t, d = x.shape
    return x.view(b, heads, t, d // heads)  # <-


def project(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w)


x = torch.randn(2, 10, 64)
w = torch.nn.Parameter(torch.randn(64, 64))
q = split_heads(project(x, w), 4)
'''),
    ("aliased imports: import torch.nn as tnn; hidden states from an embedding", '''\
import torch as th
import torch.nn as tnn


class Encoder(tnn.Module):
    def __init__(self, vocab=1000, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.tok = tnn.Embedding(vocab, width)
        self.pos = tnn.Embedding(128, width)

    def forward(self, ids):
        bsz, seqlen = ids.shape
        h = self.tok(ids) + self.pos(th.arange(seqlen))
        heads = h.reshape(bsz, self.n_heads, seqlen, -1)  # <-
        return th.softmax(heads @ heads.transpose(-2, -1) / (heads.size(-1) ** 0.5), dim=-1)
'''),
]

VALID = [
    ("seed 1: view(batch, seq, n_heads, d_k).transpose(1, 2)", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        return torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
'''),
    ("nanoGPT: split, transpose, SDPA, merge", '''\
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("Hugging Face: view(x.size()[:-1] + (heads, head_dim)).permute(0, 2, 1, 3)", '''\
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size=64, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, hidden_size // heads
        self.query = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.heads, self.head_dim)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        q = self.transpose_for_scores(self.query(hidden_states))
        return torch.matmul(q, q.transpose(-1, -2))


SelfAttention()(torch.randn(2, 10, 64))
'''),
    ("einops: rearrange(t, 'b n (h d) -> b h n d')", '''\
import torch
import torch.nn as nn
from einops import rearrange


class EinopsAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)

    def forward(self, x):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        return torch.einsum("bhid,bhjd->bhij", q, q)
'''),
    ("fused (b * h, t, d) layout: view(b, t, h, d).transpose(1, 2).reshape(b * h, t, d)", '''\
import torch
import torch.nn as nn


class FusedHeads(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.h, self.d = n_heads, d_model // n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, c = x.shape
        q = self.q(x).view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        k = self.k(x).view(b, t, self.h, self.d).transpose(1, 2).reshape(b * self.h, t, self.d)
        w = torch.bmm(q, k.transpose(1, 2)) / self.d ** 0.5
        return torch.bmm(w.softmax(-1), q).view(b, self.h, t, self.d)
'''),
    ("functional: an image (B, H*W, C) viewed back to (B, H, W, C) is not a head split", '''\
import torch
import torch.nn as nn


class Unpatch(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, h: int, w: int):
        B, N, C = x.shape
        return self.proj(x).view(B, h, w, C)
'''),
    ("aliased imports: (b, t, d) viewed as (b, t, h, d_k) and kept there", '''\
import torch as th
import torch.nn as tnn


class Encoder(tnn.Module):
    def __init__(self, vocab=1000, width=96, n_heads=6):
        super().__init__()
        self.n_heads = n_heads
        self.tok = tnn.Embedding(vocab, width)

    def forward(self, ids):
        bsz, seqlen = ids.shape
        h = self.tok(ids)
        heads = h.reshape(bsz, seqlen, self.n_heads, -1)
        return th.einsum("bihd,bjhd->bhij", heads, heads)
'''),
]
