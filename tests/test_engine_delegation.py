"""Models that delegate down a chain of modules with ``**kwargs`` (Hugging Face's model -> encoder ->
layer -> attention -> attention function), and optional inputs passed on down that chain.

The root model's run follows the whole chain, so the token embeddings it builds reach the scores;
an input that may be None (``input_ids: Tensor | None = None``, read standalone) stays "maybe None"
in every callee it is passed to, so a guard such as ``if input_ids is not None and inputs_embeds
is not None: raise`` does not end the run. Also: windows cut from one parameter, names bound on one
path, an unseen callee's tuple, and attention processors (plain classes whose ``__call__`` takes the
attention module by annotation). Written from scratch in the Hugging Face, x-transformers and
diffusers styles.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import SequenceOriginTag
from shapecheck.engine.domain.values import TokenEmbeddingTag
from shapecheck.linter import lint_source

MODEL = """
import torch
from torch import nn


def attention_function(module, query, key, value, mask, scaling, **kwargs):
    weights = torch.matmul(query, key.transpose(-1, -2)) * scaling
    if mask is not None:
        weights = weights + mask
    weights = weights.softmax(dim=-1)
    return torch.matmul(weights, value)


class SelfAttention(nn.Module):
    def __init__(self, width=64, heads=4):
        super().__init__()
        self.heads, self.head_size = heads, width // heads
        self.scaling = self.head_size ** -0.5
        self.query = nn.Linear(width, width)
        self.key = nn.Linear(width, width)
        self.value = nn.Linear(width, width)

    def forward(self, hidden, mask=None, **kwargs):
        batch, length, _ = hidden.shape
        split = lambda t: t.view(batch, length, self.heads, self.head_size).transpose(1, 2)
        q, k, v = split(self.query(hidden)), split(self.key(hidden)), split(self.value(hidden))
        out = attention_function(self, q, k, v, mask, scaling=self.scaling, **kwargs)
        return out.transpose(1, 2).reshape(batch, length, -1)


