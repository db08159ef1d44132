"""The convolution family: N-d convolution (``conv``, torch's conv{1,2,3}d), transposed
convolution (``conv_transpose``), the weight gradient of a convolution
(``conv_weight``), and im2col / col2im (``unfold`` / ``fold``).

The three convolution ops are one bilinear form seen from its three sides: with
B(x, W, g) = <conv(x, W), g>, the gradient of conv for x is conv_transpose(g, W), for W
is conv_weight(x, g); conv_transpose's are conv and conv_weight again, and
conv_weight's are conv_transpose and conv. So every rule (rules/conv.yaml) is written
with these ops and differentiates again to any order, and a printed gradient reads as
ops ("conv_transpose2d(g, W, stride=2)"), never as index arithmetic.

Padding is kept per side, ((lo, hi), ...) per spatial dim, so a gradient can name the
exact geometry: the input gradient of a strided convolution whose last input rows no
window reaches is a transposed convolution cropping less on that side (torch's
output_padding); a negative amount crops (conv) or appends zeros (conv_transpose).
Inputs are (N, C, *spatial) or unbatched (C, *spatial); kernel sizes, strides,
paddings and dilations are ints, batch, channel and spatial dims may be symbolic.
The NumPy code and the per-element forms are the kernels in ``conv_kernels``.
"""

import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..constructors import zeros
from ..opdef import defop, public
from ..shapes import as_shape, dims_match, fmt_shape
from . import conv_kernels
from ..types import IntTuple, Result, ShapeLike, TensorLike
from ..sources import function_source

_NAMES = {1: "1d", 2: "2d", 3: "3d"}


# ----- parameters ------------------------------------------------------------------------

def _int(op, name, v):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise ParameterError(f"{op}: {name} must be ints, got {v!r}")
    return int(v)


def int_tuple(op, name, value, nd, least=None):
    """An int or nd ints as a tuple of nd ints (each >= ``least``)."""
    items = tuple(value) if isinstance(value, (tuple, list)) else (value,) * nd
    if len(items) != nd:
        raise ParameterError(f"{op}: {name} needs 1 or {nd} values for {nd} spatial dims, "
                             f"got {value!r}")
    items = tuple(_int(op, name, v) for v in items)
    if least is not None and any(v < least for v in items):
        raise ParameterError(f"{op}: {name} must be >= {least}, got {value!r}")
    return items


def pairs(op, value, nd):
    """Padding as ((lo, hi), ...) per spatial dim, from an int, nd ints (both sides) or
    nd (lo, hi) pairs."""
    if isinstance(value, (tuple, list)) and any(isinstance(v, (tuple, list)) for v in value):
        if len(value) != nd or any(not isinstance(v, (tuple, list)) or len(v) != 2
                                   for v in value):
            raise ParameterError(f"{op}: padding as pairs needs {nd} (lo, hi) pairs, "
                                 f"got {value!r}")
        return tuple((_int(op, "padding", lo), _int(op, "padding", hi)) for lo, hi in value)
    return tuple((p, p) for p in int_tuple(op, "padding", value, nd))


def _spatial_rank(op, x, w):
    nd = len(w) - 2
    if nd not in _NAMES:
        raise ShapeError(f"{op}: the weight must be (out, in/groups, *kernel) with 1 to 3 "
                         f"spatial dims, got {fmt_shape(w)}")
    if len(x) not in (nd + 1, nd + 2):
        raise ShapeError(f"{op}{_NAMES[nd]}: a weight of shape {fmt_shape(w)} needs an input "
                         f"of rank {nd + 2} (N, C, *spatial) or {nd + 1} (C, *spatial), got "
                         f"{fmt_shape(x)}")
    kernel = w[2:]
    if not all(isinstance(k, int) and k > 0 for k in kernel):
        raise ShapeError(f"{op}{_NAMES[nd]}: kernel sizes must be concrete positive ints, "
                         f"got weight {fmt_shape(w)}")
    return nd


def _groups(op, groups, channels, what):
    groups = _int(op, "groups", groups)
    if groups < 1:
        raise ParameterError(f"{op}: groups must be >= 1, got {groups}")
    for c, name in zip(channels, what):
        if isinstance(c, int) and c % groups:
            raise ShapeError(f"{op}: {name} ({c}) must be divisible by groups ({groups})")
    return groups


