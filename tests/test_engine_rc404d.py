"""Buffers set with ``nn.Buffer`` and tables of a flattened 2-d grid (helper rc404d, SC404 recall).

torch >= 2.5 registers a buffer by assignment: ``self.weights = nn.Buffer(table, persistent=False)``
is ``self.register_buffer("weights", table, persistent=False)``. Transformers 5 writes every buffer
that way (Kosmos-2 / M2M100's sinusoidal table among them), and the engine took ``nn.Buffer(t)``
for the bare tensor: a positional table so registered was no table, its number of rows no sequence
length, and ``nn.LayerNorm(config.max_position_embeddings)`` went unreported. The engine now
registers it as ``register_buffer`` does (``nn_modules.as_buffer``).

Registered, a 2-d sine-cosine table (``meshgrid`` of the rows' and the columns' positions,
flattened: ``(h * w, d)``, one row per patch) became a table of ``h * w`` rows, and SC302 took it
for a maximum-length table added unsliced to image tokens whose count the engine reads in another
form. Such a table is made for images of its grid: its first ``n`` rows are not the positions of a
shorter sequence, and slicing it (SC302's fix) would be wrong. ``meshgrid`` now records the grid's
sides on the positions it lays out (``PositionTag.grid``), and a table whose rows are that grid's
cells (plus a few class-token rows) is a ``flattened_grid``: SC302 leaves it alone.

Every claim about torch here was checked with torch 2.13 on concrete sizes (the sizes in the
comments).
"""

from __future__ import annotations

import textwrap

import libcst as cst
from engine_snippets import findings_on_lines

from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import ParameterTag
from shapecheck.engine.domain.values import PositionTag, TensorValue
from shapecheck.engine.facts.norms import sequence_lengths
from shapecheck.engine.symbolic.dims import Dim


def codes(source: str, path: str = "modeling_x.py") -> list[tuple[str, str]]:
    return findings_on_lines(source, path)


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "modeling_x.py")


def lengths(source: str) -> set[str]:
    return {str(length) for length in sequence_lengths(facts_of(source))}


def attribute_values(source: str, cls: str, attr: str) -> list[TensorValue]:
    """The values ``self.<attr>`` holds after ``cls``'s constructor, in every run."""
    facts = facts_of(source)
    found = []
    for run in facts.runs:
        if not run.qualname.startswith(f"{cls}."):
            continue
        for assignment in run.assignments:
            if assignment.name == f"self.{attr}" and isinstance(assignment.value, TensorValue):
                found.append(assignment.value)
    return found


# ------------------------------------------------------------------ nn.Buffer registers a buffer

SINUSOID = '''
import math

import torch
import torch.nn as nn


def sinusoid_rows(rows, width):
    # (rows, width): sin in the first half of each row, cos in the second
    half = width // 2
    rate = torch.exp(torch.arange(half).float() * -(math.log(10000.0) / (half - 1)))
    angle = torch.arange(rows).float()[:, None] * rate[None, :]
    return torch.cat((angle.sin(), angle.cos()), dim=-1)


class FixedPositions(nn.Module):
    def __init__(self, n_pos, width, pad):
        super().__init__()
        self.pad, self.width = pad, width
        self._build(n_pos + 2)

    def _build(self, rows):
        self.rows = nn.Buffer(sinusoid_rows(rows, self.width), persistent=False)

    def forward(self, tokens, pos):
        n, t = tokens.shape
        picked = self.rows.index_select(0, pos.reshape(-1))
        return picked.reshape(n, t, self.rows.shape[-1])


class Decoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = FixedPositions(cfg.n_positions, cfg.d_model, cfg.pad_token_id)
        self.ln_in = nn.LayerNorm(cfg.d_model, eps=cfg.eps)

    def forward(self, tokens, pos):
        h = self.tok(tokens) + self.pos(tokens, pos)
        return self.ln_in(h)
'''


def test_a_table_set_with_nn_buffer_is_a_registered_table():
    # torch: nn.Buffer(t) assigned to a module attribute registers t (module.buffers() holds it).
    tables = attribute_values(SINUSOID, "FixedPositions", "rows")
    assert tables
    for table in tables:
        assert table.has(ParameterTag)
        position = table.tag(PositionTag)
        assert position is not None and position.kind == "table" and not position.sliced
    assert "cfg.n_positions+2" in lengths(SINUSOID)


def test_a_layer_norm_over_the_number_of_positions_of_a_buffer_table():
    # torch: LayerNorm(66) on (2, 5, 16) raises "Given normalized_shape=[66], expected input with
    # shape [*, 66]"; LayerNorm(16) runs.
    assert codes(SINUSOID) == []
    bug = SINUSOID.replace("nn.LayerNorm(cfg.d_model, eps=cfg.eps)", "nn.LayerNorm(cfg.n_positions, eps=cfg.eps)")
    assert codes(bug) == [("SC404", "self.ln_in = nn.LayerNorm(cfg.n_positions, eps=cfg.eps)")]