class Layer(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.attention = SelfAttention(width)
        self.norm = nn.LayerNorm(width)

    def forward(self, hidden, mask=None, **kwargs):
        return self.norm(hidden + self.attention(hidden, mask=mask, **kwargs))


class Encoder(nn.Module):
    def __init__(self, width=64, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([Layer(width) for _ in range(depth)])

    def forward(self, hidden, mask=None, **kwargs):
        for layer in self.layers:
            hidden = layer(hidden, mask, **kwargs)
        return hidden


class Embeddings(nn.Module):
    def __init__(self, vocab=1000, width=64, max_len=512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(max_len, width)

    def forward(self, input_ids=None, inputs_embeds=None):
        if inputs_embeds is None:
            inputs_embeds = self.tokens(input_ids)
        length = inputs_embeds.shape[1]
        positions = torch.arange(length, device=inputs_embeds.device)
        return inputs_embeds + self.positions(positions)


class Model(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.embeddings = Embeddings(width=width)
        self.encoder = Encoder(width)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        inputs_embeds: torch.Tensor | None = None,
        padding_mask: torch.Tensor | None = None,
        **kwargs,
    ):
        if input_ids is not None and inputs_embeds is not None:
            raise ValueError("give input_ids or inputs_embeds, not both")
        hidden = self.embeddings(input_ids=input_ids, inputs_embeds=inputs_embeds)
        mask = None
        if padding_mask is not None:
            mask = (1.0 - padding_mask[:, None, None, :].float()) * -10000.0
        return self.encoder(hidden, mask, **kwargs)


class Classifier(nn.Module):
    def __init__(self, width=64, labels=3):
        super().__init__()
        self.model = Model(width)
        self.head = nn.Linear(width, labels)

    def forward(self, input_ids: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None, **kwargs):
        hidden = self.model(input_ids, inputs_embeds=inputs_embeds, **kwargs)
        return self.head(hidden[:, 0])
"""


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "delegation.py")


def codes(source: str) -> list[str]:
    result = lint_source(textwrap.dedent(source), "delegation.py")
    assert result.error is None
    return [d.code for d in result.diagnostics]


def test_the_root_model_follows_kwargs_delegation_down_to_the_scores():
    facts = facts_of(MODEL)
    scores = [event.tensor(0, "input") for event in facts.events_of("softmax")]
    # The scores of a run that started at the token embeddings: from the root's own run (the
    # chain Classifier -> Model -> Encoder -> Layer -> SelfAttention -> attention_function).
    assert any(score is not None and score.has(TokenEmbeddingTag) for score in scores)


def test_a_maybe_none_input_passed_on_keeps_both_paths_of_its_guard():
    # Without the token embeddings, the root's run ends at the guard (both inputs "not None").
    without_raise = MODEL.replace(
        '            raise ValueError("give input_ids or inputs_embeds, not both")\n', "            pass\n"
    )
    for source in (MODEL, without_raise):
        facts = facts_of(source)
        from_root = [
            event
            for event in facts.events_of("module.Embedding")
            if event.run is not None and any(run.qualname == "Classifier.forward" for run in event.run.chain())
        ]
        assert from_root, "the classifier's run never reached the embeddings"


def test_a_missing_positional_embedding_is_found_through_the_chain_and_the_fixed_model_is_clean():
    assert codes(MODEL) == []
    no_positions = MODEL.replace("return inputs_embeds + self.positions(positions)", "return inputs_embeds")
    assert codes(no_positions) == ["SC303"]


def test_an_argument_left_out_is_its_none_default_even_with_a_tensor_annotation():
    source = """
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.proj = nn.Linear(d, d)

        def forward(self, x: torch.Tensor, bias: torch.Tensor | None = None):
            if bias is None:
                return self.proj(x)
            return self.proj(x) + bias.transpose(0, 1)

    class Net(nn.Module):
        def __init__(self, d=32):
            super().__init__()
            self.block = Block(d)

        def forward(self, x: torch.Tensor):
            return self.block(x)
    """
    facts = facts_of(source)
    inlined = [run for run in facts.runs if run.qualname == "Block.forward" and run.inlined]
    assert inlined
    # The caller left ``bias`` out: the inlined run takes the ``bias is None`` path only.
    transposes = [event for event in facts.events_of("transpose") if event.run is not None and event.run.inlined]
    assert transposes == []


# --- a wrapper that cuts the input and the targets from one parameter -----------------------------

WRAPPER = """
import torch
import torch.nn.functional as F
from torch import nn
from einops import rearrange


class NextTokenWrapper(nn.Module):
    def __init__(self, net, ignore_index=-100):
        super().__init__()
        self.net = net
        self.ignore_index = ignore_index

    def forward(self, tokens, **kwargs):
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        logits = self.net(inputs, **kwargs)
        return F.cross_entropy(rearrange(logits, "b n c -> b c n"), targets, ignore_index=self.ignore_index)
"""


def test_windows_cut_from_one_parameter_are_windows_of_one_sequence():
    assert codes(WRAPPER) == []
    unshifted = WRAPPER.replace("tokens[:, :-1], tokens[:, 1:]", "tokens[:, :-1], tokens[:, :-1]")
    assert codes(unshifted) == ["SC603"]


def test_a_name_bound_on_one_path_only_keeps_its_value_after_the_branch():
    source = WRAPPER.replace(
        '        inputs, targets = tokens[:, :-1], tokens[:, 1:]\n',
        '        inputs = tokens\n        if kwargs.get("loss"):\n            inputs, targets = tokens[:, :-1], tokens[:, 1:]\n',
    )
    assert codes(source) == []
    # ``targets`` is unbound on the path that skips the ``if``: the loss reads the window.
    assert codes(source.replace("tokens[:, :-1], tokens[:, 1:]", "tokens[:, :-1], tokens[:, :-1]")) == ["SC603"]


def test_the_items_of_an_unseen_callees_tuple_are_computed_from_its_inputs():
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class LM(nn.Module):
        def __init__(self, layers, vocab=100, width=32):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.layers = layers
            self.logits = nn.Linear(width, vocab)

        def forward(self, ids):
            x, labels = ids[:, :-1], ids[:, 1:]
            h = self.embed(x)
            h, cache = self.layers(h)
            return F.cross_entropy(self.logits(h).transpose(1, 2), labels)
    """
    facts = facts_of(source)
    cross_entropy = facts.events_of("cross_entropy")
    assert cross_entropy and cross_entropy[0].tensor(0, "input").has(SequenceOriginTag)
    assert codes(source) == []
    assert codes(source.replace("ids[:, :-1], ids[:, 1:]", "ids[:, :-1], ids[:, :-1]")) == ["SC603"]


# --- an attention processor: a plain class whose __call__ takes the attention module ------------

PROCESSOR = """
import math
import torch
from torch import nn


class JointAttention(nn.Module):
    def __init__(self, query_dim, heads=8, dim_head=64, processor=None):
        super().__init__()
        self.heads = heads
        self.inner_dim = heads * dim_head
        self.to_q = nn.Linear(query_dim, self.inner_dim)
        self.to_k = nn.Linear(query_dim, self.inner_dim)
        self.to_v = nn.Linear(query_dim, self.inner_dim)
        self.to_out = nn.Linear(self.inner_dim, query_dim)
        self.processor = processor if processor is not None else JointAttnProcessor()

    def forward(self, hidden_states, **kwargs):
        return self.processor(self, hidden_states, **kwargs)


class JointAttnProcessor:
    def __call__(self, attn: "JointAttention", hidden_states: torch.Tensor, mask: torch.Tensor | None = None):
        batch_size = hidden_states.shape[0]
        head_dim = attn.inner_dim // attn.heads
        query = attn.to_q(hidden_states).view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        key = attn.to_k(hidden_states).view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        value = attn.to_v(hidden_states).view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)
        scores = query @ key.transpose(-2, -1) / math.sqrt(head_dim)
        out = scores.softmax(dim=-1) @ value
        return attn.to_out(out.transpose(1, 2).reshape(batch_size, -1, attn.heads * head_dim))
"""


def test_a_processor_runs_with_the_standalone_instance_of_its_annotated_module_class():
    facts = facts_of(PROCESSOR)
    runs = [run for run in facts.runs if run.qualname == "JointAttnProcessor.__call__" and not run.inlined]
    assert runs
    scores = [event.tensor(0, "input") for event in facts.events_of("softmax")]
    # (batch_size, heads=8, _, _): the head count is the annotated class's constructor default.
    assert any(score.shape is not None and score.shape.dims[1].is_const and score.shape.dims[1].value == 8 for score in scores)
    assert codes(PROCESSOR) == []
    assert codes(PROCESSOR.replace(" / math.sqrt(head_dim)", "")) == ["SC101"]
    assert codes(PROCESSOR.replace("key.transpose(-2, -1)", "key.transpose(1, 2)")) == ["SC504"]


def test_methods_of_plain_classes_without_tensor_parameters_are_left_to_their_callers():
    source = PROCESSOR.replace(
        'attn: "JointAttention", hidden_states: torch.Tensor, mask: torch.Tensor | None = None', "attn, hidden_states, mask=None"
    )
    assert not [run for run in facts_of(source).runs if run.qualname == "JointAttnProcessor.__call__" and not run.inlined]


# --- rows of a fused weight ----------------------------------------------------------------------

FUSED_ROWS = """
import torch
import torch.nn.functional as F
from torch import nn

class FusedAttention(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.in_proj_weight = nn.Parameter(torch.randn(3 * dim, dim))

    def forward(self, query, key, value):
        d = self.in_proj_weight.shape[0] // 3
        q = F.linear(query, self.in_proj_weight[:d])
        k = F.linear(key, self.in_proj_weight[d : 2 * d])
        v = F.linear(value, self.in_proj_weight[2 * d :])
        return (q @ k.transpose(-2, -1) / 8.0).softmax(-1) @ v
"""


def test_slices_of_a_fused_weight_are_different_projections():
    assert codes(FUSED_ROWS) == []
    assert codes(FUSED_ROWS.replace("self.in_proj_weight[d : 2 * d]", "self.in_proj_weight[:d]")) == ["SC401"]


# --- ids from a callee the engine cannot see ------------------------------------------------------

VISION = """
import torch
from torch import nn
from helpers import nearest_position_ids


class VisionEmbeddings(nn.Module):
    def __init__(self, width=32, patch=4, image=32):
        super().__init__()
        self.patch_embedding = nn.Conv2d(3, width, patch, stride=patch)
        self.position_embedding = nn.Embedding((image // patch) ** 2, width)

    def forward(self, pixel_values: torch.Tensor, target_sizes: torch.Tensor | None = None):
        patches = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        pos_ids = nearest_position_ids(target_sizes, 8)
        pos_ids = pos_ids.to(self.position_embedding.weight.device)
        return patches + self.position_embedding(pos_ids)


class SelfAttention(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return (q @ k.transpose(-2, -1) / 32 ** 0.5).softmax(dim=-1) @ v


class VisionModel(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.embeddings = VisionEmbeddings(width)
        self.attention = SelfAttention(width)

    def forward(self, pixel_values: torch.Tensor):
        return self.attention(self.embeddings(pixel_values))
"""


def test_a_lookup_of_ids_from_an_unseen_callee_may_be_positional():
    # ``target_sizes`` is left out, so the helper gets no tensor: its ids may well be positions.
    assert codes(VISION) == []
