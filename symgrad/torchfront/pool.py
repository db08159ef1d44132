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
from ..core.ops.pool import interpolation_args, window_args
from ..errors import ParameterError, ShapeError
from .dispatch import shape_of, torch_op, unsupported


def _spatial(name, input, d, batched_only=False):
    """Check the input is (C, *spatial) or (N, C, *spatial) with d spatial dims."""
    shape = shape_of(input)
    ranks = (d + 2,) if batched_only else (d + 1, d + 2)
    if len(shape) not in ranks:
        want = " or ".join(f"{r}-D" for r in ranks)
        raise ShapeError(f"{name}: expects a {want} input ((N, C{', *spatial' if d else ''}) "
                         f"with {d} spatial dims), got shape {fmt_shape(shape)}")
    return tuple(shape[len(shape) - d:])


def _max_pool(d):
    name = f"torch.nn.functional.max_pool{d}d"

    def handler(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
        _spatial(name, input, d)
        args = window_args(name, "max", d, kernel_size, stride, padding, dilation, ceil_mode)
        return _with_indices(input, "max", args, return_indices)
    handler.__name__ = f"max_pool{d}d"
    return handler


def _with_indices(input, kind, args, return_indices):
    """torch returns (values, indices) with return_indices=True: the indices are an
    integer tensor (the flat spatial index of each maximum), for F.max_unpool."""
    out = sgo.max_pool(input, kind, args)
    if not return_indices:
        return out
    return out, sgo.max_pool_index(input, kind, args)


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
        return sgo.resample(input, "avg", window_args(name, "avg", d, kernel_size, stride,
                                                      padding, 1, ceil_mode, count_include_pad,
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
        args = (_output_size(name, input, d, output_size),)
        return _with_indices(input, "adaptive_max", args, return_indices)
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
        args = window_args(name, "avg", d, kernel_size, stride, 0, 1, ceil_mode)
        volume = 1
        for v in args[0]:
            volume *= v
        out = sgo.resample(sgo.pow(input, norm_type), "avg", args)
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
_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")


@torch_op("F.interpolate")
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """torch's F.interpolate: the output size from ``size`` or ``scale_factor`` (floor of
    n · factor), the factor passed on to the kernel unless ``recompute_scale_factor``;
    ``area`` is adaptive average pooling."""
    name = "torch.nn.functional.interpolate"
    if mode not in _MODES:
        raise unsupported(name, (input,), why=f"mode={mode!r} (symgrad maps "
                          f"{', '.join(repr(m) for m in _MODES)})")
    shape = shape_of(input)
    d = len(shape) - 2
    if d not in (1, 2, 3):
        raise ShapeError(f"{name}: expects a 3-D, 4-D or 5-D input (N, C, *spatial), got "
                         f"shape {fmt_shape(shape)}")
    if mode in _MODE_RANK and _MODE_RANK[mode] != d:
        raise ShapeError(f"{name}: mode={mode!r} needs a {_MODE_RANK[mode] + 2}-D input, got "
                         f"shape {fmt_shape(shape)}")
    kind, args = interpolation_args(name, mode, d, tuple(shape[2:]), size, scale_factor,
                                    align_corners, recompute_scale_factor, antialias)
    return sgo.resample(input, kind, args)


@torch_op("torch.ops.aten._upsample_bilinear2d_aa", "torch.ops.aten._upsample_bilinear2d_aa.vec",
          "torch.ops.aten._upsample_bilinear2d_aa.default")
def upsample_bilinear2d_aa(input, output_size=None, align_corners=False, scales_h=None,
                           scales_w=None, scale_factors=None):
    """ATen's antialiased bilinear upsampling (F.interpolate(..., antialias=True)): an
    output size, or (the .vec overload) scale factors; scales_h/scales_w, when given, are
    the factors the kernel maps coordinates by."""
    name = "torch.ops.aten._upsample_bilinear2d_aa"
    shape = shape_of(input)
    if len(shape) != 4:
        raise ShapeError(f"{name}: expects a 4-D input (N, C, H, W), got shape "
                         f"{fmt_shape(shape)}")
    if output_size is None and isinstance(scales_h, (list, tuple)):   # .vec, by position
        scale_factors, scales_h = scales_h, None
    if output_size is None and scale_factors is None:
        raise ParameterError(f"{name}: give output_size or scale_factors")
    if output_size is not None:
        kind, (out, align, _) = interpolation_args(name, "bilinear", 2, tuple(shape[2:]),
                                                   tuple(output_size), None, align_corners,
                                                   None, True)
        scales = None if scales_h is None and scales_w is None else tuple(
            float(v) if v else 0.0 for v in (scales_h, scales_w))
        return sgo.resample(input, kind, (out, align, scales))
    return interpolate(input, scale_factor=tuple(scale_factors), mode="bilinear",
                       align_corners=align_corners, antialias=True)
