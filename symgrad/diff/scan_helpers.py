"""Rule helpers of the running products and log-sum-exps (rules/scans.yaml).

Both derivatives are written through the lower-triangular pattern of a scan: along the
scanned axis, result j depends on inputs i <= j. With the pair (i, j) laid out on two
axes (i at ``axis``, j at ``axis + 1``), each gradient is a masked sum over j and each
tangent a masked sum over i, built from sg ops that have rules, so they differentiate
again. This costs n² per slice but is exact: cumprod's d out_j / d x_i is the product
of the other factors (no division by x_i, so zeros are handled as torch does), and
logcumsumexp's is exp(x_i - out_j) with the exponent masked before exp.
"""
import numpy

from ..core.ops import pointwise as pw, reductions as red, scans, shape as sh
from ..errors import ShapeError


def _pair_masks(x, axis, name):
    """(diagonal i == j, upper j >= i) masks broadcastable over the (i, j) layout."""
    n = x.shape[axis]
    if not isinstance(n, int):
        raise ShapeError(f"{name}: the derivative needs a concrete length along axis {axis}, "
                         f"got {n}")
    tail = (1,) * (len(x.shape) - axis - 1)
    eye = numpy.eye(n, dtype=bool).reshape((n, n) + tail)
    upper = numpy.triu(numpy.ones((n, n), dtype=bool)).reshape((n, n) + tail)
    return eye, upper


def _pairs(t, axis, at):
    """``t`` spread over the (i, j) layout, its scanned axis playing ``at`` ("i" or "j")."""
    n = t.shape[axis]
    t = sh.unsqueeze(t, axis + 1 if at == "i" else axis)
    shape = t.shape[:axis] + (n, n) + t.shape[axis + 2:]
    return sh.broadcast_to(t, shape)


def _cumprod_others(x, axis):
    """C[i, j] = prod over k <= j, k != i of x_k, zero where j < i."""
    eye, upper = _pair_masks(x, axis, "cumprod")
    ones_on_diagonal = pw.where(eye, 1.0, _pairs(x, axis, "j"))
    return pw.where(upper, scans.cumprod(ones_on_diagonal, axis + 1), 0.0)


def cumprod_grad(grad, x, axis):
    return red.sum(_cumprod_others(x, axis) * _pairs(grad, axis, "j"), axis=axis + 1)


def cumprod_jvp(x_t, x, axis):
    return red.sum(_cumprod_others(x, axis) * _pairs(x_t, axis, "i"), axis=axis)


def _logcumsumexp_weights(x, result, axis):
    """W[i, j] = exp(x_i - out_j) for j >= i, else 0 (exp of 0 there, then masked)."""
    _, upper = _pair_masks(x, axis, "logcumsumexp")
    diff = pw.where(upper, _pairs(x, axis, "i") - _pairs(result, axis, "j"), 0.0)
    return pw.where(upper, pw.exp(diff), 0.0)


def logcumsumexp_grad(grad, x, result, axis):
    return red.sum(_logcumsumexp_weights(x, result, axis) * _pairs(grad, axis, "j"),
                   axis=axis + 1)


def logcumsumexp_jvp(x_t, x, result, axis):
    return red.sum(_logcumsumexp_weights(x, result, axis) * _pairs(x_t, axis, "i"),
                   axis=axis)
