"""Rule decisions that mutation testing found unpinned (benchmarks/mutation_testing.py).

Each test names its rule code, so ``-k SCnnn`` selects it with the rule's other tests. The snippets
are small and varied; they assert where a rule reports (and where it must stay silent), and the facts
a message must give a user, never its exact wording.
"""

from __future__ import annotations

import pytest

from shapecheck.linter import lint_source


def _findings(code: str, rule: str):
    result = lint_source(code, "snippet.py")
    assert result.error is None, result.error
    return [d for d in result.diagnostics if d.code == rule]


def _lines(code: str, rule: str) -> list[int]:
    return sorted(d.line for d in _findings(code, rule))


ELEMENTWISE = """
import torch
def f():
    a = torch.zeros(2, 8, 512)
    b = torch.zeros(2, 8, 2048)
    c = a - b
    d = a * b
    return c, d
"""


def test_SC405_subtraction_is_a_residual_op_and_a_product_is_not() -> None:
    found = _findings(ELEMENTWISE, "SC405")
    assert [d.line for d in found] == [6]  # `a - b`; `a * b` is not a residual connection
    assert found[0].hint, "the finding says how to fix it"


UNKNOWN_KEY = """
import torch
from jaxtyping import Float
from torch import Tensor

def attend(q: Float[Tensor, "b h t 64"], k, v):
    scores = q @ k.transpose(-2, -1)
    return torch.softmax(scores, dim=-1) @ v
"""


def test_SC101_scores_of_unknown_shape_are_reported_without_a_made_up_shape() -> None:
    (found,) = _findings(UNKNOWN_KEY, "SC101")
    assert found.line == 7  # the product that makes the unscaled scores (where the scale goes)
    assert "None" not in found.message and "sqrt(64)" in found.message  # the head dim, no shape
    assert found.hint


SC102_CASES = """
import math
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def keywords(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    return F.scaled_dot_product_attention(query=q, key=k, value=v, scale=1 / 64)


def positional_scale(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    return F.scaled_dot_product_attention(q, k, v, None, 0.0, False, 1 / 64)


def shared_kv(q: Float[Tensor, "b 8 t 64"], k: Float[Tensor, "b 1 s 64"], v: Float[Tensor, "b 1 s 64"]):
    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(512))


def grouped(q: Float[Tensor, "b 8 t 64"], k: Float[Tensor, "b 8 s 64"], v: Float[Tensor, "b 8 s 64"]):
    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(512))


def batched(q: Float[Tensor, "8 t 64"], k: Float[Tensor, "8 s 64"], v: Float[Tensor, "8 s 64"]):
    return F.scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(512))


def unknown_query(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, scale=1 / 64)


def unknown_scale(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"], scale):
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


def softmax_by_keyword(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    scores = q @ k.transpose(-2, -1) / 64
    return F.softmax(input=scores, dim=-1) @ v
"""


def test_SC102_sdpa_scale_by_keyword_or_position_and_heads_from_the_query() -> None:
    found = {d.line: d.message for d in _findings(SC102_CASES, "SC102")}
    # keyword query, positional scale, multi-query keys (heads are the query's), grouped heads; the
    # 3-D batched query has no heads axis, and unknown shapes or scales give no claim
    assert sorted(found) == [10, 14, 18, 22, 38]
    assert "64" in found[10] and "64" in found[14]
    assert "512" in found[18] and "64" in found[18]  # the model width vs the per-head dim
    assert all(d.hint for d in _findings(SC102_CASES, "SC102"))


SC103_CASES = """
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def by_keyword(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"]):
    scores = q @ k.transpose(-2, -1) / 8
    return F.softmax(input=scores, dim=1)


def implicit_4d(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"]):
    return F.softmax(q @ k.transpose(-2, -1) / 8) @ v


def implicit_3d(q: Float[Tensor, "b t 64"], k: Float[Tensor, "b s 64"], v: Float[Tensor, "b s 64"]):
    return F.softmax(q @ k.transpose(-2, -1) / 8) @ v


def implicit_2d(q: Float[Tensor, "t 64"], k: Float[Tensor, "s 64"], v: Float[Tensor, "s 64"]):
    return F.softmax(q @ k.transpose(-2, -1) / 8) @ v


def unknown_dim(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h s 64"], v: Float[Tensor, "b h s 64"], axis):
    return F.softmax(q @ k.transpose(-2, -1) / 8, dim=axis) @ v


def unknown_shapes_first(q, k, v):
    return F.softmax(q @ k.transpose(-2, -1) / 8, dim=0) @ v


def unknown_shapes_second(q, k, v):
    return F.softmax(q @ k.transpose(-2, -1) / 8, dim=1) @ v


def variadic_second(q: Float[Tensor, "*b h t 64"], k: Float[Tensor, "*b h s 64"], v: Float[Tensor, "*b h s 64"]):
    return F.softmax(q @ k.transpose(-2, -1) / 8, dim=1) @ v
"""


def test_SC103_keyword_input_implicit_dims_and_scores_of_unknown_rank() -> None:
    found = {d.line: d.message for d in _findings(SC103_CASES, "SC103")}
    # reported: dim=1 by keyword; implicit dim on 4-D (torch picks 1) and 3-D scores (torch picks 0);
    # dim=0 on scores of unknown shape (at least 2-D, so never the last axis); dim=1 of (*, h, t, s).
    # Silent: implicit dim on 2-D scores (torch picks 1, the last), an unknown dim, and dim=1 on scores
    # of unknown shape (right if they are 2-D).
    assert sorted(found) == [10, 14, 18, 30, 38]
    assert "implicitly dim 1" in found[14] and "implicitly dim 0" in found[18]
    assert "(b, h, t, s)" in found[10]  # the scores' shape, also when given by keyword
    assert "None" not in found[30]  # no shape to show
    assert all("dim=-1" in message for message in found.values())  # the key axis to use


SC104_CASES = """
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def bool_padding_mask(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], ids: Int[Tensor, "b t"]):
    keep = (ids != 0)[:, None, None, :]
    scores = q @ k.transpose(-2, -1) / 8
    scores = scores * keep
    return F.softmax(scores, dim=-1) @ v


def float_gate(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], gate: Float[Tensor, "b h t t"]):
    scores = q @ k.transpose(-2, -1) / 8
    scores = scores * gate
    return F.softmax(scores, dim=-1) @ v


def fill_at_the_threshold(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(2)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(-2, -1) / 8).masked_fill(mask, -1e4)
    return F.softmax(scores, dim=-1) @ v


def weak_fill(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(2)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = (q @ k.transpose(-2, -1) / 8).masked_fill(mask, -100.0)
    return F.softmax(scores, dim=-1) @ v
"""


def test_SC104_a_bool_mask_multiplied_in_and_the_fill_threshold() -> None:
    found = {d.line: d.message for d in _findings(SC104_CASES, "SC104")}
    # a bool padding mask (no triangle) multiplied into the scores: reported; a float gate: not a mask;
    # -1e4 is large enough (exp(-1e4) is 0 in float32); -100 is not
    assert sorted(found) == [11, 31]
    assert "-100" in found[31]


SC201_CASES = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def fill_by_keyword(scores: Float[Tensor, "b h t t"]):
    T = scores.size(-1)
    causal = torch.triu(torch.ones(T, T), diagonal=1)
    return scores.masked_fill(mask=causal, value=float("-inf"))


def sdpa_positional(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(2)
    causal = torch.tril(torch.ones(T, T))
    return F.scaled_dot_product_attention(q, k, v, causal)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x: Float[Tensor, "b t 64"]):
        T = x.size(1)
        causal = torch.triu(torch.ones(T, T), diagonal=1)
        return self.attn(x, x, x, None, True, causal)[0]


def sdpa_bool(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"]):
    T = q.size(2)
    causal = torch.tril(torch.ones(T, T)).bool()
    return F.scaled_dot_product_attention(q, k, v, causal)
"""


def test_SC201_masks_by_keyword_and_attention_masks_by_position() -> None:
    found = {d.line: d.message for d in _findings(SC201_CASES, "SC201")}
    # masked_fill(mask=<float triangle>), sdpa's 4th argument and MultiheadAttention's 6th (attn_mask)
    # are float 0/1 triangles; the bool triangle passed to sdpa is right
    assert sorted(found) == [12, 18, 29]
    assert "float" in found[12] and "triangle" in found[12]  # what the mask is


KEYS_FIRST = """
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def keys_first(q: Float[Tensor, "t 64"], k: Float[Tensor, "s 64"]):
    scores = (q @ k.transpose(-2, -1)).transpose(0, 1)
    return F.softmax(scores, dim=0)
"""


def test_SC103_keys_first_scores_softmaxed_over_dim_0_are_right() -> None:
    """(s, t) scores: the keys are dim 0 (= -2), so softmax(dim=0) normalises over the keys."""
    assert _findings(KEYS_FIRST, "SC103") == []


MASKED_PROBS_BY_KEYWORD = """
import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor


def mask_probabilities(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], v: Float[Tensor, "b h t 64"], pad: Bool[Tensor, "b 1 1 t"]):
    probs = F.softmax(q @ k.transpose(-2, -1) / 8, dim=-1)
    probs = torch.masked_fill(input=probs, mask=pad, value=0.0)
    return probs @ v
