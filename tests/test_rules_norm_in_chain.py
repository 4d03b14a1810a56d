"""SC404 on a LayerNorm inside an ``nn.Sequential`` whose input the engine cannot see.

A head such as ``nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, num_tokens))`` is often applied to
the output of layers the engine does not follow (hyper-connection streams, a library block). The
LayerNorm keeps the width it is given, so the first Linear after it (past dropouts and activations)
fixes the width that reaches the norm: ``in_features``. A norm built over a sequence length
(``nn.LayerNorm(max_seq_len)``, the rows of the positional table) there is the bug; a Linear of
another width is SC406's business, not a reason to blame the norm (only a size that is a sequence
length is reported this way).

Torch's answer (scratch script, torch 2.13 CPU): ``nn.Sequential(nn.LayerNorm(16), nn.Linear(8,
5))(torch.randn(2, 3, 8))`` raises (``Given normalized_shape=[16], expected input with shape [*, 16],
but got input of size[2, 3, 8]``); with ``nn.LayerNorm(8)`` it gives ``(2, 3, 5)``.
"""

from __future__ import annotations

from engine_snippets import findings_on_lines

LUCIDRAINS = """
import torch
from torch import nn
from hyper_connections import get_init_and_expand_reduce_stream_functions


class LocalTransformer(nn.Module):
    def __init__(self, *, num_tokens, max_seq_len, dim, depth):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(max_seq_len, dim)
        init_hyper_conn, self.expand_streams, self.reduce_streams = get_init_and_expand_reduce_stream_functions(4)
        self.to_logits = nn.Sequential(
            nn.LayerNorm({norm}),
            nn.Linear(dim, num_tokens, bias = False)
        )

    def forward(self, x):
        n, device = x.shape[1], x.device
        x = self.token_emb(x)
        x = x + self.pos_emb(torch.arange(n, device = device))
        x = self.expand_streams(x)
        x = self.reduce_streams(x)
        return self.to_logits(x)
"""

HF_HEAD = """
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.word_embeddings(input_ids) + self.position_embeddings(positions)


class LMHead(nn.Module):
    def __init__(self, config, encoder):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.encoder = encoder
        self.head = nn.Sequential(
            nn.GELU(),
            nn.LayerNorm({norm}, eps=config.layer_norm_eps),
            nn.Dropout(config.hidden_dropout_prob),
            nn.Linear(config.hidden_size, config.vocab_size),
        )

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden_states = self.encoder(self.embeddings(input_ids))
        return self.head(hidden_states)
"""


def test_a_norm_over_the_sequence_length_before_a_linear_is_reported_at_its_construction():
    found = findings_on_lines(LUCIDRAINS.format(norm="max_seq_len"))
    assert ("SC404", "nn.LayerNorm(max_seq_len),") in found


def test_the_norm_over_the_width_the_linear_takes_is_clean():
    assert findings_on_lines(LUCIDRAINS.format(norm="dim")) == []


def test_dropouts_between_the_norm_and_the_linear_keep_the_width():
    found = findings_on_lines(HF_HEAD.format(norm="config.max_position_embeddings"))
    assert [code for code, line in found if code == "SC404"] == ["SC404"]
    assert ("SC404", "nn.LayerNorm(config.max_position_embeddings, eps=config.layer_norm_eps),") in found
    assert findings_on_lines(HF_HEAD.format(norm="config.hidden_size")) == []


def test_a_norm_of_a_size_that_is_no_sequence_length_is_left_to_the_chain_check():
    # ``LayerNorm(ff_dim)`` before ``Linear(dim, ...)``: one of the two is wrong, and nothing says
    # the norm is the one (the width is no sequence length): not SC404.
    source = LUCIDRAINS.replace("def __init__(self, *, num_tokens, max_seq_len, dim, depth):",
                                "def __init__(self, *, num_tokens, max_seq_len, dim, depth, ff_dim):")
    found = findings_on_lines(source.format(norm="ff_dim"))
    assert [code for code, _ in found if code == "SC404"] == []


def test_a_linear_before_the_norm_fixes_nothing_about_its_input():
    # The norm after a Linear reads the Linear's output, known already: the width of a Linear
    # after it is not consulted (Linear(dim, max_seq_len) -> LayerNorm(max_seq_len) is a fine chain).
    source = LUCIDRAINS.replace(
        "nn.LayerNorm({norm}),\n            nn.Linear(dim, num_tokens, bias = False)",
        "nn.Linear(dim, {norm}),\n            nn.LayerNorm({norm}),\n            nn.Linear({norm}, num_tokens, bias = False)",
    )
    assert [code for code, _ in findings_on_lines(source.format(norm="max_seq_len")) if code == "SC404"] == []


def test_a_module_of_the_file_between_the_norm_and_the_linear_may_change_the_width():
    # MLP-Mixer style: the norm runs over the tokens, a module of the file turns the axes back.
    source = LUCIDRAINS.replace(
        "class LocalTransformer(nn.Module):",
        "class Transposed(nn.Module):\n    def forward(self, x):\n        return x.transpose(1, 2)\n\n\nclass LocalTransformer(nn.Module):",
    ).replace("nn.LayerNorm({norm}),", "nn.LayerNorm({norm}),\n            Transposed(),")
    assert [code for code, _ in findings_on_lines(source.format(norm="max_seq_len")) if code == "SC404"] == []
