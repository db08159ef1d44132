"""Indexing and joining: ``x[i]``, ``x[a:b:s]``, ``x[:, j]``, ``x[..., None]``,
concatenate and stack.

An index is normalised when the node is built: every entry becomes either an integer
(the dim is dropped) or a slice with explicit start, stop and positive step, whose
bounds may be expressions in symbolic dims (``x[1:]`` of ``(n,)`` is ``x[1:n]``, shape
``(n - 1,)``). The gradient of indexing writes ``grad`` into zeros (``index_scatter``).
"""
import builtins

import sympy

from . import sympy_funcs as sf
from .errors import ShapeError, UnsupportedOpError
from .graph import Tensor
from .ops import apply, defop, unsqueeze
from .shapes import dims_equal, dims_match, fmt_shape, normalize_axis


class Slice(tuple):
    """A normalised slice (start, stop, step): hashable, unlike ``slice``."""

    def __new__(cls, start, stop, step):
        return super().__new__(cls, (start, stop, step))

    def length(self, dim):
        """The number of elements taken from an axis of size ``dim``."""
        start, stop, step = self
        if stop is None:
            stop = dim
        span = sympy.sympify(stop) - sympy.sympify(start)
        n = span if step == 1 else sympy.ceiling(span / step)
        if n.is_Integer:
            return builtins.max(int(n), 0)
        return n


def _dim_value(d):
    return d if isinstance(d, int) else sympy.sympify(d)


