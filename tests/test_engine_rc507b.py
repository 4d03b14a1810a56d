"""A causal mask built on one path, from sizes read off values the engine cannot see (SC507).

Streaming attention code (audiocraft's ``StreamingMultiheadAttention``) builds its causal mask only
when the layer is causal, as ``arange(past, past + T)`` against ``arange(past + T)``, with ``past``
read off a cache the engine cannot see (``past_keys.shape[time_dim]``) or 0, and may cast its query
on another path. Three engine capabilities make such a mask evidence that the query is
``(batch, seq, feature)``:

- ``x.shape[i]`` of a value the engine cannot see is an integer (``values.UnseenSizes``), so the
  join with 0 is a size and ``(past + T) - past`` is ``T``;
- a tensor assigned on one path over a parameter the engine cannot see keeps, for that path, the
  shape it was built with (``tags.PathShapeTag``, with that path's assumptions), which SC507 reads;
- a size read off an axis of the input (``T = x.shape[1]``, ``front_sizes``) that both paths'
  values share (``x`` and ``x.float()``) holds after the merge.

Checked with torch in a scratch script: ``nn.MultiheadAttention(8, 2)`` (no ``batch_first``) given
``x = torch.randn(2, 5, 8)`` and audiocraft's ``(5, 5)`` causal mask raises "The shape of the 2D
attn_mask is torch.Size([5, 5]), but should be (2, 2)"; with a square input ``(5, 5, 8)`` it runs and
example 2's output depends on examples 0 and 1. With ``batch_first=True`` it runs and is causal.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from engine_snippets import findings_on_lines, standalone_shapes
from shapecheck.engine import analyze
from shapecheck.linter import lint_source

# --------------------------------------------------------------------- sizes of unseen values

CACHE_OFFSET = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def positions(self, steps: int, device):
        store = self.lookup_cache()
        if store:
            start = store["keys"].shape[1]
        else:
            start = 0
        rows = torch.arange(start, steps + start, device=device)
        cols = torch.arange(start + steps, device=device)
        return rows, cols
"""


def test_an_item_of_an_unseen_values_shape_is_a_size() -> None:
    assert standalone_shapes(CACHE_OFFSET, "Decoder.positions", "rows") == ["(steps)"]
    assert standalone_shapes(CACHE_OFFSET, "Decoder.positions", "cols") == ['(steps+store["keys"].shape[1]|0)']


TERNARY_OFFSET = """
import torch


def offsets(n, memory_of, axis):
    held = memory_of(n)
    begin = held.shape[axis] if held is not None else 0
    index = torch.arange(begin, begin + n)
    return index
"""


def test_an_item_at_a_position_the_engine_cannot_read_is_a_size_read_at_run_time() -> None:
    assert standalone_shapes(TERNARY_OFFSET, "offsets", "index") == ["(n)"]


def _sum_shape(source: str) -> str:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "m.py")
    (event,) = [e for e in facts.events if e.op == "binary"]
    return str(event.result.shape)


def test_the_same_item_of_an_unseen_containers_shape_is_one_size() -> None:
    assert _sum_shape("""
        import torch


        def same(cache):
            a = torch.zeros(cache["k"].shape[2], 4)
            b = torch.ones(cache["k"].shape[2], 4)
            return a + b
    """) == '(cache["k"].shape[2], 4)'


def test_items_of_the_shapes_of_two_calls_are_two_sizes() -> None:
    # Two calls may give two tensors: their sizes are read afresh (the sum broadcasts them).
    shape = _sum_shape("""
        import torch


        def twice(fetch):
            a = torch.zeros(fetch()[0].shape[2], 4)
            b = torch.ones(fetch()[0].shape[2], 4)
            return a + b
    """)
    assert shape.startswith("(max(") and "fetch" not in shape


# --------------------------------------------------------------- a causal mask built on one path

STREAMING = """
import torch
from torch import nn
from .streaming import StreamingModule


class StreamingAttention(StreamingModule):
    def __init__(self, embed_dim, num_heads, causal=False, upcast=False):
        super().__init__()
        self.causal = causal
        self.upcast = upcast
        self.mha = nn.MultiheadAttention(embed_dim, num_heads{batch_first})

    def _causal_bias(self, current_steps: int, device):
        if self._streaming_state:
            past_steps = self._streaming_state["past_keys"].shape[self.time_dim]
        else:
            past_steps = 0
        queries_pos = torch.arange(past_steps, current_steps + past_steps, device=device).view(-1, 1)
        keys_pos = torch.arange(past_steps + current_steps, device=device).view(1, -1)
        return torch.where(queries_pos - keys_pos >= 0, 0.0, float("-inf"))

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask=None):
        if self.causal:
            assert attn_mask is None
            assert query.shape[1] == key.shape[1], "causal only for self-attention"
            attn_mask = self._causal_bias(key.shape[1], query.device)
        if self.upcast:
            query, key, value = [x.float() for x in [query, key, value]]
        out, _ = self.mha(query, key, value, None, False, attn_mask)
        return out
"""


