"""Reductions beyond sum and mean: max/min (torch.max semantics), amax/amin, prod,
cumsum, var and std. Derivatives in rules/reductions.yaml.
"""
import sympy

from . import sympy_funcs as sf
from .errors import ShapeError
from .ops import _reduce_expr, _reduce_params, _reduce_shape, apply, defop
from .shapes import fmt_shape, normalize_axis


def _one_axis_params(op, shapes, axis=None, keepdims=False):
    if isinstance(axis, (tuple, list)) and len(axis) != 1:
        raise ShapeError(f"{op}: reduces over all axes or one axis, got axis={tuple(axis)}")
    if isinstance(axis, (tuple, list)):
        axis = axis[0]
    return _reduce_params(op, shapes, axis=axis, keepdims=keepdims)


def _extremum_params(op, shapes, axis=None, keepdims=False):
    """As torch: max(x) shares the gradient between ties, max(x, dim) sends it to the
    first maximum along dim, even when dim is x's only axis (``first``)."""
    return _one_axis_params(op, shapes, axis, keepdims) + (("first", axis is not None),)


def _stat_params(op, shapes, axis=None, correction=1, keepdims=False):
    if not isinstance(correction, (int, float)) or correction < 0:
        raise ValueError(f"{op}: correction must be a non-negative number, got {correction!r}")
    return _reduce_params(op, shapes, axis=axis, keepdims=keepdims) + (
        ("correction", correction),)


def _stat_expr(cls):
    base = _reduce_expr(cls)

    def expr(attrs, x):
        return cls(*base(attrs, x).args, sympy.sympify(attrs["correction"]))
    return expr


def _cumsum_params(op, shapes, axis):
    rank = len(shapes[0])
    if rank == 0:
        raise ShapeError(f"cumsum: needs at least one dim, got shape {fmt_shape(shapes[0])}")
    return (("axis", normalize_axis(axis, rank, op)),)


defop("amax", 1, _reduce_expr(sf.AmaxOp), shape=_reduce_shape, params=_reduce_params)
defop("amin", 1, _reduce_expr(sf.AminOp), shape=_reduce_shape, params=_reduce_params)
defop("max", 1, _reduce_expr(sf.MaxOp), shape=_reduce_shape, params=_extremum_params)
defop("min", 1, _reduce_expr(sf.MinOp), shape=_reduce_shape, params=_extremum_params)
defop("prod", 1, _reduce_expr(sf.ProdOp), shape=_reduce_shape, params=_one_axis_params)
defop("var", 1, _stat_expr(sf.VarOp), shape=_reduce_shape, params=_stat_params)
defop("std", 1, _stat_expr(sf.StdOp), shape=_reduce_shape, params=_stat_params)
defop("cumsum", 1, lambda attrs, x: sf.CumsumOp(x, sympy.Integer(attrs["axis"])),
      shape=lambda op, s, a: s[0], params=_cumsum_params)


def amax(x, axis=None, keepdims=False):
    """Largest element over ``axis`` (all axes when None); ties share the gradient."""
    return apply("amax", x, axis=axis, keepdims=keepdims)


def amin(x, axis=None, keepdims=False):
    return apply("amin", x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    """Largest element, over everything or along one axis. As in torch, ``max(x)`` splits
    the gradient between ties and ``max(x, axis)`` sends it to the first maximum. Returns
    the values only (``torch.max(x, dim)`` also returns indices)."""
    return apply("max", x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    return apply("min", x, axis=axis, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return apply("prod", x, axis=axis, keepdims=keepdims)


def cumsum(x, axis):
    return apply("cumsum", x, axis=axis)


def var(x, axis=None, correction=1, keepdims=False):
    """Variance with torch's default Bessel correction (``correction=1``); NumPy's
    ``ddof``."""
    return apply("var", x, axis=axis, correction=correction, keepdims=keepdims)


def std(x, axis=None, correction=1, keepdims=False):
    return apply("std", x, axis=axis, correction=correction, keepdims=keepdims)
