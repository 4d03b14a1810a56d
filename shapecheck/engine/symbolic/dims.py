"""Symbolic integer dimensions: ``d_model``, ``3*n_embd``, ``t-1``, ``d_model//n_heads``.

A :class:`Dim` is an immutable, hashable polynomial in canonical form, so two Dims are ``==`` exactly
when their canonical forms are identical (structural equality, usable as dict keys). Questions about
values go through :func:`equal` and :func:`divides`, which answer with a three-valued :class:`Truth`.

Canonical form
    A sum of terms ``coef * monomial``. ``coef`` is an ``int`` or a ``fractions.Fraction`` (never an
    integral Fraction). A monomial is a tuple of ``(atom, exponent)`` sorted by atom; an atom is a
    symbol (a ``str`` such as ``"d_model"`` or ``"config.n_embd"``) or an opaque ``FloorDiv(num, den)``
    / ``Mod(num, den)`` of two Dims whose quotient could not be simplified. Negative exponents and
    fractional coefficients appear only for divisions proven exact: ``d_model//n_heads`` becomes
    ``d_model * n_heads**-1`` once ``d_model % n_heads == 0`` is known (see :class:`Assumptions`).

Meaning
    Every symbol stands for an unknown integer >= 1 (a size, a count). :func:`equal` answers FALSE
    only when that is enough to prove two values differ; anything else is UNKNOWN. UNKNOWN must never
    produce a diagnostic.

Robustness
    Nothing here recurses without bound or grows without bound: an operation whose result would
    exceed :data:`MAX_TERMS` terms, :data:`MAX_EXPONENT`, :data:`MAX_DEPTH` nested FloorDiv/Mod atoms
    or :data:`MAX_COEF_BITS`-bit coefficients raises :class:`DimTooComplex`. Division or modulo by a
    constant 0 raises ``ZeroDivisionError``. Both are ``ArithmeticError``: a caller that catches
    ``ArithmeticError`` and treats the result as unknown is always safe.
"""

from __future__ import annotations

import enum
from fractions import Fraction
from functools import lru_cache
from math import gcd
from typing import Iterable, Mapping, Union

__all__ = [
    "MAX_COEF_BITS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_TERMS",
    "Assumptions",
    "Dim",
    "DimLike",
    "DimTooComplex",
    "Truth",
    "as_dim",
    "const",
    "divides",
    "leaves_a_fraction_of_the_head_count",
    "exceeds_by_head_count",
    "differ_once_exact",
    "widens_a_head_split",
    "equal",
    "exact_div",
    "product",
    "sym",
]

MAX_TERMS = 32
"""Largest number of terms a Dim may have."""
MAX_EXPONENT = 16
"""Largest absolute exponent of an atom in a monomial."""
MAX_DEPTH = 8
"""Deepest nesting of FloorDiv / Mod atoms."""
MAX_COEF_BITS = 512
"""Largest bit length of a coefficient's numerator or denominator."""


class DimTooComplex(ArithmeticError):
    """The expression outgrew the caps above; the caller must treat the result as unknown."""


Coef = Union[int, Fraction]
DimLike = Union[int, "Dim"]


# --- atoms and monomials ---------------------------------------------------------------------

# Separators that cannot occur in symbol names (see _check_name), so canonical keys are injective.
_SEP_TERM = "\x1e"
_SEP_FACT = "\x1f"
_OPAQUE_MARK = "\x7f"  # sorts opaque atoms after every symbol


class _Opaque:
    """``FloorDiv(num, den)`` (kind ``"//"``) or ``Mod(num, den)`` (kind ``"%"``): an atom."""

    __slots__ = ("kind", "num", "den", "key", "depth", "_hash")

    def __init__(self, kind: str, num: Dim, den: Dim) -> None:
        depth = 1 + max(num._depth(), den._depth())
        if depth > MAX_DEPTH:
            raise DimTooComplex(f"more than {MAX_DEPTH} nested // or % atoms")
        self.kind = kind
        self.num = num
        self.den = den
        self.depth = depth
        self.key = f"{_OPAQUE_MARK}{kind}({num._ckey()},{den._ckey()})"
        self._hash = hash(self.key)

    def __eq__(self, other: object) -> bool:
        return other.__class__ is _Opaque and self.key == other.key  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        name = "FloorDiv" if self.kind == "//" else "Mod"
        return f"{name}({self.num!r}, {self.den!r})"

    def __str__(self) -> str:
        num = str(self.num)
        if len(self.num._terms) > 1:
            num = f"({num})"
        return f"{num}{self.kind}{_fmt_den(self.den)}"


Atom = Union[str, _Opaque]
Mono = tuple  # tuple[tuple[Atom, int], ...], sorted by _akey


def _akey(atom: Atom) -> str:
    return atom if atom.__class__ is str else atom.key  # type: ignore[union-attr,return-value]


@lru_cache(maxsize=16384)
def _mkey(mono: Mono) -> tuple:
    return tuple([(_akey(a), e) for a, e in mono])


def _tkey(term: tuple) -> tuple:
    return _mkey(term[0])


@lru_cache(maxsize=16384)
def _mono_mul(m1: Mono, m2: Mono) -> Mono:
    if not m1:
        return m2
    if not m2:
        return m1
    exps = dict(m1)
    for a, e in m2:
        exps[a] = exps.get(a, 0) + e
    items = []
    for a, e in exps.items():
        if e:
            if e > MAX_EXPONENT or e < -MAX_EXPONENT:
                raise DimTooComplex(f"exponent beyond {MAX_EXPONENT}")
            items.append((a, e))
    items.sort(key=lambda ae: _akey(ae[0]))
    return tuple(items)


def _mono_pow(mono: Mono, n: int) -> Mono:
    out = []
    for a, e in mono:
        e *= n
        if e > MAX_EXPONENT or e < -MAX_EXPONENT:
            raise DimTooComplex(f"exponent beyond {MAX_EXPONENT}")
        out.append((a, e))
    return tuple(out)


def _mono_div(m1: Mono, m2: Mono) -> Mono:
    return _mono_mul(m1, _mono_pow(m2, -1)) if m2 else m1


def _norm(c: Coef) -> Coef:
    if c.__class__ is Fraction and c.denominator == 1:  # type: ignore[union-attr]
        return c.numerator  # type: ignore[union-attr]
    return c


def _check_coef(c: Coef) -> None:
    if c.__class__ is int:
        if c.bit_length() > MAX_COEF_BITS:  # type: ignore[union-attr]
            raise DimTooComplex("coefficient too large")
    elif (
        c.numerator.bit_length() > MAX_COEF_BITS  # type: ignore[union-attr]
        or c.denominator.bit_length() > MAX_COEF_BITS  # type: ignore[union-attr]
    ):
        raise DimTooComplex("coefficient too large")


def _term_integral(mono: Mono, c: Coef) -> bool:
    """True when the term is an integer for all integer atom values: int coef, exponents > 0."""
    if c.__class__ is not int:
        return False
    for _, e in mono:
        if e < 0:
            return False
    return True


# --- Dim ---------------------------------------------------------------------------------------


