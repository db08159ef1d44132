"""torch's writes into a tensor at a constant index or mask: scatter (src, value, the
legacy reduce='add'/'multiply'), scatter_reduce (all five reductions), index_copy,
index_fill, index_reduce, index_put, put, masked_scatter, masked_select and the
decompositions' _unsafe_masked_index(_put_accumulate). Each finds the flat places written
when tracing and hands them to ``writes`` (accumulate, overwrite or reduce), so the
gradient follows torch's conventions: an overwritten write still gets the gradient of its
place (torch's ``grad.gather``), reductions split ties evenly.

scatter_add / scatter_reduce 'sum'/'mean' with an integer input as the index stay on
``put_along_add`` (gather.py's scatter_add), which reads the ids at call time.
"""
import numpy

from ..core import ops as sgo
from ..core.build import as_tensor
from ..core.graph import Tensor
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ShapeError
from . import writes
from .dispatch import rank_of, reject, shape_of, torch_op, unsupported
from .gather import index_operand


def _as_vector(x):
    """A 0-d tensor as one element (torch reads 0-d inputs of these functions so)."""
    return sgo.reshape(as_tensor(x), (1,)) if rank_of(x) == 0 else x


def _along(name, input, dim, index):
    """(flat places, axis) of scatter-style writes; 0-d inputs read as one element."""
    shape = writes.concrete(name, input) or (1,)
    ids = writes.const_index(name, index)
    if ids.ndim == 0:
        ids = ids.reshape(1)
    axis = normalize_axis(dim, max(rank_of(input), 1), name)
    return writes.along_positions(name, shape, ids, axis), ids.shape


def _index_along(name, input, dim, index, source):
    """Flat places of index_copy/index_reduce: ``index`` (1-d) picks slices along dim,
    one per slice of ``source``."""
    shape = writes.concrete(name, input) or (1,)
    ids = writes.const_index(name, index).reshape(-1)
    axis = normalize_axis(dim, max(rank_of(input), 1), name)
    src_shape = writes.concrete(name, source, "source") or (1,)
    want = shape[:axis] + (len(ids),) + shape[axis + 1:]
    if tuple(src_shape) != want:
        raise ShapeError(f"{name}: source of shape {fmt_shape(src_shape)} must have shape "
                         f"{fmt_shape(want)} (the input's with dim {axis} the index's length)")
    full = numpy.broadcast_to(ids.reshape((-1,) + (1,) * (len(shape) - axis - 1)), want)
    return writes.along_positions(name, shape, full, axis)


def _result(input, out):
    return sgo.reshape(out, ()) if rank_of(input) == 0 else out


@torch_op("torch.scatter", "Tensor.scatter")
def scatter(input, dim, index, src=None, value=None, *, reduce=None, out=None):
    name = "torch.scatter"
    reject(name, out=out)
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    pos, ids_shape = _along(name, input, dim, index)
    x = _as_vector(input)
    if src is None:
        source = writes.scalar_source(value, len(pos))
    else:
        source = writes.leading(_as_vector(src), ids_shape)
    if reduce is None:
        return _result(input, writes.overwrite(x, source, pos))
    if reduce == "add":
        return _result(input, writes.accumulate(x, source, pos))
    if reduce == "multiply":
        return _result(input, writes.reduce_into(name, x, source, pos, "prod"))
    raise unsupported(name, (input,), why=f"reduce={reduce!r}: give 'add' or 'multiply'")


@torch_op("torch.scatter_reduce", "Tensor.scatter_reduce")
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    name = "torch.scatter_reduce"
    reject(name, out=out)
    if isinstance(index, Tensor) and not (index.is_const or index.is_array) and \
            reduce in ("sum", "mean"):
        return _symbolic_scatter_reduce(input, dim, index, src, reduce, include_self)
    pos, ids_shape = _along(name, input, dim, index)
    source = writes.leading(_as_vector(src), ids_shape)
    return _result(input, writes.reduce_into(name, _as_vector(input), source, pos, reduce,
                                             include_self))