def _geometry(op, nd, stride, padding, dilation, groups):
    return (("stride", int_tuple(op, "stride", stride, nd, 1)),
            ("padding", pairs(op, padding, nd)),
            ("dilation", int_tuple(op, "dilation", dilation, nd, 1)), ("groups", groups))


def _dim(e):
    e = sympy.sympify(e)
    return int(e) if e.is_Integer else e


def conv_out(size, lo, hi, k, s, d):
    """torch's output size floor((L + lo + hi - d(k-1) - 1)/s) + 1."""
    span = sympy.sympify(size) + lo + hi - d * (k - 1) - 1
    return _dim(span + 1 if s == 1 else sympy.floor(span / s) + 1)


def _check_sizes(op, sizes, x, what):
    for v in sizes:
        if isinstance(v, int) and v < 1:
            raise ShapeError(f"{op}: {what} {fmt_shape(x)} gives an output of size {v} "
                             f"along a spatial dim; the (padded) input must be at least "
                             f"the dilated kernel")


def _conv_params(op, shapes, stride=1, padding=0, dilation=1, groups=1):
    x, w = shapes
    nd = _spatial_rank(op, x, w)
    c = x[-nd - 1]
    groups = _groups(op, groups, (w[0],), ("the weight's out channels",))
    if not dims_match(c, sympy.sympify(w[1]) * groups):
        raise ShapeError(f"{op}{_NAMES[nd]}: input {fmt_shape(x)} has {c} channels, but "
                         f"weight {fmt_shape(w)} with groups={groups} expects "
                         f"{_dim(sympy.sympify(w[1]) * groups)}")
    return _geometry(op, nd, stride, padding, dilation, groups)


def _conv_shape(op, shapes, attrs):
    x, w = shapes
    nd = len(w) - 2
    out = tuple(conv_out(L, lo, hi, k, s, d) for L, (lo, hi), k, s, d in zip(
        x[-nd:], attrs["padding"], w[2:], attrs["stride"], attrs["dilation"]))
    _check_sizes(f"{op}{_NAMES[nd]}", out, x, "input")
    return x[:-nd - 1] + (w[0],) + out


def _transpose_full(size, k, s, d):
    return _dim((sympy.sympify(size) - 1) * s + d * (k - 1) + 1)


def _conv_transpose_params(op, shapes, stride=1, padding=0, output_padding=0, dilation=1,
                           groups=1, output_size=None):
    x, w = shapes
    nd = _spatial_rank(op, x, w)
    groups = _groups(op, groups, (w[0],), ("the weight's in channels",))
    if not dims_match(x[-nd - 1], w[0]):
        raise ShapeError(f"{op}{_NAMES[nd]}: input {fmt_shape(x)} has {x[-nd - 1]} channels, "
                         f"but weight {fmt_shape(w)} expects {w[0]}")
    geometry = dict(_geometry(op, nd, stride, padding, dilation, groups))
    extra = int_tuple(op, "output_padding", output_padding, nd, 0)
    crops = [(lo, hi - e) for (lo, hi), e in zip(geometry["padding"], extra)]
    if output_size is not None:
        size = tuple(as_shape(output_size))[-nd:]
        if len(size) != nd:
            raise ShapeError(f"{op}: output_size needs {nd} spatial sizes, got {output_size!r}")
        for i, (lo, hi) in enumerate(crops):
            full = _transpose_full(x[-nd + i], w[2 + i], geometry["stride"][i],
                                   geometry["dilation"][i])
            hi = _dim(sympy.sympify(full) - lo - size[i])
            if not isinstance(hi, int):
                raise ShapeError(
                    f"{op}{_NAMES[nd]}: the output size {size[i]} along spatial dim {i} "
                    f"from an input {fmt_shape(x)} with stride {geometry['stride'][i]} "
                    f"depends on {size[i]} modulo the stride; give that dim a concrete "
                    "size (the gradient of a strided convolution needs it)")
            crops[i] = (lo, hi)
    geometry["padding"] = tuple(crops)
    return tuple(geometry.items())


def _conv_transpose_shape(op, shapes, attrs):
    x, w = shapes
    nd = len(w) - 2
    out = tuple(_dim(sympy.sympify(_transpose_full(L, k, s, d)) - lo - hi)
                for L, (lo, hi), k, s, d in zip(x[-nd:], attrs["padding"], w[2:],
                                                attrs["stride"], attrs["dilation"]))
    _check_sizes(f"{op}{_NAMES[nd]}", out, x, "input")
    return x[:-nd - 1] + (_dim(sympy.sympify(w[1]) * attrs["groups"]),) + out