"""


def test_SC104_probabilities_masked_by_keyword() -> None:
    """``torch.masked_fill(input=probs, ...)``: the engine reads the keyword (it used to drop it)."""
    (found,) = _findings(MASKED_PROBS_BY_KEYWORD, "SC104")
    assert found.line == 10 and found.hint


CONFLICTS = """
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


def f(x: Float[Tensor, "b t 12"], w: Float[Tensor, "16 4"]):
    B, T, C = x.shape
    heads = x.view(B, T, 4, 4)
    product = x @ w
    annotated: Float[Tensor, "b t"] = x
    chain = nn.Sequential(nn.Linear(12, 16), nn.Linear(32, 4))
    return chain(x)
"""


@pytest.mark.parametrize(("rule", "line"), [("SC403", 10), ("SC505", 11), ("SC506", 12), ("SC406", 13)])
def test_a_shape_conflict_finding_says_how_to_fix_it(rule: str, line: int) -> None:
    found = _findings(CONFLICTS, rule)
    assert [d.line for d in found] == [line]
    assert found[0].hint, f"{rule} gives no hint"


LAYOUT_BLOCK = """
import torch
import torch.nn as nn


def HELPER


class Attention(nn.Module):
    def __init__(self, width=64, heads=4):
        super().__init__()
        self.proj = nn.Linear(IN_WIDTH, width)
        self.heads = heads

    def forward(self, x):
        b, t, c = x.shape
        p = self.proj(x)
        return CALL


if __name__ == "__main__":
    out = Attention()(torch.randn(2, 8, 64))
"""

#: rule -> (its helper, the calls of it in forward); the helper's line is 7, the projection's 18. The
#: first call is right (a head-major (b, h * t, d) tensor split back; heads moved next to head_dim
#: before merging), the second is the bug.
LAYOUT_HELPERS = {
    "SC503": (
        "split(x, b, t, h):\n    return x.view(b, h, t, -1)",
        "split(p.view(b, t, self.heads, -1).transpose(1, 2).reshape(b, self.heads * t, -1), b, t, self.heads), "
        "split(p, b, t, self.heads)",
    ),
    "SC502": (
        "merge(x, b, t):\n    return x.reshape(b, t, -1)",
        "merge(p.view(b, t, self.heads, -1), b, t), merge(p.view(b, t, self.heads, -1).transpose(1, 2), b, t)",
    ),
}


def _layout_block(rule: str, in_width: str) -> str:
    helper, call = LAYOUT_HELPERS[rule]
    return LAYOUT_BLOCK.replace("HELPER", helper).replace("CALL", call).replace("IN_WIDTH", in_width)


@pytest.mark.parametrize("rule", ["SC502", "SC503"])
def test_SC502_SC503_a_helper_is_judged_in_the_context_that_knows_its_shapes(rule: str) -> None:
    # the helper is met in a right context first, then in a wrong one: the finding is the wrong
    # context's, on the helper's line (the first context the helper is met in is not the verdict)
    found = _findings(_layout_block(rule, "width"), rule)
    assert [d.line for d in found] == [7]
    assert found[0].hint, "the finding says how to fix it"
    if rule == "SC503":  # the facts of the message: the time and head counts of the source and result
        assert "time=8" in found[0].message and "heads=4" in found[0].message
        assert "(batch, 8, 4, head_dim)" in found[0].message
    else:
        assert "heads=4" in found[0].message and "time=8" in found[0].message
        assert "(batch, 8, 4, head_dim)" in found[0].message


@pytest.mark.parametrize("rule", ["SC502", "SC503"])
def test_SC502_SC503_a_layout_bug_downstream_of_a_reported_conflict_is_a_follow_on(rule: str) -> None:
    # the projection is built 32 wide and given 64: that conflict is the root finding; the layout
    # bug after it reads the projection's output, so it is not reported again with all rules on
    code = _layout_block(rule, "width // 2")
    result = lint_source(code, "snippet.py")
    assert result.error is None, result.error
    assert [(d.line, d.code) for d in result.diagnostics] == [(18, "SC505")]
    alone = lint_source(code, "snippet.py", {rule})
    assert [(d.line, d.code) for d in alone.diagnostics] == [(7, rule)]  # found, and dropped as a follow-on


#: Every call below was run against torch 2.13: a, d, e, f and i work, b, c, g, h and j raise.
SC202_MHA = """import torch
import torch.nn as nn


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq_first = nn.MultiheadAttention(32, 4)
        self.batch_first = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, y, u):
        # x: (T=5, B=3, 32) seq-first; y: (B=3, T=5, 32) batch-first; u: (T=5, 32) unbatched
        a = self.seq_first(x, x, x, attn_mask=torch.zeros(12, 5, 5, dtype=torch.bool))
        b = self.seq_first(query=x, key=x, value=x,
                           attn_mask=torch.zeros(20, 5, 5, dtype=torch.bool))
        c = self.seq_first(x, x, x, None, True, torch.zeros(20, 5, 5, dtype=torch.bool))
        d = self.batch_first(y, y, y, attn_mask=torch.zeros(12, 5, 5, dtype=torch.bool))
        e = self.seq_first(u, u, u, attn_mask=torch.zeros(4, 5, 5, dtype=torch.bool))
        f = self.seq_first(x, x, x, attn_mask=torch.zeros(5, 5, dtype=torch.bool))
        g = self.seq_first(x, x, x,
                           key_padding_mask=torch.zeros(3, 1, 5, dtype=torch.bool))
        h = self.seq_first(x, x, x, torch.zeros(3, 1, 5, dtype=torch.bool))
        i = self.seq_first(x, x, x, key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))
        j = self.seq_first(x, x, x, attn_mask=torch.zeros(3, 4, 5, 5, dtype=torch.bool))
        return a, b, c, d, e, f, g, h, i, j


if __name__ == "__main__":
    out = Layers()(torch.randn(5, 3, 32), torch.randn(3, 5, 32), torch.randn(5, 32))
