"""Abstract values: what the interpreter knows about each Python value it meets.

The engine may know less, never something wrong. ``UNKNOWN`` is a value like any other; an
``Opaque`` is an unknown value with a name (a parameter such as ``config`` or ``d_model``) whose
attributes and integer uses become named symbols (``config.n_embd``), never guesses.

A ``TensorValue`` carries a shape, a dtype class and provenance tags that rules query (see
``Tag``). Tags are small frozen records keyed by kind; provenance is by identity (``ModuleIdent``),
never by variable name.
"""

from __future__ import annotations

from collections.abc import Sequence

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    import libcst as cst


class Value:
    """Base class of every abstract value."""

    __slots__ = ()

    def describe(self) -> str:
        return type(self).__name__


class _Unknown(Value):
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"

    def describe(self) -> str:
        return "unknown"


UNKNOWN: Value = _Unknown()


@dataclass(frozen=True, slots=True)
class Opaque(Value):
    """An unknown value that has a name: its attributes and integer uses are named symbols."""

    name: str

    def attribute(self, attr: str) -> "Opaque":
        return Opaque(f"{self.name}.{attr}")

    def item(self, index: int) -> "Opaque":
        return Opaque(f"{self.name}[{index}]")

    def as_dim(self) -> Dim:
        return Dim.sym(self.name)

    def describe(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class UnseenSizes(Opaque):
    """``x.shape`` of a value the engine cannot see (``past = cache['k'].shape[time_dim]``, the
    cache filled by code out of view): whatever ``x`` is, its items are integers. An item at a
    known position is the size named after it (``cache.shape[1]``, the same each time it is read);
    one at a position the engine cannot read is a size read at run time. So is every item of the
    shape of a call's result (``fetch().shape[1]``): two calls may give two sizes (``fresh``)."""

    fresh: bool = False

    def size(self, position: int) -> "IntValue | None":
        return None if self.fresh else IntValue(self.item(position).as_dim())


@dataclass(frozen=True, slots=True)
class OptionalNumber(Opaque):
    """A parameter declared a real number or None (``softcap: float | None = None``) given a value
    the engine cannot read. ``is None`` stays open, as for any named unknown; where it meets a tensor
    in arithmetic (``scores / softcap``) it is a number, since None would raise there."""


@dataclass(frozen=True, slots=True)
class ConstValue(Value):
    """A Python constant that is not a number the engine computes with: str, bool, None, Ellipsis."""

    value: Any

    def describe(self) -> str:
        return repr(self.value)


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a number was written down: the node a user would edit, and how to name it
    (``GPTConfig.n_head default``, ``GPTConfig(n_head=...)``)."""

    node: "cst.CSTNode"
    label: str


@dataclass(frozen=True, slots=True)
class IntValue(Value):
    """An integer, possibly symbolic (``d_model // n_heads``); ``origin`` where it was written, when
    it comes straight from a configuration default or a keyword argument."""

    dim: Dim
    origin: Origin | None = field(default=None, compare=False)

    def describe(self) -> str:
        return str(self.dim)


@dataclass(frozen=True, slots=True)
class Scale:
    """A positive or negative real number of the form ``coef * prod(base_i ** exp_i)``.

    Used for scale factors (``1 / math.sqrt(d_k)`` is ``Scale(1, ((d_k, -1/2),))``) and any other
    real arithmetic on dims. ``coef`` may be inf / -inf (``float("-inf")``).
    """

    coef: float = 1.0
    factors: tuple[tuple[Dim, Fraction], ...] = ()

    @staticmethod
    def of_dim(dim: Dim) -> "Scale":
        if dim.is_const:
            return Scale(float(dim.value))
        return Scale(1.0, ((dim, Fraction(1)),))

    def _combine(self, other: "Scale", sign: int) -> "Scale":
        powers: dict[Dim, Fraction] = dict(self.factors)
        for base, exponent in other.factors:
            powers[base] = powers.get(base, Fraction(0)) + sign * exponent
        coef = self.coef * other.coef if sign > 0 else _safe_div(self.coef, other.coef)
        return Scale(coef, tuple(sorted(((b, e) for b, e in powers.items() if e != 0), key=lambda p: str(p[0]))))

    def __mul__(self, other: "Scale") -> "Scale":
        return self._combine(other, 1)

    def __truediv__(self, other: "Scale") -> "Scale":
        return self._combine(other, -1)

    def power(self, exponent: Fraction) -> "Scale | None":
        if self.coef < 0 and exponent.denominator != 1:
            return None
        try:
            coef = float(self.coef) ** float(exponent)
        except (OverflowError, ZeroDivisionError):
            return None
        return Scale(coef, tuple((b, e * exponent) for b, e in self.factors))

    def integer_dim(self) -> Dim | None:
        """This number as a dim, when it is an integer coefficient times positive integer powers of
        dims (``config.intermediate_size * config.num_experts`` kept as a real number); a fraction,
        a root or a quotient gives None."""
        if not float(self.coef).is_integer() or not math.isfinite(self.coef):
            return None
        dim = Dim.const(int(self.coef))
        for base, exponent in self.factors:
            if exponent.denominator != 1 or exponent <= 0:
                return None
            dim = dim * base ** int(exponent)
        return dim

    @property
    def value(self) -> float | None:
        """The number, when every base is a known constant."""
        result = self.coef
        for base, exponent in self.factors:
            if not base.is_const:
                return None
            try:
                result *= float(base.value) ** float(exponent)
            except (OverflowError, ZeroDivisionError):
                return None
        return result

    @property
    def is_large_negative(self) -> bool:
        """-inf, or a finite number so negative that softmax gives it no weight (<= -1e4)."""
        return self.factors == () and self.coef <= -1e4

    def describe(self) -> str:
        if not self.factors:
            return _format_float(self.coef)
        parts = []
        for base, exponent in self.factors:
            text = str(base)
            # ``1/(d//h)``, ``(d//h)**(-1/4)``: a compound size or a fraction in brackets, as Python
            # reads it; a name stays bare (``1/head_dim``, ``1/config.head_dim``, ``window_size[0]**2``)
            grouped = text if _ATOM.fullmatch(text) else f"({text})"
            if exponent == Fraction(1, 2):
                parts.append(f"sqrt({text})")
            elif exponent == Fraction(-1, 2):
                parts.append(f"1/sqrt({text})")
            elif exponent == 1:
                parts.append(text)
            elif exponent == -1:
                parts.append(f"1/{grouped}")
            else:
                power = str(exponent) if exponent.denominator == 1 and exponent > 0 else f"({exponent})"
                parts.append(f"{grouped}**{power}")
        prefix = "" if self.coef == 1 else _format_float(self.coef) + "*"
        return prefix + "*".join(parts)


#: A size printed as one name or number: no operator inside, so no brackets are needed around it.
_ATOM = re.compile(r"[\w.\[\]]+")


def _safe_div(a: float, b: float) -> float:
    if b == 0:
        return math.inf if a > 0 else (-math.inf if a < 0 else math.nan)
    return a / b


def _format_float(number: float) -> str:
    if math.isinf(number):
        return "-inf" if number < 0 else "inf"
    if float(number).is_integer():
        return str(int(number))
    return f"{number:g}"


@dataclass(frozen=True, slots=True)
class FloatValue(Value):
    """A real number: a literal, ``math.sqrt(d_k)``, ``head_dim ** -0.5``, ``float("-inf")``;
    ``node``: the expression that computed it (the outermost one), when known."""

    scale: Scale
    node: "cst.CSTNode | None" = field(default=None, compare=False)

    def describe(self) -> str:
        return self.scale.describe()


@dataclass(frozen=True, slots=True)
class TupleValue(Value):
    """A tuple or list whose items are known (each itself possibly unknown)."""

    items: tuple[Value, ...]

    def describe(self) -> str:
        return "(" + ", ".join(item.describe() for item in self.items) + ")"


@dataclass(frozen=True, slots=True)
class ShapeValue(Value):
    """The result of ``x.shape`` / ``x.size()``: a torch.Size whose items are dims.

    It remembers where it came from, for the Hugging Face idiom
    ``x.view(x.size()[:-1] + (heads, head_dim))``: ``base`` is the tensor, ``dropped`` how many
    trailing dims were sliced off, ``extra`` the dims appended since.
    """

    shape: Shape | None
    source: "cst.CSTNode | None" = field(default=None, compare=False)  # the tensor expression
    base: "Value | None" = field(default=None, compare=False)
    dropped: int = 0
    extra: tuple[Dim, ...] = ()
    #: The sizes of other inputs that equal these on other paths, joined into them
    #: (``hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape``):
    #: read as these, unpacked each input's own (``EitherSizes``).
    also: tuple["ShapeValue", ...] = field(default=(), compare=False)

    def describe(self) -> str:
        return str(self.shape) if self.shape is not None else "size(?)"


@dataclass(frozen=True, slots=True)
class EitherSizes(Value):
    """The sizes of one input or another, by path: ``input_ids.size()`` on one and
    ``inputs_embeds.size()[:-1]`` on the other (Hugging Face's either-input idiom), joined. Only
    unpacking reads it (``batch_size, seq_length = input_shape`` says each input's shape on its own
    path); anything else sees an unknown value, as before the join kept the options."""

    options: tuple[ShapeValue, ...]


class ModuleIdent:
    """The identity of one module or parameter object: provenance compares these with ``is``.

    ``label`` is for messages only (``self.W_Q``), never for decisions.
    """

    __slots__ = ("label", "node")

    def __init__(self, label: str, node: "cst.CSTNode | None" = None) -> None:
        self.label = label
        self.node = node

    def __repr__(self) -> str:
        return f"<ModuleIdent {self.label}>"


# ----------------------------------------------------------------------------------------------
# Tags: provenance facts attached to tensors.


@dataclass(frozen=True, slots=True)
class ProjectionTag:
    """This tensor is (a slice of) the output of one projection module or parameter."""

    ident: ModuleIdent
    part: tuple[int | str, ...] = ()  # which piece of a fused projection (split / chunk / unbind index, or a feature slice by its text)
    source: "Value | None" = field(default=None, compare=False)  # the input tensor it projected
    node: "cst.CSTNode | None" = field(default=None, compare=False)  # the projecting call


@dataclass(frozen=True, slots=True)
class ScoresTag:
    """Attention scores: the result of query @ key^T (or its einsum), before softmax."""

    node: "cst.CSTNode"
    query: "TensorValue"
    key: "TensorValue"
    head_dim: Dim | None  # the contracted dim (d_k)
    key_axis: int | None = -1  # the axis over keys: -1 for q @ k^T; None when not written (einsum)


@dataclass(frozen=True, slots=True)
class ScaleTag:
    """Multiplied by a scalar: the accumulated factor, the node where it was applied, and where
    the factor was written (``origin``: ``self.scale = dim_head ** -0.5``) when one number applied
    once makes the whole factor: the place a user edits to change it."""

    factor: Scale | None  # None: a scalar the engine cannot read (a parameter, a buffer)
    node: "cst.CSTNode"
    origin: "cst.CSTNode | None" = field(default=None, compare=False)
    # When ``factor`` is None: the product of the factors the code wrote and the engine could read
    # (``q = self.q_norm(q) * dim_head ** -1`` wrote dim_head ** -1 after a norm's own gain).
    written: Scale | None = field(default=None, compare=False)
    # The code multiplied or divided this very tensor by a scalar (``q * scale`` with ``scale`` a
    # value the engine cannot read), as opposed to a sum that merely mixed a scaled value in.
    explicit: bool = field(default=False, compare=False)
    # The first factor written with its place (``origin``), kept through later applications: when
    # they cancel (softcapping's ``/ cap``, ``tanh``, ``* cap``) the factor is that one again, and
    # a finding about it lands where it was written.
    first: "tuple[Scale, cst.CSTNode] | None" = field(default=None, compare=False)

    @property
    def readable(self) -> Scale | None:
        """The factor, or what of it the code wrote in numbers the engine reads."""
        return self.factor if self.factor is not None else self.written


@dataclass(frozen=True, slots=True)
class MaskedTag:
    """Scores with a mask applied (masked_fill with a fill value, or an additive mask)."""

    node: "cst.CSTNode"
    mask: "TensorValue | None"
    fill: Scale | None  # the fill value for masked_fill; None for an additive mask
    blocked_when: bool | None  # masked_fill: positions where the mask is True are blocked
    causal: bool  # the mask applied is a causal (triangular) mask
    previous: "MaskedTag | None" = field(default=None, compare=False)  # a mask applied before this one

    def chain(self) -> "list[MaskedTag]":
        """This mask and every mask applied before it, latest first."""
        found: list[MaskedTag] = []
        tag: MaskedTag | None = self
        while tag is not None and len(found) < 32:
            found.append(tag)
            tag = tag.previous
        return found


@dataclass(frozen=True, slots=True)
class ProbsTag:
    """Softmax output: attention probabilities (``over_key_dim`` when softmax ran on the last dim)."""

    node: "cst.CSTNode"
    scores: "TensorValue"
    log: bool = False  # log_softmax: log-probabilities (losses, matching), never attention weights


@dataclass(frozen=True, slots=True)
class TriangleTag:
    """A triangular 0/1 or bool tensor from tril/triu (a causal-mask candidate).

    ``lower`` is True for tril. ``diagonal`` is the offset argument; ``negated`` counts ``~`` /
    ``== 0`` / ``logical_not`` applied since, so the True set can be worked out.
    """

    lower: bool
    diagonal: int | None
    node: "cst.CSTNode"
    negated: bool = False
    full_size: Dim | None = None  # the square size it was built with (max_len buffers)
    sliced: bool = False
    additive: bool = False  # a float mask with -inf where blocked (added to the scores)
    method_form: bool = False  # written x.triu(d) rather than torch.triu(x, d)

    @property
    def true_is_future(self) -> bool | None:
        """Whether the True entries are exactly the future positions (j > i)."""
        if self.diagonal is None:
            return None
        upper_strict = (not self.lower) and self.diagonal == 1
        lower_incl = self.lower and self.diagonal == 0
        if upper_strict:
            return not self.negated
        if lower_incl:
            return self.negated
        return None

    @property
    def true_is_allowed(self) -> bool | None:
        """Whether the True entries are exactly the positions a causal query may see (j <= i)."""
        future = self.true_is_future
        return None if future is None else not future


@dataclass(frozen=True, slots=True)
class PositionTag:
    """Positional information: a positional table/embedding (``table``) or a tensor it was added to."""

    node: "cst.CSTNode"
    kind: str  # "table" (a max_len x d buffer or embedding weight), "embedding" (lookup), "added",
    # "index" (position ids), "learned", "conv" (a zero-padded conv over tokens), "unknown" (maybe)
    full_length: Dim | None = None  # rows of the table (max_len) when known
    sliced: bool = False
    #: The sides of the grid these positions were laid out over (``torch.meshgrid`` of per-axis
    #: positions, ``(h, w)``), when they were: a 2-d grid flattened is ``h * w`` rows, one per patch.
    grid: tuple[Dim, ...] | None = None

    @property
    def flattened_grid(self) -> bool:
        """A table whose rows are the cells of its grid, flattened (``(h * w, d)``, or ``h * w``
        plus a few leading rows for class tokens): a table for images of that grid, not a
        maximum sequence length to cut."""
        if self.grid is None or self.full_length is None or len(self.grid) < 2:
            return False
        try:
            cells = self.grid[0]
            for side in self.grid[1:]:
                cells = cells * side
            extra = self.full_length - cells
        except ArithmeticError:  # DimTooComplex: no claim
            return False
        return extra.is_const and extra.value is not None and 0 <= extra.value <= MAX_EXTRA_ROWS


#: Rows a table may hold besides its grid's cells (class and register tokens).
MAX_EXTRA_ROWS = 4


#: Kinds of PositionTag that are positional information itself (not a stream it reached, nor a guess).
POSITIONAL_KINDS = ("table", "embedding", "learned")


def positional_features(tensor: "TensorValue") -> bool:
    """Positional information itself, as features: a positional table, a lookup of one, a learned
    per-position table, or floats computed from position ids alone (a sinusoidal encoding built
    from ``arange``: kind "index", float). Not a stream positions were added to, nor integer ids."""
    position = tensor.tag(PositionTag)
    if position is None:
        return False
    return position.kind in POSITIONAL_KINDS or (position.kind == "index" and tensor.dtype == "float")


@dataclass(frozen=True, slots=True)
class TokenEmbeddingTag:
    """The output of a token embedding lookup (nn.Embedding over token ids); ``width`` is the
    embedding dim, so that a rule can tell whether the last axis is still the feature axis."""

    node: "cst.CSTNode"
    width: Dim | None = None


TAG_KINDS = (
    ProjectionTag,
    ScoresTag,
    ScaleTag,
    MaskedTag,
    ProbsTag,
    TriangleTag,
    PositionTag,
    TokenEmbeddingTag,
)


@dataclass(frozen=True, slots=True)
class TensorValue(Value):
    """A tensor: shape (None = unknown), dtype class ("float" | "bool" | "int" | None) and tags.
    Final: the ``with_*`` methods build a ``TensorValue`` directly (``dataclasses.replace`` reads
    the fields anew on each call, and they are called for most ops)."""

    shape: Shape | None = None
    dtype: str | None = None
    tags: tuple[object, ...] = ()
    node: "cst.CSTNode | None" = field(default=None, compare=False)

    def tag(self, kind: type) -> Any:
        for item in self.tags:
            if type(item) is kind:
                return item
        return None

    def has(self, kind: type) -> bool:
        return any(type(item) is kind for item in self.tags)

    def with_tag(self, item: object) -> "TensorValue":
        kind = type(item)
        return TensorValue(self.shape, self.dtype, tuple(t for t in self.tags if type(t) is not kind) + (item,), self.node)

    def without(self, *kinds: type) -> "TensorValue":
        return TensorValue(self.shape, self.dtype, tuple(t for t in self.tags if type(t) not in kinds), self.node)

    def keep_only(self, *kinds: type) -> "TensorValue":
        return TensorValue(self.shape, self.dtype, tuple(t for t in self.tags if type(t) in kinds), self.node)

    def with_shape(self, shape: Shape | None) -> "TensorValue":
        return TensorValue(shape, self.dtype, self.tags, self.node)

    def with_dtype(self, dtype: str | None) -> "TensorValue":
        return TensorValue(self.shape, dtype, self.tags, self.node)

    @property
    def rank(self) -> int | None:
        return self.shape.rank if self.shape is not None else None

    def describe(self) -> str:
        return str(self.shape) if self.shape is not None else "tensor of unknown shape"


UNKNOWN_TENSOR = TensorValue()


def with_mask(tensor: TensorValue, tag: MaskedTag) -> TensorValue:
    """``tensor`` with one more mask applied (earlier masks stay reachable through ``previous``)."""
    earlier = tensor.tag(MaskedTag)
    if earlier is not None:
        tag = replace(tag, previous=earlier)
    return tensor.with_tag(tag)


# ----------------------------------------------------------------------------------------------
# Modules, objects, classes and functions.


@dataclass(eq=False)
class ModuleValue(Value):
    """An instance of a torch.nn layer the engine knows (``kind`` is its class name: "Linear").

    ``params`` holds its constructor arguments by name (``in_features``, ``out_features`` ...);
    ``ident`` is its identity for provenance; ``items`` the children of containers.
    """

    kind: str
    params: dict[str, Value]
    ident: ModuleIdent
    node: "cst.CSTNode | None" = None
    items: tuple[Value, ...] = ()
    named: dict[str, Value] = field(default_factory=dict)  # ModuleDict children by key
    repeated: bool = False  # items[0] stands for every child (built by a comprehension)
    copies: dict[int, Value] = field(default_factory=dict)  # repeated: the child at each index

    def param(self, name: str) -> Value:
        return self.params.get(name, UNKNOWN)

    def item(self, index: int | None) -> Value:
        """The child at ``index`` (None: any child). Children of a comprehension are alike but
        distinct modules: each index gets its own identity."""
        if not self.items:
            return UNKNOWN
        if self.repeated:
            if index is None:
                return self.items[0]
            if index not in self.copies:
                self.copies[index] = own_instance(self.items[0], index, f"{self.ident.label}[{index}]")
            return self.copies[index]
        if index is not None and -len(self.items) <= index < len(self.items):
            return self.items[index]
        return self.items[0] if len(self.items) == 1 else UNKNOWN

    def describe(self) -> str:
        return f"nn.{self.kind}"


@dataclass(eq=False)
class ObjectValue(Value):
    """An instance of a class defined in the analysed file (a user nn.Module or a config)."""

    cls: "ClassInfo"
    attrs: dict[str, Value]
    ident: ModuleIdent
    context: Any = None  # the analysis context that built it (bindings of the constructor)
    sizes: dict[str, Dim] = field(default_factory=dict)  # integer constructor arguments, by name

    def describe(self) -> str:
        return self.cls.name


@dataclass(frozen=True, eq=False)
class EitherModule(Value):
    """One of several modules, by a path the engine cannot decide: ``self.self = FullAttention(c)``
    on one branch of the constructor and ``BlockSparseAttention(c)`` on the other, or
    ``nn.LayerNorm(d) if norm else nn.Identity()``. Calling it runs every option and joins their
    results; an attribute read off it is the join of the options' attributes."""

    options: tuple[Value, ...]

    #: More options than this are not followed (a join inside a loop would grow without end).
    MAX_OPTIONS = 4

    def describe(self) -> str:
        return " or ".join(option.describe() for option in self.options)


@dataclass(frozen=True, slots=True)
class EitherString(Value):
    """One of several strings, by a path the engine cannot decide: audiocraft's ``layout = "b h t
    d" if time_dim == 2 else "b t h d"``, then ``f"{layout},{key_layout}-> b h t k"``. f-strings and
    ``str.replace`` map over the options; an einops or einsum call given one runs once per option
    and joins the results (``ops.dispatch.call_qualified``)."""

    options: tuple[str, ...]

    MAX_OPTIONS = 4

    def describe(self) -> str:
        return " or ".join(repr(option) for option in self.options)


def either_string(options: "Sequence[str]") -> "Value":
    """The strings, each once: one string is a constant, more than ``MAX_OPTIONS`` are unknown."""
    unique = tuple(dict.fromkeys(options))
    if len(unique) == 1:
        return ConstValue(unique[0])
    return EitherString(unique) if len(unique) <= EitherString.MAX_OPTIONS else UNKNOWN


def string_options(value: "Value") -> "tuple[str, ...] | None":
    """The strings a value may be: one for a string constant, several for an ``EitherString``."""
    if isinstance(value, ConstValue) and isinstance(value.value, str):
        return (value.value,)
    if isinstance(value, EitherString):
        return value.options
    return None


@dataclass(frozen=True, slots=True, eq=False)
class EitherFunction(Value):
    """One of several functions, by a path the engine cannot decide: ``loss_fn = cross_entropy if
    log_probs_out is False else F.nll_loss``. Calling it runs every option with the caller's
    arguments and joins their results, as calling an ``EitherModule`` does."""

    options: tuple[Value, ...]

    MAX_OPTIONS = 4

    def describe(self) -> str:
        return " or ".join(option.describe() for option in self.options)


def is_module_value(value: Value) -> bool:
    """A torch layer, an instance of a module class of the analysed code, or a choice of those."""
    return isinstance(value, (ModuleValue, EitherModule)) or (isinstance(value, ObjectValue) and value.cls.is_module)


def own_instance(value: Value, index: int, label: str | None = None) -> Value:
    """One of several like modules that one expression builds (a comprehension, a repeated
    builder): the same configuration, an identity of its own, so that four comprehension-built
    Linears are four modules, not one shared module."""
    if isinstance(value, ModuleValue):
        ident = ModuleIdent(label or f"{value.ident.label}[{index}]", value.ident.node)
        return ModuleValue(value.kind, value.params, ident, value.node, value.items, dict(value.named), value.repeated)
    if isinstance(value, ObjectValue):
        ident = ModuleIdent(label or f"{value.ident.label}[{index}]", value.ident.node)
        return ObjectValue(value.cls, dict(value.attrs), ident, value.context, value.sizes)
    return value


@dataclass(eq=False)
class ClassInfo:
    """A class defined in the analysed file."""

    name: str
    qualname: str
    node: "cst.ClassDef"
    bases: tuple[str, ...]  # qualified names where resolvable, else the written text
    methods: dict[str, "cst.FunctionDef"]
    is_module: bool  # derives from torch.nn.Module (directly, or through a class of this file)
    is_dataclass: bool
    fields: dict[str, "cst.CSTNode | None"]  # dataclass / class-level fields with their default
    docstring: str = ""
    #: project classes it derives from, nearest first (their methods and fields are inherited)
    parents: "tuple[ClassInfo, ...]" = ()
    #: the torch.nn layer it derives from (``class LayerNorm(nn.LayerNorm)``), if any
    nn_base: str | None = None
    own_methods: "dict[str, cst.FunctionDef]" = field(default_factory=dict)
    project_parents_done: bool = False  # parents in other project files were looked up

    def inherit(self, parent: "ClassInfo") -> None:
        """Take ``parent``'s methods and fields where this class does not define its own."""
        if parent is self or parent in self.parents:
            return
        self.parents = self.parents + (parent,)
        self.methods = {**parent.methods, **self.methods}
        self.fields = {**parent.fields, **self.fields}
        self.nn_base = self.nn_base or parent.nn_base
        self.is_module = self.is_module or parent.is_module

    def owner_of(self, method: str) -> "ClassInfo":
        """The class whose body defines ``method`` as this class sees it (itself or a parent): the
        class a ``super()`` inside that method starts from."""
        if method in self.own_methods or not self.parents:
            return self
        parent = self.parent_with(method)
        return parent.owner_of(method) if parent is not None else self

    def parent_with(self, method: str) -> "ClassInfo | None":
        """The nearest parent that has ``method`` (its own or inherited)."""
        return next((parent for parent in self.parents if method in parent.methods), None)


@dataclass(frozen=True, slots=True, eq=False)
class ClassValue(Value):
    """A reference to a class of this file (calling it instantiates)."""

    info: ClassInfo


@dataclass(frozen=True, slots=True, eq=False)
class FunctionValue(Value):
    """A function of this file (or a method bound to ``owner``)."""

    node: "cst.FunctionDef"
    qualname: str
    owner: ObjectValue | None = None
    closure: "dict[str, Value] | None" = None  # a nested function: the names of its enclosing scope


@dataclass(frozen=True, slots=True)
class QualifiedValue(Value):
    """A name that resolves through an import: ``torch.nn.functional.softmax``."""

    qualname: str

    def attribute(self, attr: str) -> "QualifiedValue":
        return QualifiedValue(f"{self.qualname}.{attr}")

    def describe(self) -> str:
        return self.qualname


@dataclass(frozen=True, slots=True)
class BoundMethod(Value):
    """``tensor.view`` before it is called: the receiver and the method name."""

    receiver: Value
    name: str


def as_tensor(value: Value) -> TensorValue:
    """The value seen as a tensor: anything that is not known to be a tensor is unknown."""
    if isinstance(value, TensorValue):
        return value
    return UNKNOWN_TENSOR


def dim_of(value: Value) -> Dim | None:
    """The value as an integer dim, when it is one (a known or symbolic int)."""
    if isinstance(value, IntValue):
        return value.dim
    if isinstance(value, Opaque):
        return value.as_dim()
    if isinstance(value, BoundMethod) and isinstance(value.receiver, Opaque):
        return value.receiver.attribute(value.name).as_dim()
    if isinstance(value, ConstValue) and isinstance(value.value, bool):
        return Dim.const(int(value.value))
    if isinstance(value, FloatValue) and value.scale.factors:
        # A product of sizes of a configuration the engine does not see, kept as a real number.
        return value.scale.integer_dim()
    return None


def scale_of(value: Value) -> Scale | None:
    """The value as a real number, when it is a known or symbolic number."""
    if isinstance(value, FloatValue):
        return value.scale
    if isinstance(value, IntValue):
        return Scale.of_dim(value.dim)
    if isinstance(value, Opaque):
        return Scale.of_dim(value.as_dim())
    if isinstance(value, BoundMethod) and isinstance(value.receiver, Opaque):
        return Scale.of_dim(value.receiver.attribute(value.name).as_dim())
    return None


def int_of(value: Value) -> int | None:
    """The value as a concrete Python int, when known."""
    dim = dim_of(value)
    if dim is not None and dim.is_const:
        return dim.value
    return None


def is_scalar(value: Value) -> bool:
    """A Python number (known, symbolic or a named unknown parameter), not a tensor."""
    return isinstance(value, (IntValue, FloatValue)) or (
        isinstance(value, ConstValue) and isinstance(value.value, (int, float))
    )


def known_sizes(owner: ObjectValue | None) -> dict[str, Dim]:
    """The integer attributes of a module instance, by name (``d_model``, ``n_heads``)."""
    if owner is None:
        return {}
    sizes = dict(owner.sizes)  # constructor arguments (d_model=512), then attributes (self.n_heads)
    sizes.update((name, value.dim) for name, value in owner.attrs.items() if isinstance(value, IntValue))
    return sizes
