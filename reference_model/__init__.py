"""reference_model: typed, runtime-checked, numerically exact Transformer modules.

Every public function and ``forward`` carries jaxtyping annotations that beartype checks at run
time by ``shapecheck.runtime`` (set SHAPECHECK_RUNTIME=0, or the older REFERENCE_MODEL_TYPECHECK=0, to
turn the checks off; see ``reference_model.checking``).
This package imports torch; ``shapecheck lint`` never imports it.
"""

from reference_model.attention import (
    CausalSelfAttention,
    MultiHeadAttention,
    causal_mask,
    scaled_dot_product_attention,
)
from reference_model.bert import MiniBERT
from reference_model.checking import (
    ENV_VAR,
    TypeCheckError,
    set_typechecking,
    typecheck_enabled,
    typechecked,
    typechecking,
)
from reference_model.decoder import Decoder, DecoderLayer, Transformer
from reference_model.encoder import Encoder, EncoderLayer
from reference_model.feedforward import PositionwiseFeedForward
from reference_model.gpt import GPTBlock, GPTConfig, MiniGPT
from reference_model.positional import (
    LearnedPositionalEncoding,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_bias,
    alibi_slopes,
    sinusoidal_table,
)

__all__ = [
    "ENV_VAR",
    "CausalSelfAttention",
    "Decoder",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "GPTBlock",
    "GPTConfig",
    "LearnedPositionalEncoding",
    "MiniBERT",
    "MiniGPT",
    "MultiHeadAttention",
    "PositionwiseFeedForward",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "Transformer",
    "TypeCheckError",
    "alibi_bias",
    "alibi_slopes",
    "causal_mask",
    "scaled_dot_product_attention",
    "set_typechecking",
    "sinusoidal_table",
    "typecheck_enabled",
    "typechecked",
    "typechecking",
]
