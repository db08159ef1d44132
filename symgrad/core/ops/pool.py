"""Pooling and interpolation over the trailing spatial axes of a tensor (1, 2 or 3 of them;
every leading axis is a batch axis, so (N, C, H, W), (C, H, W) and a batched Jacobian all
work alike). The per-axis arithmetic, torch's exactly, is in ``pool_taps``.

Two families, each closed under differentiation, so gradients of any order read as ops:

* ``resample(x)``: average pooling, adaptive average pooling and interpolation (nearest,
  nearest-exact, linear, cubic). Each is linear and separable: along every spatial axis
  a constant sparse matrix (for each output position, the input positions it reads and
  their weights). Its gradient ``resample_backward(g)`` applies the transposed matrices,
  and the gradient of that is ``resample`` again. NumPy gathers the taps and sums them
  (no loop over pixels); torch runs its own ``F.avg_pool2d`` / ``F.interpolate`` / ...
  forward.
* ``max_pool(x)``: regular and adaptive max pooling. Its gradient
  ``max_pool_backward(g, x)`` sends each output's gradient to the position torch's argmax
  picks (the first maximum of the window; the last nan if any); as a function of g that
  is linear, with transpose ``max_pool_gather(h, x)`` (h read at those positions, also
  max_pool's JVP). Both are piecewise constant in x (no gradient flows to it), as torch's
  double backward.

Derivatives: rules/pool.yaml.
"""
import math

import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply, make
from ..opdef import defop
from ..shapes import fmt_shape
from . import batching
from .functions import AsFloat
from .pool_taps import SOURCES, _out_size, _taps, _transposed

LINEAR_KINDS = ("avg", "adaptive_avg", "nearest", "nearest-exact", "linear", "cubic")
MAX_KINDS = ("max", "adaptive_max")
_INTERPOLATION = ("nearest", "nearest-exact", "linear", "cubic")


def spatial_rank(kind, args):
    return len(args[0])


def out_sizes(op, kind, sizes, args):
    """Output spatial sizes; a SymPy expression where a size is symbolic."""
    out = []
    for i, n in enumerate(sizes):
        if kind in _INTERPOLATION and not isinstance(args[0][i], int) and not isinstance(n, int):
            out.append(sympy.floor(n * sympy.Float(args[0][i])))
            continue
        try:
            m = _out_size(kind, n, i, args)
        except TypeError:
            raise ShapeError(f"{op}: with ceil_mode the output size of spatial dim {n} "
                             "depends on its value; give that dim a concrete size") from None
        if isinstance(m, sympy.Basic) and m.is_Integer:
            m = int(m)
        if isinstance(m, int) and m < 1:
            raise ShapeError(f"{op}: the output of spatial size {n} would be {m} (< 1) with "
                             f"args {args}; the input is too small for the kernel")
        out.append(m)
    return tuple(out)


def _check(op, shapes, kind, args):
    if kind not in LINEAR_KINDS + MAX_KINDS:
        raise ParameterError(f"{op}: unknown kind {kind!r}")
    d = spatial_rank(kind, args)
    if d not in (1, 2, 3) or len(shapes[0]) < d:
        raise ShapeError(f"{op}: {d} spatial dims need an input of rank >= {d}, got shape "
                         f"{fmt_shape(shapes[0])}")
    if kind == "cubic" and d != 2:
        raise ParameterError(f"{op}: cubic interpolation is 2-D (bicubic), got {d} dims")
    return d


def _forward_params(op, shapes, kind, args):
    d = _check(op, shapes, kind, args)
    sizes = tuple(shapes[0][len(shapes[0]) - d:])
    out_sizes(op, kind, sizes, args)
    return (("kind", kind), ("sizes", sizes), ("args", args))


def _backward_params(op, shapes, kind, sizes, args):
    d = _check(op, shapes, kind, args)
    return (("kind", kind), ("sizes", tuple(sizes)), ("args", args))


def _forward_shape(op, shapes, attrs):
    d = len(attrs["sizes"])
    lead = shapes[0][:len(shapes[0]) - d]
    return tuple(lead) + out_sizes(op, attrs["kind"], attrs["sizes"], attrs["args"])


def _backward_shape(op, shapes, attrs):
    d = len(attrs["sizes"])
    return tuple(shapes[0][:len(shapes[0]) - d]) + tuple(attrs["sizes"])


def _batch(node, ins, size):
    """Every op here works on trailing axes: a leading batch axis is one more batch axis."""
    return make(node.op, tuple(batching.unbatched(v, b, size) for v, b in ins), node.params)


