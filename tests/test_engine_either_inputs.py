"""Hugging Face's either-input idiom: ``input_shape`` is ``input_ids.size()`` on one path and
``inputs_embeds.size()[:-1]`` on the other, then ``batch_size, seq_length = input_shape``. Each
input had those sizes on its own path (and was None on the other), so each is refined: the ids to
``(batch_size, seq_length)``, the embeddings to ``(batch_size, seq_length, _)``."""

from __future__ import annotations

from engine_snippets import findings, standalone_shapes

MODEL = '''
import torch
import torch.nn.functional as F
from torch import nn


class Model(nn.Module):
    def __init__(self, vocab: int = 100, hidden: int = 16):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lm_head = nn.Linear(hidden, vocab)

    def forward(self, input_ids=None, inputs_embeds: torch.Tensor | None = None, labels=None):
        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("one or the other")
        elif input_ids is not None:
            input_shape = input_ids.size()
        elif inputs_embeds is not None:
            input_shape = inputs_embeds.size()[:-1]
        else:
            raise ValueError("one of them")
        batch_size, seq_length = input_shape
        ids = input_ids
        embeds = inputs_embeds
        if inputs_embeds is None:
            inputs_embeds = self.embed(input_ids)
        logits = self.lm_head(inputs_embeds)
        loss = F.cross_entropy({logits}, labels.view(-1))
        return loss, logits
'''


def test_each_input_gets_the_sizes_of_its_own_path() -> None:
    source = MODEL.format(logits="logits.view(-1, logits.size(-1))")
    assert standalone_shapes(source, "Model.forward", "ids") == ["(batch_size, seq_length)"]
    embeds = standalone_shapes(source, "Model.forward", "embeds")
    assert len(embeds) == 1 and embeds[0].startswith("(batch_size, seq_length, ")
    assert standalone_shapes(source, "Model.forward", "logits") == ["(batch_size, seq_length, 100)"]


def test_per_token_logits_given_unflattened_are_found_and_flattened_ones_are_clean() -> None:
    line = next(number for number, text in enumerate(MODEL.splitlines(), 1) if "F.cross_entropy" in text)
    assert ("SC602", line) in findings(MODEL.format(logits="logits"))
    assert findings(MODEL.format(logits="logits.view(-1, logits.size(-1))")) == []


def test_inputs_that_are_not_optional_parameters_are_not_refined() -> None:
    """Two tensors both given (no None default): on the path that read ``a``'s sizes, ``b`` may have
    any shape, so neither is refined; the sizes are still named."""
    source = '''
    import torch


    def f(a: torch.Tensor, b: torch.Tensor, flag: bool):
        if flag:
            shape = a.size()
        else:
            shape = b.size()[:-1]
        n, m = shape
        x = a
        y = b
        z = torch.zeros(n, m)
    '''
    assert standalone_shapes(source, "f", "x") == []
    assert standalone_shapes(source, "f", "y") == []
    assert standalone_shapes(source, "f", "z") == ["(n, m)"]


def test_three_inputs_each_get_their_own_path_and_too_many_or_known_sizes_get_none() -> None:
    """Sizes joined over three paths keep each path's; past four paths, or where one path's sizes
    are known or had sizes appended, the join names nothing (as before the idiom was learnt)."""
    source = '''
    import torch


    def three(ids=None, embeds=None, grid=None):
        if ids is not None:
            shape = ids.size()
        elif embeds is not None:
            shape = embeds.size()[:-1]
        else:
            shape = grid.size()[:-2]
        b, t = shape
        a1 = ids
        a2 = embeds
        a3 = grid


    def five(a=None, b=None, c=None, d=None, e=None):
        if a is not None:
            shape = a.size()
        elif b is not None:
            shape = b.size()[:-1]
        elif c is not None:
            shape = c.size()[:-2]
        elif d is not None:
            shape = d.size()[:-3]
        else:
            shape = e.size()[:-4]
        n, m = shape
        first = a


    def known(ids=None):
        x = torch.zeros(2, 3)
        if ids is not None:
            shape = ids.size()
        else:
            shape = x.size()
        n, m = shape
        k1 = ids


    def appended(ids=None, embeds=None):
        if ids is not None:
            shape = ids.size()
        else:
            shape = embeds.size()[:-1] + (4,)
        n, m = shape
        k2 = ids
    '''
    assert standalone_shapes(source, "three", "a1") == ["(b, t)"]
    assert [shape.startswith("(b, t, ") for shape in standalone_shapes(source, "three", "a2")] == [True]
    assert [shape.startswith("(b, t, ") and shape.count(",") == 3 for shape in standalone_shapes(source, "three", "a3")] == [True]
    assert standalone_shapes(source, "five", "first") == []
    assert standalone_shapes(source, "known", "k1") == []
    assert standalone_shapes(source, "appended", "k2") == []


