"""jaxtyping shape strings: the grammar of jaxtyping 0.3, shapes from specs, dtype names."""

from __future__ import annotations

import pytest

from shapecheck.engine.symbolic.annotations import (
    DTYPE_OF,
    Anonymous,
    Expr,
    Fixed,
    Named,
    Variadic,
    dtype_of,
    parse_dims,
    to_shape,
)
from shapecheck.engine.symbolic.dims import Truth, const, equal, sym
from shapecheck.engine.symbolic.shapes import Shape, is_anonymous

b, t, d, h = (sym(n) for n in ("b", "t", "d", "h"))


# --- parse_dims --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("b h t d_k", [Named("b"), Named("h"), Named("t"), Named("d_k")]),
        ("*batch d", [Variadic("batch"), Named("d")]),
        ("... d", [Variadic(), Named("d")]),
        ("*_ d", [Variadic(), Named("d")]),
        ("_ t", [Anonymous(), Named("t")]),
        ("_seq t", [Anonymous(), Named("t")]),
        ("#b t", [Named("b", broadcastable=True), Named("t")]),
        ("?b t", [Named("b", treepath=True), Named("t")]),
        ("3 t", [Fixed(3), Named("t")]),
        ("#1 t", [Fixed(1, broadcastable=True), Named("t")]),
        ("rows=3 cols=4", [Fixed(3), Fixed(4)]),
        ("rows=b", [Named("b")]),
        ("#*batch d", [Variadic("batch", broadcastable=True), Named("d")]),
        ("", []),
        ("  b\tt\n", [Named("b"), Named("t")]),
        ("*", [Variadic("")]),
        ("1_000", [Fixed(1000)]),
    ],
)
def test_parse_dims(spec, expected):
    assert parse_dims(spec) == expected


