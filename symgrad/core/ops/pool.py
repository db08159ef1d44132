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
import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply, make
from ..opdef import FUNCTIONS, defop
from ..shapes import fmt_shape
from . import batching
from .functions import AsFloat
from .pool_taps import HELPERS, _out_size, _taps

LINEAR_KINDS = ("avg", "adaptive_avg", "nearest", "nearest-exact", "linear", "cubic",
                "linear_aa", "cubic_aa")
MAX_KINDS = ("max", "adaptive_max")
_INTERPOLATION = ("nearest", "nearest-exact", "linear", "cubic", "linear_aa", "cubic_aa")


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
    if kind in ("cubic", "linear_aa", "cubic_aa") and d != 2:
        raise ParameterError(f"{op}: {kind} interpolation is 2-D (bicubic, or antialiased "
                             f"bilinear), got {d} dims")
    return d


def _forward_params(op, shapes, kind, args):
    d = _check(op, shapes, kind, args)
    sizes = tuple(shapes[0][len(shapes[0]) - d:])
    out_sizes(op, kind, sizes, args)
    return (("kind", kind), ("sizes", sizes), ("args", args))


def _backward_params(op, shapes, kind, sizes, args):
    _check(op, shapes, kind, args)
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

_MODES = {"linear": ("linear", "bilinear", "trilinear"), "cubic": ("bicubic",) * 3,
          "linear_aa": ("bilinear",) * 3, "cubic_aa": ("bicubic",) * 3}


def torch_name(kind, d):
    """The torch function a kind stands for (``avg_pool2d``, ``interpolate``)."""
    if kind in _INTERPOLATION:
        return "interpolate"
    return f"{kind}_pool{d}d"


def _options(kind, args, sizes=None):
    """The call's arguments as the public functions below (torch's names) take them,
    defaults left out; ``sizes``: the input spatial size a transposed map needs."""
    opts = [] if sizes is None else [f"input_size={_fmt_sizes(sizes)}"]
    if kind in ("adaptive_avg", "adaptive_max"):
        return opts + [f"output_size={args[0]!r}"]
    if kind in _INTERPOLATION:
        out, align, scales = args
        d = len(out)
        if scales is not None:
            opts.append(f"scale_factor={scales!r}")
        elif all(isinstance(v, int) for v in out):
            opts.append(f"size={out!r}")
        else:
            opts += [f"scale_factor={out!r}", "recompute_scale_factor=True"]
        opts.append(f"mode={_MODES.get(kind, (kind,) * 3)[d - 1]!r}")
        if align:
            opts.append("align_corners=True")
        if kind.endswith("_aa"):
            opts.append("antialias=True")
        return opts
    opts += [f"kernel_size={args[0]!r}", f"stride={args[1]!r}"]
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


def _fmt_sizes(sizes):
    items = [str(v) for v in sizes]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _text(suffix, operands):
    def spell(kind, args, sizes=None, **fields):
        k, a = kind.value, args.value
        name = torch_name(k, len(a[0])) + suffix
        shown = sizes.expr if sizes is not None and suffix == "_backward" else None
        parts = [f"{fields[o]}" for o in operands] + _options(k, a, shown)
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
        sizes = node.attrs.get("sizes") if suffix == "_backward" else None
        return m.fn(torch_name(kind, len(args[0])) + suffix, *terms,
                    data=", ".join(_options(kind, args, sizes)))
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


_TAPS = ("_window_out", "_out_size", "_cubic", "_aa_taps", "_taps")
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

