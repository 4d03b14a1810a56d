"""Windows of one token sequence that differ from path to path (SC603 on x-transformers' wrappers).

``if exists(prepend_embeds): logits = logits[:, prepend_len:]`` cuts a prefix off the network's
output on one path only, and ``pred, labels = (logits[:, 1:], target[:, 1:]) if n > 1 else (logits,
target)`` picks a pair of windows per path. Joined into one window, the two offsets made a fresh
sequence and nothing was compared. The join at an ``if`` (statement or expression) now keeps the
windows per path (``SequenceOriginTag.paths``, each ``WindowPath`` with the side it came from), and
a loss compares the windows of its logits and targets that one path meets (``same_positions``),
never windows of paths that exclude each other.
"""

from __future__ import annotations

import re
import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import SequenceOriginTag, SequenceSource, WindowPath
from shapecheck.engine.facts.training import loss_calls, same_positions
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.linter import lint_source


def sc603_lines(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", {"SC603"})
    return sorted(d.line for d in result.diagnostics if d.code == "SC603")


def marked(source: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(source).splitlines(), start=1) if line.rstrip().endswith("# <-")]


# ------------------------------------------------------------------ a prefix cut on one path (lucidrains)

PREPEND_WRAPPER = """
import torch
import torch.nn.functional as F
from torch import nn
from einops import rearrange
from torch_einops_utils import cross_entropy


def exists(v):
    return v is not None


class AutoregressiveWrapper(nn.Module):
    def __init__(self, net, ignore_index=-100, pad_value=0):
        super().__init__()
        self.net = net
        self.ignore_index = ignore_index
        self.pad_value = pad_value

    def forward(self, x, prepend_embeds=None, **kwargs):
        inp, target = x, {target}
        inp = torch.where(inp == self.ignore_index, self.pad_value, inp)
        out, cache = self.net(inp, return_intermediates=True, prepend_embeds=prepend_embeds, **kwargs)
        logits = out
        if exists(prepend_embeds):
            prepend_len = prepend_embeds.shape[1]
            logits = logits[:, prepend_len:]
        logits = logits[:, :-1]
        return cross_entropy(rearrange(logits, 'b n c -> b c n'), target, ignore_index=self.ignore_index)
"""


def test_prefix_cut_on_one_path_keeps_both_windows() -> None:
    bug = PREPEND_WRAPPER.format(target="x[:, :-1]  # <-")
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(PREPEND_WRAPPER.format(target="x[:, 1:]")) == []


def test_the_joined_logits_hold_one_window_per_side() -> None:
    source = textwrap.dedent(PREPEND_WRAPPER.format(target="x[:, 1:]"))
    facts = analyze(cst.parse_module(source), source, "example.py")
    losses = list(loss_calls(facts))
    assert losses
    for loss in losses:
        logits, target = loss.logits.tag(SequenceOriginTag), loss.target.tag(SequenceOriginTag)
        assert logits is not None and target is not None and logits.source is target.source
        assert logits.offset is None  # not one window on every path
        # the prefix cut where prepend_embeds is given (the if's body), the whole output elsewhere
        assert [(str(window.offset), [side for _, side in window.sides]) for window in logits.windows()] == [
            ("prepend_len", [0]),
            ("0", [1]),
        ]
        assert all(window.sliced for window in logits.windows())  # logits[:, :-1] cut after the merge
        assert [window.offset for window in target.windows()] == [Dim.const(1)]
        assert same_positions(logits, target, loss.event.assumptions) is None


# ------------------------------------------------------------------ a pair of windows chosen per path

FEEDBACK_PASS = """
import torch
from torch import nn
from einops import rearrange
from torch_einops_utils import cross_entropy


class FeedbackWrapper(nn.Module):
    def __init__(self, net, ignore_index=-100):
        super().__init__()
        self.net = net
        self.ignore_index = ignore_index

    def forward(self, token_ids, **kwargs):
        def ce_loss(logits, target):
            return cross_entropy(
                rearrange(logits, 'b n l -> (b n) l'),
                rearrange(target, 'b n -> (b n)'),
                ignore_index=self.ignore_index,
            )

        inp, target = token_ids[:, :-1], token_ids[:, 1:]
        logits, intermediates = self.net(inp, return_intermediates=True, **kwargs)
        pred, labels = (logits[:, 1:], {labels}) if logits.shape[1] > 1 else (logits, target)
        return ce_loss(pred, labels)
"""


