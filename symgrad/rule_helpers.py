"""Named helpers that rule formulas may call, for anything longer than a line.

Like the helpers PyTorch's derivatives.yaml calls (``sum_backward``, ``mm_mat1_backward``),
each takes Tensors and op parameters and returns a Tensor built from symgrad ops, so it is
differentiable again.
"""
import sympy

from . import ops
from .graph import Tensor, const
from .shapes import numel

__all__ = ["expand_reduced", "count", "sum_to", "shape_of", "inverse_permutation",
           "matmul_grad_x", "matmul_grad_y", "clamp_mask", "outer"]


def shape_of(x):
    return x.shape


def expand_reduced(grad, x, axis, keepdims):
    """The gradient of a reduction over ``axis`` spread back over ``x``'s shape."""
    if not keepdims:
        for a in sorted(axis):
            grad = ops.unsqueeze(grad, a)
    return ops.broadcast_to(grad, x.shape)


def count(x, axis):
    """Number of elements a reduction over ``axis`` averages (a dim expression)."""
    return const(sympy.sympify(numel([x.shape[a] for a in axis])))


def sum_to(grad, shape):
    """Sum ``grad`` down to ``shape``, undoing NumPy broadcasting."""
    if not isinstance(grad, Tensor) or grad.shape == shape:
        return grad
    lead = len(grad.shape) - len(shape)
    axes = list(range(lead))
    for i, d in enumerate(shape):
        if d == 1 and grad.shape[lead + i] != 1:
            axes.append(lead + i)
    out = ops.sum(grad, axis=tuple(axes), keepdims=False) if axes else grad
    if out.shape != shape:
        out = ops.reshape(out, shape)
    return out


def inverse_permutation(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def outer(u, v):
    """u vᵀ for vectors, as a matrix product of a column and a row."""
    return ops.matmul(ops.unsqueeze(u, -1), ops.unsqueeze(v, 0))


def matmul_grad_x(grad, x, y):
    """d(x @ y)/dx applied to ``grad``, for every rank combination of ``matmul``."""
    if x.ndim == 1 and y.ndim == 1:
        return grad * y
    if x.ndim == 1:
        return ops.matmul(y, grad)
    if y.ndim == 1:
        return outer(grad, y)
    return ops.matmul(grad, ops.transpose(y))


def matmul_grad_y(grad, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return grad * x
    if x.ndim == 1:
        return outer(x, grad)
    return ops.matmul(ops.transpose(x), grad)


def clamp_mask(x, lo, hi):
    """Where clamp passes its input through (bounds included, as in torch)."""
    if lo is None:
        return x <= hi
    if hi is None:
        return x >= lo
    return ops.logical_and(x >= lo, x <= hi)
