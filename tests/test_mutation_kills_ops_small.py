"""Op-rule behaviour that mutation testing found unpinned in the small ``ops/`` modules
(``library_masks``, ``frequencies``, ``scalars``, ``sequences``, ``training``; eleventh session,
benchmarks/README.md).

Black-box through the engine, like tests/test_mutation_kills_ops.py: each test analyses a small
function and asserts the shape, dtype, tags or conflicts the engine infers; shapes and dtypes are
what torch 2.13 gives (each checked in a scratch script); where torch raises, the test asserts an
unknown value, never a made-up shape.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import pytest

from shapecheck.engine.domain.tags import DictValue, PaddingTag, Repeated
from shapecheck.engine.domain.values import (
    UNKNOWN,
    FloatValue,
    IntValue,
    ModuleValue,
    ObjectValue,
    Opaque,
    PositionTag,
    Scale,
    ShapeValue,
    TensorValue,
    TupleValue,
)
from shapecheck.engine.ops import frequencies
from shapecheck.engine.symbolic.dims import Dim, sym

from test_engine_ops import HEADER, _shape, analyze_src, run_of
from test_mutation_kills_ops import _code, _run

INDEX = re.compile(r"i\d+-1")  # a loop index: i - 1 of a fresh positive symbol (it may be 0)


# --- training.py ---------------------------------------------------------------------------------


def test_training_a_module_method_of_its_own_is_run_not_taken_as_returning_the_module() -> None:
    """``training.returns_itself``'s ``name not in receiver.cls.methods``: an ``nn.Module`` subclass
    with its own ``half`` is not the module again (its method runs: torch gives the method's tensor);
    ``to_empty`` (not defined by the class) returns the module itself, as torch does, so the model
    called afterwards is the same model."""
    values, conflicts = _run(
        """
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 2)

            def half(self):
                return torch.zeros(2, 3)

            def forward(self, x):
                return self.fc(x)


        def f():
            a = Net().half()
            n = Net()
            b = n.to_empty(device="cpu")
            c = n.float()
            y = b(torch.randn(5, 4))
        """
    )
    assert conflicts == []
    assert isinstance(values["a"], TensorValue) and (_shape(values["a"]), values["a"].dtype) == ("(2, 3)", "float")
    assert isinstance(values["b"], ObjectValue) and values["b"].ident is values["n"].ident
    assert isinstance(values["c"], ObjectValue) and values["c"].ident is values["n"].ident
    assert (_shape(values["y"]), values["y"].dtype) == ("(5, 2)", "float")


# --- library_masks.py ----------------------------------------------------------------------------


def test_library_masks_relative_imports_and_the_tag_made_at_the_call() -> None:
    """``library_masks.library_op``: a mask builder imported relatively from inside transformers
    (``from ...masking_utils import``, ``from ..modeling_attn_mask_utils import``, both builders of
    that module) is the padding-mask op, like the absolute import; a module whose name only contains
    one (``.Xmasking_utils``) and a causal builder are unknown calls ("maybe positional").
    ``_padding_mask``: the ``PaddingTag`` is made at the builder's call."""
    values, conflicts = _run(
        """
        from ...masking_utils import create_bidirectional_mask
        from ..modeling_attn_mask_utils import _prepare_4d_attention_mask, _prepare_4d_attention_mask_for_sdpa
        from transformers.modeling_attn_mask_utils import _prepare_4d_attention_mask as absolute
        from .Xmasking_utils import create_bidirectional_mask as other
        from transformers.masking_utils import create_causal_mask


        def f(x: Float[Tensor, "b t d"], am):
            a = create_bidirectional_mask(config=None, input_embeds=x, attention_mask=am)
            b = _prepare_4d_attention_mask(am, x.dtype)
            c = _prepare_4d_attention_mask_for_sdpa(am, x.dtype, 5)
            d = absolute(am, x.dtype)
            e = other(config=None, input_embeds=x, attention_mask=am)
            g = create_causal_mask(config=None, input_embeds=x, attention_mask=am)
        """
    )
    assert conflicts == []
    calls = {
        "a": "create_bidirectional_mask(config=None, input_embeds=x, attention_mask=am)",
        "b": "_prepare_4d_attention_mask(am, x.dtype)",
        "c": "_prepare_4d_attention_mask_for_sdpa(am, x.dtype, 5)",
        "d": "absolute(am, x.dtype)",
    }
    for name, call in calls.items():
        mask = values[name]
        assert [type(tag).__name__ for tag in mask.tags] == ["PaddingTag"], name
        assert (_code(mask.node), _code(mask.tag(PaddingTag).node), mask.shape, mask.dtype) == (call, call, None, None), name
    for name in ("e", "g"):
        assert isinstance(values[name], TensorValue) and not values[name].has(PaddingTag), name
        assert values[name].has(PositionTag), name


