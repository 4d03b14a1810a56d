"""Positions dropped where the stream reaches code the engine cannot see (SC303), and a positional
table resampled by an unseen helper, then concatenated (SC301).

SC303 on real code: in a Hugging Face ``*Embeddings.forward`` (or a ViT's, an audio model's) the
positional embeddings are computed beside the tokens and added to them; the encoder that takes the
sum is another class, often built in another file, so the engine never sees the tokens reach
attention. When the sum leaves the positions out, what remains is a local name bound to a
positional table (a lookup with position ids, a sinusoidal buffer, a learned per-position parameter
cut to the sequence) that the function never reads (``engine/facts/unread.py``: a dead store). That
is the bug, wherever the stream goes: SC303 reports the assignment. Names never read are a fact of the
function's text (any read anywhere, a closure's included, keeps a name alive; ``locals()`` keeps
them all); what was bound is each run's value, and it must be positions alone in every run that
knows it.

SC301: timm's ``_pos_embed`` takes ``self.pos_embed`` as it is on one path and
``resample_abs_pos_embed(self.pos_embed, new_size)`` (an unseen helper) on the other; after the merge
the table's shape is unknown, but it is still the parameter declared ``(1, N, d)``, made to be
broadcast-added. Concatenated to the features (``dim=-1``), it is the same bug as the table itself
concatenated. (The unseen helper's result alone keeps no ``ParameterTag`` and is not judged.)
Torch: ``torch.cat([torch.randn(2, 5, 8), torch.randn(1, 5, 8)], dim=-1)`` raises ("Sizes of tensors must
match except in dimension 2"): a table with a batch axis of 1 cannot be concatenated to a batch of tokens.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

HF_EMBEDDINGS = """
import torch
from torch import nn
from .encoder import Encoder


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size)
        self.register_buffer(
            "position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False
        )

    def forward(self, input_ids, token_type_ids):
        seq_length = input_ids.size(1)
        position_ids = self.position_ids[:, :seq_length]
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        position_embeddings = self.position_embeddings(position_ids)
        embeddings = {SUM}
        return self.LayerNorm(embeddings)


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)

    def forward(self, input_ids, token_type_ids):
        return self.encoder(self.embeddings(input_ids, token_type_ids))
"""

DROPPED = ("SC303", "position_embeddings = self.position_embeddings(position_ids)")


def test_hf_embeddings_that_leave_the_positions_out_of_the_sum_are_sc303():
    found = findings_on_lines(HF_EMBEDDINGS.replace("{SUM}", "inputs_embeds + token_type_embeddings"))
    assert DROPPED in found


def test_hf_embeddings_that_add_the_positions_are_clean():
    source = HF_EMBEDDINGS.replace("{SUM}", "inputs_embeds + token_type_embeddings + position_embeddings")
    assert [code for code, _ in findings_on_lines(source)] == []


def test_positions_read_in_a_closure_or_later_in_a_loop_are_not_dropped():
    closure = HF_EMBEDDINGS.replace(
        "        embeddings = {SUM}\n",
        "        add = lambda t: t + position_embeddings\n        embeddings = add(inputs_embeds)\n",
    )
    assert "SC303" not in [code for code, _ in findings_on_lines(closure)]


def test_a_function_reading_its_locals_by_name_is_not_judged():
    source = HF_EMBEDDINGS.replace("{SUM}", 'inputs_embeds + locals()["position_embeddings"]')
    assert "SC303" not in [code for code, _ in findings_on_lines(source)]


def test_unused_non_positional_values_and_position_ids_are_not_sc303():
    source = HF_EMBEDDINGS.replace("{SUM}", "inputs_embeds + position_embeddings").replace(
        "        seq_length = input_ids.size(1)\n",
        "        seq_length = input_ids.size(1)\n        unused_ids = torch.arange(seq_length)\n",
    )
    # token_type_embeddings (a token-type lookup) and unused_ids (position ids, not an embedding)
    # are dead too: neither is a positional table.
    assert [code for code, _ in findings_on_lines(source)] == []


def test_a_name_meant_to_be_thrown_away_is_not_judged():
    source = HF_EMBEDDINGS.replace("position_embeddings = self.position_embeddings(position_ids)", "_pos = self.position_embeddings(position_ids)").replace(
        "{SUM}", "inputs_embeds + token_type_embeddings"
    )
    assert "SC303" not in [code for code, _ in findings_on_lines(source)]


NANOGPT = """
import torch
import torch.nn as nn
from model_blocks import Block


class GPT(nn.Module):
    def __init__(self, vocab_size=100, block_size=64, n_embd=32, n_layer=2):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(block_size, n_embd)
        self.h = nn.ModuleList([Block(n_embd) for _ in range(n_layer)])
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tok_emb = self.wte(idx)
        pos_emb = self.wpe(pos)
        x = {X}
        for block in self.h:
            x = block(x)
        return self.lm_head(x)
