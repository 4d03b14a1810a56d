"""Kill tests for the surviving mutants of SC103, SC104 and SC201-SC205 (issue 13, item 1).

The complete mutmut run of every rule module (2 Dec 2026) left these decisions unpinned; each test
names its rule code so ``-k SCnnn`` selects it with the rule's other tests, and its docstring names
the function and decision it pins. Every snippet runs under torch 2.13 as written (checked in a
scratch script before the test was written). The analysis of every survivor, killed or equivalent,
is in benchmarks/README.md ("Rules re-run (2 Dec 2026, branch `mut20`): SC103-SC205").
"""

from __future__ import annotations

from pathlib import Path

from shapecheck.linter import lint_source


def _found(source: str, code: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of every finding of rule ``code`` alone on ``source``."""
    result = lint_source(source, "x.py", {code})
    assert result.error is None, result.error
    return sorted((d.code, d.line, d.column) for d in result.diagnostics)


# ---------------------------------------------------------------------------------------- SC103

CO_ATTENTION = '''
import math
import torch
from jaxtyping import Float
from torch import Tensor


def co_attend_queries(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    scores = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(64)
    attn = torch.softmax(scores, dim=-2)
    out = torch.einsum("bij,bjd->bid", attn, v)
    back = torch.einsum("bij,bid->bjd", attn, out)
    return out, back


def co_attend_keys(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    scores = torch.einsum("bid,bjd->bij", q, k) / math.sqrt(64)
    attn = torch.softmax(scores, dim=-1)
    out = torch.einsum("bij,bjd->bid", attn, v)
    back = torch.einsum("bij,bid->bjd", attn, out)
    return out, back
'''


def test_SC103_probabilities_contracted_over_both_axes_have_no_key_axis() -> None:
    """``_key_axis``: a softmax whose probabilities are contracted with values over their last axis
    (``out``) and over their second-last axis (``back``, co-attention read both ways) has two
    contracted axes, so no single key axis: the rule makes no claim on either softmax dim (taking
    one of the two axes would report whichever dim the other contraction uses)."""
    assert _found(CO_ATTENTION, "SC103") == []


# ---------------------------------------------------------------------------------------- SC104

BIASES_AFTER_SOFTMAX = '''
import math
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def bias_taken_away(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], bias: Float[Tensor, "h t t"]):
    attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(64), dim=-1)
    attn = attn - bias
    return attn @ v


def bias_first(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], bias: Float[Tensor, "h t t"]):
    attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(64), dim=-1)
    attn = bias + attn
    return attn @ v


def per_key_bias(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], key_bias: Float[Tensor, "t"]):
    attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(64), dim=-1)
    attn = attn + key_bias
    return attn @ v


def smoothed(q: Float[Tensor, "b n 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(64), dim=-1)
    attn = attn + torch.tensor(1e-8)
    return attn @ v


def aligned(q: Float[Tensor, "b 1 m 64"], k: Float[Tensor, "b 1 n 64"], v: Float[Tensor, "b 1 n 64"], prior: Float[Tensor, "b m n"]):
    scores = q @ k.transpose(-2, -1) / math.sqrt(64)
    logp = F.log_softmax(scores, dim=-1) + torch.log(prior[:, None] + 1e-8)
    return torch.softmax(logp, dim=-1) @ v


def causal(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    future = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(64)
    scores = scores + future
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC104_what_may_be_added_to_probabilities_after_the_softmax() -> None:
    """``check``'s sums and ``_added_to_probabilities``: a bias taken away from the probabilities
    (``attn - bias``: the op list holds "sub", and the straight-through exemption needs the
    probabilities on the right) and a bias written first (``bias + attn``) are reported, as is a 1-D
    per-key bias; a 0-d tensor (a smoothing epsilon) is a number and is not. Log-probabilities plus a
    log prior (RAD-TTS style alignment, softmaxed again) are not probabilities given a bias.
    ``check``'s products: an additive 0 / -inf causal mask added to the scores is not a product with
    a 0/1 mask (only a ``mul`` is)."""
    assert _found(BIASES_AFTER_SOFTMAX, "SC104") == [("SC104", 11, 12), ("SC104", 17, 12), ("SC104", 23, 12)]


PROBABILITIES_FILLED = '''
import math
import torch
from jaxtyping import Bool, Float
from torch import Tensor


def causal_scores(q, k, T):
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    return (q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))).masked_fill(~mask, float("-inf")), mask


def zero_padded_queries(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], pad: Bool[Tensor, "b 1 t 1"]):
    scores, mask = causal_scores(q, k, q.size(-2))
    attn = torch.softmax(scores, dim=-1).masked_fill(pad, 0.0)
    return attn @ v


def refilled_by_keyword(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    scores, mask = causal_scores(q, k, q.size(-2))
    attn = torch.softmax(scores, dim=-1).masked_fill(~mask, value=float("-inf"))
    return attn @ v


def refilled_at_the_threshold(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    scores, mask = causal_scores(q, k, q.size(-2))
    attn = torch.softmax(scores, dim=-1).masked_fill(~mask, -10000.0)
    return attn @ v
'''


def test_SC104_a_very_negative_fill_of_probabilities_is_a_misplaced_mask() -> None:
    """``_masks_probabilities``: probabilities whose scores were masked may be filled again with 0
    (zeroing padded query rows, a deliberate second step), but a fill of -inf given by the
    ``value=`` keyword, or of exactly -10000.0 (``LARGE_NEGATIVE``, the old BERT fill: the
    threshold is inclusive, as for the scores), is a mask meant for the scores, reported."""
    assert _found(PROBABILITIES_FILLED, "SC104") == [("SC104", 21, 12), ("SC104", 27, 12)]


SHARED_FILL_HELPER = '''
import math
import torch
from jaxtyping import Bool, Float
from torch import Tensor


def fill(x, mask, value):
    return x.masked_fill(mask, value)


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], pad: Bool[Tensor, "b 1 1 t"]):
    scores = fill(q @ k.transpose(-2, -1) / math.sqrt(64), pad, 0.0)
    return torch.softmax(scores, dim=-1) @ v


def top_k_logits(logits: Float[Tensor, "b 50257"], k: int = 50):
    kth = torch.topk(logits, k).values[:, -1:]
    return fill(logits, logits < kth, float("-inf"))
'''


def test_SC104_a_masking_helper_that_fills_scores_with_0_is_reported() -> None:
    """``_weak_fill``'s first guard: in the contexts where the helper's input is not scores (the
    helper analysed alone, its input unknown; top-k filtering of logits with -inf) it has no say
    (None), so the call that fills the scores with 0 decides: reported at the helper, with the fill
    that call gives. (It answered False until 2 Dec 2026, and the helper analysed alone vetoed every
    such finding.)"""
    result = lint_source(SHARED_FILL_HELPER, "x.py", {"SC104"})
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("SC104", 9, 12)]
    assert result.diagnostics[0].message.startswith("scores masked with 0 before softmax")


# ---------------------------------------------------------------------------------------- SC201

INTEGER_ATTENTION_MASKS = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor


class Encoder(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x, ids: Int[Tensor, "b t"], pad_id: int = 0):
        T = x.size(0)
        pad = (ids == pad_id).long()
        future = torch.triu(torch.ones(T, T, dtype=torch.long), diagonal=1)
        a, _ = self.attn(x, x, x, pad)
        b, _ = self.attn(x, x, x, None, True, future)
        return a + b


def sdpa(q, k, v):
    T = q.size(-2)
    keep = torch.tril(torch.ones(T, T, dtype=torch.int64))
    out = F.scaled_dot_product_attention(q, k, v, keep)
    return out + F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
'''


def test_SC201_integer_attention_masks_by_position_and_keyword_land_on_the_mask() -> None:
    """``_integer_masks``' argument positions (SDPA's ``attn_mask`` is its 4th argument; the
    module's ``key_padding_mask`` its 4th and ``attn_mask`` its 6th, after the module itself at 0)
    and ``check``'s report place: the mask argument, positional or keyword. torch 2.13 rejects each
    of these integer masks."""
    assert _found(INTEGER_ATTENTION_MASKS, "SC201") == [
        ("SC201", 18, 35),
        ("SC201", 19, 47),
        ("SC201", 26, 51),
        ("SC201", 27, 68),
    ]


MASKED_FILL_MASKS = '''
import torch
from jaxtyping import Int
from torch import Tensor


def padded(scores, attention_mask: Int[Tensor, "b s"]):
    return scores.masked_fill(1 - attention_mask[:, None, None, :], float("-inf"))


def causal(scores):
    T = scores.size(-1)
    tri = torch.tril(torch.ones(T, T))
    return scores.masked_fill(mask=tri, value=float("-inf"))
'''


def test_SC201_a_masked_fill_mask_by_keyword_and_one_that_is_no_triangle() -> None:
    """``_non_bool_report``: the mask read by its keyword (``mask=``) is where the finding and its
    ``.bool()`` edit go; the message calls only a triangle "a 0/1 triangle" (a Hugging Face
    integer ``attention_mask`` is a padding mask); the fix says what it converts."""
    result = lint_source(MASKED_FILL_MASKS, "x.py", {"SC201"})
    found = [(d.line, d.column, d.message, d.fix.message, d.fix.edits[0].content) for d in result.diagnostics]
    assert found == [
        (
            8,
            31,
            "masked_fill needs a bool mask but this mask is int and raises a RuntimeError",
            "convert the mask with .bool()",
            "(1 - attention_mask[:, None, None, :]).bool()",
        ),
        (
            14,
            36,
            "masked_fill needs a bool mask but this mask is float (a 0/1 triangle) and raises a RuntimeError",
            "convert the mask with .bool()",
            "tri.bool()",
        ),
    ]


WHERE_CONDITIONS = '''
import torch


def keywords(scores):
    T = scores.size(-1)
    tri = torch.tril(torch.ones(T, T))
    return torch.where(condition=tri, input=scores, other=float("-inf"))


def other_by_keyword(scores):
    T = scores.size(-1)
    keep = torch.tril(torch.ones(T, T, dtype=torch.long))
    return torch.where(keep, scores, other=float("-inf"))


def indices(scores):
    T = scores.size(-1)
    rows, cols = torch.where(torch.tril(torch.ones(T, T)))
    return scores[..., rows, cols]
'''


def test_SC201_where_conditions_by_keyword_integer_triangles_and_the_index_form() -> None:
    """``_non_bool_condition``: three arguments given by position or keyword are the select form
    (``condition=`` read by its keyword, and ``other=`` by keyword counts as the third: until 2 Dec
    2026 both forms were missed); an integer triangle is as wrong as a float one; the one-argument
    ``torch.where(tri)`` returns indices and takes any tensor (silent). The fix converts the
    condition."""
    result = lint_source(WHERE_CONDITIONS, "x.py", {"SC201"})
    found = [(d.line, d.column, d.message, d.fix.message, d.fix.edits[0].content) for d in result.diagnostics]
    assert found == [
        (
            8,
            34,
            "torch.where needs a bool condition but this mask is float (a 0/1 triangle) and raises a RuntimeError",
            "convert the condition with .bool()",
            "tri.bool()",
        ),
        (
            14,
            24,
            "torch.where needs a bool condition but this mask is int (a 0/1 triangle) and raises a RuntimeError",
            "convert the condition with .bool()",
            "keep.bool()",
        ),
    ]


# ---------------------------------------------------------------------------------------- SC202

UNSLICED_BUFFERS = '''
import math
import torch
from jaxtyping import Float
from torch import Tensor


def eight_tokens(q: Float[Tensor, "b h 8 64"], k: Float[Tensor, "b h 8 64"], v: Float[Tensor, "b h 8 64"]):
    causal = torch.tril(torch.ones(16, 16))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def any_length(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    causal = torch.tril(torch.ones(16, 16))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def decode_step(q: Float[Tensor, "b h 1 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    causal = torch.tril(torch.ones(16, 16))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def configured(q: Float[Tensor, "b h 8 64"], k: Float[Tensor, "b h 8 64"], v: Float[Tensor, "b h 8 64"], block_size: int):
    causal = torch.tril(torch.ones(block_size, block_size))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(64)
    att = att.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(att, dim=-1) @ v


def relative_bias(table: Float[Tensor, "h 16 16"], t: int):
    causal = torch.tril(torch.ones(16, 16))
    bias = table[:, :t, :t]
    return bias.masked_fill(causal == 0, 0.0)
'''


def test_SC202_unsliced_buffers_by_key_length_and_the_conflict_first() -> None:
    """``check`` and ``_unsliced_buffer``. A 16 x 16 buffer against 8 known keys is a broadcast
    conflict, reported once at the call with its hint (the unsliced-buffer path skips a node already
    reported, and goes on to the next buffer); against any length ``t`` it is reported at the mask.
    The key length is the scores' last axis: a decode step's one query against ``s`` cached keys
    is reported (axis -2 is 1 there). A buffer built at a configured ``block_size`` against 8 keys
    needs slicing as well (a constant key length is exempt only when it is 1). A triangle applied
    to a tensor that is not attention scores (a slice of a relative-position table) is not this
    rule's: its messages speak of the scores and their sequence length, and a shape mismatch there
    is the engine's broadcast check's, which reports it when the sizes are known."""
    result = lint_source(UNSLICED_BUFFERS, "x.py", {"SC202"})
    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [
        ("SC202", 11, 11),
        ("SC202", 18, 27),
        ("SC202", 25, 27),
        ("SC202", 32, 27),
    ]
    assert result.diagnostics[0].hint == "slice or reshape the mask to the scores' (..., t_q, t_k)"


FOLLOW_ON_MASK = '''
import torch
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b h 16 64"], k: Float[Tensor, "b h 16 64"], v: Float[Tensor, "b h 16 64"]):
    causal = torch.tril(torch.ones(16, 16))
    scores: Float[Tensor, "b h 8 8"] = q @ k.transpose(-2, -1) / 8.0
    scores = scores.masked_fill(causal == 0, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC202_a_mask_conflict_downstream_of_a_wrong_annotation_is_a_follow_on() -> None:
    """``check``'s conflict report carries the conflict's ``causes``: the scores are annotated
    (b, h, 8, 8) but are (b, h, 16, 16), so the 16 x 16 mask conflicts only with the annotation
    (SC506's finding, the root); with every rule on, SC202's is a follow-on and dropped, and alone
    it is reported."""
    every = lint_source(FOLLOW_ON_MASK, "x.py")
    assert [(d.code, d.line, d.column) for d in every.diagnostics] == [("SC506", 9, 5)]
    assert _found(FOLLOW_ON_MASK, "SC202") == [("SC202", 10, 14)]


CROSS_ATTENTION_MASK = '''
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


class CrossAttention(nn.Module):
    def __init__(self, d_model: int = 64, n_heads: int = 2):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, x: Float[Tensor, "12 4 64"], memory):
        mask = torch.zeros(4, 12, 20, dtype=torch.bool)
        out, _ = self.attn(x, memory, memory, attn_mask=mask)
        return out
'''


def test_SC202_a_3d_mask_judged_by_the_query_of_a_cross_attention_with_two_heads() -> None:
    """``_mha_problem``: the batch is read from the query (argument 1; the memory, argument 2, is of
    unknown shape here), and only one head is exempt: with two heads a 3-D mask of first axis 4
    (the batch alone) is wrong, torch 2.13 wants batch * num_heads = 8."""
    result = lint_source(CROSS_ATTENTION_MASK, "x.py", {"SC202"})
    assert [(d.line, d.column) for d in result.diagnostics] == [(15, 57)]
    assert "batch * num_heads = 8, not 4" in result.diagnostics[0].message


# ---------------------------------------------------------------------------------------- SC203

POLARITY = '''
import math
import torch
from jaxtyping import Float
from torch import Tensor


def fill(x, mask, value):
    return x.masked_fill(mask, value)


def keep_the_future(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(64)
    scores = torch.where(future, scores, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def through_a_helper(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = fill(q @ k.transpose(-2, -1) / math.sqrt(64), future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC203_a_where_that_keeps_the_future_and_a_right_fill_through_a_helper() -> None:
    """``check``'s message for a fill that blocks where the mask is False (``torch.where(future,
    scores, -inf)`` keeps the future and blocks the past) says so, with the mask "False on the
    past". ``_fill_blocks_past``'s first guard: the helper ``fill`` analysed alone (its input not
    known to be scores) decides nothing, so the right fill it makes on the scores (the future
    blocked) is not reported."""
    result = lint_source(POLARITY, "x.py", {"SC203"})
    assert [(d.line, d.column, d.message) for d in result.diagnostics] == [
        (
            16,
            26,
            "this fill of -inf blocks where the mask is False, but the mask is False on the past: it hides "
            "what a causal model may see and leaves the future open",
        )
    ]


MASKS_MODULE = '''import torch


def causal_mask(T: int):
    return torch.tril(torch.ones(T, T, dtype=torch.bool))
'''

ATTENTION_MODULE = '''import math

import torch
from jaxtyping import Float
from torch import Tensor

from masks import causal_mask


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    scores = q @ k.transpose(-2, -1) / math.sqrt(64)
    scores = scores.masked_fill(causal_mask(q.size(-2)), float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC203_the_message_names_the_file_the_mask_is_built_in(tmp_path) -> None:
    """``check``'s ``triangle`` / ``built`` / ``mask``: the triangle built in ``masks.py`` (line 5)
    and used with the wrong polarity in ``attention.py`` is named in the message, so the reader
    finds where to fix it."""
    from shapecheck.runner import LintOptions, run

    (tmp_path / "masks.py").write_text(MASKS_MODULE)
    (tmp_path / "attention.py").write_text(ATTENTION_MODULE)
    report = run(LintOptions(paths=[str(tmp_path / "attention.py")], isolated=True)).report
    assert [(d.code, d.span.line, d.span.column, d.message) for d in report.diagnostics if d.code == "SC203"] == [
        (
            "SC203",
            12,
            33,
            "this fill of -inf blocks where the mask is True, but the mask (built in masks.py:5) is True on the "
            "past and the diagonal: it hides what a causal model may see and leaves the future open",
        )
    ]


HELPER_MODULE = '''import torch


def causal_fill(scores, T: int):
    past = torch.tril(torch.ones(T, T, dtype=torch.bool))
    return scores.masked_fill(past, float("-inf"))
'''

CALLER_MODULE = '''import math

import torch
from jaxtyping import Float
from torch import Tensor

from masking import causal_fill


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    scores = causal_fill(q @ k.transpose(-2, -1) / math.sqrt(64), q.size(-2))
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC203_a_mask_built_next_to_its_fill_in_another_module_names_no_file(tmp_path) -> None:
    """``check``'s ``facts.elsewhere(triangle.node, node)``: the file compared with the triangle's is
    the finding's (``masking.py``, where the helper builds and applies the mask), not the file being
    analysed (``model.py``, whose call makes the helper's input attention scores): same file, so the
    message names none."""
    from shapecheck.runner import LintOptions, run

    (tmp_path / "masking.py").write_text(HELPER_MODULE)
    (tmp_path / "model.py").write_text(CALLER_MODULE)
    report = run(LintOptions(paths=[str(tmp_path)], isolated=True)).report
    found = [(Path(d.path).name, d.span.line, d.message) for d in report.diagnostics if d.code == "SC203"]
    assert found == [
        (
            "masking.py",
            6,
            "this fill of -inf blocks where the mask is True, but the mask is True on the past and the diagonal: "
            "it hides what a causal model may see and leaves the future open",
        )
    ]


# ---------------------------------------------------------------------------------------- SC204

DETR_STYLE_DECODER = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width=32, heads=4):
        super().__init__()
        self.mha = nn.MultiheadAttention(width, heads, batch_first=True)
        self.pos = nn.Parameter(torch.zeros(1, 16, width))

    def forward(self, x):
        q = k = x + self.pos[:, : x.size(1)]
        out, _ = self.mha(q, k, value=x)
        return out


class Decoder(nn.Module):
    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.block = Block(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx):
        return self.head(self.block(self.tok(idx)))

    def loss(self, idx):
        logits = self(idx)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
'''


def test_SC204_multihead_self_attention_whose_value_is_another_tensor() -> None:
    """``_is_self_attention``: nn.MultiheadAttention's key is its argument 2 (after the module and
    the query), not the value: DETR-style ``q = k = x + pos`` with ``value=x`` is self-attention,
    and this decoder trains on shifted targets with no causal mask."""
    assert _found(DETR_STYLE_DECODER, "SC204") == [("SC204", 15, 18)]


def test_SC204_the_message_names_the_loss_in_another_file() -> None:
    """``check``'s ``facts.elsewhere(why.node, node)``: the evidence that the model is causal (the
    shifted next-token loss in ``train.py``) is named with its file and line, relative to the
    attention's file."""
    from shapecheck.runner import LintOptions, run

    project = Path(__file__).resolve().parents[1] / "examples" / "projects" / "bug_missing_causal_mask"
    report = run(LintOptions(paths=[str(project)], isolated=True)).report
    assert [(Path(d.path).name, d.span.line, d.message) for d in report.diagnostics] == [
        (
            "attention.py",
            21,
            "self-attention with no causal mask, but its output feeds a next-token loss (logits and targets "
            "shifted by one) in train.py:14: every position can attend to the tokens after it",
        )
    ]