# --- frequencies.py ------------------------------------------------------------------------------


def test_frequencies_slope_ratio_of_numbers_written_with_other_bases() -> None:
    """``frequencies.slope_ratio``: two slopes that are both numbers but written over other bases
    (a constant base kept as a factor) are compared by value (actual / expected, not the product);
    a symbolic slope against a number is undecided (None, no arithmetic on None)."""
    four = Scale(1.0, ((Dim.const(4), Fraction(1)),))
    assert frequencies.slope_ratio(four, Scale(2.0)) == 2.0
    assert frequencies.slope_ratio(Scale(2.0), four) == 0.5
    assert frequencies.slope_ratio(frequencies.expected_slope(sym("d")), frequencies.expected_slope(Dim.const(64))) is None


def test_frequencies_tags_name_where_the_frequency_was_made() -> None:
    """``frequencies.combine`` / ``_power`` / ``exp`` / ``reciprocal``: a ``LogLinear`` or ``Phase``
    tag keeps the node of the ``exp`` or power that made the frequency (SC304 reports there):
    ``10000 ** (...)`` and ``torch.pow`` at the power, ``exp`` at the exp, ``1 / f`` and
    ``torch.reciprocal(f)`` at f's power, ``position * div_term`` at the exp, ``position / f`` at f's
    power."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"]):
            B, T, D = x.shape
            p = torch.arange(0, D, 2)
            grows = 10000.0 ** (p / D)
            grows_pow = torch.pow(10000.0, p / D)
            falls = 1.0 / grows
            falls_fn = torch.reciprocal(grows)
            div_term = torch.exp(p * (-math.log(10000.0) / D))
            position = torch.arange(0, T).unsqueeze(1).float()
            ang = position * div_term
            ang_div = position / grows
        """
    )
    assert conflicts == []

    def made_at(name, kind):
        return [_code(tag.node) for tag in values[name].tags if isinstance(tag, kind)]

    power, exp = "10000.0 ** (p / D)", "torch.exp(p * (-math.log(10000.0) / D))"
    assert made_at("grows", frequencies.LogLinear) == [power]
    assert made_at("grows_pow", frequencies.LogLinear) == ["torch.pow(10000.0, p / D)"]
    assert made_at("falls", frequencies.LogLinear) == made_at("falls_fn", frequencies.LogLinear) == [power]
    assert made_at("div_term", frequencies.LogLinear) == [exp]
    assert made_at("ang", frequencies.Phase) == [exp]
    assert made_at("ang_div", frequencies.Phase) == [power]


