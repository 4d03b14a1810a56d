"""Tuples whose first items are known (``OpenTuple``): Hugging Face's ``return_dict`` idiom.

A base model returns ``(sequence_output, pooled_output) + encoder_outputs[1:]`` on one path and a
record of a class out of view (``BaseModelOutput(...)``, imported) on the other; the encoder returns
``tuple(v for v in [hidden_states, all_hidden_states] if v is not None)``. The head reads
``outputs[0]``. The engine keeps the leading items through all of it, so the head's logits keep
their per-token shape and a loss given them unflattened is found (SC602)."""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import findings
from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import OpenTuple, Repeated
from shapecheck.engine.domain.values import UNKNOWN, TensorValue, TupleValue

BASE = '''
import torch
from torch import nn
from torch.nn import CrossEntropyLoss
from .modeling_outputs import BaseModelOutput, MaskedLMOutput


class Config:
    vocab_size = 1000
    hidden_size = 64
    num_layers = 2
    num_labels = 3


class Layer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return self.dense(hidden_states)


class Encoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([Layer(config) for _ in range(config.num_layers)])

    def forward(self, hidden_states, output_hidden_states=False, return_dict=True):
        all_hidden_states = () if output_hidden_states else None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            hidden_states = layer(hidden_states)
        if not return_dict:
            return tuple(v for v in [hidden_states, all_hidden_states] if v is not None)
        return BaseModelOutput(last_hidden_state=hidden_states, hidden_states=all_hidden_states)


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.encoder = Encoder(config)
        self.pooler = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, input_ids, return_dict=None):
        batch_size, seq_length = input_ids.shape
        embedding_output = self.embeddings(input_ids)
        encoder_outputs = self.encoder(embedding_output, return_dict=return_dict)
        sequence_output = encoder_outputs[0]
        pooled_output = self.pooler(sequence_output[:, 0])
        if not return_dict:
            return (sequence_output, pooled_output) + encoder_outputs[1:]
        return BaseModelOutput(last_hidden_state=sequence_output, pooler_output=pooled_output)
'''

MASKED_LM = '''

class ForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)
        self.cls = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, input_ids, labels=None, return_dict=None):
        outputs = self.model(input_ids, return_dict=return_dict)
        sequence_output = outputs[0]
        prediction_scores = self.cls(sequence_output)
        loss = None
        if labels is not None:
            loss_fct = CrossEntropyLoss()
            loss = loss_fct({scores}, labels.view(-1))
        return MaskedLMOutput(loss=loss, logits=prediction_scores)
'''

SEQUENCE_CLASSIFICATION = '''

class ForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.model = Model(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, input_ids, labels=None, return_dict=None):
        outputs = self.model(input_ids, return_dict=return_dict)
        pooled_output = outputs[1]
        logits = self.classifier(pooled_output)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels.view(-1))
        return logits, loss
'''


def _head_line(source: str) -> int:
    return next(number for number, line in enumerate(textwrap.dedent(source).splitlines(), 1) if "loss_fct(" in line)


def test_unflattened_per_token_logits_through_return_dict_tuples_are_found() -> None:
    source = BASE + MASKED_LM.format(scores="prediction_scores")
    assert ("SC602", _head_line(source)) in findings(source)


def test_flattened_logits_and_a_pooled_classification_head_stay_clean() -> None:
    flattened = BASE + MASKED_LM.format(scores="prediction_scores.view(-1, prediction_scores.size(-1))")
    assert findings(flattened) == []
    assert findings(BASE + SEQUENCE_CLASSIFICATION) == []


def _values(source: str, qualname: str) -> dict[str, object]:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "snippet.py")
    run = next(run for run in facts.runs if run.qualname == qualname and not run.inlined)
    return {assignment.name: assignment.value for assignment in run.assignments}


SEQUENCES = '''
import torch
from somewhere import Record, fetch


def f(x: "torch.Tensor", y: "torch.Tensor", flag, keep, w):
    x = torch.zeros(2, 3)
    y = torch.zeros(4)
    both = (x,) + (y,)
    extended = (x, y) + fetch()
    after = extended[1:]
    first = extended[0]
    decided = x if extended is not None else y
    second = after[0]
    last = extended[-1]
    window = extended[:2]
    beyond = extended[:3]
    from_end = extended[-2:]
    not_a_sequence = (x,) + 2
    z = torch.relu(keep)
    tuple_or_tensor = (x, y) if flag else z
    after_unseen = torch.relu(fetch(x))
    tuple_or_computed = (x, y) if flag else after_unseen
    tuple_or_sized = (x, y) if flag else keep + torch.zeros(7, 3, dtype=w.dtype)
    tuple_or_typed = (x, y) if flag else keep + w.float()
    kept = [v for v in [x, None, y] if v is not None]
    open_kept = tuple(v for v in [x, keep, y] if v is not None)
    undecided = [v for v in [x, y] if keep(v)]
    if flag:
        out = (x, y)
    else:
        out = Record(first=x, second=y)
    out_first = out[0]
    lengths = (x,) if flag else (x, y)
    lengths_first = lengths[0]
'''


def test_tuples_whose_first_items_are_known_answer_for_those_items_only() -> None:
    values = _values(SEQUENCES, "f")
    x, y = values["x"], values["y"]
    assert isinstance(x, TensorValue) and isinstance(y, TensorValue)
    assert values["both"] == TupleValue((x, y))
    assert values["extended"] == OpenTuple((x, y))
    assert values["after"] == OpenTuple((y,))
    assert values["first"] is x and values["second"] is y
    assert values["decided"] is x  # an open tuple is not None
    assert values["last"] is UNKNOWN  # counted from the open end
    assert values["window"] == TupleValue((x, y))
    assert values["beyond"] is UNKNOWN  # past the known items
    assert values["from_end"] is UNKNOWN
    assert values["not_a_sequence"] is UNKNOWN
    # A tensor the code computed is no record out of view: a tuple or it is nothing known.
    z = values["z"]
    assert isinstance(z, TensorValue) and z.shape is None and z.dtype is None and z.node is not None
    assert values["tuple_or_tensor"] is UNKNOWN
    assert values["tuple_or_computed"] is UNKNOWN  # computed from what an unseen call gave: still a tensor
    assert values["tuple_or_sized"] is UNKNOWN and values["tuple_or_typed"] is UNKNOWN  # sums with a parameter
    assert values["kept"] == TupleValue((x, y))  # every filter decided
    assert values["open_kept"] == OpenTuple((x,))  # the second item may or may not be kept
    assert isinstance(values["undecided"], Repeated)  # nothing decided: any number of like items
    assert values["out_first"] is x  # the tuple's path says what the record's first item is
    assert isinstance(values["lengths"], OpenTuple) and values["lengths_first"] is x
