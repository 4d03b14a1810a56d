"""SC403 head-split-mismatch: rule examples.

Marker (``# <-``): the ``view`` / ``reshape`` / ``rearrange`` / ``unflatten`` call whose sizes do not
multiply out to the tensor's numel (a head dim of ``d_model`` while splitting into ``n_heads``, a
merge that forgets the heads, explicit einops sizes that disagree).
"""

INVALID = [
    ("seed 1: Q.view(batch, seq, n_heads, d_model), head dim = d_model", '''\
import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.d_model, self.n_heads, self.d_k = d_model, n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_model).transpose(1, 2)  # <-
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        return torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
'''),
    ("nanoGPT: k.view(B, T, n_head, C)", '''\
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
        k = k.view(B, T, self.n_head, C).transpose(1, 2)  # <-
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).contiguous().view(B, T, C)
'''),
    ("Hugging Face transpose_for_scores with (heads, hidden_size)", '''\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    hidden_size: int = 64
    num_attention_heads: int = 4


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.hidden_size = config.hidden_size
        self.query = nn.Linear(config.hidden_size, config.hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.hidden_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)  # <-

    def forward(self, hidden_states):
        return self.transpose_for_scores(self.query(hidden_states))
'''),
    ("merge forgets the heads: reshape(B, T, d_k)", '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.W_QKV(x).reshape(B, T, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-2, -1) / self.d_k ** 0.5, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, T, self.d_k)  # <-
        return self.W_O(out)
'''),
    ("einops rearrange with h and d given, d = dim instead of dim // heads", '''\
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.to_q = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads, d=self.dim)  # <-
        return q
'''),
    ("fused qkv reshaped with head dim d_model, `import torch as th`", '''\
import torch as th
from torch import nn


class FusedAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, _ = x.shape
        qkv = self.W_QKV(x).reshape(B, T, 3, self.n_heads, self.d_model)  # <-
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        return th.softmax(q @ k.transpose(-2, -1) * (self.d_model // self.n_heads) ** -0.5, dim=-1) @ v
'''),
    ("unflatten(-1, (n_heads, d_model))", '''\
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.d_model, self.n_heads = d_model, n_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)

    def forward(self, x):
        q = self.q(x).unflatten(-1, (self.n_heads, self.d_model)).transpose(1, 2)  # <-
        k = self.k(x).unflatten(-1, (self.n_heads, self.d_model // self.n_heads)).transpose(1, 2)
        return F.scaled_dot_product_attention(q, k, k)
'''),
    ("encoder-decoder _shape helper: head dim times heads as the last size, sizes from the caller", '''\
from torch import nn


class EncoderDecoderAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError("embed_dim must be divisible by num_heads")
        self.q_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim * self.num_heads).transpose(1, 2)  # <-

    def forward(self, hidden_states):
        bsz, tgt_len, _ = hidden_states.size()
        return self._shape(self.q_proj(hidden_states), tgt_len, bsz)
'''),
    ("Hugging Face key_states.view(bsz, -1, heads, head_dim * heads): the -1 is left the sequence over the heads", '''\
from torch import nn


class SeqAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attn_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_attn_heads
        self.k_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        batch_size, tgt_len, hidden_size = hidden_states.size()
        key_states = self.k_proj(hidden_states)
        key_states = key_states.view(batch_size, -1, self.num_attn_heads, self.head_dim * self.num_attn_heads)  # <-
        return key_states.transpose(1, 2)
'''),
    ("diffusers processor: attn imported, width read off the key, key split as (heads, head_dim * heads)", '''\
import torch
import torch.nn.functional as F
from ..attention_processor import Attention


class AttnProcessor2_0:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size = hidden_states.shape[0]
        query, key, value = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)  # <-
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(query, key, value)
        return out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
'''),
]

VALID = [
    ("seed 1: view(batch, seq, n_heads, d_k) with d_k = d_model // n_heads", '''\
import torch
import torch.nn as nn


class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_Q = nn.Linear(d_model, d_model, bias=False)
        self.W_K = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x):
        batch_size, seq_len, d_model = x.size()
        Q = self.W_Q(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        K = self.W_K(x).view(batch_size, seq_len, self.n_heads, self.d_k).transpose(1, 2)
        return torch.matmul(Q, K.transpose(-2, -1)) / (self.d_k ** 0.5)
'''),
    ("nanoGPT: C // n_head, merged back with contiguous().view(B, T, C)", '''\
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
    ("view(B, T, n_heads, -1) lets torch infer the head dim", '''\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(B, T, self.n_heads, -1).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-2, -1) * q.size(-1) ** -0.5, dim=-1)
        return (attn @ v).transpose(1, 2).reshape(B, T, -1)
'''),
    ("Hugging Face transpose_for_scores with attention_head_size", '''\
from dataclasses import dataclass

from torch import nn


@dataclass
class Config:
    hidden_size: int = 64
    num_attention_heads: int = 4


class SelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states):
        return self.transpose_for_scores(self.query(hidden_states))
'''),
    ("einops with only h given", '''\
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        q = rearrange(self.to_q(x), "b n (h d) -> b h n d", h=self.heads)
        return rearrange(q, "b h n d -> b n (h d)")
'''),
    ("grouped-query: keys split into n_kv_heads of head_dim", '''\
import torch.nn as nn


class GQAProjections(nn.Module):
    def __init__(self, d_model=64, n_heads=8, n_kv_heads=2):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv_heads, d_model // n_heads
        self.q_proj = nn.Linear(d_model, n_heads * self.hd)
        self.k_proj = nn.Linear(d_model, n_kv_heads * self.hd)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        return q, k
'''),
    ("unflatten(-1, (n_heads, head_dim)) and flatten(2) to merge", '''\
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        q, k, v = (t.unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2) for t in self.qkv(x).chunk(3, dim=-1))
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
'''),
    ("tokens folded in pairs: view(b, t // 2, 2 * d) of sizes from the caller", '''\
from torch import nn


class PairFold(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.reduce = nn.Linear(2 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        return self.reduce(x.reshape(b, t // 2, 2 * d))
'''),
    ("blocked attention: view(b, -1, block, d) cuts the sequence into blocks, sizes from a config", '''\
from torch import nn


class BlockSparse(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_size = config.block_size
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // self.num_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.size()
        q = self.query(hidden_states).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        return q.reshape(b, self.num_heads, -1, self.block_size, self.head_dim)
'''),
    ("diffusers processor: attn imported, width read off the key, split into (heads, inner_dim // heads)", '''\
import torch
import torch.nn.functional as F
from ..attention_processor import Attention


class AttnProcessor2_0:
    def __call__(self, attn: Attention, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size = hidden_states.shape[0]
        query, key, value = attn.to_q(hidden_states), attn.to_k(hidden_states), attn.to_v(hidden_states)
        inner_dim = key.shape[-1]
        head_dim = inner_dim // attn.heads
        query = query.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        out = F.scaled_dot_product_attention(query, key, value)
        return out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim)
'''),
]