def test_frequencies_what_is_no_index_or_no_phase() -> None:
    """``frequencies.arange_index``: an ``arange`` whose start or step the engine cannot read as a
    number (a 0-d tensor, which torch takes) counts no index; ``combine``: a position plus (not
    times) a frequency is no phase, in either order; ``_power``: a base of 0 has no logarithm (no
    frequency), a base of 1 or 1/2 does (slopes 0 and ln(1/2) * 2 / d)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"]):
            B, T, D = x.shape
            by_tensor = torch.arange(0, D, torch.tensor(2))
            from_tensor = torch.arange(torch.tensor(0), D, 2)
            p = torch.arange(0, D, 2)
            div_term = torch.exp(p * (-math.log(10000.0) / D))
            position = torch.arange(0, T).unsqueeze(1).float()
            added = position + div_term
            added_r = div_term + position
            zero = 0.0 ** (p / D)
            one = 1.0 ** (p / D)
            half = 0.5 ** (p / D)
        """
    )
    assert conflicts == []

    def kinds(name):
        return [type(tag).__name__ for tag in values[name].tags if isinstance(tag, frequencies.FREQUENCY_TAGS)]

    assert (kinds("by_tensor"), kinds("from_tensor"), kinds("p")) == ([], [], ["IndexLinear"])
    assert (kinds("added"), kinds("added_r"), kinds("zero")) == ([], [], [])
    one = values["one"].tag(frequencies.LogLinear).slope
    half = values["half"].tag(frequencies.LogLinear).slope
    assert (one.coef, [(str(b), e) for b, e in one.factors]) == (0.0, [("d", -1)])
    assert (half.coef, [(str(b), e) for b, e in half.factors]) == (pytest.approx(2 * math.log(0.5)), [("d", -1)])


# --- scalars.py ----------------------------------------------------------------------------------


def test_scalars_math_log_of_one_of_a_fraction_and_of_no_number() -> None:
    """``scalars._math_log``: ``log(1)`` is 0 and ``log(0.5)`` negative (known numbers, not only
    those above 1); ``log`` of a tensor of many elements (torch raises) is unknown, of a value the
    engine cannot see a number of unknown value; neither raises inside the rule."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], n):
            l_tensor = math.log(x)
            l_unseen = math.log(n)
            l_half = math.log(0.5)
            l_one = math.log(1)
        """
    )
    assert conflicts == []
    assert values["l_tensor"] is UNKNOWN and isinstance(values["l_unseen"], Opaque)
    assert isinstance(values["l_half"], FloatValue) and values["l_half"].scale == Scale(math.log(0.5))
    assert isinstance(values["l_one"], FloatValue) and values["l_one"].scale == Scale(0.0)


def test_scalars_int_of_a_size_to_the_power_0_0_and_of_a_root() -> None:
    """``scalars._float_to_int``: ``int(float(d) ** 0.0)`` is 1 (a real number ``d ** 0``: that
    factor is in neither the numerator nor the denominator; ``** 0`` of an int is the size 1 without
    reaching it); ``int(math.sqrt(d))`` is no int the engine can name (unknown,
    no arithmetic on a missing numerator)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"]):
            B, T, D = x.shape
            one = int(float(D) ** 0.0)
            root = int(math.sqrt(D))
        """
    )
    assert conflicts == []
    assert isinstance(values["one"], IntValue) and str(values["one"].dim) == "1"
    assert values["root"] is UNKNOWN


def test_scalars_min_max_abs_of_a_value_the_engine_cannot_see() -> None:
    """``scalars._minmax``: with an argument that is no int the engine reads, ``min`` / ``abs`` are
    unknown (the rule does not call ``min`` on None). A named value the engine cannot see is read
    as a size, as ``torch.zeros(n)`` reads it: ``min(n, 3)`` is a size of its own."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], n):
            m = min(n, 3)
            a = abs(n)
            u = min(g(x), 3)
            known = max(2, 3)
        """
    )
    assert conflicts == []
    assert (values["a"], values["u"]) == (UNKNOWN, UNKNOWN)
    assert isinstance(values["m"], IntValue) and str(values["m"].dim) == "min(3,n)"
    assert isinstance(values["known"], IntValue) and str(values["known"].dim) == "3"


