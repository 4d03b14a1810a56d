"""SC506 annotation-mismatch: a jaxtyping-annotated attention that returns the weights, not the output.

Bug: ``forward`` promises ``Float[Tensor, "b t d_model"]`` but returns ``attn`` of shape
``(b, h, t, t)`` (a one-word slip: ``return attn`` for ``return self.W_O(out)``). How it shows: run
this file; jaxtyping with beartype rejects the return value with a ``TypeCheckError``.
"""

# b batch, t time, d_model width, h heads, d_k head dim
import torch
from beartype import beartype
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        assert d_model % n_heads == 0, f"d_model {d_model} % n_heads {n_heads} != 0"
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_QKV = nn.Linear(d_model, 3 * d_model)
        self.W_O = nn.Linear(d_model, d_model)

    @jaxtyped(typechecker=beartype)
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        b, t, d_model = x.shape
        q, k, v = self.W_QKV(x).view(b, t, 3, self.n_heads, self.d_k).permute(2, 0, 3, 1, 4)  # (b, h, t, d_k)
        attn = torch.softmax(q @ k.transpose(-2, -1) / self.d_k**0.5, dim=-1)  # (b, h, t, t)
        out = (attn @ v).transpose(1, 2).reshape(b, t, d_model)
        return attn  # BUG: SC506


if __name__ == "__main__":
    try:
        MultiHeadAttention()(torch.randn(2, 5, 64))
        print("SC506: no error (unexpected)")
    except Exception as err:  # jaxtyping raises beartype's TypeCheckError
        print(f"SC506: returned (2, 4, 5, 5) where (b, t, d_model) was promised -> {type(err).__name__}: {str(err).splitlines()[0]}")
