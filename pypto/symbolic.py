"""Symbolic sizes: integer expressions over named symbols.

A dimension (``Dim``) is a Python ``int`` when it is known, or an ``Expr`` when it depends on
values bound at run time (``x.0``, the size of axis 0 of input ``x``; later also loop variables).
``Expr`` is a canonical polynomial with integer coefficients over *atoms*: symbols and the opaque
operations ``//``, ``%``, ``max`` and ``min``. Canonical means structural equality is algebraic
equality for polynomials, so ``(n + 1) - 1 == n`` and ``a * b == b * a``.

    >>> n = Sym("n")
    >>> str((n + 2) * 2 - 4), str(n * n // n), str(smax(n - 2, n))
    ('2*n', 'n', 'n')

Operations on two ints stay ints; any operation whose result is a constant returns an ``int``.
"""

from __future__ import annotations

from typing import Union

Dim = Union[int, "Expr"]

# Atom kinds, ordered for canonical sorting.
_SYM, _FLOORDIV, _MOD, _MAX, _MIN = range(5)
_OP_TEXT = {_FLOORDIV: "//", _MOD: "%", _MAX: "max", _MIN: "min"}


class Atom:
    """A non-polynomial leaf: a symbol or an opaque binary operation on two ``Dim``."""

    __slots__ = ("_hash", "args", "key", "kind", "name", "nonneg")

    def __init__(self, kind: int, name: str = "", args: tuple = (), nonneg: bool = True):
        self.kind = kind
        self.name = name
        self.args = args
        self.nonneg = nonneg
        self.key = (kind, name, tuple(_sort_key(a) for a in args))
        self._hash = hash(self.key)

    def __eq__(self, other):
        return isinstance(other, Atom) and self.key == other.key

    def __reduce__(self):  # rebuilt, not copied: string hashes differ between processes
        return (Atom, (self.kind, self.name, self.args, self.nonneg))

    def __hash__(self):
        return self._hash

    def __lt__(self, other):
        return self.key < other.key

    def __str__(self):
        if self.kind == _SYM:
            return self.name
        a, b = (format_dim(x) for x in self.args)
        if self.kind in (_MAX, _MIN):
            if isinstance(self.args[0], int):  # constants read better last: max(n - 2, 0)
                a, b = b, a
            return f"{_OP_TEXT[self.kind]}({a}, {b})"
        return f"({a}) {_OP_TEXT[self.kind]} {b}" if " " in a else f"{a} {_OP_TEXT[self.kind]} {b}"

    def evaluate(self, env) -> int:
        if self.kind == _SYM:
            try:
                return env[self.name]
            except KeyError:
                raise KeyError(f"no value bound for size symbol {self.name!r}") from None
        a, b = (evaluate(x, env) for x in self.args)
        if self.kind == _FLOORDIV:
            return a // b
        if self.kind == _MOD:
            return a % b
        return max(a, b) if self.kind == _MAX else min(a, b)


def _sort_key(d: Dim):
    return (0, d) if isinstance(d, int) else (1, d.terms_key)


class Expr:
    """Canonical polynomial: a sorted tuple of (monomial, coefficient); a monomial is a sorted
    tuple of atoms (repeated for powers); the constant term has the empty monomial."""

    __slots__ = ("_hash", "terms", "terms_key")

    def __init__(self, terms: tuple):
        self.terms = terms
        self.terms_key = tuple((tuple(a.key for a in mono), c) for mono, c in terms)
        self._hash = hash(self.terms_key)

    def __reduce__(self):  # rebuilt, not copied: string hashes differ between processes
        return (Expr, (self.terms,))

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def _make(acc: dict) -> Dim:
        items = sorted(((m, c) for m, c in acc.items() if c != 0), key=lambda t: _mono_key(t[0]))
        if not items:
            return 0
        if len(items) == 1 and items[0][0] == ():
            return items[0][1]
        return Expr(tuple(items))

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, other):
        if not _is_dim(other):
            return NotImplemented  # an array or a float: its own operator decides
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return add(self, mul(other, -1))

    def __rsub__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return add(other, mul(self, -1))

    def __mul__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return mul(self, other)

    __rmul__ = __mul__

    def __neg__(self):
        return mul(self, -1)

    def __floordiv__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return floordiv(self, other)

    def __rfloordiv__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return floordiv(other, self)

    def __mod__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return mod(self, other)

    def __rmod__(self, other):
        if not _is_dim(other):
            return NotImplemented
        return mod(other, self)

    def __index__(self):
        raise TypeError(f"the size {self} is symbolic: it is only known at run time")

    # -- identity -------------------------------------------------------------------------------
    def __eq__(self, other):
        if not _is_dim(other):
            return NotImplemented  # an array compares elementwise: its own operator decides
        return isinstance(other, Expr) and self.terms_key == other.terms_key

    def __hash__(self):
        return self._hash

    def __bool__(self):
        return True  # a non-constant polynomial is never identically zero

    def __repr__(self):
        return f"Expr({self})"

    def __str__(self):
        if len(self.terms) == 1 and len(self.terms[0][0]) == 1 and self.terms[0][1] == 1:
            return str(self.terms[0][0][0])
        return _format_terms(self.terms)


