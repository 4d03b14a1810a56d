import torch
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b h t _"], k: Float[Tensor, "b h s _"], v: Float[Tensor, "b h s _"]):
    scores = q @ k.transpose(-2, -1) / q.shape[-1]
    return scores.softmax(dim=-1) @ v
