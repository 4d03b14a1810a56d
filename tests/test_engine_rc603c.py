"""Rollout windows, row samples and one network's own outputs (SC603 on x-transformers' wrappers).

Four things the engine did not follow, each a capability of its own:

- ``t.unfold(dim, size, step)`` (rollout windows): window ``w`` holds positions ``offset + w * step``
  onwards, along a new last axis of ``size``. The result keeps the offset of its first window, the
  one a step-0 prediction meets (``windows.unfolded``); its shape is torch's.
- Padding only after the values (``F.pad(x, (0, 0, 0, n))``, torch-einops-utils'
  ``pad_right_at_dim(x, n, dim=1)``, modelled as ``pad_at_dim``) leaves every token where it was:
  the window keeps its offset. Padding before still moves it.
- Windows of one output of a call the engine cannot see (``embed = self.net(ids)``) were all
  "opaque", never compared. They carry the unseen calls they went through (``opaque`` is that
  chain); a regression's targets cut from the very output the prediction was made from were moved
  alike and are compared (``SequenceOriginTag.same_moves``). Cross-entropy targets stay skipped.
- A value computed from two windows of one sequence at different offsets (``cat((latent[:, :-1],
  tokens[:, 1:]))``) is at neither offset (it took the first operand's before).
- A row sample ``x[idx]`` (1-D index) of a token tensor holds the same sequences; and the output of
  a module of the file called on tokens whose window got lost inside (a cached token-by-token loop)
  is computed from those tokens (``windows.forward_result``), as an unseen layer's output is.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import SequenceOriginTag, SequenceSource, joined_moves, moved_by
from shapecheck.engine.domain.values import TensorValue
from shapecheck.engine.ops.base import lineage, mixed_windows
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.linter import lint_source
from shapecheck.shapes_report import shapes_report


def sc603_lines(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", {"SC603"})
    return sorted(d.line for d in result.diagnostics if d.code == "SC603")


def marked(source: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(source).splitlines(), start=1) if line.rstrip().endswith("# <-")]


def shapes(tmp_path, source: str, qualname: str) -> dict[str, str | None]:
    path = tmp_path / "example.py"
    path.write_text(textwrap.dedent(source))
    report = shapes_report(str(path), qualname)
    return {value["name"]: value["shape"] for function in report["functions"] for value in function["values"]}


# ------------------------------------------------------------------ rollout windows (lucidrains' LeJEPA)

LEJEPA = """
import torch
import torch.nn.functional as F
from torch import nn, stack
from einops import rearrange
from torch_einops_utils import pad_right_at_dim


class LatentRollout(nn.Module):
    def __init__(self, net, dim, num_rollouts=4):
        super().__init__()
        self.net = net
        self.num_rollouts = num_rollouts
        self.predictor = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x, ignore_index=-1, pad_value=0):
        seq = x.shape[1]
        inp = torch.where(x == ignore_index, pad_value, x)
        embed, cache = self.net(inp, return_embeddings=True, return_intermediates=True)
        pred = embed[:, :-1]
        padded = pad_right_at_dim(embed, self.num_rollouts - 1, dim=1, value=0.)
        step_targets = rearrange({window}.unfold(1, seq - 1, 1), 'b r d n -> r b n d')
        preds = []
        for step in range(self.num_rollouts):
            pred = self.predictor(pred)
            preds.append(pred)
        return F.mse_loss(stack(preds), step_targets)
"""


def test_rollout_targets_unfolded_at_the_predictions_own_positions() -> None:
    bug = LEJEPA.replace("step_targets = ", "step_targets = ").format(window="padded[:, :-1]")
    bug = bug.replace("'b r d n -> r b n d')", "'b r d n -> r b n d')  # <-")
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(LEJEPA.format(window="padded[:, 1:]")) == []


TORCH_PAD = """
import torch
import torch.nn.functional as F
from torch import nn


