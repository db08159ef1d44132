"""torch's convolution family on symbolic Tensors: F.conv{1,2,3}d and
F.conv_transpose{1,2,3}d (and their torch.* aliases and torch.convolution) onto the
ops conv and conv_transpose, with the bias a broadcast add; F.unfold / F.fold onto the
im2col ops; F.pixel_shuffle / F.pixel_unshuffle as reshapes and permutations; and F.pad
in every mode, written with slices, flips and concatenation. nn.Conv*d and
nn.ConvTranspose*d (any padding_mode) run their own forward, which calls these.
"""
import numpy

from ..core import ops as sgo
from ..core.build import const
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import rank_of, shape_of, torch_op

_SPATIAL = {"conv1d": 1, "conv2d": 2, "conv3d": 3}


def _check_rank(name, input, weight, nd):
    if rank_of(weight) != nd + 2:
        raise ShapeError(f"{name}: the weight must be (out, in/groups, *kernel) with {nd} "
                         f"spatial dims, got {fmt_shape(shape_of(weight))}")
    if rank_of(input) not in (nd + 1, nd + 2):
        raise ShapeError(f"{name}: expects an input of rank {nd + 2} (N, C, *spatial) or "
                         f"{nd + 1} (C, *spatial), got {fmt_shape(shape_of(input))}")


def _add_bias(out, bias, nd):
    if bias is None:
        return out
    return out + sgo.reshape(bias, (shape_of(bias)[0],) + (1,) * nd)