def _is_index(v):
    """An integer scalar of any kind (int, numpy.int64, a 0-d integer torch tensor)."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        return False
    return getattr(v, "ndim", 0) == 0


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _bound(v, d, default, where):
    if v is None:
        return default
    if not _is_int(v):
        raise UnsupportedOpError(f"index: slice bounds must be ints, got {v!r} in {where}; "
                                 "indexing with tensors is not supported yet")
    if isinstance(d, int):
        if v < 0:
            v += d
        return builtins.max(0, builtins.min(v, d))
    return _dim_value(d) + v if v < 0 else v


def _normalise(shape, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(isinstance(i, Tensor) for i in index) or any(
            hasattr(i, "shape") and not _is_index(i) for i in index):
        raise UnsupportedOpError("index: indexing with tensors or arrays (gather) is not "
                                 "supported yet; use integers and slices, or one_hot")
    n_ellipsis = sum(i is Ellipsis for i in index)
    if n_ellipsis > 1:
        raise ShapeError("index: an index can only have one ellipsis ('...')")
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if used > len(shape):
        raise ShapeError(f"index: too many indices ({used}) for a tensor of shape "
                         f"{fmt_shape(shape)}")
    if n_ellipsis:
        k = index.index(Ellipsis)
        index = index[:k] + (slice(None),) * (len(shape) - used) + index[k + 1:]
    else:
        index = index + (slice(None),) * (len(shape) - used)
    entries, new_axes, axis, out_axis = [], [], 0, 0
    for i in index:
        if i is None:
            new_axes.append(out_axis)
            out_axis += 1
            continue
        d = shape[axis]
        if isinstance(i, slice):
            step = 1 if i.step is None else i.step
            if not _is_int(step) or step <= 0:
                raise UnsupportedOpError(f"index: slice steps must be positive ints (as in "
                                         f"torch), got {i.step!r}")
            start = _bound(i.start, d, 0, f"axis {axis}")
            stop = _bound(i.stop, d, None, f"axis {axis}")
            if stop is not None and dims_equal(stop, d):
                stop = None
            entries.append(Slice(start, stop, step))
            out_axis += 1
        elif _is_int(i) or hasattr(i, "__index__") and not isinstance(i, bool):
            i = int(i)
            if isinstance(d, int) and not -d <= i < d:
                raise ShapeError(f"index: index {i} is out of range for axis {axis} of "
                                 f"shape {fmt_shape(shape)}")
            entries.append(i if i >= 0 else _dim_value(d) + i)
        else:
            raise UnsupportedOpError(f"index: cannot index with {i!r}; use ints, slices, "
                                     "None and ...")
        axis += 1
    while entries and entries[-1] == Slice(0, None, 1):
        entries.pop()
    return tuple(entries), tuple(new_axes)


def _index_params(op, shapes, index):
    return (("index", index),)


def _index_shape(op, shapes, attrs):
    out = []
    for d, e in zip(shapes[0], attrs["index"]):
        if isinstance(e, Slice):
            out.append(e.length(d))
    return tuple(out) + tuple(shapes[0][len(attrs["index"]):])


def index_expr(index):
    items = []
    for e in index:
        if isinstance(e, Slice):
            start, stop, step = e
            items.append(sf.sym_tuple((start, sympy.oo if stop is None else stop, step)))
        else:
            items.append(sympy.sympify(e))
    return sympy.Tuple(*items)


def _scatter_params(op, shapes, shape, index):
    return (("shape", tuple(shape)), ("index", index))


def _concat_params(op, shapes, axis=0):
    a, b = shapes
    if len(a) != len(b) or not a:
        raise ShapeError(f"concatenate: operands need the same rank (at least 1), got "
                         f"{fmt_shape(a)} and {fmt_shape(b)}")
    axis = normalize_axis(axis, len(a), op)
    for k, (p, q) in enumerate(zip(a, b)):
        if k != axis and not dims_match(p, q):
            raise ShapeError(f"concatenate: shapes {fmt_shape(a)} and {fmt_shape(b)} differ "
                             f"outside axis {axis}")
    return (("axis", axis),)


def _concat_shape(op, shapes, attrs):
    a, b = shapes
    axis = attrs["axis"]
    total = sympy.sympify(a[axis]) + sympy.sympify(b[axis])
    total = int(total) if total.is_Integer else total
    return a[:axis] + (total,) + a[axis + 1:]


defop("index", 1, lambda attrs, x: sf.IndexOp(x, index_expr(attrs["index"])),
      shape=_index_shape, params=_index_params)
defop("index_scatter", 1,
      lambda attrs, g: sf.IndexScatterOp(g, sf.sym_tuple(attrs["shape"]),
                                         index_expr(attrs["index"])),
      shape=lambda op, s, a: a["shape"], params=_scatter_params)
defop("concat", 2, lambda attrs, x, y: sf.ConcatOp(x, y, sympy.Integer(attrs["axis"])),
      shape=_concat_shape, params=_concat_params)


def index(x, index):
    """``x[index]`` with a normalised index (see ``getitem``)."""
    return apply("index", x, index=index)


def index_scatter(g, shape, index):
    """zeros(shape) with ``g`` at ``index``."""
    return apply("index_scatter", g, shape=shape, index=index)


def getitem(x, key):
    """``x[key]`` for ints (negative too), slices with positive steps, ``None`` and
    ``...``, with NumPy's result shapes."""
    entries, new_axes = _normalise(x.shape, key)
    out = index(x, entries) if entries else x
    for a in new_axes:
        out = unsqueeze(out, a)
    return out


def concat(x, y, axis=0):
    """Two tensors joined along ``axis`` (the op ``concatenate`` folds over)."""
    return apply("concat", x, y, axis=axis)


def concatenate(tensors, axis=0):
    """Join tensors along an existing axis (``torch.cat``)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("concatenate: needs at least one tensor")
    if not any(isinstance(t, Tensor) for t in tensors):
        import numpy
        torch = __import__("sys").modules.get("torch")
        if torch is not None and any(isinstance(t, torch.Tensor) for t in tensors):
            return torch.cat([torch.as_tensor(t) for t in tensors], dim=axis)
        return numpy.concatenate(tensors, axis=axis)
    out = tensors[0]
    for t in tensors[1:]:
        out = apply("concat", out, t, axis=axis)
    return out


cat = concatenate


def stack(tensors, axis=0):
    """Join tensors along a new axis."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: needs at least one tensor")
    rank = len(getattr(tensors[0], "shape", ()))
    axis = normalize_axis(axis, rank + 1, "stack")
    return concatenate([unsqueeze(t, axis) for t in tensors], axis=axis)
