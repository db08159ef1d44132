"""torch's paired and NaN-skipping statistics on symbolic Tensors: var_mean, std_mean,
aminmax, nansum, nanmean, quantile and nanquantile, written with sg ops.

A quantile is read from the sorted slice (``take_along(x, argsort(x))``) at the
positions ``quantile_index`` gives, and interpolated between its neighbours with a
weight that carries no gradient, as torch's quantile does (its gradient goes to the one
or two elements it reads, (1 - w) and w).
"""
import numpy

from ..core import ops as sgo
from ..core.graph import Tensor
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ParameterError, ShapeError
from .dispatch import (check_float_dtype, constant_array, dim_arg, rank_of, reject, shape_of,
                       torch_op, unsupported)


def _return(name, *values):
    import torch
    return getattr(torch.return_types, name)(values)


def _correction(dim, unbiased, correction):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _paired(name, statistic):
    def handler(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        reject(name, out=out)
        dim, correction = _correction(dim, unbiased, correction)
        axis = dim_arg(dim)
        return (statistic(input, axis=axis, correction=correction, keepdims=keepdim),
                sgo.mean(input, axis=axis, keepdims=keepdim))
    return handler


torch_op("torch.var_mean")(_paired("torch.var_mean", sgo.var))
torch_op("torch.std_mean")(_paired("torch.std_mean", sgo.std))


@torch_op("torch.aminmax", "Tensor.aminmax")
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """(amin, amax): ties share the gradient, as in torch."""
    reject("torch.aminmax", out=out)
    if rank_of(input) == 0:
        if dim is not None:
            normalize_axis(dim, 1, "torch.aminmax")
        return _return("aminmax", input, input)
    axis = dim_arg(dim)
    return _return("aminmax", sgo.amin(input, axis=axis, keepdims=keepdim),
                   sgo.amax(input, axis=axis, keepdims=keepdim))


def _without_nan(x):
    return sgo.where(sgo.isnan(x), 0.0, x)


@torch_op("torch.nansum", "Tensor.nansum")
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The sum of the elements that are not NaN (NaNs get no gradient)."""
    reject("torch.nansum", out=out)
    check_float_dtype("torch.nansum", dtype)
    return sgo.sum(_without_nan(input), axis=dim_arg(dim), keepdims=keepdim)


@torch_op("torch.nanmean", "Tensor.nanmean")
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """The mean of the elements that are not NaN (NaN where a slice has none)."""
    reject("torch.nanmean", out=out)
    check_float_dtype("torch.nanmean", dtype)
    axis = dim_arg(dim)
    count = sgo.sum(sgo.where(sgo.isnan(input), 0.0, 1.0), axis=axis, keepdims=keepdim)
    return sgo.sum(_without_nan(input), axis=axis, keepdims=keepdim) / count


def _levels(name, q):
    """q as a list of 0-d levels (numbers, or elements of a symbolic q) and whether q is
    0-d; a constant q is checked to lie in [0, 1]."""
    if isinstance(q, Tensor) and not (q.is_const or q.is_array):
        if rank_of(q) > 1:
            raise ShapeError(f"{name}: q must be a number or 0-d/1-d, got shape "
                             f"{fmt_shape(shape_of(q))}")
        if rank_of(q) == 0:
            return [q], True
        n = shape_of(q)[0]
        if not isinstance(n, int):
            raise ShapeError(f"{name}: q needs a concrete length, got shape {fmt_shape((n,))}")
        return [sgo.take(q, numpy.array(k), axis=0) for k in range(n)], False
    levels = numpy.asarray(constant_array(name, q, "q must be a constant"), dtype=float)
    if levels.ndim > 1:
        raise ShapeError(f"{name}: q must be a number or 0-d/1-d, got shape {levels.shape}")
    if levels.size and not ((levels >= 0) & (levels <= 1)).all():
        raise ParameterError(f"{name}: q must be in [0, 1], got {levels.tolist()}")
    return [float(v) for v in levels.ravel()], levels.ndim == 0


def _one_quantile(x, s, axis, level, ignore_nan, interpolation):
    """The level-quantile along ``axis`` of ``x`` (sorted: ``s``), axis kept as size 1; the
    interpolation weight's gradient goes to a symbolic level, as torch's does."""
    n = shape_of(x)[axis]

    def at(above):
        index = sgo.quantile_index(x, level, axis=axis, ignore_nan=ignore_nan,
                                   interpolation=interpolation, above=above)
        return sgo.take_along(s, index, axis=axis), index

    below, i_below = at(False)
    if interpolation not in ("linear", "midpoint"):
        return below
    above, _ = at(True)
    if interpolation == "midpoint":
        return below + 0.5 * (above - below)
    nan = sgo.isnan(x)
    if ignore_nan:
        valid = sgo.sum(sgo.where(nan, 0.0, 1.0), axis=axis, keepdims=True)
        rank = sgo.maximum(level * (valid - 1.0), 0.0)
    else:
        some_nan = sgo.amax(sgo.where(nan, 1.0, 0.0), axis=axis, keepdims=True)
        rank = sgo.where(some_nan > 0.5, float(n - 1), level * (n - 1))
    weight = rank - i_below           # depends on q only, as in torch
    return below + weight * (above - below)


def _quantile(name, ignore_nan):
    def handler(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
        reject(name, out=out)
        levels, scalar = _levels(name, q)
        if dim is None or rank_of(input) == 0:
            if dim is not None:
                normalize_axis(dim, 1, name)
            x, axis = sgo.reshape(input, (-1,)), 0
        else:
            x, axis = input, normalize_axis(dim, rank_of(input), name)
        n = shape_of(x)[axis]
        if not isinstance(n, int):
            raise ShapeError(f"{name}: needs a concrete length along dim {dim}, the input "
                             f"has shape {fmt_shape(shape_of(input))}")
        if n == 0:
            raise ShapeError(f"{name}: the input of shape {fmt_shape(shape_of(input))} is "
                             "empty along the reduced dim")
        s = sgo.take_along(x, sgo.argsort(x, axis=axis), axis=axis)
        outs = []
        for level in levels:
            v = _one_quantile(x, s, axis, level, ignore_nan, interpolation)
            if dim is None or rank_of(input) == 0:     # torch keeps no dim of a 0-d input
                v = sgo.reshape(v, (1,) * rank_of(input) if keepdim else ())
            elif not keepdim:
                v = sgo.squeeze(v, axis)
            outs.append(v)
        if scalar:
            return outs[0]
        if not outs:
            raise ShapeError(f"{name}: q is empty")
        return sgo.stack(outs, axis=0)
    return handler


torch_op("torch.quantile", "Tensor.quantile")(_quantile("torch.quantile", False))
torch_op("torch.nanquantile", "Tensor.nanquantile")(_quantile("torch.nanquantile", True))
