"""torch's pooling and interpolation on symbolic Tensors: F.max_pool1d/2d/3d,
F.avg_pool1d/2d/3d, the adaptive pools, F.lp_pool1d/2d/3d and F.interpolate (which
nn.Upsample, F.upsample, F.upsample_nearest and F.upsample_bilinear call).

Each handler checks torch's arguments as torch does (int or tuple sizes, stride defaulting
to the kernel, padding at most half the kernel, (C, *spatial) or (N, C, *spatial) input)
and maps the call onto the ops of ``core.ops.pool``: ``max_pool`` and ``resample``
(average pools, adaptive average pools and interpolation are all separable linear maps).
"""
import sympy

from ..core import ops as sgo
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import Unavailable, reject, shape_of, torch_op, unsupported


def _tuple(name, what, value, d):
    """torch's _single/_pair/_triple: an int for every spatial dim, or one per dim."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            value = tuple(value) * d
        if len(value) != d:
            raise ParameterError(f"{name}: {what} must be an int or {d} ints, got {value!r}")
        values = tuple(value)
    else:
        values = (value,) * d
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ParameterError(f"{name}: {what} must be ints, got {value!r}")
    return values


def _spatial(name, input, d, batched_only=False):
    """Check the input is (C, *spatial) or (N, C, *spatial) with d spatial dims."""
    shape = shape_of(input)
    ranks = (d + 2,) if batched_only else (d + 1, d + 2)
    if len(shape) not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ShapeError(f"{name}: expects a {want} input ((N, C{', *spatial' if d else ''}) "
                         f"with {d} spatial dims), got shape {fmt_shape(shape)}")
    return tuple(shape[len(shape) - d:])


def _windows(name, d, kernel_size, stride, padding, dilation=1):
    k = _tuple(name, "kernel_size", kernel_size, d)
    s = k if stride is None or (isinstance(stride, (list, tuple)) and not stride) else \
        _tuple(name, "stride", stride, d)
    p = _tuple(name, "padding", padding, d)
    dl = _tuple(name, "dilation", dilation, d)
    if any(v <= 0 for v in k + s + dl):
        raise ParameterError(f"{name}: kernel_size, stride and dilation must be positive, got "
                             f"kernel_size={k}, stride={s}, dilation={dl}")
    if any(v < 0 or 2 * v > kk for v, kk in zip(p, k)):
        raise ParameterError(f"{name}: padding {p} must be non-negative and at most half the "
                             f"kernel size {k}, as torch requires")
    return k, s, p, dl


def _max_pool(d):
    name = f"torch.nn.functional.max_pool{d}d"

    def handler(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
        _spatial(name, input, d)
        k, s, p, dl = _windows(name, d, kernel_size, stride, padding, dilation)
        out = sgo.max_pool(input, "max", (k, s, p, dl, bool(ceil_mode)))
        return _with_indices(name, out, return_indices)
    handler.__name__ = f"max_pool{d}d"
    return handler


def _with_indices(name, out, return_indices):
    """torch returns (values, indices) with return_indices=True: the values trace, the
    indices are integers with no formula (any use of them raises)."""
    if not return_indices:
        return out
    return out, Unavailable(f"the indices returned by {name}(..., return_indices=True)")


def _max_pool_with_indices(d):
    plain = _max_pool(d)

    def handler(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=True):
        return plain(input, kernel_size, stride, padding, dilation, ceil_mode, True)
    return handler


def _avg_pool(d):
    name = f"torch.nn.functional.avg_pool{d}d"

    def handler(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
        _spatial(name, input, d)
        k, s, p, _ = _windows(name, d, kernel_size, stride, padding)
        if divisor_override is not None and (isinstance(divisor_override, bool) or not
                                             isinstance(divisor_override, int)
                                             or divisor_override == 0):
            raise ParameterError(f"{name}: divisor_override must be a non-zero int, got "
                                 f"{divisor_override!r}")
        return sgo.resample(input, "avg", (k, s, p, bool(ceil_mode), bool(count_include_pad),
                                           divisor_override))
    if d == 1:
        def handler1(input, kernel_size, stride=None, padding=0, ceil_mode=False,
                     count_include_pad=True):
            return handler(input, kernel_size, stride, padding, ceil_mode, count_include_pad)
        return handler1
    return handler


def _output_size(name, input, d, output_size):
    """An adaptive pool's output size: ints, None keeping the input's size (concrete)."""
    sizes = _spatial(name, input, d)
    if isinstance(output_size, (list, tuple)):
        if len(output_size) != d:
            raise ParameterError(f"{name}: output_size must be an int or {d} ints, got "
                                 f"{output_size!r}")
        out = tuple(output_size)
    else:
        out = (output_size,) * d
    result = []
    for n, m in zip(sizes, out):
        if m is None:
            m = n
        if isinstance(m, sympy.Basic) and m.is_Integer:
            m = int(m)
        if isinstance(m, bool) or not isinstance(m, int):
            raise ShapeError(f"{name}: output_size must be concrete ints, got {output_size!r} "
                             f"for an input of spatial size {fmt_shape(sizes)}")
        if m < 0 or (m == 0 and not isinstance(n, int)):
            raise ParameterError(f"{name}: output_size must be positive, got {output_size!r}")
        result.append(m)
    return tuple(result)


def _adaptive_avg(d):
    name = f"torch.nn.functional.adaptive_avg_pool{d}d"

    def handler(input, output_size):
        return sgo.resample(input, "adaptive_avg", (_output_size(name, input, d, output_size),))
    return handler


def _adaptive_max(d):
    name = f"torch.nn.functional.adaptive_max_pool{d}d"

    def handler(input, output_size, return_indices=False):
        out = sgo.max_pool(input, "adaptive_max", (_output_size(name, input, d, output_size),))
        return _with_indices(name, out, return_indices)
    return handler


def _adaptive_max_with_indices(d):
    plain = _adaptive_max(d)

    def handler(input, output_size, return_indices=True):
        return plain(input, output_size, True)
    return handler


def _lp_pool(d):
    name = f"torch.nn.functional.lp_pool{d}d"

    def handler(input, norm_type, kernel_size, stride=None, ceil_mode=False):
        """torch's composition: (sign(a) relu(|a|) · kernel volume)^(1/p) of
        a = avg_pool(x^p), no padding."""
        _spatial(name, input, d)
        k, s, p, _ = _windows(name, d, kernel_size, stride, 0)
        volume = 1
        for v in k:
            volume *= v
        out = sgo.resample(sgo.pow(input, norm_type), "avg", (k, s, p, bool(ceil_mode),
                                                               True, None))
        return sgo.pow(sgo.sign(out) * sgo.relu(sgo.abs(out)) * volume, 1.0 / norm_type)
    return handler


for _d in (1, 2, 3):
    torch_op(f"F.max_pool{_d}d")(_max_pool(_d))
    torch_op(f"F.max_pool{_d}d_with_indices")(_max_pool_with_indices(_d))
    torch_op(f"F.avg_pool{_d}d")(_avg_pool(_d))
    torch_op(f"F.adaptive_avg_pool{_d}d")(_adaptive_avg(_d))
    torch_op(f"F.adaptive_max_pool{_d}d")(_adaptive_max(_d))
    torch_op(f"F.adaptive_max_pool{_d}d_with_indices")(_adaptive_max_with_indices(_d))
    torch_op(f"F.lp_pool{_d}d")(_lp_pool(_d))


# ----- interpolation -------------------------------------------------------------------------

_MODE_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_KINDS = {"nearest": "nearest", "nearest-exact": "nearest-exact", "linear": "linear",
          "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic", "area": "area"}


@torch_op("F.interpolate")
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch's F.interpolate: the output size from ``size`` or ``scale_factor`` (floor of
    n · factor), the factor passed on to the kernel unless ``recompute_scale_factor``;
    ``area`` is adaptive average pooling."""
    name = "torch.nn.functional.interpolate"
    if mode not in _KINDS:
        raise unsupported(name, (input,), why=f"mode={mode!r} (symgrad maps "
                          f"{', '.join(repr(m) for m in _KINDS)})")
    reject(name, antialias=antialias)
    shape = shape_of(input)
    d = len(shape) - 2
    if d not in (1, 2, 3):
        raise ShapeError(f"{name}: expects a 3-D, 4-D or 5-D input (N, C, *spatial), got "
                         f"shape {fmt_shape(shape)}")
    if mode in _MODE_RANK and _MODE_RANK[mode] != d:
        raise ShapeError(f"{name}: mode={mode!r} needs a {_MODE_RANK[mode] + 2}-D input, got "
                         f"shape {fmt_shape(shape)}")
    linear = mode in _MODE_RANK
    if not linear and align_corners is not None:
        raise ParameterError(f"{name}: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ParameterError(f"{name}: give exactly one of size or scale_factor")
    if size is not None:
        if recompute_scale_factor:
            raise ParameterError(f"{name}: recompute_scale_factor is not meaningful with an "
                                 "explicit size")
        out = _tuple(name, "size", size, d)
        scales = None
    else:
        factors = tuple(float(v) for v in (scale_factor if isinstance(
            scale_factor, (list, tuple)) else (scale_factor,) * d))
        if len(factors) != d:
            raise ParameterError(f"{name}: scale_factor must be a number or {d} numbers, got "
                                 f"{scale_factor!r}")
        out = factors
        scales = None if recompute_scale_factor or mode == "area" else factors
    spatial = shape[2:]
    out = tuple(int(v * n) if isinstance(v, float) and isinstance(n, int) else v
                for v, n in zip(out, spatial))
    if mode == "area":
        if not all(isinstance(v, int) for v in out):
            raise ShapeError(f"{name}: mode='area' with a scale factor needs concrete spatial "
                             f"sizes, got shape {fmt_shape(shape)}")
        return sgo.resample(input, "adaptive_avg", (out,))
    return sgo.resample(input, _KINDS[mode], (out, bool(align_corners) if linear else False,
                                              scales))
