"""A Hugging-Face-style BERT layer: config.hidden_size, transpose_for_scores, an additive float
padding mask built with torch.finfo(dtype).min, and position_ids sliced to the sequence length.

Dims: b batch, t time, d hidden_size, h num_attention_heads, k attention_head_size, i intermediate_size.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class BertConfig:
    vocab_size: int = 1000
    hidden_size: int = 64
    num_attention_heads: int = 4
    intermediate_size: int = 256
    max_position_embeddings: int = 128
    type_vocab_size: int = 2
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    layer_norm_eps: float = 1e-12


class BertEmbeddings(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)))

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]  # (1, t)
        embeddings = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        embeddings = embeddings + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(embeddings))  # (b, t, d)


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        if config.hidden_size % config.num_attention_heads != 0:
            raise ValueError(
                f"hidden size {config.hidden_size} is not a multiple of {config.num_attention_heads} attention heads"
            )
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)  # (b, t, d) -> (b, h, t, k)

    def forward(self, hidden_states, attention_mask=None):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))  # (b, h, t, t)
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask  # additive: 0 keep, finfo.min drop
        attention_probs = self.dropout(nn.functional.softmax(attention_scores, dim=-1))
        context_layer = torch.matmul(attention_probs, value_layer)  # (b, h, t, k)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()  # (b, t, h, k)
        return context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))  # (b, t, d)


class BertLayer(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.attention = BertSelfAttention(config)
        self.attention_output = nn.Linear(config.hidden_size, config.hidden_size)
        self.attention_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.intermediate = nn.Linear(config.hidden_size, config.intermediate_size)
        self.output = nn.Linear(config.intermediate_size, config.hidden_size)
        self.output_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, attention_mask=None):
        attn = self.dropout(self.attention_output(self.attention(hidden_states, attention_mask)))
        hidden_states = self.attention_norm(hidden_states + attn)
        ffn = self.dropout(self.output(nn.functional.gelu(self.intermediate(hidden_states))))
        return self.output_norm(hidden_states + ffn)


def extended_attention_mask(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(b, t) with 1 = token, 0 = padding -> additive (b, 1, 1, t) bias: 0 or the dtype's minimum."""
    extended = attention_mask[:, None, None, :].to(dtype)
    return (1.0 - extended) * torch.finfo(dtype).min


if __name__ == "__main__":
    torch.manual_seed(0)
    config = BertConfig()
    embeddings, layer = BertEmbeddings(config), BertLayer(config)
    embeddings.eval()
    layer.eval()
    input_ids = torch.tensor([[101, 17, 42, 99, 102, 0, 0], [101, 5, 6, 7, 8, 9, 102]])
    attention_mask = (input_ids != 0).long()  # 1 = real token (Hugging Face convention)
    with torch.no_grad():
        hidden = embeddings(input_ids, torch.zeros_like(input_ids))
        out = layer(hidden, extended_attention_mask(attention_mask, hidden.dtype))
    print(f"hidden {tuple(hidden.shape)} -> {tuple(out.shape)}; finite: {torch.isfinite(out).all().item()}")
