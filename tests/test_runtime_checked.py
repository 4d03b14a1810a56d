"""shapecheck.runtime.checked: what is checked, the error text, module sizes, the cache, the switch.

Dims: b batch, t time, d / d_model width, n any.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import pytest

torch = pytest.importorskip("torch")
from jaxtyping import Float, Int, TypeCheckError  # noqa: E402
from torch import Tensor, nn  # noqa: E402

import shapecheck  # noqa: E402
from shapecheck.runtime import ShapeCheckError, ShapeCheckWarning, checked, checking, enabled, set_enabled  # noqa: E402
from shapecheck.runtime.errors import where_defined  # noqa: E402
from conftest import in_fork  # noqa: E402

torch.set_num_threads(1)


@checked
def add(x: Float[Tensor, "b d"], y: Float[Tensor, "b d"]) -> Float[Tensor, "b d"]:
    return x + y


@checked
class Projection(nn.Module):
    """d_model is only a constructor argument: checked(cls) records it."""

    def __init__(self, d_model: int, d_out: int) -> None:
        super().__init__()
        self.W = nn.Linear(d_model, d_out)

    def forward(self, x: Float[Tensor, "b t d_model"]) -> Float[Tensor, "b t d_out"]:
        return self.W(x)


class Encoder(nn.Module):
    """d_model is an int attribute; only forward is decorated."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.W = nn.Linear(d_model, d_model)

    @checked
    def forward(self, x: Float[Tensor, "b t d_model"], mask: Float[Tensor, "t t"] | None = None) -> Float[Tensor, "b t d_model"]:
        return self.W(x)


def test_correct_calls_pass_and_return_the_result():
    x = torch.ones(2, 3)
    assert torch.equal(add(x, x), 2 * x)
    assert Projection(8, 4)(torch.zeros(2, 5, 8)).shape == (2, 5, 4)
    assert Encoder(8)(torch.zeros(2, 5, 8), torch.zeros(5, 5)).shape == (2, 5, 8)


def test_error_message_names_function_place_parameter_dims_and_axis():
    encoder = Encoder(512)
    with pytest.raises(ShapeCheckError) as info:
        encoder(torch.randn(2, 5, 384))
    assert str(info.value) == (
        f"Encoder.forward ({where_defined(Encoder.forward.__wrapped__)}): parameter x: expected "
        "Float[Tensor, 'b t d_model'], got float32[2, 5, 384]; dims bound so far: d_model=512 b=2 t=5; "
        "axis 2: expected d_model=512, got 384"
    )
    decorator_line = Encoder.forward.__wrapped__.__code__.co_firstlineno  # the `@checked` line
    assert where_defined(Encoder.forward.__wrapped__).endswith(f"test_runtime_checked.py:{decorator_line + 1}")


def test_error_is_a_jaxtyping_error_with_no_chained_internals():
    with pytest.raises(TypeCheckError) as info:
        add(torch.zeros(2, 3), torch.zeros(2, 4))
    error = info.value
    assert isinstance(error, ShapeCheckError)
    assert error.__cause__ is None and error.__suppress_context__
    message = str(error)
    assert "\n" not in message
    assert message.endswith("parameter y: expected Float[Tensor, 'b d'], got float32[2, 4]; dims bound so far: b=2 d=3; axis 1: expected d=3, got 4")
    assert "Any" not in message and "module sizes" not in message and "tensor(" not in message
    assert "The current values for each jaxtyping axis annotation" in error.jaxtyping_message


def test_constructor_arguments_are_bound_as_sizes():
    with pytest.raises(ShapeCheckError, match=r"dims bound so far: d_model=8 d_out=4 b=2 t=5; axis 2: expected d_model=8, got 6$"):
        Projection(8, 4)(torch.zeros(2, 5, 6))


def test_dtype_and_rank_problems_are_named():
    with pytest.raises(ShapeCheckError, match=r"got int64\[2, 3\]; dims bound so far: \(none\); dtype: expected Float, got int64$"):
        add(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3))
    with pytest.raises(ShapeCheckError, match=r"expected 2 dims \(b d\), got 3$"):
        add(torch.zeros(2, 3, 1), torch.zeros(2, 3))


