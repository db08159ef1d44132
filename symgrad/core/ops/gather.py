"""Ops over integer index arrays: ``take`` (rows of a table picked by ids: embedding,
index_select), ``take_along`` (torch.gather, take_along_dim) and their adjoints, the
scatter-adds ``take_add`` (index_add) and ``put_along_add`` (scatter_add).

The index is an operand, usually an integer input (``sg.TensorSpec(dims,
dtype="int64")``), so a compiled gradient takes the next batch's ids; it carries no
gradient. Every index is checked where it is used, as torch does: an id outside
``[0, size)`` raises ArgumentError naming the op, instead of wrapping around (NumPy's
negative indices) or reading past the table. Derivatives: rules/indexing.yaml.
"""
import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from .functions import AsFloat
from ..opdef import defop
from ..shapes import as_dim, dims_match, fmt_shape, normalize_axis
from ..types import Dim, Result, ShapeLike, TensorLike

_CHECK = (
    "def _checked(i, n, op):\n"
    "    i = numpy.asarray(i)\n"
    "    if i.dtype.kind != 'i':\n"
    "        if i.size and not numpy.all(i == numpy.floor(i)):\n"
    "            raise ArgumentError('%s: ids must be integers, got %r' % (op, "
    "float(i[i != numpy.floor(i)].ravel()[0])))\n"
    "        i = i.astype(numpy.int64)\n"
    "    if i.size and (i.min() < 0 or i.max() >= n):\n"
    "        bad = i[(i < 0) | (i >= n)].ravel()[0]\n"
    "        raise ArgumentError('%s: index %d is out of range for a dim of size %d' "
    "% (op, int(bad), n))\n"
    "    return i")
_TAKE_NUMPY = (
    "def _take(x, i, axis, op):\n"
    "    return numpy.take(x, _checked(i, x.shape[axis], op), axis=axis)")
_TAKE_TORCH = (
    "def _take(x, i, axis, op):\n"
    "    if not isinstance(x, torch.Tensor):\n"
    "        x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    i = _checked(i, x.shape[axis], op)\n"
    "    out = torch.index_select(x, axis, i.reshape(-1))\n"
    "    return out.reshape(x.shape[:axis] + i.shape + x.shape[axis + 1:])")
_TAKE_ADD_NUMPY = (
    "def _take_add(g, i, axis, n, op):\n"
    "    i, g = _checked(i, n, op), numpy.asarray(g, dtype=float)\n"
    "    rest = g.shape[axis + i.ndim:]\n"
    "    g = numpy.moveaxis(g.reshape(g.shape[:axis] + (i.size,) + rest), axis, 0)\n"
    "    out = numpy.zeros((n,) + g.shape[1:], dtype=g.dtype)\n"
    "    numpy.add.at(out, i.reshape(-1), g)\n"
    "    return numpy.moveaxis(out, 0, axis)")
_TAKE_ADD_TORCH = (
    "def _take_add(g, i, axis, n, op):\n"
    "    i, g = _checked(i, n, op), torch.as_tensor(g, dtype=torch.float64) if not "
    "isinstance(g, torch.Tensor) else g\n"
    "    rest = g.shape[axis + i.dim():]\n"
    "    g = g.reshape(g.shape[:axis] + (i.numel(),) + rest)\n"
    "    out = torch.zeros(g.shape[:axis] + (n,) + rest, dtype=g.dtype, device=g.device)\n"
    "    return out.index_add(axis, i.reshape(-1), g)")
_ALONG_NUMPY = (
    "def _along_index(i, axis):\n"
    "    grid = list(numpy.indices(i.shape, sparse=True))\n"
    "    grid[axis] = i\n"
    "    return tuple(grid)\n\n\n"
    "def _take_along(x, i, axis, op):\n"
    "    return x[_along_index(_checked(i, x.shape[axis], op), axis)]\n\n\n"
    "def _put_along_add(g, i, axis, shape, op):\n"
    "    g = numpy.asarray(g, dtype=float)\n"
    "    out = numpy.zeros(shape, dtype=g.dtype)\n"
    "    numpy.add.at(out, _along_index(_checked(i, shape[axis], op), axis), g)\n"
    "    return out")
_ALONG_TORCH = (
    "def _take_along(x, i, axis, op):\n"
    "    if not isinstance(x, torch.Tensor):\n"
    "        x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    return torch.gather(x, axis, _checked(i, x.shape[axis], op))\n\n\n"
    "def _put_along_add(g, i, axis, shape, op):\n"
    "    if not isinstance(g, torch.Tensor):\n"
    "        g = torch.as_tensor(g, dtype=torch.float64)\n"
    "    out = torch.zeros(shape, dtype=g.dtype, device=g.device)\n"
    "    return out.scatter_add(axis, _checked(i, shape[axis], op), g)")
