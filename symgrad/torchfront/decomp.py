"""torch's matrix decompositions and what is built on them: eigh/eigvalsh, svd/svdvals,
qr, cholesky (and cholesky_ex, cholesky_inverse, cholesky_solve), triangular solves,
matrix_exp, householder_product/ormqr and matrix norms. Each maps onto the batched ops
of ``core/ops/decomp.py`` or a composition of them; torch's results are named tuples,
rebuilt here with ``torch.return_types``. The non-symmetric eigendecomposition (complex
results) and the randomized low-rank factorizations are refused with what to do instead.
"""
import math

from ..core import ops as sgo
from ..core.constructors import zeros
from ..core.ops import decomp as dec
from ..core.ops.indexing import Slice, index
from ..core.structure import triangle
from ..errors import ParameterError
from .dispatch import (rank_of, refuse, reject, shape_of,
                       torch_op, unsupported)


def _returns(name, values):
    import torch
    return getattr(torch.return_types, name)(values)


def _mT(x):
    return sgo.swapaxes(x, -1, -2)


def _upper(name, uplo):
    if uplo not in ("L", "U", "l", "u"):
        raise ParameterError(f"{name}: UPLO must be 'L' or 'U', got {uplo!r}")
    return uplo in ("U", "u")


# ----- eigh ---------------------------------------------------------------------------------

@torch_op("linalg.eigh")
def eigh(A, UPLO="L", *, out=None):
    reject("torch.linalg.eigh", out=out)
    upper = _upper("torch.linalg.eigh", UPLO)
    return _returns("linalg_eigh", (dec.eigh_values(A, upper), dec.eigh_vectors(A, upper)))


@torch_op("linalg.eigvalsh")
def eigvalsh(A, UPLO="L", *, out=None):
    reject("torch.linalg.eigvalsh", out=out)
    return dec.eigh_values(A, _upper("torch.linalg.eigvalsh", UPLO))


refuse("the eigenvalues and eigenvectors of a non-symmetric matrix are complex, and symgrad "
       "formulas are real; for a symmetric matrix use torch.linalg.eigh / eigvalsh, for "
       "singular values torch.linalg.svd / svdvals",
       "linalg.eig", "linalg.eigvals", "torch.eig", "Tensor.eig")
refuse("randomized low-rank factorizations draw random projections, so they have no "
       "deterministic formula; use torch.linalg.svd and keep the first q singular triplets "
       "(or center the data and do the same for PCA)",
       "torch.svd_lowrank", "torch.pca_lowrank")


# ----- svd ----------------------------------------------------------------------------------

@torch_op("linalg.svd")
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    reject("torch.linalg.svd", out=out)
    full = bool(full_matrices)
    return _returns("linalg_svd", (dec.svd_u(A, full), dec.svd_s(A), dec.svd_vh(A, full)))


@torch_op("torch.svd", "Tensor.svd")
def svd(input, some=True, compute_uv=True, *, out=None):
    """torch.svd returns V (not Vh); without compute_uv, U and V are zero-filled."""
    reject("torch.svd", out=out)
    s = dec.svd_s(input)
    if not compute_uv:
        m, n = shape_of(input)[-2:]
        batch = tuple(shape_of(input)[:-2])
        return _returns("svd", (zeros(batch + (m, m)), s, zeros(batch + (n, n))))
    full = not some
    return _returns("svd", (dec.svd_u(input, full), s, _mT(dec.svd_vh(input, full))))


@torch_op("linalg.svdvals")
def svdvals(A, *, driver=None, out=None):
    reject("torch.linalg.svdvals", out=out)
    return dec.svd_s(A)


# ----- qr -----------------------------------------------------------------------------------

@torch_op("linalg.qr")
def linalg_qr(A, mode="reduced", *, out=None):
    reject("torch.linalg.qr", out=out)
    if mode not in ("reduced", "complete", "r"):
        raise ParameterError(f"torch.linalg.qr: mode must be 'reduced', 'complete' or 'r', "
                             f"got {mode!r}")
    complete = mode == "complete"
    r = dec.qr_r(A, complete)
    if mode == "r":
        return _returns("linalg_qr", (zeros((0,)), r))
    return _returns("linalg_qr", (dec.qr_q(A, complete), r))


