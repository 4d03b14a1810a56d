"""The idioms of real model code (issue 8, items 2 and 3), black-box through the engine and the rules.

Each idiom has engine tests (the shapes and provenance the engine infers, read from
``shapecheck.engine.analyze``) and rule-level tests: a snippet with a bug that the idiom used to hide
now gets its finding, and its corrected twin stays clean. Snippets are written from scratch in the
style of published code (lucidrains' einops attention, nanoGPT, the Annotated Transformer).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import UNKNOWN, ConstValue, MaskedTag, ModuleValue, ProjectionTag, ScaleTag, TensorValue, TriangleTag
from shapecheck.linter import lint_source

# --- helpers -------------------------------------------------------------------------------------


def facts_of(source: str):
    source = textwrap.dedent(source)
    return analyze(cst.parse_module(source), source, "idiom.py")


def values(source: str, function: str, inlined: bool = False) -> dict:
    """name -> value in the first (standalone or inlined) run of ``function``; the last assignment wins."""
    facts = facts_of(source)
    runs = [run for run in facts.runs if run.qualname == function and run.inlined == inlined]
    assert runs, f"no run of {function}: {sorted({run.qualname for run in facts.runs})}"
    return {a.name: a.value for a in runs[0].assignments}


def shape(value) -> str | None:
    assert isinstance(value, TensorValue), f"not a tensor: {value!r}"
    return None if value.shape is None else str(value.shape)


def codes(source: str) -> list[str]:
    result = lint_source(textwrap.dedent(source), "idiom.py")
    assert result.error is None
    return [d.code for d in result.diagnostics]


def twin(source: str, old: str, new: str) -> str:
    assert old in source
    return source.replace(old, new)


# --- lambdas and comprehensions ------------------------------------------------------------------

EINOPS_ATTENTION = """
import torch
from torch import nn, einsum
from einops import rearrange

class Attention(nn.Module):
    def __init__(self, dim=64, heads=8):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.heads
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=h), qkv)
        sim = einsum('b h i d, b h j d -> b h i j', q, k)
        attn = sim.softmax(dim=-1)
        out = einsum('b h i j, b h j d -> b h i d', attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)
"""


def test_map_with_a_lambda_transforms_each_piece():
    found = values(EINOPS_ATTENTION, "Attention.forward")
    for name in ("q", "k", "v"):
        assert shape(found[name]) == "(b, 8, n, 8)"  # x is known as (*, 64) from the Linear
    # The three pieces of the fused projection stay distinct pieces.
    parts = {found[name].tag(ProjectionTag).part for name in ("q", "k", "v")}
    assert parts == {(0,), (1,), (2,)}
    assert shape(found["out"]) == "(b, n, 64)"


TRANSFORMS = """
import torch
from jaxtyping import Float
from torch import Tensor

def split(t):
    return t.view(t.shape[0], t.shape[1], 4, 16).transpose(1, 2)

def f(q: Float[Tensor, "b n 64"], k: Float[Tensor, "b m 64"], v: Float[Tensor, "b m 64"]):
    q2, k2, v2 = (split(t) for t in (q, k, v))
    q3, k3 = [t * 2 for t in (q2, k2)]
    q4, k4, v4 = map(lambda t, s: t[:, :, :s], (q2, k2, v2), (1, 2, 3))
    q5, k5 = tuple(map(split, (q, k)))
"""


@pytest.mark.parametrize(
    "name, expected",
    [
        ("q2", "(b, 4, n, 16)"),
        ("k2", "(b, 4, m, 16)"),
        ("v2", "(b, 4, m, 16)"),
        ("q3", "(b, 4, n, 16)"),
        ("k3", "(b, 4, m, 16)"),
        ("q4", "(b, 4, 1, 16)"),
        ("v4", "(b, 4, 3, 16)"),
        ("q5", "(b, 4, n, 16)"),
        ("k5", "(b, 4, m, 16)"),
    ],
)
def test_generators_comprehensions_and_map_over_tuples(name, expected):
    assert shape(values(TRANSFORMS, "f")[name]) == expected


def test_lambda_map_finds_a_missing_scale_and_keeps_the_scaled_twin_clean():
    assert codes(EINOPS_ATTENTION) == ["SC101"]
    scaled = twin(EINOPS_ATTENTION, "sim = einsum('b h i d, b h j d -> b h i j', q, k)",
                  "sim = einsum('b h i d, b h j d -> b h i j', q, k) * self.scale")
    assert codes(scaled) == []


# --- containers ----------------------------------------------------------------------------------

NANOGPT_MODULEDICT = """
import torch
import torch.nn as nn

class GPT(nn.Module):
    def __init__(self, vocab=100, n_embd=64, block_size=32):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            h=nn.ModuleList([nn.Linear(n_embd, n_embd) for _ in range(2)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        tok = self.transformer.wte(idx)
        x = tok + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        return logits
"""


def test_module_dict_of_dict_call_is_read_by_attribute():
    found = values(NANOGPT_MODULEDICT, "GPT.forward")
    assert shape(found["tok"]) == "(b, t, 64)"
    assert shape(found["logits"]) == "(b, t, 100)"


def test_module_dict_literal_and_subscript():
    source = twin(NANOGPT_MODULEDICT, "nn.ModuleDict(dict(\n            wte=nn.Embedding(vocab, n_embd),",
                  "nn.ModuleDict({\n            'wte': nn.Embedding(vocab, n_embd),")
    source = source.replace("            wpe=nn.Embedding(block_size, n_embd),\n            h=nn.ModuleList([nn.Linear(n_embd, n_embd) for _ in range(2)]),\n            ln_f=nn.LayerNorm(n_embd),\n        ))",
                            "            'wpe': nn.Embedding(block_size, n_embd),\n            'h': nn.ModuleList([nn.Linear(n_embd, n_embd) for _ in range(2)]),\n            'ln_f': nn.LayerNorm(n_embd),\n        })")
    source = source.replace("tok = self.transformer.wte(idx)", "tok = self.transformer['wte'](idx)")
    found = values(source, "GPT.forward")
    assert shape(found["tok"]) == "(b, t, 64)"
    assert shape(found["logits"]) == "(b, t, 100)"


def test_module_dict_finds_a_mis_sized_head():
    assert codes(NANOGPT_MODULEDICT) == []
    bug = twin(NANOGPT_MODULEDICT, "nn.Linear(n_embd, vocab, bias=False)", "nn.Linear(2 * n_embd, vocab, bias=False)")
    assert codes(bug) == ["SC406"]


SEQUENTIAL_OF_COMPREHENSION = """
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor

class Net(nn.Module):
    def __init__(self, dim=64, depth=3):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])
        self.head = nn.Linear(64, 10)

    def forward(self, x: Float[Tensor, "b 64"]):
        h = self.blocks(x)
        return self.head(h)
