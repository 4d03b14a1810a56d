"""Next-token targets in the wrappers of real language models (SC603 on x-transformers):

- ``torch_einops_utils.cross_entropy`` (imported in place of ``F.cross_entropy``) is torch's
  cross-entropy, in torch's layout (``ops/library_losses.py``);
- ``loss_fn = cross_entropy if ... else F.nll_loss``: a choice of two functions is called as both
  (``EitherFunction``), not an unknown;
- the ids given to a layer the engine cannot see (``self.net(inp)``, a transformer passed in) are
  what its output is computed from, position by position; ``torch.where(ids == ignore, pad, ids)``
  and ``ids.masked_fill(...)`` keep the tokens of ``ids``; ``logits[:, :-1]`` of such an output is
  a window of its time axis (batch first);
- one window of one sequence on two paths (the tokens, or what an optional layer made of them) is
  still that window after the merge.
"""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.tags import SequenceOriginTag
from shapecheck.engine.domain.values import TensorValue
from shapecheck.engine.facts.training import loss_calls
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.linter import lint_source


def sc603_lines(source: str) -> list[int]:
    result = lint_source(textwrap.dedent(source), "example.py", {"SC603"})
    return sorted(d.line for d in result.diagnostics if d.code == "SC603")


def marked(source: str) -> list[int]:
    return [i for i, line in enumerate(textwrap.dedent(source).splitlines(), start=1) if line.rstrip().endswith("# <-")]


# ------------------------------------------------------------------ torch_einops_utils.cross_entropy

EINOPS_UTILS_WRAPPER = """
import torch
from torch import nn
from einops import rearrange
from torch_einops_utils import cross_entropy


class Wrapper(nn.Module):
    def __init__(self, num_tokens, dim, pad_id=0):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.to_logits = nn.Linear(dim, num_tokens)
        self.pad_id = pad_id

    def forward(self, seq):
        seq, labels = seq[:, :-1], {labels}
        logits = self.to_logits(self.token_emb(seq))
        return cross_entropy(rearrange(logits, 'b n l -> b l n'), labels, ignore_index=self.pad_id)
"""


def test_einops_utils_cross_entropy_is_a_cross_entropy() -> None:
    bug = EINOPS_UTILS_WRAPPER.format(labels="seq[:, :-1]  # <-")
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(EINOPS_UTILS_WRAPPER.format(labels="seq[:, 1:]")) == []


def test_einops_utils_positional_arguments_and_class_dim() -> None:
    """Its third positional parameter is ``ignore_index`` (torch's is ``weight``); a ``class_dim``
    other than 1 is a layout not modelled: no cross-entropy event, so no finding either way."""
    source = textwrap.dedent(
        """
        import torch
        from torch_einops_utils import cross_entropy

        def losses(logits, target):
            a = cross_entropy(logits, target, -1, 'none')
            b = cross_entropy(logits.transpose(1, 2), target, class_dim=-1)
            c = cross_entropy(logits, target, class_dim=1)
            return a, b, c
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module, source, "example.py")
    events = {module.code_for_node(e.node): e for e in facts.events_of("cross_entropy")}
    assert set(events) == {
        "cross_entropy(logits, target, -1, 'none')",
        "cross_entropy(logits, target, class_dim=1)",
    }  # not the class_dim=-1 call
    first = events["cross_entropy(logits, target, -1, 'none')"]
    assert set(first.kwargs) == {"ignore_index", "reduction"} and len(first.args) == 2


def test_functional_style_helper_with_the_library_loss() -> None:
    """A plain function (no module class) taking the model: the same fact."""
    bug = """
    import torch
    from torch_einops_utils import cross_entropy


    def lm_loss(net, ids: torch.Tensor):
        logits = net(ids)
        return cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, :-1])  # <-
    """
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(bug.replace("ids[:, :-1])  # <-", "ids[:, 1:])")) == []


# ------------------------------------------------------------------ a choice of two loss functions

CHOSEN_LOSS = """
import torch
import torch.nn.functional as F
from torch import nn
from torch_einops_utils import cross_entropy


class AutoregressiveWrapper(nn.Module):
    def __init__(self, net, log_probs=False):
        super().__init__()
        self.net = net
        self.log_probs = log_probs

    def forward(self, x):
        inp, target = x[:, :-1], {target}
        logits = self.net(inp)
        loss_fn = cross_entropy if not self.log_probs else F.nll_loss
        return loss_fn(logits.transpose(1, 2), target)
"""


def test_a_loss_chosen_by_a_branch_is_called_as_both() -> None:
    bug = CHOSEN_LOSS.format(target="x[:, :-1]  # <-")
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(CHOSEN_LOSS.format(target="x[:, 1:]")) == []


def test_a_function_chosen_by_a_branch_keeps_the_shape() -> None:
    from shapecheck.engine.domain.values import EitherFunction

    source = textwrap.dedent(
        """
        import torch
        import torch.nn.functional as F

        def block(x: "Float[Tensor, 'b t d']", gated: bool):
            act = F.gelu if gated else F.relu
            y = act(x)
            return y
        """
    )
    module = cst.parse_module(source)
    facts = analyze(module, source, "example.py")
    run = next(r for r in facts.runs if r.qualname == "block")
    values = {a.name: a.value for a in run.assignments}
    assert isinstance(values["act"], EitherFunction)
    assert isinstance(values["y"], TensorValue) and str(values["y"].shape) == "(b, t, d)"


# ------------------------------------------------------------------ ids given to a layer the engine cannot see

UNSEEN_NET = """
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
        inp, target = x, {target}
        inp = {replace}
        logits = self.net(inp)
        logits = logits[:, :-1]
        return F.cross_entropy(logits.transpose(1, 2), target, ignore_index=self.ignore_index)
