"""A positional table the forward path never adds (SC303), where the stream's way to attention is
not seen (an imported ``PatchEmbed``, an encoder in another file).

The engine's fact (``engine/facts/tables.py``) is read from the file's text: every read of a table
attribute (``<obj>.pos_embed``) is sorted into a presence test (``is None`` / ``is not None``),
metadata (``.shape``, ``.requires_grad``), an in-place fill (``trunc_normal_(...)``, ``.zero_()``),
a rewrite of the table itself (``self.pos_embed = nn.Parameter(resample(self.pos_embed, ...))``) or
a value read (anything else: added, handed on, aliased). The tables are the engine's: a parameter
declared ``(1, N, d)`` (N not 1), or positions alone.

Two findings. An ``if V is not None:`` (``V`` a table attribute of ``self``, or a local bound to
tables or ``None`` only) whose block never mentions ``V`` and on whose path (before it, after it,
in a loop around it; not a branch exclusive with it) nothing reads ``V``'s values nor calls a method
of the instance (which may read it): the table was meant to be added there (timm's BEiT and VOLO,
SAM's vision encoder, EVA's ``_pos_embed``). And a table declared in a class of the file, whose
``forward`` is in the file and which calls no method the engine cannot see, that no code of the file
reads the values of: reported at its declaration (MixMIM, NesT, a ViT in x-transformers).

Torch, for the shapes the sources use: ``torch.randn(2, 197, 768) + torch.zeros(1, 197, 768)`` is
``(2, 197, 768)`` (the table broadcasts over the batch); ``torch.randn(2, 4, 16, 64) +
torch.zeros(1, 4, 16, 64)`` is ``(2, 4, 16, 64)`` (NesT's blocks).
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

BEIT = """
import torch
import torch.nn as nn
from timm.layers import PatchEmbed, trunc_normal_, resample_abs_pos_embed


class Beit(nn.Module):
    def __init__(self, img_size=224, patch_size=16, embed_dim=768, use_abs_pos_emb=True, depth=12):
        super().__init__()
        self.patch_embed = PatchEmbed(img_size=img_size, patch_size=patch_size, embed_dim=embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.empty(1, num_patches + 1, embed_dim)) if use_abs_pos_emb else None
        self.pos_drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(embed_dim, 8, batch_first=True) for _ in range(depth)])
        self.norm = nn.LayerNorm(embed_dim)
        if self.pos_embed is not None:
            trunc_normal_(self.pos_embed, std=.02)

    def set_input_size(self, grid_size):
        if self.pos_embed is not None:
            self.pos_embed = nn.Parameter(
                resample_abs_pos_embed(self.pos_embed, grid_size, num_prefix_tokens=1),
                requires_grad=self.pos_embed.requires_grad,
            )

    def _freeze(self):
        if self.pos_embed is not None:
            self.pos_embed.requires_grad = False

    def forward_intermediates(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        if self.pos_embed is not None:
            x = x + self.pos_embed
        x = self.pos_drop(x)
        for blk in self.blocks:
            x = blk(x)
        return x

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        if self.training and self.pos_embed is not None:
            {BODY}
        x = self.pos_drop(x)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)

    def forward(self, x):
        return self.forward_features(x)[:, 0]
