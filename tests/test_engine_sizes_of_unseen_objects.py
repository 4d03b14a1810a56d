"""Sizes read off an object the engine cannot see are named sizes.

A head sized from a backbone a registry builds (mmpretrain's ``MODELS.build(cfg)``, a Hugging Face
``AutoModel.from_pretrained(...)``) reads its width as ``self.backbone.config.hidden_size``: a
number nobody wrote in the file, but one number, the same each time it is read. It is a named size
(the dotted text), so a layer chain built from it is checked (``Linear(h, h)`` then ``Linear(2 * h,
2)`` cannot run) and a correct one stays clean.

Torch's answer (scratch script, torch 2.13 CPU): ``nn.Sequential(nn.Linear(8, 8), nn.ReLU(),
nn.Linear(16, 2))(torch.randn(3, 8))`` raises ``mat1 and mat2 shapes cannot be multiplied (3x8 and
16x2)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

MMPRETRAIN = """
import torch
from torch import nn
from mmengine.model import BaseModel
from mmpretrain.registry import MODELS


class Classifier(BaseModel):
    def __init__(self, vision_backbone: dict, multimodal_backbone: dict):
        super().__init__()
        self.vision_backbone = MODELS.build(vision_backbone)
        self.multimodal_backbone = MODELS.build(multimodal_backbone)
        hidden_size = self.multimodal_backbone.config.hidden_size
        self.head = nn.Sequential(
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear({second}, 2),
        )

    def forward(self, images, texts):
        embeds = self.multimodal_backbone(texts, self.vision_backbone(images))
        return self.head(embeds.last_hidden_state[:, 0, :])
"""

HF = """
from torch import nn
from transformers import AutoModel


class PairClassifier(nn.Module):
    def __init__(self, name: str, num_labels: int):
        super().__init__()
        self.encoder = AutoModel.from_pretrained(name)
        self.proj = nn.Linear(self.encoder.config.hidden_size, 2 * self.encoder.config.hidden_size)
        self.out = nn.Linear({width}, num_labels)

    def forward(self, input_ids, attention_mask):
        pooled = self.encoder(input_ids, attention_mask=attention_mask).pooler_output
        return self.out(self.proj(pooled).tanh())
"""


def test_a_chain_sized_from_a_built_backbone_is_checked():
    found = findings_on_lines(MMPRETRAIN.format(second="hidden_size * 2"))
    assert [code for code, _ in found] == ["SC406"]
    assert found[0][1] == "nn.Linear(hidden_size * 2, 2),"


def test_the_right_chain_sized_from_a_built_backbone_is_clean():
    assert findings_on_lines(MMPRETRAIN.format(second="hidden_size")) == []


def test_two_reads_of_one_unseen_size_are_one_size():
    assert findings_on_lines(HF.format(width="2 * self.encoder.config.hidden_size")) == []
    found = findings_on_lines(HF.format(width="self.encoder.config.hidden_size"))
    assert [code for code, _ in found] == ["SC406"]
