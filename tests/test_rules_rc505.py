"""Masks inverted or combined with bitwise operators while float (SC201, branch rc505).

``~mask``, ``mask_a | mask_b``, ``mask_a & mask_b`` and ``^`` are torch's bitwise ops: implemented for
bool and integer tensors only. On a float tensor torch raises (checked with torch 2.13 CPU):
``~torch.ones(2)`` -> ``TypeError: ~ (operator.invert) is only implemented on integer and
Boolean-type tensors``; ``torch.ones(2) | torch.ones(2, dtype=torch.bool)`` -> ``RuntimeError:
"bitwise_or_cpu" not implemented for 'Float'``. A causal mask built as a 0/1 float triangle and
then inverted (x-transformers' prefix-LM decoder, ``~causal_mask``) or a float mask of kept
positions inverted (``~zeros_like(x).scatter(1, idx, 1.).float()``) is that error.

The engine records ``~x`` as the op ``bitwise_not`` (it returned the negation without an event);
SC201 reads the dtype of its input and of the operands of ``&`` / ``|`` / ``^``. An integer ``~`` is
a real bitwise not and stays clean, as do bool masks and ``torch.logical_not`` of a float tensor
(torch accepts it).
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

XT_PREFIX_DECODER = """
import torch
from torch import nn


class PrefixDecoder(nn.Module):
    def __init__(self, dim, heads=8):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, prefix_mask=None):
        b, n, device = x.shape[0], x.shape[1], x.device
        causal_mask = torch.ones((n, n), device=device, dtype=DTYPE).triu(1)
        forwarded_mask = ~causal_mask
        if prefix_mask is not None:
            forwarded_mask = forwarded_mask | prefix_mask
        return forwarded_mask
"""


def test_inverted_float_triangle_x_transformers_style():
    found = findings_on_lines(XT_PREFIX_DECODER.replace("DTYPE", "torch.float32"))
    # the `|` that follows would raise too, but only after the `~`: one root cause, one finding
    assert [f for f in found if f[0] == "SC201"] == [("SC201", "forwarded_mask = ~causal_mask")]


def test_inverted_bool_triangle_is_clean():
    found = findings_on_lines(XT_PREFIX_DECODER.replace("DTYPE", "torch.bool"))
    assert [f for f in found if f[0] == "SC201"] == []


SCATTER_KEEP = """
import torch


def random_keep_mask(inp, keep):
    b, n = inp.shape
    indices = torch.randn(b, n).topk(keep, dim=-1).indices
    mask = ~torch.zeros_like(inp).scatter(1, indices, 1.).CAST()
    return mask
"""


def test_inverted_float_cast_functional_style():
    found = findings_on_lines(SCATTER_KEEP.replace("CAST", "float"))
    assert ("SC201", "mask = ~torch.zeros_like(inp).scatter(1, indices, 1.).float()") in found


def test_inverted_bool_cast_is_clean():
    assert [f for f in findings_on_lines(SCATTER_KEEP.replace("CAST", "bool")) if f[0] == "SC201"] == []


NANOGPT_OR = """
import math
import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=64, n_head=4, block_size=16):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x, pad):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        blocked = MASK | pad
        att = att.masked_fill(blocked, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v
"""


def test_or_with_float_triangle_nanogpt_style():
    found = findings_on_lines(NANOGPT_OR.replace("MASK", "(1 - self.bias[:, :, :T, :T])"))
    assert ("SC201", "blocked = (1 - self.bias[:, :, :T, :T]) | pad") in found


def test_or_with_bool_triangle_is_clean():
    found = findings_on_lines(NANOGPT_OR.replace("MASK", "(self.bias[:, :, :T, :T] == 0)"))
    assert [f for f in found if f[0] == "SC201"] == []


INTEGER_AND_LOGICAL = """
import torch


def bit_tricks(ids, scores):
    flipped = ~ids.long()
    low = torch.arange(8) & 3
    keep = torch.logical_not(torch.tril(torch.ones(4, 4)))
    return flipped, low, scores.masked_fill(keep, 0.0)
"""


def test_integer_bitwise_and_logical_not_of_float_are_clean():
    assert [f for f in findings_on_lines(INTEGER_AND_LOGICAL) if f[0] == "SC201"] == []


HF_AND = """
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.q_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask):
        bsz, q_len, _ = hidden_states.size()
        causal = torch.tril(torch.ones(q_len, q_len, dtype=torch.float32))
        combined = attention_mask[:, None, None, :].bool() & causal
        return combined
"""


def test_and_with_float_triangle_hf_style():
    found = findings_on_lines(HF_AND)
    assert ("SC201", "combined = attention_mask[:, None, None, :].bool() & causal") in found


def test_and_with_bool_triangle_is_clean():
    source = HF_AND.replace("dtype=torch.float32", "dtype=torch.bool")
    assert [f for f in findings_on_lines(source) if f[0] == "SC201"] == []


QWEN2_AUDIO_MERGE = """
import torch


def merge(attention_mask, audio_to_overwrite, batch_size, max_token_num):
    final_attention_mask = torch.zeros(batch_size, max_token_num, dtype=attention_mask.dtype)
    final_attention_mask |= audio_to_overwrite
    return final_attention_mask
"""


def test_factory_with_unread_dtype_is_not_float():
    """``torch.zeros(..., dtype=attention_mask.dtype)``: the dtype is the parameter's (an integer
    mask in Qwen2-Audio), not torch's float default (a false SC201 on the corpus before)."""
    assert [f for f in findings_on_lines(QWEN2_AUDIO_MERGE) if f[0] == "SC201"] == []
