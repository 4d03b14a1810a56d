"""SC405 lands where the fix goes: a residual ``x + self.proj(x)`` whose sublayer is a Linear that
takes the residual's width and gives another is reported at that Linear's constructor (its
``out_features``), naming the method that adds it. When the Linear keeps its own input's width, or
both sides are layer outputs, the residual itself is suspect and the addition is reported."""

from __future__ import annotations

import textwrap

from shapecheck.linter import lint_source


def _found(source: str) -> list[tuple[int, str]]:
    result = lint_source(textwrap.dedent(source), "block.py")
    return [(d.span.line, d.message) for d in result.diagnostics if d.code == "SC405"]


def test_a_layer_that_widens_the_stream_is_reported_at_its_constructor():
    found = _found("""
        from dataclasses import dataclass

        import torch
        from torch import nn


        @dataclass
        class Config:
            n_embd: int = 64


        class Block(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.ln = nn.LayerNorm(config.n_embd)
                self.proj = nn.Linear(config.n_embd, 2 * config.n_embd)

            def forward(self, x):
                return x + self.proj(self.ln(x))


        block = Block(Config())
        out = block(torch.randn(2, 8, 64))
        """)
    assert [line for line, _ in found] == [17]
    assert "self.proj outputs 128 features, and `Block.forward` adds them to a residual of 64 features" in found[0][1]


def test_the_layer_is_found_through_dropout_and_a_subtraction():
    found = _found("""
        import torch.nn as nn


        class Denoiser(nn.Module):
            def __init__(self, dim=32):
                super().__init__()
                self.head = nn.Linear(dim, dim // 2)
                self.drop = nn.Dropout(0.1)

            def forward(self, x: "torch.Tensor"):
                B, T, C = x.shape
                return x - self.drop(self.head(x.view(B, T, 32)))
        """)
    assert [line for line, _ in found] == [8]


def test_a_square_layer_beside_a_residual_of_another_width_leaves_the_addition():
    found = _found("""
        import torch
        from torch import nn


        class Stem(nn.Module):
            def __init__(self, d_in=80, d_model=64):
                super().__init__()
                self.in_proj = nn.Linear(d_in, d_model)
                self.out = nn.Linear(d_model, d_model)

            def forward(self, features):
                h = self.in_proj(features)
                return features + self.out(h)


        stem = Stem()
        y = stem(torch.randn(2, 8, 80))
        """)
    assert [line for line, _ in found] == [14]


def test_two_layer_outputs_leave_the_addition():
    found = _found("""
        import torch
        from torch import nn


        class Mix(nn.Module):
            def __init__(self, d=64):
                super().__init__()
                self.a = nn.Linear(d, d)
                self.b = nn.Linear(d, 2 * d)

            def forward(self, x):
                return self.a(x) + self.b(x)


        mix = Mix()
        y = mix(torch.randn(2, 8, 64))
        """)
    assert [line for line, _ in found] == [13]


def test_a_layer_output_beside_a_layer_of_its_input_width_leaves_the_addition():
    found = _found("""
        import torch
        from torch import nn


        class Mix(nn.Module):
            def __init__(self):
                super().__init__()
                self.wide = nn.Linear(64, 128)
                self.narrow = nn.Linear(32, 64)

            def forward(self, x, y):
                return self.wide(x) + self.narrow(y)


        mix = Mix()
        out = mix(torch.randn(2, 8, 64), torch.randn(2, 8, 32))
        """)
    assert [line for line, _ in found] == [13]


def test_a_layer_not_known_to_keep_its_width_is_reported_at_its_constructor():
    found = _found("""
        from jaxtyping import Float
        from torch import Tensor, nn


        class Block(nn.Module):
            def __init__(self, d, e):
                super().__init__()
                self.proj = nn.Linear(e, 2 * d)

            def forward(self, x: Float[Tensor, "b t d"], h: Float[Tensor, "b t e"]):
                return x + self.proj(h)
        """)
    assert [line for line, _ in found] == [9]


