"""Indexing and joining: ``x[i]``, ``x[a:b:s]``, ``x[:, j]``, ``x[..., None]``,
concatenate and stack.

An index is normalised when the node is built: every entry becomes either an integer
(the dim is dropped) or a slice with explicit start, stop and positive step, whose
bounds may be expressions in symbolic dims (``x[1:]`` of ``(n,)`` is ``x[1:n]``, shape
``(n - 1,)``). The gradient of indexing writes ``grad`` into zeros (``index_scatter``).
Derivatives: rules/indexing.yaml.
"""
import builtins
from typing import Sequence

import numpy
import sympy

from ...errors import ArgumentError, ShapeError, UnsupportedOpError
from ..build import apply, torch_module
from ..graph import Tensor
from ..opdef import ArrayOp, defop, integer_kind, public
from ..shapes import check_dim_expression, dims_equal, dims_match, fmt_shape, normalize_axis
from . import batching, elements
from .shape import unsqueeze
from ..types import Result, TensorLike


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


def _is_dim_expression(v):
    """A SymPy expression of dims used as an index (``x[: n - 1]``, ``x[n // 2]``)."""
    if not isinstance(v, sympy.Expr) or v.is_Integer:
        return False
    check_dim_expression(v, "an index")
    return True


def _bound(v, d, default, where):
    if v is None:
        return default
    if _is_dim_expression(v):
        v = sympy.sympify(v)
        return _dim_value(d) + v if v.is_negative else v
    if not _is_int(v):
        raise UnsupportedOpError(f"index: slice bounds must be ints or dims (x.shape[0] - 1), "
                                 f"got {v!r} in {where}; for an array of ids use x[ids] or "
                                 "take/take_along")
    if isinstance(d, int):
        if v < 0:
            v += d
        return builtins.max(0, builtins.min(v, d))
    return _dim_value(d) + v if v < 0 else v


def normalise(shape, index):
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
        elif _is_dim_expression(i):
            entries.append(_dim_value(d) + i if i.is_negative else i)
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


class _TextPrinter:
    """Prints index bounds for LaTeX subscripts the way the text view does."""

    @staticmethod
    def _print(e):
        return str(e)


_TEXT = _TextPrinter()


def index_expr(index):
    """A normalised index as a SymPy tuple: slices as (start, stop, step), oo for no stop."""
    items = []
    for e in index:
        if isinstance(e, Slice):
            start, stop, step = e
            items.append(sympy.Tuple(start, sympy.oo if stop is None else stop, step))
        else:
            items.append(sympy.sympify(e))
    return sympy.Tuple(*items)


def index_text(printer, index, trailing_comma=False):
    """The subscript of an index expression as ``printer`` prints its bounds:
    ``1:, 2`` (a trailing comma after a single entry for code: ``x[1:,]``)."""
    items = []
    for e in index:
        if isinstance(e, sympy.Tuple):
            start, stop, step = e
            text = (("" if start == 0 else printer._print(start)) + ":"
                    + ("" if stop is sympy.oo else printer._print(stop)))
            items.append(text + ("" if step == 1 else f":{printer._print(step)}"))
        else:
            items.append(printer._print(e))
    return ", ".join(items) + ("," if trailing_comma and len(items) == 1 else "")


def _index_tuple(printer, index):
    """An index expression as a Python tuple of ints and slice(...) objects, for code."""
    items = []
    for e in index:
        if isinstance(e, sympy.Tuple):
            items.append("slice(%s)" % ", ".join(
                "None" if v is sympy.oo else printer._print(v) for v in e))
        else:
            items.append(printer._print(e))
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _concrete_index(ctx, index):
    out = []
    for e in index:
        if isinstance(e, Slice):
            start, stop, step = e
            out.append(slice(ctx.size(start), None if stop is None else ctx.size(stop), step))
        else:
            out.append(ctx.size(e))
    return tuple(out)


# ----- indexing -----------------------------------------------------------------------------

def _index_params(op, shapes, index):
    return (("index", index),)


def _index_shape(op, shapes, attrs):
    out = []
    for d, e in zip(shapes[0], attrs["index"]):
        if isinstance(e, Slice):
            out.append(e.length(d))
    return tuple(out) + tuple(shapes[0][len(attrs["index"]):])