@pytest.mark.parametrize(
    "spec, dim",
    [
        ("3*d", 3 * d),
        ("d+1", d + 1),
        ("d-1", d - 1),
        ("d//2", d // 2),
        ("d % 2", None),  # a space separates axes: "d", "%", "2" -> "%" is not an axis
        ("(d+1)*2", 2 * d + 2),
        ("-d+4", 4 - d),
        ("d**2", d * d),
        ("h*d//h", d),
        ("min(a,b)", None),
        ("config.d", None),
        ("d/0", None),
        ("d//0", None),
        ("{n}+1", None),
        ("d+'x'", None),
        ("d+1.5", None),
        ("d+True", None),
        ("d==1", None),
        ("d**-1", None),
        ("d**100", None),
        ("lambda:1", None),
        ("d+", None),
    ],
)
def test_symbolic_axes(spec, dim):
    parsed = parse_dims(spec)
    if dim is None:
        assert parsed is None
    else:
        assert parsed == [Expr(dim, spec)]


def test_symbolic_true_division_is_exact():
    (spec,) = parse_dims("d/2")  # type: ignore[misc]
    assert isinstance(spec, Expr)
    assert spec.dim * 2 == d  # jaxtyping compares d/2 == size: a match means it is exact


def test_broadcastable_symbolic_axis():
    assert parse_dims("#d+1") == [Expr(d + 1, "d+1", broadcastable=True)]


_JAXTYPING_REJECTS = [
    "b, t",
    "b#",
    "b ...x",
    "*a *b",
    "... *b",
    "##b",
    "**b",
    "__b",
    "??b",
    "*4",
    "_4",
    "?4",
    "#_",
    "_d+1",
    "*d+1",
    "?d+1",
]
_JAXTYPING_ACCEPTS = ["b h t d_k", "*batch d", "... d", "_ t", "#b t", "?b t", "3 t", "rows=3 cols=4", "b t 3*d", "#*batch d", "*", "d//2"]


def test_grammar_agrees_with_installed_jaxtyping():
    jaxtyping = pytest.importorskip("jaxtyping")
    for spec in _JAXTYPING_REJECTS:
        with pytest.raises(ValueError):
            jaxtyping.Shaped[object, spec]
        assert parse_dims(spec) is None, spec
    for spec in _JAXTYPING_ACCEPTS:
        jaxtyping.Shaped[object, spec]
        assert parse_dims(spec) is not None, spec


@pytest.mark.parametrize(
    "spec",
    [
        "b, t",  # commas
        "b#",  # old broadcast syntax
        "b ...x",
        "*a *b",
        "... *b",
        "##b",
        "**b",
        "__b",
        "??b",
        "*4",
        "_4",
        "?4",
        "#_",
        "_d+1",
        "*d+1",
        "?d+1",
        "-1",  # jaxtyping accepts it, but no axis has size -1
        "d+(",  # jaxtyping fails only when checking
    ],
)
def test_rejected_specs(spec):
    assert parse_dims(spec) is None


def test_non_string():
    assert parse_dims(None) is None  # type: ignore[arg-type]
    assert parse_dims(3) is None  # type: ignore[arg-type]


def test_no_eval():
    # would raise or have side effects under eval; we only parse
    assert parse_dims("__import__('os').getpid()") is None
    assert parse_dims("x.__class__") is None


# --- to_shape ------------------------------------------------------------------------------------------


def test_to_shape_named():
    assert to_shape(parse_dims("b h t d_k")) == Shape.of(b, h, t, sym("d_k"))
    assert to_shape(parse_dims("3 t")) == Shape.of(3, t)
    assert to_shape(parse_dims("b t 3*d")) == Shape.of(b, t, 3 * d)
    assert to_shape(parse_dims("")) == Shape(())


def test_to_shape_bindings():
    shape = to_shape(parse_dims("b t d_model"), {"d_model": const(512)})
    assert shape == Shape.of(b, t, 512)
    shape = to_shape(parse_dims("b t 3*d_model"), {"d_model": sym("n_embd")})
    assert shape == Shape.of(b, t, 3 * sym("n_embd"))
    shape = to_shape(parse_dims("d//h"), {"d": const(512), "h": const(8)})
    assert shape == Shape.of(64)


def test_to_shape_variadic():
    assert to_shape(parse_dims("*batch d")) == Shape.of(d, variadic=True)
    assert to_shape(parse_dims("... d")) == Shape.of(d, variadic=True)
    assert to_shape(parse_dims("...")) == Shape((), variadic=True)
    assert to_shape(parse_dims("b *rest")) is None
    assert to_shape(parse_dims("b ... d")) is None
    assert to_shape(None) is None


def test_to_shape_anonymous_dims_are_fresh_and_unrelated():
    shape = to_shape(parse_dims("_ _ t"))
    assert shape is not None and shape.rank == 3
    first, second = shape.dims[0], shape.dims[1]
    assert is_anonymous(first) and is_anonymous(second)
    assert first != second
    assert equal(first, second) is Truth.UNKNOWN
    assert equal(first, t) is Truth.UNKNOWN
    assert equal(first, const(7)) is Truth.UNKNOWN
    assert str(shape) == "(_, _, t)"
    again = to_shape(parse_dims("_ _ t"))
    assert again is not None and again.dims[0] != first


def test_to_shape_broadcastable_is_unknown():
    shape = to_shape(parse_dims("#b t"))
    assert shape is not None
    assert is_anonymous(shape.dims[0]) and shape.dims[0] != b
    assert shape.dims[1] == t
    shape = to_shape(parse_dims("#3 t"))
    assert shape is not None and is_anonymous(shape.dims[0])


def test_to_shape_treepath_names_unify_within_one_annotation():
    shape = to_shape(parse_dims("?n ?n m"))
    assert shape is not None
    assert shape.dims[0] == shape.dims[1]
    assert shape.dims[0] != sym("n")
    other = to_shape(parse_dims("?n"))
    assert other is not None and other.dims[0] != shape.dims[0]


# --- dtypes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("Float", "float"),
        ("Float32", "float"),
        ("Float16", "float"),
        ("BFloat16", "float"),
        ("Float64", "float"),
        ("Float8e4m3fn", "float"),
        ("Int", "int"),
        ("Int8", "int"),
        ("Int64", "int"),
        ("UInt8", "int"),
        ("UInt", "int"),
        ("Integer", "int"),
        ("Bool", "bool"),
        ("Complex", None),
        ("Complex64", None),
        ("Num", None),
        ("Shaped", None),
        ("Real", None),
        ("Inexact", None),
        ("Key", None),
        ("Long", None),  # not a jaxtyping name
        ("jaxtyping.Float32", "float"),
        ("jaxtyping._array_types.Bool", "bool"),  # only the last part of a dotted name counts
        ("nonsense", None),
    ],
)
def test_dtype_of(name, expected):
    assert dtype_of(name) == expected


