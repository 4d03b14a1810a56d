"""The garbage collector's settings for a lint run.

A run allocates millions of short-lived objects (libcst nodes, symbolic dims, values) and, when it
lints a project, keeps every parsed module and loaded module scope alive until the end. With
CPython's default thresholds (700, 10, 10) the young generations are collected every few thousand
allocations, and each full collection walks that whole, growing heap: on a 400-file project about
12% of the whole-project lint was collection, against 6% when each file is linted alone
(``benchmarks/project.py``). Larger thresholds, as mypy sets them, make collections rarer; the
memory they hold back is the garbage of one young generation, a few megabytes.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Allocations before a young collection, and young / middle collections before the next older one.
LINT_THRESHOLDS = (50_000, 20, 20)


@contextmanager
def lint_thresholds() -> Iterator[None]:
    """Collect less often for the duration of the block; the previous thresholds come back after."""
    previous = gc.get_threshold()
    gc.set_threshold(*LINT_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
