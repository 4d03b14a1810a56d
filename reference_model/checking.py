"""Runtime shape checks for reference_model: a thin use of ``shapecheck.runtime``.

Every public ``forward`` and tensor function in the package is decorated with ``@typechecked``,
which is ``shapecheck.runtime.checked``: jaxtyping annotations enforced by beartype, with the
module's sizes (``self.d_model``, ``self.vocab_size``) bound before the arguments are checked, and a
one-line error naming the function, the argument, the dims bound so far and the failing axis::

    ShapeCheckError: Encoder.forward (reference_model/encoder.py:97): parameter x: expected
    Float[Tensor, 'b t d_model'], got float32[2, 5, 384]; dims bound so far: d_model=512 b=2 t=5;
    axis 2: expected d_model=512, got 384

Checks are on by default. Turn them off with the switch of ``shapecheck.runtime`` (these names are
aliases of it, kept for existing code):

    SHAPECHECK_RUNTIME=0            checks never start (``checked`` returns the function unchanged)
    REFERENCE_MODEL_TYPECHECK=0     (also "false", "off", "no"; read once, at import) the same as
                                    ``set_typechecking(False)`` at import: checks off for the process
    set_typechecking(False) / with typechecking(False): ...
"""

import os

from jaxtyping import TypeCheckError

from shapecheck.runtime import ShapeCheckError, checked, checking, enabled, set_enabled

__all__ = [
    "ENV_VAR",
    "ShapeCheckError",
    "TypeCheckError",
    "set_typechecking",
    "typecheck_enabled",
    "typechecked",
    "typechecking",
]

ENV_VAR = "REFERENCE_MODEL_TYPECHECK"

typechecked = checked
typechecking = checking
set_typechecking = set_enabled
typecheck_enabled = enabled

if os.environ.get(ENV_VAR, "1").strip().lower() in {"0", "false", "off", "no"}:
    set_enabled(False)
