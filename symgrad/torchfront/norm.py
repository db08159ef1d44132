"""torch's normalisations on symbolic Tensors: F.layer_norm, F.rms_norm, F.group_norm,
F.batch_norm, F.instance_norm and F.local_response_norm (and so the nn modules that call
them: LayerNorm, RMSNorm, GroupNorm, BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d,
LocalResponseNorm).

Each is a composition of sg ops following torch's definition (statistics with the biased
variance, eps inside the square root, the affine weight and bias per channel), so its
gradient, in training mode too, is the exact derivative of that composition, as torch's.

Running statistics: in training mode torch also updates ``running_mean`` and
``running_var`` in place (and nn.BatchNorm counts ``num_batches_tracked``). A traced
function is pure, so the formulas never update them: they use the batch statistics for
the output and its gradient, exactly as torch does, and leave the buffers to the
module's own (torch) forward pass.
"""
from ..core import ops as sgo
from ..core.ops.indexing import Slice
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import shape_of, torch_op


def _norm_axes(name, input, normalized_shape):
    shape = shape_of(input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    k = len(tuple(normalized_shape))
    if k > len(shape):
        raise ShapeError(f"{name}: normalized_shape {tuple(normalized_shape)} has more dims "
                         f"than the input, shape {fmt_shape(shape)}")
    for d, n in zip(shape[len(shape) - k:], normalized_shape):
        if isinstance(d, int) and isinstance(n, int) and d != n:
            raise ShapeError(f"{name}: input of shape {fmt_shape(shape)} does not end with "
                             f"normalized_shape {tuple(normalized_shape)}")
    return tuple(range(len(shape) - k, len(shape)))


def _normalised(input, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes``, with the biased variance."""
    mean = sgo.mean(input, axis=axes, keepdims=True)
    var = sgo.var(input, axis=axes, correction=0, keepdims=True)
    return (input - mean) / sgo.sqrt(var + eps)


def _per_channel(t, shape):
    """A (C,) tensor shaped to broadcast along dim 1 of an (N, C, *spatial) input."""
    return sgo.reshape(t, (1, shape[1]) + (1,) * (len(shape) - 2))


def _affine(out, weight, bias, shape):
    if weight is not None:
        out = out * _per_channel(weight, shape)
    return out if bias is None else out + _per_channel(bias, shape)


def _count(shape, axes):
    """How many values a statistic over ``axes`` averages, when concrete (else None)."""
    total = 1
    for a in axes:
        if not isinstance(shape[a], int):
            return None
        total *= shape[a]
    return total


@torch_op("F.layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the trailing ``normalized_shape`` dims (biased
    variance), then the affine weight and bias."""
    out = _normalised(input, _norm_axes("layer_norm", input, normalized_shape), eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


@torch_op("F.rms_norm")
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x²) + eps); eps=None uses float64's machine epsilon (torch uses the
    input dtype's)."""
    axes = _norm_axes("rms_norm", input, normalized_shape)
    eps = 2.220446049250313e-16 if eps is None else eps
    out = input / sgo.sqrt(sgo.mean(sgo.square(input), axis=axes, keepdims=True) + eps)
    return out if weight is None else out * weight


@torch_op("F.group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Each sample's channels split into ``num_groups`` groups, each normalised over its
    channels and spatial positions, then the per-channel affine weight and bias."""
    name = "torch.nn.functional.group_norm"
    shape = shape_of(input)
    if len(shape) < 2 or not isinstance(shape[1], int):
        raise ShapeError(f"{name}: needs (N, C, ...) with a concrete C, got {fmt_shape(shape)}")
    if not isinstance(num_groups, int) or num_groups <= 0 or shape[1] % num_groups:
        raise ParameterError(f"{name}: the {shape[1]} channels of an input of shape "
                             f"{fmt_shape(shape)} must divide into num_groups={num_groups!r} "
                             "groups")
    group_size = shape[1] // num_groups
    for d in shape[2:]:
        group_size = group_size * d
    grouped = sgo.reshape(input, (shape[0], num_groups, group_size))
    out = sgo.reshape(_normalised(grouped, (2,), eps), shape)
    return _affine(out, weight, bias, shape)


def _check_channels(name, shape, **tensors):
    if len(shape) < 2:
        raise ShapeError(f"{name}: expects an input (N, C, *spatial) of rank >= 2, got shape "
                         f"{fmt_shape(shape)}")
    for what, t in tensors.items():
        if t is not None and tuple(shape_of(t)) != (shape[1],) and isinstance(shape[1], int) \
                and all(isinstance(d, int) for d in shape_of(t)):
            raise ShapeError(f"{name}: {what} must have shape ({shape[1]},), one value per "
                             f"channel of the input {fmt_shape(shape)}; got "
                             f"{fmt_shape(shape_of(t))}")


@torch_op("F.batch_norm")
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Training: each channel (dim 1) normalised by its mean and biased variance over the
    batch and spatial positions (the running statistics are not updated: see the module
    docstring). Evaluation: by ``running_mean`` and ``running_var``."""
    name = "torch.nn.functional.batch_norm"
    shape = shape_of(input)
    if len(shape) < 2 and 0 in shape:   # torch lets an empty vector through unchanged
        return input
    _check_channels(name, shape, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if training:
        axes = (0,) + tuple(range(2, len(shape)))
        if _count(shape, axes) == 1:
            raise ShapeError(f"{name}: expected more than 1 value per channel when training, "
                             f"got input of shape {fmt_shape(shape)}")
        out = _normalised(input, axes, eps)
    else:
        out = running_normalised(name, input, running_mean, running_var, eps, shape)
    return _affine(out, weight, bias, shape)


def running_normalised(name, input, running_mean, running_var, eps, shape):
    """Batch norm in evaluation mode: normalised by the running statistics."""
    if running_mean is None or running_var is None:
        raise ParameterError(f"{name}: running_mean and running_var must be given in "
                             "evaluation mode (training=False)")
    return (input - _per_channel(running_mean, shape)) / sgo.sqrt(
        _per_channel(running_var, shape) + eps)


@torch_op("F.instance_norm")
def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Each (sample, channel) normalised over its spatial positions (``use_input_stats``;
    the running statistics are not updated), or by the per-channel running statistics."""
    name = "torch.nn.functional.instance_norm"
    shape = shape_of(input)
    _check_channels(name, shape, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if use_input_stats:
        axes = tuple(range(2, len(shape)))
        if not axes or _count(shape, axes) == 1:
            raise ShapeError(f"{name}: expected more than 1 spatial element when training, "
                             f"got input of shape {fmt_shape(shape)}")
        out = _normalised(input, axes, eps)
    else:
        if running_mean is None or running_var is None:
            raise ParameterError(f"{name}: use_input_stats=False needs running_mean and "
                                 "running_var")
        out = (input - _per_channel(running_mean, shape)) / sgo.sqrt(
            _per_channel(running_var, shape) + eps)
    return _affine(out, weight, bias, shape)


@torch_op("F.local_response_norm")
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha · avg(x²))^beta with the average over ``size`` neighbouring channels
    (size // 2 before, (size - 1) // 2 after, zeros beyond the ends, always divided by
    size): torch's definition, its zero-padded window as an average pool over the
    channel axis."""
    name = "torch.nn.functional.local_response_norm"
    shape = shape_of(input)
    if len(shape) < 3:
        raise ShapeError(f"{name}: expects an input of rank >= 3 (N, C, *spatial), got shape "
                         f"{fmt_shape(shape)}")
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ParameterError(f"{name}: size must be a positive int, got {size!r}")
    to_last = (0,) + tuple(range(2, len(shape))) + (1,)
    channels_last = sgo.transpose(sgo.square(input), axes=to_last)
    window = sgo.resample(channels_last, "avg", ((size,), (1,), (size // 2,), False, True, None))
    if size % 2 == 0:   # one window too many at the end: (size - 1) // 2 zeros after
        keep = (Slice(0, None, 1),) * (len(shape) - 1) + (Slice(0, shape[1], 1),)
        window = sgo.index(window, keep)
    back = [0, len(shape) - 1] + list(range(1, len(shape) - 1))
    div = sgo.pow(sgo.transpose(window, axes=tuple(back)) * alpha + k, beta)
    return input / div