def test_a_pair_of_windows_chosen_by_a_conditional_expression() -> None:
    """On the path ``logits.shape[1] > 1`` the pair is (offset 1, offset 1): a finding. The correct
    pair (offset 1, offset 2) / (offset 0, offset 1) is clean, although offset 1 of the logits on
    one path equals offset 1 of the targets on the other."""
    bug = FEEDBACK_PASS.format(labels="target[:, :-1]")
    assert sc603_lines(bug) == [i for i, line in enumerate(textwrap.dedent(bug).splitlines(), 1) if "target[:, :-1]" in line]
    assert sc603_lines(FEEDBACK_PASS.format(labels="target[:, 1:]")) == []


# ------------------------------------------------------------------ if / else statements (functional style)

BOS_SKIPPING = """
import torch
import torch.nn.functional as F


def lm_loss(model, ids: torch.Tensor, skip_bos: bool):
    logits = model(ids)
    if skip_bos:
        logits, targets = logits[:, 1:-1], {then_targets}
    else:
        logits, targets = logits[:, :-1], {else_targets}
    return F.cross_entropy(logits.transpose(1, 2), targets)
"""


def test_windows_of_if_and_else_compare_side_by_side() -> None:
    correct = BOS_SKIPPING.format(then_targets="ids[:, 2:]", else_targets="ids[:, 1:]")
    assert sc603_lines(correct) == []  # offset 1 of the logits (if) against offset 1 of the targets (else): two paths
    bug_else = BOS_SKIPPING.format(then_targets="ids[:, 2:]", else_targets="ids[:, :-1]  # <-")
    assert sc603_lines(bug_else) == marked(bug_else) != []
    bug_then = BOS_SKIPPING.format(then_targets="ids[:, 1:-1]  # <-", else_targets="ids[:, 1:]")
    assert sc603_lines(bug_then) == marked(bug_then) != []


ELIF_CHAIN = """
import torch
import torch.nn.functional as F


def shifted_loss(model, ids: torch.Tensor, skip: int = 0):
    logits = model(ids)
    if skip == 1:
        logits, targets = logits[:, 1:-1], {first}
    elif skip == 2:
        logits, targets = logits[:, 2:-1], {second}
    else:
        logits, targets = logits[:, :-1], ids[:, 1:]
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
"""


def test_an_elif_chain_is_three_paths() -> None:
    correct = ELIF_CHAIN.format(first="ids[:, 2:]", second="ids[:, 3:]")
    assert sc603_lines(correct) == []
    bug = ELIF_CHAIN.format(first="ids[:, 2:]", second="ids[:, 2:-1]  # <-")
    assert sc603_lines(bug) == marked(bug) != []


def test_window_paths_meet_only_where_their_sides_agree() -> None:
    zero, one = Dim.const(0), Dim.const(1)
    then_side, else_side, other = WindowPath(((7, 0),), zero, True), WindowPath(((7, 1),), one, True), WindowPath(((9, 1),), one, False)
    assert not then_side.meets(else_side) and not else_side.meets(then_side)
    assert then_side.meets(other) and other.meets(then_side)  # different branches: one path may take both
    assert WindowPath((), zero, False).meets(else_side)
    assert then_side.meets(WindowPath(((7, 0), (9, 1)), zero, False))


# ------------------------------------------------------------------ next-step regression (continuous values)

