"""torch's linear algebra and reductions beyond the ops' own torch names: products with
rank checks (``mm``, ``bmm``, ``dot``, ``inner``, ``addmm``), ``diag``/``diagonal`` with
offsets, ``slogdet``, ``solve``, p-norms, and the reductions whose torch signature differs
from the op's (``max``/``min`` returning indices, ``var``/``std`` with ``unbiased``)."""
import math

from ..core import ops as sgo
from ..core.shapes import fmt_shape
from ..errors import ShapeError
from .dispatch import (check_float_dtype, dim_arg, is_tensorlike, rank_of,
                       reject, shape_of, torch_op, unsupported)


@torch_op("Tensor.__rmatmul__")
def rmatmul(input, other):
    return sgo.matmul(other, input)


def _checked_matmul(name, ranks):
    def handler(input, mat2, *, out=None):
        reject(name, out=out)
        if (rank_of(input), rank_of(mat2)) != ranks:
            raise ShapeError(f"{name}: expects operands of ranks {ranks}, got shapes "
                             f"{fmt_shape(shape_of(input))} and {fmt_shape(shape_of(mat2))}")
        return sgo.matmul(input, mat2)
    return handler


torch_op("torch.mm", "Tensor.mm")(_checked_matmul("torch.mm", (2, 2)))
torch_op("torch.mv", "Tensor.mv")(_checked_matmul("torch.mv", (2, 1)))
torch_op("torch.bmm", "Tensor.bmm")(_checked_matmul("torch.bmm", (3, 3)))


@torch_op("torch.dot", "torch.vdot", "Tensor.dot", "Tensor.vdot")
def dot(input, other, *, out=None):
    reject("torch.dot", out=out)
    if rank_of(input) != 1 or rank_of(other) != 1:
        raise ShapeError(f"torch.dot: 1D tensors expected, got shapes "
                         f"{fmt_shape(shape_of(input))} and {fmt_shape(shape_of(other))}; use "
                         "torch.inner or torch.matmul for higher ranks")
    return sgo.dot(input, other)


@torch_op("torch.inner", "Tensor.inner")
def inner(input, other, *, out=None):
    """Sum over the last axes of both: a scalar times a tensor for 0-d operands, else
    input @ otherᵀ with the last axes contracted (shape input[:-1] + other[:-1])."""
    reject("torch.inner", out=out)
    if not rank_of(input) or not rank_of(other):
        return input * other
    if rank_of(other) == 1:
        return sgo.matmul(input, other)
    last = rank_of(other) - 1
    moved = sgo.transpose(other, (last,) + tuple(range(last)))
    return sgo.reshape(sgo.matmul(sgo.reshape(input, (-1, shape_of(input)[-1])),
                                  sgo.reshape(moved, (shape_of(other)[-1], -1))),
                       tuple(shape_of(input)[:-1]) + tuple(shape_of(other)[:-1]))


def _addmm(name):
    def handler(input, mat1, mat2, *, beta=1, alpha=1, out=None):
        reject(name, out=out)
        product = sgo.matmul(mat1, mat2)
        return (input if beta == 1 else beta * input) + (
            product if alpha == 1 else alpha * product)
    return handler


torch_op("torch.addmm", "Tensor.addmm")(_addmm("torch.addmm"))
torch_op("torch.addmv", "Tensor.addmv")(_addmm("torch.addmv"))
torch_op("torch.baddbmm", "Tensor.baddbmm")(_addmm("torch.baddbmm"))


@torch_op("torch.slogdet", "linalg.slogdet", "Tensor.slogdet")
def slogdet(input, *, out=None):
    import torch
    reject("torch.slogdet", out=out)
    return torch.return_types.slogdet(sgo.slogdet(input))


def p_norm(input, p, dim, keepdim, name):
    if p in ("fro", None):
        p = 2
    if isinstance(p, (int, float)) and not isinstance(p, bool) and p != 0 and p == p:
        return sgo.norm(input, axis=dim_arg(dim), keepdims=keepdim, ord=p)
    if p == 0 and not isinstance(p, bool):
        nonzero = sgo.where(input != 0, 1.0, 0.0)
        return sgo.sum(nonzero, axis=dim_arg(dim), keepdims=keepdim)
    raise unsupported(name, (input,), why=f"p={p!r} is not mapped")