def index_requirements(shape, index):
    """What ``index`` assumed of the symbolic dims of ``shape``, as (expression >= 0, what
    it says) pairs: an integer index lies within its axis (torch raises where NumPy would
    wrap a negative one), a slice bound within its axis (a slice's length was computed
    as if it did not clamp)."""
    out = []
    for axis, (d, e) in enumerate(zip(shape, index)):
        if isinstance(d, int):
            continue
        d = sympy.sympify(d)
        where = f"axis {axis} of an array of shape {fmt_shape(shape)}"
        if isinstance(e, Slice):
            start, stop, step = e
            start = sympy.sympify(start)
            out += [(start, f"indexing needs slice start {start} >= 0 on {where}"),
                    (d - start, f"indexing needs slice start {start} <= {d} on {where}")]
            if stop is not None:
                stop = sympy.sympify(stop)
                last = start + (e.length(d) - 1) * step   # the last element taken
                out += [(stop, f"indexing needs slice stop {stop} >= 0 on {where}"),
                        (d - 1 - last, f"indexing needs the slice's last element {last} < "
                                       f"{d} on {where}")]
        else:
            i = sympy.sympify(e)
            out += [(i, f"indexing needs index {i} >= 0 on {where}"),
                    (d - 1 - i, f"indexing needs index {i} < {d} on {where}")]
    return tuple(out)


class Index(ArrayOp):
    """x[index]: ``index`` is a tuple of integers and (start, stop, step) slices."""


class IndexScatter(ArrayOp):
    """zeros(shape) with ``g`` written at ``index``: the gradient of indexing."""


def _index_form(attrs, x):
    return Index(x, index_expr(attrs["index"]))


def _index_batch(node, ins, size):
    index = (Slice(0, None, 1),) + node.attrs["index"]
    return apply("index", ins[0][0], index=index)


def _index_elements(ctx, x):
    return numpy.asarray(x[_concrete_index(ctx, ctx.attrs["index"])], dtype=object)


@defop("index", ("x",), kind=integer_kind, view=True,
       sympy=_index_form, sympy_class=Index, sympy_params=("index",),
       params=_index_params, precedence="Atom", latex_precedence="Pow",
       shape=_index_shape,
       text=lambda x, index: f"{x:atom}[{index_text(index.printer, index.expr)}]",
       latex=lambda x, index: f"{x:atom}_{{[{index_text(_TEXT, index.expr)}]}}",
       numpy=lambda x, index: f"{x:atom}[{index_text(index.printer, index.expr, True)}]",
       numpy_text=lambda x, index: f"{x:atom}[{index_text(index.printer, index.expr)}]",
       torch=lambda x, index: f"{x:atom}[{index_text(index.printer, index.expr, True)}]",
       matrix=lambda m, node, x: m.index(x, node.attrs["index"]),
       requires=lambda attrs, shapes: index_requirements(shapes[0], attrs["index"]),
       elements=_index_elements, batch=_index_batch)
def index(x, index):
    """``x[index]`` with a normalised index (see ``getitem``)."""
    return apply("index", x, index=index)


def _scatter_params(op, shapes, shape, index):
    return (("shape", tuple(shape)), ("index", index))


def _scatter_form(attrs, g):
    return IndexScatter(g, sympy.Tuple(*attrs["shape"]), index_expr(attrs["index"]))


def _scatter_subscript(printer, attrs):
    """How code writes into the zeros: the subscript of ``out[...] = g``."""
    return index_text(printer, index_expr(attrs["index"]), True)


def _scatter_batch(node, ins, size):
    index = (Slice(0, None, 1),) + node.attrs["index"]
    return apply("index_scatter", ins[0][0], shape=(size,) + node.attrs["shape"], index=index)


def _scatter_elements(ctx, g):
    out = elements.zeros(ctx.shape)
    out[_concrete_index(ctx, ctx.attrs["index"])] = g if g.ndim else g[()]
    return out


_SCATTER_NUMPY = ("def _index_scatter(g, shape, index):\n"
                  "    out = numpy.zeros(shape)\n"
                  "    out[index] = g\n"
                  "    return out")
