"""Rule helpers for the matrix decompositions (rules/decomp.yaml), over batches of matrices.

They follow torch's derivatives.yaml (``linalg_eig_backward``, ``svd_backward``,
``linalg_qr_backward``, ``cholesky_backward``, ``linalg_matrix_exp_differential``), split
per output: torch's formulas are linear in the output gradients, so the rule of each
output op gives its share. Every formula is written with sg ops that have rules, so it
differentiates again.
"""
import sympy

from ..core.build import const
from ..core.ops import pointwise as pw, reductions as red, shape as sh
from ..core.ops.decomp import (eigh_values, eigh_vectors, matrix_exp, qr_q, qr_r, smaller,
                               solve_triangular, svd_s, svd_u, svd_vh)
from ..core.ops.indexing import Slice, concatenate, index
from ..core.ops.linalg import eye, matmul, tril, triu
from ..errors import NotDifferentiableError, ShapeError

__all__ = ["eigh_values_grad", "eigh_values_jvp", "eigh_vectors_grad", "eigh_vectors_jvp",
           "svd_s_grad", "svd_s_jvp", "svd_u_grad", "svd_u_jvp", "svd_vh_grad", "svd_vh_jvp",
           "qr_q_grad", "qr_r_grad", "qr_q_jvp", "qr_r_jvp", "triangle", "solve_triangular_grad_a",
           "solve_triangular_grad_b", "solve_triangular_jvp", "cholesky_backward",
           "cholesky_jvp", "matrix_exp_differential"]


def mT(x):
    """The matrix transpose of x (its last two axes); helpers.mT, which imports this
    module, cannot be imported here."""
    if x.ndim <= 2:
        return sh.transpose(x)
    return sh.transpose(x, axes=tuple(range(x.ndim - 2)) + (x.ndim - 1, x.ndim - 2))


def _on_diagonal(x):
    """Where the diagonal of x's last two axes is (a mask: selecting by it, unlike
    multiplying by the identity, spreads no nan or inf off the diagonal)."""
    return eye(x.shape[-1]) == 1


def _diag_embed(v):
    return pw.where(eye(v.shape[-1]) == 1, sh.unsqueeze(v, -1), 0.0)


def _diagonal(x):
    return red.sum(pw.where(_on_diagonal(x), x, 0.0), axis=-1)


def _skew(x):
    return x - mT(x)


def _gaps(values):
    """E[i, j] = values[j] - values[i], 1 on the diagonal (where it only divides zeros)."""
    return sh.unsqueeze(values, -2) - sh.unsqueeze(values, -1) + eye(values.shape[-1])


def _off_diagonal(x):
    return pw.where(_on_diagonal(x), 0.0, x)


def _cols(x, start, stop):
    entries = [Slice(0, None, 1)] * (x.ndim - 1) + [Slice(start, stop, 1)]
    return index(x, tuple(entries))


def _rows(x, start, stop):
    entries = [Slice(0, None, 1)] * (x.ndim - 2) + [Slice(start, stop, 1), Slice(0, None, 1)]
    return index(x, tuple(entries))


def _compare(op, m, n):
    """-1, 0 or 1 as m < n, m == n, m > n; a rule that branches on it needs known sizes."""
    d = sympy.sympify(m) - sympy.sympify(n)
    if d == 0:
        return 0
    if d.is_positive:
        return 1
    if d.is_negative:
        return -1
    raise ShapeError(f"{op}: the gradient depends on whether the matrix is tall or wide; give "
                     f"sizes whose order is known (got {m} x {n})")


# ----- eigh ---------------------------------------------------------------------------------

def eigh_values_grad(grad, x, upper):
    v = eigh_vectors(x, upper)
    return matmul(v * sh.unsqueeze(grad, -2), mT(v))


def eigh_values_jvp(x, x_t, upper):
    v = eigh_vectors(x, upper)
    return red.sum(v * matmul(x_t, v), axis=-2)


def eigh_vectors_grad(grad, x, result, upper):
    """V (skew(Vᵀ gV)/2 / E) Vᵀ, E[i, j] = λ_j - λ_i (torch's linalg_eig_backward)."""
    inner = 0.5 * _skew(matmul(mT(result), grad)) / _gaps(eigh_values(x, upper))
    return matmul(result, matmul(inner, mT(result)))


def eigh_vectors_jvp(x, x_t, result, upper):
    dp = matmul(mT(result), matmul(x_t, result))
    return matmul(result, _off_diagonal(dp) / _gaps(eigh_values(x, upper)))


# ----- svd ----------------------------------------------------------------------------------

def _svd_parts(x):
    return svd_u(x), svd_s(x), svd_vh(x)


def svd_s_grad(grad, x):
    u, _, vh = _svd_parts(x)
    return matmul(u * sh.unsqueeze(grad, -2), vh)