"""


def _sc303(source: str) -> list[str]:
    return [line for code, line in findings_on_lines(source) if code == "SC303"]


def test_a_guard_on_the_table_whose_block_does_not_add_it_is_sc303():
    # The other forward path still adds the table: the one that does not is the bug.
    assert _sc303(BEIT.replace("{BODY}", "x = self.norm(x)")) == ["if self.training and self.pos_embed is not None:"]


def test_a_guard_whose_block_adds_the_table_or_hands_it_on_is_clean():
    assert _sc303(BEIT.replace("{BODY}", "x = x + self.pos_embed")) == []
    assert _sc303(BEIT.replace("{BODY}", "x = torch.add(x, self.pos_embed.to(x.dtype))")) == []


def test_a_guard_whose_block_calls_a_method_of_the_instance_is_clean():
    # ``_add_pos`` (or a parent's method the engine cannot see) may add it.
    helper = BEIT.replace("{BODY}", "x = self._add_pos(x)").replace(
        "    def _freeze(self):", "    def _add_pos(self, x):\n        return x + self.pos_embed\n\n    def _freeze(self):"
    )
    assert _sc303(helper) == []
    assert _sc303(BEIT.replace("{BODY}", "x = self.unseen_parent_method(x)")) == []
    assert _sc303(BEIT.replace("{BODY}", "x = super().forward_features(x)")) == []


def test_a_table_added_before_or_after_the_guard_is_clean():
    before = BEIT.replace("{BODY}", "x = self.norm(x)").replace(
        "        if self.training and self.pos_embed is not None:", "        x = x + self.pos_embed\n        if self.training and self.pos_embed is not None:"
    )
    assert _sc303(before) == []
    after = BEIT.replace("{BODY}", "x = self.norm(x)").replace(
        "        x = self.pos_drop(x)\n        for blk in self.blocks:\n            x = blk(x)\n        return self.norm(x)",
        "        x = self.pos_drop(x + self.pos_embed)\n        for blk in self.blocks:\n            x = blk(x)\n        return self.norm(x)",
    )
    assert _sc303(after) == []


def test_a_table_read_by_name_or_aliased_in_the_constructor_is_not_judged():
    dynamic = BEIT.replace("{BODY}", "x = x + getattr(self, self.table_name)")
    assert _sc303(dynamic) == []
    aliased = BEIT.replace("{BODY}", "x = self.adder(x)").replace(
        "        self.norm = nn.LayerNorm(embed_dim)", "        self.norm = nn.LayerNorm(embed_dim)\n        self.adder = Adder(self.pos_embed)"
    )
    assert _sc303(aliased) == []


SAM_ENCODER = """
import torch
from torch import nn
from ...modeling_utils import PreTrainedModel
from .layers import SamPatchEmbeddings, SamVisionLayer


class SamVisionEncoder(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.patch_embed = SamPatchEmbeddings(config)
        self.pos_embed = None
        if config.use_abs_pos:
            self.pos_embed = nn.Parameter(
                torch.zeros(1, config.image_size // config.patch_size, config.image_size // config.patch_size, config.hidden_size)
            )
        self.layers = nn.ModuleList([SamVisionLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, pixel_values):
        hidden_states = self.patch_embed(pixel_values)
        if self.pos_embed is not None:
            {BODY}
        for layer_module in self.layers:
            hidden_states = layer_module(hidden_states)
        return hidden_states
"""


def test_hugging_face_encoder_whose_guard_drops_the_table_is_sc303():
    # A parent the engine cannot see does not matter: the guard's block calls none of its methods.
    assert _sc303(SAM_ENCODER.replace("{BODY}", "hidden_states = hidden_states")) == ["if self.pos_embed is not None:"]
    assert _sc303(SAM_ENCODER.replace("{BODY}", "hidden_states = hidden_states + self.pos_embed")) == []


EVA_POS_EMBED = """
import torch
from torch import nn
from timm.layers import PatchEmbed, resample_abs_pos_embed


class Eva(nn.Module):
    def __init__(self, embed_dim=768, num_patches=196, no_embed_class=False, dynamic_img_size=False):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, embed_dim))
        self.no_embed_class = no_embed_class
        self.dynamic_img_size = dynamic_img_size
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(embed_dim, 8, batch_first=True) for _ in range(12)])

    def _pos_embed(self, x):
        if self.dynamic_img_size:
            B, H, W, C = x.shape
            if self.pos_embed is not None:
                pos_embed = resample_abs_pos_embed(self.pos_embed, (H, W))
            else:
                pos_embed = None
            x = x.view(B, -1, C)
        else:
            pos_embed = self.pos_embed
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        if self.no_embed_class:
            if pos_embed is not None:
                x = x + pos_embed
            x = torch.cat([cls, x], dim=1)
        else:
            x = torch.cat([cls, x], dim=1)
            if pos_embed is not None:
                {BODY}
        return x

    def forward(self, x):
        x = self._pos_embed(self.patch_embed(x))
        for blk in self.blocks:
            x = blk(x)
        return x
"""


def test_a_local_table_guarded_and_dropped_on_one_branch_is_sc303():
    # The other branch (exclusive with this one) adds it: that does not clear this one.
    assert _sc303(EVA_POS_EMBED.replace("{BODY}", "x = x * 1.0")) == ["if pos_embed is not None:"]
    assert _sc303(EVA_POS_EMBED.replace("{BODY}", "x = x + pos_embed")) == []


def test_a_local_read_after_its_guard_or_in_a_loop_around_it_is_clean():
    after = EVA_POS_EMBED.replace("{BODY}", "x = x * 1.0").replace("        return x\n\n    def forward", "        return x + pos_embed\n\n    def forward")
    assert _sc303(after) == []
    looped = """
    import torch
    from torch import nn


    class Stages(nn.Module):
        def __init__(self, d=64, n=16):
            super().__init__()
            self.pos = nn.Parameter(torch.zeros(1, n, d))
            self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, batch_first=True) for _ in range(3)])

        def forward(self, x):
            pos = self.pos
            for i, blk in enumerate(self.blocks):
                if i == 0:
                    x = x + pos
                else:
                    if pos is not None:
                        x = x * 2.0
                x = blk(x)
            return x
    """
    assert _sc303(looped) == []
    parameter = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, d=64):
            super().__init__()
            self.attn = nn.MultiheadAttention(d, 4, batch_first=True)

        def forward(self, x, pos=None):
            if pos is not None:
                q = x
            else:
                q = x
            return self.attn(q, x, x)[0]
    """
    assert _sc303(parameter) == []