def _mono_key(mono: tuple):
    # Constant term last; higher degree first; then atom order.
    return (mono == (), -len(mono), tuple(a.key for a in mono))


def _is_dim(d) -> bool:
    return isinstance(d, Expr) or (isinstance(d, int) and not isinstance(d, bool))


def _terms(d: Dim) -> dict:
    if isinstance(d, Expr):
        return dict(d.terms)
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"a size must be an int or a symbolic size, not {type(d).__name__}")
    return {(): d}


def _format_terms(terms) -> str:
    out = []
    # Display order: positive terms, then negative ones, then the constant (x.0 - k.0 + 1).
    terms = sorted(terms, key=lambda t: (t[0] == (), t[1] < 0))
    for mono, c in terms:
        body = "*".join(
            str(a) if a.kind == _SYM or a.kind in (_MAX, _MIN) else f"({a})" for a in mono
        )
        mag = abs(c)
        text = str(mag) if not mono else (body if mag == 1 else f"{mag}*{body}")
        if not out:
            out.append(text if c > 0 else f"-{text}")
        else:
            out.append(f" + {text}" if c > 0 else f" - {text}")
    return "".join(out)


def Sym(name: str, nonneg: bool = True) -> Expr:
    """A named size symbol (sizes are non-negative unless said otherwise)."""
    return Expr((((Atom(_SYM, name, nonneg=nonneg),), 1),))


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    acc = _terms(a)
    for m, c in _terms(b).items():
        acc[m] = acc.get(m, 0) + c
    return Expr._make(acc)


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    acc: dict = {}
    for ma, ca in _terms(a).items():
        for mb, cb in _terms(b).items():
            m = tuple(sorted(ma + mb))
            acc[m] = acc.get(m, 0) + ca * cb
    return Expr._make(acc)


def _exact_quotient(a: Dim, b: Dim) -> Dim | None:
    """a / b when b is one monomial that divides every term of a exactly, else None."""
    tb = _terms(b)
    if len(tb) != 1:
        return None
    ((mb, cb),) = tb.items()
    if cb == 0:
        return None
    acc = {}
    for ma, ca in _terms(a).items():
        rest = list(ma)
        for atom in mb:
            if atom not in rest:
                return None
            rest.remove(atom)
        if ca % cb:
            return None
        acc[tuple(rest)] = ca // cb
    return Expr._make(acc)


