"""torch's sorting and selection functions on symbolic Tensors: sort, msort, argsort,
topk, kthvalue, median, nanmedian, mode, cummax, cummin, argmax, argmin.

Each returns its values read at integer indices (``take_along(x, index)`` with an index
op of ``core.ops.sorting``), and the indices as an integer symbolic Tensor, as torch
does: the gradient goes to the picked element. ``median(x)`` and ``nanmedian(x)`` over
everything share the gradient between elements equal to the median, as torch does.
"""
import math

from ..core import ops as sgo
from ..core.constructors import full
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ParameterError, ShapeError
from .dispatch import rank_of, reject, shape_of, torch_op


def _return(name, values, indices):
    import torch
    return getattr(torch.return_types, name)((values, indices))


def lifted(fn):
    """Run ``fn(x, axis)`` on a 0-d ``x`` as on one element (torch accepts dim 0 or -1)."""
    def run(name, x, dim, *rest):
        if rank_of(x) == 0:
            normalize_axis(dim, 1, name)
            out = fn(sgo.reshape(x, (1,)), 0, *rest)
            return tuple(sgo.reshape(o, ()) for o in out)
        return fn(x, normalize_axis(dim, rank_of(x), name), *rest)
    return run


@lifted
def _sorted(x, axis, descending, start, stop):
    index = sgo.argsort(x, axis=axis, descending=descending, start=start, stop=stop)
    return sgo.take_along(x, index, axis=axis), index


@lifted
def _picked(x, axis, keepdim, index_of):
    index = index_of(x, axis)
    values = sgo.take_along(x, index, axis=axis)
    if keepdim:
        return values, index
    return sgo.squeeze(values, axis), sgo.squeeze(index, axis)


@lifted
def _running(x, axis, largest):
    index = sgo.running_index(x, axis=axis, largest=largest)
    return sgo.take_along(x, index, axis=axis), index


@torch_op("torch.sort", "Tensor.sort")
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """The stable order, which is torch's on the CPU even when ``stable=False``."""
    reject("torch.sort", out=out)
    if isinstance(dim, bool):            # sort(x, stable=..., dim=...) spelt positionally
        raise ParameterError("torch.sort: dim must be an int")
    n = shape_of(input)[normalize_axis(dim, max(rank_of(input), 1), "torch.sort")] \
        if rank_of(input) else 1
    return _return("sort", *_sorted("torch.sort", input, dim, descending, 0, n))


@torch_op("torch.msort", "Tensor.msort")
def msort(input, *, out=None):
    reject("torch.msort", out=out)
    return sort(input, 0)[0]


@torch_op("torch.argsort", "Tensor.argsort")
def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending)[1]


@torch_op("torch.topk", "Tensor.topk")
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The first ``k`` of the stable order (``sorted=False`` returns them sorted too)."""
    reject("torch.topk", out=out)
    n = shape_of(input)[normalize_axis(dim, rank_of(input), "torch.topk")] \
        if rank_of(input) else 1
    if isinstance(n, int) and not 0 <= k <= n:
        raise ShapeError(f"torch.topk: k={k} is out of range for a dim of size {n} "
                         f"(input of shape {fmt_shape(shape_of(input))})")
    return _return("topk", *_sorted("torch.topk", input, dim, largest, 0, k))


@torch_op("torch.kthvalue", "Tensor.kthvalue")
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    reject("torch.kthvalue", out=out)
    n = shape_of(input)[normalize_axis(dim, rank_of(input), "torch.kthvalue")] \
        if rank_of(input) else 1
    if isinstance(n, int) and not 1 <= k <= n:
        raise ShapeError(f"torch.kthvalue: k={k} is out of range for a dim of size {n} "
                         f"(input of shape {fmt_shape(shape_of(input))})")
    return _return("kthvalue", *_picked(
        "torch.kthvalue", input, dim, keepdim,
        lambda x, axis: sgo.argsort(x, axis=axis, start=k - 1, stop=k)))


def _whole_median(x, ignore_nan):
    """The median of all of ``x``, its gradient shared by the elements equal to it
    (torch's evenly_distribute_backward; NaN counts as equal to a NaN median). The
    median of nothing is nan, as torch's: where x may be empty the median is read from x
    with a nan after it (median_index is 0 there)."""
    flat = sgo.reshape(x, (-1,)) if rank_of(x) != 1 else x
    index = sgo.median_index(flat, axis=0, ignore_nan=ignore_nan)
    n = shape_of(flat)[0]
    padded = flat if isinstance(n, int) and n > 0 else \
        sgo.concatenate([flat, full((1,), math.nan)])
    m = sgo.detach(sgo.take_along(padded, index, axis=0))
    same = sgo.logical_or(sgo.eq(flat, m),
                          sgo.logical_and(sgo.isnan(flat), sgo.isnan(m)))
    return sgo.sum(sgo.where(same, flat, 0.0)) / sgo.sum(sgo.where(same, 1.0, 0.0))


def _median(name, ignore_nan):
    short = name.rsplit(".", 1)[-1]

    def handler(input, dim=None, keepdim=False, *, out=None):
        reject(name, out=out)
        if dim is None:
            return _whole_median(input, ignore_nan)
        return _return(short, *_picked(
            name, input, dim, keepdim,
            lambda x, axis: sgo.median_index(x, axis=axis, ignore_nan=ignore_nan)))
    return handler


torch_op("torch.median", "Tensor.median")(_median("torch.median", False))
torch_op("torch.nanmedian", "Tensor.nanmedian")(_median("torch.nanmedian", True))


@torch_op("torch.mode", "Tensor.mode")
def mode(input, dim=-1, keepdim=False, *, out=None):
    reject("torch.mode", out=out)
    return _return("mode", *_picked("torch.mode", input, dim, keepdim,
                                    lambda x, axis: sgo.mode_index(x, axis=axis)))


def _cumulative(name, largest):
    short = name.rsplit(".", 1)[-1]

    def handler(input, dim, *, out=None):
        reject(name, out=out)
        return _return(short, *_running(name, input, dim, largest))
    return handler


torch_op("torch.cummax", "Tensor.cummax")(_cumulative("torch.cummax", True))
torch_op("torch.cummin", "Tensor.cummin")(_cumulative("torch.cummin", False))


def arg_extreme(name, input, dim, keepdim, largest):
    """torch.argmax/argmin and the indices of torch.max/min(x, dim): the first extremum;
    over everything (dim=None) the position in the flattened input."""
    if dim is None:
        flat = sgo.reshape(input, (-1,))
        index = sgo.squeeze(sgo.arg_extreme(flat, axis=0, largest=largest), 0)
        return sgo.reshape(index, (1,) * rank_of(input)) if keepdim else index
    return _picked(name, input, dim, keepdim,
                   lambda x, axis: sgo.arg_extreme(x, axis=axis, largest=largest))[1]


@torch_op("torch.argmax", "Tensor.argmax")
def argmax(input, dim=None, keepdim=False, *, out=None):
    reject("torch.argmax", out=out)
    return arg_extreme("torch.argmax", input, dim, keepdim, True)


@torch_op("torch.argmin", "Tensor.argmin")
def argmin(input, dim=None, keepdim=False, *, out=None):
    reject("torch.argmin", out=out)
    return arg_extreme("torch.argmin", input, dim, keepdim, False)