def test_the_same_input_read_on_both_paths_is_refined_whatever_its_default() -> None:
    source = '''
    import torch


    def f(x: torch.Tensor, flag: bool):
        if flag:
            shape = x.size()
        else:
            shape = x.size()
        n, m = shape
        y = x
    '''
    assert standalone_shapes(source, "f", "y") == ["(n, m)"]


def test_sizes_of_either_input_read_otherwise_than_unpacked_stay_unknown() -> None:
    """OpenAI GPT's ``position_ids = self.position_ids[None, : input_shape[-1]]``: the sizes of one
    input or the other read by index are not one size of either (the table is cut to the sequence
    whichever input came), so nothing is concluded from them: no SC302 on the sum."""
    source = '''
    import torch
    from torch import nn


    class Model(nn.Module):
        def __init__(self, vocab: int = 100, n_positions: int = 512, n_embd: int = 16):
            super().__init__()
            self.tokens_embed = nn.Embedding(vocab, n_embd)
            self.positions_embed = nn.Embedding(n_positions, n_embd)
            self.position_ids = nn.Buffer(torch.arange(n_positions), persistent=False)

        def forward(
            self,
            input_ids: torch.Tensor | None = None,
            position_ids: torch.Tensor | None = None,
            inputs_embeds: torch.Tensor | None = None,
        ):
            if input_ids is not None and inputs_embeds is not None:
                raise ValueError("one or the other")
            elif input_ids is not None:
                input_shape = input_ids.size()
                input_ids = input_ids.view(-1, input_shape[-1])
            elif inputs_embeds is not None:
                input_shape = inputs_embeds.size()[:-1]
            else:
                raise ValueError("one of them")
            if position_ids is None:
                position_ids = self.position_ids[None, : input_shape[-1]]
            if inputs_embeds is None:
                inputs_embeds = self.tokens_embed(input_ids)
            position_embeds = self.positions_embed(position_ids)
            hidden_states = inputs_embeds + position_embeds
            output_shape = input_shape + (hidden_states.size(-1),)
            return hidden_states.view(*output_shape)
    '''
    assert findings(source) == []


PROCESSOR = '''
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 8):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)

    def forward(self, hidden_states: torch.Tensor, {context}, cross=None):
        batch_size, sequence_length, _ = (
            hidden_states.shape if {test} else encoder_hidden_states.shape
        )
        context = encoder_hidden_states
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        key = self.to_k(encoder_hidden_states)
        return key
'''


def test_sizes_read_off_the_context_on_its_own_path_refine_the_context() -> None:
    """diffusers' ``batch_size, sequence_length, _ = (hidden_states.shape if encoder_hidden_states is
    None else encoder_hidden_states.shape)``: the context (a parameter defaulting to None) is 3-D
    where it is given, so the keys projected from it are too. A context without a None default is
    not refined where the test cannot be decided (it may be given on the path that read the hidden
    states)."""
    optional = PROCESSOR.format(context="encoder_hidden_states: torch.Tensor | None = None", test="encoder_hidden_states is None")
    context = standalone_shapes(optional, "Attention.forward", "context")
    assert len(context) == 1 and context[0].startswith("(batch_size, sequence_length, ")
    assert standalone_shapes(optional, "Attention.forward", "key") == ["(batch_size, sequence_length, 64)"]
    required = PROCESSOR.format(context="encoder_hidden_states: torch.Tensor", test="cross")
    assert standalone_shapes(required, "Attention.forward", "context") == []


def test_either_sizes_unpacked_at_module_level_are_named_without_a_crash() -> None:
    """At module level the run has no function whose parameters could default to None: the sizes
    are named, nothing is refined, and the file is checked (an internal error before)."""
    source = '''
    import torch

    x = torch.load("a.pt")
    y = torch.load("b.pt")
    cond = torch.load("c.pt")
    input_shape = x.size() if cond else y.size()[:-1]
    batch_size, seq_length = input_shape
    shape = x.shape if cond else y.shape
    b, t, d = shape
    '''
    assert findings(source) == []