class NextLatent(nn.Module):
    def __init__(self, net, dim, rollouts=3):
        super().__init__()
        self.net = net
        self.rollouts = rollouts
        self.dynamics = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor):
        n = ids.shape[1]
        hidden = self.net(ids)
        padded = F.pad(hidden, {pad})
        targets = padded[:, {cut}].unfold(1, n - 1, 1)
        targets = targets.permute(1, 0, 3, 2)
        latent = hidden[:, :-1]
        preds = []
        for _ in range(self.rollouts):
            latent = self.dynamics(latent)
            preds.append(latent)
        return F.smooth_l1_loss(torch.stack(preds), targets)
"""


def test_padding_after_the_values_keeps_the_window() -> None:
    bug = TORCH_PAD.format(pad="(0, 0, 0, self.rollouts - 1)", cut=":-1").replace(
        "targets = padded[:, :-1].unfold(1, n - 1, 1)", "targets = padded[:, :-1].unfold(1, n - 1, 1)  # <-"
    )
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(TORCH_PAD.format(pad="(0, 0, 0, self.rollouts - 1)", cut="1:")) == []


def test_padding_before_the_values_moves_the_window() -> None:
    # Padded at the start, ``padded[:, :-1]`` is no longer ``hidden``'s positions 0..n-2.
    assert sc603_lines(TORCH_PAD.format(pad="(0, 0, self.rollouts - 1, 0)", cut=":-1")) == []
    assert sc603_lines(TORCH_PAD.format(pad="(0, 0, 1, self.rollouts - 2)", cut=":-1")) == []


def test_unfold_and_padding_shapes_are_torchs(tmp_path) -> None:
    # torch 2: (2, 10, 4).unfold(1, 3, 1) -> (2, 8, 4, 3); step 2 -> (2, 4, 4, 3);
    # F.pad(x, (0, 0, 0, 3)) -> (2, 13, 4); pad_right_at_dim(x, 3, dim=1) -> (2, 13, 4);
    # pad_at_dim(x, (1, 2), dim=-1) -> (2, 10, 7); pad_left_at_dim(x, 2, dim=1) -> (2, 12, 4).
    source = """
    import torch
    import torch.nn.functional as F
    from torch_einops_utils import pad_at_dim, pad_left_at_dim, pad_right_at_dim

    def f():
        x = torch.randn(2, 10, 4)
        a = x.unfold(1, 3, 1)
        b = x.unfold(1, 3, 2)
        c = F.pad(x, (0, 0, 0, 3))
        d = pad_right_at_dim(x, 3, dim=1)
        e = pad_at_dim(x, (1, 2), dim=-1)
        g = pad_left_at_dim(x, 2, dim=1)
        h = x.unfold(-1, 2, 2)
        i = pad_right_at_dim(x, 3)
        j = pad_right_at_dim(x, 3, 1)
        return a, b, c, d, e, g, h, i, j
    """
    found = shapes(tmp_path, source, "f")
    assert found["a"] == [2, 8, 4, 3]
    assert found["b"] == [2, 4, 4, 3]
    assert found["c"] == [2, 13, 4]
    assert found["d"] == [2, 13, 4]
    assert found["e"] == [2, 10, 7]
    assert found["g"] == [2, 12, 4]
    assert found["h"] == [2, 10, 2, 2]  # torch: (2, 10, 4).unfold(-1, 2, 2) -> (2, 10, 2, 2)
    assert found["i"] == [2, 10, 7]  # dim=-1 by default
    assert found["j"] is None  # pad_right_at_dim takes no positional dim: not modelled


def test_unfold_keeps_the_first_windows_offset_and_the_new_length(tmp_path) -> None:
    source = textwrap.dedent("""
    import torch
    import torch.nn.functional as F

    def f(data, amounts):
        ids = torch.randint(0, 100, (4, 33))
        x = ids[:, 1:]
        w = x.unfold(1, 8, 4)
        across = x.unfold(0, 2, 1)
        grown = F.pad(x, (0, 3))
        rows = F.pad(x, (0, 0, 0, 2))
        before = F.pad(x, (2, 0))
        unknown = F.pad(x, amounts)
        square = torch.randint(0, 100, (32, 33))[:, 1:]
        by_axis = square.unfold(0, 4, 1)
        return w
    """)
    facts = analyze(cst.parse_module(source), source, "example.py")
    assert facts.internal_errors == []
    found = {a.name: a.value for run in facts.runs for a in run.assignments if isinstance(a.value, TensorValue)}
    tag = found["w"].tag(SequenceOriginTag)
    assert found["w"].shape.to_json() == [4, 7, 8]  # torch: (4, 32).unfold(1, 8, 4) -> (4, 7, 8)
    assert tag is not None and tag.offset == Dim.const(1) and tag.length == Dim.const(8) and not tag.opaque
    # Windows of the batch axis: the time axis (32 positions) keeps its length.
    assert found["across"].shape.to_json() == [3, 32, 2]  # torch: (4, 32).unfold(0, 2, 1) -> (3, 32, 2)
    assert found["across"].tag(SequenceOriginTag).length == Dim.const(32)
    # Padded after the time axis: longer, same offset; after the batch axis: the same window.
    grown = found["grown"].tag(SequenceOriginTag)
    assert (grown.offset, grown.length, grown.opaque) == (Dim.const(1), Dim.const(35), False)
    rows = found["rows"].tag(SequenceOriginTag)
    assert (rows.offset, rows.length, rows.opaque) == (Dim.const(1), Dim.const(32), False)
    assert found["before"].tag(SequenceOriginTag).opaque is True and found["unknown"].tag(SequenceOriginTag).opaque is True
    # (32, 32): the axis indexing kept tells time from batch, not the size.
    assert found["by_axis"].tag(SequenceOriginTag).length == Dim.const(32)


def test_a_row_sample_is_of_the_same_sequences() -> None:
    source = textwrap.dedent("""
    import torch

    def f(x: torch.Tensor):
        rows = torch.randint(0, 8, (4,))
        pairs = torch.randint(0, 8, (4, 2))
        stream = torch.randint(0, 100, (1000,))
        a = x[:, 1:]
        b = x[rows][:, 1:]
        c = x[pairs][:, 1:]
        d = stream[1:]
        e = stream[rows][1:]
        f = x[rows, 1:][:, 1:]
        g = x[:, rows][:, 1:]
        return a
    """)
    facts = analyze(cst.parse_module(source), source, "example.py")
    found = {a.name: a.value for run in facts.runs for a in run.assignments if isinstance(a.value, TensorValue)}
    source_of = {name: found[name].tag(SequenceOriginTag).source for name in "abcdefg"}
    assert source_of["b"] is source_of["a"]
    assert source_of["c"] is not source_of["a"]  # a 2-D index: not a sample of rows
    assert source_of["e"] is not source_of["d"]  # a 1-D stream gathered: positions, not rows
    assert source_of["f"] is not source_of["a"]  # rows sampled and their time cut: not the same tokens
    assert source_of["g"] is not source_of["a"]  # positions gathered along time


# ------------------------------------------------------------------ one network's own outputs

CONTINUOUS_HEAD = """
import torch
import torch.nn.functional as F
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, net, ignore_index=-100):
        super().__init__()
        self.net = net
        self.ignore_index = ignore_index

    def forward(self, x):
        inp, target = x, x[:, 1:]
        inp = torch.where(inp == self.ignore_index, 0, inp)
        out, cache = self.net(inp, return_intermediates=True, return_next_embed_pred=True)
        logits, (next_embed_pred, init_embeds) = out
        loss = F.cross_entropy(logits[:, :-1].transpose(1, 2), target)
        embed_pred = next_embed_pred[:, :-1]
        cont_targets = {targets}.detach()
        return loss + F.l1_loss(embed_pred, cont_targets)
