"""A model of the file called on tokens whose result the engine cannot follow (a call with ``*args``,
an inline refused for depth or for the allowance of imported code) is computed position by position
from those tokens, as an unseen layer's output is. The "maybe positions" mark every unseen call
leaves on its result does not make it a positional table (x-transformers' ``gpt_lejepa``: the
targets left unshifted were found alone and lost with imports followed, where the wrapper's
forward was entered and then cut short)."""

from __future__ import annotations

from engine_snippets import findings

MODEL = """import torch
import torch.nn.functional as F
from torch import nn

from helpers import mix


class Net(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 16):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.to_logits = nn.Linear(dim, vocab)

    def forward(self, x, return_embeddings=False):
        h = mix(self.emb(x))
        if return_embeddings:
            return h, None
        return self.to_logits(h), None


class LatentLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Net()

    def forward(self, x, *extra):
        inp, target = x, x[:, TARGET]
        inp = torch.where(inp == 0, 1, inp)
        embed, cache = self.net(inp, *extra)
        logits = self.net.to_logits(embed[:, :-1])
        return F.cross_entropy(logits.transpose(1, 2), target)
"""


def test_targets_not_shifted_against_a_model_result_cut_short_are_found() -> None:
    bad = MODEL.replace("TARGET", ":-1")
    line = next(number for number, text in enumerate(bad.splitlines(), 1) if "inp, target = x" in text)
    assert findings(bad) == [("SC603", line)]
    assert findings(MODEL.replace("TARGET", "1:")) == []
