"""SC501 view-non-contiguous: rule examples.

Marker (``# <-``): the ``.view(...)`` call whose input was reordered by ``transpose`` / ``permute`` /
``.T`` and never made contiguous, and that merges axes no longer adjacent in memory.
"""

_SEED_BUG = '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        V = self.W_V(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
        out = torch.matmul(torch.softmax(scores, dim=-1), V)
        out = out.transpose(1, 2).view(batch_size, seq_len, d_model)  # <-
        return self.W_O(out)
'''

_ALIASED_BUG = '''\
import torch as th
from torch import nn as tnn


class PatchHead(tnn.Module):
    def __init__(self, channels=32, classes=10):
        super().__init__()
        self.proj = tnn.Linear(channels * 49, classes)

    def forward(self, feats):
        B, C, H, W = feats.shape
        tokens = feats.view(B, C, H * W).transpose(1, 2)
        flat = tokens.view(B, -1)  # <-
        return self.proj(flat)


head = PatchHead()
head(th.randn(2, 32, 7, 7))
'''

INVALID = [
    ("seed 1: out.transpose(1, 2).view(batch, seq, d_model)", _SEED_BUG),
    ("nanoGPT (manual attention): y.transpose(1, 2) then y.view(B, T, C)", '''\
import math

import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        y = F.softmax(att, dim=-1) @ v
        y = y.transpose(1, 2)
        y = y.view(B, T, C)  # <-
        return self.c_proj(y)
'''),
    ("Hugging Face: context_layer.permute(0, 2, 1, 3).view(new_shape)", '''\
import math

import torch
from torch import nn


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=64, num_attention_heads=4):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        batch, seq, _ = hidden_states.size()
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        context_layer = torch.matmul(nn.functional.softmax(scores, dim=-1), value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3)
        return context_layer.view(batch, seq, self.all_head_size)  # <-
'''),
    ("einsum attention, then out.transpose(1, 2).view(b, t, -1)", '''\
import torch
import torch.nn as nn


class EinsumAttention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        sim = torch.einsum("bhid,bhjd->bhij", q, k) * (d // self.heads) ** -0.5
        out = torch.einsum("bhij,bhjd->bhid", sim.softmax(dim=-1), v)
        return out.transpose(1, 2).view(b, t, -1)  # <-
'''),
    ("functional: a helper merges heads with permute + view", '''\
import torch


def merge_heads(x: torch.Tensor, batch: int, seq: int, heads: int, head_dim: int) -> torch.Tensor:
    x = x.view(batch, heads, seq, head_dim)
    return x.permute(0, 2, 1, 3).view(batch, seq, heads * head_dim)  # <-


out = merge_heads(torch.randn(2 * 4, 10, 16), 2, 10, 4, 16)
'''),
    ("aliased imports: import torch as th; flatten a transposed image with .view(B, -1)", _ALIASED_BUG),
    ("timm Swin: window_reverse merges the windows back with .view after permute", '''\
import torch


def window_partition(x, window_size: int):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size: int, H: int, W: int):
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size, W // window_size, window_size, window_size, C)
    x = x.permute(0, 1, 3, 2, 4, 5).view(-1, H, W, C)  # <-
    return x
'''),
    ("2-D weight: w.T.view(-1)", '''\
import torch
import torch.nn as nn


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        w = self.fc.weight
        flat = w.T.view(-1)  # <-
        return x @ flat.view(16, 8)
'''),
]

FIXED = {
    "seed 1: out.transpose(1, 2).view(batch, seq, d_model)": _SEED_BUG.replace(
        "out = out.transpose(1, 2).view(batch_size, seq_len, d_model)  # <-",
        "out = out.transpose(1, 2).contiguous().view(batch_size, seq_len, d_model)  # <-",
    ),
    "aliased imports: import torch as th; flatten a transposed image with .view(B, -1)": _ALIASED_BUG.replace(
        "flat = tokens.view(B, -1)  # <-", "flat = tokens.contiguous().view(B, -1)  # <-"
    ),
}

VALID = [
    ("seed 1: transpose(1, 2).contiguous().view(batch, seq, d_model)", _SEED_BUG.replace(
        ".transpose(1, 2).view(batch_size, seq_len, d_model)  # <-", ".transpose(1, 2).contiguous().view(batch_size, seq_len, d_model)")),
    ("nanoGPT: y.transpose(1, 2).contiguous().view(B, T, C)", '''\
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
    ("Hugging Face: permute then reshape (reshape copies when it must)", '''\
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, hidden_size=64, heads=4):
        super().__init__()
        self.heads, self.head_dim = heads, hidden_size // heads
        self.query = nn.Linear(hidden_size, hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.size()
        q = self.query(hidden_states).view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)
        context = q * q.softmax(-1)
        return context.permute(0, 2, 1, 3).reshape(b, t, self.heads * self.head_dim)
'''),
    ("view that only splits an axis after a transpose (strides allow it)", '''\
import torch
import torch.nn as nn


class Split(nn.Module):
    def __init__(self, d=64, heads=4):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        y = self.proj(x).transpose(0, 1)
        return y.view(t, b, self.heads, d // self.heads)
'''),
    ("transposed twice back to the original order, then view", '''\
import torch


def roundtrip(x: torch.Tensor) -> torch.Tensor:
    b, t, h, d = x.shape
    y = x.transpose(1, 2).transpose(1, 2)
    return y.view(b, t, h * d)


roundtrip(torch.randn(2, 5, 4, 16))
'''),
    ("timm Swin: window_reverse with .contiguous() before the view", '''\
import torch


def window_partition(x, window_size: int):
    B, H, W, C = x.shape
    x = x.view(B, H // window_size, window_size, W // window_size, window_size, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, C)


def window_reverse(windows, window_size: int, H: int, W: int):
    C = windows.shape[-1]
    x = windows.view(-1, H // window_size, W // window_size, window_size, window_size, C)
    x = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)
    return x
'''),
    ("einops: rearrange instead of transpose + view", '''\
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
        out = q.softmax(dim=-1)
        return rearrange(out, "b h n d -> b n (h d)")
'''),
    ("aliased imports: th.flatten after transpose", '''\
import torch as th
from torch import nn as tnn


class PatchHead(tnn.Module):
    def __init__(self, channels=32, classes=10):
        super().__init__()
        self.proj = tnn.Linear(channels * 49, classes)

    def forward(self, feats):
        B, C, H, W = feats.shape
        tokens = feats.view(B, C, H * W).transpose(1, 2)
        return self.proj(th.flatten(tokens, 1))
'''),
    ("the merged axes are still adjacent: transpose(0, 1) then view merging axes 2 and 3", '''\
import torch


def fold(x: torch.Tensor) -> torch.Tensor:
    t, b, h, d = x.shape
    y = x.transpose(0, 1)
    return y.view(b, t, h * d)


fold(torch.randn(7, 2, 4, 16))
'''),
]