def _conv_weight_params(op, shapes, weight_shape, stride=1, padding=0, dilation=1, groups=1):
    x, g = shapes
    weight_shape = as_shape(weight_shape)
    nd = _spatial_rank(op, x, weight_shape)
    if len(g) != len(x):
        raise ShapeError(f"{op}: input {fmt_shape(x)} and output gradient {fmt_shape(g)} "
                         "need the same rank")
    groups = _groups(op, groups, (weight_shape[0],), ("the weight's out channels",))
    if not dims_match(g[-nd - 1], weight_shape[0]) or not dims_match(
            x[-nd - 1], sympy.sympify(weight_shape[1]) * groups):
        raise ShapeError(f"{op}: input {fmt_shape(x)} and output gradient {fmt_shape(g)} do "
                         f"not fit a weight {fmt_shape(weight_shape)} with groups={groups}")
    return (("weight_shape", weight_shape),) + _geometry(op, nd, stride, padding, dilation,
                                                         groups)


def _zero_operand(inputs, attrs, shape):
    """Bilinear: a zero operand (a zero tangent in forward mode) gives zeros."""
    if any(i.is_const and i.attrs["value"] == 0 for i in inputs):
        return zeros(shape)
    return None


# ----- spellings -------------------------------------------------------------------------

def _compact(values):
    """(2, 2) as 2, (1, 2) as (1, 2): torch's int-or-tuple arguments."""
    values = tuple(values)
    if len(set(values)) == 1:
        return str(values[0])
    return str(values)


def _padding_parts(pairs_, transposed):
    """torch's padding (and output_padding) where they say it, else the per-side pairs."""
    lows = tuple(lo for lo, _ in pairs_)
    if transposed and all(lo >= hi and lo >= 0 for lo, hi in pairs_):
        parts = [("padding", _compact(lows))] if any(lows) else []
        if any(lo != hi for lo, hi in pairs_):
            parts.append(("output_padding", _compact(lo - hi for lo, hi in pairs_)))
        return parts
    if all(lo == hi for lo, hi in pairs_):
        return [("padding", _compact(lows))] if any(lows) else []
    return [("padding", str(tuple(pairs_)))]


def geometry_parts(stride, padding, dilation, groups=1, transposed=False):
    """The non-default parameters as torch writes them: [("stride", "2"), ...]."""
    parts = [("stride", _compact(stride))] if any(s != 1 for s in stride) else []
    parts += _padding_parts(padding, transposed)
    if any(d != 1 for d in dilation):
        parts.append(("dilation", _compact(dilation)))
    if groups != 1:
        parts.append(("groups", str(groups)))
    return parts


def geometry_text(stride, padding, dilation, groups=None, transposed=False):
    """``, stride=2, padding=1`` from the parameters of a spelling."""
    parts = geometry_parts(stride.value, padding.value, dilation.value,
                           1 if groups is None else groups.value, transposed)
    return "".join(f", {k}={v}" for k, v in parts)


def _matrix(name, transposed=False):
    """Matrix notation: the call with torch's non-default parameters."""
    def form(m, node, *terms):
        a = node.attrs
        nd = _NAMES[len(a["stride"])]
        data = {}
        if "weight_shape" in a:
            data["kernel"] = _compact(a["weight_shape"][2:])
        data.update(geometry_parts(a["stride"], a["padding"], a["dilation"], a["groups"],
                                   transposed))
        return m.fn(name.format(nd=nd), *terms, data=data or None)
    return form


def _nd(stride):
    return _NAMES[len(stride.value)]


def _latex_params(stride, padding, dilation, groups, transposed=False):
    text = geometry_text(stride, padding, dilation, groups, transposed)[2:]
    return r";\ \mathrm{" + text.replace("_", r"\_").replace(", ", r"},\ \mathrm{") + "}" \
        if text else ""


def _helpers(name):
    names = (name,) + conv_kernels.USES[name]
    return {n: function_source(getattr(conv_kernels, n)).strip() for n in names}


def _torch_pad(pairs_):
    """F.pad's argument for per-side padding of the last dims (last dim first)."""
    flat = []
    for lo, hi in reversed(pairs_):
        flat += [lo, hi]
    return tuple(flat)