@torch_op("torch.norm", "Tensor.norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    reject("torch.norm", out=out)
    check_float_dtype("torch.norm", dtype)
    if p == "nuc":
        from .decomp import matrix_norm
        return matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim,
                           "torch.norm")
    return p_norm(input, p, dim, keepdim, "torch.norm")


@torch_op("linalg.vector_norm")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    reject("torch.linalg.vector_norm", out=out)
    check_float_dtype("torch.linalg.vector_norm", dtype)
    return p_norm(x, ord, dim, keepdim, "torch.linalg.vector_norm")


@torch_op("linalg.norm")
def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    reject("torch.linalg.norm", out=out)
    check_float_dtype("torch.linalg.norm", dtype)
    if ord is not None and (dim is None and rank_of(A) == 2 or
                            isinstance(dim, (tuple, list)) and len(dim) == 2):
        return matrix_norm(A, ord, dim or (0, 1), keepdim, "torch.linalg.norm")
    return p_norm(A, ord, dim, keepdim, "torch.linalg.norm")


def matrix_norm(A, ord, dim, keepdim, name):
    """torch.linalg.norm's matrix case: the decompositions' front end has every matrix
    norm (those of singular values too) when it is there, else the induced norms here."""
    try:
        from .decomp import matrix_norm as with_singular_values
    except ImportError:
        return induced_norm(A, ord, dim, keepdim, name)
    return with_singular_values(A, ord, dim, keepdim, name)


def induced_norm(A, ord, dim, keepdim, name):
    """The matrix norms of the absolute row and column sums (ord ±1: columns, ±inf:
    rows: their max, or min for a negative ord) and Frobenius'; the spectral and nuclear
    norms need singular values, which symgrad does not trace."""
    rows, cols = (d % rank_of(A) for d in dim)
    if ord == "fro":
        return sgo.norm(A, axis=(rows, cols), keepdims=keepdim)
    if ord not in (1, -1, math.inf, -math.inf):
        raise unsupported(name, (A,), why=f"the matrix norm ord={ord!r} needs singular "
                          "values; use ord='fro', 1, -1, inf or -inf")
    summed, picked = (rows, cols) if ord in (1, -1) else (cols, rows)
    extremum = sgo.amax if ord > 0 else sgo.amin
    out = extremum(sgo.sum(abs(A), axis=summed, keepdims=True), axis=picked, keepdims=True)
    return out if keepdim else sgo.squeeze(out, axis=(rows, cols))


# ----- reductions ---------------------------------------------------------------------

def _extremum(name, reduce, pointwise):
    def handler(input, dim=None, keepdim=False, *, out=None):
        reject(name, out=out)
        if dim is None:
            return reduce(input)
        if is_tensorlike(dim):
            return pointwise(input, dim)
        import torch
        from .sorting import arg_extreme
        if rank_of(input) == 0:
            values = input
        else:
            values = reduce(input, axis=int(dim), keepdims=keepdim)
        index = arg_extreme(name, input, int(dim), keepdim, reduce is sgo.max)
        return getattr(torch.return_types, name.rsplit(".", 1)[-1])((values, index))
    return handler


torch_op("torch.max", "Tensor.max")(_extremum("torch.max", sgo.max, sgo.maximum))
torch_op("torch.min", "Tensor.min")(_extremum("torch.min", sgo.min, sgo.minimum))


def _statistic(name, fn):
    def handler(input, dim=None, unbiased=None, keepdim=False, *, correction=None,
                out=None):
        reject(name, out=out)
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        return fn(input, axis=dim_arg(dim), correction=correction, keepdims=keepdim)
    return handler


torch_op("torch.var", "Tensor.var")(_statistic("torch.var", sgo.var))
torch_op("torch.std", "Tensor.std")(_statistic("torch.std", sgo.std))


