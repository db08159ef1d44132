"""torch's integer-index functions on symbolic Tensors: embedding, index_select, gather,
take, take_along_dim, scatter_add, index_add, one_hot and ``x[ids]``, over the ops
``take``/``take_along`` and their scatter-add adjoints.

An index may be an integer input (``sg.TensorSpec(dims, dtype="int64")``), a traced
integer expression or a constant tensor: every form compiles to code that reads the ids
at call time and raises on one out of range, as torch does. Writes that need a constant
index (scatter, index_copy, index_put, the reductions, masked_select) are in
``scatter.py``; nonzero, whose shape depends on the values, is refused.
"""
import math

import numpy

from ..core import ops as sgo
from ..core.build import as_tensor
from ..core.graph import Tensor
from ..core.ops.indexing import _of_dims_only
from ..core.shapes import broadcast_shapes, fmt_shape, normalize_axis
from ..errors import ShapeError
from .dispatch import (constant_array, rank_of, reduce_loss, refuse, reject, shape_of,
                       torch_op, unsupported)


def _is_index(x):
    """A symbolic integer Tensor, or a torch/NumPy integer array."""
    if isinstance(x, Tensor):
        return x.kind == "int"
    dtype = getattr(x, "dtype", None)
    return dtype is not None and not getattr(dtype, "is_floating_point", False) and \
        "bool" not in str(dtype) and ("int" in str(dtype) or "long" in str(dtype))


def index_operand(name, index):
    """``index`` as an operand of the index ops: a symbolic integer Tensor as it is (or
    one computed from dims alone, as torch.arange(n) of a symbolic n), a constant as an
    integer array."""
    if isinstance(index, Tensor):
        if index.kind == "bool":
            raise unsupported(name, (index,), why="a boolean index selects a number of "
                              "elements that depends on its values; use torch.where or "
                              "masked_fill to keep the shape")
        if index.kind != "int" and not (index.is_const or index.is_array
                                        or _of_dims_only(index)):
            raise unsupported(name, (index,), why="indices must be integers: an integer "
                              "input (sg.TensorSpec(dims, dtype='int64')) or a constant")
        return index
    array = numpy.asarray(index.detach().cpu().numpy() if hasattr(index, "detach") else index)
    if array.dtype == bool:
        raise unsupported(name, (index,), why="a boolean index selects a number of elements "
                          "that depends on its values; use torch.where or masked_fill")
    return array.astype(numpy.int64)


