"""SC406 linear-chain-mismatch: rule examples.

Marker (``# <-``): the constructor of the layer whose ``in_features`` disagrees with the
``out_features`` of the layer before it, in execution order (where the fix goes), inside
``nn.Sequential`` and in a hand-written ``forward`` alike; the message names the method that applies it.
"""

INVALID = [
    ("seed 1 PositionwiseFeedForward with linear2 arguments swapped", '''\
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model=32, d_ff=128, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_model, d_ff)  # <-

    def forward(self, x):
        x = F.gelu(self.linear1(x))
        x = self.dropout(x)
        x = self.linear2(x)
        return x
'''),
    ("seed 2 GPTBlock ffn: second Linear takes d_model", '''\
import torch.nn as nn


class GPTBlockFFN(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.GELU(),
            nn.Linear(d_model, d_model),  # <-
        )

    def forward(self, x):
        return self.ffn(self.ln2(x))
'''),
    ("nanoGPT MLP: c_proj = Linear(n_embd, n_embd) after c_fc to 4 * n_embd", '''\
from dataclasses import dataclass

import torch.nn as nn


@dataclass
class GPTConfig:
    n_embd: int = 32
    dropout: float = 0.0


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)  # <-
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        x = self.gelu(self.c_fc(x))
        return self.dropout(self.c_proj(x))
'''),
    ("classifier head: Dropout between Linear(d, 256) and Linear(128, n)", '''\
from torch import nn


class ClassifierHead(nn.Module):
    def __init__(self, d_model=64, n_classes=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(d_model),
            nn.Linear(d_model, 256),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(128, n_classes),  # <-
        )

    def forward(self, pooled):
        return self.net(pooled)
'''),
    ("SwiGLU: w2 sized (d_model, d_ff) applied to the d_ff hidden", '''\
import torch.nn.functional as F
from torch import nn


class SwiGLU(nn.Module):
    def __init__(self, d_model=32, d_ff=96):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_model, d_ff, bias=False)  # <-

    def forward(self, x):
        hidden = F.silu(self.w1(x)) * self.w3(x)
        return self.w2(hidden)
'''),
    ("Hugging Face config: intermediate then an output dense from hidden_size", '''\
from dataclasses import dataclass

from torch import nn


@dataclass
class Config:
    hidden_size: int = 32
    intermediate_size: int = 128


class BertFFN(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.intermediate_dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = nn.GELU()
        self.output_dense = nn.Linear(config.hidden_size, config.hidden_size)  # <-

    def forward(self, hidden_states):
        hidden_states = self.intermediate_act_fn(self.intermediate_dense(hidden_states))
        return self.output_dense(hidden_states)
'''),
    ("whisper-style Linear subclass with its own forward, in a Sequential", '''\
import torch.nn.functional as F
from torch import Tensor, nn


class Linear(nn.Linear):
    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))


class ResidualBlock(nn.Module):
    def __init__(self, n_state: int):
        super().__init__()
        n_mlp = n_state * 4
        self.mlp = nn.Sequential(
            Linear(n_state, n_mlp),
            nn.GELU(),
            Linear(n_mlp * 2, n_state),  # <-
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.mlp(x)
'''),
    ("lucidrains style: torch_einops_utils' Sequential, which leaves out None", '''\
from torch import nn
from torch_einops_utils.nn import Sequential


class NextEmbedPredictor(nn.Module):
    def __init__(self, dim=512, use_norm=False):
        super().__init__()
        self.net = Sequential(
            nn.LayerNorm(dim * 2) if use_norm else None,
            nn.Linear(dim * 2, dim * 2),
            nn.LeakyReLU(),
            None,
            nn.Linear(dim * 4, dim),  # <-
        )

    def forward(self, x):
        return self.net(x)
'''),
]

VALID = [
    ("seed 1 PositionwiseFeedForward", '''\
import torch.nn as nn
import torch.nn.functional as F


class PositionwiseFeedForward(nn.Module):
    def __init__(self, d_model=32, d_ff=128, dropout=0.1):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        x = F.gelu(self.linear1(x))
        x = self.dropout(x)
        return self.linear2(x)
'''),
    ("nn.Sequential with LayerNorm and Dropout between the Linears", '''\
from torch import nn


class ClassifierHead(nn.Module):
    def __init__(self, d_model=64, n_classes=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.LayerNorm(d_model),
            nn.Linear(d_model, 256),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.LayerNorm(256),
            nn.Linear(256, n_classes),
        )

    def forward(self, pooled):
        return self.net(pooled)
'''),
    ("layers defined out of order in __init__, applied in the right order", '''\
import torch.nn.functional as F
from torch import nn


class FFN(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.down = nn.Linear(d_ff, d_model)
        self.up = nn.Linear(d_model, d_ff)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))
'''),
    ("GLU with one fused up-projection split by chunk", '''\
import torch.nn.functional as F
from torch import nn


class GEGLU(nn.Module):
    def __init__(self, d_model=32, d_ff=96):
        super().__init__()
        self.proj_in = nn.Linear(d_model, 2 * d_ff)
        self.proj_out = nn.Linear(d_ff, d_model)

    def forward(self, x):
        a, gate = self.proj_in(x).chunk(2, dim=-1)
        return self.proj_out(a * F.gelu(gate))
'''),
    ("two paths concatenated, then Linear(2 * d, d)", '''\
import torch
from torch import nn


class Fusion(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.left = nn.Linear(d_model, d_model)
        self.right = nn.Linear(d_model, d_model)
        self.merge = nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        return self.merge(torch.cat([self.left(x), self.right(x)], dim=-1))
'''),
    ("nn.LazyLinear: in_features unknown until the first call", '''\
from torch import nn


class Probe(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(32, 64),
            nn.GELU(),
            nn.LazyLinear(n_classes),
        )

    def forward(self, x):
        return self.net(x)
'''),
    ("whisper-style Linear subclass with its own forward, chained right", '''\
import torch.nn.functional as F
from torch import Tensor, nn


class Linear(nn.Linear):
    def forward(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))


class ResidualBlock(nn.Module):
    def __init__(self, n_state: int):
        super().__init__()
        n_mlp = n_state * 4
        self.mlp = nn.Sequential(Linear(n_state, n_mlp), nn.GELU(), Linear(n_mlp, n_state))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.mlp(x)
'''),
    ("lucidrains style: torch_einops_utils' Sequential with a None left out, chained right", '''\
from torch import nn
from torch_einops_utils.nn import Sequential


class NextEmbedPredictor(nn.Module):
    def __init__(self, dim=512, use_norm=False):
        super().__init__()
        self.net = Sequential(
            nn.LayerNorm(dim * 2) if use_norm else None,
            nn.Linear(dim * 2, dim * 2),
            None,
            nn.LeakyReLU(),
            nn.Linear(dim * 2, dim),
        )

    def forward(self, x):
        return self.net(x)
'''),
]

#: INVALID examples the engine cannot see yet, with the reason. They are not run as INVALID;
#: tests/test_rule_examples.py checks that each is still missed (so a fix must move it back).
KNOWN_MISSES = {
    'Hugging Face config: intermediate then an output dense from hidden_size': 'the sizes are two different config fields of an unannotated config parameter: their values are unknown',
}