# ----- spelling ---------------------------------------------------------------------------

_MODES = {"linear": ("linear", "bilinear", "trilinear"), "cubic": ("bicubic",) * 3}


def torch_name(kind, d):
    """The torch function a kind stands for (``avg_pool2d``, ``interpolate``)."""
    if kind in _INTERPOLATION:
        return "interpolate"
    return f"{kind}_pool{d}d"


def _options(kind, args):
    """The call's arguments as torch spells them, defaults left out."""
    if kind in ("adaptive_avg", "adaptive_max"):
        return [repr(args[0])]
    if kind in _INTERPOLATION:
        out, align, scales = args
        d = len(out)
        if all(isinstance(v, int) for v in out):
            opts = [f"size={out!r}"]
        else:
            opts = [f"scale_factor={out!r}"]
        mode = _MODES.get(kind, (kind,) * 3)[d - 1]
        opts.append(f"mode={mode!r}")
        if align:
            opts.append("align_corners=True")
        return opts
    opts = [f"kernel_size={args[0]!r}", f"stride={args[1]!r}"]
    if any(args[2]):
        opts.append(f"padding={args[2]!r}")
    if kind == "max":
        if any(v != 1 for v in args[3]):
            opts.append(f"dilation={args[3]!r}")
        if args[4]:
            opts.append("ceil_mode=True")
    else:
        if args[3]:
            opts.append("ceil_mode=True")
        if not args[4]:
            opts.append("count_include_pad=False")
        if args[5] is not None:
            opts.append(f"divisor_override={args[5]!r}")
    return opts


def _text(suffix, operands):
    def spell(kind, args, sizes=None, **fields):
        k, a = kind.value, args.value
        name = torch_name(k, len(a[0])) + suffix
        parts = [f"{fields[o]}" for o in operands] + _options(k, a)
        return f"{name}({', '.join(parts)})"
    return spell


def _latex(suffix, operands):
    def spell(kind, args, sizes=None, **fields):
        name = (torch_name(kind.value, len(args.value[0])) + suffix).replace("_", r"\_")
        inner = ", ".join(f"{fields[o]}" for o in operands)
        return rf"\operatorname{{{name}}}\left({inner}\right)"
    return spell


def _matrix(suffix):
    """Matrix notation: the torch call, ``max_pool2d_backward(g, x, kernel_size=...)``."""
    def form(m, node, *terms):
        kind, args = node.attrs["kind"], node.attrs["args"]
        return m.fn(torch_name(kind, len(args[0])) + suffix, *terms,
                    data=", ".join(_options(kind, args)))
    return form


def _code(helper, operands, names, extra=""):
    """``helper(operands..., kind, [sizes,] args)``; ``args`` is written as a Python
    literal (plain ints, floats, bools and None), sizes as dims the code binds."""
    def spell(kind, args, sizes=None, **fields):
        parts = [f"{fields[o]}" for o in operands] + [repr(kind.value)]
        if sizes is not None and helper.startswith("_resample_backward"):
            parts.append(f"{sizes}")
        parts.append(repr(args.value))
        return f"{helper}({', '.join(parts)}{extra})", {n: HELPERS[n] for n in names}
    return spell


_TAPS = ("_window_out", "_out_size", "_cubic", "_taps")
HELPERS = dict(SOURCES)
HELPERS["_along"] = '''def _along(x, axis, idx, w):
    """x with axis replaced by sum_k w[o, k] x[idx[o, k]] for each output position o."""
    t = numpy.moveaxis(x, axis, -1)[..., idx]
    return numpy.moveaxis(numpy.einsum("...ok,ok->...o", t, w), -1, axis)'''
HELPERS["_resample"] = '''def _resample(x, kind, args):
    d = len(args[0])
    for i in range(d):
        axis = x.ndim - d + i
        idx, w, _ = _taps(kind, x.shape[axis], i, args)
        x = _along(x, axis, idx, w)
    return x'''
HELPERS["_resample_backward"] = '''def _resample_backward(g, kind, sizes, args):
    d = len(sizes)
    for i in range(d):
        idx, w, _ = _taps(kind, int(sizes[i]), i, args)
        tidx, tw = _transposed(idx, w, int(sizes[i]))
        g = _along(g, g.ndim - d + i, tidx, tw)
    return g'''
