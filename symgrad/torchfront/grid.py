"""torch's grid sampling on symbolic Tensors: F.grid_sample, torch.grid_sampler,
torch.grid_sampler_2d/3d (modes bilinear, nearest, bicubic; padding zeros, border,
reflection; align_corners), after ATen's GridSampler.h.

The grid's coordinates in [-1, 1] are mapped to pixel coordinates and, for bilinear and
nearest, folded in by the padding mode with sg ops (clamp, abs, where), so the gradient
w.r.t. the grid is torch's; then the output is a sum over the corners of each point's
cell of ``weight · grid_gather(input, cell)`` (bicubic: 16 taps with the cubic
convolution weights, A = -0.75, the padding applied to each integer tap as torch does).
"""
import itertools

from ..core import ops as sgo
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import shape_of, torch_op

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_A = -0.75


def _unnormalize(c, n, align):
    if align:
        return (c + 1) * ((n - 1) / 2)
    return ((c + 1) * n - 1) / 2


def _reflect(c, twice_low, twice_high):
    if twice_low == twice_high:
        return c * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    a = sgo.abs(c - low)
    flips = sgo.grid_cell(a / span)
    extra = a - flips * span
    odd = flips - 2 * sgo.grid_cell(flips / 2)
    return extra + low + odd * (span - 2 * extra)


def _fold(c, n, padding, align):
    """torch's compute_coordinates: the padding mode applied to a pixel coordinate."""
    if padding == "border":
        return sgo.clamp(c, 0, n - 1)
    if padding == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align else _reflect(c, -1, 2 * n - 1)
        return sgo.clamp(c, 0, n - 1)
    return c


def _cubic(t):
    """The four cubic convolution weights of the taps at -1, 0, 1, 2 from the cell."""
    def far(s):
        return ((_A * s - 5 * _A) * s + 8 * _A) * s - 4 * _A

    def near(s):
        return ((_A + 2) * s - (_A + 3)) * s * s + 1
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(name, input, grid, mode, padding, align):
    shape, gshape = tuple(shape_of(input)), tuple(shape_of(grid))
    d = len(shape) - 2
    if d not in (2, 3) or len(gshape) != d + 2 or gshape[-1] != d:
        raise ShapeError(f"{name}: expects a 4-D input (N, C, H, W) with a grid (N, H_out, "
                         "W_out, 2), or a 5-D input with a grid (N, D_out, H_out, W_out, 3); "
                         f"got {fmt_shape(shape)} and {fmt_shape(gshape)}")
    if isinstance(shape[0], int) and isinstance(gshape[0], int) and shape[0] != gshape[0]:
        raise ShapeError(f"{name}: the input {fmt_shape(shape)} and the grid "
                         f"{fmt_shape(gshape)} must have the same batch size")
    if mode == "bicubic" and d != 2:
        raise ParameterError(f"{name}: mode='bicubic' needs a 4-D input, got shape "
                             f"{fmt_shape(shape)}")
    sizes = shape[2:]
    coords = []
    for k in range(d):
        n = sizes[d - 1 - k]
        c = _unnormalize(sgo.getitem(grid, (Ellipsis, k)), n, align)
        coords.append(c if mode == "bicubic" else _fold(c, n, padding, align))
    if mode == "nearest":
        cell = sgo.stack([sgo.grid_cell(c, "nearest") for c in coords], axis=-1)
        return sgo.grid_gather(input, cell, sizes, "zeros", align)
    base = [sgo.grid_cell(c) for c in coords]
    frac = [c - b for c, b in zip(coords, base)]
    if mode == "bilinear":
        taps = [(0, 1 - f, 1, f) for f in frac]
        offsets, gather_padding = (0, 1), "zeros"
    else:
        taps = [tuple(x for pair in zip((-1, 0, 1, 2), _cubic(f)) for x in pair)
                for f in frac]
        offsets, gather_padding = (-1, 0, 1, 2), padding
    weights = [dict(zip(t[0::2], t[1::2])) for t in taps]
    out = None
    for corner in itertools.product(offsets, repeat=d):
        cell = sgo.stack([b + o for b, o in zip(base, corner)], axis=-1)
        w = weights[0][corner[0]]
        for k in range(1, d):
            w = w * weights[k][corner[k]]
        term = sgo.unsqueeze(w, 1) * sgo.grid_gather(input, cell, sizes, gather_padding, align)
        out = term if out is None else out + term
    return out


@torch_op("F.grid_sample")
def grid_sample_fn(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    name = "torch.nn.functional.grid_sample"
    if mode not in _MODES:
        raise ParameterError(f"{name}: mode must be one of {_MODES}, got {mode!r}")
    if padding_mode not in _PADDINGS:
        raise ParameterError(f"{name}: padding_mode must be one of {_PADDINGS}, got "
                             f"{padding_mode!r}")
    return grid_sample(name, input, grid, mode, padding_mode, bool(align_corners))


def _aten(name):
    def handler(input, grid, interpolation_mode, padding_mode, align_corners):
        if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
            raise ParameterError(f"{name}: interpolation_mode and padding_mode are 0, 1 or "
                                 f"2, got {interpolation_mode!r} and {padding_mode!r}")
        return grid_sample(name, input, grid, _MODES[interpolation_mode],
                           _PADDINGS[padding_mode], bool(align_corners))
    handler.__name__ = name.rsplit(".", 1)[-1]
    return handler


for _name in ("torch.grid_sampler", "torch.grid_sampler_2d", "torch.grid_sampler_3d"):
    torch_op(_name)(_aten(_name))
