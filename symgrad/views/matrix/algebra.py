"""The algebra of matrix-notation terms: ``Term`` and the constructors that keep terms
tidy as they are built (transposes pushed inwards and cancelled, scalar factors pulled to
the front of products, common factors taken out of sums)."""
from dataclasses import dataclass

import sympy

ADD, MUL, NEG, POW, ATOM = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Term:
    kind: str
    args: tuple = ()
    data: object = None


def sym(name):
    return Term("sym", (), name)


def num(value):
    return Term("num", (), sympy.sympify(value))


ONES = Term("ones")
EYE = Term("eye")


def is_num(t, value=None):
    return t.kind == "num" and (value is None or t.data == value)


def T(t):
    """The transpose of ``t``, pushed inwards and cancelled where the algebra allows."""
    k = t.kind
    if k == "T":
        return t.args[0]
    if k in ("num", "eye", "diag", "scalar"):
        return t
    if k == "mm":
        return mm(*[T(a) for a in reversed(t.args)])
    if k == "neg":
        return Term(k, (T(t.args[0]),) + t.args[1:], t.data)
    if k == "scale":
        return scale(t.args[0], T(t.args[1]))
    if k == "div":
        return Term("div", (T(t.args[0]), t.args[1]))
    return Term("T", (t,))


def _scalars_and_factors(f):
    """A factor of a product as (scalars, matrix factors): −(2 A B) gives ([−1, 2], [A, B])."""
    if f.kind == "neg":
        c, fs = _scalars_and_factors(f.args[0])
        return [num(-1)] + c, fs
    if f.kind == "scale":
        c, fs = _scalars_and_factors(f.args[1])
        return [f.args[0]] + c, fs
    if f.kind == "mm":
        return [], list(f.args)
    if f.kind == "eye":
        return [], []
    return [], [f]


def inv(t):
    """The inverse of ``t``, with (Aᵀ)⁻¹ written (A⁻¹)ᵀ so transposes can cancel."""
    if t.kind == "T":
        return T(Term("inv", (t.args[0],)))
    return Term("inv", (t,))


def mm(*factors):
    """A matrix product, flattened, with scalar factors (signs too) pulled to the front."""
    out, found = [], []
    for f in factors:
        c, fs = _scalars_and_factors(f)
        found += c
        out += fs
    value = sympy.S.One
    scalars = []
    for c in found:
        if is_num(c):
            value *= c.data
        else:
            scalars.append(c)
    negative = value.is_number and value.is_negative
    if value != 1:
        scalars.insert(0, num(-value if negative else value))
    if not out:
        out = [EYE]
    term = out[0] if len(out) == 1 else Term("mm", tuple(out))
    for c in reversed(scalars):
        term = scale(c, term)
    return Term("neg", (term,)) if negative else term


def scale(c, t):
    if is_num(c, 1):
        return t
    if is_num(c, -1):
        return Term("neg", (t,))
    if t.kind == "scale":
        c2, inner = t.args
        if is_num(c) and is_num(c2):
            return scale(num(c.data * c2.data), inner)
    if t.kind == "neg" and is_num(c):
        return scale(num(-c.data), t.args[0])
    return Term("scale", (c, t))


def _coefficient(t):
    """(numeric coefficient, rest) of a term: 2 x -> (2, x), −(c y) -> (−c, y)."""
    if t.kind == "neg":
        c, rest = _coefficient(t.args[0])
        return -c, rest
    if t.kind == "scale" and is_num(t.args[0]):
        c, rest = _coefficient(t.args[1])
        return t.args[0].data * c, rest
    return sympy.S.One, t


def add(a, b):
    """a + b, with a common right factor taken out (A x + B x = (A + B) x) and a common
    scalar factor too ((1/N) a − (1/N) b = (1/N) (a − b))."""
    if a == b:
        return scale(num(2), a)
    ca, ra = _coefficient(a)
    cb, rb = _coefficient(b)
    if ca == cb and ca != 1 and ca != -1:
        return scale(num(ca), add(ra, rb))
    if ca == -cb and ca != 1 and ca != -1:
        if ca.could_extract_minus_sign():
            return scale(num(cb), add(rb, Term("neg", (ra,))))
        return scale(num(ca), add(ra, Term("neg", (rb,))))
    if a.kind == "mm" and b.kind == "mm" and a.args[-1] == b.args[-1]:
        left = lambda t: t.args[0] if len(t.args) == 2 else Term("mm", t.args[:-1])
        return mm(Term("add", (left(a), left(b))), a.args[-1])
    return Term("add", (a, b))


def fn(name, *args, data=None):
    return Term("fn", tuple(args), (name, data))