def test_buffer_spelled_other_ways():
    source = '''
    import torch
    import torch.nn as tnn
    from torch.nn.parameter import Buffer


    class Encoding(tnn.Module):
        def __init__(self, d_model: int, max_len: int, qualified: bool):
            super().__init__()
            position = torch.arange(max_len).unsqueeze(1).float()
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-9.21 / d_model))
            pe = torch.zeros(max_len, d_model)
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            if qualified:
                self.pe = tnn.Buffer(pe.unsqueeze(0))
            else:
                self.pe = Buffer(pe.unsqueeze(0))
            self.ln = tnn.LayerNorm(d_model)

        def forward(self, x):  # x: (b, t, d_model)
            x = x + self.pe[:, : x.size(1)]
            return self.ln(x)
    '''
    assert codes(source) == []
    assert "max_len" in lengths(source)
    bug = source.replace("self.ln = tnn.LayerNorm(d_model)", "self.ln = tnn.LayerNorm(max_len)")
    assert codes(bug) == [("SC404", "self.ln = tnn.LayerNorm(max_len)")]


def test_a_buffer_of_something_else_is_no_sequence_length():
    # A buffer of running statistics is a buffer, not a positional table.
    source = '''
    import torch
    from torch import nn


    class Scaler(nn.Module):
        def __init__(self, width: int, buckets: int):
            super().__init__()
            self.mean = nn.Buffer(torch.zeros(buckets, width))
            self.norm = nn.LayerNorm(width)

        def forward(self, x):
            return self.norm(x - self.mean.mean(0))
    '''
    assert codes(source) == []
    assert "buckets" not in lengths(source)
    values = attribute_values(source, "Scaler", "mean")
    assert values and all(value.has(ParameterTag) for value in values)


# ------------------------------------------------------------------------ a flattened 2-d grid


GRID = '''
import torch
from jaxtyping import Float
from torch import Tensor, nn


def sincos_2d(rows, cols, dim, with_cls=False):
    quarter = dim // 4
    omega = 1.0 / 10000 ** (torch.arange(quarter, dtype=torch.float64) / quarter)
    ys, xs = torch.meshgrid(torch.arange(rows, dtype=torch.float64), torch.arange(cols, dtype=torch.float64), indexing="ij")
    by_row = ys.flatten()[:, None] * omega[None, :]
    by_col = xs.flatten()[:, None] * omega[None, :]
    table = torch.cat([by_row.sin(), by_row.cos(), by_col.sin(), by_col.cos()], dim=1)
    if with_cls:
        table = torch.cat([torch.zeros(1, dim, dtype=table.dtype), table], dim=0)
    return table.float()


class PatchPositions(nn.Module):
    def __init__(self, width: int, side: int):
        super().__init__()
        self.register_buffer("table", sincos_2d(side, side, width), persistent=False)

    def forward(self, tokens: Float[Tensor, "b n d"]) -> Float[Tensor, "b n d"]:
        return tokens + self.table
'''


def test_meshgrid_lays_positions_out_over_the_grid():
    facts = facts_of(GRID)
    tables = [
        assignment.value
        for run in facts.runs
        if run.qualname == "sincos_2d" and not run.inlined
        for assignment in run.assignments
        if assignment.name in ("ys", "xs") and isinstance(assignment.value, TensorValue)
    ]
    grids = {value.tag(PositionTag).grid for value in tables if value.tag(PositionTag) is not None}
    assert (Dim.sym("rows"), Dim.sym("cols")) in grids


def test_a_flattened_grid_table_is_not_a_maximum_length_table():
    # torch: sincos_2d(4, 4, 8) is (16, 8); added to image tokens (2, 16, 8) it broadcasts. Its
    # first n rows are the first rows of the grid, not the positions of a smaller image: there is
    # nothing to slice.
    assert codes(GRID) == []
    table = TensorValue(None, "float", (PositionTag(None, "table", Dim.sym("s") * Dim.sym("s"), grid=(Dim.sym("s"), Dim.sym("s"))),))
    assert table.tag(PositionTag).flattened_grid


def test_a_grid_table_with_a_class_row():
    source = GRID.replace("sincos_2d(side, side, width)", "sincos_2d(side, side, width, with_cls=True)")
    assert codes(source) == []


def test_a_one_axis_table_added_whole_is_still_reported():
    # torch: a (512, 8) table added to (2, 16, 8) raises "The size of tensor a (16) must match the
    # size of tensor b (512) at non-singleton dimension 1".
    source = '''
    import torch
    from jaxtyping import Float
    from torch import Tensor, nn


    def sincos_1d(length, dim):
        omega = 1.0 / 10000 ** (torch.arange(dim // 2, dtype=torch.float64) / (dim // 2))
        angles = torch.arange(length, dtype=torch.float64)[:, None] * omega[None, :]
        return torch.cat([angles.sin(), angles.cos()], dim=1).float()


    class TokenPositions(nn.Module):
        def __init__(self, width: int, max_len: int):
            super().__init__()
            self.pe = nn.Buffer(sincos_1d(max_len, width), persistent=False)

        def forward(self, tokens: Float[Tensor, "b n d"]) -> Float[Tensor, "b n d"]:
            return tokens + self.pe
    '''
    assert [code for code, _ in codes(source)] == ["SC302"]


def test_grid_rows_that_are_not_its_cells():
    s, t = Dim.sym("s"), Dim.sym("t")
    # One side of the grid, or the cells and many more rows: not the grid flattened.
    assert not PositionTag(None, "table", s, grid=(s, s)).flattened_grid
    assert not PositionTag(None, "table", s * s + 16, grid=(s, s)).flattened_grid
    assert not PositionTag(None, "table", s * t, grid=None).flattened_grid
    assert not PositionTag(None, "table", s * t, grid=(s * t,)).flattened_grid
    assert PositionTag(None, "table", s * t + 1, grid=(s, t)).flattened_grid
    assert PositionTag(None, "table", Dim.const(196), grid=(Dim.const(14), Dim.const(14))).flattened_grid
