"""Integer ops that say where a sort or a selection takes its elements: ``argsort`` (a
slice of the stable sort order), ``argmax``/``argmin``, ``median_index``, ``mode_index``
and ``cummax_index``/``cummin_index``.

Sorting, selection and running extrema are their values read at these indices,
``take_along(x, argsort(x))``: the values' gradient then scatters back through the
indices (``put_along_add``), which is torch's convention for sort, topk, kthvalue,
median(dim), mode, max(dim) and cummax. The indices themselves carry no gradient
(``differentiable=False``, no rule). Each index op picks the index torch picks among
ties: the stable order (NaN last ascending, first descending), the first maximum, the
lower median (the first NaN when the slice holds one), the most frequent value's last
occurrence (the smallest such value), the running extremum's latest position. The
torch backend calls torch's own functions; NumPy's code reproduces them vectorised.
"""
from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import defop
from ..shapes import fmt_shape, normalize_axis
from . import sorting_elements

_ARGSORT_NUMPY = (
    "def _argsort(x, axis, descending, start, stop):\n"
    "    x = numpy.asarray(x, dtype=float)\n"
    "    if descending:\n"
    "        i = numpy.argsort(-x, axis=axis, kind='stable')\n"
    "        nan = numpy.take_along_axis(numpy.isnan(x), i, axis)\n"
    "        i = numpy.take_along_axis(i, numpy.argsort(~nan, axis=axis, kind='stable'), axis)\n"
    "    else:\n"
    "        i = numpy.argsort(x, axis=axis, kind='stable')\n"
    "    return numpy.take(i, numpy.arange(start, stop), axis=axis)")
_ARGSORT_TORCH = (
    "def _argsort(x, axis, descending, start, stop):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    i = torch.sort(x, dim=axis, descending=descending, stable=True).indices\n"
    "    return i.narrow(axis, start, stop - start)")
_MEDIAN_NUMPY = (
    "def _median_index(x, axis, ignore_nan):\n"
    "    x = numpy.asarray(x, dtype=float)\n"
    "    if x.shape[axis] == 0:\n"
    "        return numpy.zeros(x.shape[:axis] + (1,) + x.shape[axis + 1:], dtype=int)\n"
    "    i = numpy.argsort(x, axis=axis, kind='stable')\n"
    "    valid = numpy.sum(~numpy.isnan(x), axis=axis, keepdims=True)\n"
    "    if ignore_nan:\n"
    "        k = numpy.maximum(valid - 1, 0) // 2\n"
    "    else:\n"
    "        k = numpy.where(valid < x.shape[axis], valid, (x.shape[axis] - 1) // 2)\n"
    "    return numpy.take_along_axis(i, k, axis)")
_MEDIAN_TORCH = (
    "def _median_index(x, axis, ignore_nan):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    if x.shape[axis] == 0:\n"
    "        shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis + 1:])\n"
    "        return torch.zeros(shape, dtype=torch.int64, device=x.device)\n"
    "    f = torch.nanmedian if ignore_nan else torch.median\n"
    "    return f(x, dim=axis, keepdim=True).indices")
_MODE_NUMPY = (
    "def _mode_index(x, axis):\n"
    "    x = numpy.moveaxis(numpy.asarray(x, dtype=float), axis, -1)\n"
    "    n = x.shape[-1]\n"
    "    i = numpy.argsort(x, axis=-1, kind='stable')\n"
    "    s = numpy.take_along_axis(x, i, -1)\n"
    "    pos = numpy.broadcast_to(numpy.arange(n), s.shape)\n"
    "    new = numpy.ones(s.shape, dtype=bool)\n"
    "    new[..., 1:] = s[..., 1:] != s[..., :-1]\n"
    "    first = numpy.maximum.accumulate(numpy.where(new, pos, 0), axis=-1)\n"
    "    last = numpy.zeros(s.shape, dtype=bool)\n"
    "    last[..., :-1] = new[..., 1:]\n"
    "    last[..., -1] = True\n"
    "    count = numpy.where(last, pos - first + 1, 0)\n"
    "    best = numpy.argmax(count, axis=-1)[..., None]\n"
    "    return numpy.moveaxis(numpy.take_along_axis(i, best, -1), -1, axis)")
_MODE_TORCH = (
    "def _mode_index(x, axis):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    return torch.mode(x, dim=axis, keepdim=True).indices")
_RUNNING_NUMPY = (
    "def _running_index(x, axis, largest):\n"
    "    x = numpy.moveaxis(numpy.asarray(x, dtype=float), axis, -1)\n"
    "    acc = numpy.maximum if largest else numpy.minimum\n"
    "    run = acc.accumulate(x, axis=-1)\n"
    "    pos = numpy.broadcast_to(numpy.arange(x.shape[-1]), x.shape)\n"
    "    hit = (x == run) | numpy.isnan(x)\n"
    "    i = numpy.maximum.accumulate(numpy.where(hit, pos, 0), axis=-1)\n"
    "    return numpy.moveaxis(i, -1, axis)")