def svd_s_jvp(x, x_t):
    u, _, vh = _svd_parts(x)
    return red.sum(u * matmul(x_t, mT(vh)), axis=-2)


def svd_u_grad(grad, x, full):
    m, n = x.shape[-2:]
    if full:
        grad = _cols(grad, 0, smaller(m, n))
    u, s, vh = _svd_parts(x)
    inner = _skew(matmul(mT(u), grad)) * sh.unsqueeze(s, -2) / _gaps(s * s)
    if _compare("svd", m, n) > 0:
        g_s = grad / sh.unsqueeze(s, -2)
        return matmul(matmul(u, inner) + g_s - matmul(u, matmul(mT(u), g_s)), vh)
    return matmul(u, matmul(inner, vh))


def svd_vh_grad(grad, x, full):
    m, n = x.shape[-2:]
    if full:
        grad = _rows(grad, 0, smaller(m, n))
    u, s, vh = _svd_parts(x)
    inner = sh.unsqueeze(s, -1) * _skew(matmul(vh, mT(grad))) / _gaps(s * s)
    if _compare("svd", m, n) < 0:
        g_s = grad / sh.unsqueeze(s, -1)
        return matmul(u, matmul(inner, vh) + g_s - matmul(matmul(g_s, mT(vh)), vh))
    return matmul(u, matmul(inner, vh))


def _full_jvp(x, full, extra):
    """Refuse the forward derivative of a full factor with columns (rows) beyond the
    reduced one's: U of a tall matrix (``extra`` 1: m > n), Vh of a wide one (-1). The
    other full factor is the reduced one (U of a wide matrix is square)."""
    m, n = x.shape[-2:]
    if full and _compare("svd", m, n) == extra:
        factor = "U of a tall" if extra > 0 else "Vh of a wide"
        raise NotDifferentiableError(f"svd: the forward-mode derivative of the full "
                                     f"{factor} matrix is not defined (its extra columns "
                                     "are arbitrary); use full_matrices=False")


def svd_u_jvp(x, x_t, full):
    """dU = U (F ∘ (dP S + S dPᵀ)) [+ (I - UUᵀ) dA V S⁻¹ when m > n], dP = Uᵀ dA V."""
    _full_jvp(x, full, 1)
    u, s, vh = _svd_parts(x)
    dp = matmul(mT(u), matmul(x_t, mT(vh)))
    sym = dp * sh.unsqueeze(s, -2) + sh.unsqueeze(s, -1) * mT(dp)
    out = matmul(u, _off_diagonal(sym) / _gaps(s * s))
    if _compare("svd", *x.shape[-2:]) > 0:
        rest = matmul(x_t, mT(vh)) / sh.unsqueeze(s, -2)
        out = out + rest - matmul(u, matmul(mT(u), rest))
    return out


def svd_vh_jvp(x, x_t, full):
    _full_jvp(x, full, -1)
    u, s, vh = _svd_parts(x)
    dp = matmul(mT(u), matmul(x_t, mT(vh)))
    sym = sh.unsqueeze(s, -1) * dp + mT(dp) * sh.unsqueeze(s, -2)
    dv = matmul(mT(vh), _off_diagonal(sym) / _gaps(s * s))
    if _compare("svd", *x.shape[-2:]) < 0:
        rest = matmul(mT(x_t), u) / sh.unsqueeze(s, -2)
        dv = dv + rest - matmul(mT(vh), matmul(vh, rest))
    return mT(dv)


# ----- qr -----------------------------------------------------------------------------------

def _qr_checked(x, complete):
    m, n = x.shape[-2:]
    order = _compare("qr", m, n)
    if complete and order > 0:
        raise NotDifferentiableError("qr: mode='complete' of a tall matrix is not "
                                     "differentiable (its extra columns of Q are arbitrary); "
                                     "use mode='reduced'")
    return order


def _qr_backward(m_mat, g_q, g_r, x, complete):
    """torch's linalg_qr_backward with M = gR Rᵀ - Qᵀ gQ (either gradient may be None)."""
    order = _qr_checked(x, complete)
    q, r = qr_q(x, complete), qr_r(x, complete)
    if order >= 0:
        t = triu(m_mat)
        b = matmul(q, pw.where(_on_diagonal(t), t, t + mT(t)))
        if g_q is not None:
            b = b + g_q
        return solve_triangular(mT(r), b, upper=False, left=False)
    m = x.shape[-2]
    b = matmul(q, tril(mT(m_mat) - m_mat))
    lead = solve_triangular(mT(_cols(r, 0, m)), b, upper=False, left=False)
    zeros = const(0, tuple(x.shape[:-1]) + (x.shape[-1] - m,))
    out = concatenate([lead, zeros], axis=-1)
    return out + matmul(q, g_r) if g_r is not None else out