@defop("resample", ("x",), jax="host", matrix=_matrix(""),
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


@defop("resample_backward", ("g",), jax="host", matrix=_matrix("_backward"),
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


@defop("max_pool", ("x",), jax="host", matrix=_matrix(""),
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


@defop("max_pool_backward", ("g", "x"), jax="host", matrix=_matrix("_backward"),
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


@defop("max_pool_gather", ("h", "x"), jax="host", matrix=_matrix("_gather"),
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


# ----- the public functions the printed formulas call --------------------------------------
# torch's names and arguments (``max_pool2d(x, kernel_size=3, stride=2)``,
# ``avg_pool2d_backward(g, input_size=(7, 8), kernel_size=...)``), so a printed formula
# reads back: each normalises torch's arguments and applies one op above.

def _ints(name, what, value, d):
    """torch's _single/_pair/_triple: an int for every spatial dim, or one per dim."""
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * d
    if len(values) == 1:
        values = values * d
    if len(values) != d or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ParameterError(f"{name}: {what} must be an int or {d} ints, got {value!r}")
    return values


def window_args(name, kind, d, kernel_size, stride=None, padding=0, dilation=1,
                ceil_mode=False, count_include_pad=True, divisor_override=None):
    """The ``args`` of a max (``kind="max"``) or average (``"avg"``) pool, checked as
    torch checks them: stride defaults to the kernel, padding at most half the kernel."""
    k = _ints(name, "kernel_size", kernel_size, d)
    empty = stride is None or (isinstance(stride, (list, tuple)) and not stride)
    s = k if empty else _ints(name, "stride", stride, d)
    p = _ints(name, "padding", padding, d)
    dl = _ints(name, "dilation", dilation, d)
    if any(v <= 0 for v in k + s + dl):
        raise ParameterError(f"{name}: kernel_size, stride and dilation must be positive, got "
                             f"kernel_size={k}, stride={s}, dilation={dl}")
    if any(v < 0 or 2 * v > kk for v, kk in zip(p, k)):
        raise ParameterError(f"{name}: padding {p} must be non-negative and at most half the "
                             f"kernel size {k}, as torch requires")
    if kind == "max":
        return (k, s, p, dl, bool(ceil_mode))
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(
            divisor_override, int) or divisor_override == 0):
        raise ParameterError(f"{name}: divisor_override must be a non-zero int, got "
                             f"{divisor_override!r}")
    return (k, s, p, bool(ceil_mode), bool(count_include_pad), divisor_override)


def interpolation_args(name, mode, d, spatial, size=None, scale_factor=None,
                       align_corners=None, recompute_scale_factor=None, antialias=False):
    """(kind, args) of F.interpolate's mode and sizes, with torch's rules: exactly one of
    size and scale_factor; the output size floor(n · factor); the factor passed on to the
    coordinate mapping unless ``recompute_scale_factor``; ``area``: adaptive averages;
    ``antialias``: bilinear and bicubic of a 2-D image only."""
    if antialias and (mode not in ("bilinear", "bicubic") or d != 2):
        raise ParameterError(f"{name}: antialias=True is restricted to the bilinear and "
                             f"bicubic modes of a 4-D input, got mode={mode!r} with {d} "
                             "spatial dims")
    kinds = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "linear",
             "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic", "area": "area"}
    linear = mode in ("linear", "bilinear", "trilinear", "bicubic")
    if not linear and align_corners is not None:
        raise ParameterError(f"{name}: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ParameterError(f"{name}: give exactly one of size or scale_factor")
    if size is not None:
        if recompute_scale_factor:
            raise ParameterError(f"{name}: recompute_scale_factor is not meaningful with an "
                                 "explicit size")
        out, scales = _ints(name, "size", size, d), None
    else:
        factors = scale_factor if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * d
        if len(factors) != d:
            raise ParameterError(f"{name}: scale_factor must be a number or {d} numbers, got "
                                 f"{scale_factor!r}")
        out = tuple(float(v) for v in factors)
        scales = None if recompute_scale_factor or mode == "area" else out
    out = tuple(int(v * n) if isinstance(v, float) and isinstance(n, int) else v
                for v, n in zip(out, spatial))
    if mode == "area":
        if not all(isinstance(v, int) for v in out):
            raise ShapeError(f"{name}: mode='area' with a scale factor needs concrete spatial "
                             f"sizes, got {spatial}")
        return "adaptive_avg", (out,)
    kind = kinds[mode] + ("_aa" if antialias else "")
    return kind, (out, bool(align_corners) if linear else False, scales)


def _spatial_of(x, d):
    shape = getattr(x, "shape", ())
    return tuple(shape[len(shape) - d:])


def _register(name, fn):
    fn.__name__ = name
    FUNCTIONS[name] = fn


def _define_public(d):
    def max_args(name, kernel_size, stride, padding, dilation, ceil_mode):
        return window_args(name, "max", d, kernel_size, stride, padding, dilation, ceil_mode)

    def avg_args(name, kernel_size, stride, padding, ceil_mode, count_include_pad,
                 divisor_override):
        return window_args(name, "avg", d, kernel_size, stride, padding, 1, ceil_mode,
                           count_include_pad, divisor_override)

    for suffix, op in (("", max_pool), ("_backward", max_pool_backward),
                       ("_gather", max_pool_gather)):
        name = f"max_pool{d}d{suffix}"

        def windowed(*operands, kernel_size, stride=None, padding=0, dilation=1,
                     ceil_mode=False, _op=op, _name=name):
            return _op(*operands, "max", max_args(_name, kernel_size, stride, padding,
                                                  dilation, ceil_mode))

        def adaptive(*operands, output_size, _op=op, _name=name):
            return _op(*operands, "adaptive_max", (_ints(_name, "output_size", output_size, d),))
        _register(name, windowed)
        _register(f"adaptive_max_pool{d}d{suffix}", adaptive)

    def avg(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
            divisor_override=None):
        return resample(x, "avg", avg_args(f"avg_pool{d}d", kernel_size, stride, padding,
                                           ceil_mode, count_include_pad, divisor_override))

    def avg_backward(g, input_size, kernel_size, stride=None, padding=0, ceil_mode=False,
                     count_include_pad=True, divisor_override=None):
        return resample_backward(g, "avg", tuple(input_size), avg_args(
            f"avg_pool{d}d_backward", kernel_size, stride, padding, ceil_mode,
            count_include_pad, divisor_override))

    def adaptive_avg(x, output_size):
        return resample(x, "adaptive_avg", (_ints("adaptive_avg_pool", "output_size",
                                                  output_size, d),))

    def adaptive_avg_backward(g, input_size, output_size):
        return resample_backward(g, "adaptive_avg", tuple(input_size), (
            _ints("adaptive_avg_pool", "output_size", output_size, d),))
    _register(f"avg_pool{d}d", avg)
    _register(f"avg_pool{d}d_backward", avg_backward)
    _register(f"adaptive_avg_pool{d}d", adaptive_avg)
    _register(f"adaptive_avg_pool{d}d_backward", adaptive_avg_backward)


for _d in (1, 2, 3):
    _define_public(_d)


def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch's F.interpolate over x's trailing spatial axes (as many as size or
    scale_factor has entries, else all but two)."""
    d = _interp_rank(x, size, scale_factor)
    kind, args = interpolation_args("interpolate", mode, d, _spatial_of(x, d), size,
                                    scale_factor, align_corners, recompute_scale_factor,
                                    antialias)
    return resample(x, kind, args)


def interpolate_backward(g, input_size, size=None, scale_factor=None, mode="nearest",
                         align_corners=None, recompute_scale_factor=None, antialias=False):
    """The transpose of ``interpolate`` from spatial size ``input_size``."""
    input_size = tuple(input_size)
    kind, args = interpolation_args("interpolate_backward", mode, len(input_size), input_size,
                                    size, scale_factor, align_corners, recompute_scale_factor,
                                    antialias)
    return resample_backward(g, kind, input_size, args)


def _interp_rank(x, size, scale_factor):
    given = size if size is not None else scale_factor
    if isinstance(given, (list, tuple)):
        return len(given)
    return len(getattr(x, "shape", ())) - 2


_register("interpolate", interpolate)
_register("interpolate_backward", interpolate_backward)