"""


def test_ids_given_to_an_unseen_layer_with_some_replaced_by_where() -> None:
    replace = "torch.where(inp == self.ignore_index, self.pad_value, inp)"
    bug = UNSEEN_NET.format(target="x[:, :-1]  # <-", replace=replace)
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(UNSEEN_NET.format(target="x[:, 1:]", replace=replace)) == []


def test_ids_given_to_an_unseen_layer_with_some_replaced_by_masked_fill() -> None:
    replace = "inp.masked_fill(inp == self.ignore_index, self.pad_value)"
    bug = UNSEEN_NET.format(target="x[:, :-1]  # <-", replace=replace)
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(UNSEEN_NET.format(target="x[:, 1:]", replace=replace)) == []


def test_hidden_states_of_an_unseen_layer_then_a_head() -> None:
    """gpt_lejepa / next_latent style: embeddings from the network, the last dropped, then logits."""
    bug = """
    import torch
    from torch import nn
    from einops import rearrange
    import torch.nn.functional as F


    class LatentWrapper(nn.Module):
        def __init__(self, net, dim, num_tokens):
            super().__init__()
            self.net = net
            self.to_logits = nn.Linear(dim, num_tokens)

        def forward(self, x):
            inp, target = x, x[:, :-1]  # <-
            inp = torch.where(inp == -1, 0, inp)
            embed = self.net(inp)
            logits = self.to_logits(embed[:, :-1])
            return F.cross_entropy(rearrange(logits, 'b n c -> b c n'), target)
    """
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(bug.replace("x[:, :-1]  # <-", "x[:, 1:]")) == []


def test_masked_language_model_through_an_unseen_layer_stays_clean() -> None:
    """Targets at the same positions as the input are right for a masked LM: nothing is sliced and
    no causal attention is seen, so nothing says it is a next-token model."""
    clean = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class MaskedLM(nn.Module):
        def __init__(self, net, mask_id=1):
            super().__init__()
            self.net = net
            self.mask_id = mask_id

        def forward(self, x, mask):
            inp = x.masked_fill(mask, self.mask_id)
            logits = self.net(inp)
            return F.cross_entropy(logits.transpose(1, 2), x)
    """
    assert sc603_lines(clean) == []


def test_two_different_id_tensors_are_two_sequences() -> None:
    """Hugging Face style with separate labels: the engine cannot tell that labels are the ids."""
    clean = """
    import torch
    import torch.nn.functional as F
    from torch import nn


    class CausalLM(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, input_ids, labels):
            logits = self.net(input_ids)
            return F.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, :-1])
    """
    assert sc603_lines(clean) == []


# ------------------------------------------------------------------ one window on two paths

OPTIONAL_HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
from x_transformers import Decoder


def exists(v):
    return v is not None


class FreeTransformer(nn.Module):
    def __init__(self, num_tokens, dim, head_depth):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.decoder_head = Decoder(dim=dim, depth=head_depth) if head_depth > 0 else None
        self.decoder_tail = Decoder(dim=dim, depth=2)
        self.token_unembed = nn.Linear(dim, num_tokens, bias=False)

    def forward(self, seq, condition):
        seq, labels = seq[:, :-1], {labels}
        tokens = self.token_emb(seq)
        if exists(self.decoder_head):
            tokens = self.decoder_head(tokens)
        tokens = self.decoder_tail(tokens, context=condition)
        logits = self.token_unembed(tokens)
        return F.cross_entropy(logits.transpose(1, 2), labels)
"""


def test_one_window_through_an_optional_unseen_layer() -> None:
    bug = OPTIONAL_HEAD.format(labels="seq[:, :-1]  # <-")
    assert sc603_lines(bug) == marked(bug)
    assert sc603_lines(OPTIONAL_HEAD.format(labels="seq[:, 1:]")) == []


def test_windows_at_different_offsets_on_two_paths_are_a_sequence_of_their_own() -> None:
    """``data = train_data if ... else val_data`` (``data[:n]`` / ``data[n:]``): windows cut from it
    later compare with each other, not with ``data``'s offsets."""
    bug = """
    import torch
    import torch.nn.functional as F

    data = torch.randint(65, (10000,))
    n = 9000
    train_data, val_data = data[:n], data[n:]


    def get_batch(split, model):
        data = train_data if split == "train" else val_data
        ix = torch.randint(len(data) - 8, (4,))
        x = torch.stack([data[i:i + 8] for i in ix])
        y = torch.stack([data[i:i + 8] for i in ix])  # <-
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())
    """
    assert sc603_lines(bug) == marked(bug)


def test_the_loss_events_see_the_windows_of_the_unseen_layer() -> None:
    source = textwrap.dedent(UNSEEN_NET.format(target="x[:, 1:]", replace="torch.where(inp == -100, 0, inp)"))
    module = cst.parse_module(source)
    facts = analyze(module, source, "example.py")
    (loss,) = list(loss_calls(facts))
    logits, target = loss.logits.tag(SequenceOriginTag), loss.target.tag(SequenceOriginTag)
    assert logits is not None and target is not None and logits.source is target.source
    assert (logits.offset, target.offset) == (Dim.const(0), Dim.const(1))
    assert logits.opaque and not target.opaque  # the unseen layer may have moved its tokens