HELPERS["_max_pool_backward"] = '''def _max_pool_backward(g, x, kind, args):
    _, index = _max_where(x, kind, args)
    d = len(args[0])
    space = int(numpy.prod(x.shape[x.ndim - d:], dtype=numpy.int64))
    rows = index.reshape(-1, int(numpy.prod(index.shape[index.ndim - d:], dtype=numpy.int64)))
    flat = (numpy.arange(rows.shape[0])[:, None] * space + rows).ravel()
    g = numpy.broadcast_to(g, index.shape).ravel()
    return numpy.bincount(flat, weights=g, minlength=rows.shape[0] * space).reshape(x.shape)'''
HELPERS["_max_pool_gather"] = '''def _max_pool_gather(h, x, kind, args):
    _, index = _max_where(x, kind, args)
    d = len(args[0])
    h = numpy.broadcast_to(h, x.shape).reshape(x.shape[:x.ndim - d] + (-1,))
    rows = index.reshape(index.shape[:index.ndim - d] + (-1,))
    return numpy.take_along_axis(h, rows, -1).reshape(index.shape)'''

# torch: the forward passes are torch's own functions, on (batch, channel, *spatial) with
# the leading axes folded into the batch; the transposes use the same taps.
HELPERS["_along_t"] = '''def _along_t(x, axis, idx, w):
    idx = torch.as_tensor(idx, device=x.device)
    w = torch.as_tensor(w, dtype=x.dtype, device=x.device)
    t = torch.movedim(x, axis, -1)[..., idx]
    return torch.movedim(torch.einsum("...ok,ok->...o", t, w), -1, axis)'''
HELPERS["_folded_t"] = '''def _folded_t(x, d):
    lead = tuple(x.shape[:x.ndim - d])
    return x.reshape((math.prod(lead), 1) + tuple(x.shape[x.ndim - d:])), lead'''
HELPERS["_resample_t"] = '''def _resample_t(x, kind, args):
    F = torch.nn.functional
    d = len(args[0])
    if kind == "avg" and d == 1 and args[5] is not None:
        for i in range(d):
            idx, w, _ = _taps(kind, x.shape[x.ndim - d + i], i, args)
            x = _along_t(x, x.ndim - d + i, idx, w)
        return x
    x4, lead = _folded_t(x, d)
    if kind == "avg":
        k, s, p, ceil, include, divisor = args
        if d == 1:
            y = F.avg_pool1d(x4, k, s, p, ceil, include)
        else:
            y = (F.avg_pool2d, F.avg_pool3d)[d - 2](x4, k, s, p, ceil, include, divisor)
    elif kind == "adaptive_avg":
        y = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[d - 1](x4, args[0])
    else:
        out, align, scales = args
        mode = {"linear": ("linear", "bilinear", "trilinear")[d - 1], "cubic": "bicubic"}.get(kind, kind)
        align = align if kind in ("linear", "cubic") else None
        if scales is not None:
            y = F.interpolate(x4, scale_factor=scales, mode=mode, align_corners=align,
                              recompute_scale_factor=False)
        else:
            size = tuple(_out_size(kind, x.shape[x.ndim - d + i], i, args) for i in range(d))
            y = F.interpolate(x4, size=size, mode=mode, align_corners=align)
    return y.reshape(lead + tuple(y.shape[2:]))'''
HELPERS["_resample_backward_t"] = '''def _resample_backward_t(g, kind, sizes, args):
    d = len(sizes)
    for i in range(d):
        idx, w, _ = _taps(kind, int(sizes[i]), i, args)
        tidx, tw = _transposed(idx, w, int(sizes[i]))
        g = _along_t(g, g.ndim - d + i, tidx, tw)
    return g'''
HELPERS["_max_where_t"] = '''def _max_where_t(x, kind, args):
    """(values, flat spatial index of each window's argmax), by torch's own pooling."""
    F = torch.nn.functional
    d = len(args[0])
    lead = tuple(x.shape[:x.ndim - d])
    x3 = x.reshape((math.prod(lead),) + tuple(x.shape[x.ndim - d:]))
    if kind == "max":
        k, s, p, dl, ceil = args
        fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[d - 1]
        y, i = fn(x3, k, s, p, dl, ceil_mode=ceil, return_indices=True)
    else:
        fn = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[d - 1]
        y, i = fn(x3, args[0], return_indices=True)
    return y.reshape(lead + tuple(y.shape[1:])), i.reshape(lead + tuple(i.shape[1:]))'''
HELPERS["_max_pool_t"] = '''def _max_pool_t(x, kind, args):
    return _max_where_t(x, kind, args)[0]'''