"""


def _where(code: str, found) -> list[tuple[int, str]]:
    """(line, the source text from the finding's column on) of each finding."""
    lines = code.splitlines()
    return sorted((d.line, lines[d.line - 1][d.span.column - 1:].split(",")[0]) for d in found)


def test_SC202_multihead_attention_masks_by_keyword_and_position_and_the_batch_axis() -> None:
    found = _findings(SC202_MHA, "SC202")
    # a seq-first layer's batch is axis 1 of the query (3 * 4 heads = 12, not 5 * 4); a batch-first
    # layer's is axis 0; an unbatched query takes a (num_heads, L, S) mask; 2-D masks and (B, S)
    # padding masks are right. Reported at the mask given by keyword, at the call when positional.
    assert _where(SC202_MHA, found) == [
        (15, "torch.zeros(20"),
        (16, "self.seq_first(x"),
        (21, "torch.zeros(3"),
        (22, "self.seq_first(x"),
        (24, "torch.zeros(3"),
    ]
    by_line = {d.line: d for d in found}
    assert "batch * num_heads = 12" in by_line[15].message and "not 20" in by_line[15].message
    assert "(3, 1, 5)" in by_line[21].message and "rank 3" in by_line[21].message
    assert "rank 4" in by_line[24].message
    assert all(d.hint for d in found)


SC202_BUFFERS = """
import torch
from jaxtyping import Float
from torch import Tensor


def full_length(q: Float[Tensor, "b h 16 8"], k: Float[Tensor, "b h 16 8"]):
    causal = torch.tril(torch.ones(16, 16))
    return torch.softmax((q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(causal == 0, float("-inf")), dim=-1)


def invented_length(q: Float[Tensor, "b h _ 8"], k: Float[Tensor, "b h _ 8"]):
    causal = torch.tril(torch.ones(16, 16))
    return torch.softmax((q @ k.transpose(-2, -1) / 8 ** 0.5).masked_fill(causal == 0, float("-inf")), dim=-1)


def any_length(q: Float[Tensor, "b h t 8"], k: Float[Tensor, "b h t 8"]):
    causal = torch.tril(torch.ones(16, 16))
    scores = q @ k.transpose(-2, -1) / 8 ** 0.5
    return torch.softmax(scores.masked_fill(causal == 0, float("-inf")), dim=-1)
"""


def test_SC202_an_unsliced_buffer_is_judged_by_the_key_length() -> None:
    # a 16 x 16 buffer against 16 keys fits (the heads axis is not the key length); against a length
    # the engine had to invent (`_`) there is no evidence; against any length t it needs slicing,
    # reported at the mask argument
    found = _findings(SC202_BUFFERS, "SC202")
    assert _where(SC202_BUFFERS, found) == [(20, "causal == 0")]
    assert "16 x 16" in found[0].message and "(b, h, t, t)" in found[0].message and found[0].hint


SC202_BIAS = """
import torch
from jaxtyping import Float
from torch import Tensor


def add_bias(scores, bias):
    return scores + bias


def attend(q: Float[Tensor, "b h 16 64"], k: Float[Tensor, "b h 16 64"], v: Float[Tensor, "b h 16 64"]):
    scores = q @ k.transpose(-2, -1) / 8.0
    first = add_bias(scores, torch.zeros(32, 32))
    second = add_bias(scores, torch.zeros(8, 8))
    third = scores + torch.zeros(4, 4)
    return torch.softmax(first + second + third, dim=-1) @ v
"""


def test_SC202_every_mask_that_cannot_broadcast_is_reported_once() -> None:
    # the helper's sum conflicts in two contexts (one finding there), and the later sum still counts
    found = _findings(SC202_BIAS, "SC202")
    assert [d.line for d in found] == [8, 15]
    assert all("cannot broadcast" in d.message and d.hint for d in found)


SC301_FIXES = """import torch
import torch.nn as nn


class Embed(nn.Module):
    def __init__(self, vocab=100, width=32, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)

    def forward(self, ids):
        b, t = ids.shape
        tok, pos = self.tokens(ids), self.positions(torch.arange(t)).expand(b, t, -1)
        by_keyword = torch.cat(tensors=[tok, pos], dim=-1)
        wrapped = (torch.cat((tok, pos), -1)).sum(-1)
        three = torch.cat([tok, pos, pos], dim=2)
        parts = [tok, pos]
        listed = torch.cat(parts, dim=-1)
        return by_keyword, wrapped, three, listed


if __name__ == "__main__":
    out = Embed()(torch.randint(0, 100, (2, 16)))
"""


def test_SC301_fix_keeps_parentheses_and_keyword_tensors_and_leaves_other_cats_alone() -> None:
    from shapecheck.fixes import fix_module

    result = lint_source(SC301_FIXES, "snippet.py", {"SC301"})
    assert result.error is None, result.error
    fixes = {d.line: d.fix for d in result.diagnostics}
    assert sorted(fixes) == [14, 15, 16, 18]  # every concatenation of the positions is reported
    assert fixes[16] is None and fixes[18] is None  # three tensors, or a list built elsewhere: no fix
    assert all(fixes[line].message for line in (14, 15))
    fixed = fix_module(result.module, SC301_FIXES, result.diagnostics).fixed.splitlines()
    assert fixed[13:15] == ["        by_keyword = tok + pos", "        wrapped = (tok + pos).sum(-1)"]


SC205_FIXES = """import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor


def attend(q: Float[Tensor, "b h t 16"], k: Float[Tensor, "b h t 16"], v: Float[Tensor, "b h t 16"]):
    t = q.size(-2)
    scores = q @ k.transpose(-2, -1) / 4.0
    first = scores.masked_fill(torch.triu(torch.ones(t, t, dtype=torch.bool), 0), float("-inf"))
    second = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(0), float("-inf"))
    third = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(), float("-inf"))
    allowed = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tril(torch.ones(t, t, dtype=torch.bool), -1))
    return first.softmax(-1) @ v + second.softmax(-1) @ v + third.softmax(-1) @ v + allowed
"""


def test_SC205_fix_sets_the_diagonal_where_it_is_given_and_never_on_a_lower_triangle() -> None:
    from shapecheck.fixes import fix_module

    result = lint_source(SC205_FIXES, "snippet.py")
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.code == "SC205"]
    assert [d.line for d in found] == [10, 11, 12, 13]
    # SDPA's allowed set tril(-1): a lower triangle, where diagonal=1 would be wrong, so no fix
    assert [d.fix is not None for d in found] == [True, True, True, False]
    fixed = fix_module(result.module, SC205_FIXES, found).fixed.splitlines()
    assert "torch.triu(torch.ones(t, t, dtype=torch.bool), 1)" in fixed[9]  # the positional diagonal
    assert "dtype=torch.bool).triu(1)" in fixed[10]  # the method's first argument
    assert "dtype=torch.bool).triu(diagonal=1)" in fixed[11]  # none given: added by keyword
    assert "torch.tril(torch.ones(t, t, dtype=torch.bool), -1)" in fixed[12]


#: Runs under torch 2.13 as written (every method is called in __main__).
SC303_SITES = """import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Blocks(nn.Module):
    def __init__(self, vocab=100, width=32, block=16):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.zeros(1, block, width))
        self.mha = nn.MultiheadAttention(width, 4, batch_first=True)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(width, 4, batch_first=True), 1)

    def scores_by_keyword(self, ids):
        x = self.tokens(ids)
        return torch.softmax(input=x @ x.transpose(-2, -1) / math.sqrt(32), dim=-1) @ x

    def features_softmax(self, ids):
        return torch.softmax(self.tokens(ids), dim=-1)

    def sdpa_by_keyword(self, ids):
        x = self.tokens(ids)
        return F.scaled_dot_product_attention(query=x, key=x, value=x)

    def mha_by_keyword(self, ids):
        x = self.tokens(ids)
        return self.mha(query=x, key=x, value=x)[0]

    def sdpa_positions_in_the_key(self, ids):
        x = self.tokens(ids)
        keys = x + self.positions[:, : ids.size(1)]
        return F.scaled_dot_product_attention(x, key=keys, value=x)

    def mha_positions_in_the_key(self, ids):
        x = self.tokens(ids)
        keys = x + self.positions[:, : ids.size(1)]
        return self.mha(x, key=keys, value=x)[0]

    def positional_keys(self, ids):
        x = self.tokens(ids)
        keys = x + self.positions[:, : ids.size(1)]
        return F.scaled_dot_product_attention(x, keys, x) + self.mha(x, keys, x)[0]


if __name__ == "__main__":
    model, ids = Blocks(), torch.randint(0, 100, (2, 16))
    for method in (model.scores_by_keyword, model.features_softmax, model.sdpa_by_keyword, model.mha_by_keyword,
                   model.sdpa_positions_in_the_key, model.mha_positions_in_the_key, model.positional_keys):
        method(ids)
"""


def test_SC303_attention_inputs_by_keyword_and_positions_that_come_in_through_the_key() -> None:
    # softmax(input=scores), SDPA(query=...) and MultiheadAttention(query=...) over bare token
    # embeddings are reported; a softmax over embedding features is not attention; positions added
    # to the key (by keyword or by position) reach the attention, so those stay clean
    assert _lines(SC303_SITES, "SC303") == [16, 23, 27]


#: Runs under torch 2.13 as written.
SC401_KEYWORDS = """import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class ByKeyword(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.qk = nn.Linear(width, width)
        self.v = nn.Linear(width, width)
        self.temperature = torch.ones(1)

    def forward(self, x):
        q = self.qk(x)
        k = self.qk(x)
        return F.scaled_dot_product_attention(query=q, key=k, value=self.v(x)) * self.temperature


class SoftmaxByKeyword(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.qk = nn.Linear(width, width)
        self.v = nn.Linear(width, width)

    def forward(self, x):
        q = self.qk(x)
        k = self.qk(x)
        return torch.softmax(input=q @ k.transpose(-2, -1) / math.sqrt(32), dim=-1) @ self.v(x)


if __name__ == "__main__":
    x = torch.randn(2, 5, 32)
    ByKeyword()(x), SoftmaxByKeyword()(x)
"""


def test_SC401_query_and_key_given_by_keyword() -> None:
    # SDPA(query=, key=) and softmax(input=scores) with q and k from one Linear: reported at the key's
    # projection; a plain tensor attribute (not a parameter) next to them is no binding of a weight
    assert _lines(SC401_KEYWORDS, "SC401") == [16, 28]


#: 512 features in 6 heads: torch's view raises (512 // 6 * 6 = 510).
SC402_SPLIT = """import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, width=512, heads=6):
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        return self.q(x).view(b, t, self.heads, c // self.heads)


if __name__ == "__main__":
    out = Attention()(torch.randn(2, 8, 512))
"""