def test_a_causal_mask_built_on_one_path_shows_a_batch_first_query() -> None:
    bug = STREAMING.format(batch_first="")
    assert findings_on_lines(bug) == [("SC507", "self.mha = nn.MultiheadAttention(embed_dim, num_heads)")]
    result = lint_source(textwrap.dedent(bug), "attention.py", {"SC507"})
    message = result.diagnostics[0].message
    # Built from the key's length, equal to the query's by the path's assert.
    assert "(on the path that builds it), where " in message and " is (seq, seq) with seq = " in message
    assert message.endswith("the size read off axis 1 of the query (called in StreamingAttention.forward)")


def test_the_streaming_attention_built_batch_first_is_clean() -> None:
    assert findings_on_lines(STREAMING.format(batch_first=", batch_first=True")) == []


SEQ_FIRST_STREAMING = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, width, heads, causal=True):
        super().__init__()
        self.causal = causal
        self.inner = nn.MultiheadAttention(width, heads)

    def bias(self, length, device):
        cache = self.fetch()
        offset = cache.shape[0] if cache is not None else 0
        rows = torch.arange(offset, offset + length, device=device)[:, None]
        cols = torch.arange(offset + length, device=device)[None, :]
        return (rows < cols).float() * -1e9

    def forward(self, x: torch.Tensor, mask=None):
        if self.causal:
            mask = self.bias(x.shape[{axis}], x.device)
        return self.inner({operand}, {operand}, {operand}, attn_mask=mask)[0]
"""


def test_a_mask_built_on_one_path_sized_off_axis_one_is_found_in_another_style() -> None:
    bug = SEQ_FIRST_STREAMING.format(axis=1, operand="x")
    assert findings_on_lines(bug) == [("SC507", "self.inner = nn.MultiheadAttention(width, heads)")]


def test_a_mask_sized_off_axis_zero_or_a_transposed_input_stays_clean() -> None:
    # (t, b, d) code: the mask's length is the input's axis 0, as the layer reads it.
    assert findings_on_lines(SEQ_FIRST_STREAMING.format(axis=0, operand="x")) == []
    # (b, t, d) code that transposes to (t, b, d) before the layer.
    assert findings_on_lines(SEQ_FIRST_STREAMING.format(axis=1, operand="x.transpose(0, 1)")) == []


# ------------------------------------------------------------ a query cast on one path only

UPCAST = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, d_model=64, n_head=4, fp32_attention=False):
        super().__init__()
        self.fp32_attention = fp32_attention
        self.attn = nn.MultiheadAttention(d_model, n_head{batch_first})

    def forward(self, h):
        T = h.size(1)
        causal = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
        if self.fp32_attention:
            h = h.float()
        {rebind}
        return self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
"""


def test_a_query_cast_on_one_path_keeps_the_size_read_off_its_axis() -> None:
    bug = UPCAST.format(batch_first="", rebind="")
    assert findings_on_lines(bug) == [("SC507", "self.attn = nn.MultiheadAttention(d_model, n_head)")]
    assert findings_on_lines(UPCAST.format(batch_first=", batch_first=True", rebind="")) == []


def test_a_query_transposed_on_one_path_keeps_no_size() -> None:
    # On one path the query is (t, b, d): what the axis is after the merge is not known.
    source = UPCAST.format(batch_first="", rebind="if not self.training:\n            h = h.transpose(0, 1)")
    assert findings_on_lines(source) == []


def test_where_between_two_numbers_has_the_conditions_shape() -> None:
    source = """
    import torch


    def bias(scores: torch.Tensor, n: int):
        allowed = torch.ones(n, n, dtype=torch.bool).tril()
        additive = torch.where(allowed, 0.0, float("-inf"))
        counts = torch.where(allowed, 1, 0)
        kept = torch.where(allowed, torch.zeros(4, n, n), 0.0)
        return additive, counts, kept
    """
    assert standalone_shapes(source, "bias", "additive") == ["(n, n)"]
    assert standalone_shapes(source, "bias", "counts") == ["(n, n)"]
    assert standalone_shapes(source, "bias", "kept") == ["(4, n, n)"]


def test_values_of_two_paths_with_different_sizes_at_an_axis_keep_none() -> None:
    # On one path the name holds another input, whose axis 1 is another size read off it.
    rebind = "if self.training:\n            pass\n        else:\n            S = memory.size(1)\n            h = memory"
    source = UPCAST.format(batch_first="", rebind=rebind).replace("def forward(self, h):", "def forward(self, h, memory):")
    assert findings_on_lines(source) == []