def test_scalars_super_only_without_arguments_in_a_method() -> None:
    """``scalars._super``: ``super()`` in a method is the instance seen through its class's parents
    (``B.forward``: torch gives ``x * 2``, ``(b, t, d)``); ``super(B, self)`` starts the lookup after
    ``B`` (torch runs ``A.forward``, ``(b, t)``), not from the method's own class (which would give
    ``B.forward``'s ``(b, t, d)``); ``super()`` outside a method (a plain function, module level:
    torch raises) is unknown and raises nothing in the rule."""
    src = HEADER + """
class A(nn.Module):
    def forward(self, x):
        return x.sum(-1)


class B(A):
    def forward(self, x):
        return x * 2


class C(B):
    def forward(self, x):
        skipped = super(B, self).forward(x)
        parent = super().forward(x)
        return parent


at_module = super()


def g():
    s = super()
    return s


def f(x: Float[Tensor, "b t d"]):
    out = C()(x)
    plain = g()
"""
    facts = analyze_src(src)
    assert facts.internal_errors == [] and facts.conflicts == []
    inlined = {a.name: a.value for a in run_of(facts, "C.forward", inlined=True).assignments}
    assert (_shape(inlined["skipped"]), inlined["skipped"].dtype) == ("(b, t)", "float")
    assert (_shape(inlined["parent"]), inlined["parent"].dtype) == ("(b, t, d)", "float")
    assert {a.name: a.value for a in run_of(facts, "g").assignments}["s"] is UNKNOWN
    assert {a.name: a.value for a in run_of(facts, "f").assignments}["plain"] is UNKNOWN


def test_scalars_getattr_with_and_without_a_default() -> None:
    """``scalars._getattr``: an attribute the object has wins over the default (a size, a layer);
    a missing one gives the third argument (``getattr(c, "depth", 4)`` is 4, as in Python), none
    without one (Python raises); a name the engine cannot read is unknown; an unseen configuration's
    attribute with an int default is a size named after it."""
    values, conflicts = _run(
        """
        class Cfg:
            def __init__(self):
                self.width = 8
                self.layer = nn.Linear(4, 8)


        def f(x: Float[Tensor, "b t d"], n, cfg):
            c = Cfg()
            width = getattr(c, "width", 4)
            width_n = getattr(c, "width", n)
            layer = getattr(c, "layer", 4)
            depth = getattr(c, "depth", 4)
            missing = getattr(c, "depth")
            unread = getattr(cfg, n)
            head_dim = getattr(cfg, "head_dim", 64)
        """
    )
    assert conflicts == []
    sizes = {name: str(values[name].dim) for name in ("width", "width_n", "depth", "head_dim") if isinstance(values[name], IntValue)}
    assert sizes == {"width": "8", "width_n": "8", "depth": "4", "head_dim": "cfg.head_dim"}
    assert isinstance(values["layer"], ModuleValue) and values["layer"].kind == "Linear"
    assert (values["missing"], values["unread"]) == (UNKNOWN, UNKNOWN)


def test_scalars_arithmetic_on_values_of_an_unseen_configuration() -> None:
    """``scalars.scalar_binary``: ``//`` and ``%`` of two values the engine cannot see are sizes
    (the head-split arithmetic); ``+ - *`` of them are not: such a value may be a float
    (``config.mlp_ratio``), so ``*`` is kept as a real number and ``+`` / ``-`` are unknown (a size
    there would claim an int torch may not get)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], cfg):
            quotient = cfg.a // cfg.b
            remainder = cfg.a % cfg.b
            product = cfg.a * cfg.b
            total = cfg.a + cfg.b
            difference = cfg.a - cfg.b
        """
    )
    assert conflicts == []
    assert [str(values[name].dim) for name in ("quotient", "remainder") if isinstance(values[name], IntValue)] == [
        "cfg.a//cfg.b", "cfg.a%cfg.b"
    ]
    assert isinstance(values["product"], FloatValue)
    assert [(str(b), e) for b, e in values["product"].scale.factors] == [("cfg.a", 1), ("cfg.b", 1)]
    assert (values["total"], values["difference"]) == (UNKNOWN, UNKNOWN)


