"""Linear-algebra ops: dot, outer, trace, diagonal/diag, eye, inverse, det, logdet,
slogdet, solve, cholesky, tril/triu and the 2-norm. Like every op, each is polymorphic (records a node on
symbolic Tensors, computes on numbers, arrays and tensors); derivatives live in
rules/linalg.yaml.
"""
import sympy

from . import sympy_funcs as sf
from .errors import ShapeError
from .graph import Tensor, leaf
from .ops import _reduce_expr, _reduce_params, _reduce_shape, apply, defop, sign
from .shapes import as_dim, dims_match, fmt_shape


def _vectors(op, shapes, same_length):
    for s in shapes:
        if len(s) != 1:
            raise ShapeError(f"{op}: expects vectors (1-D), got shapes "
                             f"{', '.join(fmt_shape(t) for t in shapes)}; use matmul for matrices")
    if same_length and not dims_match(shapes[0][0], shapes[1][0]):
        raise ShapeError(f"{op}: vectors of different lengths {fmt_shape(shapes[0])} and "
                         f"{fmt_shape(shapes[1])}")


def _square(op, shape):
    if len(shape) != 2 or not dims_match(shape[0], shape[1]):
        raise ShapeError(f"{op}: expects a square matrix, got shape {fmt_shape(shape)}")


def _dot_shape(op, shapes, attrs):
    _vectors(op, shapes, True)
    return ()


def _outer_shape(op, shapes, attrs):
    _vectors(op, shapes, False)
    return (shapes[0][0], shapes[1][0])


def _square_to(result):
    def shape(op, shapes, attrs):
        _square(op, shapes[0])
        return result(shapes[0])
    return shape


def _diag_shape(op, shapes, attrs):
    _vectors(op, shapes, False)
    return (shapes[0][0], shapes[0][0])


def _solve_shape(op, shapes, attrs):
    a, b = shapes
    _square(op, a)
    if len(b) not in (1, 2) or not dims_match(a[0], b[0]):
        raise ShapeError(f"solve: A has shape {fmt_shape(a)}, so B must have shape "
                         f"({a[0]},) or ({a[0]}, k); got {fmt_shape(b)}")
    return b


def _matrix_shape(op, shapes, attrs):
    if len(shapes[0]) != 2:
        raise ShapeError(f"{op}: expects a matrix, got shape {fmt_shape(shapes[0])}")
    return shapes[0]


def _band_params(op, shapes, k=0):
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"{op}: the diagonal offset k must be an int, got {k!r}")
    return (("k", k),)


defop("dot", 2, lambda attrs, x, y: sf.DotOp(x, y), shape=_dot_shape)
defop("outer", 2, lambda attrs, x, y: sf.OuterOp(x, y), shape=_outer_shape)
defop("trace", 1, lambda attrs, x: sf.TraceOp(x), shape=_square_to(lambda s: ()))
defop("diagonal", 1, lambda attrs, x: sf.DiagonalOp(x), shape=_square_to(lambda s: (s[0],)))
defop("diag", 1, lambda attrs, x: sf.DiagOp(x), shape=_diag_shape)
defop("inverse", 1, lambda attrs, x: sf.InverseOp(x), shape=_square_to(lambda s: s))
defop("det", 1, lambda attrs, x: sf.DetOp(x), shape=_square_to(lambda s: ()))
defop("logdet", 1, lambda attrs, x: sf.LogdetOp(x), shape=_square_to(lambda s: ()))
defop("logabsdet", 1, lambda attrs, x: sf.LogAbsDetOp(x), shape=_square_to(lambda s: ()))
defop("solve", 2, lambda attrs, a, b: sf.SolveOp(a, b), shape=_solve_shape)
defop("cholesky", 1, lambda attrs, x: sf.CholeskyOp(x), shape=_square_to(lambda s: s))
defop("tril", 1, lambda attrs, x: sf.TrilOp(x, sympy.Integer(attrs["k"])),
      shape=_matrix_shape, params=_band_params)
defop("triu", 1, lambda attrs, x: sf.TriuOp(x, sympy.Integer(attrs["k"])),
      shape=_matrix_shape, params=_band_params)
defop("norm", 1, _reduce_expr(sf.NormOp), shape=_reduce_shape, params=_reduce_params)
defop("eye", 0, lambda attrs: sf.EyeOp(sympy.sympify(attrs["n"])),
      shape=lambda op, s, a: (a["n"], a["n"]))


def dot(x, y):
    """xᵀy for two vectors."""
    return apply("dot", x, y)


def outer(x, y):
    """x yᵀ for two vectors."""
    return apply("outer", x, y)


def trace(x):
    return apply("trace", x)


def diagonal(x):
    """The diagonal of a square matrix, as a vector."""
    return apply("diagonal", x)


def diag(x):
    """Like ``numpy.diag``: a vector becomes a diagonal matrix, a matrix gives its diagonal."""
    if getattr(x, "ndim", None) == 2 or (not isinstance(x, Tensor) and hasattr(x, "shape")
                                         and len(x.shape) == 2):
        return diagonal(x)
    return apply("diag", x)


def inverse(x):
    return apply("inverse", x)


inv = inverse


def det(x):
    return apply("det", x)


def logdet(x):
    """log det X; nan when det X < 0 (like ``torch.logdet``)."""
    return apply("logdet", x)


def slogdet(x):
    """(sign of det X, log |det X|), like ``torch.linalg.slogdet``; the sign carries no
    gradient."""
    return sign(det(x)), logabsdet(x)


def logabsdet(x):
    """log |det X|."""
    return apply("logabsdet", x)


def solve(a, b):
    """A⁻¹B without forming the inverse."""
    return apply("solve", a, b)


def cholesky(x):
    """The lower-triangular L with L Lᵀ = x, for a symmetric positive-definite x (like
    ``torch.linalg.cholesky``, whose gradient treats x as symmetric)."""
    return apply("cholesky", x)


def tril(x, k=0):
    """x with the elements above the k-th diagonal zeroed (``torch.tril``)."""
    return apply("tril", x, k=k)


def triu(x, k=0):
    """x with the elements below the k-th diagonal zeroed (``torch.triu``)."""
    return apply("triu", x, k=k)


def norm(x, axis=None, keepdims=False):
    """The 2-norm of a vector, the Frobenius norm of a matrix, or vector norms along
    ``axis``."""
    return apply("norm", x, axis=axis, keepdims=keepdims)


def eye(n):
    """The n x n identity matrix (n an int or a symbolic dim name)."""
    n = as_dim(n)
    return leaf("eye", (("n", n),), (n, n), "float")
