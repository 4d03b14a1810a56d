"""Positional tables built by helpers and looked up by gathers (helper rc404, SC404 recall).

CTRL builds its sinusoid table with an unannotated helper (``angle_defn(pos, i, d_model_size)``
divides by the width it was given), splits it into even and odd columns (``[:, 0::2]``,
``[:, 1::2]``), registers it with ``nn.Buffer`` and reads it with ``self.pos_encoding[position_ids,
:]``; Kosmos-2 / M2M100 read theirs with ``weights.index_select(0, ids)``. Each step lost the
table's shape or the fact that its rows are positions, so a LayerNorm sized by the number of
positions (``nn.LayerNorm(config.n_positions)``) went unreported. The engine now keeps:

- ``tensor / n`` where ``n`` is the size of one of the tensor's own axes: a number (scaling);
- a stepped slice from a start (``x[:, 1::2]``) and Hermite's identity (``(d+1)//2 + d//2 == d``);
- a gather with one integer index tensor (``table[ids]``, ``x[:, ids]``) and ``index_select``;
- rows looked up with position ids, or of a table of positional values, as a positional table's
  rows (a sequence length, as an ``nn.Embedding`` looked up with positions has);
- ``torch.meshgrid`` as one grid per input, and ``torch.LongTensor`` as an integer tensor.

Every shape asserted here was checked with torch (2.x) on concrete sizes.
"""

from __future__ import annotations

import textwrap

import libcst as cst
from engine_snippets import CTRL_SINUSOID, findings_on_lines, standalone_shapes

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import PositionTag, TensorValue
from shapecheck.engine.facts.norms import sequence_lengths
from shapecheck.engine.symbolic.dims import Dim, equal, Truth


def codes(source: str, path: str = "modeling_x.py") -> list[tuple[str, str]]:
    return findings_on_lines(source, path)


def shapes_of(source: str, function: str, name: str) -> set[str]:
    return set(standalone_shapes(source, function, name, "modeling_x.py"))


def lengths(source: str) -> set[str]:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "modeling_x.py")
    return {str(length) for length in sequence_lengths(facts)}


# --------------------------------------------------------------------------- Hermite's identity


