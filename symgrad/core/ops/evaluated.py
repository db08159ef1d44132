"""Number operands of the special and rounding ops evaluate to numbers. Their SymPy
classes are generic (SymPy has no float16 rounding or scaled Bessel function), so without
this a form such as lgamma(2.5) would stay symbolic: constant folding and the per-element
``explicit`` forms get the value the op's own compiled code computes."""
import math

import numpy
import sympy
from sympy import S

from ..opdef import OPS, decode


def _number(value):
    if isinstance(value, (bool, numpy.bool_)):
        return S.true if value else S.false
    v = float(value)
    if math.isnan(v):
        return S.NaN
    if math.isinf(v):
        return S.Infinity if v > 0 else S.NegativeInfinity
    return sympy.Float(v)


def evaluate_numbers(*names):
    """Give the classes of the ops ``names`` an ``eval`` computing numbers."""
    for name in names:
        op = OPS[name]

        def evaluate(cls, *args, _op=op):
            k = _op.arity
            if not all(a.is_number and a.is_extended_real for a in args[:k]):
                return None
            params = {n: decode(p) for n, p in zip(_op.sympy_params or (), args[k:])}
            return _number(_op.function(*[float(a) for a in args[:k]], **params))
        op.sympy_class.eval = classmethod(evaluate)