_RUNNING_TORCH = (
    "def _running_index(x, axis, largest):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    return (torch.cummax if largest else torch.cummin)(x, dim=axis).indices")
_EXTREME_TORCH = (
    "def _arg_extreme(x, axis, largest):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    return (torch.argmax if largest else torch.argmin)(x, dim=axis, keepdim=True)")


def _axis_only(op, shapes, axis=-1):
    x = shapes[0]
    if not x:
        raise ShapeError(f"{op}: needs at least one dim, got shape {fmt_shape(x)}")
    return (("axis", normalize_axis(axis, len(x), op)),)


def _kept(op, shapes, attrs):
    """The input's shape with the axis kept as size 1."""
    a = attrs["axis"]
    return shapes[0][:a] + (1,) + shapes[0][a + 1:]


def _int_kind(op, inputs):
    return "int"


def _index_op(name, params, shape, numpy_code, torch_code, inputs=("x",), **kw):
    return defop(name, inputs, params=params, shape=shape, kind=_int_kind,
                 differentiable=False, fresh=True, numpy=numpy_code, torch=torch_code,
                 elements=getattr(sorting_elements, name), **kw)


# ----- argsort: a slice [start, stop) of the stable sort order --------------------------------

def _argsort_params(op, shapes, axis=-1, descending=False, start=0, stop=None):
    axis = _axis_only(op, shapes, axis)[0][1]
    n = shapes[0][axis]
    stop = n if stop is None else stop
    if isinstance(n, int) and not (0 <= start <= stop <= n) or start < 0:
        raise ParameterError(f"{op}: the slice [{start}, {stop}) of the order is outside "
                             f"[0, {n}] along axis {axis} of shape {fmt_shape(shapes[0])}")
    return (("axis", axis), ("descending", bool(descending)), ("start", start),
            ("stop", stop))


def _argsort_shape(op, shapes, attrs):
    a = attrs["axis"]
    return shapes[0][:a] + (attrs["stop"] - attrs["start"],) + shapes[0][a + 1:]


def _argsort_text(x, axis, descending, start, stop):
    down = ", descending=True" if descending.value else ""
    return f"argsort({x}, axis={axis}{down}, start={start}, stop={stop})"


@_index_op("argsort", _argsort_params, _argsort_shape,
           ("_argsort({x}, {axis}, {descending}, {start}, {stop})", {"_argsort": _ARGSORT_NUMPY}),
           ("_argsort({x}, {axis}, {descending}, {start}, {stop})", {"_argsort": _ARGSORT_TORCH}),
           text=_argsort_text,
           latex=r"\operatorname{{argsort}}_{{{axis}}}\left({x}\right)_{{[{start}:{stop}]}}")
def argsort(x, axis=-1, descending=False, start=0, stop=None):
    """Positions [start, stop) of the stable sort order of ``x`` along ``axis`` (integer;
    NaN sorts last, or first when descending, as in torch): ``take_along(x,
    argsort(x))`` is the sorted ``x``; a slice gives topk and kthvalue."""
    return apply("argsort", x, axis=axis, descending=descending, start=start, stop=stop)


# ----- one index per slice, the axis kept as size 1 ----------------------------------------

def _extreme_params(op, shapes, axis=-1, largest=True):
    return _axis_only(op, shapes, axis) + (("largest", bool(largest)),)


def _extreme_numpy(x, axis, largest):
    fn = "argmax" if largest.value else "argmin"
    return f"numpy.{fn}({x}, axis={axis}, keepdims=True)"


@_index_op("arg_extreme", _extreme_params, _kept, _extreme_numpy,
           ("_arg_extreme({x}, {axis}, {largest})", {"_arg_extreme": _EXTREME_TORCH}),
           text="arg_extreme({x}, axis={axis}, largest={largest})",
           latex=r"\operatorname{{argext}}_{{{axis}}}\left({x}\right)")
def arg_extreme(x, axis=-1, largest=True):
    """Position of the first maximum (``largest``) or minimum of ``x`` along ``axis``,
    the axis kept as size 1 (a NaN is the extremum, as in torch.max(x, dim))."""
    return apply("arg_extreme", x, axis=axis, largest=largest)


def _median_params(op, shapes, axis=-1, ignore_nan=False):
    return _axis_only(op, shapes, axis) + (("ignore_nan", bool(ignore_nan)),)


@_index_op("median_index", _median_params, _kept,
           ("_median_index({x}, {axis}, {ignore_nan})", {"_median_index": _MEDIAN_NUMPY}),
           ("_median_index({x}, {axis}, {ignore_nan})", {"_median_index": _MEDIAN_TORCH}),
           text="median_index({x}, axis={axis}, ignore_nan={ignore_nan})",
           latex=r"\operatorname{{argmedian}}_{{{axis}}}\left({x}\right)")
def median_index(x, axis=-1, ignore_nan=False):
    """Position of the lower median of ``x`` along ``axis`` (axis kept as size 1): the
    first NaN where a slice holds one, or with ``ignore_nan`` the median of the rest; 0
    along an empty axis (there is no median: a caller reads it from padding)."""
    return apply("median_index", x, axis=axis, ignore_nan=ignore_nan)


