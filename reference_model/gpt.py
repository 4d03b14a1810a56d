"""A decoder-only GPT: token + learned position embeddings, pre-LN causal blocks, a vocab head.

Dims: b batch, t time (t <= max_len), d_model model width, h heads, vocab_size vocabulary.

Walk-through (the second seed's character model: 4 sequences of 16 characters, 14 symbols):

    >>> import torch
    >>> from reference_model import MiniGPT
    >>> model = MiniGPT(vocab_size=14, d_model=64, n_heads=4, n_layers=2, max_len=16)
    >>> idx = torch.randint(0, 14, (4, 16))              # (b, t) character ids
    >>> x = model.embed(idx)                             # token + position: (b, t, d_model)
    >>> tuple(x.shape)
    (4, 16, 64)
    >>> logits = model(idx)                              # (b, t, vocab_size)
    >>> tuple(logits.shape)
    (4, 16, 14)
"""

from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from reference_model.attention import CausalSelfAttention
from reference_model.checking import typechecked
from reference_model.feedforward import PositionwiseFeedForward
from reference_model.positional import LearnedPositionalEncoding

__all__ = ["GPTBlock", "GPTConfig", "MiniGPT"]


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of a MiniGPT; the defaults train the second seed's text to loss < 0.6 in 500 steps."""

    vocab_size: int
    d_model: int = 64  # width of every token vector
    n_heads: int = 4  # d_model // n_heads = 16 features per head
    n_layers: int = 2  # GPT blocks
    max_len: int = 16  # longest context (the block size)
    dropout: float = 0.0


class GPTBlock(nn.Module):
    """Pre-LN block: x + attn(LN(x)), then x + FFN(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, max_len: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.d_model = d_model
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, max_len, dropout=dropout)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = PositionwiseFeedForward(d_model, 4 * d_model, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    @typechecked
    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
        """Two residual lines."""
        x = x + self.dropout(self.attn(self.ln1(x)))
        x = x + self.dropout(self.ffn(self.ln2(x)))
        return x


class MiniGPT(nn.Module):
    """A small GPT language model returning next-token logits at every position."""

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        max_len: int = 16,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_len = max_len
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = LearnedPositionalEncoding(d_model, max_len)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(GPTBlock(d_model, n_heads, max_len, dropout) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    @classmethod
    def from_config(cls, config: GPTConfig) -> "MiniGPT":
        """Build a model from a ``GPTConfig``."""
        c = config
        return cls(c.vocab_size, c.d_model, c.n_heads, c.n_layers, c.max_len, c.dropout)

    @typechecked
    def embed(self, idx: Int[Tensor, "b t"]) -> Float[Tensor, "b t d_model"]:
        """Token vectors plus the learned vectors of positions 0..t-1."""
        return self.position_embedding(self.token_embedding(idx))  # (b, t, d_model)

    @typechecked
    def forward(self, idx: Int[Tensor, "b t"]) -> Float[Tensor, "b t vocab_size"]:
        """Logits for the token after each position, seeing only positions up to it."""
        x = self.dropout(self.embed(idx))  # (b, t, d_model)
        for block in self.blocks:
            x = block(x)  # (b, t, d_model)
        return self.lm_head(self.ln_f(x))  # (b, t, vocab_size)

    @torch.no_grad()
    @typechecked
    def generate(self, idx: Int[Tensor, "b t"], max_new_tokens: int) -> Int[Tensor, "b t_out"]:
        """Greedy decoding: append the most likely next token ``max_new_tokens`` times.

        Does not switch modes; call ``model.eval()`` first.
        """
        for _ in range(max_new_tokens):
            context = idx[:, -self.max_len :]  # (b, <= max_len): crop to the context window
            logits = self(context)[:, -1, :]  # (b, vocab_size): the last position only
            next_id = logits.argmax(dim=-1, keepdim=True)  # (b, 1)
            idx = torch.cat((idx, next_id), dim=1)  # (b, t + 1)
        return idx