def test_dtype_table_matches_installed_jaxtyping():
    jaxtyping = pytest.importorskip("jaxtyping")
    # every dtype name jaxtyping exports is in the table (the table may know a few more, such as
    # Float4e2m1fn, exported only by some versions)
    for name in dir(jaxtyping):
        obj = getattr(jaxtyping, name)
        if isinstance(obj, type) and hasattr(obj, "dtypes") and name[0].isupper() and name != "AbstractDtype":
            assert name in DTYPE_OF, name


def test_fuzz_never_raises():
    import random

    rng = random.Random(0)
    alphabet = "bdt_h3 *#?.=+-/%()[]{},'\"\\x0123456789abc\t:;!@~`^&|<>"
    for _ in range(3000):
        spec = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        parsed = parse_dims(spec)
        if parsed is not None:
            to_shape(parsed)


def test_pathological_expressions():
    assert parse_dims("(" * 500 + "d" + ")" * 500) is None
    assert parse_dims("+".join(["d"] * 300)) is None
    assert parse_dims("d" + "*d" * 40) is None  # exponent cap: too complex, not a crash


# --- pinned by mutation testing (benchmarks/mutation_testing.py, symbolic/annotations.py) -------


def test_expression_axes_with_remainder_zeroth_power_and_unreadable_operands():
    assert parse_dims("b d%3") == [Named("b"), Expr(sym("d") % 3, "d%3")]
    assert parse_dims("b d**0") == [Named("b"), Expr(const(1), "d**0")]
    assert parse_dims("b d**x.y") is None  # an operand we cannot read: no shape, never a crash
    assert parse_dims("b x.y**2") is None


def test_expression_axes_have_size_caps():
    """At most 200 characters and 64 syntax nodes (a hostile annotation costs nothing)."""
    long_names = "x" * 98 + "+" + "y" * 101
    assert len(long_names) == 200 and parse_dims(long_names) == [Expr(sym("x" * 98) + sym("y" * 101), long_names)]
    assert parse_dims(long_names + "z") is None
    at_cap = "a+a" + "+1" * 19  # 64 nodes: Expression, 2 Names and their Load, 19 Constants, 20 BinOps and Adds
    over_cap = "a+a+a" + "+1" * 18  # 65 nodes
    assert parse_dims(at_cap) == [Expr(2 * sym("a") + 19, at_cap)]
    assert parse_dims(over_cap) is None


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("#* d", [Variadic("", broadcastable=True), Named("d")]),
        ("?* d", [Variadic("", treepath=True), Named("d")]),
        ("?*batch d", [Variadic("batch", treepath=True), Named("d")]),
        ("#*batch d", [Variadic("batch", broadcastable=True), Named("d")]),
        ("0 d", [Fixed(0), Named("d")]),  # a zero-size axis is a size
        ("b ?", None),  # a modifier with no name
    ],
)
def test_modifiers_of_unnamed_and_variadic_axes(spec, expected):
    assert parse_dims(spec) == expected