def floordiv(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if b == 0:
        raise ZeroDivisionError("symbolic size divided by zero")
    q = _exact_quotient(a, b)
    if q is not None:
        return q
    return _atom_expr(_FLOORDIV, a, b)


def mod(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    if _exact_quotient(a, b) is not None:
        return 0
    return _atom_expr(_MOD, a, b)


def smax(a: Dim, b: Dim) -> Dim:
    """max(a, b), simplified when the order of a and b is provable."""
    return _minmax(_MAX, a, b)


def smin(a: Dim, b: Dim) -> Dim:
    return _minmax(_MIN, a, b)


def _minmax(kind: int, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b) if kind == _MAX else min(a, b)
    diff = add(a, mul(b, -1))
    if is_nonneg(diff):
        return a if kind == _MAX else b
    if is_nonneg(mul(diff, -1)):
        return b if kind == _MAX else a
    a, b = sorted((a, b), key=_sort_key)
    return _atom_expr(kind, a, b)


def _atom_expr(kind: int, a: Dim, b: Dim) -> Expr:
    if kind in (_FLOORDIV, _MOD):
        nonneg = is_nonneg(a) and isinstance(b, int) and b > 0
    elif kind == _MAX:
        nonneg = is_nonneg(a) or is_nonneg(b)
    else:
        nonneg = is_nonneg(a) and is_nonneg(b)
    return Expr((((Atom(kind, args=(a, b), nonneg=nonneg),), 1),))


def is_nonneg(d: Dim) -> bool:
    """True when d >= 0 is provable (every coefficient >= 0 over non-negative atoms)."""
    if isinstance(d, int):
        return d >= 0
    return all(c >= 0 and all(a.nonneg for a in m) for m, c in d.terms)


def provably_nonneg(d: Dim, depth: int = 4) -> bool:
    """True when d >= 0 is provable, also through ``max`` and ``min``: a max with a positive
    coefficient is at least either argument, a min with a negative one at most either (each
    replaced by one of its arguments, up to ``depth`` times)."""
    if is_nonneg(d):
        return True
    if isinstance(d, int) or depth <= 0:
        return False
    for mono, c in d.terms:
        if len(mono) != 1:
            continue
        atom = mono[0]
        if (atom.kind == _MAX and c > 0) or (atom.kind == _MIN and c < 0):
            for arg in atom.args:
                if provably_nonneg(_replace_atom(d, atom, arg), depth - 1):
                    return True
    return False


def _replace_atom(d: Expr, atom: Atom, value: Dim) -> Dim:
    total: Dim = 0
    for mono, c in d.terms:
        term: Dim = c
        for a in mono:
            term = mul(term, value if a == atom else Expr((((a,), 1),)))
        total = add(total, term)
    return total


def evaluate(d: Dim, env) -> int:
    """The value of d for concrete symbol values ``env`` (a mapping name -> int)."""
    if isinstance(d, int):
        return d
    total = 0
    for mono, c in d.terms:
        v = c
        for atom in mono:
            v *= atom.evaluate(env)
        total += v
    return total


def free_symbols(d: Dim) -> frozenset[str]:
    if isinstance(d, int):
        return frozenset()
    out: set[str] = set()
    for mono, _ in d.terms:
        for atom in mono:
            if atom.kind == _SYM:
                out.add(atom.name)
            else:
                for x in atom.args:
                    out |= free_symbols(x)
    return frozenset(out)


def affine(d: Dim, name: str) -> tuple[int, Dim] | None:
    """``(a, b)`` with ``d == a * name + b`` and ``b`` free of ``name``; None when ``d`` is not
    affine in the symbol (a product with it, or it inside ``//``, ``%``, ``max``, ``min``)."""
    if isinstance(d, int) or name not in free_symbols(d):
        return 0, d
    a, rest = 0, {}
    for mono, c in d.terms:
        if any(atom.kind == _SYM and atom.name == name for atom in mono):
            if len(mono) != 1:
                return None
            a += c
        elif any(name in free_symbols(x) for atom in mono for x in atom.args):
            return None
        else:
            rest[mono] = c
    return a, Expr._make(rest)


def substitute(d: Dim, name: str, value: Dim) -> Dim:
    """``d`` with the symbol ``name`` replaced by ``value`` (inside opaque atoms too)."""
    if isinstance(d, int) or name not in free_symbols(d):
        return d
    total: Dim = 0
    for mono, c in d.terms:
        term: Dim = c
        for atom in mono:
            if atom.kind == _SYM:
                x = value if atom.name == name else Expr((((atom,), 1),))
            else:
                a, b = (substitute(arg, name, value) for arg in atom.args)
                x = {_FLOORDIV: floordiv, _MOD: mod, _MAX: smax, _MIN: smin}[atom.kind](a, b)
            term = mul(term, x)
        total = add(total, term)
    return total


def as_symbol(d: Dim) -> str | None:
    """The symbol's name when d is exactly one symbol, else None."""
    if isinstance(d, Expr) and len(d.terms) == 1:
        mono, c = d.terms[0]
        if c == 1 and len(mono) == 1 and mono[0].kind == _SYM:
            return mono[0].name
    return None


def format_dim(d: Dim) -> str:
    return str(d)


def format_code(d: Dim, name_of) -> str:
    """``d`` as a Python expression; ``name_of(symbol)`` gives each symbol's variable name."""
    if isinstance(d, int):
        return str(d)
    parts = []
    for mono, c in d.terms:
        factors = [_atom_code(a, name_of) for a in mono]
        if not factors:
            parts.append((c, str(abs(c))))
        elif abs(c) == 1:
            parts.append((c, " * ".join(factors)))
        else:
            parts.append((c, " * ".join([str(abs(c)), *factors])))
    text = ""
    for i, (c, t) in enumerate(parts):
        if i == 0:
            text = t if c > 0 else f"-{t}"
        else:
            text += f" + {t}" if c > 0 else f" - {t}"
    return text if len(parts) == 1 and parts[0][0] > 0 else f"({text})"


def bare(code: str) -> str:
    """``code`` without parentheses around the whole of it (an argument, a right-hand side:
    sizes are written as operands, ``(n - 2)``, and linters flag a call's ``f((n - 2))``)."""
    while code.startswith("(") and code.endswith(")"):
        depth = 0
        for i, ch in enumerate(code):
            depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
            if depth == 0 and i < len(code) - 1:
                return code  # "(a) * (b)": the first group closes before the end
        code = code[1:-1]
    return code


def _paren(text: str) -> str:
    return f"({text})" if " " in text and not text.startswith("(") else text


def _atom_code(a: Atom, name_of) -> str:
    if a.kind == _SYM:
        return name_of(a.name)
    x, y = (_paren(format_code(v, name_of)) for v in a.args)
    if a.kind == _FLOORDIV:
        return f"({x} // {y})"
    if a.kind == _MOD:
        return f"({x} % {y})"
    return f"{'max' if a.kind == _MAX else 'min'}({x}, {y})"


def is_dim(x) -> bool:
    return isinstance(x, Expr) or (isinstance(x, int) and not isinstance(x, bool))


class SymFloat:
    """A float that depends on sizes: ``const + sum(coef * size)`` (``n + 1.0``, ``n / 2``).

    Python arithmetic between a size and a float gives one, so ``np.arange(1.0, n + 1.0)``
    keeps a symbolic length. It evaluates to a Python float (``resolve``).
    """

    __slots__ = ("const", "terms")

    def __init__(self, const: float, terms: tuple):
        self.const = float(const)
        self.terms = tuple((e, float(c)) for e, c in terms if c != 0)

    @staticmethod
    def of(v) -> SymFloat | None:
        if isinstance(v, SymFloat):
            return v
        if isinstance(v, Expr):
            return SymFloat(0.0, ((v, 1.0),))
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return SymFloat(v, ())
        return None

    def _combine(self, other: SymFloat, sign: float) -> SymFloat:
        terms = dict(self.terms)
        for e, c in other.terms:
            terms[e] = terms.get(e, 0.0) + sign * c
        return SymFloat(self.const + sign * other.const, tuple(terms.items()))

    def add(self, other):
        o = SymFloat.of(other)
        return None if o is None else self._combine(o, 1.0)

    def sub(self, other):
        o = SymFloat.of(other)
        return None if o is None else self._combine(o, -1.0)

    def scale(self, k: float) -> SymFloat:
        return SymFloat(self.const * k, tuple((e, c * k) for e, c in self.terms))

    def as_size(self):
        """The value as a size when it is an integer for every size (else None)."""
        if not all(c.is_integer() for _, c in self.terms) or not self.const.is_integer():
            return None
        out: Dim = int(self.const)
        for e, c in self.terms:
            out = add(out, mul(int(c), e))
        return out

    def _rational(self):
        """(numerator size, denominator) with value = numerator / denominator, if rational."""
        from fractions import Fraction

        parts = [Fraction(c).limit_denominator(1 << 20) for _, c in self.terms]
        const = Fraction(self.const).limit_denominator(1 << 20)
        if any(float(p) != c for p, (_, c) in zip(parts, self.terms)) or float(const) != (
            self.const
        ):
            return None
        q = 1
        for p in (*parts, const):
            q = q * p.denominator // __import__("math").gcd(q, p.denominator)
        num: Dim = int(const * q)
        for p, (e, _) in zip(parts, self.terms):
            num = add(num, mul(int(p * q), e))
        return num, q

    def floor_size(self):
        """floor(value) as a size (``n / 2`` -> ``n // 2``), or None."""
        r = self._rational()
        return None if r is None else floordiv(r[0], r[1])

    def ceil_size(self):
        """ceil(value) as a size, or None."""
        r = self._rational()
        return None if r is None else mul(floordiv(mul(r[0], -1), r[1]), -1)

    def resolve(self, env) -> float:
        return self.const + sum(c * evaluate(e, env) for e, c in self.terms)

    def __eq__(self, other):
        return isinstance(other, SymFloat) and (self.const, self.terms) == (
            other.const,
            other.terms,
        )

    def __hash__(self):
        return hash((self.const, self.terms))

    def __str__(self):
        parts = [f"{c:g}*{e}" if c != 1 else str(e) for e, c in self.terms]
        return " + ".join(parts + [repr(self.const)])

    __repr__ = __str__