"""


def test_a_regression_between_two_outputs_of_one_unseen_call() -> None:
    bug = CONTINUOUS_HEAD.format(targets="init_embeds[:, :-1]").replace(".detach()\n", ".detach()  # <-\n")
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(CONTINUOUS_HEAD.format(targets="init_embeds[:, 1:]")) == []


def test_targets_moved_by_a_call_the_prediction_did_not_go_through() -> None:
    # ``helper`` (not seen) may shift what it is given: its output is not compared.
    source = CONTINUOUS_HEAD.replace("from torch import nn", "from torch import nn\nfrom somewhere import helper").format(
        targets="helper(init_embeds)[:, :-1]"
    )
    assert sc603_lines(source) == []


def test_cross_entropy_targets_out_of_an_unseen_call_stay_unjudged() -> None:
    # ``labels`` computed by the network (which may shift them inside) are not compared.
    source = """
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Wrapper(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x):
            x = torch.where(x < 0, 0, x)
            logits, labels = self.net(x)
            return F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, :-1])
    """
    assert sc603_lines(source) == []
    # The same windows in a regression are compared (the network's two outputs moved alike).
    assert sc603_lines(source.replace("F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, :-1])", "F.mse_loss(logits[:, :-1], labels[:, :-1])")) == [14]


def test_the_moves_a_window_went_through() -> None:
    a, b = object(), object()
    source = SequenceSource(None)

    def window(moves: tuple, opaque: bool = True) -> SequenceOriginTag:
        return SequenceOriginTag(source, Dim.const(0), None, True, opaque=opaque, moves=moves)

    target = window((a,))
    assert target.same_moves(window((a,))) and target.same_moves(window((a, b)))
    assert not target.same_moves(window((b,))) and not target.same_moves(window((b, a)))
    assert not target.same_moves(window((), opaque=False)) and not target.same_moves(window(()))
    assert not target.same_moves(window((a,), opaque=False))  # moves of a window not moved are none
    assert not window((a, b)).same_moves(target)
    assert not window(()).same_moves(window(()))  # moved in ways that do not compare
    clean = window((), opaque=False)
    assert clean.same_moves(target) and clean.same_moves(clean)
    # Through an unseen call: the chain grows; a window already moved in unknown ways stays so.
    assert moved_by(clean, a).moves == (a,) and moved_by(clean, a).opaque is True
    assert moved_by(target, b).moves == (a, b) and moved_by(window(()), a).moves == ()
    assert moved_by(window((a,) * 16), b).moves == () and moved_by(window((a,) * 15), b).moves == (a,) * 15 + (b,)
    # Two paths or operands met: the same calls on both, else unknown ways (no chain) if moved on either.
    assert joined_moves(target, window((a,))) is target
    assert joined_moves(target, window((b,))).moves == () and joined_moves(target, window((b,))).opaque is True
    assert joined_moves(clean, clean) is clean
    assert joined_moves(clean, target).moves == () and joined_moves(clean, target).opaque is True
    assert joined_moves(target, clean).moves == () and joined_moves(target, window((a, b))).moves == ()


def test_targets_moved_on_one_path_only_do_not_compare() -> None:
    # ``target_embeds = l2norm(embed)`` on one path only (a helper the engine cannot see): the
    # joined targets were moved in ways that do not compare; the prediction was not.
    source = LEJEPA.replace("from torch_einops_utils import pad_right_at_dim", "from torch_einops_utils import pad_right_at_dim\nfrom elsewhere import l2norm").replace(
        "        pred = embed[:, :-1]\n", "        pred = embed[:, :-1]\n        if x.shape[0] > 1:\n            embed = l2norm(embed)\n"
    )
    assert "l2norm(embed)" in source
    assert sc603_lines(source.format(window="padded[:, :-1]")) == []


def test_windows_moved_by_the_same_calls_on_both_sides_compare() -> None:
    # ``embed = l2norm(self.net(x))`` before both cuts: prediction and targets went through the same
    # two unseen calls, so their positions compare.
    source = LEJEPA.replace("from torch_einops_utils import pad_right_at_dim", "from torch_einops_utils import pad_right_at_dim\nfrom elsewhere import l2norm").replace(
        "        pred = embed[:, :-1]\n", "        embed = l2norm(embed)\n        pred = embed[:, :-1]\n"
    )
    bug = source.format(window="padded[:, :-1]").replace("'b r d n -> r b n d')", "'b r d n -> r b n d')  # <-")
    assert sc603_lines(bug) == marked(bug) != []
    assert sc603_lines(source.format(window="padded[:, 1:]")) == []


# ------------------------------------------------------------------ two windows met (next-latent dynamics)


def test_a_value_of_two_windows_of_one_sequence_is_at_neither_offset() -> None:
    source = SequenceSource(None)
    zero = SequenceOriginTag(source, Dim.const(0), None, True)
    one = SequenceOriginTag(source, Dim.const(1), None, True)
    assert mixed_windows(zero, one).offset is None
    assert mixed_windows(zero, SequenceOriginTag(source, Dim.const(0), None, False)).offset == Dim.const(0)
    other = SequenceOriginTag(SequenceSource(None), Dim.const(1), None, True)
    assert mixed_windows(zero, other) is zero
    assert mixed_windows(zero, SequenceOriginTag(source, None, None, True)).offset is None
    call = object()
    opaque = SequenceOriginTag(source, Dim.const(0), None, True, opaque=True, moves=(call,))
    assert mixed_windows(zero, opaque).offset is None and mixed_windows(zero, opaque).opaque is True
    assert mixed_windows(zero, opaque).moves == ()
    alike = SequenceOriginTag(source, Dim.const(0), None, False, opaque=True, moves=(call,))
    assert mixed_windows(opaque, alike) is opaque
    left = TensorValue(None, None, (zero,), None)
    right = TensorValue(None, None, (one,), None)
    tags = [tag for tag in lineage(left, right) if type(tag) is SequenceOriginTag]
    assert len(tags) == 1 and tags[0].offset is None


NEXT_LATENT = """
import torch
import torch.nn.functional as F
from torch import nn
from einops import rearrange
from torch_einops_utils import pad_right_at_dim


