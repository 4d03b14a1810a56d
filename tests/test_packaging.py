"""Packaging and tooling files keep their promises: no torch in the core, the hook, CI = README."""

from __future__ import annotations

import re
import sys

import pytest
import yaml

from conftest import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: The README's test command: two worker processes on two cores; the pre-commit tests share one worker.
TEST_COMMAND = "python -m pytest -q -n auto --dist loadgroup"


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_core_dependencies_have_no_torch() -> None:
    project = pyproject()["project"]
    names = [re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]]
    assert "torch" not in names
    assert {"libcst", "rich"} <= set(names)
    assert project["scripts"]["shapecheck"] == "shapecheck.cli:main"
    assert project["name"] != "shapecheck"  # taken on PyPI by an unrelated package


def test_pre_commit_hook_definition() -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "shapecheck"
    assert hook["entry"] == "shapecheck lint --force-exclude"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "jupyter"]


def test_ci_runs_the_readme_test_command() -> None:
    script = (REPO / ".ci" / "run").read_text()
    readme = (REPO / "README.md").read_text()
    assert script.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in script
    assert re.search(r"pip install torch==2\.13\.0\b", script)
    assert not re.search(r"pip install[^\n]*\btorch(?!==)", script.replace("torch==2.13.0", ""))
    assert TEST_COMMAND in script and TEST_COMMAND in readme
    assert "-eq 5" in script  # pytest's "no tests collected" fails the run
    first_block = readme.split("```bash", 2)
    assert "shapecheck lint examples/" in first_block[1]
    assert "pip install torch==2.13.0" in first_block[2] and TEST_COMMAND in first_block[2]
    dev = [re.split(r"[<>=!~ ;\[]", dep, maxsplit=1)[0].lower() for dep in pyproject()["project"]["optional-dependencies"]["dev"]]
    assert "pytest-xdist" in dev  # -n auto


@pytest.mark.parametrize(
    "heading", ["## Rules", "## Configuration", "## Suppressing a finding", "## Output formats",
                "## Continuous integration", "## Installing", "## pre-commit", "## How it works", "## Exit codes"],
)
def test_readme_sections(heading: str) -> None:
    assert f"\n{heading}\n" in (REPO / "README.md").read_text()


def test_readme_quick_start_shows_findings(cli) -> None:
    done = cli("lint", "examples/", "--format", "concise", cwd=REPO)
    assert done.code == 1, done.out + done.err
    assert "examples/bugs/" in done.out
    assert done.out.rstrip().splitlines()[-1].startswith("Found ")


def test_readme_installs_from_the_repository_only() -> None:
    readme = (REPO / "README.md").read_text()
    assert "OWNER" not in readme
    for line in re.findall(r"pip install [^\n`]*", readme):
        target = line.split("pip install", 1)[1].split("&&")[0].split("#")[0].strip()
        # A path, a VCS URL, this checkout (-e .) or torch: never a name from the package index.
        assert target.startswith(("-e .", "/", ".", '"git+', "git+", "torch==")), line


def test_internals_live_outside_the_readme() -> None:
    readme = (REPO / "README.md").read_text()
    for word in ("benchmarks/", "FunctionRun", "OpEvent", "interpreter"):
        assert word not in readme, word
    assert (REPO / "docs" / "internals.md").is_file() and (REPO / "CONTRIBUTING.md").is_file()