"""


def test_sequential_of_a_starred_comprehension():
    assert shape(values(SEQUENTIAL_OF_COMPREHENSION, "Net.forward")["h"]) == "(b, 64)"
    assert codes(SEQUENTIAL_OF_COMPREHENSION) == []
    assert codes(twin(SEQUENTIAL_OF_COMPREHENSION, "nn.Linear(64, 10)", "nn.Linear(32, 10)")) == ["SC406"]


ANNOTATED_TRANSFORMER = """
import math
import torch
import torch.nn as nn

class MultiHeadedAttention(nn.Module):
    def __init__(self, d_model=64, h=4):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, query, key, value):
        b = query.size(0)
        query, key, value = [
            lin(x).view(b, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]
        scores = query @ key.transpose(-2, -1) / math.sqrt(self.d_k)
        p = scores.softmax(dim=-1)
        out = (p @ value).transpose(1, 2).reshape(b, -1, self.h * self.d_k)
        return self.linears[-1](out)
"""

INDEXED_MODULE_LIST = """
import math
import torch
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, d_model=64, h=4):
        super().__init__()
        self.d_k = d_model // h
        self.h = h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])

    def forward(self, x):
        b, t, _ = x.shape
        q = self.linears[0](x).view(b, t, self.h, self.d_k).transpose(1, 2)
        k = self.linears[1](x).view(b, t, self.h, self.d_k).transpose(1, 2)
        v = self.linears[2](x).view(b, t, self.h, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        p = scores.softmax(dim=-1)
        out = (p @ v).transpose(1, 2).reshape(b, t, -1)
        return self.linears[3](out)
"""

UNPACKED_COMPREHENSION = """
import math
import torch
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.q, self.k, self.v, self.o = [nn.Linear(d, d) for _ in range(4)]
        self.d = d

    def forward(self, x):
        s = self.q(x) @ self.k(x).transpose(-2, -1) / math.sqrt(self.d)
        return self.o(s.softmax(dim=-1) @ self.v(x))
"""


def test_comprehension_built_linears_are_distinct_modules():
    found = values(INDEXED_MODULE_LIST, "Attention.forward")
    q, k, v = (found[name].tag(ProjectionTag).ident for name in ("q", "k", "v"))
    assert q is not k and k is not v and q is not v
    again = values(INDEXED_MODULE_LIST.replace("v = self.linears[2]", "v = self.linears[0]"), "Attention.forward")
    assert again["q"].tag(ProjectionTag).ident is again["v"].tag(ProjectionTag).ident  # one index, one module


@pytest.mark.parametrize("source", [ANNOTATED_TRANSFORMER, INDEXED_MODULE_LIST, UNPACKED_COMPREHENSION],
                         ids=["zip-comprehension", "indexed", "unpacked"])
def test_comprehension_built_linears_do_not_look_shared(source):
    assert codes(source) == []


def test_one_comprehension_built_linear_used_twice_is_shared():
    bug = twin(INDEXED_MODULE_LIST, "k = self.linears[1](x)", "k = self.linears[0](x)")
    assert codes(bug) == ["SC401"]


NESTED_MODULE_LIST = """
import torch
import torch.nn as nn

class Net(nn.Module):
    def __init__(self, dim=64, depth=2):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.ModuleList([nn.LayerNorm(dim), nn.Linear(dim, dim)]) for _ in range(depth)
        ])

    def forward(self, x):
        for norm, ff in self.layers:
            h = ff(norm(x))
            x = h + x
        return x
"""


def test_for_unpacks_nested_module_lists():
    found = values(NESTED_MODULE_LIST, "Net.forward")
    assert isinstance(found["norm"], ModuleValue) and found["norm"].kind == "LayerNorm"
    assert isinstance(found["ff"], ModuleValue) and found["ff"].kind == "Linear"
    assert shape(found["h"]) == "(*, 64)"


def test_nested_module_lists_find_a_residual_of_the_wrong_width():
    assert codes(NESTED_MODULE_LIST) == []
    assert codes(twin(NESTED_MODULE_LIST, "nn.Linear(dim, dim)]", "nn.Linear(dim, dim * 2)]")) == ["SC405"]


# --- passed-in modules ---------------------------------------------------------------------------

PASSED_IN = """
import math
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor

class Attention(nn.Module):
    def __init__(self, q_proj, k_proj, dim=64):
        super().__init__()
        self.q_proj = q_proj
        self.k_proj = k_proj
        self.dim = dim

    def forward(self, x: Float[Tensor, "b n 64"]):
        q = self.q_proj(x)
        k = self.k_proj(x)
        return (q @ k.transpose(-2, -1) / math.sqrt(self.dim)).softmax(dim=-1)

def build_attention(dim):
    return Attention(q_proj=nn.Linear(dim, dim), k_proj=nn.Linear(dim, dim), dim=dim)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = build_attention(64)

    def forward(self, x):
        return self.attn(x)
"""


def test_module_passed_to_a_constructor_is_resolved_from_its_instantiation_site():
    found = values(PASSED_IN, "Attention.forward")  # standalone: the annotation gives x
    assert shape(found["q"]) == "(b, n, 64)"
    assert shape(found["k"]) == "(b, n, 64)"
    assert found["q"].tag(ProjectionTag).ident is not found["k"].tag(ProjectionTag).ident


def test_passed_in_modules_find_projections_of_the_wrong_width():
    assert codes(PASSED_IN) == []
    bug = PASSED_IN.replace("q_proj=nn.Linear(dim, dim), k_proj=nn.Linear(dim, dim)",
                            "q_proj=nn.Linear(48, dim), k_proj=nn.Linear(48, dim)")
    assert codes(bug) == ["SC505", "SC505"]


def test_passed_in_module_shared_by_q_and_k():
    bug = twin(PASSED_IN, "    return Attention(q_proj=nn.Linear(dim, dim), k_proj=nn.Linear(dim, dim), dim=dim)",
               "    shared = nn.Linear(dim, dim)\n    return Attention(q_proj=shared, k_proj=shared, dim=dim)")
    assert codes(bug) == ["SC401"]


def test_modules_built_at_two_sites_stay_unresolved_standalone():
    source = PASSED_IN + "\nother = Attention(nn.Linear(32, 32), nn.Linear(32, 32), 32)\n"
    found = values(source, "Attention.forward")
    assert found["q"].shape is None  # which site's module? neither is assumed


WRAPPER = """
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor

class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)

class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x, mask=None):
        return self.net(x)

