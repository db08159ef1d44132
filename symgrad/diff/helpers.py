"""Named helpers that rule formulas may call, for anything longer than a line.

Like the helpers PyTorch's derivatives.yaml calls (``sum_backward``, ``mm_mat1_backward``),
each takes Tensors and op parameters and returns a Tensor built from symgrad ops, so it is
differentiable again.
"""
import sympy

from ..core.build import const
from ..core.graph import Tensor
from ..core.ops import pointwise as pw, reductions as red, shape as sh
from ..core.ops.indexing import Slice, index, index_scatter
from ..core.ops.linalg import diag, diagonal, eye, matmul, outer as outer_op, solve, trace, tril
from ..core.ops.nn import log_softmax, one_hot, softmax
from ..core.shapes import dims_match, numel

__all__ = ["size_along", "expand_reduced", "count", "sum_to", "shape_of", "inverse_permutation", "matmul_grad_x",
           "matmul_grad_y", "clamp_mask", "outer", "eye_like", "mT", "solve_grad_a", "on_diagonal",
           "solve_grad_b", "solve_jvp", "per_matrix", "matrix_trace",
           "norm_grad", "norm_jvp", "tril_half", "cholesky_grad", "extremum_grad", "extremum_jvp",
           "prod_others", "centered", "loss_grad", "cross_entropy_grad",
           "cross_entropy_target_grad", "cross_entropy_jvp", "concat_grad_x", "concat_grad_y",
           "amax_mask", "mse_loss_jvp", "bce_jvp", "div_or_zero", "pow_grad_base",
           "pow_grad_exponent", "negated"]


def shape_of(x):
    return x.shape


def size_along(x, axis):
    """The length of ``x`` along ``axis`` (a dim)."""
    return x.shape[axis]


def expand_reduced(grad, x, axis, keepdims):
    """The gradient of a reduction over ``axis`` spread back over ``x``'s shape."""
    if not keepdims:
        for a in sorted(axis):
            grad = sh.unsqueeze(grad, a)
    return sh.broadcast_to(grad, x.shape)


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
    out = red.sum(grad, axis=tuple(axes), keepdims=False) if axes else grad
    if out.shape != shape:
        out = sh.reshape(out, shape)
    return out


def inverse_permutation(axes):
    inv = [0] * len(axes)
    for i, a in enumerate(axes):
        inv[a] = i
    return tuple(inv)


def outer(u, v):
    """u vᵀ for vectors (the ``outer`` op)."""
    return outer_op(u, v)


def mT(x):
    """The matrix transpose of x (its last two axes), for any batch rank."""
    if x.ndim <= 2:
        return sh.transpose(x)
    axes = tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2)
    return sh.transpose(x, axes=axes)


def matmul_grad_x(grad, x, y):
    """d(x @ y)/dx applied to ``grad``, for every rank combination of ``matmul``
    (batch dims are summed back to x's shape by the sweep)."""
    if x.ndim == 1 and y.ndim == 1:
        return grad * y
    if x.ndim == 1:
        if y.ndim == 2:
            return matmul(y, grad)
        return matmul(sh.unsqueeze(grad, -2), mT(y))
    if y.ndim == 1:
        return sh.unsqueeze(grad, -1) * y if x.ndim > 2 else outer(grad, y)
    return matmul(grad, mT(y))


def matmul_grad_y(grad, x, y):
    if x.ndim == 1 and y.ndim == 1:
        return grad * x
    if x.ndim == 1:
        if y.ndim == 2:
            return outer(x, grad)
        return sh.unsqueeze(x, -1) * sh.unsqueeze(grad, -2)
    if y.ndim == 1:
        if x.ndim == 2:
            return matmul(sh.transpose(x), grad)
        return sh.squeeze(matmul(mT(x), sh.unsqueeze(grad, -1)), -1)
    return matmul(mT(x), grad)


def clamp_mask(x, lo, hi):
    """Where clamp passes its input through (bounds included, as in torch)."""
    if lo is None:
        return x <= hi
    if hi is None:
        return x >= lo
    return pw.logical_and(x >= lo, x <= hi)


