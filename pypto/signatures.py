"""The signature language of ``pypto transpile``: what calls a generated module is compiled for.

A signature is ``NAME(SPEC, ...)``, in a ``# pypto: export`` comment or ``--signature``::

    hdiff(f64[n + 4, m + 4, k], f64[n, m, k], f64)     sizes related by expressions
    blend(f32[n=1000], f32[n], float)                  n = 1000 is the size to compile on
    step(f64[n, 1], int=12, "mean", False)             a broadcast axis, an int, constants

SPEC is one of

* an array ``DTYPE[DIM, ...]`` (``f64[]`` is 0-d): DTYPE is a short code (``f16 f32 f64 i8 i16
  i32 i64 u8 u16 u32 u64 c64 c128 bool``) or a NumPy name; DIM is ``1`` (a broadcast axis), an
  expression over size names and integers (``n``, ``n + 4``, ``2 * n``, ``n // 2 - 1``), with an
  optional ``= INT``, the size to compile on (an integer alone is such a size too). Names and
  expressions say which sizes the compiler traces on: each name gets one size, the one given or
  one that keeps every axis above 1; the compiled program checks, when called, the assumptions
  it made on sizes, whatever the signature said;
* a Python scalar kind: ``float`` and ``complex`` (weak scalars, any value), ``int`` (any value:
  a size-like symbol; ``int=N`` gives the value to compile on), ``bool`` (compiled for True and
  for False);
* a NumPy scalar: its DTYPE alone (``f64`` is ``np.float64(...)``, strong under NEP 50;
  ``bool_`` is ``np.bool_``);
* a Python literal (``"mean"``, ``None``, ``0.5``, ``True``, ``(1, 2)``): a constant the
  function is specialized for.

``signature_of(name, args)`` writes the signature of one call, with its sizes as the sizes to
compile on (``f32[n=64, m=3]``), and reads back as that call's kinds (``example_args``).
"""

from __future__ import annotations

import ast
import re

import numpy as np

from .errors import TranspileError

DTYPES = {
    "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
    "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
    "u64": "uint64", "bool": "bool", "c64": "complex64", "c128": "complex128",
}  # fmt: skip
SHORT = {v: k for k, v in DTYPES.items()}
_SIZES = (5, 7, 11, 13, 17, 19, 23, 29)  # sizes to compile on, distinct per size name
_NAMES = ("n", "m", "k", "p", "q", "r", "s", "t")  # signature_of's size names, in order
_PYTHON = {"float": 0.5, "int": 3, "complex": 0.5 + 1j}


class SignatureError(TranspileError):
    """A signature that is not one (PPT120)."""


def parse_signature(text: str) -> tuple[str, list[str]]:
    """``"name(f32[n], float)"`` -> ("name", ["f32[n]", "float"])."""
    m = re.fullmatch(r"\s*(\w+)\s*\((.*)\)\s*", text)
    if m is None:
        raise SignatureError(f"signature {text!r} is not NAME(SPEC, ...)")
    return m.group(1), split_specs(m.group(2))


def split_specs(text: str) -> list[str]:
    """The SPECs of a signature's argument list (commas inside brackets and literals kept)."""
    specs, depth, cur, quote = [], 0, "", None
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "," and depth == 0:
            specs.append(cur.strip())
            cur = ""
            continue
        else:
            depth += 1 if ch in "[(" else -1 if ch in "])" else 0
        cur += ch
    if cur.strip():
        specs.append(cur.strip())
    return specs


def expand(specs: list[str]) -> list[list[str]]:
    """A signature's specializations: ``bool`` is two of them (True and False)."""
    found = [[]]
    for spec in specs:
        options = ["True", "False"] if spec.strip() == "bool" else [spec]
        found = [have + [o] for have in found for o in options]
    return found


