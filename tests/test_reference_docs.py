"""The shape walk-throughs in reference_model's docstrings and examples/reference/ stay true."""

import doctest
import importlib
import runpy
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

MODULES = ["attention", "positional", "feedforward", "encoder", "decoder", "gpt", "bert"]
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", MODULES)
def test_module_docstring_walkthrough(name):
    module = importlib.import_module(f"reference_model.{name}")
    torch.manual_seed(0)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"reference_model.{name} has no shape walk-through"
    assert result.failed == 0


def test_examples_walkthrough_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "reference" / "walkthrough.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "(1, 8, 5, 64)" in out and "(1, 5, 2048)" in out


def test_examples_position_schemes_runs(capsys):
    runpy.run_path(str(ROOT / "examples" / "reference" / "position_schemes.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "parameters: 0" in out and "parameters: 2048" in out and "(4, 5, 5)" in out