"""


def test_nanogpt_with_unseen_blocks_that_drops_pos_emb_is_sc303():
    found = findings_on_lines(NANOGPT.replace("{X}", "tok_emb"))
    assert ("SC303", "pos_emb = self.wpe(pos)") in found


def test_nanogpt_with_unseen_blocks_that_adds_pos_emb_is_clean():
    assert findings_on_lines(NANOGPT.replace("{X}", "tok_emb + pos_emb")) == []


VIT = """
import torch
import torch.nn as nn
from timm.layers import PatchEmbed
from .blocks import Block


class ViT(nn.Module):
    def __init__(self, num_patches=196, embed_dim=192, depth=2):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dim))
        self.blocks = nn.Sequential(*[Block(embed_dim) for _ in range(depth)])

    def forward(self, x):
        x = self.patch_embed(x)
        pos = self.pos_embed[:, : x.shape[1]]
        x = {X}
        return self.blocks(x)
"""


def test_a_learned_table_cut_to_the_sequence_and_dropped_is_sc303():
    found = findings_on_lines(VIT.replace("{X}", "self.patch_embed.norm(x)"))
    assert ("SC303", "pos = self.pos_embed[:, : x.shape[1]]") in found


def test_a_learned_table_cut_to_the_sequence_and_added_is_clean():
    assert findings_on_lines(VIT.replace("{X}", "x + pos")) == []


SINUSOIDAL = """
import math
import torch
import torch.nn as nn
from .layers import EncoderStack


class PositionalEncoding(nn.Module):
    def __init__(self, d_model=64, max_len=512):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)


