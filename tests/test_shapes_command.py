"""``shapecheck shapes`` is readable: no empty tables, a legend, no wrapping when piped, one name per dim."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import REPO, run_forked

NANOGPT = REPO / "examples" / "clean" / "nanogpt_style.py"

JOINED = """import torch


def f(flag):
    if flag:
        x = torch.zeros(2, 3)
    else:
        x = torch.zeros(4, 3)
    y = x * 2
    return y


def no_tensors(a, b):
    return a + b
"""


def test_functions_without_tensors_get_no_table(cli, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(JOINED)
    ran = cli("shapes", "m.py", cwd=tmp_path)
    assert ran.code == 0
    assert "no_tensors" not in ran.out and "m.py:4 f" in ran.out
    nano = cli("shapes", str(NANOGPT))
    assert "GPT.__init__" not in nano.out and "GPT.forward" in nano.out


def test_legend_explains_joined_dims(cli, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(JOINED)
    out = cli("shapes", "m.py", cwd=tmp_path).out
    assert "(2|4, 3)" in out
    assert "a|b is a dim that is a on one path through the function and b on another" in out
    plain = cli("shapes", f"{NANOGPT}::GPT.forward").out
    assert "a|b" not in plain and "? is an unknown shape" in plain


def test_nanogpt_forward_shows_every_tensor_it_computes(cli) -> None:
    out = cli("shapes", f"{NANOGPT}::GPT.forward").out
    for expression, shape in [
        ("self.wte(idx)", "(b, t, config.n_embd)"),
        ("self.wpe(pos)", "(t, config.n_embd)"),
        ("self.ln_f(x)", "(b, t, config.n_embd)"),
        ("logits.reshape(-1, logits.size(-1))", "(b*t, config.vocab_size)"),
    ]:
        [row] = [line for line in out.splitlines() if re.search(rf"│ {re.escape(expression)} +│", line)]
        assert shape in row, row
    data = json.loads(cli("shapes", f"{NANOGPT}::GPT.forward", "--format", "json").out)
    assert {v["expression"] for v in data["functions"][0]["computed"]} >= {"self.wte(idx)", "self.ln_f(x)"}


def test_one_name_per_dim_prefers_the_users_name(cli) -> None:
    data = json.loads(cli("shapes", f"{NANOGPT}::CausalSelfAttention.forward", "--format", "json").out)
    [function] = data["functions"]
    dims = {str(d) for value in function["values"] + function["computed"] for d in value["shape"] or []}
    assert "C" in dims and not any("n_embd" in d for d in dims), dims
    assert "C//config.n_head" in dims


def test_nothing_wraps_when_piped(tmp_path: Path) -> None:
    """Output to a file (a process of its own, forked from this one) is never cut at COLUMNS."""
    rules = run_forked(["rules"], cwd=tmp_path, env={"COLUMNS": "80"})
    longest = max((line for line in rules.stdout.splitlines() if "│ SC" in line), key=len)
    assert len(longest) > 80  # the table is as wide as its content, not cut at 80 columns
    from shapecheck.linter import registry

    for rule in registry():
        assert any(f"│ {rule.name} " in line for line in rules.stdout.splitlines()), rule.name
    long_name = "a_really_long_dimension_name_that_goes_on_and_on"
    source = (
        "import torch\nfrom jaxtyping import Float\nfrom torch import Tensor\n\n\n"
        f'def f(x: Float[Tensor, "{long_name} {long_name}2 {long_name}3"]):\n    y = x * 2\n    return y\n'
    )
    (tmp_path / "m.py").write_text(source)
    shapes = run_forked(["shapes", "m.py"], cwd=tmp_path, env={"COLUMNS": "80"})
    assert f"({long_name}, {long_name}2, {long_name}3)" in shapes.stdout
    explain = run_forked(["explain", "SC101"], cwd=tmp_path)
    assert "missing-attention-scale" in explain.stdout
