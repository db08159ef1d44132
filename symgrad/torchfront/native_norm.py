"""ATen's normalisation kernels that return their statistics too: native_layer_norm,
native_group_norm, native_batch_norm, _native_batch_norm_legit (with and without running
statistics) and _batch_norm_with_update, each as (output, mean, 1/sqrt(var + eps)).

The statistics are the same compositions as in ``norm`` (biased variance, eps inside
the square root), so the output and both statistics are differentiable formulas whose
gradients are torch's (torch's layer and batch norm kernels give their statistics no
gradient, group norm's do; so here). Running statistics are never updated (a traced function is pure;
see ``norm``). In evaluation mode torch returns empty statistics; so do these.
"""
import numpy

from ..core import ops as sgo
from ..core.build import as_tensor
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import shape_of, torch_op
from .norm import _affine, _check_channels, _norm_axes, running_normalised


def _stats(input, axes, eps):
    """(mean, rstd, normalised input) over ``axes``, keeping them."""
    mean = sgo.mean(input, axis=axes, keepdims=True)
    rstd = 1 / sgo.sqrt(sgo.var(input, axis=axes, correction=0, keepdims=True) + eps)
    return mean, rstd, (input - mean) * rstd


@torch_op("torch.native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(layer_norm(x), mean, rstd), the statistics shaped like x with the normalised dims
    kept as 1."""
    axes = _norm_axes("torch.native_layer_norm", input, normalized_shape)
    mean, rstd, out = _stats(input, axes, eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, sgo.stop_gradient(mean), sgo.stop_gradient(rstd)


@torch_op("torch.native_group_norm")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(group_norm(x), mean, rstd), the statistics of shape (N, group)."""
    name = "torch.native_group_norm"
    shape = shape_of(input)
    if len(shape) < 2 or shape[1] != C or shape[0] != N:
        raise ShapeError(f"{name}: input of shape {fmt_shape(shape)} does not match N={N}, "
                         f"C={C}")
    if not isinstance(group, int) or group <= 0 or not isinstance(C, int) or C % group:
        raise ParameterError(f"{name}: the {C} channels must divide into group={group!r} "
                             "groups")
    grouped = sgo.reshape(input, (N, group, (C // group) * HxW))
    mean, rstd, out = _stats(grouped, (2,), eps)
    out = _affine(sgo.reshape(out, shape), weight, bias, shape)
    return out, sgo.reshape(mean, (N, group)), sgo.reshape(rstd, (N, group))


def _batch_norm(name, input, weight, bias, running_mean, running_var, training, eps):
    shape = shape_of(input)
    _check_channels(name, shape, running_mean=running_mean, running_var=running_var,
                    weight=weight, bias=bias)
    if training:
        axes = (0,) + tuple(range(2, len(shape)))
        mean, rstd, out = _stats(input, axes, eps)
        mean, rstd = (sgo.stop_gradient(sgo.reshape(t, (shape[1],))) for t in (mean, rstd))
    else:
        out = running_normalised(name, input, running_mean, running_var, eps, shape)
        mean = rstd = as_tensor(numpy.zeros((0,)))
    return _affine(out, weight, bias, shape), mean, rstd


@torch_op("torch.native_batch_norm")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                      eps):
    """(batch_norm(x), batch mean, batch 1/sqrt(var + eps)) in training mode; the
    running statistics' normalisation and empty statistics in evaluation mode."""
    return _batch_norm("torch.native_batch_norm", input, weight, bias, running_mean,
                       running_var, training, eps)


@torch_op("torch._native_batch_norm_legit")
def native_batch_norm_legit(input, weight, bias, *rest):
    """native_batch_norm; the overload without running statistics is
    (input, weight, bias, training, momentum, eps)."""
    name = "torch._native_batch_norm_legit"
    if len(rest) == 3:
        training, _, eps = rest
        if not training:
            raise ParameterError(f"{name}: without running statistics training must be True")
        return _batch_norm(name, input, weight, bias, None, None, True, eps)
    if len(rest) != 5:
        raise ParameterError(f"{name}: expects (input, weight, bias, running_mean, "
                             "running_var, training, momentum, eps) or (input, weight, bias, "
                             "training, momentum, eps)")
    running_mean, running_var, training, _, eps = rest
    return _batch_norm(name, input, weight, bias, running_mean, running_var, training, eps)


@torch_op("torch.ops.aten._batch_norm_with_update",
          "torch.ops.aten._batch_norm_with_update.default")
def batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """Training-mode batch norm: (output, mean, rstd, reserve); the reserve is an empty
    byte buffer in torch and has no formula (None here)."""
    out, mean, rstd = _batch_norm("aten._batch_norm_with_update", input, weight, bias,
                                  running_mean, running_var, True, eps)
    return out, mean, rstd, None
