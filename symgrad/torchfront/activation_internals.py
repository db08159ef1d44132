"""F.glu and F.rrelu, and the ATen internals behind softmax and dropout that torch code
(and its decompositions) call directly: ``aten._softmax_backward_data``,
``aten._safe_softmax``, ``aten.native_dropout_backward``. All are compositions of sg
ops; rrelu in training mode draws random slopes and is refused.
"""
import math

from ..core import ops as sgo
from ..core.ops.indexing import Slice
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ShapeError
from .dispatch import check_float_dtype, rank_of, shape_of, torch_op, unsupported
from .functional import leaky_relu


@torch_op("F.glu")
def glu(input, dim=-1):
    """a · σ(b) for the two halves a, b of ``input`` along ``dim``."""
    name = "torch.nn.functional.glu"
    shape = shape_of(input)
    if not shape:
        raise ShapeError(f"{name}: glu does not support scalars because the halving size "
                         "must be even")
    axis = normalize_axis(dim, len(shape), name)
    size = shape[axis]
    if not isinstance(size, int) or size % 2:
        raise ShapeError(f"{name}: halving dimension {dim} of an input of shape "
                         f"{fmt_shape(shape)} must be of even concrete size")
    half = size // 2

    def part(start):
        key = tuple(Slice(start, start + half, 1) if k == axis else Slice(0, None, 1)
                    for k in range(len(shape)))
        return sgo.index(input, key)

    return part(0) * sgo.sigmoid(part(half))


@torch_op("F.rrelu")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Evaluation mode: leaky_relu with the mean slope (lower + upper) / 2."""
    name = "torch.nn.functional.rrelu"
    if training and lower != upper:
        raise unsupported(name, (input,), why="rrelu in training mode draws a random slope "
                          "per element; call module.eval() (or pass training=False), or use "
                          "leaky_relu with a fixed slope")
    return leaky_relu(input, (lower + upper) / 2)


@torch_op("torch.ops.aten._softmax_backward_data",
          "torch.ops.aten._softmax_backward_data.default")
def softmax_backward_data(grad_output, output, dim, input_dtype):
    """The vector-Jacobian product of softmax from its output y: y (g - Σ g y)."""
    axis = normalize_axis(dim, rank_of(output), "aten._softmax_backward_data") \
        if rank_of(output) else None
    return output * (grad_output - sgo.sum(grad_output * output, axis=axis, keepdims=True))


@torch_op("torch.ops.aten._safe_softmax", "torch.ops.aten._safe_softmax.default")
def safe_softmax(input, dim, dtype=None):
    """softmax along ``dim``, with 0 (not nan) in slices that are all -inf."""
    check_float_dtype("aten._safe_softmax", dtype)
    if not rank_of(input):
        return sgo.where(sgo.eq(input, -math.inf), 0.0, sgo.exp(input - input))
    axis = normalize_axis(dim, rank_of(input), "aten._safe_softmax")
    alive = sgo.max(sgo.gt(input, -math.inf) * 1.0, axis=axis, keepdims=True)
    dead = sgo.eq(alive, 0.0)
    return sgo.where(dead, 0.0, sgo.softmax(sgo.where(dead, 0.0, input), axis))


@torch_op("torch.ops.aten.native_dropout_backward",
          "torch.ops.aten.native_dropout_backward.default")
def native_dropout_backward(grad_output, mask, scale):
    """grad_output · mask · scale: the gradient of dropout given its (constant) mask."""
    return sgo.where(mask, grad_output * float(scale), 0.0)