VIT_DECLARED = """
import torch
from torch import nn
from einops import rearrange


class Attention(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        dots = torch.einsum("bhid,bhjd->bhij", q, k) * (q.shape[-1] ** -0.5)
        out = torch.einsum("bhij,bhjd->bhid", dots.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class ViTransformerWrapper(nn.Module):
    def __init__(self, image_size=224, patch_size=16, dim=512, depth=6):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        self.patch_size = patch_size
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches, dim))
        self.patch_to_embedding = nn.Sequential(nn.LayerNorm(3 * patch_size ** 2), nn.Linear(3 * patch_size ** 2, dim))
        self.layers = nn.ModuleList([Attention(dim) for _ in range(depth)])
        nn.init.trunc_normal_(self.pos_embedding, std=0.02)

    def forward(self, img):
        p = self.patch_size
        x = rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=p, p2=p)
        x = self.patch_to_embedding(x)
        n = x.shape[1]
        {ADD}
        for attn in self.layers:
            x = attn(x) + x
        return x


@torch.no_grad()
def load_weights(model, weights):
    if weights["pos"].shape != model.pos_embedding.shape:
        raise ValueError("wrong size")
    model.pos_embedding.copy_(weights["pos"])
"""


def test_a_declared_table_that_nothing_reads_is_sc303_at_its_declaration():
    found = _sc303(VIT_DECLARED.replace("{ADD}", "x = x"))
    assert found == ["self.pos_embedding = nn.Parameter(torch.randn(1, num_patches, dim))"]
    assert _sc303(VIT_DECLARED.replace("{ADD}", "x = x + self.pos_embedding[:, :n]")) == []


NEST_LEVEL = """
import torch
from torch import nn
from timm.layers import trunc_normal_


def blockify(x, block_size: int):
    B, H, W, C = x.shape
    grid = H // block_size
    x = x.reshape(B, grid, block_size, grid, block_size, C)
    return x.transpose(2, 3).reshape(B, grid * grid, -1, C)


class NestLevel(nn.Module):
    def __init__(self, num_blocks=4, block_size=4, seq_length=16, embed_dim=128, depth=2):
        super().__init__()
        self.block_size = block_size
        self.pos_embed = nn.Parameter(torch.zeros(1, num_blocks, seq_length, embed_dim))
        self.pool = nn.Identity()
        self.transformer_encoder = nn.Sequential(*[nn.TransformerEncoderLayer(embed_dim, 4, batch_first=True) for _ in range(depth)])

    def forward(self, x):
        x = self.pool(x)
        x = x.permute(0, 2, 3, 1)
        x = blockify(x, self.block_size)
        {ADD}
        return self.transformer_encoder(x)


class Nest(nn.Module):
    def __init__(self):
        super().__init__()
        self.levels = nn.Sequential(NestLevel(), NestLevel())
        for level in self.levels:
            trunc_normal_(level.pos_embed, std=.02, a=-2, b=2)

    def forward(self, x):
        return self.levels(x)
"""


def test_a_blocked_table_declared_and_never_added_is_sc303():
    assert _sc303(NEST_LEVEL.replace("{ADD}", "x = x")) == [
        "self.pos_embed = nn.Parameter(torch.zeros(1, num_blocks, seq_length, embed_dim))"
    ]
    assert _sc303(NEST_LEVEL.replace("{ADD}", "x = x + self.pos_embed")) == []


def test_a_declared_table_with_an_unseen_forward_or_helper_is_not_judged():
    # The forward (or the method that adds the table) comes from a parent the engine cannot see.
    inherited = """
    import torch
    from torch import nn
    from timm.models.vision_transformer import VisionTransformer


    class MyViT(VisionTransformer):
        def __init__(self, num_patches=196, dim=768):
            super().__init__()
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, dim))
    """
    assert _sc303(inherited) == []
    helper = """
    import torch
    from torch import nn
    from timm.models.vision_transformer import VisionTransformer


    class MyViT(VisionTransformer):
        def __init__(self, num_patches=196, dim=768):
            super().__init__()
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches + 1, dim))

        def forward(self, x):
            x = self._pos_embed(self.patch_embed(x))
            return self.blocks(x)
    """
    assert _sc303(helper) == []


