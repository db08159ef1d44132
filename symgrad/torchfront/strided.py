"""torch's diagonal functions (``diag``, ``diagonal``, ``diag_embed``, ``diagflat``), the
``*_scatter`` functions (a view of the input replaced by ``src``), and the strided reads
(``as_strided``, ``Tensor.unfold``, ``repeat_interleave``, ``combinations``,
``block_diag``).

A strided read of a traced tensor is a gather (``take``) from the flattened input at
flat indices computed here from the concrete sizes, strides and offset, so its gradient
is the matching scatter-add; the input is read as contiguous, as a traced value is.
A scatter keeps the input where ``src`` does not land and takes ``src`` where it does.
"""
import itertools

import numpy

from ..core import ops as sgo
from ..core.build import as_tensor, const
from ..core.ops import layout
from ..core.ops.indexing import index_scatter, normalise
from ..core.shapes import fmt_shape, normalize_axis, numel
from ..errors import ShapeError
from .dispatch import rank_of, reject, shape_of, torch_op, unsupported
from .views import _int, _ints


# ----- diagonals ------------------------------------------------------------------------------

def _is_square_main(input, offset, dim1, dim2):
    s = shape_of(input)
    return (len(s) == 2 and offset == 0 and (dim1, dim2) in ((0, 1), (-2, -1))
            and s[0] == s[1])


@torch_op("torch.diagonal", "Tensor.diagonal", "torch.diagonal_copy")
def diagonal(input, offset=0, dim1=0, dim2=1):
    if _is_square_main(input, offset, dim1, dim2):
        return sgo.diagonal(input)
    return layout.take_diagonal(input, offset, dim1, dim2)


_diagonal = diagonal


@torch_op("linalg.diagonal")
def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return diagonal(A, offset, dim1, dim2)


@torch_op("torch.diag_embed", "Tensor.diag_embed")
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    return layout.diag_embed(input, offset, dim1, dim2)


@torch_op("torch.diag", "Tensor.diag")
def diag(input, diagonal=0, *, out=None):
    """A vector onto a diagonal of a square matrix, or a matrix's diagonal ``diagonal``."""
    reject("torch.diag", out=out)
    rank = rank_of(input)
    if rank == 1:
        return sgo.diag(input) if diagonal == 0 else layout.diag_embed(input, diagonal, 0, 1)
    if rank == 2:
        return _diagonal(input, diagonal, 0, 1)
    raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape "
                     f"{fmt_shape(shape_of(input))}")


@torch_op("torch.diagflat", "Tensor.diagflat")
def diagflat(input, offset=0):
    flat = sgo.reshape(input, (numel(shape_of(input)),))
    return layout.diag_embed(flat, offset, 0, 1)


def _replaced(input, taken, placed):
    """``input`` with the part ``taken`` (read from input) replaced by ``placed`` (the same
    part written into zeros of input's shape): input - place(taken) + placed."""
    return input - taken + placed


@torch_op("torch.diagonal_scatter", "Tensor.diagonal_scatter")
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    shape = shape_of(input)
    old = layout.take_diagonal(input, offset, dim1, dim2)
    if shape_of(src) != shape_of(old):
        raise ShapeError(f"diagonal_scatter: src of shape {fmt_shape(shape_of(src))} must have "
                         f"the diagonal's shape {fmt_shape(shape_of(old))}")
    a1, a2 = (normalize_axis(d, len(shape), "diagonal_scatter") for d in (dim1, dim2))

    def place(v):
        return layout.diag_embed(v, offset, a1, a2, shape)
    return _replaced(input, place(old), place(src))


def _basic_scatter(name, input, src, key):
    shape = shape_of(input)
    index, _ = normalise(shape, key)
    old = input[key]
    if shape_of(src) != shape_of(old):
        raise ShapeError(f"{name}: src of shape {fmt_shape(shape_of(src))} must have the "
                         f"shape of the part it replaces, {fmt_shape(shape_of(old))}")
    if not index:
        return src
    return _replaced(input, index_scatter(old, shape, index), index_scatter(src, shape, index))