_SCATTER_TORCH = ("def _index_scatter(g, shape, index, dtype=None, device=None):\n"
                  "    out = torch.zeros(shape, dtype=dtype, device=device)\n"
                  "    out[index] = g\n"
                  "    return out")


def _scatter_code(helper, extra=""):
    def spell(x, shape, index):
        text = f"_index_scatter({x}, {shape}, {_index_tuple(index.printer, index.expr)}{extra})"
        return text, {"_index_scatter": helper}
    return spell


@defop("index_scatter", ("x",), sympy=_scatter_form, sympy_class=IndexScatter,
       sympy_params=("shape", "index"),
       params=_scatter_params, shape=lambda op, s, a: a["shape"],
       scatter=_scatter_subscript, fresh=True,
       text=lambda x, shape, index: f"scatter({x}, {shape}, [{index_text(index.printer, index.expr)}])",
       latex=lambda x, shape, index: (rf"\operatorname{{scatter}}\left({x}\right)"
                                      f"_{{[{index_text(_TEXT, index.expr)}]}}"),
       numpy=_scatter_code(_SCATTER_NUMPY), torch=_scatter_code(_SCATTER_TORCH, ", _dt, _dev"),
       matrix=lambda m, node, x: m.scatter(x, node.attrs["index"]),
       requires=lambda attrs, shapes: index_requirements(attrs["shape"], attrs["index"]),
       elements=_scatter_elements, batch=_scatter_batch)
def index_scatter(g, shape, index):
    """zeros(shape) with ``g`` at ``index``."""
    return apply("index_scatter", g, shape=shape, index=index)


def _is_array_entry(e):
    """An index entry that is an array of ids: an integer Tensor, or a NumPy/torch integer
    array (not a 0-d integer, which is a plain index)."""
    if isinstance(e, Tensor):
        return True
    shape = getattr(e, "shape", None)
    return shape is not None and len(tuple(shape)) > 0 and not isinstance(e, (list, tuple))


def _is_int_list(e):
    """A (nested) list of ints as an index entry: NumPy and torch read it as an array."""
    return type(e) is list and len(e) > 0 and numpy.asarray(e).dtype.kind in "iu"


def _constant_masks_as_ids(entries):
    """A constant boolean mask stands for the ids of its True elements, one id array per
    dim it covers (as in torch and NumPy): its result size is known while tracing."""
    out = []
    for e in entries:
        if not isinstance(e, Tensor) and getattr(e, "dtype", None) is not None and \
                str(e.dtype) in ("bool", "torch.bool") and len(tuple(e.shape)) > 0:
            mask = numpy.asarray(e.detach().cpu().numpy() if hasattr(e, "detach") else e)
            out.extend(numpy.nonzero(mask))
        else:
            out.append(e)
    return tuple(out)


def _is_full(e):
    return isinstance(e, slice) and e == slice(None)


def _arrange_advanced(x, entries, arrays):
    """torch's advanced indexing in the one form ``_integer_array_key`` takes (adjacent id
    arrays after full slices): ``...`` spelled out; ints applied first as selections (torch
    does, unlike NumPy); then slices before the arrays; arrays split by a slice brought to
    the front by a transpose (torch, like NumPy, then puts their broadcast dims first).
    None when the key is in that form already."""
    from .shape import transpose
    if any(e is None for e in entries):
        return None
    spelled = any(e is Ellipsis for e in entries)
    if spelled:
        k = next(j for j, e in enumerate(entries) if e is Ellipsis)
        fill = len(x.shape) - (len(entries) - 1)
        entries = entries[:k] + (slice(None),) * fill + entries[k + 1:]
    entries = entries + (slice(None),) * (len(x.shape) - len(entries))
    ints = [k for k, e in enumerate(entries) if not _is_array_entry(e) and
            not isinstance(e, slice)]
    if ints:
        picked = getitem(x, tuple(e if k in ints else slice(None)
                                  for k, e in enumerate(entries)))
        return picked, tuple(e for k, e in enumerate(entries) if k not in ints)
    advanced = [k for k, e in enumerate(entries) if _is_array_entry(e)]
    first, last = advanced[0], advanced[-1]
    if advanced == list(range(first, last + 1)):
        if all(_is_full(e) for e in entries[:first]):
            return (x, entries) if spelled else None
        sliced = getitem(x, entries[:first])
        return sliced, (slice(None),) * first + entries[first:]
    order = advanced + [k for k in range(len(entries)) if k not in advanced]
    return transpose(x, tuple(order)), tuple(entries[k] for k in order)


