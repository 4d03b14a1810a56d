"""Runtime shape checks for your own models: jaxtyping annotations enforced by beartype.

    from shapecheck.runtime import checked, install, checking

    @checked                      # a function, or a class: every annotated method
    class Attention(nn.Module): ...

    install("mypkg")              # check every function and class of mypkg when it is imported
    with checking(False): ...     # checks off inside the block; set_enabled(False) for good

``SHAPECHECK_RUNTIME=0`` in the environment turns everything off at zero cost (``checked`` returns
its argument unchanged, ``install`` does nothing). ``shapecheck run script.py`` runs a program with
``install`` applied to the modules beside it. ``trace(model, *inputs)`` draws the shapes of one
forward pass. Errors are ``ShapeCheckError``, a ``jaxtyping.TypeCheckError``.
"""

from shapecheck.runtime.wrapping import ShapeCheckWarning, checked
from shapecheck.runtime.errors import ShapeCheckError
from shapecheck.runtime.hook import install
from shapecheck.runtime.switch import ENV_VAR, checking, enabled, set_enabled


def trace(model, *inputs, device=None, **keyword_inputs):  # type: ignore[no-untyped-def]
    """Run one forward pass of ``model`` and return the tree of its submodule calls (see ``trace.py``)."""
    from shapecheck.runtime.tracing import trace as _trace

    return _trace(model, *inputs, device=device, **keyword_inputs)


__all__ = [
    "ENV_VAR",
    "ShapeCheckError",
    "ShapeCheckWarning",
    "checked",
    "checking",
    "enabled",
    "install",
    "set_enabled",
    "trace",
]