def test_SC402_an_uneven_split_in_one_file_names_no_other_place_and_says_how_to_fix_it() -> None:
    found = _findings(SC402_SPLIT, "SC402")
    # one bug, one finding: the split is met when its method is analysed alone and again through
    # the construction that configures it; it is reported once, at the construction
    assert [d.line for d in found] == [17]
    for finding in found:
        assert "512 is not divisible by 6" in finding.message
        assert "(the head split" not in finding.message  # the evidence is in this file: no "in other.py:N"
        assert finding.hint


SC504_RANK_3 = """import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.q = nn.Linear(width, width)
        self.k = nn.Linear(width, width)

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        return torch.softmax(q @ k.transpose(0, 1) / 4.0, dim=-1)


if __name__ == "__main__":
    out = Attention()(torch.randn(16, 10, 16))
"""


def test_SC504_message_gives_the_key_with_its_last_two_axes_swapped() -> None:
    from conftest import REPO, lint_shipped_file

    bug = lint_shipped_file(REPO / "examples" / "bugs" / "sc504_wrong_key_transpose.py")
    (four_d,) = [d for d in bug.diagnostics if d.code == "SC504"]
    assert "key (2, 4, 10, 16)" in four_d.message and four_d.message.endswith("swapped, (2, 4, 16, 10)")
    (three_d,) = _findings(SC504_RANK_3, "SC504")
    assert "key (16, 10, 16)" in three_d.message and three_d.message.endswith("swapped, (16, 16, 10)")


SC404_LENGTHS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class LM(nn.Module):
    def __init__(self, vocab, ctx, dim, n, m, other):
        super().__init__()
        assert n == ctx
        assert m == dim
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.by_table = nn.LayerNorm(ctx)
        self.by_assert = nn.LayerNorm(n)
        self.width = nn.LayerNorm(m)
        self.unrelated = nn.LayerNorm(other)

    def forward(self, ids, span):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))
        assert span == t
        y = F.layer_norm(x, (span,))
        return self.by_table(x) + self.by_assert(x) + self.width(x) + self.unrelated(x), y
"""


SC404_TABLE_AS_WIDE_AS_THE_MODEL = """
import torch
import torch.nn as nn


class LM(nn.Module):
    def __init__(self, vocab, ctx, dim):
        super().__init__()
        assert ctx == dim
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.norm = nn.LayerNorm(ctx)

    def forward(self, ids):
        b, t = ids.shape
        return self.norm(self.tok(ids) + self.pos(torch.arange(t)))
"""


def test_SC404_a_symbolic_normalized_size_is_judged_by_what_it_equals() -> None:
    # a position table's length that an assert makes the width too: the norm is over the features
    assert _findings(SC404_TABLE_AS_WIDE_AS_THE_MODEL, "SC404") == []
    found = {d.line: d for d in _findings(SC404_LENGTHS, "SC404")}
    # the position table's length, a size asserted equal to it, and a size asserted equal to the
    # time axis are sequence lengths; a size asserted equal to the width, or unrelated, is no claim
    assert sorted(found) == [14, 15, 23]
    for line in (14, 15):
        message = found[line].message
        assert "positional" in message and "axis 1" not in message and "F.layer_norm" not in message
        assert "LayerNorm(dim)" in message and "(b, t, dim)" in message and found[line].hint
    assert "axis 1" in found[23].message and "expected F.layer_norm(dim)" in found[23].message


SC404_NO_POSITIONS = """
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, vocab, width):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)

    def forward(self, ids):
        n, steps = ids.shape
        h = self.tok(ids)
        return F.layer_norm(h, (steps,))

    def any_shape(self, ids):
        h = self.tok(ids)
        return F.layer_norm(h, h.shape[1:])