def _ids_operand(e, n):
    """An array entry as an integer Tensor of ids in [0, n): a constant's negative ids
    count from the end, as in torch; symbolic ids too, and are range-checked at call time."""
    from ..build import as_tensor
    from .gather import from_the_end
    if isinstance(e, Tensor):
        if e.kind == "bool":
            raise UnsupportedOpError(f"x[mask] with a boolean Tensor of shape "
                                     f"{fmt_shape(e.shape)}: its result has as many elements "
                                     "as the mask has True values, known only at run time; "
                                     "use where(mask, x, 0) to keep the shape")
        if e.kind != "int" and not _of_dims_only(e):
            raise UnsupportedOpError(f"x[...] with a float Tensor of shape "
                                     f"{fmt_shape(e.shape)} as an index: ids must be integers "
                                     "(an input declared sg.TensorSpec(dims, dtype='int64'))")
        return e if _is_positions(e, n) else from_the_end(e, n)
    array = numpy.asarray(e.detach().cpu().numpy() if hasattr(e, "detach") else e)
    if array.dtype == bool:
        raise UnsupportedOpError("x[mask] with a boolean array: its result has as many "
                                 "elements as the mask has True values; use where(mask, x, 0)")
    if array.dtype.kind not in "iu":
        raise UnsupportedOpError(f"x[...] with an array of dtype {array.dtype}: ids must be "
                                 "integers")
    if isinstance(n, int) and array.size and (array.min() < -n or array.max() >= n):
        raise ShapeError(f"index: an id in {array.tolist()} is out of range for a dim of "
                         f"size {n}")
    return as_tensor(array % n if isinstance(n, int) else array, "index")


def _of_dims_only(t):
    """Whether ``t`` is computed from constants and dims alone (torch.arange(n) of a
    symbolic n): ids known at call time, checked there to be integers in range."""
    from ..graph import topo_order
    return not any(n.is_symbol for n in topo_order([t]))


def _integer_array_key(x, key):
    """Integer-array indexing (``x[ids]``, ``x[:, ids, 1:]``, ``logp[arange(N), y]``):
    adjacent id arrays after full slices, broadcast together, become one ``take`` on
    ``x`` with those axes flattened (the flat id is the row-major combination, each id
    checked against its own axis); None for a key without arrays."""
    from .gather import take
    from .shape import reshape
    entries = key if isinstance(key, tuple) else (key,)
    entries = _constant_masks_as_ids(tuple(numpy.asarray(e) if _is_int_list(e) else e
                                           for e in entries))
    arrays = [k for k, e in enumerate(entries) if _is_array_entry(e)]
    if not arrays:
        return None
    arranged = _arrange_advanced(x, entries, arrays)
    if arranged is not None:
        return getitem(*arranged)
    k, m = arrays[0], len(arrays)
    before, after = entries[:k], entries[k + m:]
    if arrays != list(range(k, k + m)) or any(
            not isinstance(e, slice) or e != slice(None) for e in before) or k + m > len(
            x.shape):
        raise UnsupportedOpError(f"x[...] with array indices: symgrad takes adjacent integer "
                                 f"arrays after full slices only (x[ids], x[:, ids, 1:], "
                                 f"x[rows, cols]); got {key!r}; use take/take_along "
                                 "(torch.gather) otherwise")
    sizes = x.shape[k:k + m]
    ids = [_ids_operand(entries[k + j], sizes[j]) for j in range(m)]
    if m == 2 and k == 0 and _is_positions(ids[0], sizes[0]) and len(ids[1].shape) == 1 \
            and dims_equal(ids[1].shape[0], sizes[0]):
        from .gather import take_along         # x[arange(n), j]: one pick per row
        from .shape import squeeze
        out = squeeze(take_along(x, unsqueeze(ids[1], 1), axis=1), 1)
        width = 1
    elif m == 1:
        out = take(x, ids[0], axis=k)
        width = len(ids[0].shape)
    else:
        from ..shapes import broadcast_shapes
        from .shape import broadcast_to
        common = broadcast_shapes(*[i.shape for i in ids], op="index")
        flat = None
        for j, i in enumerate(ids):
            n = sizes[j]
            table = positions(n)
            checked = take(table, broadcast_to(i, common), axis=0)   # ids checked on axis j
            stride = 1
            for d in sizes[j + 1:]:
                stride = stride * d
            term = checked * stride if not (isinstance(stride, int) and stride == 1) \
                else checked
            flat = term if flat is None else flat + term
        total = 1
        for d in sizes:
            total = total * d
        merged = reshape(x, tuple(x.shape[:k]) + (total,) + tuple(x.shape[k + m:]))
        out = take(merged, flat, axis=k)
        width = len(common)
    if not after:
        return out
    return getitem(out, (slice(None),) * (k + width) + tuple(after))