@torch_op("F.embedding")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the ids in ``input`` (``take``): the gradient adds
    into the picked rows; the padding row gets none."""
    name = "torch.nn.functional.embedding"
    reject(name, max_norm=max_norm, scale_grad_by_freq=scale_grad_by_freq)
    ids = index_operand(name, input)
    if padding_idx is not None:
        rows = shape_of(weight)[0]
        if not isinstance(rows, int):
            raise ShapeError(f"{name}: padding_idx needs a concrete number of rows, the "
                             f"weight has shape {fmt_shape(shape_of(weight))}")
        pad = (numpy.arange(rows) == padding_idx % rows)[:, None]
        weight = sgo.where(pad, sgo.detach(weight), weight)
    return sgo.take(weight, ids, axis=0)


@torch_op("torch.index_select", "Tensor.index_select")
def index_select(input, dim, index, *, out=None):
    reject("torch.index_select", out=out)
    ids = index_operand("torch.index_select", index)
    if rank_of(input) == 0:                  # torch reads a 0-d input as one element
        picked = index_select(sgo.reshape(input, (1,)), 0, index)
        return sgo.reshape(picked, ())
    if rank_of(ids) > 1:
        raise ShapeError(f"index_select: the index must be 0-d or 1-d, got shape "
                         f"{fmt_shape(shape_of(ids))}")
    return sgo.take(input, ids, axis=normalize_axis(dim, rank_of(input), "index_select"))


@torch_op("torch.take", "Tensor.take")
def take(input, index):
    """Elements of the flattened input; negative ids count from the end, as in torch."""
    flat = sgo.reshape(input, (-1,))
    ids = index_operand("torch.take", index)
    size = shape_of(flat)[0]
    if isinstance(ids, Tensor) and (ids.is_const or ids.is_array) and isinstance(size, int):
        ids = constant_array("torch.take", ids, "a constant index").astype(numpy.int64)
    if isinstance(ids, Tensor):
        ids = sgo.where(ids < 0, ids + size, ids)
    else:
        ids = numpy.where((ids < 0) & (ids >= -size), ids + size, ids)
    return sgo.take(flat, ids, axis=0)


@torch_op("torch.gather", "Tensor.gather")
def gather(input, dim, index, *, sparse_grad=False, out=None):
    reject("torch.gather", out=out)
    ids = index_operand("torch.gather", index)
    ids_shape = tuple(shape_of(ids))
    if 0 in ids_shape:                       # torch allows an empty index of any rank
        return sgo.broadcast_to(as_tensor(0.0), ids_shape)
    if rank_of(input) == 0:                  # a 0-d input: one element, the index's shape
        flat = sgo.reshape(ids, (-1,)) if isinstance(ids, Tensor) else ids.reshape(-1)
        picked = sgo.take_along(sgo.reshape(input, (1,)), flat, axis=0)
        return sgo.reshape(picked, ids_shape)
    return sgo.take_along(input, ids, axis=normalize_axis(dim, rank_of(input), "gather"))


@torch_op("torch.take_along_dim", "Tensor.take_along_dim")
def take_along_dim(input, indices, dim=None, *, out=None):
    reject("torch.take_along_dim", out=out)
    ids = index_operand("torch.take_along_dim", indices)
    if dim is None:
        return sgo.take(sgo.reshape(input, (-1,)), sgo.reshape(ids, (-1,))
                        if isinstance(ids, Tensor) else ids.reshape(-1), axis=0)
    axis = normalize_axis(dim, rank_of(input), "take_along_dim")
    x_shape, i_shape = tuple(shape_of(input)), tuple(shape_of(ids))
    if len(i_shape) != len(x_shape):
        raise ShapeError(f"take_along_dim: indices of shape {fmt_shape(i_shape)} must have "
                         f"the rank of the input {fmt_shape(x_shape)}")
    rest = broadcast_shapes(x_shape[:axis] + x_shape[axis + 1:],
                            i_shape[:axis] + i_shape[axis + 1:])
    x_to = rest[:axis] + (x_shape[axis],) + rest[axis:]
    i_to = rest[:axis] + (i_shape[axis],) + rest[axis:]
    size = x_shape[axis]
    if isinstance(ids, Tensor) and (ids.is_const or ids.is_array) and isinstance(size, int):
        ids = constant_array("torch.take_along_dim", ids, "a constant index")
        ids = numpy.where((ids < 0) & (ids >= -size), ids + size, ids).astype(numpy.int64)
    elif isinstance(ids, Tensor):            # negative ids count from the end
        ids = sgo.where(ids < 0, ids + size, ids)
    ids = sgo.broadcast_to(ids, i_to) if isinstance(ids, Tensor) else \
        numpy.broadcast_to(ids, i_to)
    return sgo.take_along(sgo.broadcast_to(input, x_to), ids, axis=axis)


def _leading(src, index_shape, name):
    """``src`` cut to ``index_shape`` (torch reads only that corner of src)."""
    if tuple(shape_of(src)) == tuple(index_shape):
        return src
    if not all(isinstance(d, int) for d in tuple(shape_of(src)) + tuple(index_shape)):
        raise ShapeError(f"{name}: src of shape {fmt_shape(shape_of(src))} and index of "
                         f"shape {fmt_shape(index_shape)} must be equal when dims are symbolic")
    return src[tuple(slice(0, d) for d in index_shape)]


@torch_op("torch.scatter_add", "Tensor.scatter_add")
def scatter_add(input, dim, index, src):
    if rank_of(input) == 0:                  # 0-d input, index and src: one element
        def one(t):
            return sgo.reshape(t, (1,)) if isinstance(t, Tensor) else numpy.reshape(t, (1,))
        return sgo.reshape(scatter_add(one(input), 0, one(index), one(src)), ())
    ids = index_operand("torch.scatter_add", index)
    axis = normalize_axis(dim, rank_of(input), "scatter_add")
    src = _leading(src, shape_of(ids), "scatter_add")
    return input + sgo.put_along_add(src, ids, axis=axis, shape=shape_of(input))


@torch_op("torch.index_add", "Tensor.index_add")
def index_add(input, dim, index, source, *, alpha=1):
    ids = index_operand("torch.index_add", index)
    if rank_of(input) == 0:                  # a 0-d input and source: one element
        added = index_add(sgo.reshape(input, (1,)), 0, index, sgo.reshape(source, (1,))
                          if isinstance(source, Tensor) else source, alpha=alpha)
        return sgo.reshape(added, ())
    axis = normalize_axis(dim, rank_of(input), "index_add")
    added = sgo.take_add(source, ids, axis=axis, size=shape_of(input)[axis])
    return input + (added if alpha == 1 else alpha * added)


@torch_op("Tensor.__getitem__")
def getitem(input, key):
    """A torch tensor subscripted by symbolic ids (``table[ids]``)."""
    return sgo.getitem(as_tensor(input, "torch.Tensor.__getitem__"), key)


def traced_ids(scores, target):
    """Whether ``target`` holds class ids known only at run time (an integer input or a
    traced expression), not probabilities and not a constant."""
    return isinstance(target, Tensor) and not (target.is_const or target.is_array) and \
        rank_of(target) == rank_of(scores) - 1


def picked_loss(name, logp, target, weight, ignore_index, reduction, smoothing=0.0):
    """-logp at the target class (weighted, ``ignore_index`` masked, label smoothing
    mixing in the mean over classes), reduced as torch: a weighted mean divides by the
    summed weights of the kept targets."""
    keep = sgo.ne(target, ignore_index)
    ids = sgo.where(keep, target, 0)
    picked = sgo.squeeze(sgo.take_along(logp, sgo.unsqueeze(ids, -1), axis=-1), -1)
    kept = sgo.cast(keep)
    w = kept if weight is None else sgo.take(weight, ids, axis=0) * kept
    loss = -(w * picked)
    if smoothing:
        classes = shape_of(logp)[-1]
        spread = -sgo.sum(logp if weight is None else logp * weight, axis=-1) * kept
        loss = (1 - smoothing) * loss + smoothing / classes * spread
    if reduction != "mean":
        return reduce_loss(loss, reduction, name)
    return weighted_mean(loss, keep, sgo.sum(w))


def weighted_mean(loss, keep, weights):
    """The weighted mean loss as torch computes it from per-target ``loss`` (weighted,
    0 where ignored), the kept targets ``keep`` (bools) and their summed ``weights``: nan
    when every target is ignored, with a zero gradient (torch's kernel skips ignored
    targets); where the kept targets' weights sum to 0, torch's 0/0: nan for them, 0 for
    the ignored ones."""
    share = sgo.where(keep, loss / sgo.where(keep, weights, 1.0), 0.0)
    nothing = sgo.eq(sgo.sum(sgo.where(keep, 1.0, 0.0)), 0)
    return sgo.sum(share) + sgo.where(nothing, math.nan, 0.0)


@torch_op("F.one_hot")
def one_hot(tensor, num_classes=-1):
    if num_classes == -1:
        raise unsupported("torch.nn.functional.one_hot", (tensor,), why="num_classes=-1 "
                          "reads the largest id from the values; give num_classes")
    return sgo.one_hot(tensor, num_classes)


for _name, _why in {
    "torch.nonzero": "its result's shape depends on the values",
}.items():
    refuse(_why, _name, "Tensor." + _name.split(".")[-1])