HELPERS["_max_pool_backward_t"] = '''def _max_pool_backward_t(g, x, kind, args):
    _, index = _max_where_t(x, kind, args)
    d = len(args[0])
    rows = index.reshape(-1, math.prod(index.shape[index.ndim - d:]))
    g = torch.broadcast_to(g, index.shape).reshape(rows.shape)
    out = torch.zeros((rows.shape[0], math.prod(x.shape[x.ndim - d:])), dtype=g.dtype,
                      device=g.device)
    return out.scatter_add_(1, rows, g).reshape(x.shape)'''
HELPERS["_max_pool_gather_t"] = '''def _max_pool_gather_t(h, x, kind, args):
    _, index = _max_where_t(x, kind, args)
    d = len(args[0])
    h = torch.broadcast_to(h, x.shape).reshape(x.shape[:x.ndim - d] + (-1,))
    rows = index.reshape(tuple(index.shape[:index.ndim - d]) + (-1,))
    return torch.gather(h, -1, rows).reshape(index.shape)'''


def _needs(*names):
    return _TAPS + ("_transposed", "_max_where") + names


# ----- per-element forms (explicit) -------------------------------------------------------

def _number(w):
    r = sympy.Rational(float(w)).limit_denominator(10 ** 9)
    return r if float(r) == float(w) else sympy.Float(float(w))


def _dense(kind, n, i, args):
    """The dense (m, n) matrix of axis i as SymPy numbers."""
    idx, w, _ = _taps(kind, n, i, args)
    dense = numpy.zeros((idx.shape[0], n))
    numpy.add.at(dense, (numpy.repeat(numpy.arange(idx.shape[0]), idx.shape[1]), idx.ravel()),
                 w.ravel())
    return numpy.vectorize(_number, otypes=[object])(dense)


def _apply_matrices(x, ctx, transpose):
    a = ctx.attrs
    d = len(a["sizes"])
    for i in range(d):
        n = ctx.size(a["sizes"][i])
        mat = _dense(a["kind"], n, i, a["args"])
        if transpose:
            mat = mat.T
        axis = x.ndim - d + i
        x = numpy.moveaxis(numpy.tensordot(x, mat, axes=([axis], [1])), -1, axis)
    return x


def _windows(ctx, x_shape):
    """{output position: [input positions of its window, in torch's scan order]}."""
    a = ctx.attrs
    d = len(a["args"][0])
    sp = x_shape[len(x_shape) - d:]
    per_axis = []
    for i in range(d):
        idx, _, ok = _taps(a["kind"], sp[i], i, a["args"])
        per_axis.append([[int(j) for j, v in zip(r, okr) if v] for r, okr in zip(idx, ok)])
    windows = {}
    for out in numpy.ndindex(*[len(p) for p in per_axis]):
        cells = [()]
        for i, o in enumerate(out):
            cells = [c + (j,) for c in cells for j in per_axis[i][o]]
        windows[out] = cells
    return windows, d


def _first_max(values):
    """Iverson brackets: [position q holds the first maximum of ``values``]."""
    top = sympy.Max(*values)
    out = []
    for q, v in enumerate(values):
        earlier = [sympy.Ne(values[r], top) for r in range(q)]
        out.append(AsFloat(sympy.And(sympy.Eq(v, top), *earlier)))
    return out


def _max_elements(ctx, x):
    windows, d = _windows(ctx, x.shape)
    out = numpy.empty(ctx.shape, dtype=object)
    for lead in numpy.ndindex(*x.shape[:x.ndim - d]):
        for o, cells in windows.items():
            out[lead + o] = sympy.Max(*[x[lead + c] for c in cells])
    return out


def _max_backward_elements(ctx, g, x):
    windows, d = _windows(ctx, x.shape)
    out = numpy.full(x.shape, sympy.S.Zero, dtype=object)
    for lead in numpy.ndindex(*x.shape[:x.ndim - d]):
        for o, cells in windows.items():
            for c, hit in zip(cells, _first_max([x[lead + c] for c in cells])):
                out[lead + c] = out[lead + c] + g[lead + o] * hit
    return out


def _max_gather_elements(ctx, h, x):
    windows, d = _windows(ctx, x.shape)
    h = numpy.broadcast_to(h, x.shape)
    out = numpy.empty(ctx.shape, dtype=object)
    for lead in numpy.ndindex(*x.shape[:x.ndim - d]):
        for o, cells in windows.items():
            hits = _first_max([x[lead + c] for c in cells])
            out[lead + o] = sympy.Add(*[h[lead + c] * hit for c, hit in zip(cells, hits)])
    return out


# ----- the ops ------------------------------------------------------------------------------