class NextLatent(nn.Module):
    def __init__(self, net, dim, num_rollouts=3):
        super().__init__()
        self.net = net
        self.num_rollouts = num_rollouts
        self.dynamics = nn.Linear(dim * 2, dim)

    def forward(self, x):
        seq = x.shape[1]
        hidden = self.net(x)
        token_embeds = self.net.token_emb(x)
        pad = self.num_rollouts - 1
        targets = rearrange(pad_right_at_dim(hidden, pad, dim=1)[:, 1:].unfold(1, seq - 1, 1), 'b r d n -> r b n d')
        actions = rearrange(pad_right_at_dim(token_embeds, pad, dim=1)[:, 1:].unfold(1, seq - 1, 1), 'b r d n -> r b n d')
        latent = hidden[:, :-1]
        out = self.dynamics(torch.cat((latent, actions[0]), dim=-1))
        return F.mse_loss(out, targets[0])
"""


def test_a_prediction_from_the_current_latent_and_the_next_token_is_clean() -> None:
    # Correct action-conditioned dynamics: the target's positions are the next token's, not the
    # prediction's own (it mixes offsets 0 and 1 of the sequence).
    assert sc603_lines(NEXT_LATENT) == []


# ------------------------------------------------------------------ row samples through the model's own forward

RECIRCULATION = """
import torch
import torch.nn.functional as F
from torch import Tensor, nn
from einops import rearrange