def _is_positions(t, n):
    """Whether ``t`` is 0, 1, ..., n - 1 (torch.arange(n), concrete or symbolic)."""
    if t is positions(n):
        return True
    value = t.attrs.get("value") if t.is_array else None
    array = getattr(value, "array", None)
    return array is not None and isinstance(n, int) and array.shape == (n,) and bool(
        (array == numpy.arange(n)).all())


def positions(n):
    """0, 1, ..., n - 1 as a Tensor (a constant, or a running count for a symbolic n):
    torch.arange(n) while tracing, and the row ids of ``logp[arange(N), y]``."""
    from ..build import as_tensor, const
    from .reductions import cumsum
    from .shape import broadcast_to
    if isinstance(n, int):
        return as_tensor(numpy.arange(n, dtype=numpy.int64), "index")
    return cumsum(broadcast_to(const(1.0), (n,)), axis=0) - 1.0


@public
def getitem(x, key):
    """``x[key]`` for ints (negative too), slices with positive steps, ``None`` and
    ``...``, with NumPy's result shapes."""
    picked = _integer_array_key(x, key)
    if picked is not None:
        return picked
    entries, new_axes = normalise(x.shape, key)
    out = index(x, entries) if entries else x
    for a in new_axes:
        out = unsqueeze(out, a)
    return out


# ----- joining ------------------------------------------------------------------------------

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


@defop("concat", ("x", "y"), kind=integer_kind, params=_concat_params, shape=_concat_shape,
       text="concatenate(({x}, {y}), axis={axis})",
       latex=r"\operatorname{{concat}}_{{{axis}}}\left({x}, {y}\right)",
       numpy="numpy.concatenate(({x}, {y}), axis={axis})",
       torch="torch.cat(({x}, {y}), dim={axis})",
       elements=lambda ctx, x, y: numpy.concatenate([x, y], axis=ctx.attrs["axis"]),
       batch=batching.along_axes)
def concat(x, y, axis=0):
    """Two tensors joined along ``axis`` (the op ``concatenate`` folds over)."""
    return apply("concat", x, y, axis=axis)


@public
def concatenate(tensors: Sequence[TensorLike], axis: int = 0) -> Result:
    """Join tensors along an existing axis (``torch.cat``)."""
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("concatenate: needs at least one tensor")
    if not any(isinstance(t, Tensor) for t in tensors):
        torch = torch_module()
        if torch is not None and any(isinstance(t, torch.Tensor) for t in tensors):
            return torch.cat([torch.as_tensor(t) for t in tensors], dim=axis)
        return numpy.concatenate(tensors, axis=axis)
    out = tensors[0]
    for t in tensors[1:]:
        out = apply("concat", out, t, axis=axis)
    return out


@public
def cat(tensors: Sequence[TensorLike], axis: int = 0) -> Result:
    """``torch.cat``: the same as ``concatenate``."""
    return concatenate(tensors, axis)


@public
def stack(tensors: Sequence[TensorLike], axis: int = 0) -> Result:
    """Join tensors along a new axis."""
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("stack: needs at least one tensor")
    rank = len(getattr(tensors[0], "shape", ()))
    axis = normalize_axis(axis, rank + 1, "stack")
    return concatenate([unsqueeze(t, axis) for t in tensors], axis=axis)