def _symbolic_scatter_reduce(input, dim, index, src, reduce, include_self):
    """sum/mean with ids read at call time (an integer input)."""
    from .gather import _leading
    ids = index_operand("torch.scatter_reduce", index)
    axis = normalize_axis(dim, rank_of(input), "scatter_reduce")
    src = _leading(src, shape_of(ids), "scatter_reduce")
    total = sgo.put_along_add(src, ids, axis=axis, shape=shape_of(input))
    ones = sgo.broadcast_to(as_tensor(1.0), shape_of(ids))
    count = sgo.detach(sgo.put_along_add(ones, ids, axis=axis, shape=shape_of(input)))
    if reduce == "sum":
        return input + total if include_self else sgo.where(count > 0, total, input)
    if include_self:
        return (input + total) / (count + 1)
    return sgo.where(count > 0, total / sgo.maximum(count, 1), input)


@torch_op("torch.index_copy", "Tensor.index_copy")
def index_copy(input, dim, index, source, *, out=None):
    name = "torch.index_copy"
    reject(name, out=out)
    pos = _index_along(name, input, dim, index, _as_vector(source))
    return _result(input, writes.overwrite(_as_vector(input), source, pos))


@torch_op("torch.index_fill", "Tensor.index_fill")
def index_fill(input, dim, index, value):
    name = "torch.index_fill"
    shape = writes.concrete(name, input) or (1,)
    axis = normalize_axis(dim, max(rank_of(input), 1), name)
    ids = numpy.unique(writes.checked(name, writes.const_index(name, index).reshape(-1),
                                      shape[axis], wrap=True))
    want = shape[:axis] + (len(ids),) + shape[axis + 1:]
    full = numpy.broadcast_to(ids.reshape((-1,) + (1,) * (len(shape) - axis - 1)), want)
    pos = writes.along_positions(name, shape, full, axis)
    return _result(input, writes.overwrite(_as_vector(input),
                                           writes.scalar_source(value, len(pos)), pos))


@torch_op("torch.index_reduce", "Tensor.index_reduce")
def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    name = "torch.index_reduce"
    reject(name, out=out)
    pos = _index_along(name, input, dim, index, _as_vector(source))
    return _result(input, writes.reduce_into(name, _as_vector(input), source, pos, reduce,
                                             include_self))


def subscript_positions(name, shape, indices, mode="check"):
    """(flat places, indexed shape) of ``x[indices]`` for a tuple of constant integer or
    bool index tensors over the leading dims of ``shape``; ``mode`` 'wrap' takes negative
    ids from the end, 'clamp' clamps into range (the _unsafe_ functions)."""
    arrays = []
    for k, index in enumerate(indices):
        if index is None:
            raise unsupported(name, why="a None entry among the indices is not mapped; "
                              "index the leading dims only")
        ids = writes.const_index(name, index)
        if ids.dtype == bool:
            dims = shape[len(arrays):len(arrays) + ids.ndim]
            if ids.shape != tuple(dims):
                raise ShapeError(f"{name}: mask of shape {fmt_shape(ids.shape)} does not "
                                 f"match the indexed dims {fmt_shape(dims)}")
            arrays.extend(numpy.nonzero(ids))
        else:
            arrays.append(ids)
    if len(arrays) > len(shape):
        raise ShapeError(f"{name}: {len(arrays)} indices for a tensor of shape "
                         f"{fmt_shape(shape)}")
    arrays = numpy.broadcast_arrays(*arrays) if arrays else []
    lead = tuple(shape[:len(arrays)])
    fixed = []
    for ids, size in zip(arrays, lead):
        if mode == "clamp":
            ids = numpy.clip(ids, 0, size - 1)
        elif mode == "clamp_wrap":
            ids = numpy.clip(ids, -size, size - 1)
        fixed.append(writes.checked(name, ids, size, wrap=mode != "check"))
    rest = tuple(shape[len(arrays):])
    batch = fixed[0].shape if fixed else ()
    inner = int(numpy.prod(rest, dtype=int))
    row = numpy.ravel_multi_index(tuple(fixed), lead) if fixed else numpy.zeros((), int)
    pos = (row[..., None] * inner + numpy.arange(inner)).reshape(-1)
    return pos.astype(numpy.int64), tuple(batch) + rest