@_index_op("mode_index", _axis_only, _kept,
           ("_mode_index({x}, {axis})", {"_mode_index": _MODE_NUMPY}),
           ("_mode_index({x}, {axis})", {"_mode_index": _MODE_TORCH}),
           text="mode_index({x}, axis={axis})", jax="host",
           latex=r"\operatorname{{argmode}}_{{{axis}}}\left({x}\right)")
def mode_index(x, axis=-1):
    """Position of the most frequent value of ``x`` along ``axis`` (the smallest such
    value, its last occurrence, as torch.mode), axis kept as size 1."""
    return apply("mode_index", x, axis=axis)


@_index_op("running_index", _extreme_params, lambda op, s, a: s[0],
           ("_running_index({x}, {axis}, {largest})", {"_running_index": _RUNNING_NUMPY}),
           ("_running_index({x}, {axis}, {largest})", {"_running_index": _RUNNING_TORCH}),
           text="running_index({x}, axis={axis}, largest={largest})",
           latex=r"\operatorname{{argcum}}_{{{axis}}}\left({x}\right)")
def running_index(x, axis=-1, largest=True):
    """Where the running maximum (``largest``) or minimum of ``x`` along ``axis`` was
    last reached (torch.cummax/cummin's indices: a tie or a NaN moves it on)."""
    return apply("running_index", x, axis=axis, largest=largest)


# ----- quantiles: where torch.quantile reads the sorted slice -----------------------------------

_QUANTILE_NUMPY = (
    "def _quantile_index(x, axis, q, ignore_nan, interpolation, above):\n"
    "    x = numpy.asarray(x, dtype=float)\n"
    "    n, nan = x.shape[axis], numpy.isnan(x)\n"
    "    if ignore_nan:\n"
    "        rank = numpy.maximum(q * (numpy.sum(~nan, axis=axis, keepdims=True) - 1), 0)\n"
    "    else:\n"
    "        rank = numpy.where(numpy.any(nan, axis=axis, keepdims=True), n - 1, q * (n - 1))\n"
    "    adjust = {'lower': numpy.floor, 'higher': numpy.ceil, 'nearest': numpy.round}\n"
    "    rank = adjust.get(interpolation, lambda r: r)(rank)\n"
    "    return (numpy.ceil(rank) if above else numpy.floor(rank)).astype(numpy.int64)")
_QUANTILE_TORCH = (
    "def _quantile_index(x, axis, q, ignore_nan, interpolation, above):\n"
    "    x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    n, nan = x.shape[axis], torch.isnan(x)\n"
    "    if ignore_nan:\n"
    "        rank = (q * ((~nan).sum(axis, keepdim=True) - 1)).clamp(min=0)\n"
    "    else:\n"
    "        rank = torch.where(nan.any(axis, keepdim=True), float(n - 1), q * (n - 1))\n"
    "    adjust = {'lower': torch.floor, 'higher': torch.ceil, 'nearest': torch.round}\n"
    "    rank = adjust.get(interpolation, lambda r: r)(rank)\n"
    "    return (torch.ceil(rank) if above else torch.floor(rank)).long()")
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_params(op, shapes, axis=-1, ignore_nan=False, interpolation="linear",
                     above=False):
    if interpolation not in INTERPOLATIONS:
        raise ParameterError(f"{op}: interpolation must be one of {INTERPOLATIONS}, got "
                             f"{interpolation!r}")
    if shapes[1]:
        raise ShapeError(f"{op}: q must be 0-d, got shape {fmt_shape(shapes[1])}")
    return _axis_only(op, shapes, axis) + (
        ("ignore_nan", bool(ignore_nan)),
        ("interpolation", interpolation), ("above", bool(above)))


_QUANTILE_CALL = "_quantile_index({x}, {axis}, {q}, {ignore_nan}, {interpolation}, {above})"


@_index_op("quantile_index", _quantile_params, lambda op, s, a: _kept(op, s[:1], a),
           (_QUANTILE_CALL, {"_quantile_index": _QUANTILE_NUMPY}),
           (_QUANTILE_CALL, {"_quantile_index": _QUANTILE_TORCH}),
           text="quantile_index({x}, axis={axis}, q={q}, ignore_nan={ignore_nan}, "
                "interpolation={interpolation}, above={above})",
           latex=r"\operatorname{{rank}}_{{{q}}}\left({x}\right)", inputs=("x", "q"))
def quantile_index(x, q, axis=-1, ignore_nan=False, interpolation="linear", above=False):
    """Position in the sorted slice of ``x`` along ``axis`` at or below (``above``: at or
    above) the ``q``-quantile's rank, as torch.quantile reads it: rank q·(n - 1), moved to
    the last place where a slice holds a NaN, or with ``ignore_nan`` q·(valid - 1); then
    rounded as ``interpolation`` says. ``q`` is a 0-d level in [0, 1]. Axis kept as size 1."""
    return apply("quantile_index", x, q, axis=axis, ignore_nan=ignore_nan,
                 interpolation=interpolation, above=above)
