import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


def attention(q: Float[Tensor, "b h t 16"], k: Float[Tensor, "b h s 16"], v: Float[Tensor, "b h s 16"], scaling):
    weights = torch.matmul(q, k.transpose(2, 3)) * scaling
    return torch.matmul(weights.softmax(dim=-1), v)


class Attention(nn.Module):
    def __init__(self, hidden_size=64, num_heads=4):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.scaling = self.head_dim ** -1
        self.qkv = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, hidden_states):
        b, t, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return attention(q, k, v, self.scaling)