@torch_op("torch.select_scatter", "Tensor.select_scatter")
def select_scatter(input, src, dim, index):
    d = normalize_axis(dim, rank_of(input), "select_scatter")
    return _basic_scatter("select_scatter", input, src,
                          (slice(None),) * d + (_int("torch.select_scatter", index),))


def _slice_key(name, input, dim, start, end, step):
    d = normalize_axis(dim, rank_of(input), name)
    if step is None:
        step = 1
    if step <= 0:
        raise ShapeError(f"{name}: step must be positive, got {step}")
    return (slice(None),) * d + (slice(start, end, step),)


@torch_op("torch.slice_scatter", "Tensor.slice_scatter")
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    key = _slice_key("slice_scatter", input, dim, start, end, step)
    return _basic_scatter("slice_scatter", input, src, key)


@torch_op("torch.ops.aten.slice.Tensor")
def aten_slice(input, dim=0, start=None, end=None, step=1):
    return input[_slice_key("slice", input, dim, start, end, step)]


# ----- strided reads -------------------------------------------------------------------------

def _concrete(name, input):
    s = shape_of(input)
    if not all(isinstance(d, int) for d in s):
        raise ShapeError(f"{name}: needs concrete sizes, got {fmt_shape(s)}")
    return s


def _flat_indices(size, stride, offset):
    idx = numpy.full(tuple(size), offset, dtype=numpy.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        line = [1] * len(size)
        line[k] = n
        idx = idx + (numpy.arange(n, dtype=numpy.int64) * st).reshape(line)
    return idx


def _strided_index(name, input, size, stride, storage_offset):
    s = _concrete(name, input)
    size, stride = _ints(name, size), _ints(name, stride)
    offset = 0 if storage_offset is None else _int(name, storage_offset)
    if len(size) != len(stride):
        raise ShapeError(f"{name}: {len(size)} sizes but {len(stride)} strides")
    if any(n < 0 for n in size) or any(st < 0 for st in stride) or offset < 0:
        raise ShapeError(f"{name}: sizes, strides and offset must be >= 0, got {size}, "
                         f"{stride}, {offset}")
    idx = _flat_indices(size, stride, offset)
    total = numel(s)
    if idx.size and idx.max() >= total:
        raise unsupported(name, (input,), why=f"size {tuple(size)}, stride {tuple(stride)} "
                          f"and offset {offset} reach element {int(idx.max())}, past the "
                          f"{total} elements of the traced tensor (shape {fmt_shape(s)}): a "
                          "traced value has no storage beyond its elements; index the tensor "
                          "the view was taken from instead")
    return idx, total


def _gather_flat(input, idx, total):
    return sgo.take(sgo.reshape(input, (total,)), as_tensor(idx), axis=0)


@torch_op("torch.as_strided", "Tensor.as_strided", "torch.as_strided_copy")
def as_strided(input, size, stride, storage_offset=None):
    idx, total = _strided_index("torch.as_strided", input, size, stride, storage_offset)
    return _gather_flat(input, idx, total)


@torch_op("torch.as_strided_scatter", "Tensor.as_strided_scatter")
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    name = "torch.as_strided_scatter"
    idx, total = _strided_index(name, input, size, stride, storage_offset)
    if len(numpy.unique(idx)) != idx.size:
        raise unsupported(name, (input, src), why="the strides make elements overlap, and "
                          "which write wins is undefined; use non-overlapping strides")
    if shape_of(src) != idx.shape:
        raise ShapeError(f"as_strided_scatter: src of shape {fmt_shape(shape_of(src))} must "
                         f"have the size {idx.shape}")
    s = shape_of(input)
    if idx.size == 0:
        return input
    flat = sgo.reshape(input, (total,))
    ids = as_tensor(idx)
    old = sgo.take(flat, ids, axis=0)
    out = _replaced(flat, sgo.take_add(old, ids, axis=0, size=total),
                    sgo.take_add(src, ids, axis=0, size=total))
    return sgo.reshape(out, s)


@torch_op("Tensor.unfold", "torch.unfold_copy")
def unfold(input, dimension, size, step):
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last axis."""
    s = shape_of(input)
    if not s:
        if size > 1:
            raise ShapeError(f"unfold: size {size} exceeds the one element of a 0-d tensor")
        return sgo.reshape(input, (size,))
    d = normalize_axis(dimension, len(s), "unfold")
    n = s[d]
    if not isinstance(n, int):
        raise ShapeError(f"unfold: dim {d} has symbolic size {n}")
    if step <= 0 or size < 0 or size > n:
        raise ShapeError(f"unfold: size {size} and step {step} do not fit dim {d} of size {n}")
    count = (n - size) // step + 1
    idx = (numpy.arange(count)[:, None] * step + numpy.arange(size)[None, :]).astype(
        numpy.int64)
    windows = sgo.take(input, as_tensor(idx), axis=d)
    return sgo.transpose(windows, tuple(i for i in range(len(s) + 1) if i != d + 1) + (d + 1,))


@torch_op("torch.repeat_interleave", "Tensor.repeat_interleave")
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    name = "torch.repeat_interleave"
    if repeats is None:
        raise unsupported(name, (input,), why="repeats alone gives integer indices")
    if dim is None:
        input, d = sgo.reshape(input, (numel(shape_of(input)),)), 0
    else:
        d = normalize_axis(dim, rank_of(input), "repeat_interleave")
    n = _concrete(name, input)[d] if shape_of(input) else 1
    if not shape_of(input):
        input = sgo.reshape(input, (1,))
    reps = numpy.asarray(_ints(name, [repeats] if isinstance(repeats, int) else repeats))
    if reps.size == 1:
        reps = numpy.full(n, int(reps[0]))
    if reps.size != n or (reps < 0).any():
        raise ShapeError(f"repeat_interleave: repeats {reps.tolist()} must be >= 0, one for "
                         f"each of the {n} elements along dim {d} (or one for all)")
    idx = numpy.repeat(numpy.arange(n, dtype=numpy.int64), reps)
    return sgo.take(input, as_tensor(idx), axis=d)


@torch_op("torch.combinations")
def combinations(input, r=2, with_replacement=False):
    n = _concrete("torch.combinations", input)
    if len(n) != 1:
        raise ShapeError(f"combinations: expects a 1-d tensor, got {fmt_shape(n)}")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = numpy.array(list(pick(range(n[0]), r)), dtype=numpy.int64).reshape(-1, r)
    if r == 0:
        return input[0:0]
    return sgo.take(input, as_tensor(idx), axis=0)


@torch_op("torch.block_diag")
def block_diag(*tensors):
    """The blocks scattered into zeros (a 0-d block is 1 x 1, a vector one row)."""
    blocks = []
    for t in tensors:
        s = shape_of(t)
        if len(s) > 2:
            raise ShapeError(f"block_diag: blocks must have rank <= 2, got {fmt_shape(s)}")
        blocks.append(sgo.reshape(t, (1,) * (2 - len(s)) + tuple(s)) if len(s) < 2 else t)
    rows = sum(shape_of(b)[0] for b in blocks)
    cols = sum(shape_of(b)[1] for b in blocks)
    out, r, c = None, 0, 0
    for b in blocks:
        h, w = shape_of(b)
        if numel((h, w)) != 0:
            index, _ = normalise((rows, cols), (slice(r, r + h), slice(c, c + w)))
            part = index_scatter(b, (rows, cols), index) if index else b
            out = part if out is None else out + part
        r, c = r + h, c + w
    return const(0, (rows, cols)) if out is None else out
