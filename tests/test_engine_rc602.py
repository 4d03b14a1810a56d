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


# --- the engine: slices of a tensor of unknown rank, and SC602 on logits of a least rank -------------

import textwrap  # noqa: E402

import libcst as cst  # noqa: E402

from shapecheck.engine import analyze  # noqa: E402
from shapecheck.engine.domain.values import TensorValue  # noqa: E402
from engine_snippets import findings, line_of  # noqa: E402


def shapes(source: str, function: str) -> dict[str, str | None]:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "snippet.py")
    runs = [run for run in facts.runs if run.qualname == function and not run.inlined]
    assert runs, f"no run of {function}"
    return {a.name: None if a.value.shape is None else str(a.value.shape) for a in runs[0].assignments if isinstance(a.value, TensorValue)}


SLICES = '''
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, width=64, classes=11):
        super().__init__()
        self.out = nn.Linear(width, classes)

    def forward(self, features):
        scores = self.out(self.body(features))
        shifted = scores[:, :-1, :]
        strided = scores[:, :, ::2]
        pair = scores[:, 1:]
        first = scores[0]
        wide = scores[:, :, :, :]
        grid = scores.unflatten(-1, (1, 11))[:, :-1, :]
        return shifted, strided, pair, first, wide, grid
'''


def test_slices_of_a_tensor_of_unknown_rank_prove_its_least_rank() -> None:
    """``(*, 11)`` indexed with three slices has at least three dims: ``(*, _, _, 11)``. A slice that
    may land on the known last dim and cuts it (``::2`` there, ``1:`` when the rank is 2) leaves it
    unknown; an integer index still gives no shape; four slices prove four dims."""
    got = shapes(SLICES, "Head.forward")
    assert got["scores"] == "(*, 11)"
    assert got["shifted"] == "(*, _, _, 11)"
    assert got["strided"] == "(*, _, _, _)"
    assert got["pair"] == "(*, _, _)"
    assert got["first"] is None
    assert got["wide"] == "(*, _, _, _, 11)"
    assert got["grid"] == "(*, _, _, 11)"  # the 1 may be axis 1, cut by ``:-1``


SHIFTED_LM = '''
import torch
import torch.nn.functional as F
from torch import nn


class CausalHead(nn.Module):
    def __init__(self, hidden=48, vocab=300):
        super().__init__()
        self.vocab = vocab
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.loss_fn = nn.CrossEntropyLoss(reduction="none")

    def forward(self, input_ids, labels):
        hidden_states = self.backbone(input_ids)[0]
        prediction_scores = self.lm_head(hidden_states)
        shifted_scores = prediction_scores[:, :-1, :].contiguous()
        labels = labels[:, 1:].contiguous()
        loss = self.loss_fn(shifted_scores, labels.view(-1))
        return loss, prediction_scores
'''


def test_shifted_scores_of_unknown_leading_dims_given_flattened_targets_are_sc602() -> None:
    """Per-token scores out of an opaque backbone are ``(*, vocab)``; sliced ``[:, :-1, :]`` they have
    at least three dims, and flattened ``(N,)`` targets cannot fit them."""
    assert findings(SHIFTED_LM) == [("SC602", line_of(SHIFTED_LM, "loss = self.loss_fn("))]


def test_shifted_scores_flattened_before_the_loss_stay_clean() -> None:
    fixed = SHIFTED_LM.replace("self.loss_fn(shifted_scores,", "self.loss_fn(shifted_scores.view(-1, self.vocab),")
    assert findings(fixed) == []
    transposed = SHIFTED_LM.replace("labels.view(-1))", "labels)").replace("(shifted_scores,", "(shifted_scores.transpose(1, 2),")
    assert findings(transposed) == []


PAIR_SCORES = '''
import torch
import torch.nn.functional as F
from torch import nn

classifier = nn.Linear(128, 9)


def span_loss(encoder, tokens, gold):
    logits = classifier(encoder(tokens))
    log_probs = F.log_softmax(logits[:, 1:], dim=-1)
    return F.nll_loss(log_probs, gold.reshape(-1))
'''


def test_two_slices_prove_only_two_dims_and_stay_clean() -> None:
    """``logits[:, 1:]`` may be ``(N, C)`` cut on its classes: two dims at least, which ``(N,)``
    targets fit. Nothing is reported."""
    assert findings(PAIR_SCORES) == []


def functional(classes: int) -> str:
    return f'''
import torch
import torch.nn.functional as F
from torch import nn

proj = nn.Linear(32, {classes})


def step(batch, y):
    out = proj(batch)
    out = out[:, :, :]
    return F.cross_entropy(out, y.reshape(-1))
'''


def test_functional_cross_entropy_on_logits_proved_3d_by_slices() -> None:
    source = functional(7)
    assert findings(source) == [("SC602", line_of(source, "return F.cross_entropy"))]
    assert findings(source.replace("F.cross_entropy(out,", "F.cross_entropy(out.flatten(0, 1),")) == []