def test_a_layer_output_moved_off_its_last_axis_leaves_the_addition():
    found = _found("""
        import torch
        from torch import nn


        class Odd(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 5)

            def forward(self, x):
                return x + self.proj(x).transpose(-1, -2)


        odd = Odd()
        out = odd(torch.randn(2, 6, 8))
        """)
    assert [line for line, _ in found] == [12]


def test_a_mismatch_on_another_axis_leaves_the_addition():
    found = _found("""
        import torch
        from torch import nn


        class Pair(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)

            def forward(self, x, y):
                return x + self.proj(y)


        pair = Pair()
        out = pair(torch.randn(2, 6, 8), torch.randn(2, 5, 8))
        """)
    assert [line for line, _ in found] == [12]


def test_a_layer_of_unknown_input_width_leaves_the_addition():
    found = _found("""
        import torch
        from torch import nn

        from .sizes import input_width


        class Block(nn.Module):
            def __init__(self, d=64):
                super().__init__()
                self.proj = nn.Linear(input_width(), 2 * d)

            def forward(self, x):
                return x + self.proj(x)


        block = Block()
        out = block(torch.randn(2, 8, 64))
        """)
    assert [line for line, _ in found] == [14]


def test_the_last_projection_of_a_sublayer_is_reported_at_its_constructor():
    found = _found("""
        import torch
        import torch.nn.functional as F
        from torch import nn


        class Block(nn.Module):
            def __init__(self, dim=64, inner=256):
                super().__init__()
                self.norm = nn.LayerNorm(dim)
                self.ff_in = nn.Linear(dim, inner * 2)
                self.ff_out = nn.Linear(inner, dim * 2)

            def forward(self, x):
                h, gate = self.ff_in(self.norm(x)).chunk(2, dim=-1)
                return x + self.ff_out(h * F.silu(gate))


        block = Block()
        y = block(torch.randn(2, 8, 64))
        """)
    assert [line for line, _ in found] == [12]
    assert "self.ff_out outputs 128 features" in found[0][1]


def _diagnostics(source: str):
    return [d for d in lint_source(textwrap.dedent(source), "block.py").diagnostics if d.code == "SC405"]


def test_the_layer_on_the_left_of_the_addition_is_found_too():
    (found,) = _diagnostics("""
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, d=64):
                super().__init__()
                self.proj = nn.Linear(d, 2 * d)

            def forward(self, x):
                return self.proj(x) + x


        block = Block()
        y = block(torch.randn(2, 8, 64))
        """)
    assert found.span.line == 9
    assert "self.proj outputs 128 features, and `Block.forward` adds them to a residual of 64 features" in found.message
    assert found.hint == "build self.proj with out_features=64, or add it to a tensor of width 128"


def test_module_level_code_is_named_as_such():
    (found,) = _diagnostics("""
        import torch
        from torch import nn

        proj = nn.Linear(64, 128)
        x = torch.randn(2, 8, 64)
        y = x + proj(x)
        """)
    assert found.span.line == 5
    assert "nn.Linear outputs 128 features, and module-level code adds them to a residual of 64 features" in found.message


def test_widths_equal_by_the_code_s_own_assertion_count():
    (found,) = _diagnostics("""
        from jaxtyping import Float
        from torch import Tensor, nn


        class Block(nn.Module):
            def __init__(self, d, d_in):
                super().__init__()
                assert d_in == d
                self.proj = nn.Linear(d_in, 2 * d)

            def forward(self, x: Float[Tensor, "b t d"], h: Float[Tensor, "b t d_in"]):
                return x + self.proj(h)
        """)
    assert found.span.line == 10


def test_an_activation_of_the_layer_output_leaves_the_addition():
    (found,) = _diagnostics("""
        import torch
        from torch import nn


        class Block(nn.Module):
            def __init__(self, d=64):
                super().__init__()
                self.proj = nn.Linear(d, 2 * d)

            def forward(self, x):
                return x + torch.relu(self.proj(x))


        block = Block()
        y = block(torch.randn(2, 8, 64))
        """)
    assert found.span.line == 12
