"""A BERT-style encoder-only model: bidirectional self-attention and a masked-LM head.

Dims: b batch, t time (t <= max_len), d_model model width, h heads, vocab_size vocabulary.
``padding_mask`` is bool (b, t), True at padding; it becomes a (b, 1, 1, t) key mask, so padding
is never attended to (padding positions still get outputs, which the loss should ignore).

Walk-through (the first seed's "[CLS] I love NLP [SEP]" as ids, BERT-like sizes scaled down):

    >>> import torch
    >>> from reference_model import MiniBERT
    >>> model = MiniBERT(vocab_size=30522, d_model=64, n_heads=4, n_layers=2, max_len=128)
    >>> ids = torch.tensor([[101, 1045, 2293, 17953, 102]])          # (b, t) = (1, 5)
    >>> tuple(model.encode(ids).shape)                               # (b, t, d_model)
    (1, 5, 64)
    >>> tuple(model(ids).shape)                                      # (b, t, vocab_size)
    (1, 5, 30522)
"""

from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from reference_model.checking import typechecked
from reference_model.encoder import Encoder
from reference_model.positional import LearnedPositionalEncoding

__all__ = ["MiniBERT"]


class MiniBERT(nn.Module):
    """Token + segment + learned position embeddings, a post-LN encoder, a masked-LM head."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 128,
        n_heads: int = 4,
        n_layers: int = 2,
        max_len: int = 128,
        d_ff: int | None = None,
        dropout: float = 0.0,
        n_segments: int = 2,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.segment_embedding = nn.Embedding(n_segments, d_model)
        self.position_embedding = LearnedPositionalEncoding(d_model, max_len)
        self.embedding_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.encoder = Encoder(d_model, n_heads, d_ff or 4 * d_model, n_layers, dropout, norm_first=False)
        self.mlm_transform = nn.Linear(d_model, d_model)
        self.mlm_norm = nn.LayerNorm(d_model)
        self.mlm_head = nn.Linear(d_model, vocab_size)

    @typechecked
    def encode(
        self,
        ids: Int[Tensor, "b t"],
        padding_mask: Bool[Tensor, "b t"] | None = None,
        segment_ids: Int[Tensor, "b t"] | None = None,
    ) -> Float[Tensor, "b t d_model"]:
        """Contextual vectors for every token; position 0 ([CLS]) summarises the sequence."""
        x = self.token_embedding(ids)  # (b, t, d_model)
        if segment_ids is not None:
            x = x + self.segment_embedding(segment_ids)  # sentence A / B
        x = self.dropout(self.embedding_norm(self.position_embedding(x)))
        mask = None if padding_mask is None else padding_mask[:, None, None, :]  # (b, 1, 1, t)
        return self.encoder(x, mask)

    @typechecked
    def forward(
        self,
        ids: Int[Tensor, "b t"],
        padding_mask: Bool[Tensor, "b t"] | None = None,
        segment_ids: Int[Tensor, "b t"] | None = None,
    ) -> Float[Tensor, "b t vocab_size"]:
        """Masked-LM logits: a distribution over the vocabulary at every position."""
        h = self.encode(ids, padding_mask, segment_ids)  # (b, t, d_model)
        h = self.mlm_norm(nn.functional.gelu(self.mlm_transform(h)))
        return self.mlm_head(h)  # (b, t, vocab_size)
