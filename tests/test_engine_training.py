"""The training-loop facts the engine records (SC601-SC603): modes along paths and loops, gradient
switches, training steps and evaluations, and token windows with their offsets."""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain import modes
from shapecheck.engine.domain.tags import SequenceOriginTag
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.facts.training import (
    evaluation_calls,
    loss_calls,
    mode_dependent_layer,
    training_calls,
)
from shapecheck.engine.symbolic.dims import Dim, Truth, equal

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vocab=20, d=8, p=0.1):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.drop = nn.Dropout(p)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.drop(self.emb(ids)))
"""


def facts_of(script: str) -> tuple[cst.Module, FileFacts]:
    source = MODEL + textwrap.dedent(script)
    module = cst.parse_module(source)
    return module, analyze(module, source, "script.py")


def modes_at(module: cst.Module, facts: FileFacts, text: str) -> list[set[str]]:
    return [modes.kinds(call.modes) for call in facts.model_calls if module.code_for_node(call.node) == text]


def test_eval_at_the_end_of_an_iteration_reaches_the_next_training_step() -> None:
    module, facts = facts_of(
        """
        model = Net()
        for step in range(10):
            loss = F.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
            loss.backward()
            if step % 5 == 0:
                model.eval()
        """
    )
    assert modes_at(module, facts, "model(ids)") == [{"train", "eval"}]
    assert [module.code_for_node(call.node) for call in training_calls(facts)] == ["model(ids)"]


def test_train_at_the_top_of_the_loop_resets_the_mode() -> None:
    module, facts = facts_of(
        """
        model = Net()
        for step in range(10):
            model.train()
            loss = F.cross_entropy(model(ids).flatten(0, 1), ids.flatten())
            loss.backward()
            model.eval()
        """
    )
    assert modes_at(module, facts, "model(ids)") == [{"train"}]


def test_helpers_carry_modes_and_no_grad_back_and_forth() -> None:
    module, facts = facts_of(
        """
        @torch.no_grad()
        def evaluate(net, batch):
            net.eval()
            return net(batch)

        def run():
            model = Net()
            for epoch in range(3):
                out = model(ids)
                out.sum().backward()
                evaluate(model, ids)
        """
    )
    evaluations = evaluation_calls(facts)
    assert [module.code_for_node(call.node) for call in evaluations] == ["net(batch)"]
    assert modes.kinds(evaluations[0].modes) == {"eval"}
    assert modes_at(module, facts, "model(ids)") == [{"train", "eval"}]


def test_finally_applies_to_returns_and_a_variable_mode_is_unknown() -> None:
    module, facts = facts_of(
        """
        def evaluate(net, batch):
            was_training = net.training
            net.eval()
            try:
                with torch.no_grad():
                    return net(batch)
            finally:
                net.train(was_training)

        def run():
            model = Net()
            for step in range(3):
                evaluate(model, ids)
                model(ids).sum().backward()
        """
    )
    assert modes_at(module, facts, "model(ids)") == [{"unknown"}]  # never "eval": finally ran


def test_submodules_passed_to_a_model_are_not_models_of_their_own() -> None:
    module, facts = facts_of(
        """
        def run(x):
            body = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
            model = nn.Sequential(body, nn.Linear(4, 2))
            model(x).sum().backward()
        """
    )
    assert [module.code_for_node(call.node) for call in facts.model_calls] == ["model(x)"]
    assert mode_dependent_layer(facts.model_calls[0].model) == "nn.BatchNorm1d"


def test_dropout_zero_is_not_mode_dependent() -> None:
    module, facts = facts_of("model = Net(p=0.0)\nmodel(ids)\n")
    assert mode_dependent_layer(facts.model_calls[0].model) is None


def _origins(facts: FileFacts) -> list[tuple[SequenceOriginTag | None, SequenceOriginTag | None]]:
    return [(loss.logits.tag(SequenceOriginTag), loss.target.tag(SequenceOriginTag)) for loss in loss_calls(facts)]


def test_windows_of_one_sequence_differ_by_their_shift() -> None:
    module, facts = facts_of(
        """
        data = torch.randint(0, 20, (1000,))
        model = Net()
        ix = torch.randint(0, 900, (4,))
        x = torch.stack([data[i : i + 16] for i in ix])
        y = torch.stack([data[i + 1 : i + 17] for i in ix])
        loss = F.cross_entropy(model(x).view(-1, 20), y.view(-1))
        """
    )
    [(logits, targets)] = _origins(facts)
    assert logits is not None and targets is not None and logits.source is targets.source
    assert equal(targets.offset - logits.offset, Dim.const(1)) is Truth.TRUE


def test_slicing_logits_and_ids_moves_the_offsets() -> None:
    module, facts = facts_of(
        """
        model = Net()
        ids = torch.randint(0, 20, (4, 17))
        logits = model(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, 20), ids[:, 1:].reshape(-1))
        """
    )
    [(logits, targets)] = _origins(facts)
    assert (logits.offset, targets.offset) == (Dim.const(0), Dim.const(1))
    assert logits.source is targets.source


def test_a_written_tensor_is_no_longer_the_same_tokens() -> None:
    module, facts = facts_of(
        """
        model = Net()
        ids = torch.randint(0, 20, (4, 17))
        masked = ids.clone()
        masked[ids > 10] = 3
        loss = F.cross_entropy(model(masked).flatten(0, 1), ids.flatten())
        """
    )
    [(logits, targets)] = _origins(facts)
    assert logits is None or targets is None or logits.source is not targets.source


def test_a_model_built_on_one_path_only_may_be_in_any_mode_after_the_branches() -> None:
    """Branches join by union; a model one path never built is unknown on that path (whichever
    branch built it, the body or the else)."""
    module, facts = facts_of(
        """
        def run(ids, flag):
            model = Net()
            if flag:
                first = Net()
                first.eval()
            else:
                second = Net()
                model.eval()
            model(ids)
            first(ids)
            second(ids)
        """
    )
    assert modes_at(module, facts, "model(ids)") == [{"train", "eval"}]
    assert modes_at(module, facts, "first(ids)") == [{"eval", "unknown"}]
    assert modes_at(module, facts, "second(ids)") == [{"train", "unknown"}]