def test_scalars_powers_and_sums_of_numbers() -> None:
    """``scalars.scalar_binary``: ``(-2.0) ** 0.5`` (complex in Python) and ``10.0 ** 400`` (Python
    raises OverflowError) are unknown, not a number; a size to a power that is a small fraction is
    that root (``d ** (1/3)``), to a power that is none (``1/65``) unknown (not ``d ** (1/64)``), a
    number to any power its value; a symbolic number plus a number is unknown (no arithmetic on
    None)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"]):
            B, T, D = x.shape
            negative_root = (-2.0) ** 0.5
            overflow = 10.0 ** 400
            third = float(D) ** (1 / 3)
            odd_root = float(D) ** (1 / 65)
            number = 2.0 ** (1 / 65)
            plus = float(D) + 1.0
        """
    )
    assert conflicts == []
    assert (values["negative_root"], values["overflow"], values["odd_root"], values["plus"]) == (UNKNOWN,) * 4
    assert [(str(b), e) for b, e in values["third"].scale.factors] == [("d", Fraction(1, 3))]
    assert values["number"].scale == Scale(2.0 ** (1 / 65))


def test_scalars_a_size_extended_by_a_tuple_keeps_its_leading_axes_and_source() -> None:
    """``scalars._concat_sizes``: ``p.size()[:-1] + (2, 3)`` of a tensor with leading axes of
    unknown number keeps them (torch: ``(*batch, 2, 3)``); ``z.size()[:-1] + ()`` still names ``z``,
    so unpacking it gives ``z`` its leading sizes (torch: ``z`` is 3-D, two names for its first two
    axes)."""
    values, conflicts = _run(
        """
        def f(p: Float[Tensor, "*batch d"], z):
            extended = p.size()[:-1] + (2, 3)
            b2, t2 = z.size()[:-1] + ()
            seen = z
        """
    )
    assert conflicts == []
    assert isinstance(values["extended"], ShapeValue) and str(values["extended"].shape) == "(*, 2, 3)"
    assert _shape(values["seen"]) == "(b2, t2, _)"


# --- sequences.py --------------------------------------------------------------------------------


def test_sequences_map_calls_each_item_at_the_map_call() -> None:
    """``sequences._map``: the function is called once per item (a known tuple) or once for every
    item (a sequence of unknown length: ``x.unbind(1)`` over a symbolic axis), at the ``map`` call
    (the result's node), with no keyword arguments (a lambda's default fills its parameter; a layer
    reads its input by position). Shapes are torch's: ``Linear(d, 2)`` of ``(b, t, d)`` and ``(t,
    d)``, of each ``(b, d)`` slice."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], md: Float[Tensor, "t d"], n):
            B, T, D = x.shape
            lin = nn.Linear(D, 2)
            known = tuple(map(lin, (x, md)))
            many = map(lin, x.unbind(1))
            sig = tuple(map(torch.sigmoid, (x, md)))
            sig_many = map(torch.sigmoid, x.unbind(1))
            doubled = tuple(map(lambda t, s=2: t * s, (x, md)))
            for v in map(lambda k, s=2: k * s, range(n)):
                twice = v
        """
    )
    assert conflicts == []
    assert [_shape(item) for item in values["known"].items] == ["(b, t, 2)", "(t, 2)"]
    assert isinstance(values["many"], Repeated) and _shape(values["many"].element) == "(b, 2)"
    at_map = {
        "sig": "map(torch.sigmoid, (x, md))",
        "sig_many": "map(torch.sigmoid, x.unbind(1))",
    }
    assert [_code(item.node) for item in values["sig"].items] == [at_map["sig"]] * 2
    assert [_shape(item) for item in values["sig"].items] == ["(b, t, d)", "(t, d)"]
    assert isinstance(values["sig_many"], Repeated) and _code(values["sig_many"].element.node) == at_map["sig_many"]
    assert _shape(values["sig_many"].element) == "(b, d)"
    assert [_shape(item) for item in values["doubled"].items] == ["(b, t, d)", "(t, d)"]
    assert re.fullmatch(r"2\*i\d+-2", str(values["twice"].dim))