@torch_op("torch.qr", "Tensor.qr")
def qr(input, some=True, *, out=None):
    reject("torch.qr", out=out)
    complete = not some
    return _returns("qr", (dec.qr_q(input, complete), dec.qr_r(input, complete)))


# ----- cholesky -----------------------------------------------------------------------------

def _cholesky(A, upper):
    """L with A = L Lᵀ from A's lower triangle, or with ``upper`` U = Lᵀ from its upper
    triangle (LAPACK's uplo='U', what torch reads): the lower factor of Aᵀ, transposed."""
    if upper:
        return _mT(sgo.cholesky(_mT(A)))
    return sgo.cholesky(A)


@torch_op("linalg.cholesky")
def linalg_cholesky(A, *, upper=False, out=None):
    reject("torch.linalg.cholesky", out=out)
    return _cholesky(A, upper)


@torch_op("torch.cholesky", "Tensor.cholesky")
def cholesky(input, upper=False, *, out=None):
    reject("torch.cholesky", out=out)
    return _cholesky(input, upper)


@torch_op("linalg.cholesky_ex")
def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    reject("torch.linalg.cholesky_ex", out=out)
    # info is 0: the compiled code raises where the factorization fails
    return _returns("linalg_cholesky_ex", (_cholesky(A, upper),
                                           zeros(tuple(shape_of(A)[:-2]))))


def _gram_inverse_factor(L, upper):
    """C with C Cᵀ = L Lᵀ (Uᵀ U when ``upper``), its product taken over the whole of L as
    torch's gradient does, so solves with L Lᵀ become two triangular solves with C."""
    if triangle(L) == ("upper" if upper else "lower"):
        # triangular by construction (a Cholesky factor, tril/triu): L itself is C, the
        # gradient over its other triangle is zero anyway (it is no input), and the solves
        # need no second factorisation
        return _mT(L) if upper else L
    gram = sgo.matmul(_mT(L), L) if upper else sgo.matmul(L, _mT(L))
    return sgo.cholesky(gram)


@torch_op("torch.cholesky_inverse", "Tensor.cholesky_inverse")
def cholesky_inverse(L, upper=False, *, out=None):
    reject("torch.cholesky_inverse", out=out)
    c = _gram_inverse_factor(L, upper)
    c_inv = dec.solve_triangular(c, sgo.eye(shape_of(L)[-1]), upper=False)
    return sgo.matmul(_mT(c_inv), c_inv)


@torch_op("torch.cholesky_solve", "Tensor.cholesky_solve")
def cholesky_solve(B, L, upper=False, *, out=None):
    reject("torch.cholesky_solve", out=out)
    c = _gram_inverse_factor(L, upper)
    y = dec.solve_triangular(c, B, upper=False)
    return dec.solve_triangular(_mT(c), y, upper=True)


# ----- triangular solves --------------------------------------------------------------------

@torch_op("linalg.solve_triangular")
def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    reject("torch.linalg.solve_triangular", out=out)
    return dec.solve_triangular(A, B, upper=bool(upper), left=bool(left),
                                unitriangular=bool(unitriangular))


@torch_op("torch.triangular_solve", "Tensor.triangular_solve")
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """(solution of op(A) X = b, A); the second result is A itself, as torch's clone."""
    reject("torch.triangular_solve", out=out)
    a = _mT(A) if transpose else A
    x = dec.solve_triangular(a, b, upper=bool(upper) != bool(transpose),
                             unitriangular=bool(unitriangular))
    return _returns("triangular_solve", (x, A))


# ----- matrix exponential -------------------------------------------------------------------

@torch_op("linalg.matrix_exp", "torch.matrix_exp", "Tensor.matrix_exp")
def matrix_exp(A):
    return dec.matrix_exp(A)