def on_diagonal(grad, x):
    """The scalar ``grad`` on the diagonal of a matrix of x's size (square or not),
    exactly 0 off it, even where grad is not finite."""
    m, n = x.shape[-2], x.shape[-1]
    if dims_match(m, n):
        return diag(sh.broadcast_to(grad, (n,)))
    k = min(int(m), int(n))
    return index_scatter(diag(sh.broadcast_to(grad, (k,))), (m, n),
                         (Slice(0, k, 1), Slice(0, k, 1)))


def eye_like(x):
    """The identity matrix of x's (square) size."""
    return eye(x.shape[-1])


def _vector_for_batch(a, b):
    """B is one vector solved against each matrix of a batch A: the result is a batch of
    vectors, handled as columns (..., n, 1)."""
    return b.ndim == 1 and a.ndim > 2


def solve_grad_a(grad, a, b, result):
    """d solve(A, B)/dA applied to ``grad``: -A⁻ᵀ grad Xᵀ with X = solve(A, B) (batch
    dims are summed back to A's shape by the sweep)."""
    if _vector_for_batch(a, b):
        grad, result = sh.unsqueeze(grad, -1), sh.unsqueeze(result, -1)
    g = solve(mT(a), grad)
    if result.ndim == 1:
        return -outer(g, result)
    return -matmul(g, mT(result))


def solve_grad_b(grad, a, b):
    """d solve(A, B)/dB applied to ``grad``: A⁻ᵀ grad."""
    if _vector_for_batch(a, b):
        return sh.squeeze(solve(mT(a), sh.unsqueeze(grad, -1)), -1)
    return solve(mT(a), grad)


def solve_jvp(a, b, a_t, b_t, result):
    """The tangent of X = solve(A, B): A⁻¹ (Ḃ - Ȧ X)."""
    if _vector_for_batch(a, b):
        rhs = sh.unsqueeze(b_t, -1) - matmul(a_t, sh.unsqueeze(result, -1))
        return sh.squeeze(solve(a, rhs), -1)
    return solve(a, b_t - matmul(a_t, result))


def per_matrix(s, x):
    """One scalar per matrix of the batch x (shape x.shape[:-2]) shaped to scale x's
    matrices: (..., 1, 1)."""
    if x.ndim == 2:
        return s
    return sh.unsqueeze(sh.unsqueeze(s, -1), -1)


def matrix_trace(m):
    """The trace of each matrix of a batch."""
    if m.ndim == 2:
        return trace(m)
    return red.sum(m * eye(m.shape[-1]), axis=(m.ndim - 2, m.ndim - 1))


def tril_half(x):
    """The lower triangle of x with its diagonal halved: Φ in the Cholesky derivative."""
    return tril(x, k=-1) + 0.5 * diag(diagonal(x))


def cholesky_grad(grad, result):
    """The derivative of the Cholesky factor L of A applied to ``grad`` (torch's
    convention: A symmetric, the gradient symmetrised): S = L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹, then
    (S + Sᵀ)/2."""
    lt = sh.transpose(result)
    left = solve(lt, tril_half(matmul(lt, grad)))
    s = sh.transpose(solve(lt, sh.transpose(left)))
    return 0.5 * (s + sh.transpose(s))


def div_or_zero(a, b):
    """a / b, and 0 where b is 0 (torch's convention for the gradients of std and norm
    at 0). The divisor is 1 there, so neither branch of the select is inf and
    derivatives of any order stay finite (0 · inf would be nan)."""
    at_zero = b == 0
    return pw.where(at_zero, 0.0, a / pw.where(at_zero, 1.0, b))


def pow_grad_base(grad, x, y):
    """grad · y · x^(y-1), and 0 where y is 0 (as torch: x^0 is constant, even at x = 0
    where y · x^(y-1) would be 0 · inf)."""
    return _zero_where(y == 0, grad * y * x ** (y - 1))


def pow_grad_exponent(grad, x, y, result):
    """grad · x^y · log x, and 0 where x is 0 and y >= 0 (as torch: 0^y is 0 or 1 there,
    where x^y · log x would be 0 · -inf)."""
    return _zero_where(_and(x == 0, y >= 0), grad * result * pw.log(x))


def _constant(t):
    return t.attrs["value"] if isinstance(t, Tensor) and t.is_const else None


def _and(a, b):
    """a & b, decided here when either side is a constant."""
    for p, q in ((a, b), (b, a)):
        value = _constant(p)
        if value is not None:
            return q if value else p
    return pw.logical_and(a, b)