@defop("resample", ("x",), matrix=_matrix(""),
       params=_forward_params, shape=_forward_shape,
       sympy_params=("kind", "sizes", "args"),
       text=_text("", ("x",)), latex=_latex("", ("x",)),
       numpy=_code("_resample", ("x",), _needs("_along", "_resample")),
       torch=_code("_resample_t", ("x",), _needs("_along_t", "_folded_t", "_resample_t")),
       elements=lambda ctx, x: _apply_matrices(x, ctx, False), batch=_batch)
def resample(x, kind, args):
    """A separable linear map of x's trailing axes: average pooling (``kind="avg"``),
    adaptive average pooling or interpolation; see ``pool_taps`` for the ``args``."""
    return apply("resample", x, kind=kind, args=args)


@defop("resample_backward", ("g",), matrix=_matrix("_backward"),
       params=_backward_params, shape=_backward_shape,
       sympy_params=("kind", "sizes", "args"),
       text=_text("_backward", ("g",)), latex=_latex("_backward", ("g",)),
       numpy=_code("_resample_backward", ("g",), _needs("_along", "_resample_backward")),
       torch=_code("_resample_backward_t", ("g",), _needs("_along_t", "_resample_backward_t")),
       elements=lambda ctx, g: _apply_matrices(g, ctx, True), batch=_batch)
def resample_backward(g, kind, sizes, args):
    """The transpose of ``resample`` (input spatial sizes ``sizes``): its gradient."""
    return apply("resample_backward", g, kind=kind, sizes=sizes, args=args)


def _max_params(op, shapes, kind, args):
    if kind not in MAX_KINDS:
        raise ParameterError(f"{op}: kind must be one of {MAX_KINDS}, got {kind!r}")
    d = _check(op, shapes[-1:], kind, args)
    x = shapes[-1]
    out_sizes(op, kind, tuple(x[len(x) - d:]), args)
    return (("kind", kind), ("args", args))


def _max_shape(op, shapes, attrs):
    x = shapes[-1]
    d = len(attrs["args"][0])
    return tuple(x[:len(x) - d]) + out_sizes(op, attrs["kind"], tuple(x[len(x) - d:]),
                                             attrs["args"])


@defop("max_pool", ("x",), matrix=_matrix(""),
       params=_max_params, shape=_max_shape,
       sympy_params=("kind", "args"),
       text=_text("", ("x",)), latex=_latex("", ("x",)),
       numpy=lambda x, kind, args: (f"_max_where({x}, {kind.value!r}, {args.value!r})[0]",
                                    {n: HELPERS[n] for n in _needs()}),
       torch=_code("_max_pool_t", ("x",), _needs("_max_where_t", "_max_pool_t")),
       elements=_max_elements, batch=_batch)
def max_pool(x, kind, args):
    """The maximum of each window of x's trailing axes (``kind="max"``: kernel, stride,
    padding, dilation, ceil_mode; ``"adaptive_max"``: output size)."""
    return apply("max_pool", x, kind=kind, args=args)


@defop("max_pool_backward", ("g", "x"), matrix=_matrix("_backward"),
       params=_max_params,
       shape=lambda op, shapes, attrs: shapes[1],
       sympy_params=("kind", "args"),
       text=_text("_backward", ("g", "x")), latex=_latex("_backward", ("g", "x")),
       numpy=_code("_max_pool_backward", ("g", "x"), _needs("_max_pool_backward")),
       torch=_code("_max_pool_backward_t", ("g", "x"), _needs("_max_where_t",
                                                              "_max_pool_backward_t")),
       elements=_max_backward_elements, batch=_batch)
def max_pool_backward(g, x, kind, args):
    """Zeros of x's shape with each element of g added where its window's maximum is."""
    return apply("max_pool_backward", g, x, kind=kind, args=args)


@defop("max_pool_gather", ("h", "x"), matrix=_matrix("_gather"),
       params=_max_params, shape=_max_shape,
       sympy_params=("kind", "args"),
       text=_text("_gather", ("h", "x")), latex=_latex("_gather", ("h", "x")),
       numpy=_code("_max_pool_gather", ("h", "x"), _needs("_max_pool_gather")),
       torch=_code("_max_pool_gather_t", ("h", "x"), _needs("_max_where_t",
                                                            "_max_pool_gather_t")),
       elements=_max_gather_elements, batch=_batch)
def max_pool_gather(h, x, kind, args):
    """h (of x's shape) read where each window of x has its maximum."""
    return apply("max_pool_gather", h, x, kind=kind, args=args)