# ----- Householder products -----------------------------------------------------------------

def _column(x, j):
    entries = [Slice(0, None, 1)] * (rank_of(x) - 1) + [j]
    return index(x, tuple(entries))


def _reflectors(A, tau):
    """The product H_0 H_1 ... H_{k-1} (m x m), H_j = I - tau_j v_j v_jᵀ with v_j the
    j-th column of A below its diagonal and 1 on it (LAPACK's geqrf storage)."""
    import numpy
    m = shape_of(A)[-2]
    k = shape_of(tau)[-1]
    q = sgo.eye(m)
    for j in range(k):
        below = numpy.arange(m) > j
        v = _column(A, j) * below.astype(float) + (numpy.arange(m) == j).astype(float)
        t = sgo.unsqueeze(sgo.unsqueeze(_column(tau, j), -1), -1)
        h = sgo.eye(m) - t * (sgo.unsqueeze(v, -1) * sgo.unsqueeze(v, -2))
        q = sgo.matmul(q, h)
    return q


@torch_op("linalg.householder_product", "torch.orgqr", "Tensor.orgqr")
def householder_product(A, tau, *, out=None):
    reject("torch.linalg.householder_product", out=out)
    m, n = shape_of(A)[-2:]
    q = _reflectors(A, tau)
    if n == m:
        return q
    return index(q, tuple([Slice(0, None, 1)] * (rank_of(q) - 1) + [Slice(0, n, 1)]))


@torch_op("torch.ormqr", "Tensor.ormqr")
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    reject("torch.ormqr", out=out)
    q = _reflectors(input, tau)
    if transpose:
        q = _mT(q)
    return sgo.matmul(q, other) if left else sgo.matmul(other, q)


# ----- matrix norms -------------------------------------------------------------------------

def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, name="torch.linalg.matrix_norm"):
    """The Frobenius, nuclear, spectral (2, -2) or induced (1, -1, inf, -inf) norm over
    the two axes ``dim``."""
    rank = rank_of(A)
    rows, cols = (int(d) % rank for d in dim)
    if rows == cols:
        raise ParameterError(f"{name}: dim must name two different axes, got {dim!r}")
    rest = [a for a in range(rank) if a not in (rows, cols)]
    x = sgo.transpose(A, tuple(rest) + (rows, cols))
    if ord == "fro":
        out = sgo.norm(x, axis=(-2, -1))
    elif ord == "nuc":
        out = sgo.sum(dec.svd_s(x), axis=-1)
    elif ord in (2, -2):
        s = dec.svd_s(x)
        out = sgo.amax(s, axis=-1) if ord == 2 else sgo.amin(s, axis=-1)
    elif ord in (1, -1, math.inf, -math.inf):
        sums = sgo.sum(sgo.abs(x), axis=-2 if ord in (1, -1) else -1)
        out = sgo.amax(sums, axis=-1) if ord > 0 else sgo.amin(sums, axis=-1)
    else:
        raise unsupported(name, (A,), why=f"ord={ord!r}: matrix norms are 'fro', 'nuc', 2, "
                          "-2, 1, -1, inf and -inf")
    if keepdim:
        for a in sorted((rows, cols)):
            out = sgo.unsqueeze(out, a)
    return out


@torch_op("linalg.matrix_norm")
def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    reject("torch.linalg.matrix_norm", out=out, dtype=dtype)
    return matrix_norm(A, ord, dim, keepdim)


@torch_op("linalg.cond")
def cond(A, p=None, *, out=None):
    """The 2-norm condition number σ_max/σ_min (p=None or 2; -2 gives its inverse)."""
    reject("torch.linalg.cond", out=out)
    if p not in (None, 2, -2):
        raise unsupported("torch.linalg.cond", (A,), why=f"p={p!r}: only the spectral "
                          "condition number (p=None, 2 or -2) is mapped")
    s = dec.svd_s(A)
    ratio = sgo.amax(s, axis=-1) / sgo.amin(s, axis=-1)
    return ratio if p != -2 else 1.0 / ratio