class Dim:
    """An immutable symbolic integer: a canonical polynomial over symbols and opaque // and % atoms.

    Build with :meth:`Dim.const`, :meth:`Dim.sym` (or :func:`const`, :func:`sym`, :func:`as_dim`) and
    the operators ``+ - * // % **`` (ints accepted on either side). ``==`` is structural; a constant
    Dim also equals the int it holds (and hashes like it). ``bool(dim)`` raises ``TypeError``: ask
    :func:`equal` instead.
    """

    __slots__ = ("_terms", "_hash", "_str", "_syms", "_ck")

    _terms: tuple
    _hash: int
    _str: str | None
    _syms: frozenset[str] | None
    _ck: str | None

    def __init__(self, terms: tuple) -> None:
        """Internal: ``terms`` must already be canonical. Use the constructors instead."""
        self._terms = terms
        if not terms:
            self._hash = 0
        elif len(terms) == 1 and not terms[0][0]:
            self._hash = hash(terms[0][1])
        else:
            self._hash = hash(terms)
        self._str = None
        self._syms = None
        self._ck = None

    # constructors
    @staticmethod
    def const(n: int) -> Dim:
        """The constant ``n``."""
        if n.__class__ is not int:
            if isinstance(n, int):  # bool and other int subclasses
                n = int(n)
            else:
                raise TypeError(f"Dim.const expects an int, got {type(n).__name__}")
        return _const(n)

    @staticmethod
    def sym(name: str) -> Dim:
        """The symbol ``name`` (an unknown integer >= 1)."""
        return _sym(name)

    # inspection
    @property
    def is_const(self) -> bool:
        """True when the Dim has no symbols (its value may still be a fraction, see ``value``)."""
        t = self._terms
        return not t or (len(t) == 1 and not t[0][0])

    @property
    def value(self) -> int | None:
        """The int value when constant and integral, else None.

        A constant that is not an integer can only come from substituting values that contradict a
        proven divisibility (``(d//h).substitute(d=10, h=3)`` after ``10 % 3 == 0`` was assumed).
        """
        t = self._terms
        if not t:
            return 0
        if len(t) == 1 and not t[0][0]:
            c = t[0][1]
            return c if c.__class__ is int else None
        return None

    @property
    def constant_term(self) -> int | None:
        """The constant term of the polynomial (``2`` in ``max_positions + 2``, 0 when there is
        none) when it is an int."""
        c = self._const_coef()
        return c if c.__class__ is int else None

    @property
    def name(self) -> str | None:
        """The symbol name when this Dim is exactly one plain symbol, else None."""
        t = self._terms
        if len(t) == 1 and t[0][1] == 1 and len(t[0][0]) == 1:
            atom, e = t[0][0][0]
            if e == 1 and atom.__class__ is str:
                return atom
        return None

    def symbols(self) -> frozenset[str]:
        """All symbol names, including those inside // and % atoms."""
        s = self._syms
        if s is None:
            names: set[str] = set()
            for mono, _ in self._terms:
                for a, _e in mono:
                    if a.__class__ is str:
                        names.add(a)
                    else:
                        names |= a.num.symbols()
                        names |= a.den.symbols()
            s = self._syms = frozenset(names)
        return s

    def floor_divisions(self) -> tuple[tuple[Dim, Dim], ...]:
        """``(num, den)`` of each ``num // den`` atom of the polynomial (not those nested in one)."""
        found: list[tuple[Dim, Dim]] = []
        for mono, _ in self._terms:
            for a, _e in mono:
                if a.__class__ is not str and a.kind == "//" and (a.num, a.den) not in found:
                    found.append((a.num, a.den))
        return tuple(found)

    def is_integral_form(self) -> bool:
        """True when every term has an int coefficient and no negative exponent."""
        for mono, c in self._terms:
            if not _term_integral(mono, c):
                return False
        return True

    def has_opaque(self) -> bool:
        """True when the Dim contains a FloorDiv or Mod atom."""
        for mono, _ in self._terms:
            for a, _e in mono:
                if a.__class__ is _Opaque:
                    return True
        return False

    def substitute(self, mapping: Mapping[str, DimLike]) -> Dim:
        """Replace symbols by ints or Dims and resimplify.

        Raises ``ZeroDivisionError`` when a denominator becomes 0 and ``DimTooComplex`` when the
        result outgrows the caps.
        """
        if not mapping or not self._terms:
            return self
        syms = self.symbols()
        m = {k: as_dim(v) for k, v in mapping.items() if k in syms}
        if not m:
            return self
        return _subst(self, m)

    def sort_key(self) -> str:
        """A deterministic total order over Dims (not numeric order)."""
        return self._ckey()

    def to_json(self) -> int | str:
        """The int when constant and integral, else ``str(self)``."""
        v = self.value
        return v if v is not None else str(self)

    # internals
    def _ckey(self) -> str:
        ck = self._ck
        if ck is None:
            parts = []
            for mono, c in self._terms:
                fs = _SEP_FACT.join(f"{_akey(a)}^{e}" for a, e in mono)
                parts.append(f"{c}{_SEP_FACT}{fs}")
            ck = self._ck = _SEP_TERM.join(parts)
        return ck

    def _depth(self) -> int:
        d = 0
        for mono, _ in self._terms:
            for a, _e in mono:
                if a.__class__ is _Opaque and a.depth > d:
                    d = a.depth
        return d

    def _const_coef(self) -> Coef:
        t = self._terms
        return t[0][1] if t and not t[0][0] else 0

    # python protocol
    def __eq__(self, other: object) -> bool:
        if other.__class__ is Dim:
            return self._hash == other._hash and self._terms == other._terms  # type: ignore[attr-defined]
        if isinstance(other, int):
            t = self._terms
            if not other:
                return not t
            return len(t) == 1 and not t[0][0] and t[0][1] == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return self._hash

    def __bool__(self) -> bool:
        raise TypeError("a Dim has no truth value; use equal(...) or compare with ==")

    def __str__(self) -> str:
        s = self._str
        if s is None:
            s = self._str = _fmt(self)
        return s

    def __repr__(self) -> str:
        return f"Dim({str(self)!r})"

    def __add__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _add(self, o, 1)

    def __radd__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _add(o, self, 1)

    def __sub__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _add(self, o, -1)

    def __rsub__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _add(o, self, -1)

    def __mul__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _mul(self, o)

    def __rmul__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _mul(o, self)

    def __floordiv__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _floordiv(self, o)

    def __rfloordiv__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _floordiv(o, self)

    def __mod__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _mod(self, o)

    def __rmod__(self, other: DimLike) -> Dim:
        o = _coerce(other)
        return NotImplemented if o is None else _mod(o, self)

    def __pow__(self, n: DimLike) -> Dim:
        if isinstance(n, Dim):
            v = n.value
            if v is None:
                return NotImplemented
            n = v
        if not isinstance(n, int):
            return NotImplemented
        if n < 0:
            raise ValueError("Dim ** n needs a non-negative int n")
        return _pow(self, int(n))

    def __neg__(self) -> Dim:
        return _scale(self, -1)

    def __pos__(self) -> Dim:
        return self