def _zero_where(cond, value):
    """where(cond, 0, value); a constant condition is decided here (None: a known zero)."""
    known = _constant(cond)
    if known is None:
        return pw.where(cond, 0.0, value)
    return None if known else value


def _norm_direction(x, p):
    """d‖x‖_p/dx · ‖x‖_p^(p-1) = sign(x)|x|^(p-1) (x for p = 2), 0 at x = 0 for p < 1."""
    if p == 2:
        return x
    if p == 1:
        return pw.sign(x)
    magnitude = pw.abs(x)
    if p < 1:
        magnitude = pw.where(x == 0, 1.0, magnitude)
    return pw.sign(x) * magnitude ** (p - 1)


def _norm_power(result, p):
    return result if p == 2 else result ** (p - 1)


def norm_grad(grad, x, result, axis, keepdims, ord):
    """grad · sign(x)|x|^(p-1) / ‖x‖_p^(p-1) (x · grad / ‖x‖ for p = 2), 0 where the
    norm is 0, and for p < 1 also where x is 0 (torch's convention)."""
    scale = div_or_zero(grad, _norm_power(result, ord))
    return _norm_direction(x, ord) * expand_reduced(scale, x, axis, keepdims)


def norm_jvp(x, x_t, result, axis, keepdims, ord):
    """The tangent of ‖x‖_p along x_t, 0 where the norm is 0."""
    along = red.sum(_norm_direction(x, ord) * x_t, axis=axis, keepdims=keepdims)
    return div_or_zero(along, _norm_power(result, ord))


def amax_mask(x, result, axis, keepdims):
    """amax/amin: ties share the gradient equally; a slice holding nan has no tie, and
    its gradient is nan throughout (0/0), as torch's."""
    hit = pw.cast(x == expand_reduced(result, x, axis, keepdims))
    return hit / expand_reduced(red.sum(hit, axis=axis, keepdims=keepdims), x, axis, keepdims)


def _extremum_selection(x, result, axis, keepdims, first):
    """(where the gradient of max/min goes, the share of each place or None): every tie
    sharing it equally, or all of it to the first extremum along the axis (``first``,
    the index torch.max(x, dim) returns). A nan is the extremum of its slice, as in
    torch."""
    r = expand_reduced(result, x, axis, keepdims)
    hit = pw.logical_or(x == r, pw.logical_and(pw.isnan(x), pw.isnan(r)))
    if first:
        (a,) = axis
        return pw.logical_and(hit, red.cumsum(pw.cast(hit), a) == 1), None
    count = red.sum(pw.cast(hit), axis=axis, keepdims=keepdims)
    return hit, expand_reduced(count, x, axis, keepdims)


def extremum_grad(grad, x, result, axis, keepdims, first):
    """The gradient of max/min over ``axis``; exactly 0 off the extremum, even where grad
    is not finite (torch's masked fill)."""
    chosen, count = _extremum_selection(x, result, axis, keepdims, first)
    g = expand_reduced(grad, x, axis, keepdims)
    return pw.where(chosen, g if count is None else g / count, 0.0)


def extremum_jvp(x_t, x, result, axis, keepdims, first):
    chosen, count = _extremum_selection(x, result, axis, keepdims, first)
    share = pw.where(chosen, x_t if count is None else x_t / count, 0.0)
    return red.sum(share, axis=axis, keepdims=keepdims)


def prod_others(x, result, axis, keepdims):
    """d prod(x)/dx_i = the product of the other elements, with no division by a zero
    element and exact to second order where x has zeros (as torch's prod backward).

    Along each reduced slice let P be the product of its non-zero elements, k the number
    of zeros and z the sum of the zero elements (0 in value, but its derivative sends
    gradient to them). Then the product of the others is P / x_i when k = 0; P at the
    zero and z P / x_i elsewhere when k = 1; (z - x_i) P at a zero when k = 2; 0 beyond.
    The factors z and z - x_i vanish in value yet carry the second derivatives
    (d²prod/dx_i dx_j = product of the rest) that a constant 0 would lose."""
    is_zero = x == 0
    nonzero = pw.where(is_zero, 1.0, x)
    over = None if len(axis) == x.ndim else axis[0]

    def spread(t):
        return expand_reduced(t, x, axis, keepdims)

    p = spread(red.prod(nonzero, axis=over, keepdims=keepdims))
    k = spread(red.sum(pw.cast(is_zero), axis=axis, keepdims=keepdims))
    z = spread(red.sum(pw.where(is_zero, x, 0.0), axis=axis, keepdims=keepdims))
    at_zero = pw.where(k == 1, p, pw.where(k == 2, (z - x) * p, 0.0))
    at_nonzero = pw.where(k == 0, p / nonzero, pw.where(k == 1, z * p / nonzero, 0.0))
    return pw.where(is_zero, at_zero, at_nonzero)