_CHECK_TORCH = (
    "def _checked(i, n, op):\n"
    "    i = torch.as_tensor(i)\n"
    "    if i.device.type == 'meta' or torch.compiler.is_compiling():\n"
    "        return i.long()\n"
    "    if i.is_floating_point():\n"
    "        if i.numel() and not bool((i == torch.floor(i)).all()):\n"
    "            raise ArgumentError('%s: ids must be integers, got %r' % (op, "
    "float(i[i != torch.floor(i)].reshape(-1)[0])))\n"
    "    i = i.long()\n"
    "    if i.numel() and bool((i < 0).any() or (i >= n).any()):\n"
    "        bad = i[(i < 0) | (i >= n)].reshape(-1)[0]\n"
    "        raise ArgumentError('%s: index %d is out of range for a dim of size %d' "
    "% (op, int(bad), n))\n"
    "    return i")


# ----- per-element forms (``explicit``): an id is a symbol, so a picked element is the
# sum over the places it may pick of [id = place] times that place.

def _pick(table, i):
    """Σ_j [i = j] table[j] over the first axis of the object array ``table``."""
    i = sympy.sympify(i)
    if i.is_Integer:
        return table[int(i)]
    return sum((AsFloat(sympy.Eq(i, j)) * table[j] for j in range(table.shape[0])),
               numpy.zeros(table.shape[1:], dtype=object) if table.ndim > 1 else sympy.S.Zero)


def _take_elements(ctx, x, i):
    a = ctx.attrs["axis"]
    table = numpy.moveaxis(x, a, 0)
    picked = numpy.empty(i.shape + table.shape[1:], dtype=object)
    for p in numpy.ndindex(*i.shape):
        picked[p] = _pick(table, i[p])
    return numpy.moveaxis(picked.reshape(i.shape + table.shape[1:]),
                          tuple(range(i.ndim)), tuple(range(a, a + i.ndim)))


def _take_add_elements(ctx, g, i):
    a, n = ctx.attrs["axis"], ctx.shape[ctx.attrs["axis"]]
    values = numpy.moveaxis(g, tuple(range(a, a + i.ndim)), tuple(range(i.ndim)))
    values = values.reshape((i.size,) + values.shape[i.ndim:])
    out = numpy.empty((n,) + values.shape[1:], dtype=object)
    ids = i.reshape(-1)
    for j in range(n):
        out[j] = sum((AsFloat(sympy.Eq(ids[k], j)) * values[k] for k in range(ids.size)),
                     sympy.S.Zero)
    return numpy.moveaxis(out, 0, a)


def _along_elements(ctx, x, i):
    a = ctx.attrs["axis"]
    out = numpy.empty(i.shape, dtype=object)
    for p in numpy.ndindex(*i.shape):
        line = x[p[:a] + (slice(None),) + p[a + 1:]]
        out[p] = _pick(line, i[p])
    return out


def _put_along_elements(ctx, g, i):
    a = ctx.attrs["axis"]
    out = numpy.full(ctx.shape, sympy.S.Zero, dtype=object)
    for p in numpy.ndindex(*i.shape):
        for j in range(ctx.shape[a]):
            q = p[:a] + (j,) + p[a + 1:]
            out[q] = out[q] + AsFloat(sympy.Eq(i[p], j)) * g[p]
    return out


def _axis_params(op, shapes, axis=0, **extra):
    x = shapes[0]
    return (("axis", normalize_axis(axis, len(x), op)),)


# ----- take: x[..., i, ...] ------------------------------------------------------------------

def _take_shape(op, shapes, attrs):
    x, i = shapes
    a = attrs["axis"]
    return x[:a] + tuple(i) + x[a + 1:]


def _code(helpers, form):
    return (form, helpers)


@defop("take", ("x", "index"), params=_axis_params, shape=_take_shape,
       text="take({x}, {index}, axis={axis})",
       latex=r"{x:atom}\left[{index}\right]_{{{axis}}}",
       numpy=_code({"_checked": _CHECK, "_take": _TAKE_NUMPY},
                   "_take({x}, {index}, {axis}, 'take')"),
       torch=_code({"_checked": _CHECK_TORCH, "_take": _TAKE_TORCH},
                   "_take({x}, {index}, {axis}, 'take')"),
       elements=_take_elements)
def take(x: TensorLike, index: TensorLike, axis: int = 0) -> Result:
    """The slices of ``x`` along ``axis`` picked by the integer array ``index``
    (NumPy's ``take``; embedding rows, ``index_select``): the result has ``index``'s
    shape in place of that axis. Ids outside [0, size) raise at call time."""
    return apply("take", x, index, axis=axis)


def from_the_end(index: TensorLike, n: Dim) -> Result:
    """Ids in [-n, 0) counted from the end, as torch's ``x[ids]`` counts them (``take``,
    embedding and gather refuse them, as torch's do); others stay, for ``take`` to
    refuse an id outside [-n, n) by its own value."""
    from .pointwise import ge, logical_and, lt, where
    return where(logical_and(lt(index, 0), ge(index, -n)), index + n, index)