# ---------------------------------------------------------------------------------------- SC205

FILLS_OF_SCORES = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor


def top_k_logits(logits: Float[Tensor, "b 50257"], k: int = 50):
    kth = torch.topk(logits, k).values[:, -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def padded(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], pad: Bool[Tensor, "b 1 1 t"]):
    scores = (q @ k.transpose(-2, -1) / math.sqrt(64)).masked_fill(pad, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def zero_filled(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(64)).masked_fill(blocked, 0.0)
    return torch.softmax(scores, dim=-1) @ v


def past_blocked(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    past = torch.tril(torch.ones(T, T, dtype=torch.bool))
    scores = (q @ k.transpose(-2, -1) / math.sqrt(64)).masked_fill(past, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def bert_fill(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    blocked = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=0)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(64)).masked_fill(blocked, -10000.0)
    return torch.softmax(scores, dim=-1) @ v
'''


def test_SC205_which_fills_are_candidates_and_which_triangles_block_the_diagonal() -> None:
    """``check``'s candidates from mask applications: a fill outside attention (top-k filtering of
    logits) and a padding mask (no triangle) are passed over and the later ones still judged; a fill
    of 0 blocks nothing (SC104's), a fill of exactly -10000.0 (the old BERT value) blocks (the
    threshold is inclusive); ``_blocks_diagonal``: a lower triangle as the blocked set hides the
    past (SC203's), not the diagonal. Reported: the BERT-style fill's ``triu(..., diagonal=0)``,
    with its fix."""
    result = lint_source(FILLS_OF_SCORES, "x.py", {"SC205"})
    found = [(d.line, d.column, d.fix.message, d.fix.edits[0].content) for d in result.diagnostics]
    assert found == [
        (
            36,
            15,
            "use diagonal=1 so that each token may attend to itself",
            "torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)",
        )
    ]


ATTENTION_MASKS = '''
import math
import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def with_bias(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], alibi: Float[Tensor, "h t t"]):
    scores = q @ k.transpose(-2, -1) / math.sqrt(64) + alibi
    return torch.softmax(scores, dim=-1) @ v


def add_mask(scores, mask):
    return scores + mask


def through_a_helper(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    future = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scores = add_mask(q @ k.transpose(-2, -1) / math.sqrt(64), future)
    return torch.softmax(scores, dim=-1) @ v


class Block(nn.Module):
    def __init__(self, width: int = 64, heads: int = 4):
        super().__init__()
        self.mha = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x: Float[Tensor, "b t 64"]):
        T = x.size(1)
        blocked = torch.triu(torch.ones(T, T, dtype=torch.bool))
        out, _ = self.mha(x, x, x, None, True, blocked)
        return out


def float_triangle(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tril(torch.ones(T, T)))


def blocked_set_given(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=torch.triu(torch.ones(T, T, dtype=torch.bool)))


def strictly_lower(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    return F.scaled_dot_product_attention(q, k, v, allowed)


def negated_lower(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(-2)
    blocked = ~torch.tril(torch.ones(T, T, dtype=torch.bool), diagonal=-1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
'''


def test_SC205_additive_masks_and_attention_masks_by_position() -> None:
    """``check``'s candidates: an additive bias that is no triangle (ALiBi) and an additive causal
    mask added in a helper (analysed alone too, where the sum carries no mask of its own) are
    passed over; nn.MultiheadAttention's 6th argument and SDPA's 4th, by position, are judged: a
    ``triu`` blocked set with the diagonal (the module's convention) and a strictly lower allowed
    set (SDPA's) are reported. ``_blocks_diagonal``: a float 0/1 triangle blocks nothing (SC201's),
    and an upper triangle (``triu``, or ``~tril(..., diagonal=-1)``) given to SDPA as its allowed set
    is the wrong polarity (SC203's)."""
    assert _found(ATTENTION_MASKS, "SC205") == [("SC205", 33, 19), ("SC205", 50, 15)]
