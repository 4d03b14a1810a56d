"""The attention scale in real model code, continued (SC101 / SC102, branch rc102).

- **A fallback factor no caller reaches** (``if scaling is None: scaling = query.size(-1) ** -0.5``
  in transformers' ``eager_attention_forward``, every class passing ``scaling=self.scaling``): a
  plain function given a number for a parameter that defaults to ``None`` and that it fills in when
  ``None`` runs once more, inlined with the caller's tensors, with the argument left out
  (``Interpreter._run_number_fallbacks``). A wrong fallback formula is then judged where it is
  written; the callers' own contexts still decide the product (SC101).

Torch's answers for the shapes these tests rely on (checked in a scratch script):
a ``Linear(64, 64)`` of ``(2, 5, 64)`` viewed ``(2, 5, 4, 16)`` and transposed is ``(2, 4, 5, 16)``;
``(2, 4, 5, 16) @ (2, 4, 5, 16).transpose(2, 3)`` is ``(2, 4, 5, 5)``; ``einsum("bhid,bhjd->bhij")``
of the two is ``(2, 4, 5, 5)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

HF_FALLBACK = """
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling: float | None = None, dropout: float = 0.0, **kwargs):
    if scaling is None:
        scaling = {fallback}

    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1)
    attn_output = torch.matmul(attn_weights, value)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


class BartAttention(nn.Module):
    def __init__(self, embed_dim: int, num_heads: int):
        super().__init__()
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_states, attention_mask=None):
        b, t, _ = hidden_states.shape
        shape = (b, t, -1, self.head_dim)
        q = self.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = self.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = self.v_proj(hidden_states).view(shape).transpose(1, 2)
        out, _ = eager_attention_forward(self, q, k, v, attention_mask, scaling=self.scaling, dropout=0.0)
        return out.reshape(b, t, -1)
"""


def test_a_fallback_factor_of_d_k_in_a_helper_every_caller_gives_a_scale_is_sc102():
    found = findings_on_lines(HF_FALLBACK.format(fallback="query.size(-1) ** -1"))
    assert found == [("SC102", "scaling = query.size(-1) ** -1")]


def test_a_fallback_multiplying_by_sqrt_d_k_is_sc102():
    found = findings_on_lines(HF_FALLBACK.format(fallback="query.shape[-1] ** 0.5"))
    assert found == [("SC102", "scaling = query.shape[-1] ** 0.5")]


def test_a_right_fallback_stays_clean():
    assert findings_on_lines(HF_FALLBACK.format(fallback="query.size(-1) ** -0.5")) == []


def test_a_fallback_of_one_is_not_sc101_when_every_caller_gives_the_scale():
    # The product is judged by the callers' contexts too: they scale it.
    assert findings_on_lines(HF_FALLBACK.format(fallback="1.0")) == []


FUNCTIONAL = """
import math
import torch
import torch.nn.functional as F
from torch import nn


def attend(q, k, v, softmax_scale=None):
    if softmax_scale is None:
        softmax_scale = {fallback}
    scores = {product} * softmax_scale
    return torch.einsum("bhij,bhjd->bhid", F.softmax(scores, dim=-1), v)


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.dim_head = dim // heads
        self.to_qkv = nn.Linear(dim, dim * 3)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.view(b, n, self.heads, self.dim_head).transpose(1, 2) for t in (q, k, v))
        out = attend(q, k, v, {given})
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


model = Attention()
y = model(torch.randn(2, 5, 64))
"""

EINSUM = 'torch.einsum("bhid,bhjd->bhij", q, k)'
MATMUL = "q @ k.transpose(-2, -1)"


def test_a_functional_helper_given_the_scale_by_position_judges_its_fallback():
    source = FUNCTIONAL.format(fallback="1 / q.shape[-1]", product=EINSUM, given="self.dim_head ** -0.5")
    assert findings_on_lines(source) == [("SC102", "softmax_scale = 1 / q.shape[-1]")]


def test_a_functional_helper_with_matmul_and_a_keyword_scale_judges_its_fallback():
    source = FUNCTIONAL.format(
        fallback="1.0 / q.size(-1)", product=MATMUL, given="softmax_scale=1 / math.sqrt(self.dim_head)"
    )
    assert findings_on_lines(source) == [("SC102", "softmax_scale = 1.0 / q.size(-1)")]


def test_a_functional_helper_with_a_right_fallback_stays_clean():
    source = FUNCTIONAL.format(fallback="1 / math.sqrt(q.shape[-1])", product=EINSUM, given="self.dim_head ** -0.5")
    assert findings_on_lines(source) == []


def test_a_caller_giving_a_wrong_scale_is_still_reported_once():
    source = FUNCTIONAL.format(fallback="1 / math.sqrt(q.shape[-1])", product=EINSUM, given="self.dim_head ** -1")
    assert findings_on_lines(source) == [("SC102", "out = attend(q, k, v, self.dim_head ** -1)")]
