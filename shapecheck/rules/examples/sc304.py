"""SC304 sinusoidal-pe-formula: rule examples.

Marker (``# <-``): for a wrong frequency, the line that computes it (the ``div_term`` / ``inv_freq``
/ the exponent inside the ``sin``); for sin and cos written to the same slots, the second write (the
one that overwrites). The reference is PE(pos, 2i) = sin(pos / 10000^(2i/d)),
PE(pos, 2i+1) = cos(pos / 10000^(2i/d)); sin and cos in two halves (tensor2tensor) is also correct.
"""

INVALID = [
    ("seed 1 exp-log form with the minus sign lost: frequencies grow", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (math.log(10000.0) / d_model))  # <-
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("sin and cos both written to the even slots", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 0::2] = torch.cos(position * div_term)  # <-
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("pow form with i / d_model instead of 2i / d_model", '''\
import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float32)[:, None]
        i = torch.arange(d_model // 2, dtype=torch.float32)[None, :]
        angle = pos / 10000 ** (i / d_model)  # <-
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("position multiplied by 10000^(2i/d) instead of divided", '''\
import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).float().unsqueeze(1)
        two_i = torch.arange(0, d_model, 2).float()
        angle = pos * torch.pow(10000.0, two_i / d_model)  # <-
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = angle.sin()
        pe[:, 1::2] = angle.cos()
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("sin and cos both written to the odd slots, `import torch as th`", '''\
import math

import torch as th
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        position = th.arange(max_len).unsqueeze(1)
        div_term = th.exp(th.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = th.zeros(1, max_len, d_model)
        pe[0, :, 1::2] = th.sin(position * div_term)
        pe[0, :, 1::2] = th.cos(position * div_term)  # <-
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]
'''),
    ("loop form: the cos uses exponent (i + 1) / d instead of i / d", '''\
import math

import torch
from torch import nn


class LoopPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        for pos in range(max_len):
            for i in range(0, d_model, 2):
                pe[pos, i] = math.sin(pos / 10000 ** (i / d_model))
                pe[pos, i + 1] = math.cos(pos / 10000 ** ((i + 1) / d_model))  # <-
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("pow form with 2 * i where i already steps by 2: frequencies fall twice as fast", '''\
import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).float().unsqueeze(1)
        i = torch.arange(0, d_model, 2).float()
        inv_freq = 1.0 / (10000 ** (2 * i / d_model))  # <-
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * inv_freq)
        pe[:, 1::2] = torch.cos(pos * inv_freq)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
]

VALID = [
    ("seed 1 / Annotated-Transformer exp-log form", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("pow form: 1 / 10000 ** (arange(0, d, 2) / d)", '''\
import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).float().unsqueeze(1)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, d_model, 2).float() / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(pos * inv_freq)
        pe[:, 1::2] = torch.cos(pos * inv_freq)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("interleaved with stack([sin, cos], -1).flatten(-2)", '''\
import torch
from einops import rearrange
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, dim=32, max_len=64):
        super().__init__()
        pos = torch.arange(max_len).float()
        inv_freq = 10000.0 ** (-torch.arange(0, dim, 2).float() / dim)
        angle = torch.einsum("n,f->nf", pos, inv_freq)
        pe = torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)
        self.register_buffer("pe", rearrange(pe, "n d -> 1 n d"))

    def forward(self, x):
        return x + self.pe[:, : x.shape[1]]
'''),
    ("tensor2tensor halves: cat([sin, cos], dim=-1)", '''\
import math

import torch
from torch import nn


class SinusoidalPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        half = d_model // 2
        pos = torch.arange(max_len).float().unsqueeze(1)
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half).float() / half)
        self.register_buffer("pe", torch.cat([torch.sin(pos * freqs), torch.cos(pos * freqs)], dim=-1))

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("loop form with the same exponent for the pair, `from math import sin, cos`", '''\
from math import cos, sin

import torch
from torch import nn


class LoopPE(nn.Module):
    def __init__(self, d_model=32, max_len=64):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        for pos in range(max_len):
            for i in range(0, d_model, 2):
                angle = pos / 10000 ** (i / d_model)
                pe[pos, i] = sin(angle)
                pe[pos, i + 1] = cos(angle)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("RoPE cache: inv_freq with arange(0, dim, 2) / dim, cos and sin in separate buffers", '''\
import torch
from torch import nn


class RotaryCache(nn.Module):
    def __init__(self, head_dim=16, max_len=64, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, x):
        T = x.size(-2)
        return self.cos_cached[:T], self.sin_cached[:T]
'''),
    ("table rebuilt for position interpolation: the same function written to the same slots again", '''\
import math

import torch
from torch import nn


class InterpolatedPE(nn.Module):
    """Sinusoidal table; with a longer context the positions are squeezed and the table rebuilt."""

    def __init__(self, d_model=32, max_len=64, train_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        if max_len > train_len:
            scaled = position * (train_len / max_len)
            pe[:, 0::2] = torch.sin(scaled * div_term)
            pe[:, 1::2] = torch.cos(scaled * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
    ("even / odd index tensors and a zeroed padding row (fairseq style)", '''\
import math

import torch
from torch import nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=32, max_len=64, padding_idx=0):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1).float()
        even = torch.arange(0, d_model, 2)
        div_term = torch.exp(even.float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, even] = torch.sin(position * div_term)
        pe[:, even + 1] = torch.cos(position * div_term)
        pe[padding_idx] = torch.zeros(d_model)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[: x.size(1)]
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'loop form: the cos uses exponent (i + 1) / d instead of i / d': 'scalar math.sin / math.cos in Python loops are not modelled',
}
