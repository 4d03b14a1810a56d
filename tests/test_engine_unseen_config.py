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