class Recirculation(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, cache=None):
        logits = []
        for t in range(x.shape[1]):
            token = x[:, t:(t + 1)]
            _, cache = self.net(token, return_intermediates=True, cache=cache)
            logits.append(self.net.to_logits(cache.last_hidden[:, -1:]))
        return torch.cat(logits, dim=-2)

    def learn_parameters(self, x: Tensor, steps=100, batch_size=32):
        batch = x.shape[0]
        labels = {labels}
        for _ in range(steps):
            rand_indices = torch.randint(0, batch, (batch_size,))
            batch_x = x[rand_indices]
            logits = {call}(batch_x)[:, :-1]
            loss = F.cross_entropy(rearrange(logits, 'b n c -> b c n'), labels[rand_indices])
            loss.backward()
"""


def test_rows_sampled_through_the_models_own_forward() -> None:
    for call in ("self.forward", "self"):
        bug = RECIRCULATION.format(labels="x[:, :-1]  # <-", call=call)
        assert sc603_lines(bug) == marked(bug) != [], call
        assert sc603_lines(RECIRCULATION.format(labels="x[:, 1:]", call=call)) == [], call


def test_rows_sampled_by_a_boolean_mask_and_a_gathered_stream() -> None:
    source = """
    import torch
    import torch.nn.functional as F

    def step(model, x: torch.Tensor):
        labels = x[:, :-1]  # <-
        keep = torch.rand(x.shape[0]) > 0.1
        rows = x[keep]
        logits = model(rows)[:, :-1]
        return F.cross_entropy(logits.transpose(1, 2), labels[keep])
    """
    assert sc603_lines(source) == marked(source) != []
    # A 1-D stream gathered by positions is no sample of rows: its windows are of their own.
    stream = """
    import torch
    import torch.nn.functional as F

    def step(model, data, ix):
        data = torch.randint(0, 100, (1000,))
        x = data[ix]
        y = data[ix + 1]
        return F.cross_entropy(model(x[:-1]), y[:-1])
    """
    assert sc603_lines(stream) == []


def test_a_plain_class_with_a_forward_is_no_model() -> None:
    source = RECIRCULATION.format(labels="x[:, :-1]", call="self.forward").replace(
        "class Recirculation(nn.Module):", "class Recirculation:"
    ).replace("        super().__init__()\n", "")
    assert sc603_lines(source) == []


def test_two_paths_of_windows_moved_by_one_call_still_compare() -> None:
    bug = LEJEPA.replace(
        "step_targets = rearrange({window}.unfold(1, seq - 1, 1), 'b r d n -> r b n d')",
        "window = {window} if seq > 8 else {window}.detach()\n"
        "        step_targets = rearrange(window.unfold(1, seq - 1, 1), 'b r d n -> r b n d')",
    )
    assert "window.unfold" in bug
    assert sc603_lines(bug.format(window="padded[:, :-1]")) == [22]
    assert sc603_lines(bug.format(window="padded[:, 1:]")) == []


def test_positions_out_of_a_module_of_the_file_stay_positions() -> None:
    # lucidrains' ``AbsolutePositionalEmbedding.forward(x)`` returns ``emb(arange(n))``; a table
    # looked up by position ids is no token sequence, whatever the engine lost inside.
    source = textwrap.dedent("""
    import torch
    from torch import nn

    class AbsolutePositionalEmbedding(nn.Module):
        def __init__(self, dim, max_seq_len):
            super().__init__()
            self.emb = nn.Embedding(max_seq_len, dim)

        def forward(self, x):
            return self.emb(torch.arange(x.shape[1]))

    class Table(nn.Module):
        def forward(self, pos):
            return torch.cat([pos.float().sin(), pos.float().cos()], dim=-1)

    class Net(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.pos_emb = AbsolutePositionalEmbedding(dim, 1024)
            self.table = Table()

        def forward(self, x: torch.Tensor):
            pos = self.pos_emb(x)
            sines = self.table(torch.arange(x.shape[1]))
            return pos, sines
    """)
    facts = analyze(cst.parse_module(source), source, "example.py")
    found = {a.name: a.value for run in facts.runs if run.qualname == "Net.forward" for a in run.assignments}
    assert isinstance(found["pos"], TensorValue) and isinstance(found["sines"], TensorValue)
    assert not found["pos"].has(SequenceOriginTag) and not found["sines"].has(SequenceOriginTag)
