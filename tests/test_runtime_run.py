"""install() and `shapecheck run`: the user's own modules checked, the program otherwise unchanged."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from jaxtyping import Float  # noqa: E402
from torch import Tensor  # noqa: E402

from shapecheck.runtime import ShapeCheckError, ShapeCheckWarning, checked, install  # noqa: E402
from shapecheck.runtime.launcher import format_user_traceback  # noqa: E402

MODEL = textwrap.dedent(
    '''\
    """A user's model: d_model is only a constructor argument."""
    import torch
    from jaxtyping import Float
    from torch import Tensor, nn


    def helper(x: Float[Tensor, "b t d"]) -> Float[Tensor, "b t d"]:
        return x


    class Block(nn.Module):
        def __init__(self, d_model: int):
            super().__init__()
            self.proj = nn.Linear(d_model, d_model)

        def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_model"]:
            return self.proj(helper(x))
    '''
)

MAIN = textwrap.dedent(
    """\
    import sys
    import torch
    from model import Block

    print("args", sys.argv[1:])
    print("stdin", sys.stdin.readline().strip())
    block = Block(d_model=512)
    block(torch.randn(2, 5, int(sys.argv[1])))
    print("ok")
    sys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    """
)


@pytest.fixture
def program(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "main.py").write_text(MAIN)
    return tmp_path


def run(program: Path, *args: str, stdin: str = "hello\n", env: dict[str, str] | None = None):
    """``shapecheck run ARGS`` in a process of its own (a fork of this one: torch is already imported)."""
    from conftest import run_forked

    return run_forked(["run", *args], cwd=program, stdin=stdin, env=env)


def test_arguments_stdin_stdout_and_exit_code_pass_through(program: Path):
    done = run(program, "main.py", "512", "3")
    assert done.stdout.splitlines() == ["args ['512', '3']", "stdin hello", "ok"]
    assert done.returncode == 3, done.stderr


def test_the_module_beside_the_script_is_checked_with_a_short_traceback(program: Path):
    done = run(program, "main.py", "384")
    assert done.returncode == 1
    assert "ok" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == (
        "shapecheck.ShapeCheckError: Block.forward (model.py:16): parameter x: expected "
        "Float[Tensor, 'b t d_model'], got float32[2, 5, 384]; dims bound so far: d_model=512 b=2 t=5; "
        "axis 2: expected d_model=512, got 384"
    )
    assert 'main.py", line 8, in <module>' in done.stderr
    for hidden in ("jaxtyping", "beartype", "shapecheck/runtime", "runpy", "During handling"):
        assert hidden not in done.stderr, hidden


def test_unchecked_run_fails_inside_torch(program: Path):
    done = run(program, "main.py", "384", env={"SHAPECHECK_RUNTIME": "0"})
    assert done.returncode == 1
    assert "mat1 and mat2 shapes cannot be multiplied" in done.stderr.splitlines()[-1]


def test_check_option_limits_what_is_checked(program: Path):
    done = run(program, "--check", "nothing_else", "main.py", "384")
    assert "ShapeCheckError" not in done.stderr and "mat1 and mat2" in done.stderr


def test_dash_m_runs_a_module_of_a_package(program: Path):
    package = program / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(MODEL)
    (package / "train.py").write_text(MAIN.replace("from model import", "from pkg.model import"))
    done = run(program, "-m", "pkg.train", "384", "--flag")
    assert done.stdout.splitlines() == ["args ['384', '--flag']", "stdin hello"]
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("shapecheck.ShapeCheckError: Block.forward (pkg/model.py:16)")


def test_bad_command_lines_exit_2_without_traceback(cli, program: Path):
    """Refused before anything runs: in this process (the tests above run programs for real)."""
    for args, message in [
        ([], "nothing to run"),
        (["missing.py"], "missing.py: no such file"),
        (["-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
    ]:
        done = cli("run", *args, cwd=program)
        assert done.code == 2, (args, done.err)
        assert message in done.err and "Traceback" not in done.err


def test_install_checks_a_package_imported_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "usermodels").mkdir()
    (tmp_path / "usermodels" / "__init__.py").write_text("")
    (tmp_path / "usermodels" / "blocks.py").write_text(MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    hook = install("usermodels")
    try:
        from usermodels.blocks import Block, helper  # type: ignore[import-not-found]

        assert Block(8)(torch.zeros(1, 2, 8)).shape == (1, 2, 8)
        with pytest.raises(ShapeCheckError, match=r"^Block.forward \(.*blocks.py:16\).*axis 2: expected d_model=8, got 4$"):
            Block(8)(torch.zeros(1, 2, 4))
        with pytest.raises(ShapeCheckError, match=r"^helper \("):
            helper(torch.zeros(2, 3))
    finally:
        hook.remove()
        for name in [n for n in sys.modules if n.startswith("usermodels")]:
            del sys.modules[name]


def test_install_warns_for_a_package_already_imported():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hook = install("json")
    hook.remove()
    assert any(issubclass(w.category, ShapeCheckWarning) and "json is already imported" in str(w.message) for w in caught)


def test_install_refuses_to_check_the_checker():
    with pytest.raises(ValueError, match="cannot check the package 'jaxtyping'"):
        install("jaxtyping")


def test_user_traceback_keeps_user_frames_only():
    def user_code() -> None:
        @checked
        def f(x: Float[Tensor, "n"]) -> None:
            return None

        f(torch.zeros(2, 2))

    with pytest.raises(ShapeCheckError) as info:
        user_code()
    text = format_user_traceback(info.value)
    assert "in user_code" in text and "f(torch.zeros(2, 2))" in text
    assert "wrapping.py" not in text and "jaxtyping" not in text.rsplit("ShapeCheckError", 1)[0]
    assert text.strip().splitlines()[-1].startswith("shapecheck.ShapeCheckError: ")