class Encoder(nn.Module):
    def __init__(self, vocab=1000, d_model=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.positions = PositionalEncoding(d_model)
        self.layers = EncoderStack(d_model)

    def forward(self, src):
        x = self.embed(src) * math.sqrt(64)
        pe = self.positions.pe[: src.size(1)]
        return self.layers({X})
"""


def test_a_sinusoidal_buffer_sliced_and_dropped_is_sc303():
    found = findings_on_lines(SINUSOIDAL.replace("{X}", "x"))
    assert ("SC303", "pe = self.positions.pe[: src.size(1)]") in found


def test_a_sinusoidal_buffer_sliced_and_added_is_clean():
    assert findings_on_lines(SINUSOIDAL.replace("{X}", "x + pe")) == []


RESAMPLED = """
import torch
import torch.nn as nn
from timm.layers import PatchEmbed, resample_abs_pos_embed
from .blocks import Block


class ViT(nn.Module):
    def __init__(self, num_patches=196, embed_dim=192):
        super().__init__()
        self.patch_embed = PatchEmbed(embed_dim=embed_dim)
        self.pos_embed = nn.Parameter(torch.zeros({DECLARED}))
        self.block = Block(embed_dim)

    def forward(self, x, size):
        x = self.patch_embed(x)
        if size is None:
            pos_embed = self.pos_embed
        else:
            pos_embed = resample_abs_pos_embed(self.pos_embed, new_size=size)
        x = {X}
        return self.block(x)
"""


def test_a_resampled_table_declared_with_a_batch_axis_of_one_concatenated_is_sc301():
    source = RESAMPLED.replace("{DECLARED}", "1, num_patches, embed_dim").replace("{X}", "torch.cat([x, pos_embed], dim=-1)")
    assert ("SC301", "x = torch.cat([x, pos_embed], dim=-1)") in findings_on_lines(source)


def test_a_resampled_table_added_or_joined_along_the_sequence_is_clean():
    added = RESAMPLED.replace("{DECLARED}", "1, num_patches, embed_dim").replace("{X}", "x + pos_embed")
    assert findings_on_lines(added) == []
    along_tokens = RESAMPLED.replace("{DECLARED}", "1, num_patches, embed_dim").replace("{X}", "torch.cat([x, pos_embed], dim=1)")
    assert findings_on_lines(along_tokens) == []


def test_a_resampled_table_without_a_batch_axis_of_one_concatenated_is_not_judged():
    # Declared (num_patches, embed_dim): nothing says it was made to be broadcast-added.
    source = RESAMPLED.replace("{DECLARED}", "num_patches, embed_dim").replace("{X}", "torch.cat([x, pos_embed], dim=-1)")
    assert findings_on_lines(source) == []


# ------------------------------------------------------------------ unseen helpers of positions alone
#
# A callee the engine cannot see, given positions and nothing else (integer position ids, a
# positional table, a parameter declared ``(1, N, d)``), returns a function of positions: a
# positional table (``ops.base.positions_only``), not an unknown "maybe positional" value. Given
# anything else (tokens, features), its result stays unknown.

AUDIO = """
import torch
import torch.nn as nn
from .modules import create_sin_embedding
from .layers import Layer


class Transformer(nn.Module):
    def __init__(self, d_model=64, num_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([Layer(d_model) for _ in range(num_layers)])

    def forward(self, x):
        B, T, C = x.shape
        positions = torch.arange(T, device=x.device).view(1, -1, 1)
        pos_emb = create_sin_embedding(positions, C)
        x = {X}
        for layer in self.layers:
            x = layer(x)
        return x
"""


def test_a_sinusoid_an_unseen_helper_made_from_positions_and_dropped_is_sc303():
    assert ("SC303", "pos_emb = create_sin_embedding(positions, C)") in findings_on_lines(AUDIO.replace("{X}", "x"))


def test_a_sinusoid_an_unseen_helper_made_from_positions_and_added_is_clean():
    assert findings_on_lines(AUDIO.replace("{X}", "x + pos_emb")) == []


def test_an_unseen_helper_given_the_stream_is_no_positional_table():
    source = AUDIO.replace("create_sin_embedding(positions, C)", "create_sin_embedding(x, C)").replace("{X}", "x")
    assert findings_on_lines(source) == []


GRID = """
import torch
import torch.nn as nn
from timm.layers import resample_abs_pos_embed
from .blocks import Block


class VisionTower(nn.Module):
    def __init__(self, grid=16, dim=128):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(1, grid * grid, dim))
        self.block = Block(dim)

    def forward(self, x):
        B, H, W, C = x.shape
        pos_embed = resample_abs_pos_embed(self.pos_embed, (H, W))
        x = {X}
        return self.block(x)
"""


def test_a_table_an_unseen_helper_resampled_and_dropped_is_sc303():
    found = findings_on_lines(GRID.replace("{X}", "x.reshape(B, H * W, C)"))
    assert ("SC303", "pos_embed = resample_abs_pos_embed(self.pos_embed, (H, W))") in found


def test_a_table_an_unseen_helper_resampled_and_added_is_clean():
    assert findings_on_lines(GRID.replace("{X}", "x.reshape(B, H * W, C) + pos_embed")) == []


def test_a_table_an_unseen_helper_resampled_then_concatenated_to_the_features_is_sc301():
    # mmpretrain's ``x + resize_pos_embed(self.pos_embed, ...)`` turned into a concatenation.
    source = GRID.replace("{X}", "torch.cat([x.reshape(B, H * W, C), pos_embed], dim=-1)")
    assert ("SC301", "x = torch.cat([x.reshape(B, H * W, C), pos_embed], dim=-1)") in findings_on_lines(source)


def test_a_resampled_table_expanded_to_the_batch_and_concatenated_is_a_design():
    # Perceiver-style: expanded to the batch first, it was made to be concatenated. Torch:
    # ``torch.randn(1, 4, 8).expand(2, -1, -1)`` is (2, 4, 8), which concatenates with (2, 4, 8).
    source = GRID.replace("{X}", "torch.cat([x.reshape(B, H * W, C), pos_embed.expand(B, -1, -1)], dim=-1)")
    assert findings_on_lines(source) == []


def test_expand_of_a_tensor_of_unknown_shape_has_the_rank_of_its_sizes():
    from engine_snippets import standalone_shapes

    source = """
    import torch
    from helpers import resample

    def f(table, b: int):
        t = resample(table).expand(b, -1, -1)
        return t
    """
    # torch: torch.randn(1, 4, 8).expand(3, -1, -1).shape == (3, 4, 8); the kept sizes are unknown here
    assert standalone_shapes(source, "f", "t") == ["(b, _, _)"]


# ------------------------------------------------------------------ a buffer of unseen value, cut to (1, N, d)
#
# diffusers' OmniGen registers a sin-cos table computed by an imported helper (its value and declared
# shape unseen) and crops it into ``(1, N, d)``. Concatenated to the patches along the features it is
# a table made to broadcast (SC301); expanded to the batch or joined along the tokens, it is not.
# Torch: ``torch.cat([torch.randn(2, 6, 8), torch.randn(1, 6, 8)], dim=-1)`` raises.

CROPPED = """
import torch
import torch.nn as nn
from .embeddings import get_2d_sincos_pos_embed


class PatchEmbed(nn.Module):
    def __init__(self, patch_size=2, in_channels=4, embed_dim=64, max_size=32):
        super().__init__()
        self.proj = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        table = get_2d_sincos_pos_embed(embed_dim, max_size)
        self.register_buffer("pos_embed", table.float().unsqueeze(0))

    def _cropped_pos_embed(self, height, width):
        spatial = self.pos_embed.reshape(1, 32, 32, -1)[:, :height, :width, :]
        return spatial.reshape(1, -1, spatial.shape[-1])

    def forward(self, latent):
        B, C, H, W = latent.shape
        x = self.proj(latent).flatten(2).transpose(1, 2)
        pos_embed = self._cropped_pos_embed(H // 2, W // 2)
        return {X}
"""


def test_a_cropped_buffer_of_unseen_value_concatenated_to_the_patches_is_sc301():
    source = CROPPED.replace("{X}", "torch.cat([x, pos_embed], dim=-1)")
    assert ("SC301", "return torch.cat([x, pos_embed], dim=-1)") in findings_on_lines(source)


def test_a_cropped_buffer_of_unseen_value_added_expanded_or_joined_along_the_tokens_is_clean():
    for combined in ("x + pos_embed", "torch.cat([x, pos_embed.expand(B, -1, -1)], dim=-1)", "torch.cat([x, pos_embed], dim=1)"):
        assert findings_on_lines(CROPPED.replace("{X}", combined)) == [], combined