class Head(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.norm = nn.LayerNorm(width)

    def forward(self, x, shape):
        return self.norm(x), F.layer_norm(self.norm(x), shape)


def steps_known_by_assert(ids):
    batch, steps = ids.shape
    assert steps == 16
    return F.layer_norm(nn.Embedding(100, 64)(ids), (16,))
"""


def test_SC404_the_time_axis_of_token_states_without_any_position_table() -> None:
    # the normalized size is the input's own axis 1 (no position table in the file); an input of
    # unknown shape gives no claim and no error
    found, by_assert = _findings(SC404_NO_POSITIONS, "SC404")
    assert found.line == 14 and "axis 1" in found.message and "width" in found.message
    assert "(n, steps, width)" in found.message and "F.layer_norm(width)" in found.message
    # a constant size that the time axis equals by an assert: the axis is named
    assert by_assert.line == 33 and "16 is the size of axis 1 (the sequence axis)" in by_assert.message


SC404_IMAGE_NEXT_TO_A_POSITION_TABLE = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, vocab=50, ctx=32, dim=40):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.ln = nn.LayerNorm([32, 8, 8])

    def forward(self, ids, img):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t))
        return x, self.ln(self.stem(img.view(b, 3, 8, 8)))
"""


def test_SC404_a_multi_dim_norm_whose_first_size_equals_a_sequence_length_is_right() -> None:
    # LayerNorm([C, H, W]) of conv features, with C = 32 also the length of a position table
    assert _findings(SC404_IMAGE_NEXT_TO_A_POSITION_TABLE, "SC404") == []


SC404_AFTER_A_CONFLICT = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, vocab=100, width=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.proj = nn.Linear(width // 2, width)
        self.norm = nn.LayerNorm(16)

    def forward(self, ids):
        return self.norm(self.proj(self.tok(ids)))


Block()(torch.randint(0, 100, (2, 16)))
"""


def test_SC404_a_wrong_norm_of_a_conflicting_projection_is_a_follow_on() -> None:
    result = lint_source(SC404_AFTER_A_CONFLICT, "snippet.py")
    assert result.error is None, result.error
    assert [(d.line, d.code) for d in result.diagnostics] == [(14, "SC505")]  # the root only
    alone = lint_source(SC404_AFTER_A_CONFLICT, "snippet.py", {"SC404"})
    assert [(d.line, d.code) for d in alone.diagnostics] == [(11, "SC404")]


SC404_CONSTANTS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def norm_rows(h):
    return F.layer_norm(h, (h.shape[1],))


def f(ids, other):
    tok = nn.Embedding(100, 64)
    x = tok(ids)
    a = F.layer_norm(x, (16,))
    b = F.layer_norm(x, (2,))
    c = F.layer_norm(x, (16, 32))
    heads = x.view(2, 16, 4, 16)
    d = F.layer_norm(heads, (4, 16))
    e = F.layer_norm(x[0], (5, 16, 64))
    g = F.layer_norm(x[0], (16, 64))
    k = F.layer_norm(x.view(2, 16, 16, 4), (16,))
    m = norm_rows(x) + norm_rows(tok(other))
    return a, b, c, d, e, g, k, m


f(torch.randint(0, 100, (2, 16)), torch.randint(0, 100, (2, 16)))
"""


def test_SC404_constant_shapes_name_the_axis_the_size_belongs_to() -> None:
    found = {d.line: d for d in _findings(SC404_CONSTANTS, "SC404")}
    # a per-head norm over (heads, head_dim) of 4-D token states and a full norm of a 2-D input are
    # right; every other call is reported once, the helper once for its two calls
    assert sorted(found) == [8, 14, 15, 16, 19, 21]
    assert "16 is the size of axis 1 (the sequence axis)" in found[14].message
    assert "2 is the size of axis 0:" in found[15].message
    assert "(16, 32) " in found[16].message and "axis" not in found[16].message
    assert "more dims than the input has" in found[19].message and "(5, 16, 64)" in found[19].message
    assert "16 is the size of axis 1:" in found[21].message  # a 4-D input's axis 1 is not its sequence
    assert "(the sequence axis)" in found[8].message
    for line in (14, 15, 16, 19):
        assert "expected the feature dim 64" in found[line].message or "LayerNorm(64)" in found[line].hint
        assert "F.layer_norm" in found[line].message and found[line].hint.endswith("LayerNorm(64)")


SC404_BUILT_AND_APPLIED = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class LM(nn.Module):
    def __init__(self, vocab=50, ctx=24, dim=40):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(ctx)
        self.full = nn.LayerNorm((ctx, dim))

    def forward(self, ids):
        x = self.tok(ids)
        x = self.norm(self.norm(x))
        y = F.layer_norm(x, x.shape[1:])
        return self.full(x), y


LM()(torch.randint(0, 50, (2, 24)))
"""


def test_SC404_a_layer_applied_twice_is_reported_once_where_built_and_later_sites_still_count() -> None:
    found = {d.line: d for d in _findings(SC404_BUILT_AND_APPLIED, "SC404")}
    assert sorted(found) == [11, 12, 17]
    assert "LayerNorm(40)" in found[11].hint and "F.layer_norm" not in found[11].message
    # over (t, d) of token states: the module form says LayerNorm, the functional form F.layer_norm
    assert found[12].hint.endswith("LayerNorm(40)") and "F.layer_norm" not in found[12].message
    assert "F.layer_norm(x, (40,))" in found[17].hint and "F.layer_norm over (24, 40)" in found[17].message


SC203_POLARITIES = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, width=32, heads=4, span=16):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.mha = nn.MultiheadAttention(width, heads)
        self.register_buffer("lower", torch.tril(torch.ones(span, span, dtype=torch.bool)))
        self.register_buffer("upper", torch.triu(torch.ones(span, span, dtype=torch.bool), diagonal=1))

    def forward(self, x, ids, gate):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        s = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        pad = (ids == 0)[:, None, None, :]
        a = (s.masked_fill(self.lower[:t, :t], float("-inf"))).softmax(-1) @ v
        b2 = (s.masked_fill(self.lower[:t, :t], -1e4)).softmax(-1) @ v
        c2 = (s.masked_fill(self.lower[:t, :t], -1.0)).softmax(-1) @ v
        d = (s.masked_fill(self.lower[:t, :t], gate)).softmax(-1) @ v
        e = (torch.where(self.upper[:t, :t], s, float("-inf"))).softmax(-1) @ v
        f = (s.masked_fill(pad, float("-inf"))).softmax(-1) @ v
        g = (s.masked_fill(gate, float("-inf"))).softmax(-1) @ v
        o1 = F.scaled_dot_product_attention(q, k, v, self.upper[:t, :t])
        o2 = F.scaled_dot_product_attention(q, k, v, attn_mask=self.upper[:t, :t])
        o3 = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = x.transpose(0, 1)
        m1 = self.mha(y, y, y, None, True, self.lower[:t, :t])
        m2 = self.mha(y, y, y, attn_mask=self.lower[:t, :t])
        return a, b2, c2, d, e, f, g, o1, o2, o3, m1, m2
"""


def test_SC203_which_side_a_fill_blocks_the_fill_threshold_and_masks_by_position() -> None:
    found = _findings(SC203_POLARITIES, "SC203")
    assert all(d.hint for d in found) and not any("None" in d.message for d in found)
    where = dict(_where(SC203_POLARITIES, found))
    # -inf and -1e4 fills of the allowed set (a -1 fill blocks nothing: SC104's); a fill of unknown
    # value, a padding mask and a mask of unknown provenance are no claim; where(future, s, -inf)
    # keeps the future; SDPA's mask by position or keyword; MultiheadAttention's 6th argument
    assert sorted(where) == [22, 23, 26, 29, 30, 33, 34]
    assert where[22].startswith("self.lower") and where[26].startswith("self.upper")
    assert where[29].startswith("self.upper") and where[34].startswith("self.lower")
    messages = {d.line: d.message for d in found}
    assert "where the mask is True" in messages[22] and "True on the past and the diagonal" in messages[22]
    assert "where the mask is False" in messages[26] and "False on the past" in messages[26]


SC204_SELF_AND_CROSS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width=32, heads=4):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.mha = nn.MultiheadAttention(width, heads, batch_first=True)

    def forward(self, x, memory):
        q, k, v = self.q(x), self.k(x), self.v(x)
        km, vm = self.k(memory), self.v(memory)
        a = torch.softmax(input=q @ k.transpose(-2, -1) / 8, dim=-1) @ v
        c = torch.softmax(q @ km.transpose(-2, -1) / 8, dim=-1) @ vm
        e = F.scaled_dot_product_attention(query=q, key=k, value=v)
        f = F.scaled_dot_product_attention(q, km, vm)
        g = F.scaled_dot_product_attention(q, k, x)
        m1, _ = self.mha(query=x, key=x, value=x)
        m2, _ = self.mha(x, memory, memory)
        return a + c + e + f + g + m1 + m2


class Decoder(nn.Module):
    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.src = nn.Embedding(vocab, width)
        self.block = Block(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx, src_ids):
        return self.head(self.block(self.tok(idx), self.src(src_ids)))

    def loss(self, idx, src_ids):
        logits = self(idx, src_ids)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
"""


def test_SC204_self_attention_by_keyword_and_position_and_cross_attention_left_alone() -> None:
    # a decoder trained on shifted targets: its self-attention (softmax over `input=`, SDPA by
    # keyword, SDPA whose value is the input itself, MultiheadAttention by keyword) needs a causal
    # mask; its cross-attention to the source (softmax, SDPA, MultiheadAttention) does not
    assert _lines(SC204_SELF_AND_CROSS, "SC204") == [16, 18, 20, 21]


SC302_TABLES = """import torch
from torch import nn


class Patches(nn.Module):
    def __init__(self, image_size, patch_size, width, channels=3):
        super().__init__()
        self.proj = nn.Conv2d(channels, width, kernel_size=patch_size, stride=patch_size)
        self.pos = nn.Embedding((image_size // patch_size) ** 2, width)
        self.ids = torch.arange((image_size // patch_size) ** 2)

    def forward(self, pixels):
        b, c, h, w = pixels.shape
        x = self.proj(pixels).flatten(2).transpose(1, 2)
        return x + self.pos(self.ids)


class Tokens(nn.Module):
    def __init__(self, vocab, max_len, width):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(1, max_len, width))
        self.flat = nn.Parameter(torch.zeros(max_len, width))

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids)
        first = x + self.pos
        second = self.pos + x
        third = x + self.flat
        fourth = self.tok(ids) + self.pos
        return first, second, third, fourth
"""


def test_SC302_fix_slices_the_table_on_either_side_and_a_table_made_for_the_input_formula_is_right() -> None:
    from shapecheck.fixes import fix_module

    # patches (h // p) * (w // p) against a table of (image_size // p) ** 2: the same formula
    result = lint_source(SC302_TABLES, "snippet.py", {"SC302"})
    assert result.error is None, result.error
    fixes = {d.line: d.fix for d in result.diagnostics}
    assert sorted(fixes) == [28, 29, 30, 31]
    assert fixes[31] is None  # the other operand is a call: no name to read the length from
    assert all(fixes[line].message for line in (28, 29, 30))
    fixed = fix_module(result.module, SC302_TABLES, result.diagnostics).fixed.splitlines()
    assert fixed[27:30] == [
        "        first = x + self.pos[:, :x.size(-2)]",
        "        second = self.pos[:, :x.size(-2)] + x",
        "        third = x + self.flat[:x.size(-2)]",
    ]


SC304_TABLES = """import math

import torch


def half_speed(max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) * 0.5 / d))
    pe = torch.zeros(max_len, d)
    pe[0] = 0.0
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


def bounds(max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    low = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) * 0.75 / d))
    high = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) * 1.4 / d))
    pe = torch.zeros(max_len, d)
    pe[:, 0::2] = torch.sin(position * low)
    pe[:, 1::2] = torch.cos(position * high)
    return pe


def separate_tables(max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    sin_t, cos_t = torch.zeros(max_len, d), torch.zeros(max_len, d)
    sin_t[:, 0::2] = torch.sin(position * div_term)
    cos_t[:, 0::2] = torch.cos(position * div_term)
    return sin_t, cos_t


def sines(max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    pe = torch.zeros(max_len, d)
    pe[:, 0::2] = torch.sin(position * torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d)))
    return pe


def cosines(max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    pe = torch.zeros(max_len, d)
    pe[:, 0::2] = torch.cos(position * torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d)))
    return pe


def overwritten(slots, max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe = torch.zeros(max_len, d)
    pe[:, slots] = torch.sin(position * div_term)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 0::2] = torch.cos(position * div_term)
    return pe


def into(pe, max_len=64, d=32):
    position = torch.arange(max_len).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe

"""


def test_SC304_tolerance_bounds_separate_tables_and_writes_the_rule_cannot_read() -> None:
    found = {d.line: d for d in _findings(SC304_TABLES, "SC304")}
    # half the frequency slope is reported (after a plain write to the table); 0.75 and 1.4 times
    # are the bounds of the formula (the two-halves layout); sin and cos each in their own table,
    # or each in their own function, overwrite nothing; an overwrite after a write to slots the
    # rule cannot read is still one; a table passed in (unknown shape) gives no claim and no error
    assert sorted(found) == [8, 55]
    assert "0.5 times as fast" in found[8].message
    assert "cos" in found[55].message and "sin" in found[55].message
    assert all(d.hint for d in found.values())


def test_SC501_the_fix_inserts_contiguous_and_says_so() -> None:
    from conftest import REPO, lint_shipped_file

    bug = lint_shipped_file(REPO / "examples" / "bugs" / "sc501_view_non_contiguous.py")
    (found,) = [d for d in bug.diagnostics if d.code == "SC501"]
    assert found.fix is not None and found.fix.message and ".contiguous().view(" in found.fix.edits[0].content


#: Untied positional attention (TUPE): a learned absolute table enters attention only as a bias
#: ``p @ p.T`` on the scores. The table is a plain nn.Parameter sliced to the sequence length; the
#: engine once marked such a parameter positional only when it was added to token embeddings, so the
#: bias carried no position provenance and SC303 reported the tokens (a false positive). The rows of
#: a per-position parameter cut to the sequence are now a learned positional table.
SC303_POSITIONAL_BIAS = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self, vocab=100, width=32, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(max_len, width))
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, ids):
        b, t = ids.shape
        q, k, v = self.qkv(self.tok(ids)).chunk(3, dim=-1)
        p = self.pos[:t]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=p @ p.T)
"""


