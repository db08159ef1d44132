"""Writes of a source into a tensor at places known when tracing: the one engine behind
torch's scatter, index_copy, index_put, put, masked_scatter, scatter_reduce, index_reduce,
segment_reduce and embedding_bag when their index (or mask) is a constant.

Everything is flattened: ``pos[k]`` is the flat place of the result that the k-th source
element goes to. Then a write is one of

* accumulate: ``x + take_add(src, pos)`` (index_add, put(accumulate=True));
* overwrite: the last write to a place wins in value, as torch's CPU kernels do, while
  every source element gets the gradient of the place it was written to (torch's
  ``grad.gather(dim, index)`` even for overwritten writes);
* reduce: the writes to each place gathered into a padded table (places x most writes)
  with ``take``, the pads masked to the reduction's identity, then ``amax``/``amin``/
  ``prod`` over the table; ties share the gradient evenly, self counted among them (as
  torch counts it even with include_self=False), and prod's gradient is exact at zeros.

A constant index is needed because which writes collide decides the formula; a symbolic
integer index is refused with what to do instead.
"""
import numpy

from ..core import ops as sgo
from ..core.build import as_tensor, const
from ..core.graph import Tensor
from ..core.shapes import fmt_shape
from ..errors import ArgumentError, ShapeError
from .dispatch import constant_array, shape_of, unsupported


def const_index(name, index, what="index"):
    """The int64 NumPy value of a constant index (a constant node or array); a symbolic
    index is refused."""
    if isinstance(index, Tensor) and not (index.is_const or index.is_array):
        raise unsupported(name, (index,), why=f"the {what} must be a constant here (which "
                          "writes collide decides the formula); with an integer input use "
                          "scatter_add / index_add, or a constant index")
    array = constant_array(name, index, why=f"the {what} must be a constant")
    if array.dtype == bool:
        return array
    if array.size and not numpy.all(array == numpy.floor(array)):
        raise ArgumentError(f"{name}: the {what} must hold integers")
    return array.astype(numpy.int64)


def const_mask(name, mask):
    """The bool NumPy value of a constant mask."""
    if isinstance(mask, Tensor) and not (mask.is_const or mask.is_array):
        raise unsupported(name, (mask,), why="the mask must be a constant: the places it "
                          "selects decide the result's shape and the formula; use "
                          "torch.where(mask, x, y) to keep the shape")
    if isinstance(mask, Tensor) and mask.is_const:
        return numpy.full(concrete(name, mask, "mask"), bool(mask.attrs["value"]))
    return constant_array(name, mask, why="the mask must be a constant").astype(bool)


def concrete(name, x, what="input"):
    shape = tuple(shape_of(x))
    if not all(isinstance(d, int) for d in shape):
        raise ShapeError(f"{name}: the {what} of shape {fmt_shape(shape)} needs concrete "
                         "dims (the places written are counted when tracing)")
    return shape


def checked(name, ids, size, what="index", wrap=False):
    """``ids`` in [0, size): negative ids count from the end when ``wrap`` (torch.take,
    put, index_put); others raise ArgumentError naming the op."""
    ids = numpy.asarray(ids, dtype=numpy.int64)
    low = -size if wrap else 0
    bad = (ids < low) | (ids >= size)
    if bad.any():
        raise ArgumentError(f"{name}: {what} {int(ids[bad].ravel()[0])} is out of range "
                            f"for a dim of size {size}")
    return numpy.where(ids < 0, ids + size, ids)


def along_positions(name, shape, ids, axis):
    """Flat places in ``shape`` of writes at ``ids`` along ``axis`` (scatter's rule:
    out[i][index[i][j]] for axis 1)."""
    ids = checked(name, ids, shape[axis])
    if len(ids.shape) != len(shape):
        raise ShapeError(f"{name}: index of shape {fmt_shape(ids.shape)} must have the rank "
                         f"of the input {fmt_shape(shape)}")
    for k, (p, q) in enumerate(zip(shape, ids.shape)):
        if k != axis and q > p:
            raise ShapeError(f"{name}: index of shape {fmt_shape(ids.shape)} is larger than "
                             f"the input {fmt_shape(shape)} in dim {k}")
    grid = list(numpy.indices(ids.shape))
    grid[axis] = ids
    return numpy.ravel_multi_index(tuple(grid), shape).reshape(-1) if ids.size else \
        numpy.zeros(0, dtype=numpy.int64)


def flat(x):
    return sgo.reshape(as_tensor(x), (-1,))