def example_args(specs: list[str], rng) -> list:
    """Arguments of the kinds ``specs`` describe: random values, sizes from the names (the
    given ones, else sizes that keep every axis that is not ``1`` above 1)."""
    kinds = [_kind(s) for s in specs]
    given: dict[str, int] = {}
    names: list[str] = []
    for kind in kinds:
        for expr, value in kind[2] if kind[0] == "array" else ():
            for n in _names(expr):
                if n not in names:
                    names.append(n)
            named = isinstance(expr, ast.Name) and value is not None
            if named and given.setdefault(expr.id, value) != value:
                raise SignatureError(f"size {expr.id} is given as {given[expr.id]} and {value}")
    free = [n for n in names if n not in given]
    axes = [e for k in kinds if k[0] == "array" for e, _ in k[2] if not isinstance(e, ast.Constant)]
    sizes = _choose(free, given, axes)
    out = []
    for kind in kinds:
        if kind[0] == "array":
            shape = [_size(e, v, sizes) for e, v in kind[2]]
            bad = [d for d in shape if d < 0]
            if bad:
                raise SignatureError(f"{kind[3]!r}: an axis of size {bad[0]} for {sizes}")
            out.append(_values(rng, shape, kind[1]))
        elif kind[0] == "numpy":
            out.append(_values(rng, (), kind[1])[()])
        else:
            out.append(kind[1])
    return out


def _values(rng, shape, dtype: np.dtype) -> np.ndarray:
    """Random values of ``dtype`` (in range: unsigned ones not negative, integers small)."""
    data = np.asarray(rng.standard_normal(shape) * 3)
    if dtype.kind == "b":
        return np.asarray(data > 0)
    if dtype.kind in "iu":
        data = np.asarray(np.rint(np.abs(data) if dtype.kind == "u" else data))
    return np.asarray(data.astype(dtype))


def signature_of(name: str, args) -> str:
    """The signature of the call ``name(*args)``: its sizes as the sizes to compile on (equal
    sizes share a name: ``f(f32[n=64, 1], f32[m=3, n], float)``); reads back as these kinds."""
    named: dict[int, str] = {}
    specs = []
    for a in args:
        if isinstance(a, np.ndarray):
            dims = []
            for d in a.shape:
                if d == 1:
                    dims.append("1")
                elif d in named:
                    dims.append(named[d])
                else:
                    k = len(named)
                    named[d] = _NAMES[k] if k < len(_NAMES) else f"n{k}"
                    dims.append(f"{named[d]}={d}")
            specs.append(f"{SHORT.get(a.dtype.name, a.dtype.name)}[{', '.join(dims)}]")
        elif isinstance(a, np.generic):
            specs.append("bool_" if a.dtype.kind == "b" else SHORT.get(a.dtype.name, a.dtype.name))
        elif type(a) is int:
            specs.append(f"int={a}")
        elif type(a) in (float, complex):
            specs.append(type(a).__name__)
        else:
            specs.append(repr(a))
    return f"{name}({', '.join(specs)})"


def kind_check(name: str, value, gpu: bool = False) -> str:
    """The Python test that an argument has ``value``'s kind (what a specialization keys on,
    as ``@ppto.compile`` does); a GPU array's with ``gpu``."""
    if isinstance(value, np.ndarray):
        ones = " and ".join(
            f"{name}.shape[{i}] {'==' if d == 1 else '!='} 1" for i, d in enumerate(value.shape)
        )
        array = f"_gpu_array({name})" if gpu else f"type({name}) is np.ndarray"
        test = f"{array} and {name}.dtype == np.{value.dtype.name}"
        test += f" and {name}.ndim == {value.ndim}"
        return f"{test} and {ones}" if ones else test
    if isinstance(value, np.generic):  # a strong scalar: its dtype, any value
        return f"type({name}) is np.{type(value).__name__}"
    if type(value) in (float, int, complex):
        return f"type({name}) is {type(value).__name__}"
    if type(value) is bool or value is None:
        return f"{name} is {value!r}"
    test = f"type({name}) is {type(value).__name__} and {name} == {value!r}"
    if isinstance(value, tuple):  # (1,) == (1.0,): other constants to the compiler
        test += f" and repr({name}) == {repr(value)!r}"
    return test