def _coerce(x: object) -> Dim | None:
    if x.__class__ is Dim:
        return x  # type: ignore[return-value]
    if isinstance(x, int):
        return _const(int(x))
    return None


def as_dim(x: DimLike) -> Dim:
    """An int or a Dim as a Dim (``TypeError`` for anything else)."""
    if x.__class__ is Dim:
        return x  # type: ignore[return-value]
    d = _coerce(x)
    if d is None:
        raise TypeError(f"expected an int or a Dim, got {type(x).__name__}")
    return d


@lru_cache(maxsize=4096)
def _const(n: int) -> Dim:
    if not n:
        return Dim(())
    _check_coef(n)
    return Dim(((((), n)),))


def _check_name(name: str) -> None:
    if name.__class__ is not str or not name:
        raise ValueError(f"a symbol name must be a non-empty str, got {name!r}")
    for ch in name:
        if ch < " " or ch == _OPAQUE_MARK:
            raise ValueError(f"invalid character in symbol name {name!r}")


@lru_cache(maxsize=8192)
def _sym(name: str) -> Dim:
    _check_name(name)
    return Dim(((((name, 1),), 1),))


def const(n: int) -> Dim:
    """The constant ``n`` as a Dim."""
    return Dim.const(n)


def sym(name: str) -> Dim:
    """The symbol ``name`` as a Dim."""
    return _sym(name)


ZERO = Dim(())
ONE = _const(1)


def _from_map(d: dict) -> Dim:
    items = []
    for m, c in d.items():
        if c:
            if c.__class__ is Fraction:
                c = _norm(c)
            _check_coef(c)
            items.append((m, c))
    if len(items) > MAX_TERMS:
        raise DimTooComplex(f"more than {MAX_TERMS} terms")
    if len(items) > 1:
        items.sort(key=_tkey)
    return Dim(tuple(items))


def _atom_dim(atom: Atom) -> Dim:
    return Dim(((((atom, 1),), 1),))


# --- arithmetic --------------------------------------------------------------------------------


def _add_raw(a: Dim, b: Dim, sign: int) -> Dim:
    if not b._terms:
        return a
    if not a._terms and sign == 1:
        return b
    d = dict(a._terms)
    for m, c in b._terms:
        d[m] = d.get(m, 0) + c * sign
    if len(d) > 1:
        _hermite(d)
    return _from_map(d)


def _hermite(d: dict) -> None:
    """Hermite's identity, in place: ``(y + r)//k + (y + r + 1)//k + ... + (y + r + k - 1)//k`` is
    ``y + r`` for an integer ``y`` (``(d + 1)//2 + d//2`` is ``d``: the even and the odd columns of a
    ``d``-wide table, ``x[:, 0::2]`` and ``x[:, 1::2]``, concatenated again)."""
    groups: dict = {}
    for m, c in d.items():
        if not c or len(m) != 1 or m[0][1] != 1 or m[0][0].__class__ is not _Opaque:
            continue
        atom = m[0][0]
        k = atom.den.value if atom.kind == "//" else None
        if k is None or k < 2 or not atom.num.is_integral_form():
            continue
        r = atom.num.constant_term
        if r is None:
            continue
        rest = _add_raw(atom.num, _const(r), -1)
        groups.setdefault((rest, k), {})[r] = (c, m)
    for (rest, k), by_offset in groups.items():
        if len(by_offset) < k:
            continue
        for r0 in sorted(by_offset):
            run = [by_offset.get(r0 + i) for i in range(k)]
            if any(item is None for item in run) or len({item[0] for item in run}) != 1:  # type: ignore[index]
                continue  # not a full set of offsets, or not all with the same coefficient
            c = run[0][0]  # type: ignore[index]
            for _, m in run:  # type: ignore[misc]
                del d[m]
            for m, coef in _add_raw(rest, _const(r0), 1)._terms:
                d[m] = d.get(m, 0) + coef * c
            break


def _scale(a: Dim, k: Coef) -> Dim:
    if k == 1:
        return a
    if not k or not a._terms:
        return ZERO
    items = []
    for m, c in a._terms:
        c = _norm(c * k)
        _check_coef(c)
        items.append((m, c))
    return Dim(tuple(items))


def _mul_raw(a: Dim, b: Dim) -> Dim:
    at, bt = a._terms, b._terms
    if not at or not bt:
        return ZERO
    if len(at) == 1 and not at[0][0]:
        return _scale(b, at[0][1])
    if len(bt) == 1 and not bt[0][0]:
        return _scale(a, bt[0][1])
    if len(at) * len(bt) > MAX_TERMS * MAX_TERMS:
        raise DimTooComplex(f"more than {MAX_TERMS} terms")
    d: dict = {}
    for m1, c1 in at:
        for m2, c2 in bt:
            m = _mono_mul(m1, m2)
            d[m] = d.get(m, 0) + c1 * c2
    return _from_map(d)


def _pow(a: Dim, n: int) -> Dim:
    if n == 0:
        return ONE
    if n == 1:
        return a
    t = a._terms
    if not t:
        return ZERO
    if len(t) == 1:
        m, c = t[0]
        if n > 4 * MAX_COEF_BITS:
            if c in (1, -1):
                c = c**n
            else:
                raise DimTooComplex("power too large")
        else:
            c = c**n
        _check_coef(c)
        return Dim(((_mono_pow(m, n), _norm(c)),))
    if n > MAX_TERMS:
        raise DimTooComplex(f"more than {MAX_TERMS} terms")
    r = a
    for _ in range(n - 1):
        r = _mul(r, a)
    return r


def _inverse_monomial(a: Dim) -> Dim | None:
    """1/a when a is a single term, else None."""
    t = a._terms
    if len(t) != 1:
        return None
    m, c = t[0]
    return Dim(((_mono_pow(m, -1), _norm(Fraction(1) / c)),))


def _lead(terms: tuple) -> tuple:
    """The leading term in a graded order (degree first, then canonical key)."""
    return max(terms, key=lambda t: (sum(e for _, e in t[0]), _mkey(t[0])))


_MAX_DIV_STEPS = 64


def _try_exact_div_raw(a: Dim, b: Dim) -> Dim | None:
    """q with q * b == a and q integral in form (an integer for all atom values), else None.

    ``b`` must not be 0. Integral form means int coefficients and no negative exponents, so the
    quotient is an integer whatever the symbols are: this is what "structurally exact" means.
    """
    at, bt = a._terms, b._terms
    if not at:
        return ZERO
    if len(bt) == 1:
        mb, cb = bt[0]
        items = []
        for m, c in at:
            q = c / cb if c.__class__ is Fraction or cb.__class__ is Fraction else Fraction(c, cb)
            if q.denominator != 1:
                return None
            mq = _mono_div(m, mb)
            for _, e in mq:
                if e < 0:
                    return None
            items.append((mq, q.numerator))
        items.sort(key=_tkey)
        return Dim(tuple(items))
    # multi-term divisor: bounded polynomial long division by leading terms
    lb_m, lb_c = _lead(bt)
    for m, c in bt:
        if not _term_integral(m, c):
            return None
    q = ZERO
    r = a
    for _ in range(_MAX_DIV_STEPS):
        if not r._terms:
            return q
        lr_m, lr_c = _lead(r._terms)
        qc = Fraction(lr_c) / lb_c
        if qc.denominator != 1:
            return None
        qm = _mono_div(lr_m, lb_m)
        if not _term_integral(qm, 1):
            return None
        t = Dim(((qm, qc.numerator),))
        q = _add(q, t, 1)
        r = _add(r, _mul(t, b), -1)
    return None


