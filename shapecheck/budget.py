"""The per-file time budget: a file that takes too long is reported, not waited for.

``time_budget`` arms a real-time timer (POSIX, main thread only; elsewhere it does nothing) that
raises ``OverBudget`` in the checking code. ``OverBudget`` is a ``BaseException``, so no
``except Exception`` on the way swallows it. Native code (the parser) finishes its call before the
timer's exception is raised; ``shapecheck.hostile`` keeps the parser away from input it would
spend minutes on.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BUDGET_ENV = "SHAPECHECK_FILE_TIMEOUT"
DEFAULT_SECONDS = 60.0


class OverBudget(BaseException):
    """A file took longer than its budget."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"over the budget of {seconds:g} s")
        self.seconds = seconds


def file_budget() -> float:
    """Seconds per file from ``SHAPECHECK_FILE_TIMEOUT`` (0 or less: no budget)."""
    try:
        return float(os.environ.get(BUDGET_ENV, DEFAULT_SECONDS))
    except ValueError:
        return DEFAULT_SECONDS


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    usable = (
        seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(signum, frame) -> None:
        raise OverBudget(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
