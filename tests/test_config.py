"""[tool.shapecheck] configuration: discovery upward, validation, precedence of flags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shapecheck.config import ConfigError, ConfigResolver, find_config, load_config
from shapecheck.globs import matches
from shapecheck.rules.base import registry


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write(tmp_path / "src" / "model.py", "bad_name = 1\n")
    write(tmp_path / "src" / "broken.py", "def f(:\n")
    write(tmp_path / "tests" / "test_model.py", "bad_name = 2\n")
    write(tmp_path / "generated" / "gen.py", "bad_name = 3\n")
    return tmp_path


def codes_by_path(cli, root: Path, *args: str) -> dict[str, set[str]]:
    ran = cli("lint", "--format", "json", *args, cwd=root)
    assert ran.code in (0, 1), ran.err
    found: dict[str, set[str]] = {}
    for d in json.loads(ran.out)["diagnostics"]:
        found.setdefault(d["path"], set()).add(d["code"])
    return found


def test_find_config_walks_up_and_skips_pyprojects_without_the_table(tmp_path: Path) -> None:
    top = write(tmp_path / "project" / "pyproject.toml", "[tool.shapecheck]\nignore = ['SC001']\n")
    write(tmp_path / "project" / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")
    deep = tmp_path / "project" / "sub" / "deeper"
    deep.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert find_config(deep) == top.resolve()
    # a sibling folder does not see the project's table: it gets what the folders above give
    assert find_config(elsewhere) == find_config(tmp_path)
    assert find_config(elsewhere) != top.resolve()


def test_config_select_ignore_exclude_and_per_file_ignores(cli, project: Path, test_rules) -> None:
    write(
        project / "pyproject.toml",
        """
[tool.shapecheck]
select = ["SC0", "bad-name"]
ignore = ["SC001"]
exclude = ["generated"]
per-file-ignores = { "tests/*" = ["SC99"] }
""",
    )
    assert codes_by_path(cli, project) == {"src/model.py": {"SC990"}}


def test_flags_win_over_the_file(cli, project: Path, test_rules) -> None:
    write(project / "pyproject.toml", "[tool.shapecheck]\nignore = ['SC001']\nexclude = ['generated/*']\n")
    assert "src/broken.py" not in codes_by_path(cli, project)
    found = codes_by_path(cli, project, "--select", "SC001")
    assert found == {"src/broken.py": {"SC001"}}
    found = codes_by_path(cli, project, "--extend-select", "SC001")
    assert found["src/broken.py"] == {"SC001"}


def test_isolated_and_explicit_config(cli, project: Path, test_rules) -> None:
    write(project / "pyproject.toml", "[tool.shapecheck]\nselect = ['SC001']\n")
    assert set(codes_by_path(cli, project)) == {"src/broken.py"}
    assert "generated/gen.py" in codes_by_path(cli, project, "--isolated")
    other = write(project / "other.toml", "select = ['bad-name']\nexclude = ['tests']\n")
    found = codes_by_path(cli, project, "--config", str(other))
    assert found == {"generated/gen.py": {"SC990"}, "src/model.py": {"SC990"}}
    ran = cli("lint", "--config", str(other), "--isolated", cwd=project)
    assert ran.code == 2 and "not allowed with" in ran.err


def test_nearest_config_applies_per_folder(cli, project: Path, test_rules) -> None:
    write(project / "pyproject.toml", "[tool.shapecheck]\nignore = ['SC001']\n")
    write(project / "tests" / "pyproject.toml", "[tool.shapecheck]\nignore = ['bad-name']\n")
    found = codes_by_path(cli, project)
    assert "tests/test_model.py" not in found
    assert found["src/model.py"] == {"SC990"}
    assert "src/broken.py" not in found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.shapecheck]\nselct = ['SC1']\n", "unknown key 'selct' in [tool.shapecheck] (did you mean 'select'?)"),
        ("[tool.shapecheck]\nextend_select = ['SC1']\n", "unknown key 'extend_select'"),
        ("[tool.shapecheck]\nignore = ['SC977']\n", "unknown rule code or name 'SC977'"),
        ("[tool.shapecheck]\nignore = ['missing-attention-scal']\n", "did you mean 'missing-attention-scale'?"),
        ("[tool.shapecheck]\nselect = 'SC1'\n", "'select' must be a list of strings"),
        ("[tool.shapecheck]\nper-file-ignores = ['x']\n", "'per-file-ignores' must be a table"),
        ("[tool.shapecheck]\nper-file-ignores = { 'a/*' = ['nope'] }\n", "unknown rule code or name 'nope'"),
        ("[tool.shapecheck\n", "invalid TOML"),
    ],
)
def test_bad_configuration_is_a_clear_usage_error(cli, project: Path, text: str, message: str) -> None:
    path = write(project / "pyproject.toml", text)
    ran = cli("lint", "src", cwd=project)
    assert ran.code == 2
    assert message in ran.err
    assert str(path.resolve()) in ran.err or str(path) in ran.err
    assert len(ran.err.strip().splitlines()) == 1
    assert "Traceback" not in ran.err


def test_missing_explicit_config(cli, project: Path) -> None:
    ran = cli("lint", "--config", "nope.toml", cwd=project)
    assert ran.code == 2
    assert "nope.toml: configuration file not found" in ran.err


def test_catalogued_codes_are_accepted_before_they_are_written(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool.shapecheck]\nignore = ['SC6', 'mask-polarity', 'SC203']\n")
    config = load_config(path, registry())
    assert config.selection.ignore == ("SC6", "mask-polarity", "SC203")


def test_resolver_caches_per_folder(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.shapecheck]\nexclude = ['gen_*.py']\n")
    resolver = ConfigResolver(registry())
    first = resolver.for_path(tmp_path / "a" / "x.py")
    assert first is resolver.for_path(tmp_path / "a" / "y.py")
    assert first.excludes(tmp_path / "a" / "gen_1.py")
    assert not first.excludes(tmp_path / "a" / "model.py")


def test_load_config_rejects_non_table(tmp_path: Path) -> None:
    path = write(tmp_path / "pyproject.toml", "[tool]\nshapecheck = 3\n")
    with pytest.raises(ConfigError, match="must be a table"):
        load_config(path, registry())


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("generated/gen.py", "generated", True),
        ("generated/gen.py", "generated/", True),
        ("generated/gen.py", "generated/*", True),
        ("src/generated/gen.py", "generated", True),
        ("src/x_pb2.py", "*_pb2.py", True),
        ("src/model.py", "*_pb2.py", False),
        ("a/b/c.py", "**/c.py", True),
        ("c.py", "**/c.py", True),
        ("a/b/c.py", "a/*.py", True),
        ("tests/test_x.py", "src/*", False),
        ("./tests/x.py", "tests", True),
    ],
)
def test_glob_matching(path: str, pattern: str, expected: bool) -> None:
    assert matches(path.removeprefix("./"), pattern) is expected
