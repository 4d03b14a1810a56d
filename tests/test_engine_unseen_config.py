"""Layers sized from a configuration the engine does not see, and activations it cannot look into.

A Hugging Face MLP takes its sizes from a config class of another file
(``config.intermediate_size * config.moe_num_shared_experts``) and its activation from a table
(``ACT2FN[config.hidden_act]``). The product of two unseen attributes is a size where a layer
takes one; an unseen callable's result times a tensor is a tensor that broadcasts with it, so the
known trailing sizes of the other operand hold.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines, standalone_shapes

SHARED_EXPERTS_MLP = """
from torch import nn
from transformers.activations import ACT2FN
from .configuration_moe import MoeConfig


class SharedExpertsMLP(nn.Module):
    def __init__(self, config: MoeConfig):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size * config.num_shared_experts
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        gated = self.act_fn(self.gate_proj(x)) * self.up_proj(x)
        return self.down_proj(gated)
"""


def codes(source: str) -> list[tuple[str, str]]:
    return findings_on_lines(source, "modeling_moe.py")


def shapes_of(source: str, function: str, name: str) -> set[str]:
    return set(standalone_shapes(source, function, name, "modeling_moe.py"))


def test_a_product_of_unseen_attributes_sizes_a_layer():
    assert shapes_of(SHARED_EXPERTS_MLP, "SharedExpertsMLP.forward", "gated") == {
        "(*, config.intermediate_size*config.num_shared_experts)"
    }
    assert codes(SHARED_EXPERTS_MLP) == []


def test_a_down_projection_of_the_wrong_width_after_an_unseen_activation_is_found():
    bug = SHARED_EXPERTS_MLP.replace(
        "nn.Linear(self.intermediate_size, self.hidden_size", "nn.Linear(self.intermediate_size * 2, self.hidden_size"
    )
    assert codes(bug) == [("SC406", "self.down_proj = nn.Linear(self.intermediate_size * 2, self.hidden_size, bias=False)")]
    # A fraction of a size is no size: the layer's width stays unknown, and nothing is reported.
    halved = SHARED_EXPERTS_MLP.replace(
        "config.intermediate_size * config.num_shared_experts", "config.intermediate_size * 0.5"
    ).replace("nn.Linear(self.intermediate_size, self.hidden_size", "nn.Linear(self.intermediate_size * 2, self.hidden_size")
    assert codes(halved) == []


QK_NORM_ATTENTION = """
import torch
from torch import nn
from .configuration_x import XConfig


class XRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class XAttention(nn.Module):
    def __init__(self, config: XConfig):
        super().__init__()
        self.head_dim = 64
        self.q_proj = nn.Linear(config.hidden_size, 8 * self.head_dim)
        self.k_proj = nn.Linear(config.hidden_size, 8 * self.head_dim)
        self.v_proj = nn.Linear(config.hidden_size, 8 * self.head_dim)
        self.o_proj = nn.Linear(8 * self.head_dim, config.hidden_size)
        self.q_norm = XRMSNorm(self.head_dim, eps=config.rms_norm_eps)
        self.k_norm = XRMSNorm(self.head_dim, eps=config.rms_norm_eps)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, -1, self.head_dim)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, -1, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * self.head_dim**-0.5
        out = scores.softmax(dim=-1) @ v
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))
"""


def test_an_epsilon_from_an_unseen_config_is_a_number_and_a_norm_keeps_the_heads_rank():
    # ``eps=1e-6`` given ``config.rms_norm_eps``: a number the engine cannot read, not a tensor that
    # may add axes, so ``variance + eps`` and the normalised query keep (b, t, h, d).
    assert codes(QK_NORM_ATTENTION) == []
    merged_without_transpose = QK_NORM_ATTENTION.replace(
        "self.o_proj(out.transpose(1, 2).reshape(b, t, -1))", "self.o_proj(out.reshape(b, t, -1))"
    )
    assert codes(merged_without_transpose) == [("SC502", "return self.o_proj(out.reshape(b, t, -1))")]


def test_a_value_the_engine_cannot_see_added_to_attention_scores_keeps_their_rank():
    # BEiT: ``attn + rel_pos_bias`` with the bias a parameter of forward: a bias that fits the scores.
    source = QK_NORM_ATTENTION.replace("def forward(self, x):", "def forward(self, x, rel_pos_bias):").replace(
        "out = scores.softmax(dim=-1) @ v", "out = (scores + rel_pos_bias).softmax(dim=-1) @ v"
    )
    assert codes(source) == []
    merged_without_transpose = source.replace(
        "self.o_proj(out.transpose(1, 2).reshape(b, t, -1))", "self.o_proj(out.reshape(b, t, -1))"
    )
    assert codes(merged_without_transpose) == [("SC502", "return self.o_proj(out.reshape(b, t, -1))")]


FILLED_IN_EMBEDDINGS = """
from typing import Optional

import torch
from torch import nn


class XEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings)[None])

    def positions(self, length):
        return self.position_embeddings(self.position_ids[:, :length])

    def forward(self, input_ids=None, inputs_embeds: Optional[torch.FloatTensor] = None):
        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)
        embeddings = inputs_embeds
        return self.LayerNorm(embeddings)
