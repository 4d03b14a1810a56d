"""The on/off switch of runtime checks: an environment variable, a flag and a context manager.

    SHAPECHECK_RUNTIME=0        (also "false", "off", "no") checks never start: ``checked`` returns
                                the function unchanged and ``install`` does nothing (zero cost)
    set_enabled(False)          checked functions stop checking from now on (one flag test per call)
    with checking(False): ...   the same, inside a block, restoring the previous state after
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

ENV_VAR = "SHAPECHECK_RUNTIME"
_OFF_VALUES = frozenset({"0", "false", "off", "no"})


class _Switch:
    """One mutable flag, read by every checked call (an attribute read, no function call)."""

    __slots__ = ("on",)

    def __init__(self) -> None:
        self.on = True


SWITCH = _Switch()


def disabled_by_environment() -> bool:
    """Whether ``SHAPECHECK_RUNTIME`` turns runtime checking off for this process."""
    return os.environ.get(ENV_VAR, "1").strip().lower() in _OFF_VALUES


def enabled() -> bool:
    """Whether checked functions check their arguments and results right now."""
    return SWITCH.on and not disabled_by_environment()


def set_enabled(on: bool) -> None:
    """Turn the checks of every checked function on or off for the whole process."""
    SWITCH.on = bool(on)


@contextmanager
def checking(on: bool) -> Iterator[None]:
    """Run a block with checks on or off, restoring the previous state after."""
    previous = SWITCH.on
    SWITCH.on = bool(on)
    try:
        yield
    finally:
        SWITCH.on = previous