def test_SC303_a_learned_position_table_used_only_as_an_attention_bias_gives_positions() -> None:
    assert _findings(SC303_POSITIONAL_BIAS, "SC303") == []
    # the same model without the bias has no positions at all
    unbiased = SC303_POSITIONAL_BIAS.replace("attn_mask=p @ p.T", "attn_mask=None")
    assert [d.code for d in _findings(unbiased, "SC303")] == ["SC303"]


#: A model trained with no mode-dependent layer (nothing to switch) comes first in the loop.
SC601_PROBE = """
    probe = nn.Linear(4, 2)
    probe_optim = torch.optim.SGD(probe.parameters(), lr=0.1)
    for _ in range(2):
        probe_optim.zero_grad()
        probe(torch.randn(3, 4)).sum().backward()
        probe_optim.step()
    modes = []"""


@pytest.mark.parametrize("size", [5, 40, 41, 53, 54])
def test_SC601_the_message_names_the_model_and_its_switch_as_the_script_writes_them(size: int) -> None:
    import re

    from conftest import REPO

    name = ("model_" + "x" * size)[:size] if size > 5 else "model"
    source = (REPO / "examples" / "bugs" / "sc601_missing_train_eval_mode.py").read_text()
    source = re.sub(r"\bmodel\b", name, source).replace("\n    modes = []", SC601_PROBE)
    (found,) = _findings(source, "SC601")
    # up to 40 characters the call's own text, a longer one gives way to the construction; the
    # switch up to 60 characters, a longer one is cut to 57 and "..."
    label = name if len(name) <= 40 else "MiniGPT(...)"
    switch = f"{name}.eval()" if len(name) + 7 <= 60 else f"{name}.eval()"[:57] + "..."
    assert found.message.startswith(f"`{label}` trains here in eval mode on some path: `{switch}` ran before")


@pytest.mark.parametrize("call", ["torch.transpose(K, 1, 2)", "torch.Tensor.transpose(K, 1, 2)"])
def test_SC504_the_fix_of_a_function_form_transpose_keeps_it_a_function(call: str) -> None:
    from conftest import REPO

    source = (REPO / "examples" / "bugs" / "sc504_wrong_key_transpose.py").read_text()
    (found,) = _findings(source.replace("K.transpose(1, 2)  # BUG", f"{call}  # BUG"), "SC504")
    assert found.fix is not None and found.fix.edits[0].content == call.replace("1, 2)", "-2, -1)")


SC507_AFTER_A_BATCH_FIRST_LAYER = """import torch
import torch.nn as nn


class EncoderLayer(nn.Module):
    def __init__(self, vocab_size=100, d_model=64, n_heads=4, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.first = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.widen = nn.Linear(d_model // 2, d_model)
        self.second = nn.MultiheadAttention(d_model, n_heads)
        self.seq_first = nn.MultiheadAttention(d_model, n_heads)

    def forward(self, ids):
        batch_size, seq_len = ids.size()
        x = self.embedding(ids)
        padding = ids == self.pad_id
        y, _ = self.first(x, x, x, key_padding_mask=padding)
        t = x.transpose(0, 1)
        w, _ = self.seq_first(t, t, t)
        z = self.widen(y)
        out, _ = self.second(z, z, z, key_padding_mask=padding)
        return out, w


EncoderLayer()(torch.randint(0, 100, (2, 16)))
"""


def test_SC507_a_right_layer_first_and_a_wrong_one_after_a_conflict_is_a_follow_on() -> None:
    # the batch-first layer, and a seq-first one given (seq, batch, feature), are right; the seq-first
    # one given the widened (batch, seq, feature) states is reported where it is built (line 12), with
    # a hint, when the rule runs alone; with all rules on it is a follow-on of the width conflict
    # before its call
    alone = lint_source(SC507_AFTER_A_BATCH_FIRST_LAYER, "snippet.py", {"SC507"})
    assert [(d.line, bool(d.hint)) for d in alone.diagnostics] == [(12, True)]
    every = lint_source(SC507_AFTER_A_BATCH_FIRST_LAYER, "snippet.py")
    assert [d.line for d in every.diagnostics if d.code in ("SC505", "SC507")] == [22]


#: A character-level LM shared by the SC603 snippets below.
CHAR_MODEL = """import torch
import torch.nn as nn
import torch.nn.functional as F


class CharModel(nn.Module):
    def __init__(self, vocab_size=40, d_model=32):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        return self.head(self.token_emb(idx))
"""


SC603_LOSSES = CHAR_MODEL + """

def losses(model, data, other, ix, start, first):
    x = torch.stack([data[i : i + 16] for i in ix])
    logits = model(x)
    rebuilt = F.cross_entropy(model(other).transpose(1, 2), other)
    shifted = torch.stack([data[i + 1 : i + 17] for i in ix])
    elsewhere = torch.stack([other[i : i + 16] for i in ix])
    a = F.cross_entropy(logits.view(-1, 40), shifted.view(-1))
    b = F.cross_entropy(logits.view(-1, 40), elsewhere.view(-1))
    c = F.cross_entropy(logits.view(-1, 40), torch.stack([data[i : i + 16] for i in ix]).view(-1))
    u = model(data[start : start + 16])
    assert first == start
    d = F.cross_entropy(u, data[first : first + 16])
    return rebuilt + a + b + c + d


losses(CharModel(), torch.randint(0, 40, (500,)), torch.randint(0, 40, (500,)), torch.randint(0, 400, (8,)), 3, 3)
"""


def test_SC603_right_and_unrelated_targets_first_and_the_offset_in_the_message() -> None:
    found = _findings(SC603_LOSSES, "SC603")
    # a reconstruction loss (a sequence against itself, no causal attention), shifted targets and
    # targets from another sequence come first and are right; the unshifted
    # windows are reported at the targets' slice, with the offset when it is a number (the call
    # gives start = first = 3)
    where = dict(_where(SC603_LOSSES, found))
    assert sorted(where) == [24, 27]
    assert where[24].startswith("data[i : i + 16]") and where[27].startswith("data[first")
    messages = {d.line: d.message for d in found}
    assert "(offset" not in messages[24] and "(offset 3)" in messages[27]
    assert all(d.hint for d in found)


SC602_CONTEXTS_AND_ASSUMPTIONS = """import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor


def lm_loss(logits, targets):
    return F.cross_entropy(logits, targets)


def train(flat: Float[Tensor, "n 50"], labels: Int[Tensor, "n"], seq: Float[Tensor, "b t 50"], ids: Int[Tensor, "b t"]):
    return lm_loss(flat, labels) + lm_loss(seq, ids)


def square(logits: Float[Tensor, "b t v"], ids: Int[Tensor, "b t"]):
    b, t, v = logits.shape
    assert t == v
    return F.cross_entropy(logits, ids)


def widths(logits: Float[Tensor, "b t v"], ids: Int[Tensor, "b s"]):
    b, t, v = logits.shape
    b2, s = ids.shape
    assert s == t
    return F.cross_entropy(logits, ids)
"""


def test_SC602_a_helper_right_in_one_context_and_sizes_known_equal_by_an_assert() -> None:
    # the helper is right for (n, 50) logits, so its (b, t, 50) call decides nothing alone; (b, t, v)
    # logits with t == v asserted are ambiguous (no claim); with targets (b, s) and s == t asserted,
    # the classes are provably last
    found = _findings(SC602_CONTEXTS_AND_ASSUMPTIONS, "SC602")
    assert [d.line for d in found] == [25] and "the classes (v) are on the last dim" in found[0].message


def test_SC601_every_finding_says_how_to_fix_it_and_names_no_missing_switch() -> None:
    from shapecheck.rules.sc601_missing_train_eval_mode import MissingTrainEvalMode

    found = [d for example in MissingTrainEvalMode.INVALID for d in _findings(example.code, "SC601")]
    assert found and all(d.hint for d in found)
    assert not any("None" in d.message for d in found)
    evaluations = [d.message for d in found if "in training mode" in d.message]
    assert evaluations and all("(since `" in message for message in evaluations)  # the construction, as written