def test_union_annotation_reports_the_member_of_the_right_rank():
    with pytest.raises(ShapeCheckError, match=r"parameter mask: expected Float\[Tensor, 't t'\] \| None, got float32\[5, 6\];.*axis 1: expected t=5, got 6$"):
        Encoder(8)(torch.zeros(2, 5, 8), torch.zeros(5, 6))


def test_return_value_is_checked():
    @checked
    def widen(x: Float[Tensor, "b d"]) -> Float[Tensor, "b d"]:
        return torch.cat([x, x], dim=1)

    with pytest.raises(ShapeCheckError, match=r"return value: expected Float\[Tensor, 'b d'\], got float32\[2, 6\]; dims bound so far: b=2 d=3; axis 1: expected d=3, got 6$"):
        widen(torch.zeros(2, 3))


def test_non_tensor_argument_errors_name_the_parameter():
    @checked
    def scale(x: Float[Tensor, "n"], factor: float) -> Float[Tensor, "n"]:
        return x * factor

    assert scale(torch.ones(3), 2).shape == (3,)  # int accepted where float is annotated (PEP 484 tower)
    with pytest.raises(ShapeCheckError, match=r"parameter factor: expected float, got 'two'"):
        scale(torch.ones(3), "two")


def test_errors_from_inside_the_function_are_not_rewritten():
    @checked
    def outer(x: Float[Tensor, "n"]) -> Float[Tensor, "n"]:
        return add(x[None], x[None, :2])[0]

    with pytest.raises(ShapeCheckError, match=r"^add \("):  # the inner call's own error, unchanged
        outer(torch.ones(3))


# --- the cache never changes a verdict ----------------------------------------------------------


def test_cached_signature_with_a_different_shape_still_fails():
    x = torch.zeros(2, 3)
    for _ in range(3):
        add(x, x)  # validated and cached
    with pytest.raises(ShapeCheckError):
        add(x, torch.zeros(2, 4))
    with pytest.raises(ShapeCheckError):
        add(torch.zeros(2, 4), x)  # the first argument new, the second one seen before
    with pytest.raises(ShapeCheckError, match="dtype"):
        add(x, torch.zeros(2, 3, dtype=torch.float64).to(torch.int32))


def test_dims_bound_across_arguments_are_checked_on_every_call():
    @checked
    def pair(x: Float[Tensor, "b d"], y: Float[Tensor, "d e"]) -> Float[Tensor, "b e"]:
        return x @ y

    pair(torch.zeros(2, 3), torch.zeros(3, 4))
    pair(torch.zeros(2, 5), torch.zeros(5, 4))  # d=5 now: a new key, checked, fine
    with pytest.raises(ShapeCheckError, match="axis 0: expected d=3, got 5"):
        pair(torch.zeros(2, 3), torch.zeros(5, 4))  # each shape seen before, never this pair


def test_cached_arguments_with_a_new_return_shape_still_fail():
    widths = [3, 3, 4]

    @checked
    def stateful(x: Float[Tensor, "b d"]) -> Float[Tensor, "b d"]:
        return torch.zeros(x.shape[0], widths.pop(0))

    x = torch.zeros(2, 3)
    stateful(x)
    stateful(x)  # cache hit for the arguments and the result
    with pytest.raises(ShapeCheckError, match="return value.*axis 1: expected d=3, got 4"):
        stateful(x)  # same arguments, a result shape never validated


def test_changed_module_size_is_seen_by_a_cached_call():
    encoder = Encoder(8)
    x = torch.zeros(2, 5, 8)
    encoder(x)
    encoder(x)
    encoder.d_model = 6  # the module now claims another width
    with pytest.raises(ShapeCheckError, match="axis 2: expected d_model=6, got 8"):
        encoder(x)


def test_keyword_and_positional_calls_are_both_checked():
    x = torch.zeros(2, 3)
    add(x, y=x)
    add(x, y=x)
    with pytest.raises(ShapeCheckError, match="parameter y"):
        add(x, y=torch.zeros(3, 3))


class Box:
    def __init__(self, value: object) -> None:
        self.value = value


