"""SC405 residual-shape-mismatch: rule examples.

Marker (``# <-``): the residual ``+`` / ``+=`` line whose operands have different feature sizes, or,
when one operand is straight the output of an ``nn.Linear`` the file builds that changes the width it
is given (not a square layer), that layer's constructor: its ``out_features`` is where the fix goes.
"""

INVALID = [
    ("seed 1 FFN without its down-projection, added to x", '''\
import torch.nn as nn
import torch.nn.functional as F


class FeedForwardBlock(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        ff_output = F.gelu(self.linear1(x))
        x = x + ff_output  # <-
        return x
'''),
    ("single head of size d_k added back to the d_model stream", '''\
import math

import torch
from torch import nn


class HeadBlock(nn.Module):
    def __init__(self, d_model=32, d_k=8):
        super().__init__()
        self.q = nn.Linear(d_model, d_k)
        self.k = nn.Linear(d_model, d_k)
        self.v = nn.Linear(d_model, d_k)

    def forward(self, x):
        w = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(self.q.out_features)
        out = torch.softmax(w, dim=-1) @ self.v(x)
        return x + out  # <-
'''),
    ("residual taken from the input before the input projection", '''\
from torch import nn


class Stem(nn.Module):
    def __init__(self, d_in=80, d_model=64, n_heads=4):
        super().__init__()
        self.in_proj = nn.Linear(d_in, d_model)
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, features):
        h = self.in_proj(features)
        y, _ = self.attn(h, h, h)
        return features + y  # <-
'''),
    ("nanoGPT MLP whose c_proj stays at 4 * n_embd", '''\
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class GPTConfig:
    n_embd: int = 32


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, 4 * config.n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.mlp(self.ln_2(x))  # <-
        return x
'''),
    ("Hugging Face BertOutput: dense keeps intermediate_size", '''\
from dataclasses import dataclass

from torch import nn


@dataclass
class Config:
    hidden_size: int = 32
    intermediate_size: int = 128


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.intermediate_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = hidden_states + input_tensor  # <-
        return hidden_states


class BertLayerTail(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = BertOutput(config)

    def forward(self, attention_output):
        return self.output(self.intermediate(attention_output), attention_output)
'''),
    ("einops: heads merged to inner_dim, no to_out, added to x", '''\
from einops import rearrange
from torch import nn


class AttentionBlock(nn.Module):
    def __init__(self, dim=32, heads=4, dim_head=16):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
        out = rearrange(attn @ v, "b h n d -> b n (h d)")
        return x + out  # <-
'''),
    ("a subtraction, not an addition: x minus a noise head of half the width", '''\
import torch
from torch import nn


class NoisePredictor(nn.Module):
    """Denoising step: x minus the predicted noise, but the noise head outputs half the width."""

    def __init__(self, d_model=64, d_hidden=256):
        super().__init__()
        self.up = nn.Linear(d_model, d_hidden)
        self.down = nn.Linear(d_hidden, d_model // 2)  # <-

    def forward(self, x):
        noise = self.down(torch.relu(self.up(x)))
        return x - noise
'''),
]

VALID = [
    ("seed 1 EncoderLayer sublayers keep d_model", '''\
import torch.nn as nn
import torch.nn.functional as F


class FeedForwardBlock(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x):
        x = x + self.linear2(F.gelu(self.linear1(x)))
        return self.norm(x)
'''),
    ("seed 2 GPTBlock, pre-norm, two residual lines", '''\
import torch
import torch.nn as nn


class GPTBlock(nn.Module):
    def __init__(self, d_model=32, n_head=4):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        T = x.size(1)
        future = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=future, need_weights=False)[0]
        x = x + self.ffn(self.ln2(x))
        return x
'''),
    ("projection shortcut when the width changes", '''\
from torch import nn


class WideningBlock(nn.Module):
    def __init__(self, d_in=32, d_out=64):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, d_out), nn.GELU(), nn.Linear(d_out, d_out))
        self.shortcut = nn.Linear(d_in, d_out, bias=False)

    def forward(self, x):
        return self.shortcut(x) + self.body(x)
'''),
    ("x-transformers inner_dim projected back by to_out", '''\
from einops import rearrange
from torch import nn


class AttentionBlock(nn.Module):
    def __init__(self, *, dim=32, heads=4, dim_head=16):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
        return x + self.to_out(rearrange(attn @ v, "b h n d -> b n (h d)"))
'''),
    ("LayerScale: residual scaled by a learned per-channel gamma", '''\
import torch
from torch import nn


class LayerScaleFFN(nn.Module):
    def __init__(self, d_model=32, init=1e-4):
        super().__init__()
        self.ff = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        self.gamma = nn.Parameter(init * torch.ones(d_model))

    def forward(self, x):
        return x + self.gamma * self.ff(x)
'''),
    ("Hugging Face BertOutput: dense back to hidden_size", '''\
from dataclasses import dataclass

from torch import nn


@dataclass
class Config:
    hidden_size: int = 32
    intermediate_size: int = 128


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        return self.LayerNorm(hidden_states + input_tensor)


class BertLayerTail(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = BertOutput(config)

    def forward(self, attention_output):
        return self.output(self.intermediate(attention_output), attention_output)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'single head of size d_k added back to the d_model stream': "the forward input is unannotated and of unknown rank, so the matmul result's shape is unknown",
    'Hugging Face BertOutput: dense keeps intermediate_size': 'the sizes are two different config fields; the config parameter is unannotated, so their values are unknown',
}
