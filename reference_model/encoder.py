"""Encoder layers and stacks: self-attention and a feed-forward network, each in a residual.

Dims: b batch, h heads, t time, d_model model width, d_ff hidden width of the FFN.
Masks are bool, True = blocked: (t, t) for every sequence, or (b, 1, 1, t) to hide padding keys.

Post-LN (the original Transformer, the first seed):  x = LN(x + Sublayer(x))
Pre-LN  (GPT-2 and most modern models, the second seed):  x = x + Sublayer(LN(x))

Walk-through (first seed: batch 1, 5 tokens, d_model 512, 8 heads, d_ff 2048):

    >>> import torch
    >>> from reference_model import EncoderLayer
    >>> layer = EncoderLayer(d_model=512, n_heads=8, d_ff=2048)
    >>> x = torch.randn(1, 5, 512)                       # (b, t, d_model)
    >>> attn, weights = layer.self_attn(x, x, x)         # (b, t, d_model), (b, h, t, t)
    >>> tuple(weights.shape)
    (1, 8, 5, 5)
    >>> tuple(layer(x).shape)                            # same shape in and out: layers stack
    (1, 5, 512)
"""

from jaxtyping import Bool, Float
from torch import Tensor, nn

from reference_model.attention import MultiHeadAttention
from reference_model.checking import typechecked
from reference_model.feedforward import PositionwiseFeedForward

__all__ = ["Encoder", "EncoderLayer"]

Mask = Bool[Tensor, "#t t"] | Bool[Tensor, "#b #h #t t"]


class EncoderLayer(nn.Module):
    """Multi-head self-attention then a position-wise FFN, post-LN or pre-LN (``norm_first``)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    @typechecked
    def forward(
        self, x: Float[Tensor, "b t d_model"], mask: Mask | None = None
    ) -> Float[Tensor, "b t d_model"]:
        """Two residual sublayers: attention, then the FFN."""
        if self.norm_first:
            x = x + self._attend(self.norm1(x), mask)
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            x = self.norm1(x + self._attend(x, mask))
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x

    def _attend(self, x: Float[Tensor, "b t d_model"], mask: Mask | None) -> Float[Tensor, "b t d_model"]:
        out, _ = self.self_attn(x, x, x, mask)
        return self.dropout1(out)


class Encoder(nn.Module):
    """A stack of ``n_layers`` encoder layers; pre-LN stacks end with a final LayerNorm."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        n_layers: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.layers = nn.ModuleList(
            EncoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        # Pre-LN leaves the residual stream un-normalised; post-LN layers already end in a norm.
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    @typechecked
    def forward(
        self, x: Float[Tensor, "b t d_model"], mask: Mask | None = None
    ) -> Float[Tensor, "b t d_model"]:
        """Run every layer with the same mask."""
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