CONTINUOUS_WRAPPER = """
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module


def exists(v):
    return v is not None


class GaussianNLL(Module):
    def forward(self, pred, target):
        mean, var = pred
        return F.gaussian_nll_loss(mean, target, var, reduction='none')


class ContinuousAutoregressiveWrapper(Module):
    def __init__(self, net, loss_fn: Module | None = None, use_l1_loss=False, probabilistic=False):
        super().__init__()
        self.net = net
        if not exists(loss_fn):
            if probabilistic:
                loss_fn = GaussianNLL()
            elif use_l1_loss:
                loss_fn = nn.L1Loss(reduction='none')
            else:
                loss_fn = nn.MSELoss(reduction='none')
        self.loss_fn = loss_fn

    def forward(self, x, **kwargs):
        inp, target = x[:, :-1], {target}
        out = self.net(inp, **kwargs)
        loss = self.loss_fn(out, target)
        return loss.mean()
"""


def test_a_loss_layer_chosen_when_none_is_passed() -> None:
    """``if not exists(loss_fn): loss_fn = nn.MSELoss(...)``: the parameter, which the engine cannot
    see, is the layer the constructor falls back to; ``nn.MSELoss`` / ``nn.L1Loss`` compare the
    prediction with the target as cross-entropy does."""
    bug = CONTINUOUS_WRAPPER.format(target="x[:, :-1]  # <-")
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(CONTINUOUS_WRAPPER.format(target="x[:, 1:]")) == []
    result = lint_source(textwrap.dedent(bug), "example.py", {"SC603"})
    assert "the model's own input values, the same positions (offset 0)" in result.diagnostics[0].message


NEXT_FRAME = """
import torch
import torch.nn.functional as F
from torch import nn


class NextFramePredictor(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gru = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, dim)

    def forward(self, frames: torch.Tensor):
        hidden, _ = self.gru(frames[:, :-1])
        pred = self.out(hidden)
        target = {target}
        return F.{loss}(pred, target)
"""


def test_functional_regression_losses_compare_windows() -> None:
    for loss in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        bug = NEXT_FRAME.format(loss=loss, target="frames[:, :-1]  # <-")
        assert sc603_lines(bug) == marked(bug) != [], loss
        assert sc603_lines(NEXT_FRAME.format(loss=loss, target="frames[:, 1:]")) == [], loss