def centered(x, axis):
    """x minus its mean over ``axis``."""
    return x - red.mean(x, axis=axis, keepdims=True)


def loss_grad(grad, x, reduction):
    """The incoming gradient of a loss spread over the elements of ``x``."""
    if reduction == "none":
        return grad
    g = sh.broadcast_to(grad, x.shape)
    return g / count(x, tuple(range(x.ndim))) if reduction == "mean" else g


def _ce_scale(grad, logits, reduction):
    batch = logits.shape[:-1]
    if reduction == "none":
        return sh.unsqueeze(grad, -1)
    g = sh.broadcast_to(grad, batch) if batch else grad
    if reduction == "mean" and batch:
        g = g / const(sympy.sympify(numel(batch)))
    return sh.unsqueeze(g, -1) if batch else g


def cross_entropy_grad(grad, logits, target, probabilities, reduction):
    p = softmax(logits, -1)
    if probabilities:
        weight = red.sum(target, axis=-1, keepdims=True)
        return (p * weight - target) * _ce_scale(grad, logits, reduction)
    return (p - one_hot(target, logits.shape[-1])) * _ce_scale(grad, logits, reduction)


def cross_entropy_target_grad(grad, logits, target, probabilities, reduction):
    if not probabilities:
        return None
    return -log_softmax(logits, -1) * _ce_scale(grad, logits, reduction)


def cross_entropy_jvp(logits, target, logits_t, target_t, probabilities, reduction):
    p = softmax(logits, -1)
    if probabilities:
        per = red.sum(p * logits_t, axis=-1) * red.sum(target, axis=-1) \
            - red.sum(target * logits_t, axis=-1)
        if target_t is not None:
            per = per - red.sum(target_t * log_softmax(logits, -1), axis=-1)
    else:
        per = red.sum((p - one_hot(target, logits.shape[-1])) * logits_t, axis=-1)
    if reduction == "none":
        return per
    return red.mean(per) if reduction == "mean" and logits.ndim > 1 else red.sum(per)


def concat_part(grad, axis, start, length):
    """The slice [start, start + length) of ``grad`` along ``axis``."""
    entries = []
    for k, d in enumerate(grad.shape):
        if k == axis:
            stop = sympy.sympify(start) + sympy.sympify(length)
            stop = int(stop) if stop.is_Integer else stop
            entries.append(Slice(start, stop, 1))
        else:
            entries.append(Slice(0, None, 1))
    return index(grad, tuple(entries))


def concat_grad_x(grad, x, axis):
    return concat_part(grad, axis, 0, x.shape[axis])


def concat_grad_y(grad, x, y, axis):
    return concat_part(grad, axis, x.shape[axis], y.shape[axis])


def _reduce_loss(per_element, reduction):
    if reduction == "none":
        return per_element
    return red.mean(per_element) if reduction == "mean" else red.sum(per_element)


def mse_loss_jvp(x, y, x_t, y_t, reduction):
    return _reduce_loss(2 * (x - y) * (x_t - y_t), reduction)


def bce_jvp(x, y, x_t, y_t, reduction):
    return _reduce_loss((pw.sigmoid(x) - y) * x_t - x * y_t, reduction)


def negated(values):
    """A tuple parameter with every entry negated (roll's shifts, undone by its gradient)."""
    return tuple(-v for v in values)


from .scan_helpers import (cumprod_grad, cumprod_jvp, logcumsumexp_grad,  # noqa: E402
                           logcumsumexp_jvp)

__all__ += ["cumprod_grad", "cumprod_jvp", "logcumsumexp_grad", "logcumsumexp_jvp"]


# the decompositions' helpers (rules/decomp.yaml) live in their own module
from .decomp_grads import *  # noqa: E402,F401,F403
from . import decomp_grads as _decomp_grads  # noqa: E402
__all__ += _decomp_grads.__all__