SC204_MASKED_LATE_OR_ELSEWHERE = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width=32, span=16):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, width)
        self.register_buffer("keep", torch.tril(torch.ones(span, span)))

    def forward(self, x, given):
        t = x.size(1)
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = q @ k.transpose(-2, -1) / 8
        late = torch.softmax(s, dim=-1).masked_fill(self.keep[:t, :t] == 0, 0.0) @ v
        scaled = (torch.softmax(s, dim=-1) * self.keep[:t, :t]) @ v
        left = (self.keep[:t, :t] * torch.softmax(s, dim=-1)) @ v
        keyword = torch.masked_fill(input=torch.softmax(s, dim=-1), mask=self.keep[:t, :t] == 0, value=0.0) @ v
        passed_in = torch.softmax(s.masked_fill(given == 0, float("-inf")), dim=-1) @ v
        bare = torch.softmax(s, dim=-1) @ v
        return late + scaled + left + keyword + passed_in + bare


class LM(nn.Module):
    def __init__(self, vocab=100, width=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(16, width)
        self.block = Block(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx, given):
        x = self.tok(idx) + self.pos(torch.arange(idx.size(1)))
        return self.head(self.block(x, given))

    def loss(self, idx, given):
        logits = self(idx, given)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
"""


def test_SC204_a_mask_after_the_softmax_or_of_unknown_kind_is_not_a_missing_one() -> None:
    # masked after the softmax by masked_fill (by position or keyword) or by a product (either side):
    # SC104's (a mask in the wrong place); a mask passed in, of a kind no context shows: no claim;
    # the bare softmax is reported, with a hint
    found = _findings(SC204_MASKED_LATE_OR_ELSEWHERE, "SC204")
    assert [d.line for d in found] == [21] and found[0].hint


SC601_HELPERS_AND_RIGHT_CALLS_FIRST = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vocab=20, width=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids):
        return self.head(self.drop(self.emb(ids)))


ids = torch.randint(0, 20, (4, 8))
model = Net()
probe = nn.Linear(8, 2)
optim = torch.optim.SGD([*model.parameters(), *probe.parameters()], lr=0.1)


def train_step():
    F.cross_entropy(model(ids).transpose(1, 2), ids).backward()


@torch.no_grad()
def evaluate():
    return model(ids)


for step in range(3):
    probe(ids.float()).sum().backward()
    with torch.no_grad():
        probe(ids.float())
    train_step()
    train_step()
    model(ids).sum().backward()
    if step % 2 == 0:
        model.eval()
        with torch.no_grad():
            model(ids)
model.train()
evaluate()
evaluate()
with torch.no_grad():
    model(ids)
"""


def test_SC601_right_calls_and_a_helper_met_twice_come_before_later_findings() -> None:
    # the probe (nothing to switch) evaluated in training mode and the model evaluated in eval mode
    # are right and come first; a training helper and an evaluation helper each called twice are one
    # finding each, at the helper's call; the training step and the evaluation after them still count
    found = _findings(SC601_HELPERS_AND_RIGHT_CALLS_FIRST, "SC601")
    assert [(d.line, "trains here" in d.message) for d in found] == [(24, True), (29, False), (38, True), (47, False)]


def test_SC601_a_model_evaluated_through_its_own_method_is_named_as_the_script_calls_it() -> None:
    from shapecheck.rules.sc601_missing_train_eval_mode import MissingTrainEvalMode

    (example,) = [e for e in MissingTrainEvalMode.INVALID if "generate() in training mode" in e.title]
    (found,) = _findings(example.code, "SC601")
    # reported at `model.generate(...)` (the model calls itself inside), named `model`, not `TinyLM(...)`
    assert found.message.startswith("`model` is evaluated with gradients off but in training mode")


SC603_WINDOWS_AND_ONE_SIDE_CUT = CHAR_MODEL + """

model = CharModel()
data = torch.randint(0, 40, (500,))
ids = torch.randint(0, 40, (4, 16))


def lm_loss(logits, targets):
    return F.cross_entropy(logits.transpose(1, 2), targets)


def windows(start: int, first: int, n: int):
    assert first == start
    u = model(data[start : start + 16])
    w = model(data[n * 0.5 :])
    a = F.cross_entropy(u, data[n * 0.5 : n * 0.5 + 16])
    b = F.cross_entropy(w, data[start : start + 16])
    c = F.cross_entropy(u, data[first : first + 16])
    return a + b + c


def one_side_cut():
    net = CharModel()
    tokens = torch.randint(0, 40, (4, 16))
    whole = net(tokens)
    first = lm_loss(net(tokens[:, :16]), tokens)
    again = lm_loss(net(tokens[:, :16]), tokens)
    direct = F.cross_entropy(net(tokens[:, :16]).transpose(1, 2), tokens)
    return whole, first + again + direct
"""


def test_SC603_unknown_offsets_asserted_starts_and_a_window_cut_on_one_side() -> None:
    found = _findings(SC603_WINDOWS_AND_ONE_SIDE_CUT, "SC603")
    # an offset the engine cannot read (a float start) on either side is no claim, and comes first;
    # window starts equal only by `assert first == start` are the same positions; inputs cut to a
    # window against the whole sequence they came from are enough evidence without causal attention,
    # reported at the targets (the helper's `targets` once for its two calls, then the direct call)
    assert _where(SC603_WINDOWS_AND_ONE_SIDE_CUT, found) == [(22, "targets)"), (31, "data[first : first + 16])"), (41, "tokens)")]
    assert all(d.hint for d in found)


# ------------------------------------------------------------ findings whose place is in another file

_SCORES_HELPER = '''
import torch


def scores_of(q, k):
    return q @ k.transpose(-2, -1)
'''

_ATTENTION_WITH_IMPORTED_PRODUCT = '''
import torch.nn as nn

from helpers import scores_of


class Attention(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        k = k.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.d_k).transpose(1, 2)
        att = scores_of(q, k).softmax(dim=-1)
        return (att @ v).transpose(1, 2).reshape(B, T, C)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention(64, 4)

    def forward(self, x):
        return self.attn(x)
'''


def _lint_files(root, files: dict[str, str], checked: str) -> list[tuple[str, str, int]]:
    """(file, code, line) of a run that checks ``checked`` only: its imports are read, not reported."""
    from pathlib import Path

    from shapecheck.runner import LintOptions, run

    for name, text in files.items():
        (root / name).write_text(text)
    report = run(LintOptions(paths=[str(root / checked)], isolated=True, cache=False)).report
    return sorted((Path(d.path).name, d.code, d.span.line) for d in report.diagnostics)


def test_SC101_unscaled_scores_made_in_a_file_not_reported_land_on_the_softmax(tmp_path) -> None:
    """The product that makes the scores (where the scale goes) is in ``helpers.py``, which this run
    reads but does not report: the finding falls back to the softmax, in the checked file."""
    files = {"helpers.py": _SCORES_HELPER, "attention.py": _ATTENTION_WITH_IMPORTED_PRODUCT}
    assert _lint_files(tmp_path, files, "attention.py") == [("attention.py", "SC101", 20)]


# ------------------------------------------------------------------ SC102: each judgement pinned

def _sc102(path: str) -> list[tuple[int, int, str]]:
    from pathlib import Path

    source = (Path(__file__).parent / "data" / "sc102" / path).read_text()
    return [(d.span.line, d.span.column, d.message) for d in lint_source(source, path, {"SC102"}).diagnostics]


def test_SC102_two_heads_scaled_by_the_width_symbolic_and_numeric() -> None:
    """``_judge``: with two heads (the exemption is for one head only, where the width is d_k), a
    scale of 1/sqrt(width) is reported both when the sizes are symbols (config fields) and when they
    are numbers (``64 ** -0.5`` with 2 heads of 32)."""
    assert _sc102("width_symbolic.py") == [(26, 44, "scores scaled by 1/sqrt(config.n_embd), the model width; in multi-head "
                                             "attention the scale is 1/sqrt(d_k) with d_k = config.n_embd//config.n_head per head")]
    assert _sc102("width_numeric.py") == [(18, 57, "scores scaled by 0.125 = 1/sqrt(64), the model width; in multi-head "
                                            "attention the scale is 1/sqrt(d_k) with d_k = 32 per head")]


def test_SC102_a_head_dim_of_two_is_judged_and_only_exact_values_count() -> None:
    """``_judge``'s numeric checks: d_k = 2 is a real head dim (only d_k = 1, where every power is
    1, is exempt): ``/ 2`` is d_k itself and ``* 2 ** 0.5`` multiplies by sqrt(d_k); a temperature
    of 1.5, near sqrt(2) but not it, is not called sqrt(d_k)."""
    assert _sc102("head_dim_two.py") == [
        (17, 31, "scores scaled by 0.5 = 1/2, that is by d_k itself; expected 1/sqrt(2)"),
        (18, 62, "scores multiplied by 1.41421 = sqrt(2); expected divided by it"),
    ]


def test_SC102_sizes_equal_by_an_assert_are_judged_and_named_as_the_model_names_them() -> None:
    """``_judge`` and ``_unrelated`` simplify the factor and the head dim by the path's assumptions
    (``assert C == self.d_model``): ``/ (d_model // n_heads)`` is d_k itself, ``* sqrt(d_model //
    n_heads)`` multiplies by sqrt(d_k), both named with the model's own sizes; ``/ math.sqrt(C)``
    is the width, although ``C`` shares no symbol with the head dim ``d_model // n_heads``."""
    assert _sc102("assumed_equal.py") == [
        (19, 18, "scores scaled by 1/(d_model//n_heads), that is by d_k = d_model//n_heads itself; expected 1/sqrt(d_model//n_heads)"),
        (20, 46, "scores multiplied by sqrt(d_k) = sqrt(d_model//n_heads); expected divided by sqrt(d_model//n_heads)"),
    ]
    assert _sc102("assumed_width.py") == [(20, 43, "scores scaled by 1/sqrt(d_model), the model width; in multi-head "
                                             "attention the scale is 1/sqrt(d_k) with d_k = d_model//n_heads per head")]


def test_SC102_a_scale_passed_in_is_judged_where_the_caller_gives_it() -> None:
    """``_wrongly_scaled`` / ``_unrelated``: analysed on its own, ``attention(q, k, v, scaling)``
    cannot judge ``* scaling`` (None: it vetoes nothing); inlined from the module that passes
    ``head_dim ** -1`` it can, and the finding lands where the factor is written."""
    assert _sc102("scale_passed_in.py") == [(15, 24, "scores scaled by 0.0625 = 1/16, that is by d_k itself; expected 1/sqrt(16)")]


def test_SC102_a_number_against_a_head_dim_only_a_caller_knows_vetoes_nothing() -> None:
    """``_unrelated``: ``* 0.125`` in a helper that reads ``b, h, t, d = q.shape`` cannot be judged
    there (right for d = 64); the module that calls it with 16-wide heads can, and its finding
    stands (before, the helper's own run said "not wrong" and vetoed it)."""
    assert _sc102("numeric_scale_in_helper.py") == [(7, 40, "scores scaled by 0.125 = 1/sqrt(64), the model width; in "
                                                      "multi-head attention the scale is 1/sqrt(d_k) with d_k = 16 per head")]


def test_SC102_a_head_dim_the_engine_invented_is_not_judged() -> None:
    """``_wrongly_scaled``: a head dim the engine invented (jaxtyping's anonymous ``_``) is no ground
    for a finding, even with a factor made of it (``/ q.shape[-1]``): the message would have to name
    a size that is nowhere in the code. A known miss, kept on purpose."""
    assert _sc102("anonymous_head_dim.py") == []


def test_SC102_sdpa_scale_judged_with_the_paths_assumptions() -> None:
    """``_sdpa_problem``: the query's head dim ``d_k`` and the ``scale=`` factor ``1 / head_dim`` are
    the same size only by ``assert self.head_dim == self.d_k``: judged with that assumption."""
    assert _sc102("sdpa_assumed.py") == [(18, 62, "scores scaled by 1/d_k, that is by d_k = d_k itself; expected 1/sqrt(d_k)")]


def test_SC102_qk_norm_without_a_written_factor_is_not_judged_and_does_not_crash() -> None:
    """``_wrongly_scaled``: scores of L2-normalised queries and keys carry a scale no code wrote
    (``readable`` is None): nothing to judge, and no internal error."""
    from pathlib import Path

    source = (Path(__file__).parent / "data" / "sc102" / "qk_norm.py").read_text()
    result = lint_source(source, "qk_norm.py", {"SC102"})
    assert (result.error, result.diagnostics) == (None, [])


def test_SC102_a_factor_written_in_a_file_not_reported_falls_back_to_where_it_is_applied(tmp_path) -> None:
    """``check``: the factor is written in ``consts.py`` (``SCALE = HEAD_DIM ** -1``), read but not
    reported by a run that checks ``attention.py`` only: the finding falls back to the product that
    applies it; checking both files puts it on the constant."""
    from pathlib import Path

    from shapecheck.runner import LintOptions, run
    from shapecheck.selection import RuleSelection

    project = Path(__file__).parent / "data" / "sc102" / "project"
    for name in ("consts.py", "attention.py"):
        (tmp_path / name).write_text((project / name).read_text())

    def found(*names: str) -> list[tuple[str, int, int]]:
        options = LintOptions(paths=[str(tmp_path / n) for n in names], isolated=True, cache=False, selection=RuleSelection(select=("SC102",)))
        report = run(options).report
        return sorted((Path(d.path).name, d.span.line, d.span.column) for d in report.diagnostics)

    assert found("attention.py") == [("attention.py", 16, 16)]
    assert found("attention.py", "consts.py") == [("consts.py", 2, 9)]


def test_SC102_an_unrelated_symbolic_factor_vetoes_nothing_even_with_a_known_head_dim() -> None:
    """``_unrelated``: the helper's own run knows its head dim (16, annotated) but not ``scaling``, a
    size it shares nothing with: it cannot judge (None), so the caller's ``head_dim ** -1`` stands."""
    assert _sc102("scale_passed_in_annotated.py") == [(17, 24, "scores scaled by 0.0625 = 1/16, that is by d_k itself; expected 1/sqrt(16)")]


def test_SC102_the_head_dim_is_named_by_the_paths_assumptions() -> None:
    """``_judge``: the heads are split with ``self.head_dim`` and the scores divided by ``self.d_k``,
    the same size by ``assert self.head_dim == self.d_k``: d_k itself, judged once the head dim is
    simplified by that assumption."""
    assert _sc102("assumed_head_dim.py") == [(17, 16, "scores scaled by 1/d_k, that is by d_k = d_k itself; expected 1/sqrt(d_k)")]


def test_SC102_two_heads_of_a_symbolic_width() -> None:
    """``_judge``: a head count of exactly 2 (written, not a parameter) with a symbolic width: the
    one-head exemption does not apply, and 1/sqrt(d_model) is the model width."""
    assert _sc102("two_heads_symbolic_width.py") == [(17, 42, "scores scaled by 1/sqrt(d_model), the model width; in "
                                                       "multi-head attention the scale is 1/sqrt(d_k) with d_k = d_model//2 per head")]


def test_SC304_frequencies_that_do_not_fall_at_all_are_not_called_growing() -> None:
    """``_frequency_problem``: ``-math.log(1.0) / d`` gives every pair of features the same frequency
    (a ratio of 0 to the right slope): they fall 0 times as fast, which is what the message says;
    "grow with the feature index" is kept for a negative ratio."""
    from pathlib import Path

    source = (Path(__file__).parent / "data" / "sc304" / "constant_frequencies.py").read_text()
    found = [(d.span.line, d.span.column, d.message) for d in lint_source(source, "pe.py", {"SC304"}).diagnostics]
    assert found == [(11, 20, "sinusoidal frequencies fall 0 times as fast as 10000^(-2i/d) for d = 16; the exponent should be 2i / d_model")]


# ------------------------------------------------------------------ SC303 through torch's attention layers

def _sc303(path: str) -> list[tuple[int, int]]:
    from pathlib import Path

    source = (Path(__file__).parent / "data" / "sc303" / path).read_text()
    return [(d.span.line, d.span.column) for d in lint_source(source, path, {"SC303"}).diagnostics]


def test_SC303_token_embeddings_without_positions_reach_sdpa_and_multihead_attention() -> None:
    """``_query_tokens``: the query and key of ``F.scaled_dot_product_attention`` (arguments 0 and 1,
    or ``query=`` / ``key=``) and of ``nn.MultiheadAttention`` (its arguments 1 and 2 after the
    module, or by keyword) are read like the operands of a written-out softmax: token embeddings
    with no positions reach self-attention, reported at the lookup, for each of the four forms."""
    assert _sc303("sdpa_self_attention.py") == [(14, 13), (28, 13)]
    assert _sc303("mha_self_attention.py") == [(12, 13), (24, 13)]


def test_SC303_cross_attention_to_tokens_without_positions_is_not_judged() -> None:
    """``_query_tokens``: the keys of ``nn.MultiheadAttention`` come from other tokens (a memory
    embedded without positions): cross-attention, which SC303 does not judge."""
    assert _sc303("cross_attention.py") == []