def _values(values, indexed):
    return sgo.broadcast_to(as_tensor(values), indexed)


@torch_op("torch.index_put", "Tensor.index_put")
def index_put(input, indices, values, accumulate=False):
    name = "torch.index_put"
    shape = writes.concrete(name, input)
    pos, indexed = subscript_positions(name, shape, tuple(indices), mode="wrap")
    source = _values(values, indexed)
    if accumulate:
        return writes.accumulate(input, source, pos)
    return writes.overwrite(input, source, pos)


@torch_op("torch.put", "Tensor.put")
def put(input, index, source, accumulate=False):
    name = "torch.put"
    shape = writes.concrete(name, input)
    n = int(numpy.prod(shape, dtype=int))
    pos = writes.checked(name, writes.const_index(name, index).reshape(-1), n, wrap=True)
    if int(numpy.prod(shape_of(source), dtype=int)) != len(pos):
        raise ShapeError(f"{name}: source of shape {fmt_shape(shape_of(source))} must have "
                         f"as many elements as the index ({len(pos)})")
    write = writes.accumulate if accumulate else writes.overwrite
    return write(input, source, pos)


def _broadcast_pair(x, mask):
    shape = numpy.broadcast_shapes(tuple(shape_of(x)), mask.shape)
    return sgo.broadcast_to(as_tensor(x), shape), numpy.broadcast_to(mask, shape)


@torch_op("torch.masked_select", "Tensor.masked_select")
def masked_select(input, mask, *, out=None):
    name = "torch.masked_select"
    reject(name, out=out)
    writes.concrete(name, input)
    x, mask = _broadcast_pair(input, writes.const_mask(name, mask))
    return sgo.take(writes.flat(x), numpy.flatnonzero(mask), axis=0)


@torch_op("torch.masked_scatter", "Tensor.masked_scatter")
def masked_scatter(input, mask, source):
    name = "torch.masked_scatter"
    writes.concrete(name, input)
    x, mask = _broadcast_pair(input, writes.const_mask(name, mask))
    pos = numpy.flatnonzero(mask)
    have = int(numpy.prod(writes.concrete(name, source, "source"), dtype=int))
    if have < len(pos):
        raise ShapeError(f"{name}: the mask selects {len(pos)} places but the source of "
                         f"shape {fmt_shape(shape_of(source))} has only {have} elements")
    picked = sgo.take(writes.flat(source), numpy.arange(len(pos)), axis=0)
    return writes.overwrite(x, picked, pos)


@torch_op("torch._unsafe_masked_index")
def unsafe_masked_index(input, mask, indices, fill):
    name = "torch._unsafe_masked_index"
    shape = writes.concrete(name, input)
    pos, indexed = subscript_positions(name, shape, tuple(indices), mode="clamp")
    mask = writes.const_mask(name, mask)
    if not len(pos) or not int(numpy.prod(shape, dtype=int)):
        return sgo.broadcast_to(as_tensor(fill), numpy.broadcast_shapes(indexed, mask.shape))
    picked = sgo.reshape(sgo.take(writes.flat(input), pos, axis=0), indexed)
    return sgo.where(mask, picked, fill)


@torch_op("torch._unsafe_masked_index_put_accumulate")
def unsafe_masked_index_put_accumulate(input, mask, indices, values):
    name = "torch._unsafe_masked_index_put_accumulate"
    shape = writes.concrete(name, input)
    if not int(numpy.prod(shape, dtype=int)):
        return input
    pos, indexed = subscript_positions(name, shape, tuple(indices), mode="clamp_wrap")
    masked = sgo.where(writes.const_mask(name, mask), values, 0.0)
    return writes.accumulate(input, _values(masked, indexed), pos)