def test_arguments_without_a_key_are_checked_every_time():
    @checked
    def unbox(box: Box | None, x: Float[Tensor, "n"]) -> Float[Tensor, "n"]:
        return x

    unbox(Box(1), torch.zeros(3))
    unbox(Box(1), torch.zeros(3))  # a Box has no key under `Box | None`: checked in full again
    with pytest.raises(ShapeCheckError, match=r"parameter box: expected Box \| None, got 1"):
        unbox(1, torch.zeros(3))  # type: ignore[arg-type]


# --- the switch --------------------------------------------------------------------------------


def test_context_manager_and_flag_turn_checks_off_and_back_on():
    bad = torch.zeros(2, 4)
    assert enabled()
    with checking(False):
        assert not enabled()
        assert add(torch.zeros(2, 4), bad).shape == (2, 4)
        with pytest.raises(RuntimeError, match="size of tensor"):
            add(torch.zeros(2, 3), bad)  # torch's own error: nothing checked
    assert enabled()
    set_enabled(False)
    try:
        add(torch.zeros(2, 4), torch.zeros(2, 4))
    finally:
        set_enabled(True)
    with pytest.raises(ShapeCheckError):
        add(torch.zeros(2, 3), bad)


def test_environment_variable_returns_functions_unchanged_and_install_does_nothing(tmp_path):
    def body() -> None:
        from shapecheck.runtime import install

        def f(x: int) -> int:
            return x

        class C:
            def m(self, x: int) -> int:
                return x

        method = C.m
        print(checked(f) is f, checked(C) is C and C.m is method, install("nothing_here") is None, enabled())
        print(len([finder for finder in sys.meta_path if type(finder).__name__ == "CheckingFinder"]))

    done = in_fork(body, ["python", "-c", "..."], tmp_path, env={"SHAPECHECK_RUNTIME": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "False", "0"]


# --- annotations that cannot be checked ------------------------------------------------------------


def test_unresolvable_string_annotations_warn_once_and_the_rest_is_checked():
    namespace: dict[str, object] = {"torch": torch, "Float": Float, "Tensor": Tensor}
    exec(  # noqa: S102 - a module whose annotations are strings, one of them unresolvable
        textwrap.dedent(
            """
            from __future__ import annotations
            def f(x: Float[Tensor, "n"], cfg: MissingConfig, y: "b t d") -> Float[Tensor, "n"]:
                return x
            """
        ),
        namespace,
    )
    f = checked(namespace["f"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f(torch.zeros(3), object(), object())
        f(torch.zeros(3), object(), object())
    messages = [str(w.message) for w in caught if issubclass(w.category, ShapeCheckWarning)]
    assert len(messages) == 1, messages
    assert "parameter 'cfg': its annotation 'MissingConfig' does not resolve (NameError" in messages[0]
    assert "parameter 'y': its annotation 'b t d' is a plain string, not a type" in messages[0]
    with pytest.raises(ShapeCheckError, match="parameter x"):  # the resolvable string is checked
        f(torch.zeros(3, 1), object(), object())


def test_future_annotations_are_resolved_and_checked():
    namespace: dict[str, object] = {}
    exec(  # noqa: S102
        "from __future__ import annotations\nfrom jaxtyping import Int\nfrom torch import Tensor\n"
        "def f(x: Int[Tensor, 'n'], y: Int[Tensor, 'n']) -> Int[Tensor, 'n']:\n    return x\n",
        namespace,
    )
    f = checked(namespace["f"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(torch.zeros(3, dtype=torch.long), torch.zeros(3, dtype=torch.long))
        with pytest.raises(ShapeCheckError, match="axis 0: expected n=3, got 4"):
            f(torch.zeros(3, dtype=torch.long), torch.zeros(4, dtype=torch.long))


def test_top_level_names_are_lazy_and_the_same_objects():
    assert shapecheck.checked is checked
    assert shapecheck.ShapeCheckError is ShapeCheckError
    assert shapecheck.runtime.checking is checking
    code = "import sys, shapecheck; print(sorted(m for m in ('torch', 'jaxtyping', 'beartype') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(shapecheck.__file__))}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_integer_tensors_and_classes_with_static_methods():
    @checked
    class Tokens:
        @staticmethod
        def count(ids: Int[Tensor, "b t"]) -> int:
            return ids.numel()

    assert Tokens.count(torch.zeros(2, 3, dtype=torch.long)) == 6
    with pytest.raises(ShapeCheckError, match="count"):
        Tokens.count(torch.zeros(2, 3))