"""


def test_a_parameter_filled_in_where_the_caller_left_it_out_has_the_fill_ins_shape():
    # ``if inputs_embeds is None: inputs_embeds = self.word_embeddings(input_ids)``: the caller's
    # tensor stands for the lookup, so the embeddings are (..., hidden_size) (the positional table,
    # looked up elsewhere, says config.max_position_embeddings is a length).
    source = FILLED_IN_EMBEDDINGS
    assert shapes_of(source, "XEmbeddings.forward", "embeddings") == {"(*, config.hidden_size)"}
    assert codes(source) == []
    over_positions = source.replace("self.LayerNorm = nn.LayerNorm(config.hidden_size)", "self.LayerNorm = nn.LayerNorm(config.max_position_embeddings)")
    assert codes(over_positions) == [("SC404", "self.LayerNorm = nn.LayerNorm(config.max_position_embeddings)")]
    # Unannotated, the parameter could be anything (a fill-in of another meaning): its shape stays
    # the caller's, unknown, and nothing is concluded from it.
    untyped = over_positions.replace("inputs_embeds: Optional[torch.FloatTensor] = None", "inputs_embeds=None")
    assert shapes_of(untyped, "XEmbeddings.forward", "embeddings") == set()
    assert codes(untyped) == []


def test_a_one_in_the_fill_in_may_be_the_callers_batch():
    # ``self.position_ids[:, :t]`` is (1, t); callers pass (b, t) position ids: viewing them as
    # (b, t) after the ``if`` is no element-count mismatch.
    source = FILLED_IN_EMBEDDINGS.replace(
        "    def forward(self, input_ids=None, inputs_embeds: Optional[torch.FloatTensor] = None):",
        "    def forward(self, input_ids, position_ids: Optional[torch.LongTensor] = None, inputs_embeds: Optional[torch.FloatTensor] = None):\n"
        "        b, t = input_ids.shape\n"
        "        if position_ids is None:\n"
        "            position_ids = self.position_ids[:, :t]\n"
        "        position_ids = position_ids.view(b, t)",
    ).replace("embeddings = inputs_embeds\n", "embeddings = inputs_embeds + self.position_embeddings(position_ids)\n")
    assert shapes_of(source, "XEmbeddings.forward", "position_ids") >= {"(b, t)"}
    assert codes(source) == []



MAYBE_SCALED_TIMES_A_TENSOR = """
import torch
from jaxtyping import Float
from torch import Tensor


def rope(q: Float[Tensor, "b h t d"], cos: Float[Tensor, "t d"], u: Tensor, w: Float[Tensor, "b h t d"]):
    maybe = cos / u
    rotated = q * maybe
    written = q * 0.125
    tempered = written / w
    return rotated, tempered
"""


def test_only_a_scale_the_code_wrote_survives_a_product_with_another_tensor():
    # ``cos / attention_scaling`` (a factor the engine cannot read) times the query is no scale of
    # the query: an RMSNorm or a rotary table of maybe-scaled tensors left SC101 silent on OLMo 2,
    # Qwen3-MoE and five other QK-norm models. ``q * 0.125 / temperature`` stays "maybe scaled".
    import libcst as cst
    import textwrap

    from shapecheck.engine import analyze
    from shapecheck.engine.domain.values import ScaleTag

    source = textwrap.dedent(MAYBE_SCALED_TIMES_A_TENSOR)
    facts = analyze(cst.parse_module(source), source, "rope.py")
    values = {a.name: a.value for run in facts.runs for a in run.assignments}
    assert values["maybe"].tag(ScaleTag) is not None and values["maybe"].tag(ScaleTag).readable is None
    assert values["rotated"].tag(ScaleTag) is None
    assert values["tempered"].tag(ScaleTag) is not None



OPTIONAL_FLOATS = """
from torch import nn


def helper(x, eps: float = 1e-6, softcap: float | None = None):
    seen_eps = eps
    seen_softcap = softcap
    return x


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.eps = config.norm_eps
        self.softcap = config.attn_logit_softcapping

    def forward(self, x):
        return helper(x, eps=self.eps, softcap=self.softcap)
"""


def test_a_float_parameter_that_may_be_none_is_not_made_a_number():
    # ``softcap: float | None = None`` given ``config.attn_logit_softcapping`` may be None, so
    # ``if softcap is not None`` keeps both paths (videoprism's softcapped attention); ``eps: float``
    # given an unreadable value is a number.
    import libcst as cst
    import textwrap

    from shapecheck.engine import analyze
    from shapecheck.engine.domain.values import FloatValue

    source = textwrap.dedent(OPTIONAL_FLOATS)
    facts = analyze(cst.parse_module(source), source, "block.py")
    inlined = {a.name: a.value for run in facts.runs if run.inlined for a in run.assignments}
    assert isinstance(inlined["seen_eps"], FloatValue)
    assert not isinstance(inlined["seen_softcap"], FloatValue)