# -- parsing one SPEC ----------------------------------------------------------------------------
def _kind(spec: str):
    """("array", dtype, [(size expression, given size or None)], spec) | ("numpy", dtype) |
    ("value", the Python value)."""
    text = spec.strip()
    m = re.fullmatch(r"(\w+)\[(.*)\]", text, re.S)
    if m is not None:
        dtype = _dtype(m.group(1), spec)
        return "array", dtype, [_dim(d, spec) for d in split_specs(m.group(2))], spec
    m = re.fullmatch(r"int\s*=\s*(-?\d+)", text)
    if m is not None:
        return "value", int(m.group(1))
    if text in _PYTHON:
        return "value", _PYTHON[text]
    if text == "bool_":
        return "numpy", np.dtype(np.bool_)
    if text in DTYPES and text != "bool":
        return "numpy", np.dtype(DTYPES[text])
    try:
        return "value", ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise SignatureError(
            f"argument kind {spec!r} is not DTYPE[SIZES], a scalar type (float, int, bool, "
            "complex), a NumPy scalar (f64, f32, i64, ...) or a literal"
        ) from None


def _dtype(code: str, spec: str) -> np.dtype:
    try:
        return np.dtype(DTYPES.get(code, code))
    except TypeError:
        raise SignatureError(f"{code!r} in {spec!r} is not a dtype") from None


def _dim(text: str, spec: str):
    expr, _, value = text.partition("=")
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        raise SignatureError(f"size {text!r} in {spec!r} is not an expression") from None
    for node in ast.walk(tree):
        allowed = (ast.BinOp, ast.UnaryOp, ast.Name, ast.Constant, ast.Load)
        ops = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.USub)
        if not isinstance(node, allowed + ops) or (
            isinstance(node, ast.Constant) and type(node.value) is not int
        ):
            raise SignatureError(f"size {text!r} in {spec!r}: sizes are names, integers, + - * //")
    given = None
    if value.strip():
        if not re.fullmatch(r"\d+", value.strip()):
            raise SignatureError(f"size {text!r} in {spec!r}: `= N` takes an integer")
        given = int(value)
    if isinstance(tree, ast.Constant):  # an integer alone: that size
        given = tree.value if given is None else given
    return tree, given


def _choose(free: list[str], given: dict, axes: list) -> dict:
    """Sizes for the names not given: the first that keep every axis above 1 and, where they
    can, give different sizes to different expressions (so that no trace assumes two axes are
    equal that the signature does not make equal)."""
    forms = {ast.unparse(e): e for e in axes}
    fallback = None
    for shift in range(0, 400, 4):
        sizes = dict(
            given, **{n: _SIZES[i % len(_SIZES)] + shift * (i + 1) for i, n in enumerate(free)}
        )
        values = [_eval(e, sizes) for e in forms.values()]
        if not free or all(v > 1 for v in values):
            if not free or len(set(values)) == len(values):
                return sizes
            fallback = fallback or sizes
    return fallback or sizes


def _names(expr) -> list[str]:
    return [n.id for n in ast.walk(expr) if isinstance(n, ast.Name)]


def _size(expr, given, sizes: dict) -> int:
    value = _eval(expr, sizes)
    if given is not None and value != given:
        raise SignatureError(f"size {ast.unparse(expr)} is {value} for {sizes}, not {given}")
    return value


def _eval(node, sizes: dict) -> int:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return sizes[node.id]
    if isinstance(node, ast.UnaryOp):
        return -_eval(node.operand, sizes)
    a, b = _eval(node.left, sizes), _eval(node.right, sizes)
    if isinstance(node.op, ast.Add):
        return a + b
    if isinstance(node.op, ast.Sub):
        return a - b
    if isinstance(node.op, ast.Mult):
        return a * b
    if b == 0:
        raise SignatureError(f"size {ast.unparse(node)} divides by 0 for {sizes}")
    return a // b