def test_even_and_odd_halves_add_up_to_the_whole():
    d = Dim.sym("d")
    assert (d + 1) // 2 + d // 2 == d
    assert d // 2 + (d + 1) // 2 == d
    assert (d + 2) // 3 + (d + 1) // 3 + d // 3 == d
    assert (d + 3) // 2 + (d + 2) // 2 == d + 2
    assert (d + 1) // 2 + d // 2 + Dim.sym("e") == d + Dim.sym("e")
    assert 3 * ((d + 1) // 2) + 3 * (d // 2) == 3 * d


def test_floor_divisions_that_are_not_a_full_set_stay():
    d = Dim.sym("d")
    assert str((d + 1) // 2 + (d + 1) // 2) == "2*((d+1)//2)"
    assert str(2 * ((d + 1) // 2) + d // 2) == "2*((d+1)//2)+d//2"  # different coefficients
    assert str((d + 2) // 3 + d // 3) == "d//3+(d+2)//3"  # (d+1)//3 missing
    assert str((d + 1) // 2 - d // 2) == "(d+1)//2-d//2"
    assert str((d + 1) // 2 + Dim.sym("e") // 2) == "(d+1)//2+e//2"  # two different numerators
    assert equal((d + 1) // 2 + d // 2, d) is Truth.TRUE


# ------------------------------------------------------------------ CTRL's sinusoid, piece by piece

CTRL = '''
import torch
from torch import nn


''' + CTRL_SINUSOID + '''

class CTRLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.d_model_size = config.n_embd
        self.w = nn.Embedding(config.vocab_size, config.n_embd)
        self.layernorm = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
        self.pos_encoding = nn.Buffer(positional_encoding(config.n_positions, self.d_model_size, torch.float), persistent=False)

    def forward(self, input_ids: torch.LongTensor, position_ids: torch.LongTensor | None = None, cache=None):
        inputs_embeds = self.w(input_ids)
        input_shape = inputs_embeds.shape[:-1]
        past_length = cache.get_seq_length() if cache is not None else 0
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long)
            position_ids = position_ids.unsqueeze(0)
        self.pos_encoding = self.pos_encoding.to(device=input_ids.device, dtype=inputs_embeds.dtype)
        pos_embeds = self.pos_encoding[position_ids, :]
        hidden_states = inputs_embeds + pos_embeds
        return self.layernorm(hidden_states)
'''


def test_a_tensor_divided_by_the_size_of_its_own_axis_keeps_its_shape():
    # ``(2 * (i // 2)) / d_model_size`` with ``i`` of shape (1, d_model_size): d_model_size was read
    # as a size, so it is a number, and the product with the (position, 1) column is the table.
    assert shapes_of(CTRL, "positional_encoding", "angle_rads") == {"(position, d_model_size)"}


def test_a_divisor_the_engine_cannot_see_still_may_be_a_tensor():
    source = '''
    import torch

    def scaled(x, temperature):
        i = torch.arange(x.shape[-1]).unsqueeze(0)
        y = i / temperature
        z = i / x.shape[-1]
        return y, z
    '''
    assert shapes_of(source, "scaled", "y") == {"(*, _, i)"}
    assert shapes_of(source, "scaled", "z") == {"(1, i)"}


def test_even_and_odd_columns_and_their_concatenation():
    assert shapes_of(CTRL, "positional_encoding", "sines") == {"(position, (d_model_size+1)//2)"}
    assert shapes_of(CTRL, "positional_encoding", "cosines") == {"(position, d_model_size//2)"}
    assert shapes_of(CTRL, "positional_encoding", "pos_encoding") == {"(position, d_model_size)"}


def test_stepped_slices_of_concrete_sizes():
    source = '''
    import torch

    def columns():
        x = torch.zeros(10, 7)
        a = x[:, 1::2]
        b = x[:, 0::2]
        c = x[:, 3::2]
        e = x[:, 9::2]
        return a, b, c, e
    '''
    assert shapes_of(source, "columns", "a") == {"(10, 3)"}
    assert shapes_of(source, "columns", "b") == {"(10, 4)"}
    assert shapes_of(source, "columns", "c") == {"(10, 2)"}
    assert shapes_of(source, "columns", "e") == {"(10, 0)"}


def test_ctrl_table_looked_up_with_position_ids_is_a_positional_table():
    assert shapes_of(CTRL, "CTRLModel.__init__", "self.pos_encoding") == {"(config.n_positions, config.n_embd)"}
    assert "config.n_positions" in lengths(CTRL)
    assert codes(CTRL) == []


def test_ctrl_layernorm_over_the_number_of_positions_is_found():
    bug = CTRL.replace("nn.LayerNorm(config.n_embd, eps", "nn.LayerNorm(config.n_positions, eps")
    assert codes(bug) == [
        ("SC404", "self.layernorm = nn.LayerNorm(config.n_positions, eps=config.layer_norm_epsilon)")
    ]


def test_a_long_tensor_annotation_is_an_integer_tensor():
    # Joined with the arange fallback, the ids stay integers (a gather index, not a mask).
    source = '''
    import torch
    from torch import nn


    class Ids(nn.Module):
        def forward(self, position_ids: torch.LongTensor | None = None, hidden: torch.FloatTensor | None = None):
            if position_ids is None:
                position_ids = torch.arange(8)
            ids = position_ids
            h = hidden
            return ids, h
    '''
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "modeling_x.py")
    dtypes = {
        assignment.name: assignment.value.dtype
        for run in facts.runs
        if run.qualname == "Ids.forward" and not run.inlined
        for assignment in run.assignments
        if assignment.name in ("ids", "h")
    }
    assert dtypes == {"ids": "int", "h": None}


# ------------------------------------------------------------------------------------- gathers

GATHERS = '''
import torch


def gathers(x: "Float[Tensor, 'b t d']", ids: "Int[Tensor, 'b t']", table: "Float[Tensor, 'n d']", mask: "Bool[Tensor, 'b t']"):
    a = table[ids]
    b = table[ids, :]
    c = x[:, ids[0]]
    e = x[None, ids]
    f = x[..., ids[0]]
    g = x[mask]
    h = x[0, ids]
    k = x[ids, ids]
    m = table.index_select(0, ids[0])
    n = torch.index_select(x, 1, ids[0])
    o = x.index_select(-1, ids.view(-1))
    return a, b, c, e, f, g, h, k, m, n, o
'''


def test_a_gather_with_one_integer_index_puts_the_index_dims_in_place_of_the_axis():
    # torch: x (2, 3, 4), ids (2, 3), table (5, 4): table[ids] (2, 3, 4); x[:, ids[0]] (2, 3, 4);
    # x[None, ids] (1, 2, 3, 3, 4); x[..., ids[0]] (2, 3, 3).
    source = GATHERS.replace('"Float[Tensor, \'b t d\']"', "Float[Tensor, 'b t d']")
    source = "from jaxtyping import Float, Int, Bool\nfrom torch import Tensor\n" + source
    source = source.replace('"Int[Tensor, \'b t\']"', "Int[Tensor, 'b t']").replace('"Float[Tensor, \'n d\']"', "Float[Tensor, 'n d']")
    source = source.replace('"Bool[Tensor, \'b t\']"', "Bool[Tensor, 'b t']")
    assert shapes_of(source, "gathers", "a") == {"(b, t, d)"}
    assert shapes_of(source, "gathers", "b") == {"(b, t, d)"}
    assert shapes_of(source, "gathers", "c") == {"(b, t, d)"}
    assert shapes_of(source, "gathers", "e") == {"(1, b, t, t, d)"}
    assert shapes_of(source, "gathers", "f") == {"(b, t, t)"}
    # A bool mask, an int beside the index (torch may move the gathered dims to the front) and
    # two index tensors (broadcast together) stay unknown.
    assert shapes_of(source, "gathers", "g") == set()
    assert shapes_of(source, "gathers", "h") == set()
    assert shapes_of(source, "gathers", "k") == set()
    # index_select: the axis becomes as long as the 1-d index.
    assert shapes_of(source, "gathers", "m") == {"(t, d)"}
    assert shapes_of(source, "gathers", "n") == {"(b, t, d)"}
    assert shapes_of(source, "gathers", "o") == {"(b, t, b*t)"}


# ------------------------------------------------- M2M100 / Kosmos-2: a registered table read by index_select

M2M100 = '''
import math
import torch
from torch import nn


class SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, num_positions: int, embedding_dim: int, padding_idx: int | None = None):
        super().__init__()
        self.offset = 2
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.make_weights(num_positions + self.offset, embedding_dim, padding_idx)

    def make_weights(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        emb_weights = self.get_embedding(num_embeddings, embedding_dim, padding_idx)
        self.register_buffer("weights", emb_weights, persistent=False)

    @staticmethod
    def get_embedding(num_embeddings: int, embedding_dim: int, padding_idx: int | None = None):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.int64).float() * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        return emb.to(torch.get_default_dtype())

    def forward(self, input_ids):
        bsz, seq_len = input_ids.size()
        position_ids = torch.arange(seq_len, dtype=torch.long) + self.padding_idx + 1
        return self.weights.index_select(0, position_ids.view(-1)).view(bsz, seq_len, self.weights.shape[-1]).detach()


class TextTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.embed_dim)
        self.embed_positions = SinusoidalPositionalEmbedding(
            num_positions=config.max_position_embeddings,
            embedding_dim=config.embed_dim,
            padding_idx=config.pad_token_id,
        )
        self.layer_norm = nn.LayerNorm(config.embed_dim)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        positions = self.embed_positions(input_ids)
        hidden_states = inputs_embeds + positions
        return self.layer_norm(hidden_states)
'''


def test_index_select_of_a_registered_table_keeps_its_shape():
    assert shapes_of(M2M100, "SinusoidalPositionalEmbedding.forward", "position_ids") == {"(seq_len)"}
    assert codes(M2M100) == []


def test_m2m100_layernorm_over_the_number_of_positions_is_found():
    # The (max_position_embeddings + 2)-row table (BART's offset of 2) serves max_position_embeddings.
    assert {"config.max_position_embeddings+2", "config.max_position_embeddings"} <= lengths(M2M100)
    bug = M2M100.replace("self.layer_norm = nn.LayerNorm(config.embed_dim)", "self.layer_norm = nn.LayerNorm(config.max_position_embeddings)")
    assert codes(bug) == [("SC404", "self.layer_norm = nn.LayerNorm(config.max_position_embeddings)")]


# --------------------------------------------------------------------------------- meshgrid

GRID = '''
import torch
from torch import nn


def grid_table(height, width, embed_dim, temperature=10000.0):
    pos_dim = embed_dim // 4
    omega = torch.arange(pos_dim, dtype=torch.float64) / pos_dim
    omega = 1.0 / temperature**omega
    grid_h = torch.arange(height, dtype=torch.float64)
    grid_w = torch.arange(width, dtype=torch.float64)
    grid_h, grid_w = torch.meshgrid(grid_h, grid_w, indexing="ij")
    xs, ys = torch.meshgrid(torch.arange(width), torch.arange(height), indexing="xy")
    a, b, c = torch.meshgrid([torch.arange(2), torch.arange(3), torch.arange(height)])
    emb_h = grid_h.flatten().outer(omega)
    emb_w = grid_w.flatten().outer(omega)
    return torch.cat([emb_h.sin(), emb_h.cos(), emb_w.sin(), emb_w.cos()], dim=1)


class PositionEmbedding(nn.Module):
    def __init__(self, embed_dim: int, grid_size: int):
        super().__init__()
        self.pos_embed = nn.Buffer(grid_table(grid_size, grid_size, embed_dim), persistent=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states + self.pos_embed.to(hidden_states.dtype)
'''


def test_meshgrid_gives_one_grid_per_input():
    # torch: meshgrid(arange(3), arange(5), indexing="ij") gives two (3, 5) grids; "xy" two (5, 3);
    # three inputs (2, 3, h) grids.
    assert shapes_of(GRID, "grid_table", "grid_h") == {"(height)", "(height, width)"}
    assert shapes_of(GRID, "grid_table", "grid_w") == {"(width)", "(height, width)"}
    assert shapes_of(GRID, "grid_table", "xs") == {"(height, width)"}
    assert shapes_of(GRID, "grid_table", "c") == {"(2, 3, height)"}
    assert shapes_of(GRID, "grid_table", "emb_h") == {"(height*width, embed_dim//4)"}
    # The grids are positions, as the aranges they came from.
    source = textwrap.dedent(GRID)
    facts = analyze(cst.parse_module(source), source, "modeling_x.py")
    grids = [
        assignment.value
        for run in facts.runs
        if run.qualname == "grid_table" and not run.inlined
        for assignment in run.assignments
        if assignment.name == "grid_h" and str(assignment.value.shape) == "(height, width)"
    ]
    assert grids and all(grid.has(PositionTag) for grid in grids)
    # A whole grid table added to the image tokens is the design (no slicing a 2-d grid).
    assert codes(GRID) == []


# ------------------------------------------------- lucidrains / nanoGPT styles: gathers of a table

LUCIDRAINS = '''
import torch
from torch import nn
from einops import rearrange


class FixedPositionalEmbedding(nn.Module):
    def __init__(self, dim, max_seq_len):
        super().__init__()
        inv_freq = 1. / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        position = torch.arange(0, max_seq_len, dtype=torch.float)
        sinusoid_inp = torch.einsum("i,j->ij", position, inv_freq)
        emb = torch.cat((sinusoid_inp.sin(), sinusoid_inp.cos()), dim=-1)
        self.register_buffer("emb", emb)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device)
        return self.emb[pos][None, :, :]


class Wrapper(nn.Module):
    def __init__(self, *, num_tokens, dim, max_seq_len):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = FixedPositionalEmbedding(dim, max_seq_len)
        self.norm = nn.LayerNorm(dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        x = self.token_emb(x)
        x = x + self.pos_emb(x)
        x = self.norm(x)
        return self.to_logits(x)
'''


def test_lucidrains_gathered_sinusoid_keeps_its_shape_and_positions():
    assert shapes_of(LUCIDRAINS, "FixedPositionalEmbedding.forward", "pos") == {"(pos)"}
    assert "max_seq_len" in lengths(LUCIDRAINS)
    assert codes(LUCIDRAINS) == []
    bug = LUCIDRAINS.replace("self.norm = nn.LayerNorm(dim)", "self.norm = nn.LayerNorm(max_seq_len)")
    assert codes(bug) == [("SC404", "self.norm = nn.LayerNorm(max_seq_len)")]


def test_rows_gathered_with_ids_that_are_not_positions_are_no_positional_table():
    # A token table read with token ids (``self.codebook[ids]``): its rows are a vocabulary.
    source = '''
    import torch
    from torch import nn


    class Quantized(nn.Module):
        def __init__(self, codebook_size, dim):
            super().__init__()
            self.codebook = nn.Parameter(torch.randn(codebook_size, dim))
            self.norm = nn.LayerNorm(dim)

        def forward(self, ids: torch.LongTensor):
            return self.norm(self.codebook[ids])
    '''
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "modeling_x.py")
    tagged = [
        value
        for event in facts.events
        for value in (event.result, *event.args)
        if isinstance(value, TensorValue) and value.has(PositionTag)
    ]
    assert tagged == []
    assert "codebook_size" not in lengths(source)
    assert codes(source) == []


# ------------------------------------------------------------- which gathers read a positional table

def test_a_parameter_table_read_with_position_ids_has_rows_that_are_a_sequence_length():
    # No positional values in the table (a learned parameter): the ids are positions (``arange``).
    source = '''
    import torch
    from torch import nn


    class Learned(nn.Module):
        def __init__(self, vocab, dim, max_len):
            super().__init__()
            self.tok = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.zeros(max_len, dim))
            self.norm = nn.LayerNorm(dim)

        def forward(self, ids):
            x = self.tok(ids)
            x = x + self.pos[torch.arange(x.shape[1])]
            return self.norm(x)
    '''
    assert "max_len" in lengths(source)
    assert codes(source) == []
    bug = source.replace("self.norm = nn.LayerNorm(dim)", "self.norm = nn.LayerNorm(max_len)")
    assert codes(textwrap.dedent(bug)) == [("SC404", "self.norm = nn.LayerNorm(max_len)")]


def test_a_positional_table_read_with_ids_from_the_caller_is_still_a_positional_table():
    # Ids the caller computed (from the padding mask, as fairseq does), not ``arange``: the table's
    # values are positions (a sinusoid), so its rows are positions.
    source = '''
    import torch
    from torch import nn


    class Padded(nn.Module):
        def __init__(self, vocab, dim, max_len, padding_idx):
            super().__init__()
            self.padding_idx = padding_idx
            self.tok = nn.Embedding(vocab, dim)
            inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
            table = torch.einsum("i,j->ij", torch.arange(max_len).float(), inv_freq)
            self.table = nn.Buffer(torch.cat([table.sin(), table.cos()], dim=-1))
            self.norm = nn.LayerNorm(dim)

        def forward(self, input_ids, positions: torch.LongTensor):
            x = self.tok(input_ids) + self.table[positions]
            return self.norm(x)
    '''
    assert "max_len" in lengths(source)
    bug = source.replace("self.norm = nn.LayerNorm(dim)", "self.norm = nn.LayerNorm(max_len)")
    assert codes(textwrap.dedent(bug)) == [("SC404", "self.norm = nn.LayerNorm(max_len)")]


def test_only_the_rows_of_a_table_are_positions():
    # ``x[:, pos]`` picks tokens of a stream (its axis 1), and ``table.index_select(1, pos)`` picks
    # columns: neither makes the first axis (a batch, a width) a sequence length.
    source = '''
    import torch
    from jaxtyping import Float
    from torch import Tensor


    def pick(x: Float[Tensor, "b n d"], table: Float[Tensor, "m w"], other: Float[Tensor, "k v"]):
        pos = torch.arange(x.shape[1])
        y = x[:, pos]
        z = other.index_select(1, pos)
        w = table.index_select(-2, pos)
        return y + 1, z + 1, w + 1
    '''
    assert shapes_of(source, "pick", "y") == {"(b, n, d)"}
    assert shapes_of(source, "pick", "z") == {"(k, n)"}
    assert shapes_of(source, "pick", "w") == {"(n, w)"}
    assert lengths(source) == {"m"}


def test_a_stepped_slice_with_an_end_is_of_a_size_nobody_named():
    source = '''
    import torch

    def columns():
        x = torch.zeros(10, 7)
        a = x[:, 1:5:2]
        return a
    '''
    assert shapes_of(source, "columns", "a") == {"(10, _)"}
