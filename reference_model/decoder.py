"""Decoder layers and stacks, and the encoder-decoder Transformer.

Dims: b batch, h heads, t target time, s source time (the encoder memory), d_model model width,
      d_ff FFN hidden width, src_vocab_size / tgt_vocab_size vocabularies.
Masks are bool, True = blocked. The decoder's self-attention is always causal (triu, diagonal=1);
``tgt_mask`` can block more (padding), ``memory_mask`` hides source positions.

Walk-through (batch 2, source 7 tokens, target 5 tokens, d_model 64):

    >>> import torch
    >>> from reference_model import Transformer
    >>> model = Transformer(src_vocab_size=100, tgt_vocab_size=90, d_model=64, n_heads=4,
    ...                     n_layers=2, d_ff=128, max_len=32)
    >>> src = torch.randint(0, 100, (2, 7))              # (b, s) token ids
    >>> tgt = torch.randint(0, 90, (2, 5))               # (b, t) token ids
    >>> memory = model.encode(src)                       # (b, s, d_model)
    >>> tuple(memory.shape)
    (2, 7, 64)
    >>> tuple(model(src, tgt).shape)                     # (b, t, tgt_vocab_size)
    (2, 5, 90)
"""

import math

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from reference_model.attention import MultiHeadAttention, causal_mask
from reference_model.checking import typechecked
from reference_model.encoder import Encoder
from reference_model.feedforward import PositionwiseFeedForward
from reference_model.positional import SinusoidalPositionalEncoding

__all__ = ["Decoder", "DecoderLayer", "Transformer"]

TargetMask = Bool[Tensor, "#t t"] | Bool[Tensor, "#b #h #t t"]
MemoryMask = Bool[Tensor, "#t s"] | Bool[Tensor, "#b #h #t s"]


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder memory, then a position-wise FFN."""

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
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = PositionwiseFeedForward(d_model, d_ff, dropout=dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    @typechecked
    def forward(
        self,
        x: Float[Tensor, "b t d_model"],
        memory: Float[Tensor, "b s d_model"],
        tgt_mask: TargetMask | None = None,
        memory_mask: MemoryMask | None = None,
    ) -> Float[Tensor, "b t d_model"]:
        """Three residual sublayers: causal self-attention, cross-attention, FFN."""
        blocked = causal_mask(x.size(1), device=x.device)  # (t, t): no peeking at later targets
        if tgt_mask is not None:
            blocked = blocked | tgt_mask
        if self.norm_first:
            x = x + self._self_attend(self.norm1(x), blocked)
            x = x + self._cross_attend(self.norm2(x), memory, memory_mask)
            x = x + self.dropout3(self.ffn(self.norm3(x)))
        else:
            x = self.norm1(x + self._self_attend(x, blocked))
            x = self.norm2(x + self._cross_attend(x, memory, memory_mask))
            x = self.norm3(x + self.dropout3(self.ffn(x)))
        return x

    def _self_attend(self, x: Float[Tensor, "b t d_model"], mask: TargetMask) -> Float[Tensor, "b t d_model"]:
        out, _ = self.self_attn(x, x, x, mask)
        return self.dropout1(out)

    def _cross_attend(
        self, x: Float[Tensor, "b t d_model"], memory: Float[Tensor, "b s d_model"], mask: MemoryMask | None
    ) -> Float[Tensor, "b t d_model"]:
        # queries from the target, keys and values from the source: weights (b, h, t, s)
        out, _ = self.cross_attn(x, memory, memory, mask)
        return self.dropout2(out)


class Decoder(nn.Module):
    """A stack of ``n_layers`` decoder layers; pre-LN stacks end with a final LayerNorm."""

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
            DecoderLayer(d_model, n_heads, d_ff, dropout, norm_first, activation) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()

    @typechecked
    def forward(
        self,
        x: Float[Tensor, "b t d_model"],
        memory: Float[Tensor, "b s d_model"],
        tgt_mask: TargetMask | None = None,
        memory_mask: MemoryMask | None = None,
    ) -> Float[Tensor, "b t d_model"]:
        """Run every layer against the same encoder memory."""
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask)
        return self.norm(x)


class Transformer(nn.Module):
    """Encoder-decoder Transformer (Vaswani et al. 2017) with sinusoidal positions."""

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 512,
        n_heads: int = 8,
        n_layers: int = 6,
        d_ff: int = 2048,
        max_len: int = 512,
        dropout: float = 0.0,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab_size, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab_size, d_model)
        self.positional = SinusoidalPositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first)
        self.decoder = Decoder(d_model, n_heads, d_ff, n_layers, dropout, norm_first)
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)

    @typechecked
    def encode(
        self, src: Int[Tensor, "b s"], src_padding_mask: Bool[Tensor, "b s"] | None = None
    ) -> Float[Tensor, "b s d_model"]:
        """Source ids -> memory. ``src_padding_mask`` is True at padding positions."""
        x = self.positional(self.src_embedding(src) * math.sqrt(self.d_model))  # (b, s, d_model)
        return self.encoder(self.dropout(x), _key_padding(src_padding_mask))

    @typechecked
    def decode(
        self,
        tgt: Int[Tensor, "b t"],
        memory: Float[Tensor, "b s d_model"],
        src_padding_mask: Bool[Tensor, "b s"] | None = None,
    ) -> Float[Tensor, "b t tgt_vocab_size"]:
        """Target ids so far + memory -> next-token logits at every target position."""
        y = self.positional(self.tgt_embedding(tgt) * math.sqrt(self.d_model))  # (b, t, d_model)
        y = self.decoder(self.dropout(y), memory, memory_mask=_key_padding(src_padding_mask))
        return self.lm_head(y)  # (b, t, tgt_vocab_size)

    @typechecked
    def forward(
        self,
        src: Int[Tensor, "b s"],
        tgt: Int[Tensor, "b t"],
        src_padding_mask: Bool[Tensor, "b s"] | None = None,
    ) -> Float[Tensor, "b t tgt_vocab_size"]:
        """Teacher forcing: logits for every target position given the whole source."""
        return self.decode(tgt, self.encode(src, src_padding_mask), src_padding_mask)


def _key_padding(padding_mask: Bool[Tensor, "b s"] | None) -> Bool[Tensor, "b 1 1 s"] | None:
    """(b, s) True at padding -> (b, 1, 1, s): hide those keys from every head and query."""
    if padding_mask is None:
        return None
    return padding_mask[:, None, None, :]
