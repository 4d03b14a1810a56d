"""``[tool.shapecheck]`` configuration: where it is found, what it may say, how it is validated.

The nearest ``pyproject.toml`` with a ``[tool.shapecheck]`` table, found upward from each checked
file, configures that file (a ``pyproject.toml`` without the table is passed over). ``--config PATH``
uses one file for everything, ``--isolated`` none. Keys::

    [tool.shapecheck]
    select = ["SC1", "SC401"]          # default: every rule
    ignore = ["SC104"]
    extend-select = ["SC6"]
    exclude = ["generated/*", "*_pb2.py"]   # globs, relative to the file's folder
    per-file-ignores = { "tests/*" = ["SC4"] }

Anything else (an unknown key, a wrong type, an unknown rule) is a ``ConfigError`` with a one-line
message naming the file and the key.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from shapecheck.globs import matches_any
from shapecheck.rules.base import Registry, SelectionError
from shapecheck.selection import RuleSelection, validate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
KEYS = ("select", "ignore", "extend-select", "exclude", "per-file-ignores", "src")


class ConfigError(Exception):
    """The configuration cannot be used; the message is one line and names the file."""


@dataclass(frozen=True)
class Config:
    """The settings that apply to the files under ``root``."""

    root: Path
    path: Path | None = None
    selection: RuleSelection = RuleSelection()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Import roots of the project (``src = ["src", "."]``), relative to ``root``.
    src: tuple[str, ...] = ()
    _cache: dict[str, RuleSelection] = field(default_factory=dict, compare=False, repr=False)

    def relative(self, path: Path) -> str | None:
        """``path`` relative to ``root`` in posix form, or None when it lies outside."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    def src_roots(self) -> tuple[Path, ...]:
        """The configured import roots as absolute folders."""
        return tuple(self.root / folder for folder in self.src)

    def excludes(self, path: Path) -> bool:
        """True when an ``exclude`` glob matches ``path`` (a file or a folder)."""
        if not self.exclude:
            return False
        relative = self.relative(path)
        return relative is not None and matches_any(relative, self.exclude)

    def file_ignores(self, path: Path) -> RuleSelection:
        """The per-file-ignores layer for ``path`` (empty when no pattern matches)."""
        if not self.per_file_ignores:
            return RuleSelection()
        relative = self.relative(path)
        if relative is None:
            return RuleSelection()
        if relative not in self._cache:
            ignored = tuple(
                code for pattern, codes in self.per_file_ignores if matches_any(relative, (pattern,)) for code in codes
            )
            self._cache[relative] = RuleSelection(ignore=ignored)
        return self._cache[relative]


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` holding ``[tool.shapecheck]``, from ``start`` upward."""
    directory = start.resolve()
    if not directory.is_dir():
        directory = directory.parent
    for folder in (directory, *directory.parents):
        candidate = folder / PYPROJECT
        if candidate.is_file() and _has_table(candidate):
            return candidate
    return None


def _has_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if "shapecheck" not in text:
        return False
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return True  # it means to configure shapecheck: load_config reports the error
    return isinstance(tool, dict) and "shapecheck" in tool


def load_config(path: Path, registry: Registry) -> Config:
    """Read and validate one configuration file.

    A ``pyproject.toml`` must hold ``[tool.shapecheck]``; any other TOML file (``--config
    shapecheck.toml``) may hold the keys at its top level or under ``[tool.shapecheck]``.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read configuration: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    tool = data.get("tool", {})
    table = tool.get("shapecheck") if isinstance(tool, dict) else None
    if table is None:
        if path.name == PYPROJECT:
            table = {}
        else:
            table = {key: value for key, value in data.items() if key != "tool"}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.shapecheck] must be a table")
    return parse_table(table, path, registry)


def parse_table(table: Mapping[str, object], path: Path, registry: Registry) -> Config:
    """Validate the keys and values of a ``[tool.shapecheck]`` table."""
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"{path}: unknown key {key!r} in [tool.shapecheck]{hint}; known keys: {', '.join(KEYS)}"
            )
    select = table.get("select")
    selection = RuleSelection(
        select=None if select is None else _strings(select, "select", path),
        ignore=_strings(table.get("ignore", []), "ignore", path),
        extend_select=_strings(table.get("extend-select", []), "extend-select", path),
    )
    exclude = _strings(table.get("exclude", []), "exclude", path)
    raw_ignores = table.get("per-file-ignores", {})
    if not isinstance(raw_ignores, dict):
        raise ConfigError(f"{path}: 'per-file-ignores' must be a table of glob = [codes]")
    per_file = tuple(
        (str(pattern), _strings(codes, f"per-file-ignores.{pattern!r}", path)) for pattern, codes in raw_ignores.items()
    )
    try:
        validate(selection, registry)
        for _, codes in per_file:
            validate(RuleSelection(ignore=codes), registry)
    except SelectionError as error:
        raise ConfigError(f"{path}: {error}") from None
    return Config(
        root=path.resolve().parent,
        path=path,
        selection=selection,
        exclude=exclude,
        per_file_ignores=per_file,
        src=_strings(table.get("src", []), "src", path),
    )


def _strings(value: object, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {key!r} must be a list of strings, got {value!r}")
    return tuple(value)


class ConfigResolver:
    """The configuration of each checked path, found once per folder.

    ``explicit`` (``--config``) applies to every path; ``isolated`` applies none.
    """

    def __init__(self, registry: Registry, *, explicit: Path | None = None, isolated: bool = False) -> None:
        self._registry = registry
        self._isolated = isolated
        self._explicit = load_config(explicit, registry) if explicit is not None else None
        self._default = Config(root=Path.cwd().resolve())
        self._by_folder: dict[Path, Config] = {}
        self._by_file: dict[Path, Config] = {}

    def for_path(self, path: Path) -> Config:
        """The configuration for a file or folder (raises ``ConfigError`` for a bad file)."""
        if self._explicit is not None:
            return self._explicit
        if self._isolated:
            return self._default
        folder = path.resolve()
        if not folder.is_dir():
            folder = folder.parent
        if folder not in self._by_folder:
            found = find_config(folder)
            if found is None:
                self._by_folder[folder] = self._default
            else:
                found = found.resolve()
                if found not in self._by_file:
                    self._by_file[found] = load_config(found, self._registry)
                self._by_folder[folder] = self._by_file[found]
        return self._by_folder[folder]
