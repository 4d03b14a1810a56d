"""SC602 measured on real code (rc602): the harness's ``drop_flatten`` plants the bug wherever a loss
module or ``F.cross_entropy`` gets flattened logits that are provably per token, and the engine knows
the rank of the logits of Hugging Face style heads."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

HEADS = '''import torch
from torch import nn
from torch.nn import CrossEntropyLoss
from transformers.modeling_outputs import SequenceClassifierOutput, TokenClassifierOutput, CausalLMOutput


class ForTokenTagging(nn.Module):
    def forward(self, input_ids, labels=None):
        hidden = self.encoder(input_ids)[0]
        tag_logits = self.classifier(hidden)
        loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            loss = loss_fct(tag_logits.view(-1, self.num_labels), labels.view(-1))
        return TokenClassifierOutput(loss=loss, logits=tag_logits)


class ForSentenceLabel(nn.Module):
    def forward(self, input_ids, labels=None):
        pooled = self.encoder(input_ids)[1]
        logits = self.classifier(pooled)
        loss_fct = CrossEntropyLoss()
        loss = loss_fct(logits.view(-1, self.num_labels), labels.view(-1))
        return SequenceClassifierOutput(loss=loss, logits=logits)


class Shifted(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = nn.CrossEntropyLoss(ignore_index=-100)

    def forward(self, states, targets):
        scores = self.head(states)
        shifted = scores[:, :-1, :].contiguous()
        return self.criterion(shifted.reshape(-1, shifted.size(-1)), targets[:, 1:].reshape(-1))


def unpacked(model, x, y):
    out = model(x)
    n, t, c = out.shape
    return torch.nn.functional.cross_entropy(out.flatten(0, 1), y.flatten())


def unproven(out, y):
    return torch.nn.functional.cross_entropy(out.view(-1, out.size(-1)), y.view(-1))


def rebound(model, x, y):
    out = model(x)
    _ = out[:, 0, :]
    out = out.mean(1)
    return nn.NLLLoss()(out.view(-1, 5), y.view(-1))


class Causal(nn.Module):
    def forward(self, ids, labels):
        logits = self.lm_head(self.body(ids))
        loss = self.loss_function(logits.view(-1, self.vocab), labels.view(-1))
        return CausalLMOutput(loss=loss, logits=logits)
'''


def test_drop_flatten_plants_only_where_the_logits_are_provably_per_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Token tagging (its logits documented per token), shifted scores indexed ``[:, :-1, :]`` and
    ``n, t, c = out.shape`` get the mutant; 2-D sentence logits (a no-op), logits of unknown rank, a
    name rebound to a reduction, and a call of something not bound to a loss module do not."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    mutation = importlib.import_module("mutation")
    path = tmp_path / "modeling_heads.py"
    path.write_text(HEADS)
    specs, _sites, broken = mutation.find_mutants(("c", str(path), "modeling_heads.py", ("SC602",), 10, 0))
    assert not broken
    lines = sorted(spec.line for spec in specs)
    source = HEADS.splitlines()
    planted = [source[line - 1].strip() for line in lines]
    assert planted == [
        "loss = loss_fct(tag_logits.view(-1, self.num_labels), labels.view(-1))",
        "return self.criterion(shifted.reshape(-1, shifted.size(-1)), targets[:, 1:].reshape(-1))",
        "return torch.nn.functional.cross_entropy(out.flatten(0, 1), y.flatten())",
    ]
    mutated = sorted(mutation.mutant_source(spec).splitlines()[spec.line - 1].strip() for spec in specs)
    assert "loss = loss_fct(tag_logits, labels.view(-1))" in mutated
    assert "return torch.nn.functional.cross_entropy(out, y.flatten())" in mutated