def _take_add_params(op, shapes, axis=0, size=None):
    g, i = shapes
    if size is None:
        raise ParameterError(f"{op}: give size, the length of the axis written into")
    axis = normalize_axis(axis, max(len(g) - len(i) + 1, 1), op)
    return (("axis", axis), ("size", as_dim(size)))


def _take_add_shape(op, shapes, attrs):
    g, i = shapes
    a = attrs["axis"]
    if len(g) < a + len(i) or not all(dims_match(p, q) for p, q in zip(g[a:a + len(i)], i)):
        raise ShapeError(f"{op}: the values of shape {fmt_shape(g)} must hold the index's "
                         f"shape {fmt_shape(i)} at axis {a}")
    return g[:a] + (attrs["size"],) + g[a + len(i):]


@defop("take_add", ("g", "index"), params=_take_add_params, shape=_take_add_shape,
       fresh=True,
       text="take_add({g}, {index}, axis={axis}, size={size})",
       latex=r"\operatorname{{take\_add}}_{{{axis}}}\left({g}, {index}\right)",
       numpy=_code({"_checked": _CHECK, "_take_add": _TAKE_ADD_NUMPY},
                   "_take_add({g}, {index}, {axis}, {size}, 'take')"),
       torch=_code({"_checked": _CHECK_TORCH, "_take_add": _TAKE_ADD_TORCH},
                   "_take_add({g}, {index}, {axis}, {size}, 'take')"),
       elements=_take_add_elements)
def take_add(g: TensorLike, index: TensorLike, axis: int = 0, size: Dim | None = None) -> Result:
    """Zeros with ``size`` along ``axis`` and ``g``'s slices added at the ids in
    ``index`` (repeated ids accumulate): the adjoint of ``take``, torch's index_add."""
    return apply("take_add", g, index, axis=axis, size=size)


# ----- take_along: torch.gather ---------------------------------------------------------------

def _along_shape(op, shapes, attrs):
    x, i = shapes
    a = attrs["axis"]
    if len(i) != len(x):
        raise ShapeError(f"{op}: index of shape {fmt_shape(i)} must have the rank of the "
                         f"input {fmt_shape(x)}")
    for k, (p, q) in enumerate(zip(x, i)):
        if k != a and isinstance(p, int) and isinstance(q, int) and q > p:
            raise ShapeError(f"{op}: index of shape {fmt_shape(i)} is larger than the input "
                             f"{fmt_shape(x)} in dim {k}")
    return tuple(i)


@defop("take_along", ("x", "index"), params=_axis_params, shape=_along_shape,
       text="take_along({x}, {index}, axis={axis})",
       latex=r"\operatorname{{gather}}_{{{axis}}}\left({x}, {index}\right)",
       numpy=_code({"_checked": _CHECK, "_take_along": _ALONG_NUMPY},
                   "_take_along({x}, {index}, {axis}, 'take_along')"),
       torch=_code({"_checked": _CHECK_TORCH, "_take_along": _ALONG_TORCH},
                   "_take_along({x}, {index}, {axis}, 'take_along')"),
       elements=_along_elements)
def take_along(x: TensorLike, index: TensorLike, axis: int) -> Result:
    """``x`` read at ``index`` along ``axis`` (torch.gather: out[i][j] = x[index[i][j]][j]
    for axis 0); the index may be smaller than ``x`` in the other dims."""
    return apply("take_along", x, index, axis=axis)


def _put_params(op, shapes, axis=0, shape=None):
    g, i = shapes
    if shape is None:
        raise ParameterError(f"{op}: give shape, the shape of the result")
    shape = tuple(as_dim(d) for d in shape)
    return (("axis", normalize_axis(axis, len(shape), op)), ("shape", shape))


def _put_shape(op, shapes, attrs):
    g, i = shapes
    if len(g) != len(i) or not all(dims_match(p, q) for p, q in zip(g, i)):
        raise ShapeError(f"{op}: values of shape {fmt_shape(g)} and index of shape "
                         f"{fmt_shape(i)} must have the same shape")
    return attrs["shape"]


@defop("put_along_add", ("g", "index"), params=_put_params, shape=_put_shape, fresh=True,
       text="put_along_add({g}, {index}, axis={axis}, shape={shape})",
       latex=r"\operatorname{{scatter\_add}}_{{{axis}}}\left({g}, {index}\right)",
       numpy=_code({"_checked": _CHECK, "_take_along": _ALONG_NUMPY},
                   "_put_along_add({g}, {index}, {axis}, {shape}, 'take_along')"),
       torch=_code({"_checked": _CHECK_TORCH, "_take_along": _ALONG_TORCH},
                   "_put_along_add({g}, {index}, {axis}, {shape}, 'take_along')"),
       elements=_put_along_elements)
def put_along_add(g: TensorLike, index: TensorLike, axis: int, shape: ShapeLike) -> Result:
    """Zeros of ``shape`` with ``g`` added at ``index`` along ``axis`` (torch's
    scatter_add into zeros): the adjoint of ``take_along``."""
    return apply("put_along_add", g, index, axis=axis, shape=shape)