def test_tokens_and_tables_of_one_row_are_not_tables():
    # A class token ``(1, 1, d)`` guarded and not used is not a positional table.
    source = BEIT.replace("{BODY}", "x = self.norm(x)").replace(
        "if self.training and self.pos_embed is not None:", "if self.training and self.cls_token is not None:"
    )
    assert _sc303(source) == []


VOLO = """
import torch
from torch import nn
from timm.layers import trunc_normal_


class Volo(nn.Module):
    def __init__(self, grid=14, dim=384, depth=4):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, kernel_size=16, stride=16)
        self.pos_embed = nn.Parameter(torch.zeros(1, grid, grid, dim))
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_drop = nn.Dropout(0.1)
        self.network = nn.ModuleList([nn.Identity(), nn.Identity(), nn.Identity()])
        self.post = nn.TransformerEncoderLayer(dim, 8, batch_first=True)
        trunc_normal_(self.pos_embed, std=.02)

    def forward_cls(self, x):
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        return self.post(torch.cat([cls, x], dim=1))

    def forward_tokens(self, x):
        for idx, block in enumerate(self.network):
            if idx == 2 and self.pos_embed is not None:
                x = x + self.pos_embed
                x = self.pos_drop(x)
            x = block(x)
        return x

    def forward_features(self, x):
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        for idx, block in enumerate(self.network):
            if idx == 2 and self.pos_embed is not None:
                {BODY}
                x = self.pos_drop(x)
            x = block(x)
        x = x.flatten(1, 2)
        return self.{AFTER}(x)

    def forward(self, x):
        return self.forward_features(x)[:, 0]
"""


def test_methods_of_the_file_called_after_the_guard_are_followed():
    # ``forward_cls`` never mentions the table: the guard's path does not add it.
    source = VOLO.replace("{BODY}", "x = x").replace("{AFTER}", "forward_cls")
    assert _sc303(source) == ["if idx == 2 and self.pos_embed is not None:"]
    assert _sc303(VOLO.replace("{BODY}", "x = x + self.pos_embed").replace("{AFTER}", "forward_cls")) == []
    # ``forward_tokens`` reads it: it may add it.
    assert _sc303(VOLO.replace("{BODY}", "x = x").replace("{AFTER}", "forward_tokens")) == []


CONVIT = """
import torch
from torch import nn
from timm.layers import PatchEmbed, trunc_normal_


class ConVit(nn.Module):
    def __init__(self, embed_dim=384, num_patches=196, use_pos_embed=True):
        super().__init__()
        self.use_pos_embed = use_pos_embed
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.pos_drop = nn.Dropout(0.1)
        if self.use_pos_embed:
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dim))
            trunc_normal_(self.pos_embed, std=.02)
        self.blocks = nn.Sequential(*[nn.TransformerEncoderLayer(embed_dim, 6, batch_first=True) for _ in range(4)])

    def forward_features(self, x):
        x = self.patch_embed(x)
        if self.use_pos_embed:
            {BODY}
        x = self.pos_drop(x)
        return self.blocks(x)
"""


def test_the_flag_that_declared_the_table_guards_a_block_that_drops_it():
    assert _sc303(CONVIT.replace("{BODY}", "x = x * 1.0")) == ["if self.use_pos_embed:"]
    assert _sc303(CONVIT.replace("{BODY}", "x = x + self.pos_embed")) == []
    # Another flag is not the one that declared it (and the table is added after it).
    other = CONVIT.replace("        if self.use_pos_embed:\n            {BODY}", "        if self.training:\n            x = x * 1.0\n        x = x + self.pos_embed")
    assert _sc303(other) == []


def test_a_guard_in_a_class_that_did_not_declare_the_table_is_not_judged():
    # ``Other.pos_embed`` comes from a parent the engine cannot see: it may be anything there. Only
    # the classes that declare a table (and their parents of the file) are read for guards.
    source = BEIT.replace("{BODY}", "x = x + self.pos_embed") + """

from timm.models import Unseen


class Other(Unseen):
    def forward(self, x):
        if self.pos_embed is not None:
            x = self.norm(x)
        return x
"""
    assert _sc303(source) == []