def test_sequences_dict_and_ordered_dict_forms_the_engine_reads() -> None:
    """``sequences._dict`` / ``_ordered_dict``: ``OrderedDict(fc1=..., act=...)`` and
    ``OrderedDict()`` are dicts of their keywords; ``dict(*pairs)``, ``dict(**kw)``,
    ``OrderedDict(**kw)`` / ``(*pairs)`` / ``(pairs)`` of unknown pairs, two positional arguments
    (Python raises), pairs plus keywords (not read: the keywords would be lost), a pair of three items
    (Python raises), a non-string key (``nn.Sequential`` raises) and an unknown pair are unknown."""
    values, conflicts = _run(
        """
        from collections import OrderedDict


        def f(x: Float[Tensor, "b t d"], pairs, kw):
            lin = nn.Linear(4, 2)
            d_star = dict(*pairs)
            d_kw = dict(**kw)
            o_kw = OrderedDict(**kw)
            o_star = OrderedDict(*pairs)
            o_two = OrderedDict([("a", lin)], [("b", lin)])
            o_named = OrderedDict(fc1=lin, act=nn.GELU())
            o_empty = OrderedDict()
            o_unknown = OrderedDict(pairs)
            o_mixed = OrderedDict([("a", lin)], b=lin)
            o_three = OrderedDict([("a", lin, lin)])
            o_int_key = OrderedDict([(1, lin)])
            o_unknown_pair = OrderedDict([pairs])
        """
    )
    assert conflicts == []
    named = values["o_named"]
    assert isinstance(named, DictValue) and [(key, getattr(value, "kind", None)) for key, value in named.entries] == [
        ("fc1", "Linear"), ("act", "GELU")
    ]
    assert isinstance(values["o_empty"], DictValue) and values["o_empty"].entries == ()
    unknown = ("d_star", "d_kw", "o_kw", "o_star", "o_two", "o_unknown", "o_mixed", "o_three", "o_int_key", "o_unknown_pair")
    assert {name: values[name] for name in unknown} == {name: UNKNOWN for name in unknown}


def test_sequences_enumerate_index_may_be_zero() -> None:
    """``sequences._enumerate`` (an engine fix, like 28d9e23 for ``range``): ``enumerate`` counts
    from 0, so ``j == 0`` is undecided in a loop body the engine runs once for every item (it was
    False: the index was a fresh size, at least 1), and ``in_d = dim_in if j == 0 else dim_hidden``
    is not ``dim_hidden``. The index is ``i - 1`` of a fresh symbol, one for every item, over a
    known tuple and over a sequence of unknown length; the items are the sequence's (``x.unbind(1)``:
    ``(b, d)`` each, as torch gives)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], n, dim_in: int = 1024, dim_hidden: int = 512):
            for j, t in enumerate((n, n)):
                first = j == 0
                index = j
                in_d = dim_in if j == 0 else dim_hidden
            for k, row in enumerate(x.unbind(1)):
                k_index = k
                k_row = row
            pairs = enumerate(x.unbind(1))
        """
    )
    assert conflicts == []
    assert values["first"] is UNKNOWN
    assert str(getattr(values["in_d"], "dim", "?")) != "512"
    assert INDEX.fullmatch(str(values["index"].dim)) and INDEX.fullmatch(str(values["k_index"].dim))
    assert _shape(values["k_row"]) == "(b, d)"
    pairs = values["pairs"]
    assert isinstance(pairs, Repeated) and isinstance(pairs.element, TupleValue)
    index, row = pairs.element.items
    assert isinstance(index, IntValue) and str(index.dim) == "pairs-1" and _shape(row) == "(b, d)"


def test_scalars_range_index_is_named_i_minus_1() -> None:
    """``scalars._range``: ``for k in range(n)`` gives ``k`` as ``i<n> - 1`` of a fresh symbol (an
    index that may be 0), and ``k + 1`` is that symbol (the count of items so far)."""
    values, conflicts = _run(
        """
        def f(x: Float[Tensor, "b t d"], n):
            for k in range(n):
                index = k
                count = k + 1
        """
    )
    assert conflicts == []
    assert INDEX.fullmatch(str(values["index"].dim))
    assert re.fullmatch(r"i\d+", str(values["count"].dim))
