"""The pre-commit hook works for real: ``pre-commit run`` with this checkout as the hook repository.

pre-commit installs the hook repository (a committed revision) into a virtualenv with pip, so the test
copies the package into a temporary git repository and commits it there: it works the same on a
fresh CI clone and on a working tree with uncommitted changes. The install needs PyPI (libcst, rich,
...). All runs of this module share one pre-commit home (``PRE_COMMIT_HOME``) for the session, so the
hook is installed once and the later runs reuse it, as on a user's machine. With ``pre-commit-uv``
installed (the ``dev`` extra has it) pre-commit builds the hook's virtualenv with uv: about 10 s here,
against about 30 s with pip. The store
and the hook repository live in a folder all xdist workers share: the module is one xdist group,
but the tests may still land on two workers (seen with pytest 9), and pre-commit's own lock on its
store makes the second worker wait for the first install and reuse it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pre-commit")]

#: What the hook repository needs to be pip-installed (see pyproject.toml's package list).
HOOK_REPO_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "shapecheck", "reference_model")
README = (REPO / "README.md").read_text()

CLEAN = "import torch\n\n\ndef scale(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n"

#: Buggy files the hook must reject: (file name, source, the code it must report).
BUGGY = [
    ("syntax.py", "def forward(self, x)\n    return x\n", "SC001"),
    (
        "shared_qk.py",
        "import torch.nn as nn\n\n\n"
        "class Attention(nn.Module):\n"
        "    def __init__(self, d_model=32):\n"
        "        super().__init__()\n"
        "        self.W_Q = nn.Linear(d_model, d_model)\n"
        "        self.W_K = self.W_Q\n"
        "        self.W_V = nn.Linear(d_model, d_model)\n\n"
        "    def forward(self, x):\n"
        "        q, k, v = self.W_Q(x), self.W_K(x), self.W_V(x)\n"
        "        return (q @ k.transpose(-2, -1) / 32 ** 0.5).softmax(dim=-1) @ v\n",
        "SC401",
    ),
]

GIT_ENV = {
    "GIT_AUTHOR_NAME": "shapecheck tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "shapecheck tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={**os.environ, **GIT_ENV},
    )


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every xdist worker of this test session sees (the parent of the workers' own base
    temporary folders), so that the hook is installed once however the tests are distributed."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def _locked(root: Path):
    with open(root / "pre-commit-test.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = _shared_root(tmp_path_factory)
    repo = root / "hook-repo"
    with _locked(root):
        if not (repo / ".git").is_dir():
            shutil.rmtree(repo, ignore_errors=True)
            repo.mkdir()
            for name in HOOK_REPO_FILES:
                source = REPO / name
                if source.is_dir():
                    shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
                elif source.is_file():
                    shutil.copy2(source, repo / name)
            if not (repo / "README.md").exists():
                (repo / "README.md").write_text("shapecheck\n")
            git("init", "-q", cwd=repo)
            git("add", "-A", cwd=repo)
            git("commit", "-q", "-m", "snapshot for the pre-commit test", cwd=repo)
    return repo


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pre-commit's store for this test session, shared by the xdist workers: the hook environment
    is built once (pre-commit locks its store while it installs) and reused."""
    home = _shared_root(tmp_path_factory) / "pre-commit-home"
    home.mkdir(exist_ok=True)
    return home


def head_of(repo: Path) -> str:
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def pre_commit_run(
    project: Path, home: Path, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``pre-commit run ARGS`` (``--all-files`` by default) in ``project``, with the session's store.

    The hook's interpreter may write bytecode (into the hook's virtualenv, in the session's store),
    whatever ``PYTHONDONTWRITEBYTECODE`` says: uv installs without it, and each hook run would
    otherwise compile shapecheck, libcst and rich again (2 s of CPU a run)."""
    env = {**os.environ, **GIT_ENV, "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never", "PRE_COMMIT_HOME": str(home)}
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", *(args or ("--all-files",))],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="session")
def runs(hook_repo: Path, pre_commit_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """``pre-commit run`` on a clean project (the first run installs the hook), then on a buggy one."""
    config = f"repos:\n  - repo: {hook_repo}\n    rev: {head_of(hook_repo)}\n    hooks:\n      - id: shapecheck\n"
    clean = tmp_path_factory.mktemp("clean-project")
    buggy = tmp_path_factory.mktemp("buggy-project")
    for project in (clean, buggy):
        git("init", "-q", cwd=project)
        (project / ".pre-commit-config.yaml").write_text(config)
        (project / "clean.py").write_text(CLEAN)
    for name, source, _ in BUGGY:
        (buggy / name).write_text(source)
    for project in (clean, buggy):
        git("add", ".", cwd=project)
    buggy_files = sorted(path.name for path in buggy.glob("*.py"))
    return {
        "clean": pre_commit_run(clean, pre_commit_home, "--files", "clean.py"),
        "buggy": pre_commit_run(buggy, pre_commit_home, "--files", *buggy_files),
    }


def test_clean_file_passes(runs) -> None:
    done = runs["clean"]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Passed" in done.stdout


@pytest.mark.parametrize(("name", "source", "code"), BUGGY, ids=[code for _, _, code in BUGGY])
def test_buggy_file_fails(runs, name: str, source: str, code: str) -> None:
    from shapecheck.linter import lint_source

    assert code in {d.code for d in lint_source(source, name).diagnostics}, f"{code} no longer fires on {name}"
    done = runs["buggy"]
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Failed" in done.stdout
    assert f"{name}:" in done.stdout and code in done.stdout
    assert "clean.py:" not in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def readme_config(marker: str) -> str:
    """The README's ``.pre-commit-config.yaml`` block whose text contains ``marker``."""
    blocks = [b.split("```", 1)[0] for b in README.split("```yaml\n")[1:]]
    [block] = [b for b in blocks if ".pre-commit-config.yaml" in b and marker in b]
    return block


def readme_project(tmp_path: Path, config: str) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", cwd=project)
    (project / ".pre-commit-config.yaml").write_text(config)
    (project / "clean.py").write_text(CLEAN)
    (project / "syntax.py").write_text(BUGGY[0][1])
    git("add", ".", cwd=project)
    return project


def test_readme_remote_snippet_with_a_real_revision(hook_repo: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    config = readme_config("rev:")
    config = re.sub(r"repo: \S+", f"repo: {hook_repo}", config, count=1)
    config = re.sub(r"rev: \S+", f"rev: {head_of(hook_repo)}", config, count=1)
    done = pre_commit_run(readme_project(tmp_path, config), pre_commit_home)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "syntax.py:1:" in done.stdout and "SC001" in done.stdout and "clean.py:" not in done.stdout


def test_readme_local_snippet(pre_commit_home: Path, tmp_path: Path) -> None:
    config = readme_config("repo: local")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "shapecheck"  # `shapecheck` as installed from this checkout
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m shapecheck \"$@\"\n")
    wrapper.chmod(0o755)
    path = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    if "PYTHONDONTWRITEBYTECODE" in os.environ:  # this hook runs the checkout: write no bytecode into it
        path["PYTHONDONTWRITEBYTECODE"] = os.environ["PYTHONDONTWRITEBYTECODE"]
    done = pre_commit_run(readme_project(tmp_path, config), pre_commit_home, env_extra=path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "syntax.py:1:" in done.stdout and "SC001" in done.stdout and "clean.py:" not in done.stdout