def qr_q_grad(grad, x, complete):
    return _qr_backward(-matmul(mT(qr_q(x, complete)), grad), grad, None, x, complete)


def qr_r_grad(grad, x, complete):
    return _qr_backward(matmul(grad, mT(qr_r(x, complete))), None, grad, x, complete)


def _qr_square_jvp(q, r, x_t):
    """(dQ, dR) of a QR with R square: C = Qᵀ dA R⁻¹, Ω = tril(C, -1) - its transpose,
    dR = (C - Ω) R, dQ = dA R⁻¹ - Q (C - Ω)."""
    a_rinv = solve_triangular(r, x_t, upper=True, left=False)
    c = matmul(mT(q), a_rinv)
    low = tril(c, k=-1)
    upper_part = c - low + mT(low)
    return a_rinv - matmul(q, upper_part), matmul(upper_part, r)


def qr_q_jvp(x, x_t, complete):
    return _qr_jvp(x, x_t, complete, "q")


def qr_r_jvp(x, x_t, complete):
    return _qr_jvp(x, x_t, complete, "r")


def _qr_jvp(x, x_t, complete, part):
    order = _qr_checked(x, complete)
    q, r = qr_q(x, complete), qr_r(x, complete)
    if order >= 0:
        dq, dr = _qr_square_jvp(q, r, x_t)
        return dq if part == "q" else dr
    m = x.shape[-2]
    dq, dr1 = _qr_square_jvp(q, _cols(r, 0, m), _cols(x_t, 0, m))
    if part == "q":
        return dq
    r2, dy = _cols(r, m, None), _cols(x_t, m, None)
    dr2 = matmul(mT(q), dy - matmul(dq, r2))
    return concatenate([dr1, dr2], axis=-1)


# ----- triangular solve ---------------------------------------------------------------------

def triangle(a, upper, unitriangular):
    """The triangle of ``a`` a triangular solve reads (without a unit diagonal)."""
    k = 1 if unitriangular else 0
    return triu(a, k=k) if upper else tril(a, k=-k)


def _unit_triangle(a, upper, unitriangular):
    t = triangle(a, upper, unitriangular)
    return t + eye(a.shape[-1]) if unitriangular else t


def solve_triangular_grad_b(grad, a, upper, left, unitriangular):
    return solve_triangular(mT(a), grad, upper=not upper, left=left,
                            unitriangular=unitriangular)


def solve_triangular_grad_a(grad, a, b, result, upper, left, unitriangular):
    g_b = solve_triangular_grad_b(grad, a, upper, left, unitriangular)
    g_a = -matmul(g_b, mT(result)) if left else -matmul(mT(result), g_b)
    return triangle(g_a, upper, unitriangular)


def solve_triangular_jvp(a, b, a_t, b_t, result, upper, left, unitriangular):
    rhs = b_t if b_t is not None else 0.0
    if a_t is not None:
        da = triangle(a_t, upper, unitriangular)
        rhs = rhs - (matmul(da, result) if left else matmul(result, da))
    return solve_triangular(a, rhs, upper=upper, left=left, unitriangular=unitriangular)


# ----- cholesky -----------------------------------------------------------------------------

def _phi(x):
    return tril(x, k=-1) + 0.5 * _diag_embed(_diagonal(x))


def cholesky_backward(grad, result):
    """torch's cholesky_backward: S = L⁻ᵀ Φ(Lᵀ Ḡ) L⁻¹, then (S + Sᵀ)/2 (batched)."""
    left = solve_triangular(mT(result), _phi(matmul(mT(result), grad)), upper=True)
    s = solve_triangular(result, left, upper=False, left=False)
    return 0.5 * (s + mT(s))


def cholesky_jvp(x_t, result):
    """dL = L Φ(L⁻¹ dA L⁻ᵀ)."""
    inner = solve_triangular(result, x_t, upper=False)
    inner = solve_triangular(mT(result), inner, upper=True, left=False)
    return matmul(result, _phi(inner))


# ----- matrix exponential -------------------------------------------------------------------

def matrix_exp_differential(x, direction, adjoint):
    """The derivative of exp at x along ``direction`` (its adjoint: at xᵀ), read off the
    upper-right block of exp([[x, E], [0, x]]) (torch's linalg_matrix_exp_differential)."""
    base = mT(x) if adjoint else x
    n = x.shape[-1]
    zeros = const(0, tuple(direction.shape))
    top = concatenate([base, direction], axis=-1)
    bottom = concatenate([zeros, base], axis=-1)
    block = matrix_exp(concatenate([top, bottom], axis=-2))
    return _cols(_rows(block, 0, n), n, None)