class Net(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.ff = PreNorm(dim, FeedForward(dim, 4 * dim))

    def forward(self, x: Float[Tensor, "b n 64"], mask=None):
        y = self.ff(x, mask=mask)
        return y + x
"""


def test_wrapper_forward_delegating_with_kwargs_is_followed():
    assert shape(values(WRAPPER, "Net.forward")["y"]) == "(b, n, 64)"
    assert codes(WRAPPER) == []
    assert codes(twin(WRAPPER, "nn.Linear(hidden, dim))", "nn.Linear(hidden, dim * 2))")) == ["SC405"]


def test_parameters_that_kwargs_may_fill_are_unknown_not_their_defaults():
    source = """
    import torch
    import torch.nn as nn

    class Inner(nn.Module):
        def forward(self, x, scale=None):
            s = scale
            return x

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x, **kwargs):
            return self.inner(x, **kwargs)
    """
    facts = facts_of(source)
    inlined = [run for run in facts.runs if run.qualname == "Inner.forward" and run.inlined]
    assert inlined
    scale = {a.name: a.value for a in inlined[0].assignments}["s"]
    assert not (isinstance(scale, ConstValue) and scale.value is None)  # not the default


# --- calls that return the module itself ---------------------------------------------------------

MAIN_BLOCK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, d_model=64, vocab=100):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, x):
        h = self.proj(x)
        return self.head(h)

if __name__ == "__main__":
    model = Model(64).eval()
    model = model.to("cpu").requires_grad_(False).half().float().train().cuda()
    out = model(torch.randn(2, 10, 64))
"""


def test_module_methods_that_return_the_module_keep_it():
    found = values(MAIN_BLOCK, "Model.forward", inlined=True)
    assert shape(found["h"]) == "(2, 10, 64)"


def test_concrete_shapes_of_a_main_block_flow_in_through_eval():
    assert codes(MAIN_BLOCK) == []
    assert codes(twin(MAIN_BLOCK, "torch.randn(2, 10, 64)", "torch.randn(2, 10, 48)")) == ["SC505"]


# --- weight tying --------------------------------------------------------------------------------