def _split_const_divisor(a: Dim, c: int) -> tuple[Dim, Coef] | None:
    """a == c*k + r with k integral in form and r a constant, as (k, r); else None."""
    if not c:
        return None
    items = []
    r: Coef = 0
    for m, coef in a._terms:
        if not m:
            r = coef
            continue
        if coef.__class__ is not int or coef % c:
            return None
        for _, e in m:
            if e < 0:
                return None
        items.append((m, coef // c))
    return Dim(tuple(items)), r


def _cancel(a: Dim, b: Dim) -> tuple[Dim, Dim]:
    """Divide a and b by their common positive content (integer gcd and common monomial).

    floor(k*a / (k*b)) == floor(a / b) for every k > 0; symbols are >= 1, and if a common atom is 0
    the original division fails anyway. Only applied to integral forms.
    """
    g = 0
    common: dict | None = None
    for t in (a._terms, b._terms):
        for m, c in t:
            g = gcd(g, c)
            if common is None:
                common = dict(m)
            elif common:
                md = dict(m)
                for atom in list(common):
                    e = md.get(atom, 0)
                    if e < common[atom]:
                        if e <= 0:
                            del common[atom]
                        else:
                            common[atom] = e
    cm = tuple(sorted(common.items(), key=lambda ae: _akey(ae[0]))) if common else ()
    if g <= 1 and not cm:
        return a, b

    def div(x: Dim) -> Dim:
        items = [(_mono_div(m, cm), c // g) for m, c in x._terms]
        items.sort(key=_tkey)
        return Dim(tuple(items))

    return div(a), div(b)


def _floordiv_raw(a: Dim, b: Dim, cancel: bool = True) -> Dim:
    bt = b._terms
    if not bt:
        raise ZeroDivisionError("Dim // 0")
    at = a._terms
    if not at:
        return ZERO
    b_const = len(bt) == 1 and not bt[0][0]
    if b_const and (len(at) == 1 and not at[0][0]):
        return _const(int(at[0][1] // bt[0][1]))
    if b == 1:
        return a
    q = _try_exact_div(a, b)
    if q is not None:
        return q
    if b_const and bt[0][1].__class__ is int:
        split = _split_const_divisor(a, bt[0][1])
        if split is not None:
            k, r = split
            return _add(k, _const(int(r // bt[0][1])), 1)
    if cancel and a.is_integral_form() and b.is_integral_form():
        a2, b2 = _cancel(a, b)
        if a2 is not a:
            return _floordiv_raw(a2, b2, cancel=False)
    return _atom_dim(_Opaque("//", a, b))


def _mod_raw(a: Dim, b: Dim) -> Dim:
    bt = b._terms
    if not bt:
        raise ZeroDivisionError("Dim % 0")
    at = a._terms
    if not at:
        return ZERO
    b_const = len(bt) == 1 and not bt[0][0]
    if b_const and (len(at) == 1 and not at[0][0]):
        return _const(int(at[0][1] % bt[0][1]))
    if b == 1 or b == -1:
        return ZERO
    if _try_exact_div(a, b) is not None:
        return ZERO
    if b_const and bt[0][1].__class__ is int and bt[0][1] > 0 and a.is_integral_form():
        c = bt[0][1]
        items = [(m, k % c) for m, k in at]
        reduced = _from_map(dict(items))
        if reduced.is_const:
            return _const(int(reduced._const_coef()))
        a = reduced
    return _atom_dim(_Opaque("%", a, b))


# --- memoised entry points ---------------------------------------------------------------------
# Dims are immutable, so results can be shared. The interpreter builds the same few expressions
# over and over (b*t*d, d//h, ...); a bounded table, cleared when full, makes repeats cheap.

_MEMO_CAP = 1 << 15
_memo: dict = {}


def _add(a: Dim, b: Dim, sign: int) -> Dim:
    if not b._terms:
        return a
    key = ("+" if sign == 1 else "-", a, b)
    r = _memo.get(key)
    if r is None:
        r = _add_raw(a, b, sign)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = r
    return r


def _mul(a: Dim, b: Dim) -> Dim:
    if a is ONE:
        return b
    if b is ONE:
        return a
    key = ("*", a, b)
    r = _memo.get(key)
    if r is None:
        r = _mul_raw(a, b)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = r
    return r


def _floordiv(a: Dim, b: Dim) -> Dim:
    key = ("//", a, b)
    r = _memo.get(key)
    if r is None:
        r = _floordiv_raw(a, b)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = r
    return r


def _mod(a: Dim, b: Dim) -> Dim:
    key = ("%", a, b)
    r = _memo.get(key)
    if r is None:
        r = _mod_raw(a, b)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = r
    return r


_NONE = object()


def _try_exact_div(a: Dim, b: Dim) -> Dim | None:
    key = ("/?", a, b)
    r = _memo.get(key)
    if r is None:
        r = _try_exact_div_raw(a, b)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = _NONE if r is None else r
        return r
    return None if r is _NONE else r


def _exact_quotient(n: Dim, d: Dim) -> Dim:
    key = ("/", n, d)
    r = _memo.get(key)
    if r is None:
        r = _exact_quotient_raw(n, d)
        if len(_memo) >= _MEMO_CAP:
            _memo.clear()
        _memo[key] = r
    return r


def product(dims: Iterable[DimLike]) -> Dim:
    """The product of ints and Dims (1 for none)."""
    r = ONE
    for d in dims:
        r = _mul(r, as_dim(d))
    return r


# --- substitution ------------------------------------------------------------------------------


def _common_denominator(terms: list) -> tuple[Dim, Dim]:
    """For terms that are not integral in form: (N, D) with sum(terms) == N / D, both integral."""
    lcm = 1
    den_exps: dict = {}
    for m, c in terms:
        if c.__class__ is Fraction:
            dd = c.denominator
            lcm = lcm * dd // gcd(lcm, dd)
        for a, e in m:
            if e < 0 and -e > den_exps.get(a, 0):
                den_exps[a] = -e
    dm = tuple(sorted(den_exps.items(), key=lambda ae: _akey(ae[0])))
    num = {}
    for m, c in terms:
        num[_mono_mul(m, dm)] = _norm(c * lcm)
    return _from_map(num), Dim(((dm, lcm),))


def exact_div(a: DimLike, b: DimLike) -> Dim:
    """a / b for a division the caller knows is exact (e.g. a view's -1 when the view succeeds).

    The structural quotient when there is one, else ``a * b**-1`` when b is a single term (so that
    ``b * exact_div(a, b) == a``), else ``a // b`` (equal to the quotient since it is exact).
    Raises ``ZeroDivisionError`` for b == 0.
    """
    return _exact_quotient(as_dim(a), as_dim(b))


def _exact_quotient_raw(n: Dim, d: Dim) -> Dim:
    """n / d for a division known to be exact."""
    if not d._terms:
        raise ZeroDivisionError("Dim substitution made a denominator 0")
    q = _try_exact_div(n, d)
    if q is not None:
        return q
    inv = _inverse_monomial(d)
    if inv is not None:
        return _mul(n, inv)
    return _floordiv(n, d)  # exact, so floor is the quotient


def _subst_atom(atom: Atom, m: Mapping[str, Dim]) -> Dim:
    if atom.__class__ is str:
        v = m.get(atom)  # type: ignore[call-overload]
        return _sym(atom) if v is None else v  # type: ignore[arg-type]
    num = _subst(atom.num, m)  # type: ignore[union-attr]
    den = _subst(atom.den, m)  # type: ignore[union-attr]
    if num is atom.num and den is atom.den:  # type: ignore[union-attr]
        return _atom_dim(atom)
    return _floordiv(num, den) if atom.kind == "//" else _mod(num, den)  # type: ignore[union-attr]


def _subst_term(mono: Mono, c: Coef, m: Mapping[str, Dim]) -> Dim:
    r = _const(c) if c.__class__ is int else Dim(((((), c)),))
    for a, e in mono:
        r = _mul(r, _pow(_subst_atom(a, m), e))
    return r


def _subst(d: Dim, m: Mapping[str, Dim]) -> Dim:
    if m.keys().isdisjoint(d.symbols()):
        return d
    result = ZERO
    frac = []
    for mono, c in d._terms:
        if _term_integral(mono, c):
            result = _add(result, _subst_term(mono, c, m), 1)
        else:
            frac.append((mono, c))
    if frac:
        n, den = _common_denominator(frac)
        result = _add(result, _exact_quotient(_subst(n, m), _subst(den, m)), 1)
    return result


# --- formatting --------------------------------------------------------------------------------


def _fmt_den(d: Dim) -> str:
    """A divisor: bare when a positive int or a power of one symbol, else parenthesised."""
    t = d._terms
    if len(t) == 1:
        m, c = t[0]
        if not m and c.__class__ is int and c > 0:
            return str(c)
        if c == 1 and len(m) == 1 and m[0][0].__class__ is str:
            return str(d)
    return f"({d})"


def _fmt_factors(mono: Mono, c: Coef) -> tuple[str, bool]:
    """abs(c) * mono as text, and whether it is a bare // or % atom (needs care after a '-')."""
    ac = abs(c)
    n = len(mono) + (0 if ac == 1 else 1)
    if n == 0:
        return str(ac), False
    parts = [] if ac == 1 else [str(ac)]
    bare = False
    for a, e in mono:
        if a.__class__ is str:
            s = a
        elif n == 1 and e == 1:
            s = str(a)
            bare = True
        else:
            s = f"({a})"
        parts.append(s if e == 1 else f"{s}**{e}")
    return "*".join(parts), bare


def _degree(mono: Mono) -> int:
    return sum(e for _, e in mono)


def _print_key(term: tuple) -> tuple:
    """Higher degree first, then by atom with higher powers first: a**2+2*a*b+b**2."""
    mono = term[0]
    return (-_degree(mono), tuple([(_akey(a), -e) for a, e in mono]))


def _fmt(d: Dim) -> str:
    t = d._terms
    if not t:
        return "0"
    chunks: list[tuple[bool, str, bool]] = []  # (negative, text, bare opaque)
    const_c = None
    frac = []
    integral = []
    for mono, c in t:
        if not mono and c.__class__ is int:
            const_c = c
        elif _term_integral(mono, c):
            integral.append((mono, c))
        else:
            frac.append((mono, c))
    integral.sort(key=_print_key)
    for mono, c in integral:
        text, bare = _fmt_factors(mono, c)
        chunks.append((c < 0, text, bare))
    if frac:
        n, den = _common_denominator(frac)
        den_text = _fmt_den(den)
        if len(n._terms) == 1:
            mono, c = n._terms[0]
            text, bare = _fmt_factors(mono, c)
            chunks.append((c < 0, f"{text}//{den_text}", bare))
        else:
            chunks.append((False, f"({n})//{den_text}", False))
    if const_c is not None:
        chunks.append((const_c < 0, str(abs(const_c)), False))
    chunks = [ch for ch in chunks if not ch[0]] + [ch for ch in chunks if ch[0]]
    out = []
    for i, (neg, text, bare) in enumerate(chunks):
        if i == 0:
            out.append(f"-({text})" if neg and bare else f"-{text}" if neg else text)
        else:
            out.append(f"-{text}" if neg else f"+{text}")
    return "".join(out)


# --- truth and comparison ----------------------------------------------------------------------


class Truth(enum.Enum):
    """Three-valued answer. ``bool(truth)`` raises ``TypeError``: write ``is Truth.TRUE`` or
    ``is Truth.FALSE`` so that UNKNOWN can never be mistaken for either."""

    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    def __bool__(self) -> bool:
        raise TypeError("Truth is three-valued: compare with Truth.TRUE or Truth.FALSE explicitly")

    def negate(self) -> Truth:
        """TRUE <-> FALSE; UNKNOWN stays UNKNOWN."""
        if self is Truth.TRUE:
            return Truth.FALSE
        if self is Truth.FALSE:
            return Truth.TRUE
        return Truth.UNKNOWN

    @property
    def is_true(self) -> bool:
        return self is Truth.TRUE

    @property
    def is_false(self) -> bool:
        return self is Truth.FALSE

    @staticmethod
    def all_of(truths: Iterable[Truth]) -> Truth:
        """FALSE if any is FALSE, TRUE if all are TRUE, else UNKNOWN."""
        result = Truth.TRUE
        for t in truths:
            if t is Truth.FALSE:
                return Truth.FALSE
            if t is Truth.UNKNOWN:
                result = Truth.UNKNOWN
        return result

    @staticmethod
    def any_of(truths: Iterable[Truth]) -> Truth:
        """TRUE if any is TRUE, FALSE if all are FALSE, else UNKNOWN."""
        result = Truth.FALSE
        for t in truths:
            if t is Truth.TRUE:
                return Truth.TRUE
            if t is Truth.UNKNOWN:
                result = Truth.UNKNOWN
        return result


def _provably_nonzero(diff: Dim, low: int = 1) -> bool:
    """diff != 0 for every assignment of integers >= ``low`` (>= 1) to its symbols (safe cases only).

    Safe cases: a non-zero constant; or a polynomial in plain symbols with positive exponents. Its
    common monomial factor is non-zero and set aside; if the remaining non-constant terms share one
    sign the rest is monotone in every symbol, so its extreme is at all symbols == ``low``: non-zero
    when its value there is non-zero with that same sign. ``3*d - d``, ``d + 1 - d``, ``3*d - 1``,
    ``h*d - d`` when ``low`` is 2.
    """
    t = diff._terms
    if not t:
        return False
    if len(t) == 1 and not t[0][0]:
        return True
    common: dict | None = None
    for mono, _c in t:
        for a, e in mono:
            if e < 0 or a.__class__ is not str:
                return False
        if common is None:
            common = dict(mono)
        elif common:
            md = dict(mono)
            common = {a: min(e, md[a]) for a, e in common.items() if a in md}
    sign = 0
    total: Coef = 0
    for mono, c in t:
        deg = 0
        for a, e in mono:
            deg += e - (common.get(a, 0) if common else 0)
        total += c * low**deg
        if not deg:
            continue
        s = 1 if c > 0 else -1
        if sign == 0:
            sign = s
        elif s != sign:
            return False
    if sign == 0:
        return total != 0  # a non-zero constant times the common factor
    return total > 0 if sign > 0 else total < 0


def equal(a: DimLike, b: DimLike, assumptions: Assumptions | None = None, *, min_symbol: int = 1) -> Truth:
    """Is a == b? TRUE when identical after simplification; FALSE only when provably different for
    all symbols >= 1 (the difference is a non-zero constant, or a polynomial in plain symbols that,
    after setting aside its common monomial factor, has non-constant terms of one sign and a non-zero
    value of that sign at all symbols == 1: ``3*d`` vs ``d``, ``3*d`` vs ``1``, ``d+1`` vs ``d``);
    UNKNOWN otherwise (any // or % atom, negative exponent or mixed signs: ``d_model`` vs ``n_embd``,
    ``d//2`` vs ``d``, ``d`` vs ``1``).

    ``min_symbol=2`` asks instead whether they differ for all symbols >= 2: FALSE then means "equal
    only if some symbol is 1" (``h*d`` vs ``d``) -- very likely a bug, never certain.
    """
    a, b = as_dim(a), as_dim(b)
    if assumptions is not None:
        a, b = assumptions.simplify(a), assumptions.simplify(b)
    if a == b:
        return Truth.TRUE
    try:
        diff = _add(a, b, -1)
    except DimTooComplex:
        return Truth.UNKNOWN
    if assumptions is not None and assumptions._known_equal(diff):
        return Truth.TRUE
    return Truth.FALSE if _provably_nonzero(diff, max(1, min_symbol)) else Truth.UNKNOWN


def provably_negative(a: DimLike) -> bool:
    """Negative for all symbols >= 1: every term has a negative coefficient (``-w``, ``-(w + 1)``),
    as a slice bound counted from the end is (``x[:, :-window]``)."""
    a = as_dim(a)
    return bool(a._terms) and all(c < 0 and _term_integral(m, -c) for m, c in a._terms)


def differ_by_head_count(a: DimLike, b: DimLike, assumptions: Assumptions | None = None) -> bool:
    """Do a and b differ by a power of a head count once every floor division of a symbol by a
    product of others is exact (``d_model // n_heads`` with ``d_model`` a multiple of ``n_heads``,
    as a head split needs)? ``h * h * (e // h)`` vs ``e``: with ``e = h * k``, ``h*h*k`` vs ``h*k``,
    a factor ``h``: a head split that used the head count once too often (or too few). Any other
    ratio (a constant, a size of its own) says nothing here. Like ``equal(..., min_symbol=2)``,
    very likely a bug and never certain."""
    return exceeds_by_head_count(a, b, assumptions) or exceeds_by_head_count(b, a, assumptions)


def differ_once_exact(a: DimLike, b: DimLike, assumptions: Assumptions | None = None) -> bool:
    """Do a and b differ for every symbol >= 2 once every floor division of a symbol by others is
    exact (``equal(..., min_symbol=2)`` of the two after :func:`_head_split_mapping`)? ``b * h * t *
    (e // h)`` vs ``b * h * t * t * (e // h)``: a factor ``t``. A constant ratio (``3``: a fused
    projection met on the other branch of a standalone run) is not judged. Very likely a bug, never
    certain."""
    a, b = as_dim(a), as_dim(b)
    if assumptions is not None:
        a, b = assumptions.simplify(a), assumptions.simplify(b)
    mapping, _ = _head_split_mapping(a, b)
    if not mapping:
        return False
    try:
        a, b = _substitute_closed(a, mapping), _substitute_closed(b, mapping)
        if len(a._terms) == 1 and len(b._terms) == 1 and a._terms[0][0] == b._terms[0][0]:
            return False  # the same monomial: a constant ratio (3/2, gcvit's kv of a qkv layer)
        for larger, smaller in ((a, b), (b, a)):
            ratio = _try_exact_div(larger, smaller) if smaller._terms else None
            if ratio is not None and ratio.is_const:
                return False
        return equal(a, b, assumptions, min_symbol=2) is Truth.FALSE
    except (ArithmeticError, ValueError):
        return False


def _with_exact_head_splits(
    a: DimLike, b: DimLike, assumptions: Assumptions | None
) -> tuple[Dim, Dim, set[str]] | None:
    """``a`` and ``b`` simplified on the path, with every floor division of a symbol by others made
    exact (:func:`_head_split_mapping`), and the head counts that leaves: the divisors and quotients
    of those divisions and the sizes the path checked divide a width (:func:`_divisors_of_widths`).
    None when there is no head count."""
    a, b = as_dim(a), as_dim(b)
    if assumptions is not None:
        a, b = assumptions.simplify(a), assumptions.simplify(b)
    mapping, counts = _head_split_mapping(a, b)
    counts |= _divisors_of_widths(assumptions)
    if not counts:
        return None
    if mapping:
        a, b = _substitute_closed(a, mapping), _substitute_closed(b, mapping)
    return a, b, counts


def exceeds_by_head_count(larger: DimLike, smaller: DimLike, assumptions: Assumptions | None = None) -> bool:
    """``larger`` is ``smaller`` times a power of a head count, once every floor division of a
    symbol by others is exact (:func:`differ_by_head_count`, one way). A head count is a divisor of
    such a division (``e // h``: ``h``) or its quotient (``kv_heads = inner // head_dim``: the count
    of heads of ``head_dim`` in ``inner``), or a size the path checked divides a width
    (:func:`_divisors_of_widths`: after ``if inner % heads != 0: raise``, ``inner // heads`` is the
    exact quotient, no floor division is left to map)."""
    try:
        split = _with_exact_head_splits(larger, smaller, assumptions)
        if split is None:
            return False
        a, b, counts = split
        ratio = _try_exact_div(a, b) if b._terms else None
        if ratio is None or ratio == 1 or len(ratio._terms) != 1:
            return False
        mono, coef = ratio._terms[0]
        return coef == 1 and bool(mono) and all(atom.__class__ is str and atom in counts and e > 0 for atom, e in mono)
    except (ArithmeticError, ValueError):
        return False


def widens_a_head_split(width: DimLike, split: DimLike, assumptions: Assumptions | None = None) -> bool:
    """Sizes ``split`` written to split a width that multiply to the width times a power of a
    factor of the width itself, once every floor division of a symbol by others is exact:
    ``(h, h * (e // h))`` or ``(h, h * d)`` of a width ``e = h * d``. The split uses the head count
    once too often. A factor that is not one of the width's (``(h, d)`` of a head dim ``d``, of
    unknown rank) may come from the leading dims (a ``(b * t * h, d)`` tensor), and a constant may
    be a fused projection's count: neither is judged. Very likely a bug, never certain."""
    w, k = as_dim(width), as_dim(split)
    if assumptions is not None:
        w, k = assumptions.simplify(w), assumptions.simplify(k)
    mapping, _ = _head_split_mapping(w, k)
    try:
        if mapping:
            w, k = _substitute_closed(w, mapping), _substitute_closed(k, mapping)
        ratio = _try_exact_div(k, w) if w._terms else None
        if ratio is None or ratio == 1 or len(ratio._terms) != 1:
            return False
        mono, coef = ratio._terms[0]
        if coef != 1 or not mono or not all(atom.__class__ is str and e > 0 for atom, e in mono):
            return False
        # a factor of the width: structurally, or by a check of the path (``e % h == 0``)
        return all(_divides(_sym(atom), w, assumptions) is Truth.TRUE for atom, _e in mono)
    except (ArithmeticError, ValueError):
        return False


def _divisors_of_widths(assumptions: Assumptions | None) -> set[str]:
    """Head counts the path has checked: ``b`` of each fact ``a % b == 0`` between two sizes of
    their own (``if config.hidden_size % config.num_attention_heads != 0: raise``). Facts between
    products (what a solved ``-1`` records, ``b * h * s * d`` by ``b * h * block * d``) name no
    head count."""
    if assumptions is None:
        return set()
    return {b.name for a, b in assumptions.divisibility if a.name is not None and b.name is not None}  # type: ignore[misc]


def _substitute_closed(dim: Dim, mapping: dict[str, Dim]) -> Dim:
    """``dim`` with the head-split mapping applied until no mapped symbol is left (a mapping's
    value may hold another mapped division: ``inner -> q * (qd // h)`` with ``qd -> h * q'``)."""
    for _ in range(4):
        if not (dim.symbols() & mapping.keys()):
            return dim
        dim = dim.substitute(mapping)
    return dim


def _head_split_mapping(*dims: Dim) -> tuple[dict[str, Dim], set[str]]:
    """For each floor division ``e // h`` of a symbol by a product of others in ``dims``: ``e`` as
    ``h * e'quotient`` (the division exact, as a head split needs), and the head counts: the
    divisors' symbols and the quotients."""
    mapping: dict[str, Dim] = {}
    counts: set[str] = set()
    for dim in dims:
        for mono, _ in dim._terms:
            for atom, _e in mono:
                if atom.__class__ is not _Opaque or atom.kind != "//":
                    continue
                numerator, denominator = atom.num.name, atom.den
                if numerator is None or numerator in mapping or numerator in denominator.symbols():
                    continue
                if denominator.is_const or not denominator.is_integral_form() or len(denominator._terms) != 1:
                    continue
                quotient = f"{numerator}\u2032quotient"
                mapping[numerator] = denominator * _sym(quotient)
                counts |= denominator.symbols() | {quotient}
    return mapping, counts


def leaves_a_fraction_of_the_head_count(total: DimLike, known: DimLike, assumptions: Assumptions | None = None) -> bool:
    """Would a view's ``-1`` be ``total / known`` with a head count left in the denominator, once
    every floor division of a symbol by others is exact? ``view(b, -1, h, h * (e // h))`` of
    ``(b, t, e)`` leaves ``t / h``: the head count used once too often, the sequence axis cut by it.
    A head count is a divisor or quotient of such a division, or a size the path checked divides a
    width (:func:`_divisors_of_widths`: BigBird's ``view(b, -1, h, h * d)`` after the config check).
    Like :func:`differ_by_head_count`, very likely a bug and never certain."""
    try:
        if _divides(as_dim(known), as_dim(total), None) is Truth.TRUE:
            # Divisible as written (``(2 * n - 1) * (e // h)`` by ``2 * n - 1``): what the path's
            # facts rewrite (``e // h`` exact folded into ``(2 * n * e - e) // h``) cannot undo it.
            return False
        split = _with_exact_head_splits(total, known, assumptions)
        if split is None:
            return False
        total, known, counts = split
        if not known._terms or _divides(known, total, assumptions) is Truth.TRUE:
            return False
        return any(_try_exact_div(total * _sym(h), known) is not None for h in counts)
    except (ArithmeticError, ValueError):
        return False


def _terms_divisible(a: Dim, b: Dim) -> tuple[bool, Dim]:
    """Split a into terms structurally divisible by b and the rest; (any rest?, rest)."""
    rest = []
    for m, c in a._terms:
        if _try_exact_div(Dim(((m, c),)), b) is None:
            rest.append((m, c))
    return bool(rest), Dim(tuple(rest))


def divides(b: DimLike, a: DimLike, assumptions: Assumptions | None = None) -> Truth:
    """Does b divide a? Constants are computed; structurally exact or a known fact -> TRUE;
    constants that do not divide -> FALSE; otherwise UNKNOWN."""
    a, b = as_dim(a), as_dim(b)
    if assumptions is not None:
        if _divides(b, a, None) is Truth.TRUE:
            return Truth.TRUE  # divisible as written, whatever the facts rewrite
        a, b = assumptions.simplify(a), assumptions.simplify(b)
    return _divides(b, a, assumptions)


def _divides(b: Dim, a: Dim, assumptions: Assumptions | None) -> Truth:
    if not b._terms:
        if not a._terms:
            return Truth.TRUE
        return Truth.FALSE if a.is_const else Truth.UNKNOWN
    if not a._terms or b == 1 or b == -1:
        return Truth.TRUE
    if a.is_const and b.is_const:
        av, bv = a.value, b.value
        if av is None or bv is None:
            return Truth.UNKNOWN
        return Truth.TRUE if av % bv == 0 else Truth.FALSE
    try:
        if _try_exact_div(a, b) is not None:
            return Truth.TRUE
        bv = b.value
        if bv is not None:
            split = _split_const_divisor(a, bv)
            if split is not None and split[1].__class__ is int:
                return Truth.TRUE if split[1] % bv == 0 else Truth.FALSE
        if assumptions is not None and assumptions._known_divides(b, a):
            return Truth.TRUE
        if a.is_integral_form() and b.is_integral_form():
            # k * a divides k * b exactly when a divides b (k >= 1): ``b * h * s`` by ``b * s``
            a2, b2 = _cancel(a, b)
            if a2 is not a and b2 is not b:
                return _divides(b2, a2, assumptions)
    except DimTooComplex:
        pass
    return Truth.UNKNOWN


# --- assumptions -------------------------------------------------------------------------------


class Assumptions:
    """Facts known on a path: divisibility, equalities, symbol values.

    ``copy()`` is O(1): the internal tables are never mutated in place, every ``add_*`` replaces
    them, so forks share storage until one of them learns something.
    """

    __slots__ = ("_subst", "_div", "_eqs", "_cache")

    def __init__(self) -> None:
        self._subst: dict[str, Dim] = {}  # symbol -> value; values never mention a key
        self._div: tuple[tuple[Dim, Dim], ...] = ()  # (a, b): a % b == 0
        self._eqs: tuple[Dim, ...] = ()  # differences known to be 0 (when no symbol can be solved)
        self._cache: dict[Dim, Dim] = {}

    def copy(self) -> Assumptions:
        new = Assumptions.__new__(Assumptions)
        new._subst = self._subst
        new._div = self._div
        new._eqs = self._eqs
        new._cache = self._cache  # same facts, same answers, until one side adds a fact
        return new

    def __bool__(self) -> bool:
        return bool(self._subst or self._div or self._eqs)

    def __repr__(self) -> str:
        parts = [f"{k}={v}" for k, v in sorted(self._subst.items())]
        parts += [f"{a}%{_fmt_den(b)}==0" for a, b in self._div]
        parts += [f"{d}==0" for d in self._eqs]
        return f"Assumptions({', '.join(parts)})"

    @property
    def bindings(self) -> Mapping[str, Dim]:
        """Symbol values and equalities learned so far (read-only view; do not mutate)."""
        return self._subst

    @property
    def divisibility(self) -> tuple[tuple[Dim, Dim], ...]:
        """Known facts ``(a, b)`` meaning ``a % b == 0``."""
        return self._div

    def add_divisible(self, a: DimLike, b: DimLike) -> None:
        """Record ``a % b == 0`` (e.g. from ``assert d_model % n_heads == 0``)."""
        try:
            a2, b2 = self.simplify(as_dim(a)), self.simplify(as_dim(b))
            if a2.is_integral_form() and b2.is_integral_form() and b2._terms:
                a2, b2 = _cancel(a2, b2)  # k*b | k*a  <=>  b | a
            if _divides(b2, a2, self) is not Truth.UNKNOWN or (a2, b2) in self._div:
                return  # already known, or provably false (then the path is dead: learn nothing)
        except ArithmeticError:
            return
        self._div = self._div + ((a2, b2),)
        self._renormalize()

    def mentions(self, name: str) -> bool:
        """Whether some fact speaks of the symbol ``name``."""
        if name in self._subst or any(name in value.symbols() for value in self._subst.values()):
            return True
        return any(name in d.symbols() for pair in self._div for d in pair) or any(name in d.symbols() for d in self._eqs)

    def include(self, other: Assumptions) -> None:
        """Learn every fact of ``other`` too (the facts of two frames that hold on one path)."""
        for name, value in other._subst.items():
            self.add_equal(sym(name), value)
        for a, b in other._div:
            self.add_divisible(a, b)
        for difference in other._eqs:
            self.add_equal(difference, 0)

    def add_value(self, name: str, n: DimLike) -> None:
        """Record ``name == n``."""
        self.add_equal(sym(name), n)

    def add_equal(self, a: DimLike, b: DimLike) -> None:
        """Record ``a == b``. Solved for a symbol when one side is a plain symbol not occurring in the
        other; otherwise kept as a known-zero difference that :func:`equal` recognises."""
        try:
            a2, b2 = self.simplify(as_dim(a)), self.simplify(as_dim(b))
            if a2 == b2:
                return
            for lhs, rhs in ((a2, b2), (b2, a2)):
                name = lhs.name
                if name is not None and name not in rhs.symbols():
                    self._bind(name, rhs)
                    return
            diff = _add(a2, b2, -1)
        except ArithmeticError:
            return
        self._eqs = self._eqs + (diff,)
        self._renormalize()

    def _bind(self, name: str, value: Dim) -> None:
        one = {name: value}
        subst = {k: _subst(v, one) for k, v in self._subst.items()}
        subst[name] = value
        self._subst = subst
        self._renormalize()

    def _renormalize(self) -> None:
        """Re-express every stored fact with everything known now (one pass; facts are few)."""
        self._cache = {}
        simplify = self.simplify
        div: list[tuple[Dim, Dim]] = []
        for x, y in self._div:
            pair = (simplify(x), simplify(y))
            if pair not in div:
                div.append(pair)
        eqs: list[Dim] = []
        for e in self._eqs:
            e2 = simplify(e)
            if e2 not in eqs and not (e2 == 0):
                eqs.append(e2)
        self._div = tuple(div)
        self._eqs = tuple(eqs)
        self._cache = {}

    def _substituted(self, d: Dim) -> Dim:
        return _subst(d, self._subst) if self._subst else d

    def simplify(self, d: DimLike) -> Dim:
        """Apply known values and equalities, then rewrite FloorDiv atoms with known divisibility
        into exact quotients and Mod atoms with known divisibility into 0. Never raises: if the
        rewrite outgrows the caps the input is returned unchanged."""
        d = as_dim(d)
        if not (self._subst or self._div):
            return d
        cache = self._cache
        r = cache.get(d)
        if r is None:
            try:
                r = self._rewrite(self._substituted(d))
            except ArithmeticError:
                r = d
            if len(cache) > 4096:
                cache.clear()
            cache[d] = r
        return r

    def _rewrite(self, d: Dim) -> Dim:
        if not self._div or not d.has_opaque():
            return d
        result = ZERO
        for mono, c in d._terms:
            term = Dim(((((), c)),)) if c.__class__ is not int else _const(c)
            rest = []
            for a, e in mono:
                if a.__class__ is str:
                    rest.append((a, e))
                    continue
                val = self._rewrite_atom(a)
                p = _pow(val, e) if e > 0 else None
                if e < 0:
                    inv = _inverse_monomial(val)
                    p = _pow(inv, -e) if inv is not None else None
                if p is None:
                    rest.append((a, e))
                else:
                    term = _mul(term, p)
            if rest:
                rest.sort(key=lambda ae: _akey(ae[0]))
                term = _mul(term, Dim(((tuple(rest), 1),)))
            result = _add(result, term, 1)
        return result

    def _rewrite_atom(self, atom: _Opaque) -> Dim:
        num, den = self._rewrite(atom.num), self._rewrite(atom.den)
        if _divides(den, num, self) is Truth.TRUE:
            if atom.kind == "%":
                return ZERO
            return _exact_quotient(num, den)
        if num is atom.num and den is atom.den:
            return _atom_dim(atom)
        return _floordiv(num, den) if atom.kind == "//" else _mod(num, den)

    def _known_divides(self, b: Dim, a: Dim) -> bool:
        """b | a from a recorded fact (fa, fb): b | fb structurally and a == (multiples of b) +
        (a structural multiple of fa)."""
        if not self._div:
            return False
        rest_any, rest = _terms_divisible(a, b)
        if not rest_any:
            return True
        for fa, fb in self._div:
            if fb == b or _try_exact_div(fb, b) is not None:
                if rest == fa or _try_exact_div(rest, fa) is not None:
                    return True
                if a == fa or _try_exact_div(a, fa) is not None:
                    return True
        return False

    def _known_equal(self, diff: Dim) -> bool:
        for e in self._eqs:
            if diff == e or _add(diff, e, 1) == ZERO:
                return True
        return False
