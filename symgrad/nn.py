"""Neural-network ops: softmax, log_softmax, logsumexp, one_hot and the losses
cross_entropy, mse_loss and binary_cross_entropy_with_logits, with numerically stable
forward code (max-shifted exponentials, log1p(exp(-|x|))) and gradients in rules/nn.yaml.
"""
import sympy
from sympy.core.symbol import Str

from . import sympy_funcs as sf
from .errors import ShapeError
from .ops import _reduce_expr, _reduce_params, _reduce_shape, apply, defop, pointwise_shape
from .shapes import dims_equal, fmt_shape, normalize_axis, shapes_equal

REDUCTIONS = ("mean", "sum", "none")


def _axis_params(op, shapes, axis=-1):
    rank = len(shapes[0])
    if rank == 0:
        raise ShapeError(f"{op}: needs at least one dim, got a scalar")
    return (("axis", normalize_axis(axis, rank, op)),)


def _reduction(op, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return (("reduction", reduction),)


def _loss_params(op, shapes, reduction="mean"):
    return _reduction(op, reduction)


def _loss_shape(op, shapes, attrs):
    shape = pointwise_shape(op, shapes, attrs)
    return shape if attrs["reduction"] == "none" else ()


def _one_hot_params(op, shapes, num_classes):
    if not isinstance(num_classes, int) and not isinstance(num_classes, (str, sympy.Symbol)):
        raise TypeError(f"one_hot: num_classes must be an int or a dim name, "
                        f"got {num_classes!r}")
    from .shapes import as_dim
    return (("num_classes", as_dim(num_classes)),)


def _cross_entropy_params(op, shapes, reduction="mean"):
    x, t = shapes
    if len(x) not in (1, 2):
        raise ShapeError(f"cross_entropy: logits must be (C,) or (N, C), got {fmt_shape(x)}")
    if shapes_equal(t, x):
        probabilities = True
    elif shapes_equal(t, x[:-1]):
        probabilities = False
    else:
        raise ShapeError(
            f"cross_entropy: logits have shape {fmt_shape(x)}, so target must be class "
            f"indices of shape {fmt_shape(x[:-1])} or probabilities of shape {fmt_shape(x)}; "
            f"got {fmt_shape(t)}")
    return (("probabilities", probabilities),) + _reduction(op, reduction)


def _cross_entropy_shape(op, shapes, attrs):
    return shapes[0][:-1] if attrs["reduction"] == "none" else ()


def _loss_expr(cls):
    return lambda attrs, x, y: cls(x, y, Str(attrs["reduction"]))


defop("softmax", 1, lambda attrs, x: sf.SoftmaxOp(x, sympy.Integer(attrs["axis"])),
      shape=lambda op, s, a: s[0], params=_axis_params)
defop("log_softmax", 1, lambda attrs, x: sf.LogSoftmaxOp(x, sympy.Integer(attrs["axis"])),
      shape=lambda op, s, a: s[0], params=_axis_params)
defop("logsumexp", 1, _reduce_expr(sf.LogsumexpOp), shape=_reduce_shape,
      params=_reduce_params)
defop("one_hot", 1, lambda attrs, t: sf.OneHotOp(t, sympy.sympify(attrs["num_classes"])),
      shape=lambda op, s, a: s[0] + (a["num_classes"],), params=_one_hot_params)
defop("cross_entropy", 2,
      lambda attrs, x, t: sf.CrossEntropyOp(x, t, sf.sym_bool(attrs["probabilities"]),
                                            Str(attrs["reduction"])),
      shape=_cross_entropy_shape, params=_cross_entropy_params)
defop("mse_loss", 2, _loss_expr(sf.MseLossOp), shape=_loss_shape, params=_loss_params)
defop("binary_cross_entropy_with_logits", 2, _loss_expr(sf.BceWithLogitsOp),
      shape=_loss_shape, params=_loss_params)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along ``axis``, computed with the max subtracted."""
    return apply("softmax", x, axis=axis)


def log_softmax(x, axis=-1):
    return apply("log_softmax", x, axis=axis)


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) over ``axis``, stable for large x."""
    return apply("logsumexp", x, axis=axis, keepdims=keepdims)


def one_hot(target, num_classes):
    """Rows of the identity picked by the class indices in ``target`` (no gradient)."""
    return apply("one_hot", target, num_classes=num_classes)


def cross_entropy(logits, target, reduction="mean"):
    """torch's ``F.cross_entropy`` for logits (C,) or (N, C): ``target`` is class
    indices (shape (N,) or ()) or class probabilities (same shape as the logits)."""
    return apply("cross_entropy", logits, target, reduction=reduction)


def mse_loss(x, y, reduction="mean"):
    return apply("mse_loss", x, y, reduction=reduction)


def binary_cross_entropy_with_logits(x, y, reduction="mean"):
    """-(y log σ(x) + (1 - y) log(1 - σ(x))), as max(x, 0) - x y + log1p(exp(-|x|))."""
    return apply("binary_cross_entropy_with_logits", x, y, reduction=reduction)