def _symmetric(pairs_):
    return all(lo == hi and lo >= 0 for lo, hi in pairs_)


_CONV_TORCH = (
    "def _conv_t(fn, x, w, stride, padding, dilation, groups):\n"
    "    nd = w.dim() - 2\n"
    "    if all(lo == hi and lo >= 0 for lo, hi in padding):\n"
    "        pad = tuple(lo for lo, _ in padding)\n"
    "    else:\n"
    "        flat = [p for lo, hi in reversed(padding) for p in (lo, hi)]\n"
    "        x, pad = torch.nn.functional.pad(x, flat), (0,) * nd\n"
    "    sizes = [max((x.shape[i - nd] + 2 * pad[i] - d * (k - 1) - 1) // s + 1, 0)\n"
    "             for i, (k, s, d) in enumerate(zip(w.shape[2:], stride, dilation))]\n"
    "    if not x.numel() or not all(sizes):   # torch's empty result, which fn refuses\n"
    "        return x.new_zeros(tuple(x.shape[:-nd - 1]) + (w.shape[0],) + tuple(sizes))\n"
    "    return fn(x, w, None, stride, pad, dilation, groups)")


def _conv_torch(x, w, stride, padding, dilation, groups):
    fn = f"torch.nn.functional.conv{_nd(stride)}"
    return (f"_conv_t({fn}, {x}, {w}, {stride}, {padding}, {dilation}, {groups})",
            {"_conv_t": _CONV_TORCH})


_CONV_TRANSPOSE_TORCH = (
    "def _conv_transpose_t(fn, x, w, stride, padding, dilation, groups):\n"
    "    nd = w.dim() - 2\n"
    "    if not x.numel() or not w.numel():   # empty: torch refuses some of these\n"
    "        sizes = tuple(max((x.shape[i - nd] - 1) * s + d * (k - 1) + 1 - lo - hi, 0)\n"
    "                      for i, (k, s, d, (lo, hi)) in enumerate(\n"
    "                          zip(w.shape[2:], stride, dilation, padding)))\n"
    "        return x.new_zeros(tuple(x.shape[:-nd - 1]) + (w.shape[1] * groups,) + sizes)\n"
    "    extra = tuple(lo - hi for lo, hi in padding)\n"
    "    if all(lo >= 0 and 0 <= e < max(s, d)\n"
    "           for (lo, _), e, s, d in zip(padding, extra, stride, dilation)):\n"
    "        lows = tuple(lo for lo, _ in padding)\n"
    "        g = x if x.dim() == nd + 2 else x[None]\n"
    "        sizes = tuple((g.shape[2 + i] - 1) * s - 2 * lo + d * (k - 1) + e + 1\n"
    "                      for i, (k, s, d, lo, e) in enumerate(\n"
    "                          zip(w.shape[2:], stride, dilation, lows, extra)))\n"
    "        like = g.new_zeros(()).expand((g.shape[0], w.shape[1] * groups) + sizes)\n"
    "        out = torch.ops.aten.convolution_backward(\n"
    "            g, like, w, None, stride, lows, dilation, False, (0,) * nd, groups,\n"
    "            (True, False, False))[0]   # conv's input gradient: cheaper than fn here\n"
    "        return out if x.dim() == nd + 2 else out[0]\n"
    "    full = fn(x, w, None, stride, 0, 0, groups, dilation)\n"
    "    return torch.nn.functional.pad(full, [-p for lo, hi in reversed(padding)\n"
    "                                          for p in (lo, hi)])")


def _conv_transpose_torch(x, w, stride, padding, dilation, groups):
    fn = f"torch.nn.functional.conv_transpose{_nd(stride)}"
    return (f"_conv_transpose_t({fn}, {x}, {w}, {stride}, {padding}, {dilation}, {groups})",
            {"_conv_transpose_t": _CONV_TRANSPOSE_TORCH})


