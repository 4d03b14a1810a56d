"""Kill tests for the mutants that survived the ``--only`` runs of helper session ``mut27`` (issue 13):
the engine functions changed by the rc403 and rc603 branches (``symbolic/dims.py``'s head-split
predicates, ``ops/library_losses.py``, ``ops/windows.py``, and the functions they touched elsewhere)."""

from __future__ import annotations

from shapecheck.engine.symbolic.dims import (
    Assumptions,
    _substitute_closed,
    differ_by_head_count,
    differ_once_exact,
    leaves_a_fraction_of_the_head_count,
    sym,
    widens_a_head_split,
)

b, t, s, e, h, d, w, n = (sym(name) for name in ("b", "t", "s", "e", "h", "d", "w", "n"))


# --- symbolic/dims.py: the head-split predicates of SC403 ------------------------------------------


def test_differ_by_head_count_reads_both_sides_with_the_path_facts() -> None:
    """``n_head == h`` known on the path: ``n_head * h * (e // h)`` is ``e`` times the head count."""
    facts = Assumptions()
    facts.add_equal(n, h)
    assert differ_by_head_count(n * h * (e // h), e, facts)
    assert differ_by_head_count(e, n * h * (e // h), facts)
    assert not differ_by_head_count(n * h * (e // h), e)  # without the fact, n is a size of its own


def test_differ_once_exact_without_path_facts() -> None:
    """``(b, t, e)`` viewed as ``(b, t, h, t * (e // h))``: the sizes multiply to ``b*t*e`` and
    ``b*t*t*e`` once ``e = h * q``, a factor ``t``; the division on either side alone is mapped."""
    assert differ_once_exact(b * t * e, b * t * h * t * (e // h))
    assert differ_once_exact(b * t * h * t * (e // h), b * t * e)


def test_differ_once_exact_needs_a_head_split() -> None:
    """Without a floor division there is nothing to make exact: not judged (``equal`` says the rest)."""
    assert not differ_once_exact(2 * t, 3 * t)
    assert not differ_once_exact(b * t, b * t * s)


def test_differ_once_exact_leaves_a_constant_ratio_of_several_terms() -> None:
    """``3 * (t + 1) * h * (e // h)`` against ``(t + 1) * h * (e // h)``: a fused projection's 3, not
    a size of its own, also when the sizes are sums (a position table of ``t + 1`` rows)."""
    assert not differ_once_exact(3 * (t + 1) * h * (e // h), (t + 1) * h * (e // h))
    assert not differ_once_exact((t + 1) * h * (e // h), 3 * (t + 1) * h * (e // h))


def test_differ_once_exact_is_for_every_size_from_two() -> None:
    """``h * t * t * q`` against ``2 * t * h * q`` are equal when ``t == 2``: not a difference for every
    size >= 2, so not judged."""
    assert not differ_once_exact(h * t * t * (e // h), 2 * t * e)
    assert differ_once_exact(h * t * t * (e // h), t * e)


def test_differ_once_exact_keeps_the_path_equalities() -> None:
    """A path that asserted ``t * s == s`` (one step: ``t`` is 1) knows ``t*s + h*q`` and ``s + h*q``
    are equal: they are not judged to differ."""
    facts = Assumptions()
    facts.add_equal(t * s, s)
    assert not differ_once_exact(t * s + h * (e // h), s + e, facts)
    assert differ_once_exact(t * s + h * (e // h), s + e)


def test_head_split_predicates_give_up_on_dims_too_complex() -> None:
    """``e ** 16 * h`` with ``e = h * q`` has an exponent beyond the algebra's cap: no verdict."""
    assert not differ_once_exact(h * e**16, e // h)
    assert not widens_a_head_split(h * e**16, e // h)


def test_widens_a_head_split_without_path_facts() -> None:
    assert widens_a_head_split(e, h * (e // h) * h)
    assert not widens_a_head_split(e, t)  # t is no multiple of e: no ratio at all


def test_widens_a_head_split_of_a_width_written_as_heads_times_head_dim() -> None:
    """A width known as ``h * (e // h)`` split into ``(h, e)``: the head count used once too often;
    the division is on the width's side only."""
    assert widens_a_head_split(h * (e // h), h * e)


def test_widens_a_head_split_judges_one_factor_only() -> None:
    """A ratio of two terms (``h + t``) or with a constant (``3 * h``, a fused projection's count)
    is not judged."""
    assert not widens_a_head_split(e, (e // h) * h * (h + t))
    assert not widens_a_head_split(e, 3 * h * h * (e // h))


def test_a_checked_divisor_of_a_product_is_no_head_count() -> None:
    """The path knows ``w`` divides ``t * d`` (a view into windows solved a ``-1``): a fact between a
    product and a size names no head count, so a ``-1`` of ``(b * t * d) / (b * w * d)`` is not
    judged a fraction of a head count."""
    facts = Assumptions()
    facts.add_divisible(t * d, w)
    assert not leaves_a_fraction_of_the_head_count(b * t * d, b * w * d, facts)
    checked = Assumptions()
    checked.add_divisible(e, h)  # if hidden_size % num_heads != 0: raise
    assert leaves_a_fraction_of_the_head_count(b * t * e, b * h * e, checked)


def test_the_head_split_mapping_is_applied_four_times_at_most() -> None:
    """A cycle (``e // h`` and ``h // e`` in one pair of dims) never closes: the mapping is applied
    four times, then the dim is left as it is."""
    q1, q2 = sym("q1"), sym("q2")
    assert _substitute_closed(e, {"e": h * q1, "h": e * q2}) == e * q1**2 * q2**2


# --- ops/library_losses.py: torch_einops_utils.cross_entropy read as torch's cross-entropy ----------

import textwrap  # noqa: E402

import libcst as cst  # noqa: E402

from shapecheck.engine import analyze  # noqa: E402
from shapecheck.engine.domain.values import ConstValue, int_of  # noqa: E402

LIBRARY_LOSS_CALLS = """
import torch
from functools import partial
from torch_einops_utils import cross_entropy


def losses(logits: torch.Tensor, target: torch.Tensor, pad_id: int = 0):
    a = cross_entropy(logits, target, -1, 'none')
    b = cross_entropy(logits, target, -100, 'mean', 1)
    c = cross_entropy(logits=logits, target=target, class_dim=1)
    loss_fn = partial(cross_entropy, ignore_index=pad_id, class_dim=1)
    d = loss_fn(logits, target)
    e = cross_entropy(logits, target, -100, 'mean', 2)
    return a, b, c, d, e
"""


def _library_loss_events() -> tuple[cst.Module, dict]:
    source = textwrap.dedent(LIBRARY_LOSS_CALLS)
    module = cst.parse_module(source)
    facts = analyze(module, source, "example.py")
    return module, {module.code_for_node(event.node): event for event in facts.events_of("cross_entropy")}


def test_library_cross_entropy_events_carry_torchs_arguments() -> None:
    """Each call is a cross_entropy event with torch's arguments: the positional ignore_index and
    reduction by keyword (values and nodes), class_dim 1 (positional, by keyword, bound by
    ``partial``) gone, class_dim 2 no event at all."""
    module, events = _library_loss_events()
    assert sorted(events) == [
        "cross_entropy(logits, target, -1, 'none')",
        "cross_entropy(logits, target, -100, 'mean', 1)",
        "cross_entropy(logits=logits, target=target, class_dim=1)",
        "loss_fn(logits, target)",
    ]
    a = events["cross_entropy(logits, target, -1, 'none')"]
    assert int_of(a.kwargs["ignore_index"]) == -1 and a.kwargs["reduction"] == ConstValue("none")
    assert {k: module.code_for_node(v) for k, v in a.kwarg_nodes.items()} == {"ignore_index": "-1", "reduction": "'none'"}
    assert [module.code_for_node(n) for n in a.arg_nodes] == ["logits", "target"]
    b = events["cross_entropy(logits, target, -100, 'mean', 1)"]
    assert set(b.kwargs) == {"ignore_index", "reduction"} and int_of(b.kwargs["ignore_index"]) == -100
    assert set(b.kwarg_nodes) == {"ignore_index", "reduction"}
    assert [module.code_for_node(n) for n in b.arg_nodes] == ["logits", "target"]


def test_library_cross_entropy_by_keyword_is_torchs_input_and_target() -> None:
    module, events = _library_loss_events()
    c = events["cross_entropy(logits=logits, target=target, class_dim=1)"]
    assert set(c.kwargs) == {"input", "target"} and c.args == ()
    assert c.tensor(0, "input") is c.kwargs["input"] and c.kwargs["input"] is not c.kwargs["target"]
    assert {k: module.code_for_node(v) for k, v in c.kwarg_nodes.items()} == {"input": "logits", "target": "target"}
    d = events["loss_fn(logits, target)"]
    assert set(d.kwargs) == {"ignore_index"} and d.kwarg_nodes == {}


# --- ops/windows.py: ids given to a layer the engine cannot see -----------------------------------

from shapecheck.linter import lint_source  # noqa: E402


def _sc603_lines(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", {"SC603"})
    return sorted(d.line for d in result.diagnostics if d.code == "SC603")


def _marked(source: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(source).splitlines(), start=1) if line.rstrip().endswith("# <-")]


UNSEEN_NET_OF_INT_IDS = """
import torch
import torch.nn.functional as F
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net, ignore_index=-100, pad_value=0):
        super().__init__()
        self.net = net
        self.ignore_index = ignore_index
        self.pad_value = pad_value

    def forward(self, x):
        x = x.long()
        inp, target = x, {target}
        inp = {replace}
        logits = self.net(inp)
        logits = logits[:, :-1]
        return F.cross_entropy(logits.transpose(1, 2), target, ignore_index=self.ignore_index)
"""


def test_int_ids_given_to_an_unseen_layer_start_a_sequence() -> None:
    """The ids are known to be integers (``x.long()``), not only of unknown dtype: given to the unseen
    network as they are, or with some replaced by ``where`` / ``masked_fill``, its output is computed
    from them."""
    for replace in (
        "inp",
        "torch.where(inp == self.ignore_index, self.pad_value, inp)",
        "inp.masked_fill(inp == self.ignore_index, self.pad_value)",
        "torch.masked_fill(input=inp, mask=inp == self.ignore_index, value=self.pad_value)",
    ):
        bug = UNSEEN_NET_OF_INT_IDS.format(target="x[:, :-1]  # <-", replace=replace)
        assert _sc603_lines(bug) == _marked(bug), replace
        assert _sc603_lines(UNSEEN_NET_OF_INT_IDS.format(target="x[:, 1:]", replace=replace)) == [], replace


def test_an_unseen_layer_given_a_prompt_first_keeps_the_window_of_its_tokens() -> None:
    """``self.net(prompt, inp)``: the first argument is not the window; the output keeps the window
    of ``inp`` (offset 0 of ``seq``), not a sequence of the prompt's own (a tensor of unknown
    dtype, which alone would start one)."""
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class PrefixLM(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, prompt: torch.Tensor, seq: torch.Tensor):
            inp, target = seq[:, :-1], {target}
            logits = self.net(prompt, inp)
            return F.cross_entropy(logits.transpose(1, 2), target)
    """
    bug = source.format(target="seq[:, :-1]  # <-")
    assert _sc603_lines(bug) == _marked(bug)
    assert _sc603_lines(source.format(target="seq[:, 1:]")) == []


UNKNOWN_BATCH = """
import torch
import torch.nn.functional as F
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, batch):
        {body}
"""


def test_an_unseen_layer_given_a_tensor_the_engine_knows_nothing_of_starts_no_sequence() -> None:
    """``batch.input_ids.clone()`` and ``batch.labels.clone()`` are both a tensor the engine knows
    nothing of (one value for all such tensors): the network's output on one is not compared with a
    window of the other."""
    body = """logits = self.net(batch.input_ids.clone())
        labels = batch.labels.clone()
        return F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, :-1])"""
    assert _sc603_lines(UNKNOWN_BATCH.format(body=body)) == []


def test_windows_of_two_tensors_the_engine_knows_nothing_of_are_two_sequences() -> None:
    """A bug found by the mutants of ``unseen_call_result``: windows cut from ``batch.input_ids.clone()``
    and from ``batch.labels.clone()`` were windows of one sequence (the shared unknown tensor), so
    SC603 said the labels were the inputs. As with separate ``input_ids`` and ``labels`` parameters,
    the engine cannot tell that labels are the ids."""
    body = """inp = batch.input_ids.clone()[:, :-1]
        labels = batch.labels.clone()[:, :-1]
        logits = self.net(inp)
        return F.cross_entropy(logits.transpose(1, 2), labels)"""
    assert _sc603_lines(UNKNOWN_BATCH.format(body=body)) == []


def test_ids_replaced_in_two_tensors_the_engine_knows_nothing_of_are_two_sequences() -> None:
    """``masked_fill`` keeps the tokens of its input, but not of a tensor the engine knows nothing of
    (``batch.input_ids.clone()``: one value for all such tensors): the inputs and the labels below
    are not one sequence."""
    body = """inp = batch.input_ids.clone().masked_fill(batch.mask, 0)
        labels = batch.labels.clone().masked_fill(batch.mask, -100)
        logits = self.net(inp)
        return F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, :-1])"""
    assert _sc603_lines(UNKNOWN_BATCH.format(body=body)) == []



# --- ops/products.py: _head_dims_apart (SDPA contracts a query and a key split differently) --------

from test_engine_rc403 import SANA  # noqa: E402

from shapecheck.engine.domain.tags import AttentionOutputTag  # noqa: E402
from shapecheck.engine.domain.values import TensorValue  # noqa: E402


def _conflicts(source: str) -> list[tuple[str, str, str]]:
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, "attention.py")
    assert facts.internal_errors == []
    return [(c.kind, c.op, c.detail) for c in facts.conflicts]


def test_a_query_split_sdpa_cannot_contract_is_a_view_conflict_naming_the_query() -> None:
    assert _conflicts(SANA.format(query_sizes="head_dim * attn.heads")) == [(
        "reshape", "view",
        "this view makes the query's head dim attn.heads*(inner_dim//attn.heads), the key's inner_dim//attn.heads "
        "times a power of the head count: scaled_dot_product_attention contracts the two",
    )]


def test_a_key_split_sdpa_cannot_contract_is_a_view_conflict_naming_the_key() -> None:
    """The width is read off the query this time, and the key is split with the head count twice
    (torch: SDPA of a ``(2, 4, 3, 8)`` query and a ``(2, 4, 3, 32)`` key raises)."""
    source = SANA.format(query_sizes="head_dim").replace("inner_dim = key.shape[-1]", "inner_dim = query.shape[-1]").replace(
        "key = key.view(batch_size, -1, attn.heads, head_dim)", "key = key.view(batch_size, -1, attn.heads, head_dim * attn.heads)"
    )
    assert _conflicts(source) == [(
        "reshape", "view",
        "this view makes the key's head dim attn.heads*(inner_dim//attn.heads), the query's inner_dim//attn.heads "
        "times a power of the head count: scaled_dot_product_attention contracts the two",
    )]


def test_sdpa_of_tensors_of_unknown_shape_is_an_attention_output() -> None:
    source = textwrap.dedent(
        """
        import torch
        import torch.nn.functional as F


        def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_known: torch.Tensor):
            k_known = k_known.view(2, 4, 3, 8)
            a = F.scaled_dot_product_attention(q, k, v)
            b = F.scaled_dot_product_attention(k_known, k, v)
            c = F.scaled_dot_product_attention(q, k_known, v)
            return a, b, c
        """
    )
    facts = analyze(cst.parse_module(source), source, "attention.py")
    assert facts.internal_errors == []
    results = [event.result for event in facts.events_of("scaled_dot_product_attention")]
    assert len(results) == 3 and all(isinstance(r, TensorValue) and r.has(AttentionOutputTag) for r in results)


from test_engine_rc403 import PROCESSOR  # noqa: E402

from engine_snippets import findings_on_lines  # noqa: E402

CHECK = "        head_dim = inner_dim // attn.heads\n"
CHECKED = "        if inner_dim % attn.heads != 0:\n            raise ValueError('heads must divide the width')\n" + CHECK


def test_a_head_split_with_the_head_count_twice_after_the_config_check_is_sc403() -> None:
    """A bug found by the mutants of ``_head_dims_apart``: after ``if inner_dim % attn.heads != 0:
    raise``, ``inner_dim // attn.heads`` is the exact quotient (no floor division left to map), and
    neither the view of ``(*, inner_dim)`` nor SDPA's contraction judged the split any more."""
    key_bug = PROCESSOR.format(key_sizes="head_dim * attn.heads").replace(CHECK, CHECKED)
    assert findings_on_lines(key_bug) == [("SC403", "key = key.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)")]
    assert findings_on_lines(PROCESSOR.format(key_sizes="head_dim").replace(CHECK, CHECKED)) == []
    query_bug = SANA.format(query_sizes="head_dim * attn.heads").replace(CHECK, CHECKED)
    assert findings_on_lines(query_bug) == [("SC403", "query = query.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)")]
    assert findings_on_lines(SANA.format(query_sizes="head_dim").replace(CHECK, CHECKED)) == []


def test_exceeds_by_head_count_with_a_checked_divisor() -> None:
    """``e % h == 0`` known: ``h * (e // h)`` is ``e`` and ``e // h`` an exact quotient; ``e`` is still
    the head dim times the head count."""
    from shapecheck.engine.symbolic.dims import exceeds_by_head_count

    facts = Assumptions()
    facts.add_divisible(e, h)
    assert exceeds_by_head_count(h * (e // h), e // h, facts)
    assert not exceeds_by_head_count(e // h, h * (e // h), facts)
    assert not exceeds_by_head_count(t * (e // h), e // h, facts)  # t is no head count
    assert widens_a_head_split(e, h * h * (e // h), facts)
    assert not widens_a_head_split(e, t * h * (e // h), facts)  # t is no factor of the width


def test_logits_of_an_unseen_layer_cut_from_position_one_move_their_window() -> None:
    """``logits[:, 1:]`` of the output of a layer the engine cannot see (rank unknown, batch first):
    the window moves to offset 1, the offset of ``x[:, 1:]``: the same positions, SC603."""
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Wrapper(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x: torch.Tensor):
            logits = self.net(x)
            logits = logits[:, 1:]
            return F.cross_entropy(logits.transpose(1, 2), {target}
    """
    bug = source.format(target="x[:, 1:])  # <-")
    assert _sc603_lines(bug) == _marked(bug)
    assert _sc603_lines(source.format(target="x[:, 2:])")) == []


# --- symbolic/shapes.py reshape: the conflicts its head-split checks give (_view's messages) -----

from test_engine_rc403 import BIGBIRD  # noqa: E402


def test_the_view_of_a_width_split_with_the_head_count_twice_is_a_likely_conflict() -> None:
    """The view itself is judged (the sizes after the -1 widen the width), with and without the
    config check; not SDPA's contraction after it."""
    detail = (
        "the sizes after the -1 of view(batch_size, -1, attn.heads, {sizes}) split the width inner_dim of a tensor of "
        "shape (*, inner_dim) into {split} elements, the width times a power of the head count: the -1 would take "
        "the rest from the leading dims"
    )
    assert _conflicts(PROCESSOR.format(key_sizes="head_dim * attn.heads")) == [(
        "reshape", "view", detail.format(sizes="attn.heads*(inner_dim//attn.heads)", split="attn.heads**2*(inner_dim//attn.heads)")
    )]
    assert _conflicts(PROCESSOR.format(key_sizes="head_dim * attn.heads").replace(CHECK, CHECKED)) == [(
        "reshape", "view", detail.format(sizes="inner_dim", split="attn.heads*inner_dim")
    )]


def test_a_minus_one_cut_by_a_checked_head_count_is_a_likely_conflict() -> None:
    assert _conflicts(BIGBIRD.format(query_sizes="self.attention_head_size * self.num_attention_heads")) == [(
        "reshape", "view",
        "cannot view a tensor of shape (batch_size, seqlen, config.hidden_size) (numel batch_size*config.hidden_size*seqlen) "
        "as (batch_size, -1, config.num_attention_heads, config.hidden_size): the other sizes multiply to "
        "batch_size*config.hidden_size*config.num_attention_heads, so the -1 would be "
        "(batch_size*config.hidden_size*seqlen) / (batch_size*config.hidden_size*config.num_attention_heads)",
    )]


# --- ops/base.py read_trailing_size: reading x.shape[-k] of a tensor of unknown shape ---------------

from engine_snippets import standalone_shapes  # noqa: E402

READ_SIZES = """
import torch
import torch.nn.functional as F


def head(x: torch.Tensor, w: torch.Tensor):
    y = F.gelu(x)
    {body}
    probe = y
    return probe
"""


def _probe(body: str) -> list[str]:
    return standalone_shapes(READ_SIZES.format(body=body), "head", "probe")


def test_sizes_read_from_the_end_refine_a_tensor_of_unknown_shape_in_order() -> None:
    """``y.shape[-1]`` then ``y.shape[-2]``: ``(*, inner)`` then ``(*, seq, inner)`` (the known
    trailing size kept, one anonymous size only where none was read)."""
    assert _probe("inner = y.shape[-1]\n    seq = y.shape[-2]") == ["(*, seq, inner)"]
    assert _probe("seq = y.shape[-2]") == ["(*, seq, _)"]
    assert _probe("inner = y.shape[-1]\n    seq = y.size(-3)") == ["(*, seq, _, inner)"]


def test_sizes_read_from_a_shape_cut_or_extended_refine_nothing() -> None:
    """``y.shape[:-1][-1]`` is the second size from the end, ``(y.shape + (4,))[-1]`` is 4: neither
    says what ``y``'s last size is."""
    assert _probe("lead = y.shape[:-1]\n    seq = lead[-1]") == []
    assert _probe("both = y.shape + (4,)\n    h = both[-1]") == []


def test_a_size_read_after_the_name_was_rebound_refines_nothing() -> None:
    assert _probe("sizes = y.shape\n    y = F.gelu(w)\n    inner = sizes[-1]") == []


# --- ops/shapes.py _view ---------------------------------------------------------------------------


def test_a_three_dim_head_split_sdpa_cannot_contract_is_a_view_conflict() -> None:
    """SDPA takes ``(b * h, t, d)`` tensors too: a query viewed as ``(b * h, -1, h * (e // h))``
    against a key ``(b * h, -1, e // h)`` (torch: SDPA of ``(8, 3, 32)`` and ``(8, 3, 8)`` raises)."""
    source = SANA.format(query_sizes="head_dim * attn.heads")
    for before, after in (
        ("query.view(batch_size, -1, attn.heads, head_dim * attn.heads).transpose(1, 2)", "query.view(batch_size * attn.heads, -1, head_dim * attn.heads)"),
        ("key.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)", "key.view(batch_size * attn.heads, -1, head_dim)"),
        ("value.view(batch_size, -1, attn.heads, head_dim).transpose(1, 2)", "value.view(batch_size * attn.heads, -1, head_dim)"),
    ):
        source = source.replace(before, after)
    assert _conflicts(source) == [(
        "reshape", "view",
        "this view makes the query's head dim attn.heads*(inner_dim//attn.heads), the key's inner_dim//attn.heads "
        "times a power of the head count: scaled_dot_product_attention contracts the two",
    )]



def test_a_view_that_ran_teaches_the_element_count_to_the_next() -> None:
    """``x.view(B, T, h, d)`` of ``(B, T, C)`` ran, so ``C == h * d``; a second view of ``x`` as
    ``(B, T, h, h * d)`` then holds ``h`` times too many elements (torch, B=2 T=3 h=4 d=8: the first
    view of a ``(2, 3, 32)`` tensor runs, the second raises)."""
    source = """
    import torch


    def split(x: torch.Tensor, h: int, d: int):
        B, T, C = x.shape
        q = x.view(B, T, h, d)
        k = x.view(B, T, h, h * d)
        return q, k
    """
    assert findings_on_lines(source) == [("SC403", "k = x.view(B, T, h, h * d)")]