def _string_padding(name, padding, weight, stride, dilation, nd):
    """torch's padding="valid" (none) and "same" (total d(k-1) per dim, the odd one
    on the high side; stride 1 only)."""
    if padding == "valid":
        return 0
    if padding != "same":
        raise ParameterError(f"{name}: padding must be an int, a tuple, 'valid' or 'same', "
                             f"got {padding!r}")
    strides = stride if isinstance(stride, (tuple, list)) else (stride,) * nd
    if any(s != 1 for s in strides):
        raise ParameterError(f"{name}: padding='same' is not supported for strided "
                             f"convolutions (stride={stride}), as in torch; give the padding "
                             "as ints")
    dilations = dilation if isinstance(dilation, (tuple, list)) else (dilation,) * nd
    pairs = []
    for k, d in zip(shape_of(weight)[2:], dilations):
        total = d * (k - 1)
        pairs.append((total // 2, total - total // 2))
    return tuple(pairs)


def _conv(name, nd):
    def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        _check_rank(name, input, weight, nd)
        if isinstance(padding, str):
            padding = _string_padding(name, padding, weight, stride, dilation, nd)
        out = sgo.conv(input, weight, stride=stride, padding=padding, dilation=dilation,
                       groups=groups)
        return _add_bias(out, bias, nd)
    conv.__name__ = name
    conv.__doc__ = f"torch's {name}: the op conv plus a broadcast bias."
    return conv


def _conv_transpose(name, nd):
    def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                       groups=1, dilation=1):
        _check_rank(name, input, weight, nd)
        out = sgo.conv_transpose(input, weight, stride=stride, padding=padding,
                                 output_padding=output_padding, dilation=dilation,
                                 groups=groups)
        return _add_bias(out, bias, nd)
    conv_transpose.__name__ = name
    conv_transpose.__doc__ = f"torch's {name}: the op conv_transpose plus a broadcast bias."
    return conv_transpose


for _nd in (1, 2, 3):
    torch_op(f"F.conv{_nd}d", f"torch.conv{_nd}d")(_conv(f"conv{_nd}d", _nd))
    torch_op(f"F.conv_transpose{_nd}d", f"torch.conv_transpose{_nd}d")(
        _conv_transpose(f"conv_transpose{_nd}d", _nd))


@torch_op("torch.convolution")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    nd = rank_of(weight) - 2
    if transposed:
        return _conv_transpose("convolution", nd)(input, weight, bias, stride, padding,
                                                  output_padding, groups, dilation)
    if any(output_padding if isinstance(output_padding, (tuple, list)) else [output_padding]):
        raise ParameterError("torch.convolution: output_padding applies to transposed "
                             f"convolutions only, got {output_padding!r}")
    return _conv("convolution", nd)(input, weight, bias, stride, padding, dilation, groups)


# ----- im2col and pixel shuffles ---------------------------------------------------------

@torch_op("F.unfold")
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    return sgo.unfold(input, kernel_size, dilation=dilation, padding=padding, stride=stride)


@torch_op("F.fold")
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    return sgo.fold(input, output_size, kernel_size, dilation=dilation, padding=padding,
                    stride=stride)


def _factor(name, r):
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ParameterError(f"{name}: the factor must be a positive int, got {r!r}")
    return r


@torch_op("F.pixel_shuffle", "torch.pixel_shuffle")
def pixel_shuffle(input, upscale_factor):
    """(*, C r², H, W) -> (*, C, H r, W r): channels spread over r x r blocks."""
    r = _factor("pixel_shuffle", upscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"pixel_shuffle: needs an input (*, C*r^2, H, W), got {fmt_shape(shape)}")
    *batch, c, h, w = shape
    if isinstance(c, int) and c % (r * r):
        raise ShapeError(f"pixel_shuffle: {c} channels are not divisible by "
                         f"upscale_factor^2 = {r * r}")
    b = len(batch)
    x = sgo.reshape(input, tuple(batch) + (c // (r * r) if isinstance(c, int) else c / (r * r),
                                           r, r, h, w))
    x = sgo.transpose(x, tuple(range(b)) + (b, b + 3, b + 1, b + 4, b + 2))
    return sgo.reshape(x, tuple(batch) + (x.shape[b], h * r, w * r))


@torch_op("F.pixel_unshuffle", "torch.pixel_unshuffle")
def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r², H, W): the inverse of pixel_shuffle."""
    r = _factor("pixel_unshuffle", downscale_factor)
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"pixel_unshuffle: needs an input (*, C, H*r, W*r), got "
                         f"{fmt_shape(shape)}")
    *batch, c, h, w = shape
    for d in (h, w):
        if isinstance(d, int) and d % r:
            raise ShapeError(f"pixel_unshuffle: spatial sizes {h}, {w} are not divisible by "
                             f"downscale_factor = {r}")
    b = len(batch)
    x = sgo.reshape(input, tuple(batch) + (c, _div(h, r), r, _div(w, r), r))
    x = sgo.transpose(x, tuple(range(b)) + (b, b + 2, b + 4, b + 1, b + 3))
    return sgo.reshape(x, tuple(batch) + (c * r * r, _div(h, r), _div(w, r)))


def _div(d, r):
    return d // r if isinstance(d, int) else d / r


# ----- padding ---------------------------------------------------------------------------

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _slice(x, axis, start, stop):
    key = (slice(None),) * axis + (slice(start, stop),)
    return sgo.getitem(x, key)


def _with_size(shape, axis, size):
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1:])


def _pad_side(x, axis, amount, mode, value, high):
    """The block ``amount`` wide to put before (``high`` False) or after x along axis."""
    if mode == "constant":
        return const(value, _with_size(x.shape, axis, amount))
    if mode == "replicate":
        edge = _slice(x, axis, -1, None) if high else _slice(x, axis, 0, 1)
        return sgo.broadcast_to(edge, _with_size(x.shape, axis, amount))
    if mode == "circular":
        return _slice(x, axis, 0, amount) if high else _slice(x, axis, -amount, None)
    block = _slice(x, axis, -1 - amount, -1) if high else _slice(x, axis, 1, amount + 1)
    return sgo.flip(block, axis)   # reflect: mirrored about the edge, which is not repeated


def _check_pad_size(mode, x, axis, lo, hi):
    size = x.shape[axis]
    if not isinstance(size, int) or mode == "constant":
        return
    limit = size - 1 if mode == "reflect" else size
    if mode != "replicate" and max(lo, hi) > limit:
        raise ShapeError(f"pad: {mode} padding ({lo}, {hi}) of dim {axis} must be at most "
                         f"{limit} for an input of shape {fmt_shape(x.shape)}, as in torch")
    if mode == "replicate" and size == 0:
        raise ShapeError(f"pad: replicate padding of an empty dim {axis}")


@torch_op("F.pad")
def pad(input, pad, mode="constant", value=None):
    """torch's F.pad: ``pad`` = (lo, hi) pairs from the last dim backwards; "constant"
    fills with ``value`` (0); "reflect", "replicate" and "circular" mirror, repeat the
    edge or wrap around; negative padding crops first (torch's result in every mode)."""
    if mode not in PAD_MODES:
        raise ParameterError(f"pad: mode must be one of {PAD_MODES}, got {mode!r}")
    pad = tuple(pad)
    rank = rank_of(input)
    if len(pad) % 2 or len(pad) // 2 > rank or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in pad):
        raise ParameterError(f"pad: needs an even number of ints, at most 2 per dim "
                             f"(input rank {rank}), got {pad!r}")
    if mode != "constant" and value:
        raise ParameterError(f"pad: value={value!r} applies to mode 'constant' only")
    value = 0.0 if value is None else float(value)
    x = input
    for k in range(len(pad) // 2):
        lo, hi = pad[2 * k], pad[2 * k + 1]
        axis = rank - 1 - k
        size = x.shape[axis]
        if mode == "replicate" and isinstance(size, int) and 0 < size <= -min(lo, 0) - min(hi, 0):
            ids = numpy.clip(numpy.arange(size + lo + hi) - lo, 0, size - 1)
            x = sgo.take(x, ids, axis=axis)     # cropped to nothing, then the edge repeated
            continue
        if lo < 0 or hi < 0:
            x = _slice(x, axis, max(-lo, 0), hi if hi < 0 else None)
            lo, hi = max(lo, 0), max(hi, 0)
        _check_pad_size(mode, x, axis, lo, hi)
        parts = [_pad_side(x, axis, lo, mode, value, False)] if lo else []
        parts.append(x)
        if hi:
            parts.append(_pad_side(x, axis, hi, mode, value, True))
        if len(parts) > 1:
            x = sgo.concatenate(parts, axis=axis)
    return x
