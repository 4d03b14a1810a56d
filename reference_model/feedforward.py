"""The position-wise feed-forward network: the same two-layer MLP applied to every position.

Dims: b batch, t time, d_model model width, d_ff hidden width (usually 4 * d_model).

    >>> import torch
    >>> from reference_model import PositionwiseFeedForward
    >>> ffn = PositionwiseFeedForward(d_model=512, d_ff=2048)
    >>> x = torch.randn(1, 5, 512)                       # (b, t, d_model)
    >>> tuple(ffn.W_1(x).shape)                          # widened: (b, t, d_ff)
    (1, 5, 2048)
    >>> tuple(ffn(x).shape)                              # back to (b, t, d_model)
    (1, 5, 512)
"""

import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from reference_model.checking import typechecked

__all__ = ["ACTIVATIONS", "PositionwiseFeedForward"]

#: Activations by name: exact (erf) GELU, as nn.TransformerEncoderLayer(activation="gelu") uses.
ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu}


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = W_2(dropout(activation(W_1 x))), d_model -> d_ff -> d_model."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "gelu") -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not one of {sorted(ACTIVATIONS)}")
        self.d_model = d_model
        self.d_ff = d_ff
        self.activation = ACTIVATIONS[activation]
        self.W_1 = nn.Linear(d_model, d_ff)  # widen
        self.W_2 = nn.Linear(d_ff, d_model)  # narrow back
        self.dropout = nn.Dropout(dropout)

    @typechecked
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        """Transform every position independently."""
        hidden = self.dropout(self.activation(self.W_1(x)))  # (b, t, d_ff)
        return self.W_2(hidden)  # (b, t, d_model)