TIED_KEY = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class Attention(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.k_proj.weight = self.q_proj.weight
        self.d = d

    def forward(self, x):
        q, k = self.q_proj(x), self.k_proj(x)
        return F.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
"""

TIED_HEAD = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

class LM(nn.Module):
    def __init__(self, vocab=100, d=64, max_len=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_len, d)
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.d = d

    def forward(self, idx):
        t = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(t))
        q, k = self.q_proj(x), self.k_proj(x)
        mask = torch.tril(torch.ones(t, t)).bool()
        s = (q @ k.transpose(-2, -1) / math.sqrt(self.d)).masked_fill(~mask, float("-inf"))
        x = F.softmax(s, dim=-1) @ x
        logits = self.lm_head(x)
        return logits
"""


def test_tied_weights_make_one_module():
    found = values(TIED_KEY, "Attention.forward")
    assert found["q"].tag(ProjectionTag).ident is found["k"].tag(ProjectionTag).ident
    assert shape(values(TIED_HEAD, "LM.forward")["logits"]) == "(*, t, 100)"  # the head keeps its width


def test_key_tied_to_the_query_is_reported_at_the_tie():
    result = lint_source(textwrap.dedent(TIED_KEY), "idiom.py")
    assert [(d.code, d.line) for d in result.diagnostics] == [("SC401", 12)]
    assert codes(TIED_KEY.replace("        self.k_proj.weight = self.q_proj.weight\n", "")) == []


def test_lm_head_tied_to_the_embedding_is_correct():
    assert codes(TIED_HEAD) == []


# --- equality facts ------------------------------------------------------------------------------

EQUALITIES = """
import torch
from jaxtyping import Float
from torch import Tensor

def asserted(x: Float[Tensor, "b t d"]):
    assert x.size(0) == 1
    z = x.squeeze(0)

def raised(x: Float[Tensor, "b t d"]):
    if x.size(0) != 1:
        raise ValueError("batch of one")
    z = x.squeeze(0)

def unchecked(x: Float[Tensor, "b t d"]):
    z = x.squeeze(0)

def only_in_branch(x: Float[Tensor, "b t d"]):
    if x.size(0) != 1:
        print("not one")
    z = x.squeeze(0)
"""


@pytest.mark.parametrize("function, expected", [
    ("asserted", "(t, d)"), ("raised", "(t, d)"), ("unchecked", None), ("only_in_branch", None),
])
def test_equality_facts_from_assert_and_if_raise(function, expected):
    assert shape(values(EQUALITIES, function)["z"]) == expected


EQUALITY_HEAD = """
import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 10)

    def forward(self, x: Float[Tensor, "b t d"]):
        if x.size(-1) != 64:
            raise ValueError("expected 64 features")
        return self.proj(x)

def product(x: Float[Tensor, "b t d"], w: Float[Tensor, "e 10"]):
    assert x.shape[-1] == 64
    assert w.shape[0] == 64
    return x @ w
"""


def test_equality_facts_find_widths_that_cannot_match():
    assert codes(EQUALITY_HEAD) == []
    assert codes(twin(EQUALITY_HEAD, "nn.Linear(64, 10)", "nn.Linear(32, 10)")) == ["SC505"]
    assert codes(twin(EQUALITY_HEAD, "assert w.shape[0] == 64", "assert w.shape[0] == 32")) == ["SC505"]


# --- masks built elsewhere -----------------------------------------------------------------------

CAUSAL_LM = """
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

def create_causal_mask(i, j, device=None):
    return torch.ones((i, j), device=device, dtype=torch.bool).triu(j - i + 1)

def onnx_causal_mask(i, j, device=None):
    r = torch.arange(i, device=device)
    return r[:, None] < r[None, :]

class CausalLM(nn.Module):
    def __init__(self, d=64, vocab=100, max_len=32, onnxable=False):
        super().__init__()
        self.create_causal_mask = onnx_causal_mask if onnxable else create_causal_mask
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(max_len, d)
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)
        self.d = d

    def _tril_mask(self, t):
        return torch.tril(torch.ones(t, t, dtype=torch.bool))

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T))
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d)
        mask = self.create_causal_mask(T, T, device=x.device)
        s = s.masked_fill(mask, float("-inf"))
        logits = self.head(F.softmax(s, dim=-1) @ v)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), targets[:, 1:].reshape(-1))
"""


def test_mask_from_a_function_held_by_an_attribute_keeps_its_triangle():
    found = values(CAUSAL_LM, "CausalLM.forward")
    triangle = found["mask"].tag(TriangleTag)
    assert triangle is not None and triangle.true_is_future is True


def test_masks_built_elsewhere_are_checked():
    assert codes(CAUSAL_LM) == []
    assert codes(twin(CAUSAL_LM, ".triu(j - i + 1)", ".triu(j - i)")) == ["SC205"]
    builder = twin(CAUSAL_LM, "mask = self.create_causal_mask(T, T, device=x.device)", "mask = self._tril_mask(T)")
    assert codes(builder) == ["SC203"]
    assert codes(twin(builder, "s.masked_fill(mask,", "s.masked_fill(~mask,")) == []
    assert codes(twin(CAUSAL_LM, '        s = s.masked_fill(mask, float("-inf"))\n', "")) == ["SC204"]


# --- unknown inputs keep their structure ---------------------------------------------------------

UNKNOWN_INPUTS = """
import torch
import torch.nn as nn
from einops import rearrange

class Block(nn.Module):
    def __init__(self, dim=64, heads=8, vocab=100):
        super().__init__()
        self.heads = heads
        self.proj = nn.Linear(dim, 3 * dim)
        self.emb = nn.Embedding(vocab, dim)

    def forward(self, x, ids, y):
        p = self.proj(x)
        e = self.emb(ids)
        a = y[..., None]
        b = y.unsqueeze(-1)
        c = y.view(2, 3, -1)
        d = y.permute(0, 2, 1, 3)
        r = rearrange(y, 'b n (h d) -> b h n d', h=self.heads)
        return p
"""


@pytest.mark.parametrize("name, expected", [
    ("p", "(*, 192)"), ("e", "(*, 64)"), ("a", "(*, 1)"), ("b", "(*, 1)"), ("c", "(2, 3, _)"),
])
def test_unknown_inputs_keep_what_is_known(name, expected):
    assert shape(values(UNKNOWN_INPUTS, "Block.forward")[name]) == expected


def test_unknown_inputs_keep_the_rank_of_permute_and_einops():
    found = values(UNKNOWN_INPUTS, "Block.forward")
    assert found["d"].shape.rank == 4 and not found["d"].shape.variadic
    r = found["r"].shape
    assert r.rank == 4 and not r.variadic and str(r.dims[1]) == "8"


def test_unknown_inputs_never_produce_a_diagnostic():
    assert codes(UNKNOWN_INPUTS) == []


# --- helpers that wrap a function (closures) -----------------------------------------------------

MAYBE = """
import torch
import torch.nn as nn
from functools import partial, wraps
from jaxtyping import Float
from torch import Tensor

LinearNoBias = partial(nn.Linear, bias=False)

def exists(v):
    return v is not None

def default(*args):
    for arg in args:
        if exists(arg):
            return arg
    return None

def maybe(fn):
    @wraps(fn)
    def inner(x, *args, **kwargs):
        if not exists(x):
            return x
        return fn(x, *args, **kwargs)
    return inner

class Net(nn.Module):
    def __init__(self, dim=64, dim_out=None):
        super().__init__()
        dim_out = default(dim_out, dim)
        self.proj = LinearNoBias(dim, dim_out)

    def forward(self, x: Float[Tensor, "b n 64"]):
        y = maybe(self.proj)(x)
        return y + x

net = Net()
"""


class TestHelpers:
    def test_partial_default_and_a_closure_are_followed(self):
        found = values(MAYBE, "Net.forward", inlined=True)  # the module-level instance: dim_out=None
        assert shape(found["y"]) == "(b, n, 64)"
        # standalone, dim_out is unknown: the Linear's width is unnamed, the input's leading dims stay
        assert shape(values(MAYBE, "Net.forward")["y"]) == "(b, n, _)"

    def test_a_mis_sized_layer_behind_the_helpers_is_found(self):
        assert codes(MAYBE) == []
        assert codes(twin(MAYBE, "net = Net()", "net = Net(dim_out=32)")) == ["SC405"]


# --- inheritance: project parents and subclassed torch.nn layers ------------------------------

SUBCLASSED_LAYERS = """
import torch
import torch.nn as nn
from torch import Tensor


class LayerNorm(nn.LayerNorm):
    def forward(self, x: Tensor) -> Tensor:
        return super().forward(x.float()).type(x.dtype)


class Linear(nn.Linear):
    pass


class Block(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.ln = LayerNorm(d)
        self.fc = Linear(d, 4 * d)

    def forward(self, x: Tensor):
        x = torch.randn(2, 10, 64)
        h = self.ln(x)
        y = self.fc(h)
        w = self.fc.weight
        return y
"""


def test_subclassed_torch_layers_behave_as_the_layer():
    found = values(SUBCLASSED_LAYERS, "Block.forward")
    assert shape(found["h"]) == "(2, 10, 64)"  # super().forward of nn.LayerNorm
    assert shape(found["y"]) == "(2, 10, 256)"  # an nn.Linear subclass without a forward
    assert shape(found["w"]) == "(256, 64)"  # its parameters


INHERITED = """
import math
import torch
import torch.nn as nn


class BaseAttention(nn.Module):
    def __init__(self, d_model=64, n_heads=4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)

    def split(self, t):
        b, n, _ = t.shape
        return t.view(b, n, self.n_heads, -1).transpose(1, 2)

    def forward(self, x):
        q, k, v = map(self.split, self.qkv(x).chunk(3, dim=-1))
        return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))


class CausalAttention(BaseAttention):
    def __init__(self, d_model=64, n_heads=4, max_len=32):
        super().__init__(d_model, n_heads)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len)))

    def forward(self, x):
        scores = super().forward(x)
        t = x.size(1)
        return scores.masked_fill(self.mask[:t, :t] == 0, float("-inf")).softmax(dim=-1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = CausalAttention(64, 4)

    def forward(self, x):
        x = torch.randn(2, 16, 64)
        probs = self.attn(x)
        return probs
"""


def test_methods_and_constructors_are_inherited_and_super_reaches_the_parent():
    found = values(INHERITED, "Model.forward")
    assert shape(found["probs"]) == "(2, 4, 16, 16)"
    inner = values(INHERITED, "CausalAttention.forward", inlined=True)
    assert shape(inner["scores"]) == "(2, 4, 16, 16)"  # super().forward, with the parent's split
    assert codes(INHERITED) == []
    unscaled = twin(INHERITED, " / math.sqrt(q.size(-1))", "")
    assert codes(unscaled) == ["SC101"]  # the parent's scores reach the child's softmax unscaled


CONVOLUTIONS = """
import torch
import torch.nn as nn


class Stem(nn.Module):
    def __init__(self, width=64, patch=16, n_mels=80):
        super().__init__()
        self.patches = nn.Conv2d(3, width, kernel_size=patch, stride=patch)
        self.conv1 = nn.Conv1d(n_mels, width, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(width, width, kernel_size=3, stride=2, padding=1)
        self.same = nn.Conv1d(width, width, 5, padding="same")

    def forward(self, signal):
        img = torch.randn(2, 3, 224, 224)
        tokens = self.patches(img).flatten(2).transpose(1, 2)
        mel = torch.randn(2, 80, 3000)
        audio = self.conv2(self.conv1(mel))
        kept = self.same(audio)
        seen = self.conv1(signal)
        return tokens
"""


def test_convolutions_give_channels_and_spatial_sizes():
    found = values(CONVOLUTIONS, "Stem.forward")
    assert shape(found["tokens"]) == "(2, 196, 64)"  # (224 - 16) // 16 + 1 = 14 patches a side
    assert shape(found["audio"]) == "(2, 64, 1500)"  # (3000 + 2 - 2 - 1) // 2 + 1
    assert shape(found["kept"]) == "(2, 64, 1500)"  # padding="same"
    assert shape(found["seen"]) == "(*, 64, _)"  # an unknown input still has the channel axis
    assert codes(CONVOLUTIONS) == []
    # a convolution fed by another layer whose width it does not take: a broken layer chain
    assert codes(twin(CONVOLUTIONS, "nn.Conv1d(width, width, kernel_size=3", "nn.Conv1d(2 * width, width, kernel_size=3")) == ["SC406"]


KWARGS_WRAPPER = """
import torch
import torch.nn as nn


class PreNorm(nn.Module):
    def __init__(self, dim, fn, context_dim=None):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)
        self.norm_context = nn.LayerNorm(context_dim) if context_dim is not None else None

    def forward(self, x, **kwargs):
        x = self.norm(x)
        if self.norm_context is not None:
            kwargs.update(context=self.norm_context(kwargs["context"]))
        return self.fn(x, **kwargs)


class CrossAttention(nn.Module):
    def __init__(self, dim=32, context_dim=48):
        super().__init__()
        self.to_q = nn.Linear(dim, dim)
        self.to_kv = nn.Linear(context_dim, 2 * dim)

    def forward(self, x, context=None, mask=None):
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        return (q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5).softmax(dim=-1) @ v


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = PreNorm(32, CrossAttention(32, 48), context_dim=48)

    def forward(self, x):
        x = torch.randn(2, 5, 32)
        data = torch.randn(2, 7, 48)
        out = self.block(x, context=data, mask=None)
        return out
"""


def test_keywords_pass_through_a_kwargs_wrapper():
    found = values(KWARGS_WRAPPER, "Model.forward")
    assert shape(found["out"]) == "(2, 5, 32)"  # context reached the attention through **kwargs
    runs = [run for run in facts_of(KWARGS_WRAPPER).runs if run.qualname == "CrossAttention.forward" and run.inlined]
    keys = {shape(a.value) for run in runs for a in run.assignments if a.name == "k"}
    assert "(2, 7, 32)" in keys  # the normed context, updated into kwargs by the wrapper
    assert codes(KWARGS_WRAPPER) == []


def test_a_key_scaled_before_its_transpose_counts_once():
    source = """
import math
import torch
import torch.nn as nn


class PerceiverAttention(nn.Module):
    def __init__(self, dim=32, dim_head=64, heads=8):
        super().__init__()
        self.dim_head, self.heads = dim_head, heads
        self.to_q = nn.Linear(dim, dim_head * heads, bias=False)
        self.to_kv = nn.Linear(dim, 2 * dim_head * heads, bias=False)

    def forward(self, latents):
        query = self.to_q(latents)
        key, value = self.to_kv(latents).chunk(2, dim=-1)
        query = query.reshape(query.size(0), -1, self.heads, self.dim_head).transpose(1, 2)
        key = key.reshape(key.size(0), -1, self.heads, self.dim_head).transpose(1, 2)
        scale = 1 / math.sqrt(math.sqrt(self.dim_head))
        weight = (query * scale) @ (key * scale).transpose(-2, -1)
        return torch.softmax(weight, dim=-1)
"""
    found = values(source, "PerceiverAttention.forward")
    assert found["weight"].tag(ScaleTag).factor.value == pytest.approx(1 / 8)  # 64 ** -1/4, twice
    assert codes(source) == []
    assert codes(source.replace("math.sqrt(math.sqrt(self.dim_head))", "math.sqrt(self.dim_head)")) == ["SC102"]


def test_non_overlapping_patches_divide_the_image():
    source = """
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


class PatchEmbed(nn.Module):
    def __init__(self, width=64, patch=16):
        super().__init__()
        self.proj = nn.Conv2d(3, width, kernel_size=patch, stride=patch)

    def forward(self, img: Float[Tensor, "b 3 h w"]):
        grid = self.proj(img)
        return grid
"""
    assert shape(values(source, "PatchEmbed.forward")["grid"]) == "(b, 64, h//16, w//16)"


def test_made_up_sizes_are_told_from_sizes_the_code_names():
    """Rules never judge on a size the engine invented (SC302, SC102): the fact says which those are."""
    from shapecheck.engine.symbolic.dims import Dim

    source = """
import torch


def f(x, y):
    b, t, d = x.shape
    z = y.permute(0, 2, 1)
    return z
"""
    facts = facts_of(source)
    z = [a.value for run in facts.runs for a in run.assignments if a.name == "z"][0]
    invented = z.shape.dims[0]
    assert facts.made_up(invented) and facts.made_up(Dim.sym(f"{invented}|t"))
    assert not facts.made_up(Dim.sym("t")) and not facts.made_up(Dim.const(64))


# --- a module chosen by the configuration --------------------------------------------------------

CHOSEN_MODULES = """
import torch
from torch import nn
from jaxtyping import Float
from torch import Tensor


class FullAttention(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.mix = nn.Linear(width, width)

    def forward(self, hidden):
        return self.mix(hidden)


class SparseAttention(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.mix = nn.Linear(width, width)

    def forward(self, hidden):
        return self.mix(hidden)


class Layer(nn.Module):
    def __init__(self, config, width=64):
        super().__init__()
        if config.attention_type == "full":
            self.attention = FullAttention(width)
        else:
            self.attention = SparseAttention(width)
        self.norm = nn.LayerNorm(width) if config.pre_norm else nn.Identity()
        self.head = nn.Linear(width, 10)

    def forward(self, x: Float[Tensor, "b t 64"]):
        mixed = self.attention(x)
        normed = self.norm(mixed)
        return self.head(normed)
"""


def test_a_module_chosen_on_an_undecided_branch_is_either_one_and_both_are_followed():
    """``if config.x: self.a = A(...) else: self.a = B(...)`` and ``nn.LayerNorm(d) if c else
    nn.Identity()``: the attribute holds one of the modules; calling it runs each with the caller's
    tensors and joins what they return (before, the last branch's module or nothing was known)."""
    facts = facts_of(CHOSEN_MODULES)
    called = {run.qualname for run in facts.runs if run.inlined}
    assert {"FullAttention.forward", "SparseAttention.forward"} <= called
    found = values(CHOSEN_MODULES, "Layer.forward")
    assert shape(found["mixed"]) == "(b, t, 64)" and shape(found["normed"]) == "(b, t, 64)"


def test_a_mis_sized_layer_after_a_chosen_module_is_found():
    bug = twin(CHOSEN_MODULES, "self.head = nn.Linear(width, 10)", "self.head = nn.Linear(2 * width, 10)")
    assert codes(CHOSEN_MODULES) == []
    assert codes(bug) == ["SC406"]


def test_two_layers_of_one_kind_on_two_branches_keep_the_last_one_written():
    """``nn.Linear(d, 2 * d)`` or ``nn.Linear(d, 3 * d)``: joined sizes would hide the configuration
    the code after the ``if`` is written for (``tests/test_engine_precision_guards.py``)."""
    source = CHOSEN_MODULES.replace(
        "        self.head = nn.Linear(width, 10)\n",
        "        if config.wide:\n            self.head = nn.Linear(width, 20)\n        else:\n            self.head = nn.Linear(width, 10)\n",
    )
    assert shape(values(source, "Layer.forward")["normed"]) == "(b, t, 64)"
    facts = facts_of(source)
    run = [r for r in facts.runs if r.qualname == "Layer.forward" and not r.inlined][0]
    head = [e for e in facts.events if e.run is run and e.op == "module.Linear"]
    assert [str(e.result_tensor.shape) for e in head] == ["(b, t, 10)"]


def test_positions_counted_past_the_padding_with_cumsum_are_positions():
    """OPT and RoBERTa number the tokens past the padding, ``cumsum(mask, dim=1) * mask``, instead
    of with ``arange``: a lookup with those ids is a positional table, not token embeddings."""
    source = """
import torch
from torch import nn


class LearnedPositions(nn.Embedding):
    def __init__(self, num_positions: int = 512, dim: int = 64):
        super().__init__(num_positions + 2, dim)

    def forward(self, attention_mask: torch.LongTensor):
        attention_mask = attention_mask.long()
        positions = (torch.cumsum(attention_mask, dim=1).type_as(attention_mask) * attention_mask).long() - 1
        table = super().forward(positions + 2)
        return table
"""
    from shapecheck.engine.domain.values import PositionTag, TokenEmbeddingTag

    table = values(source, "LearnedPositions.forward")["table"]
    assert table.tag(PositionTag) is not None and table.tag(PositionTag).kind == "table"
    assert not table.has(TokenEmbeddingTag)


PADDED = """
import torch
import torch.nn.functional as F
from torch import nn


class Blocks(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 64, block: int = 4):
        super().__init__()
        self.block = block
        self.token_types = nn.Embedding(2, dim)

    def forward(self, x, ids, mask, n: int, amounts):
        x = torch.randn(2, 8, 16)
        opaque = F.pad(x, amounts)
        last = F.pad(x, (1, 2))
        middle = F.pad(x, (0, 0, 3, 3))
        every = F.pad(x, (1, 1, 2, 2, 0, 1))
        unknown = F.pad(x, (0, n))
        ids = torch.zeros(2, 7, dtype=torch.long)
        ids = nn.functional.pad(ids, (0, 5), value=0)
        mask = torch.ones(2, 7, dtype=torch.bool)
        mask = F.pad(mask, (0, 1), value=False)
        types = self.token_types(ids)
        return last, middle, every, unknown, types
"""


def test_pad_grows_the_padded_axes_and_keeps_what_the_values_are():
    """``F.pad`` grows the last axes by the amounts given for them, last axis first (shapes as torch
    2.13 gives them), keeps the dtype, and does not make ids positional: a lookup with padded
    token-type ids (BigBird's ``_pad_to_block_size``) is not a positional table."""
    from shapecheck.engine.domain.values import PositionTag

    found = values(PADDED, "Blocks.forward")
    assert shape(found["last"]) == "(2, 8, 19)"
    assert shape(found["middle"]) == "(2, 14, 16)"
    assert shape(found["every"]) == "(3, 12, 18)"
    assert shape(found["unknown"]) == "(2, 8, n+16)"
    assert found["opaque"].shape.rank == 3 and not found["opaque"].shape.variadic  # amounts unseen: rank kept
    assert shape(found["ids"]) == "(2, 12)" and found["ids"].dtype == "int"
    assert shape(found["mask"]) == "(2, 8)" and found["mask"].dtype == "bool"
    assert not found["ids"].has(PositionTag) and not found["types"].has(PositionTag)


PATCH_CONVOLUTIONS = """
import torch
from torch import nn


class Stems(nn.Module):
    def __init__(self, d: int = 32):
        super().__init__()
        self.patchify = nn.Conv2d(3, d, kernel_size=4, stride=4)
        self.padded_patches = nn.Conv2d(3, d, kernel_size=4, stride=4, padding=1)
        self.overlapping = nn.Conv2d(3, d, kernel_size=7, stride=4, padding=3)
        self.pointwise = nn.Conv2d(3, d, kernel_size=1, stride=1)
        self.frames = nn.Conv1d(80, d, kernel_size=(2,), stride=(2,))
        self.peg = nn.Conv2d(d, d, 3, 1, 1, groups=d)
        self.mix = nn.Conv2d(d, d, 1)

    def forward(self, images, mels):
        patches = self.patchify(images)
        padded = self.padded_patches(images)
        overlapping = self.overlapping(images)
        pointwise = self.pointwise(images)
        frames = self.frames(mels)
        encoded = self.peg(patches)
        mixed = self.mix(patches)
        return patches, padded, overlapping, pointwise, frames, encoded, mixed
"""


def test_a_patchifying_conv_makes_tokens_and_a_padded_conv_over_tokens_gives_positions():
    """Non-overlapping patches cut from an input that is not tokens yet (``kernel_size == stride >
    1``, no padding: a ViT's patch embedding) are token embeddings with no position; a zero-padded
    or overlapping conv is not a patch embedding (its borders tell positions apart). Over tokens, a
    zero-padded conv (CPVT's PEG) gives them positions; a 1x1 conv does not."""
    from shapecheck.engine.domain.values import PositionTag, TokenEmbeddingTag

    found = values(PATCH_CONVOLUTIONS, "Stems.forward")
    assert found["patches"].tag(TokenEmbeddingTag) is not None and not found["patches"].has(PositionTag)
    assert found["frames"].tag(TokenEmbeddingTag) is not None
    for name in ("padded", "overlapping", "pointwise"):
        assert not found[name].has(TokenEmbeddingTag), name
    assert found["encoded"].tag(PositionTag).kind == "conv"
    assert not found["mixed"].has(PositionTag)


APPENDED = """
import torch
from torch import nn


class Lists(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 32)

    def forward(self, x, grid):
        a = torch.randn(2, 8, 16)
        b = torch.randn(2, 4, 16)
        straight = []
        straight.append(a)
        straight.append(b)
        joined = torch.cat(straight, dim=1)
        looped = []
        for t in grid:
            looped.append(self.proj(a))
        stacked = torch.cat(looped, dim=0)
        extended = [a]
        extended.extend([b, b])
        three = torch.cat(extended, dim=1)
        return joined, stacked, three
"""


def test_a_list_grown_by_append_holds_what_was_appended():
    """``items.append(x)`` on a local list: straight-line appends give those items in order (shapes
    as torch 2.13 gives them); appends in a loop the engine runs once give any number of items like
    them, so ``torch.cat`` joins a count of its own, never one item (HunYuan-VL's list of
    interpolated position embeddings, once lost, made its patches look position-free)."""
    found = values(APPENDED, "Lists.forward")
    assert shape(found["joined"]) == "(2, 12, 16)"
    assert shape(found["three"]) == "(2, 16, 16)"
    stacked = found["stacked"].shape
    assert [str(d) for d in stacked.dims[1:]] == ["8", "32"] and not stacked.dims[0].is_const


GATED_TABLE = """
import torch
from torch import nn


class GatedPositions(nn.Module):
    def __init__(self, vocab: int = 100, num_patches: int = 16, hidden: int = 32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.gate = nn.Parameter(torch.zeros(1))
        self.embedding = nn.Parameter(torch.randn(num_patches, hidden))

    def forward(self, ids):
        x = self.tokens(ids)
        gated = (1 - self.gate.tanh()) * self.embedding
        halved = self.embedding / 2
        x = x + gated.view(1, 16, 32)
        return x, halved
"""


def test_a_parameter_times_one_number_is_still_the_parameter():
    """``(1 - gate.tanh()) * table`` with a one-element gate (Mllama's gated position embedding) and
    ``table / 2`` keep the table's parameter identity, so the gated table added to token embeddings
    is a learned positional table."""
    from shapecheck.engine.domain.tags import ParameterTag
    from shapecheck.engine.domain.values import PositionTag

    found = values(GATED_TABLE, "GatedPositions.forward")
    assert found["gated"].tag(ParameterTag) is not None and found["halved"].tag(ParameterTag) is not None
    assert found["x"].tag(PositionTag) is not None and found["x"].tag(PositionTag).kind == "added"


LAYERS_APPENDED_IN_A_LOOP = """
import torch
from torch import nn


def mlp(dim_in, dim_out, dim_hidden, depth=3):
    layers = []
    for i in range(depth):
        is_last = i == (depth - 1)
        in_d = dim_in if i == 0 else dim_hidden
        out_d = dim_out if is_last else dim_hidden
        layers.append(nn.Linear(in_d, out_d))
        if not is_last:
            layers.append(nn.GELU())
    return nn.Sequential(*layers)


class Dynamics(nn.Module):
    def __init__(self, dim=512):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim * 2), mlp(dim * 2, dim, dim))

    def forward(self, latent, embed):
        return latent + self.net(torch.cat((latent, embed), dim=-1))


if __name__ == "__main__":
    Dynamics()(torch.randn(2, 8, 512), torch.randn(2, 8, 512))
"""


def test_layers_appended_in_a_loop_are_not_taken_for_alike():
    """Layers built in a loop differ by iteration (x-transformers' ``MLP``: the first takes
    ``dim_in``, the others ``dim_hidden``), so the list is not "every item like the one the body
    built once": a chain of them is not judged (it runs in torch 2.13: (2, 8, 512))."""
    assert codes(LAYERS_APPENDED_IN_A_LOOP) == []
    # not quiet by giving up: the run through the construction reaches the norm with the real input
    norms = [e for e in facts_of(LAYERS_APPENDED_IN_A_LOOP).events_of("module.LayerNorm") if e.run.inlined]
    assert [str(e.result_tensor.shape) for e in norms] == ["(2, 8, 1024)"]


UNREADABLE_STRIDE = """
import torch
from torch import nn

from .helpers import stride


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=stride())
        self.fc = nn.Linear(8 * 15 * 15, 10)

    def forward(self, img: "Float[Tensor, 'b 3 32 32']"):
        return self.fc(self.conv(img).flatten(1))
"""


def test_a_conv_argument_given_but_unreadable_is_not_its_default():
    """``stride=helper()`` is a stride the engine cannot read, not the default 1: with stride 2 torch
    gives (b, 8, 15, 15) and the Linear fits, so nothing is reported (it was a false SC406, found
    by mutation testing of ``ops/nn_modules.py``)."""
    assert codes(UNREADABLE_STRIDE) == []
    convs = facts_of(UNREADABLE_STRIDE).events_of("module.Conv2d")
    assert [str(e.result_tensor.shape) for e in convs] == ["(b, 8, _, _)"]  # the channels known, the sizes not


LOOP_INDEX = """
import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, dim_in: int = 1024, dim_hidden: int = 512, depth: int = 3):
        super().__init__()
        for i in range(depth):
            first = i == 0
            after_first = i >= 1
            in_d = dim_in if i == 0 else dim_hidden
        self.proj = nn.Linear(in_d, dim_hidden)
"""


def test_a_range_index_may_be_zero():
    """``for i in range(n)`` starts at 0: ``i == 0`` and ``i >= 1`` are undecided in a body the
    engine runs once for every iteration (sizes are at least 1; an index is not a size), so
    ``dim_in if i == 0 else dim_hidden`` is not ``dim_hidden``."""
    from shapecheck.engine.domain.values import UNKNOWN

    found = values(LOOP_INDEX, "Stack.__init__")
    assert found["first"] is UNKNOWN and found["after_first"] is UNKNOWN
    assert str(found["in_d"].dim) == "1024|512"  # either branch's size, joined


SIZES_BEFORE_THE_LAST = """
import torch
from torch import nn


class Decoder(nn.Module):
    def forward(self, inputs_embeds):
        batch_size, seq_length = inputs_embeds.size()[:-1]
        hidden = inputs_embeds * 2
        return hidden
"""


def test_sizes_unpacked_from_a_slice_of_the_shape_keep_the_sliced_off_dims():
    """``batch_size, seq_length = x.size()[:-1]`` names the leading dims of a rank-3 tensor (MBart's
    decoder): x is ``(batch_size, seq_length, _)``, not ``(batch_size, seq_length)``, which broadcast
    against the position embeddings into a wrong shape."""
    found = values(SIZES_BEFORE_THE_LAST, "Decoder.forward")
    assert shape(found["hidden"]) == "(batch_size, seq_length, _)"


LAYER_SCALE = """
import math
import torch
from torch import nn


class Layer(nn.Module):
    def __init__(self, config, max_len: int = 64, d: int = 32):
        super().__init__()
        self.lambda_1 = nn.Parameter(config.layer_scale_init_value * torch.ones(d))
        position = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        table = torch.zeros(max_len, d)
        table[:, 0::2] = torch.sin(position * div)
        table[:, 1::2] = torch.cos(position * div)
        self.pos = nn.Parameter(table)
"""


def test_a_parameter_is_not_maybe_positional_for_its_initial_values():
    """A layer scale initialised as ``config.init * torch.ones(d)`` (InternVL) is learned: the
    "maybe positional" of a product with an unseen number does not make every stream it scales look
    positioned. A table initialised with sinusoids keeps its positions."""
    from shapecheck.engine.domain.values import PositionTag

    found = values(LAYER_SCALE, "Layer.__init__")
    assert not found["self.lambda_1"].has(PositionTag)
    assert found["self.pos"].tag(PositionTag) is not None and found["self.pos"].tag(PositionTag).kind != "unknown"


ORDERED_SEQUENTIAL = """
from collections import OrderedDict

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, d: int = 32, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.mlp = nn.Sequential(OrderedDict([("fc1", nn.Linear(d, hidden)), ("act", nn.GELU()), ("fc2", nn.Linear(hidden, classes))]))
        self.bad = nn.Sequential(OrderedDict([("fc1", nn.Linear(d, hidden)), ("fc2", nn.Linear(d, classes))]))

    def forward(self, x: "Float[Tensor, 'b 32']"):
        y = self.mlp(x)
        fc = self.mlp.fc1(x)
        return y, fc
"""


def test_a_sequential_of_an_ordered_dict_chains_its_named_layers():
    """``nn.Sequential(OrderedDict([(name, layer), ...]))``: the layers in order, each by its name
    (shapes as torch 2.13 gives them: (b, 10) and (b, 64)); a chain that does not fit is reported
    (torch raises "mat1 and mat2 shapes cannot be multiplied (2x64 and 32x10)")."""
    found = values(ORDERED_SEQUENTIAL, "Head.forward")
    assert shape(found["y"]) == "(b, 10)" and shape(found["fc"]) == "(b, 64)"
    assert codes(ORDERED_SEQUENTIAL) == ["SC406"]


# --- super(Class, self): the older spelling of super() ------------------------------------------

EXPLICIT_SUPER = """
import torch
import torch.nn as nn


class Projections(nn.Module):
    def __init__(self, dim, num_heads):
        super(Projections, self).__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3)


class WindowAttention(Projections):
    def __init__(self, dim=96, num_heads=3):
        super(WindowAttention, self).__init__(dim, num_heads)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = q @ k.transpose(-2, -1) * self.head_dim ** -0.5
        attn = attn.softmax(dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))
"""


@pytest.mark.parametrize(
    "spelling",
    ["super(WindowAttention, self).__init__(dim, num_heads)", "super().__init__(dim, num_heads)"],
)
def test_explicit_super_runs_the_parent_constructor_like_super(spelling):
    source = twin(EXPLICIT_SUPER, "super(WindowAttention, self).__init__(dim, num_heads)", spelling)
    found = values(source, "WindowAttention.forward")
    assert shape(found["qkv"]) == "(3, B, 3, N, 32)"
    assert shape(found["attn"]) == "(B, 3, N, N)"
    assert codes(source) == []
    assert codes(twin(source, " * self.head_dim ** -0.5", "")) == ["SC101"]


SKIPPING_SUPER = """
import torch
import torch.nn as nn


class Projections(nn.Module):
    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3)


class SingleHead(Projections):
    def __init__(self, dim, num_heads):
        super().__init__(dim, num_heads)
        self.num_heads, self.head_dim = 1, dim


class Attention(SingleHead):
    def __init__(self, dim=96, num_heads=3):
        super(SingleHead, self).__init__(dim, num_heads)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        y = x
"""


def test_explicit_super_may_name_a_parent_to_skip_to():
    """``super(SingleHead, self)`` starts the lookup after ``SingleHead``: ``Projections``'s
    constructor runs, ``SingleHead``'s does not (3 heads of 32, not 1 of 96)."""
    assert shape(values(SKIPPING_SUPER, "Attention.forward")["q"]) == "(B, 3, N, 32)"


def test_super_of_a_class_that_is_not_a_parent_is_not_followed():
    """``super(SingleHead, self)`` in a class that does not derive from it raises TypeError in
    Python: nothing is run, and the layer it would have built stays unknown."""
    source = SKIPPING_SUPER + """

class Unrelated(nn.Module):
    def __init__(self, dim=96):
        super(SingleHead, self).__init__(dim, 3)
        self.out = nn.Linear(dim, 32)

    def forward(self, x: torch.Tensor):
        B, N, C = x.shape
        y = self.qkv(x)
        z = self.out(x)
"""
    found = values(source, "Unrelated.forward")
    assert shape(found["y"]) is None
    assert shape(found["z"]) == "(B, N, 32)"  # the rest of the constructor and forward did run


def test_tensor_where_reads_its_operands_by_position_or_keyword():
    """``scores.where(cond, y)`` is ``torch.where(cond, scores, y)`` however the two are passed."""
    source = """
import math
import torch
from jaxtyping import Bool, Float
from torch import Tensor


def attend(q: Float[Tensor, "b h t 64"], k: Float[Tensor, "b h t 64"], keep: Bool[Tensor, "t t"]):
    scores = q @ k.transpose(-2, -1) / math.sqrt(64)
    by_position = scores.where(keep, float("-inf"))
    by_keyword = scores.where(condition=keep, other=float("-inf"))
    mixed = scores.where(keep, other=float("-inf"))
"""
    found = values(source, "attend")
    for name in ("by_position", "by_keyword", "mixed"):
        assert shape(found[name]) == "(b, h, t, t)", name
        masked = found[name].tag(MaskedTag)
        assert masked is not None and str(masked.mask.shape) == "(t, t)" and masked.blocked_when is False, name


# --- items of a parameter the engine cannot see ----------------------------------------------------

WINDOWS = """
from typing import Tuple

import torch


def window_partition(x: torch.Tensor, window_size: Tuple[int, int]) -> torch.Tensor:
    B, H, W, C = x.shape
    x = x.view(B, H // window_size[0], window_size[0], W // window_size[1], window_size[1], C)
    windows = x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size[0], window_size[1], C)
    return windows
"""


def test_an_item_of_an_unseen_parameter_is_a_size_named_after_it():
    """Swin's ``window_size[0]`` / ``window_size[1]``: each item is one size, the same at every read."""
    found = values(WINDOWS, "window_partition")
    assert shape(found["x"]) == "(B, H//window_size[0], window_size[0], W//window_size[1], window_size[1], C)"
    assert shape(found["windows"]) == "(B*(H//window_size[0])*(W//window_size[1]), window_size[0], window_size[1], C)"
    assert codes(WINDOWS) == []
    assert codes(twin(WINDOWS, ".contiguous().view(", ".view(")) == ["SC501"]
