"""SC103 softmax-wrong-dim: Hugging-Face-style BERT self-attention normalising over the query dim.

Bug: ``softmax(attention_scores, dim=-2)`` makes every *column* sum to one, so each query's weights
over the keys no longer form a distribution. How it shows: run this file; the rows of the attention
matrix (one per query) sum to anything but 1.
"""

# b batch, t time, d hidden_size, h heads, k head size
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class BertConfig:
    hidden_size: int = 64
    num_attention_heads: int = 4


class BertSelfAttention(nn.Module):
    def __init__(self, config: BertConfig):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(new_x_shape).permute(0, 2, 1, 3)  # (b, t, d) -> (b, h, t, k)

    def forward(self, hidden_states):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))  # (b, h, t, t)
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        attention_probs = nn.functional.softmax(attention_scores, dim=-2)  # BUG: SC103
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        return context_layer, attention_probs


if __name__ == "__main__":
    torch.manual_seed(0)
    layer = BertSelfAttention(BertConfig())
    _, probs = layer(torch.randn(2, 7, 64) * 3.0)
    row_sums = probs.sum(dim=-1)
    print(
        f"SC103: each query's weights should sum to 1, but row sums range "
        f"{row_sums.min().item():.2f}..{row_sums.max().item():.2f} (softmax ran over the query dim)."
    )