_CONV_WEIGHT_TORCH = (
    "def _conv_weight_t(x, g, weight_shape, stride, padding, dilation, groups):\n"
    "    nd = len(weight_shape) - 2\n"
    "    if x.dim() == nd + 1:\n"
    "        x, g = x[None], g[None]\n"
    "    if all(lo == hi and lo >= 0 for lo, hi in padding):\n"
    "        pad = tuple(lo for lo, _ in padding)\n"
    "    else:\n"
    "        flat = [p for lo, hi in reversed(padding) for p in (lo, hi)]\n"
    "        x, pad = torch.nn.functional.pad(x, flat), (0,) * nd\n"
    "    if not g.numel() or not x.numel():   # empty: torch's backward refuses it\n"
    "        return x.new_zeros(tuple(weight_shape))\n"
    "    w = x.new_zeros(()).expand(tuple(weight_shape))\n"
    "    return torch.ops.aten.convolution_backward(\n"
    "        g, x, w, None, stride, pad, dilation, False, (0,) * nd, groups,\n"
    "        (False, True, False))[1]")


# ----- the ops ---------------------------------------------------------------------------

def _conv_elements(ctx, x, w):
    a = ctx.attrs
    return conv_kernels._conv(x, w, a["stride"], a["padding"], a["dilation"], a["groups"])


@defop("conv", ("x", "w"), params=_conv_params, shape=_conv_shape,
       text=lambda x, w, stride, padding, dilation, groups:
           f"conv{_nd(stride)}({x}, {w}{geometry_text(stride, padding, dilation, groups)})",
       latex=lambda x, w, stride, padding, dilation, groups:
           (rf"\operatorname{{conv{_nd(stride)}}}\left({x}, {w}"
            rf"{_latex_params(stride, padding, dilation, groups)}\right)"),
       numpy=("_conv({x}, {w}, {stride}, {padding}, {dilation}, {groups})", _helpers("_conv")),
       torch=_conv_torch, matrix=_matrix("conv{nd}"), elements=_conv_elements,
       fresh=True, simplify=_zero_operand)
def conv(x: TensorLike, w: TensorLike, stride: IntTuple = 1, padding: IntTuple | str = 0,
         dilation: IntTuple = 1, groups: int = 1) -> Result:
    """torch's conv{1,2,3}d without bias (the cross-correlation of deep learning): x
    (N, C, *L) or (C, *L), w (F, C/groups, *k). ``padding``: an int, one per spatial dim,
    or (lo, hi) per spatial dim (zeros; negative crops)."""
    return apply("conv", x, w, stride=stride, padding=padding, dilation=dilation,
                 groups=groups)


def _conv_transpose_elements(ctx, x, w):
    a = ctx.attrs
    return conv_kernels._conv_transpose(x, w, a["stride"], a["padding"], a["dilation"],
                                        a["groups"])


@defop("conv_transpose", ("x", "w"), params=_conv_transpose_params,
       shape=_conv_transpose_shape,
       text=lambda x, w, stride, padding, dilation, groups:
           (f"conv_transpose{_nd(stride)}({x}, {w}"
            f"{geometry_text(stride, padding, dilation, groups, True)})"),
       latex=lambda x, w, stride, padding, dilation, groups:
           (rf"\operatorname{{conv{_nd(stride)}}}^{{T}}\left({x}, {w}"
            rf"{_latex_params(stride, padding, dilation, groups, True)}\right)"),
       numpy=("_conv_transpose({x}, {w}, {stride}, {padding}, {dilation}, {groups})",
              _helpers("_conv_transpose")),
       torch=_conv_transpose_torch, matrix=_matrix("conv_transpose{nd}", True),
       elements=_conv_transpose_elements, fresh=True, simplify=_zero_operand)
def conv_transpose(x: TensorLike, w: TensorLike, stride: IntTuple = 1, padding: IntTuple = 0,
                   output_padding: IntTuple = 0, dilation: IntTuple = 1, groups: int = 1,
                   output_size: ShapeLike | None = None) -> Result:
    """torch's conv_transpose{1,2,3}d without bias, the adjoint of ``conv``: x (N, C, *O)
    or (C, *O), w (C, F/groups, *k). ``padding`` is cropped from both sides of the full
    result (or given as (lo, hi) per spatial dim), ``output_padding`` given back on the
    high side; ``output_size`` (the spatial sizes, or a whole shape) picks the latter."""
    return apply("conv_transpose", x, w, stride=stride, padding=padding,
                 output_padding=output_padding, dilation=dilation, groups=groups,
                 output_size=output_size)


def _conv_weight_elements(ctx, x, g):
    a = ctx.attrs
    kernel = tuple(a["weight_shape"][2:])
    return conv_kernels._conv_weight(x, g, kernel, a["stride"], a["padding"], a["dilation"],
                                     a["groups"])