def leading(src, shape):
    """``src`` cut to ``shape`` (scatter reads only that corner of src)."""
    if tuple(shape_of(src)) == tuple(shape):
        return src
    return src[tuple(slice(0, d) for d in shape)]


def accumulate(x, src, pos):
    """``x`` plus the flat ``src`` added at ``pos``."""
    shape = tuple(shape_of(x))
    n = int(numpy.prod(shape, dtype=int))
    if not len(pos):
        return x
    added = sgo.take_add(flat(src), pos, axis=0, size=n)
    return x + sgo.reshape(added, shape)


def overwrite(x, src, pos):
    """``x`` with the flat ``src`` written at ``pos``: the last write wins."""
    shape = tuple(shape_of(x))
    n = int(numpy.prod(shape, dtype=int))
    src = flat(src)
    if not len(pos):
        return x
    written = numpy.bincount(pos, minlength=n) > 0
    last = numpy.zeros(len(pos), dtype=bool)
    _, first_from_end = numpy.unique(pos[::-1], return_index=True)
    last[len(pos) - 1 - first_from_end] = True
    put = sgo.take_add(src, pos, axis=0, size=n)
    if not last.all():
        put = put - sgo.take_add(sgo.where(last, 0.0, sgo.detach(src)), pos, axis=0, size=n)
    return sgo.reshape(sgo.where(written, put, flat(x)), shape)


_FILL = {"amax": float("-inf"), "amin": float("inf"), "prod": 1.0}


def table(pos, n):
    """(ids, valid): row p of ``ids`` lists the source elements written to place p (in
    order), padded; ``valid`` marks the real entries."""
    counts = numpy.bincount(pos, minlength=n)
    width = int(counts.max()) if len(pos) else 0
    order = numpy.argsort(pos, kind="stable")
    dest = pos[order]
    rank = numpy.arange(len(pos)) - (numpy.cumsum(counts) - counts)[dest]
    ids = numpy.zeros((n, width), dtype=numpy.int64)
    valid = numpy.zeros((n, width), dtype=bool)
    ids[dest, rank] = order
    valid[dest, rank] = True
    return ids, valid


def reduce_into(name, x, src, pos, reduce, include_self=True):
    """``x`` with the flat ``src`` reduced into the places ``pos`` (scatter_reduce's
    reductions: sum, mean, prod, amax, amin); a place no write reaches keeps x."""
    shape = tuple(shape_of(x))
    n = int(numpy.prod(shape, dtype=int))
    src, xf = flat(src), flat(x)
    if reduce not in ("sum", "mean") and reduce not in _FILL:
        raise unsupported(name, (x,), why=f"reduce={reduce!r}: give 'sum', 'prod', 'mean', "
                          "'amax' or 'amin'")
    if not len(pos):
        return x
    counts = numpy.bincount(pos, minlength=n).astype(float)
    hit = counts > 0
    if reduce in ("sum", "mean"):
        total = sgo.take_add(src, pos, axis=0, size=n)
        if reduce == "sum":
            out = xf + total if include_self else sgo.where(hit, total, xf)
        elif include_self:
            out = (xf + total) / (counts + 1.0)
        else:
            out = sgo.where(hit, total / numpy.maximum(counts, 1.0), xf)
        return sgo.reshape(out, shape)
    ids, valid = table(pos, n)
    candidates = sgo.where(valid, sgo.take(src, ids, axis=0), _FILL[reduce])
    if include_self:
        candidates = sgo.concat(sgo.reshape(xf, (n, 1)), candidates, axis=1)
    elif reduce != "prod":
        # torch counts self among the ties even when it is left out (its share is then
        # dropped): a detached self joins the candidates exactly where it ties
        best = sgo.detach({"amax": sgo.amax, "amin": sgo.amin}[reduce](candidates, axis=1))
        tied = sgo.where(sgo.detach(xf) == best, sgo.detach(xf), _FILL[reduce])
        candidates = sgo.concat(sgo.reshape(tied, (n, 1)), candidates, axis=1)
    reduced = {"amax": sgo.amax, "amin": sgo.amin, "prod": sgo.prod}[reduce](candidates,
                                                                           axis=1)
    if not include_self:
        reduced = sgo.where(hit, reduced, xf)
    return sgo.reshape(reduced, shape)


def scalar_source(value, count):
    """A number or 0-d value repeated ``count`` times, as a flat source."""
    return sgo.broadcast_to(sgo.reshape(as_tensor(value), ()) if isinstance(value, Tensor)
                            else const(float(value)), (count,))
