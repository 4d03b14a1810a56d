"""SC506 annotation-mismatch: rule examples.

Marker (``# <-``): where the inferred shape meets the contradicting jaxtyping annotation: the call
whose argument contradicts the callee's parameter annotation, or the ``return`` whose value
contradicts the return annotation. Annotation dim names unify with the module's known values
(``d_model`` in ``"b t d_model"`` is the constructor's ``d_model``).
"""

INVALID = [
    ("forward annotated to return (b, t, d_model) returns the (b, h, t, t) attention weights", '''\
import torch
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        b, t, d_model = x.shape
        q, k, v = self.W_QKV(x).view(b, t, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-2, -1) / self.d_k ** 0.5, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, t, d_model)
        return attn  # <-
'''),
    ("4-D annotated attention() helper called with unsplit (b, t, d_model) tensors", '''\
import torch
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


@jaxtyped(typechecker=beartype)
def attention(
    q: Float[Tensor, "b h t d_k"], k: Float[Tensor, "b h t d_k"], v: Float[Tensor, "b h t d_k"]
) -> Float[Tensor, "b h t d_k"]:
    w = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    return torch.softmax(w, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x: Float[Tensor, "b t d_model"]):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return attention(q, k, v)  # <-
'''),
    ("FFN annotated d_model -> d_model returns the d_ff hidden", '''\
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class FeedForward(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        h = F.gelu(self.up(x))
        return h  # <-
'''),
    ("Bool[Tensor, 't t'] mask parameter given a (B, T, T) mask", '''\
import math

import torch
from beartype import beartype
from jaxtyping import Bool, Float, jaxtyped
from torch import Tensor, nn


@jaxtyped(typechecker=beartype)
def masked_scores(scores: Float[Tensor, "b t t"], blocked: Bool[Tensor, "t t"]) -> Float[Tensor, "b t t"]:
    return scores.masked_fill(blocked, float("-inf"))


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qk = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        B, T, _ = x.shape
        q, k = self.qk(x).chunk(2, dim=-1)
        blocked = torch.ones(B, T, T, dtype=torch.bool, device=x.device).triu(1)
        s = masked_scores(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), blocked)  # <-
        return torch.softmax(s, dim=-1)
'''),
    ("one dim name `d` bound to 32 and 64 in the same call", '''\
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


@jaxtyped(typechecker=beartype)
def gated_sum(a: Float[Tensor, "b t d"], b: Float[Tensor, "b t d"]) -> Float[Tensor, "b t d"]:
    return a * b.sigmoid()


class Gate(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.value = nn.Linear(d_model, d_model)
        self.gate = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        return gated_sum(self.value(x), self.gate(x))  # <-
'''),
    ("token scores annotated (b, t) returned as (b, t, 1)", '''\
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class TokenScorer(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.score = nn.Linear(d_model, 1)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t"]:
        return self.score(self.norm(x))  # <-
'''),
]

VALID = [
    ("annotated 4-D attention() helper called after the head split", '''\
import torch
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


@jaxtyped(typechecker=beartype)
def attention(
    q: Float[Tensor, "b h t d_k"], k: Float[Tensor, "b h t d_k"], v: Float[Tensor, "b h t d_k"]
) -> Float[Tensor, "b h t d_k"]:
    w = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    return torch.softmax(w, dim=-1) @ v


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, C // self.n_heads).permute(2, 0, 3, 1, 4)
        return attention(q, k, v).transpose(1, 2).reshape(B, T, C)
'''),
    ("FFN annotated d_model -> d_model", '''\
import torch.nn.functional as F
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class FeedForward(nn.Module):
    def __init__(self, d_model=32, d_ff=128):
        super().__init__()
        self.up = nn.Linear(d_model, d_ff)
        self.down = nn.Linear(d_ff, d_model)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        return self.down(F.gelu(self.up(x)))
'''),
    ("variadic *batch prefix", '''\
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class RMSNormLike(nn.Module):
    def __init__(self, d_model=32, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.proj = nn.Linear(d_model, d_model)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "*batch d_model"]) -> Float[Tensor, "*batch d_model"]:
        x = x * (x.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()
        return self.proj(x)
'''),
    ("`...` annotation accepts any shape", '''\
import torch
from jaxtyping import Float
from torch import Tensor, nn


def gelu_tanh(x: Float[Tensor, "..."]) -> Float[Tensor, "..."]:
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


class MLP(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.proj(gelu_tanh(self.fc(x)))
'''),
    ("Bool[Tensor, 't t'] mask parameter given a (T, T) mask", '''\
import math

import torch
from beartype import beartype
from jaxtyping import Bool, Float, jaxtyped
from torch import Tensor, nn


@jaxtyped(typechecker=beartype)
def masked_scores(scores: Float[Tensor, "b t t"], blocked: Bool[Tensor, "t t"]) -> Float[Tensor, "b t t"]:
    return scores.masked_fill(blocked, float("-inf"))


class CausalHead(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.qk = nn.Linear(d_model, 2 * d_model)

    def forward(self, x):
        T = x.size(1)
        q, k = self.qk(x).chunk(2, dim=-1)
        blocked = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = masked_scores(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), blocked)
        return torch.softmax(s, dim=-1)
'''),
    ("a local `Float` alias that is not jaxtyping's", '''\
from torch import nn

Float = float


def temperature_schedule(step: int, start: Float = 1.0, end: Float = 0.1) -> Float:
    return max(end, start * 0.99 ** step)


class Sampler(nn.Module):
    def __init__(self, d_model=32, vocab_size=50):
        super().__init__()
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, h, step: int = 0):
        return (self.head(h) / temperature_schedule(step)).softmax(dim=-1)
'''),
    ("token scores annotated (b, t) after squeeze(-1)", '''\
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class TokenScorer(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.score = nn.Linear(d_model, 1)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t"]:
        return self.score(self.norm(x)).squeeze(-1)
'''),
]