def _conv_weight_numpy(x, g, weight_shape, stride, padding, dilation, groups):
    kernel = tuple(weight_shape.value[2:])
    return f"_conv_weight({x}, {g}, {kernel}, {stride}, {padding}, {dilation}, {groups})"


def _kernel_text(weight_shape):
    return _compact(weight_shape.value[2:])


@defop("conv_weight", ("x", "g"), params=_conv_weight_params,
       shape=lambda op, s, a: a["weight_shape"],
       text=lambda x, g, weight_shape, stride, padding, dilation, groups:
           (f"conv{_nd(stride)}_weight({x}, {g}, kernel={_kernel_text(weight_shape)}"
            f"{geometry_text(stride, padding, dilation, groups)})"),
       latex=lambda x, g, weight_shape, stride, padding, dilation, groups:
           (rf"\operatorname{{conv{_nd(stride)}\_weight}}\left({x}, {g}"
            rf"{_latex_params(stride, padding, dilation, groups)}\right)"),
       numpy=(_conv_weight_numpy, _helpers("_conv_weight")),
       torch=("_conv_weight_t({x}, {g}, {weight_shape}, {stride}, {padding}, {dilation}, "
              "{groups})", {"_conv_weight_t": _CONV_WEIGHT_TORCH}),
       matrix=_matrix("conv{nd}_weight"), elements=_conv_weight_elements, fresh=True,
       simplify=_zero_operand)
def conv_weight(x: TensorLike, g: TensorLike, weight_shape: ShapeLike, stride: IntTuple = 1,
                padding: IntTuple = 0, dilation: IntTuple = 1, groups: int = 1) -> Result:
    """The gradient of ``conv(x, W)`` for W of ``weight_shape`` given the output gradient
    ``g`` (torch.nn.grad.conv{1,2,3}d_weight): sum over the batch and positions of g
    times the windows of x."""
    return apply("conv_weight", x, g, weight_shape=weight_shape, stride=stride,
                 padding=padding, dilation=dilation, groups=groups)



# ----- the printed names as functions ----------------------------------------------------
# ``conv2d(x, W, stride=2)``, ``conv_transpose2d(g, W, padding=1, output_padding=1)`` and
# ``conv2d_weight(x, g, kernel=3)`` as the text view prints them: so a printed formula
# reads back as code, and users may write torch's spelling.

def _rank_checked(name, nd, w_shape):
    if len(w_shape) != nd + 2:
        raise ShapeError(f"{name}: the weight must be (out, in/groups, *kernel) with {nd} "
                         f"spatial dims, got {fmt_shape(w_shape)}")


def _spelled(nd):
    def conv_nd(x, w, stride=1, padding=0, dilation=1, groups=1):
        _rank_checked(f"conv{nd}d", nd, tuple(getattr(w, "shape", ())))
        return conv(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)

    def conv_transpose_nd(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1,
                          output_size=None):
        _rank_checked(f"conv_transpose{nd}d", nd, tuple(getattr(w, "shape", ())))
        return conv_transpose(x, w, stride=stride, padding=padding,
                              output_padding=output_padding, dilation=dilation,
                              groups=groups, output_size=output_size)

    def conv_nd_weight(x, g, kernel, stride=1, padding=0, dilation=1, groups=1):
        kernel = int_tuple(f"conv{nd}d_weight", "kernel", kernel, nd, 1)
        xs, gs = tuple(getattr(x, "shape", ())), tuple(getattr(g, "shape", ()))
        if len(xs) < nd + 1 or len(gs) < nd + 1:
            raise ShapeError(f"conv{nd}d_weight: input {fmt_shape(xs)} and output gradient "
                             f"{fmt_shape(gs)} need {nd} spatial dims and channels")
        c = sympy.sympify(xs[-nd - 1]) / groups
        shape = (gs[-nd - 1], int(c) if c.is_Integer else c) + kernel
        return conv_weight(x, g, shape, stride=stride, padding=padding, dilation=dilation,
                           groups=groups)

    for fn, name in ((conv_nd, f"conv{nd}d"), (conv_transpose_nd, f"conv_transpose{nd}d"),
                     (conv_nd_weight, f"conv{nd}d_weight")):
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = f"``{name}`` as formulas print it (see ``{name.split('_w')[0]}``)."
        public(fn)


for _rank in _NAMES:
    _spelled(_rank)