def test_an_autoencoder_is_not_a_next_step_model() -> None:
    """The inputs themselves as targets of a regression (an autoencoder, a denoiser), with no window
    cut on both sides, are no finding, even in a file with a causal attention (where the same
    tensor as cross-entropy targets of a language model would be)."""
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class CausalAutoEncoder(nn.Module):
        def __init__(self, dim, n):
            super().__init__()
            self.enc = nn.Linear(dim, dim // 2)
            self.dec = nn.Linear(dim // 2, dim)
            self.register_buffer("causal", torch.tril(torch.ones(n, n, dtype=torch.bool)))

        def forward(self, x):
            z = self.enc(x.float() / 255)
            scores = (z @ z.transpose(-2, -1)).masked_fill(~self.causal, float("-inf")).softmax(-1)
            return self.dec(scores @ z)


    model = CausalAutoEncoder(32, 16)
    x = torch.randint(0, 256, (4, 16, 32))  # 8-bit samples
    recon = model(x)
    loss = F.mse_loss(recon, x) + F.l1_loss(recon, x)
    loss.backward()
    """
    assert sc603_lines(source) == []


def test_regression_losses_are_not_cross_entropies() -> None:
    """SC602 reads ``loss_calls``: the regression losses are a query of their own."""
    source = textwrap.dedent(NEXT_FRAME.format(loss="mse_loss", target="frames[:, 1:]"))
    facts = analyze(cst.parse_module(source), source, "example.py")
    from shapecheck.engine.facts.training import regression_loss_calls

    assert list(loss_calls(facts)) == []
    assert [loss.event.op for loss in regression_loss_calls(facts)] == ["mse_loss"]


def test_a_layer_parameter_with_a_fallback_is_the_fallback() -> None:
    """``if norm is None: norm = nn.LayerNorm(dim)`` with ``norm`` a parameter the engine cannot
    see: the layer stands for what callers pass (its forward runs), as a tensor fallback does."""
    source = textwrap.dedent(
        """
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim, norm=None):
                super().__init__()
                if norm is None:
                    norm = nn.LayerNorm(dim)
                self.norm = norm

            def forward(self, x: torch.Tensor):
                return self.norm(x)
        """
    )
    facts = analyze(cst.parse_module(source), source, "example.py")
    assert [event.op for event in facts.events if event.op.startswith("module.")] == ["module.LayerNorm"]


# ------------------------------------------------------------------ SC507: a 3-D attention mask; slices of unknown bound

LEARNED_QUERIES = """
import torch
from torch import nn


class Projector(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_heads = config.num_heads
        self.patch_to_query = config.patch_to_query
        self.query = nn.Parameter(torch.zeros(config.max_queries, config.dim))
        self.attn = nn.MultiheadAttention(config.dim, config.num_heads, batch_first={batch_first})  # <-

    def forward(self, key_value_states: torch.Tensor, attn_mask: torch.Tensor | None = None):
        batch_size, num_patches = key_value_states.shape[0], key_value_states.shape[1]
        query_num = None
        for patches, queries in self.patch_to_query.items():
            if num_patches == patches:
                query_num = queries
                break
        queries = self.query[:query_num].unsqueeze(0).repeat(batch_size, 1, 1)
        if attn_mask is not None:
            attn_mask = attn_mask.repeat_interleave(self.num_heads, 0)
            attn_mask = attn_mask.unsqueeze(1).expand(-1, queries.size(1), -1)
        out, _ = self.attn(queries, key_value_states, key_value_states, attn_mask=attn_mask)
        return out
"""


def test_a_slice_of_unknown_bound_keeps_the_axis() -> None:
    """``self.query[:query_num]`` with ``query_num`` found in a loop: the rows keep their place, of a
    size nobody knows (before, the whole shape was lost)."""
    from engine_snippets import standalone_shapes

    source = LEARNED_QUERIES.format(batch_first="True")
    # the batch is the size read off key_value_states (a symbol the engine names), the rows unknown
    shapes = standalone_shapes(source, "Projector.forward", "queries")
    assert len(shapes) == 1 and re.fullmatch(r"\(size\d+, _, config\.dim\)", shapes[0]), shapes


def test_a_three_d_attention_mask_tells_the_query_length() -> None:
    """A 3-D ``attn_mask`` is ``(batch * heads, L, S)``: its L the query's axis 1 (not axis 0) shows
    a batch-first query given to a seq-first layer (Aria's projector)."""
    bug = LEARNED_QUERIES.format(batch_first="False")
    result = lint_source(textwrap.dedent(bug), "example.py", {"SC507"})
    assert [d.line for d in result.diagnostics] == marked(bug)
    assert "(batch * heads, seq, key seq) with seq = axis 1 of the query" in result.diagnostics[0].message
    assert lint_source(textwrap.dedent(LEARNED_QUERIES.format(batch_first="True")), "example.py", {"SC507"}).diagnostics == []


def test_a_three_d_mask_of_a_seq_first_query_is_no_evidence() -> None:
    source = """
    import torch
    from torch import nn


    class CrossAttention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.attn = nn.MultiheadAttention(dim, heads)

        def forward(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor):
            t, b, _ = x.shape
            s = memory.shape[0]
            mask = mask.view(b, 1, t, s).expand(b, self.heads, t, s).reshape(b * self.heads, t, s)
            out, _ = self.attn(x, memory, memory, attn_mask=mask)
            return out
    """
    assert lint_source(textwrap.dedent(source), "example.py", {"SC507"}).diagnostics == []


def test_a_cut_after_the_merge_moves_every_path() -> None:
    """``logits[:, 1:-1]`` after the prefix was cut on one path: both paths' windows move by 1."""
    source = PREPEND_WRAPPER.replace("logits = logits[:, :-1]", "logits = logits[:, 1:-1]")
    bug = source.format(target="x[:, 1:-1]  # <-")
    assert sc603_lines(bug) == marked(bug) != []
    correct = source.format(target="x[:, 2:]")
    assert sc603_lines(correct) == []
    text = textwrap.dedent(correct)
    facts = analyze(cst.parse_module(text), text, "example.py")
    for loss in loss_calls(facts):
        logits = loss.logits.tag(SequenceOriginTag)
        assert [str(window.offset) for window in logits.windows()] == ["prepend_len+1", "1"]


def test_a_regression_cut_on_one_side_only_is_not_a_next_step_model() -> None:
    """A crop of the input as the target of an unseen network's whole output (one side cut): no
    finding; cut on both sides the same way, it is a next-step model's mistake."""
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Reconstructor(nn.Module):
        def __init__(self, net, n):
            super().__init__()
            self.net = net
            self.n = n

        def forward(self, x: torch.Tensor):
            out = self.net(x)
            return F.mse_loss({pred}, x[:, :self.n])
    """
    assert sc603_lines(source.format(pred="out")) == []
    bug = source.format(pred="out[:, :self.n]")
    assert sc603_lines(bug) == [i for i, line in enumerate(textwrap.dedent(bug).splitlines(), 1) if "F.mse_loss" in line]


def test_windows_of_two_sequences_never_compare() -> None:
    zero = Dim.const(0)
    one, other = SequenceSource(None), SequenceSource(None)
    window = SequenceOriginTag(one, zero, None, True)
    assert same_positions(window, SequenceOriginTag(other, zero, None, True), None) is None
    assert same_positions(window, SequenceOriginTag(one, zero, None, True), None) is not None


def test_two_joins_with_paths_on_both_sides_keep_every_path() -> None:
    """``if a: (if b: l[:, 1:] else: l) else: (if c: l[:, 2:] else: l)``: the outer join meets two
    per-path tags (their offsets both None) and keeps the four windows, each with its two sides."""
    from shapecheck.engine.domain.joins import join_tensors
    from shapecheck.engine.domain.values import TensorValue

    source = SequenceSource(None)

    def tensor(*windows: tuple[int, int, int]) -> TensorValue:
        paths = tuple(WindowPath(((site, side),), Dim.const(offset), True) for site, side, offset in windows)
        return TensorValue(None, None, (SequenceOriginTag(source, None, None, True, None, None, False, paths),), None)

    outer = object()
    joined = join_tensors(tensor((1, 0, 1), (1, 1, 0)), tensor((2, 0, 2), (2, 1, 0)), outer).tag(SequenceOriginTag)
    assert joined is not None and joined.source is source
    assert [(str(w.offset), [side for _, side in w.sides]) for w in joined.windows()] == [
        ("1", [0, 0]), ("0", [1, 0]), ("2", [0, 1]), ("0", [1, 1]),
    ]


def test_regression_loss_layers_compare_windows() -> None:
    source = """
    import torch
    from torch import nn


    class NextStep(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.loss = nn.{layer}()

        def forward(self, x: torch.Tensor):
            target = {target}
            return self.loss(self.net(x[:, :-1]), target)
    """
    for layer in ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss"):
        bug = source.format(layer=layer, target="x[:, :-1]  # <-")
        assert sc603_lines(bug) == marked(bug) != [], layer
        assert sc603_lines(source.format(layer=layer, target="x[:, 1:]")) == [], layer


def test_a_slice_of_a_negative_step_is_no_tensor() -> None:
    """A slice keeps its axis when its length cannot be told (a start it cannot read, with or
    without a positive step), but torch refuses a step of zero or less, so ``x[:, ::-1]`` is no
    tensor at all."""
    from engine_snippets import standalone_shapes

    source = """
    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x: "Float[Tensor, 'b t d']", n: int):
            a = x[:, ::-1]
            b = x[:, n::2]
            c = x[:, -n:]
            return a, b, c
    """
    assert standalone_shapes(source, "M.forward", "a") == []
    assert standalone_shapes(source, "M.forward", "b") == ["(b, _, d)"]
    assert standalone_shapes(source, "M.forward", "c") == ["(b, _, d)"]
