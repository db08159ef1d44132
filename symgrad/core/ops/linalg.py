"""Linear algebra: matmul, dot, outer, trace, diagonal/diag, eye, inverse, det, logdet,
slogdet, solve, cholesky, tril/triu (the norms: ``norms.py``). Derivatives: rules/linalg.yaml.
"""
from typing import Callable

import numpy
import sympy
from ...errors import ParameterError, ShapeError
from ..build import apply, leaf, make, reference_run
from ..graph import Tensor
from ..opdef import FunctionT, defop, public
from ..shapes import as_dim, broadcast_shapes, dims_match, fmt_shape
from .. import simplify as simp
from . import batching, elements, reductions, shape as shape_ops
from .indexing import Slice, index
from .pointwise import sign
from ..types import Dim, Result, TensorLike


def _checked(fn, what, module):
    """A spelling calling ``fn`` (numpy.linalg.inv, torch.linalg.solve, ...) through a
    helper that turns the library's LinAlgError into an ArgumentError saying what is
    wrong and what to do."""
    helper = "_" + fn.replace(".", "_")
    error = "numpy.linalg.LinAlgError" if module == "numpy" else "torch.linalg.LinAlgError"
    source = (f"def {helper}(*args):\n"
              f"    try:\n"
              f"        return {fn}(*args)\n"
              f"    except {error} as e:\n"
              f"        raise ArgumentError('{fn}: ' + str(e) + ' ({what})') from None")

    def spell(**fields):
        return f"{helper}({', '.join(format(v) for v in fields.values())})", {helper: source}
    return spell


SINGULAR = ("a singular matrix has no inverse; the gradients of det and logdet use it, so "
            "symgrad cannot differentiate them there: move the input off the singular set")
NOT_SPD = "cholesky needs a symmetric positive-definite matrix"


def _call_latex(name):
    """The LaTeX template of ``name(x)``."""
    return r"\operatorname{{" + name + r"}}\left({x}\right)"


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


def _square_batch(op, shape):
    if len(shape) < 2 or not dims_match(shape[-1], shape[-2]):
        raise ShapeError(f"{op}: expects a square matrix or a batch of them, shape (..., n, n); "
                         f"got shape {fmt_shape(shape)}")


def batched_square_to(result):
    """The shape rule of an op of a batch of square matrices (leading dims of any size,
    0 included): ``result(shape)`` once checked."""
    def shape(op, shapes, attrs):
        _square_batch(op, shapes[0])
        return result(shapes[0])
    return shape


def per_matrix(fn, rank=2):
    """The element form applying ``fn`` to each matrix of a batch (``rank`` 2: fn
    returns a matrix, 0: a scalar)."""
    def form(ctx, x):
        out = numpy.empty(x.shape[:-2] + x.shape[x.ndim - rank:], dtype=object)
        for idx in numpy.ndindex(*x.shape[:-2]):
            out[idx] = fn(x[idx])
        return out if out.ndim else out[()]
    return form


def same_op(node, ins, size):
    """The batching rule of an op of a batch of matrices: the new axis is one more."""
    return make(node.op, (ins[0][0],), node.params)


def square_to(result):
    """The shape rule of an op of a square matrix: ``result(shape)`` once checked."""
    def shape(op, shapes, attrs):
        _square(op, shapes[0])
        return result(shapes[0])
    return shape


# ----- products ------------------------------------------------------------------------------

def _matmul_shape(op, shapes, attrs):
    a, b = shapes
    if not a or not b:
        raise ShapeError(f"matmul: both operands need at least one dim, got shapes "
                         f"{fmt_shape(a)} and {fmt_shape(b)}; use * for scalars")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if not dims_match(k_a, k_b):
        raise ShapeError(
            f"matmul: inner dims differ: shapes {fmt_shape(a)} @ {fmt_shape(b)} "
            f"({k_a} vs {k_b}); transpose one operand or fix the shapes")
    if len(a) <= 2 and len(b) <= 2:
        return a[:-1] + b[1:] if len(b) == 2 else a[:-1]
    batch = broadcast_shapes(a[:-2], b[:-2], op=op)
    rows = (a[-2],) if len(a) >= 2 else ()
    cols = (b[-1],) if len(b) >= 2 else ()
    return batch + rows + cols


def _matmul_batch(node, ins, size):
    """Batched x @ y with matrix products of rank 2 at most: the batch axis is folded
    into the rows (or columns) of the batched operand."""
    reshape, transpose = shape_ops.reshape, shape_ops.transpose
    unsqueeze, sum = shape_ops.unsqueeze, reductions.sum
    (x, bx), (y, by) = ins
    xs = x.shape[1:] if bx else x.shape
    ys = y.shape[1:] if by else y.shape
    if len(xs) > 2 or len(ys) > 2:
        return None
    if bx and by:
        if len(xs) == 1 and len(ys) == 1:
            return sum(x * y, axis=1)
        if len(ys) == 1:
            return sum(x * unsqueeze(y, 1), axis=2)
        if len(xs) == 1:
            return sum(unsqueeze(x, 2) * y, axis=1)
        return sum(unsqueeze(x, 3) * unsqueeze(y, 1), axis=2)
    if bx:
        if len(xs) == 1:
            return matmul(x, y)                      # (B, k) @ y
        rows = matmul(reshape(x, (size * xs[0], xs[1])), y)
        return reshape(rows, (size,) + node.shape)
    if len(ys) == 1:
        return matmul(y, transpose(x)) if len(xs) == 2 else matmul(y, x)
    # x unbatched, y of shape (B, k, n): contract k with the batch folded into columns.
    cols = reshape(transpose(y, (1, 0, 2)), (ys[0], size * ys[1]))
    out = matmul(x, cols)
    if len(xs) == 1:
        return reshape(out, (size, ys[1]))
    return transpose(reshape(out, (xs[0], size, ys[1])), (1, 0, 2))


def _matmul_simplify(inputs, attrs, shape):
    """The local algebra of ``simplify``, then: a product with an outer product stays rank
    one, M (u vᵀ) = (M u) vᵀ and (u vᵀ) N = u (vᵀ N), a vector times u vᵀ a scaled vector."""
    from ..structure import rank_one_factors
    done, (x, y) = simp.matmul(inputs, attrs, shape), inputs
    if done is not None or len(x.shape) > 2 or len(y.shape) > 2:
        return done
    if (uv := rank_one_factors(y)) is not None:
        return outer(matmul(x, uv[0]), uv[1]) if len(x.shape) == 2 else dot(x, uv[0]) * uv[1]
    if (uv := rank_one_factors(x)) is not None:
        return outer(uv[0], matmul(uv[1], y)) if len(y.shape) == 2 else uv[0] * dot(uv[1], y)


@defop("matmul", ("x", "y"), shape=_matmul_shape, simplify=_matmul_simplify,
       precedence="MatMul", latex_precedence="Product",
       text="{x:mul}@{y:pow}", latex="{x:mul} {y:mul}", numpy="{x:mul} @ {y:pow}",
       torch="{x:mul} @ {y:pow}", matrix=lambda m, node, x, y: m.matmul(node, x, y),
       elements=lambda ctx, x, y: numpy.matmul(x, y), batch=_matmul_batch,
       torch_names=("torch.matmul", "torch.linalg.matmul", "torch.Tensor.matmul"))
def matmul(x: TensorLike, y: TensorLike) -> Result:
    """Matrix product with NumPy's rules for 1-D operands."""
    return apply("matmul", x, y)


def _dot_shape(op, shapes, attrs):
    _vectors(op, shapes, True)
    return ()


def _dot_batch(node, ins, size):
    (x, bx), (y, by) = ins
    if bx and by:
        return reductions.sum(x * y, axis=1)
    return matmul(x, y) if bx else matmul(y, x)


@defop("dot", ("x", "y"), shape=_dot_shape, text="dot({x}, {y})", latex_precedence="Product",
       latex="{x:pow}^{{T}} {y:mul}", numpy="numpy.dot({x}, {y})", torch="torch.dot({x}, {y})",
       matrix=lambda m, node, x, y: m.mm(m.T(x), y),
       elements=lambda ctx, x, y: numpy.sum(x * y), batch=_dot_batch)
def dot(x: TensorLike, y: TensorLike) -> Result:
    """xᵀy for two vectors."""
    return apply("dot", x, y)


def _outer_shape(op, shapes, attrs):
    _vectors(op, shapes, False)
    return (shapes[0][0], shapes[1][0])


def _outer_batch(node, ins, size):
    (x, bx), (y, by) = ins
    col = shape_ops.unsqueeze(x, 2 if bx else 1)
    row = shape_ops.unsqueeze(y, 1) if by else y
    return col * row


@defop("outer", ("x", "y"), shape=_outer_shape, text="outer({x}, {y})", latex_precedence="Product",
       latex="{x:mul} {y:pow}^{{T}}", numpy="numpy.outer({x}, {y})",
       torch="torch.outer({x}, {y})", matrix=lambda m, node, x, y: m.mm(x, m.T(y)),
       elements=lambda ctx, x, y: numpy.multiply.outer(x, y), batch=_outer_batch,
       torch_names=("torch.outer", "torch.ger", "torch.Tensor.outer", "torch.Tensor.ger"))
def outer(x: TensorLike, y: TensorLike) -> Result:
    """x yᵀ for two vectors."""
    return apply("outer", x, y)


# ----- diagonals ------------------------------------------------------------------------------

def _trace_shape(op, shapes, attrs):
    s = shapes[0]
    concrete = all(sympy.sympify(d).is_Integer for d in s)
    if len(s) != 2 or not (concrete or dims_match(s[0], s[1])):
        raise ShapeError(f"{op}: expects a matrix (square if its dims are symbolic), got "
                         f"shape {fmt_shape(s)}")
    return ()


def _trace_batch(node, ins, size):
    m, n = node.inputs[0].shape
    k = m if dims_match(m, n) else min(int(m), int(n))
    x = index(ins[0][0], (Slice(0, None, 1), Slice(0, k, 1), Slice(0, k, 1)))
    return reductions.sum(x * eye(k), axis=(1, 2))


@defop("trace", ("x",), shape=_trace_shape, text="trace({x})",
       latex=_call_latex("tr"), numpy="numpy.trace({x})", torch="torch.trace({x})",
       matrix=lambda m, node, x: m.fn("tr", x),
       elements=lambda ctx, x: numpy.sum(numpy.diagonal(x)), batch=_trace_batch,
       torch_names=("torch.trace", "torch.Tensor.trace"))
def trace(x: TensorLike) -> Result:
    """The sum of the diagonal of a matrix (square or not, like ``torch.trace``)."""
    return apply("trace", x)


def _diagonal_batch(node, ins, size):
    return reductions.sum(ins[0][0] * eye(node.shape[0]), axis=2)


@defop("diagonal", ("x",), shape=square_to(lambda s: (s[0],)), text="diagonal({x})",
       latex=_call_latex("diag"), numpy="numpy.diagonal({x}).copy()",
       torch="torch.diagonal({x}).clone()", matrix=lambda m, node, x: m.diag(x),
       elements=lambda ctx, x: numpy.diagonal(x).copy(), batch=_diagonal_batch)
def diagonal(x: TensorLike) -> Result:
    """The diagonal of a square matrix, as a vector."""
    return apply("diagonal", x)


def _diag_shape(op, shapes, attrs):
    _vectors(op, shapes, False)
    return (shapes[0][0], shapes[0][0])


def _diag_elements(ctx, x):
    out = elements.zeros((len(x), len(x)))
    for i, v in enumerate(x):
        out[i, i] = v
    return out


def _diag_batch(node, ins, size):
    return shape_ops.unsqueeze(ins[0][0], 2) * eye(node.shape[0])


@defop("diag", ("x",), shape=_diag_shape, text="diag({x})", latex=_call_latex("diag"),
       numpy="numpy.diag({x})", torch="torch.diag({x})",
       matrix=lambda m, node, x: m.diag_matrix(node, x),
       elements=_diag_elements, batch=_diag_batch)
def diag(x: TensorLike) -> Result:
    """Like ``numpy.diag``: a vector becomes a diagonal matrix, a matrix gives its diagonal."""
    if getattr(x, "ndim", None) == 2 or (not isinstance(x, Tensor) and hasattr(x, "shape")
                                         and len(x.shape) == 2):
        return diagonal(x)
    return apply("diag", x)


def _eye_elements(ctx):
    n = ctx.shape[0]
    out = elements.zeros((n, n))
    for i in range(n):
        out[i, i] = sympy.S.One
    return out


@defop("eye", (), shape=lambda op, s, a: (a["n"], a["n"]), differentiable=False,
       text="eye({n})", latex="I_{{{n}}}", numpy="numpy.eye({n})",
       torch="torch.eye({n}, dtype=_dt, device=_dev)", matrix=lambda m, node: m.eye(),
       elements=_eye_elements)
def eye(n: Dim) -> Result:
    """The n x n identity matrix (n an int or a symbolic dim name)."""
    ref = reference_run()
    if ref is not None:
        return ref.torch.eye(ref.size(n), dtype=ref.torch.float64)
    n = as_dim(n)
    return leaf("eye", (("n", n),), (n, n), "float")


# ----- inverses and determinants ---------------------------------------------------------------

@defop("inverse", ("x",), shape=batched_square_to(lambda s: s), batch=same_op, text="inv({x})",
       latex_precedence="Pow",
       latex="{x:pow}^{{-1}}", numpy=_checked("numpy.linalg.inv", SINGULAR, "numpy"),
       torch=_checked("torch.linalg.inv", SINGULAR, "torch"),
       matrix=lambda m, node, x: m.inv(x),
       elements=per_matrix(lambda x: elements.array(elements.matrix(x).inv(), x.shape)),
       torch_names=("torch.inverse", "torch.linalg.inv", "torch.Tensor.inverse"))
def inverse(x: TensorLike) -> Result:
    """The inverse of a square matrix."""
    return apply("inverse", x)


@public
def inv(x: TensorLike) -> Result:
    """The inverse of a square matrix (``numpy.linalg.inv``)."""
    return inverse(x)


@defop("det", ("x",), shape=batched_square_to(lambda s: s[:-2]), batch=same_op,
       text="det({x})",
       latex=_call_latex("det"), numpy="numpy.linalg.det({x})", torch="torch.linalg.det({x})",
       matrix=lambda m, node, x: m.fn("det", x),
       elements=per_matrix(lambda x: elements.matrix(x).det(), 0),
       torch_names=("torch.det", "torch.linalg.det", "torch.Tensor.det"))
def det(x: TensorLike) -> Result:
    """The determinant of a square matrix."""
    return apply("det", x)


_LOGDET = ("def _logdet(x):\n"
           "    sign, logabs = numpy.linalg.slogdet(x)\n"
           "    at_zero = numpy.where(sign == 0, -numpy.inf, numpy.nan)\n"
           "    return numpy.where(sign > 0, logabs, at_zero)[()]")


@defop("logdet", ("x",), shape=batched_square_to(lambda s: s[:-2]), batch=same_op,
       text="logdet({x})", latex_precedence="Mul",
       latex=r"\log \det {x:pow}", numpy=("_logdet({x})", {"_logdet": _LOGDET}),
       torch="torch.logdet({x})", matrix=lambda m, node, x: m.fn("log det", x),
       elements=per_matrix(lambda x: sympy.log(elements.matrix(x).det()), 0),
       torch_names=("torch.logdet", "torch.Tensor.logdet"))
def logdet(x: TensorLike) -> Result:
    """log det X; nan when det X < 0 (like ``torch.logdet``)."""
    return apply("logdet", x)


@defop("logabsdet", ("x",), shape=batched_square_to(lambda s: s[:-2]), batch=same_op,
       text="logabsdet({x})",
       latex=r"\log \left|\det {x}\right|", numpy="numpy.linalg.slogdet({x})[1]",
       torch="torch.linalg.slogdet({x})[1]", matrix=lambda m, node, x: m.fn("log |det|", x),
       elements=per_matrix(lambda x: sympy.log(sympy.Abs(elements.matrix(x).det())), 0))
def logabsdet(x: TensorLike) -> Result:
    """log |det X|."""
    return apply("logabsdet", x)


@public
def slogdet(x: TensorLike) -> Result:
    """(sign of det X, log |det X|), like ``torch.linalg.slogdet``; the sign carries no
    gradient."""
    return sign(det(x)), logabsdet(x)


def _solve_shape(op, shapes, attrs):
    a, b = shapes
    _square_batch(op, a)
    if len(b) == 1 and dims_match(a[-1], b[0]):
        return a[:-1]
    if len(b) < 2 or not dims_match(a[-1], b[-2]):
        raise ShapeError(f"solve: A has shape {fmt_shape(a)}, so B must have shape "
                         f"({a[-1]},) or (..., {a[-1]}, k); got {fmt_shape(b)}")
    return broadcast_shapes(a[:-2], b[:-2], op=op) + b[-2:]


def _solve_elements(ctx, a, b):
    vector = b.ndim == 1
    cols = b.reshape(b.shape + (1,)) if vector else b
    batch = tuple(ctx.shape[:-1] if vector else ctx.shape[:-2])
    a = numpy.broadcast_to(a, batch + a.shape[-2:])
    cols = numpy.broadcast_to(cols, batch + cols.shape[-2:])
    out = numpy.empty(batch + cols.shape[-2:], dtype=object)
    for idx in numpy.ndindex(*batch):
        out[idx] = elements.array(elements.matrix(a[idx]).LUsolve(elements.matrix(cols[idx])),
                                  cols.shape[-2:])
    return out.reshape(ctx.shape)


def _solve_batch(node, ins, size):
    """solve(A, B) with a new leading axis on A and/or B: operands lifted to the result's
    rank (a batched vector B becomes a batch of columns)."""
    (a, ba), (b, bb) = ins
    vector = len(node.inputs[1].shape) == 1
    rank = len(node.shape) + (1 if vector else 0)
    if ba:
        a = batching.lift(a, rank, size)
    if bb and vector:
        cols = batching.lift(shape_ops.unsqueeze(b, -1), rank, size)
        return shape_ops.squeeze(make("solve", (a, cols)), -1)
    if bb:
        b = batching.lift(b, rank, size)
    return make("solve", (a, b))


_SOLVE_TORCH = ("def _torch_linalg_solve(a, b):\n"
                "    if b.ndim > 1 and b.ndim == a.ndim - 1:\n"
                "        b = b.unsqueeze(0)\n"
                "    try:\n"
                "        return torch.linalg.solve(a, b)\n"
                "    except torch.linalg.LinAlgError as e:\n"
                "        raise ArgumentError('torch.linalg.solve: ' + str(e) + ' (" + SINGULAR
                + ")') from None")


def _solve_structured(inputs, attrs, shape):
    """A solve against a matrix that is triangular by construction (a Cholesky factor,
    tril/triu, their transposes: ``core.structure``) is a triangular solve: O(n²) per
    column instead of an LU factorisation, and its gradients are triangular solves too."""
    from ..structure import triangle
    a, b = inputs
    side = triangle(a)
    if side is None:
        return None
    from .decomp import solve_triangular
    upper = side == "upper"
    if len(b.shape) == 1:
        return shape_ops.squeeze(solve_triangular(a, shape_ops.unsqueeze(b, -1), upper=upper),
                                 -1)
    return solve_triangular(a, b, upper=upper)


@defop("solve", ("a", "b"), shape=_solve_shape, text="solve({a}, {b})",
       latex_precedence="Product", simplify=_solve_structured,
       latex="{a:pow}^{{-1}} {b:mul}", numpy=_checked("numpy.linalg.solve", SINGULAR, "numpy"),
       torch=("_torch_linalg_solve({a}, {b})", {"_torch_linalg_solve": _SOLVE_TORCH}),
       matrix=lambda m, node, a, b: m.mm(m.inv(a), b),
       elements=_solve_elements, batch=_solve_batch)
def solve(a: TensorLike, b: TensorLike) -> Result:
    """A⁻¹B without forming the inverse, for a matrix or a batch of them A (..., n, n) and
    B of shape (n,) or (..., n, k), batch dims broadcast (``numpy.linalg.solve``)."""
    return apply("solve", a, b)


def _cholesky_elements(ctx, x):
    # (A + Aᵀ)/2: torch's convention, the gradient of a symmetric argument
    sym = (elements.matrix(x) + elements.matrix(x).T) / 2
    return elements.array(sym.cholesky(hermitian=False), x.shape)


def _batched_square(op, shapes, attrs):
    s = shapes[0]
    if len(s) < 2 or not dims_match(s[-1], s[-2]):
        raise ShapeError(f"{op}: expects square matrices (..., n, n), got shape {fmt_shape(s)}")
    return s


@defop("cholesky", ("x",), shape=_batched_square, text="cholesky({x})",
       batch=batching.over_leading_axes,
       latex=_call_latex("chol"), numpy=_checked("numpy.linalg.cholesky", NOT_SPD, "numpy"),
       torch=_checked("torch.linalg.cholesky", NOT_SPD, "torch"),
       matrix=lambda m, node, x: m.fn("chol", x),
       elements=_cholesky_elements)
def cholesky(x: TensorLike) -> Result:
    """The lower-triangular L with L Lᵀ = x, for a symmetric positive-definite x (like
    ``torch.linalg.cholesky``, whose gradient treats x as symmetric)."""
    return apply("cholesky", x)


# ----- triangles and norms --------------------------------------------------------------------

def _matrix_shape(op, shapes, attrs):
    if len(shapes[0]) < 2:
        raise ShapeError(f"{op}: expects a matrix or a batch of matrices, got shape "
                         f"{fmt_shape(shapes[0])}")
    return shapes[0]


def _matrices_shape(op, shapes, attrs):
    """A matrix or a batch of them (leading dims)."""
    if len(shapes[0]) < 2:
        raise ShapeError(f"{op}: expects a matrix or a batch of matrices, got shape "
                         f"{fmt_shape(shapes[0])}")
    return shapes[0]


def _band_params(op, shapes, k=0):
    if not isinstance(k, int) or isinstance(k, bool):
        raise ParameterError(f"{op}: the diagonal offset k must be an int, got {k!r}")
    return (("k", k),)


def _band(name, keep) -> Callable[[FunctionT], FunctionT]:
    def text(x, k):
        return f"{name}({x})" if k.value == 0 else f"{name}({x}, k={k})"

    def latex(x, k):
        sub = "" if k.value == 0 else f"_{{{k}}}"
        return rf"\operatorname{{{name}}}{sub}\left({x}\right)"

    def band_elements(ctx, x):
        mask = keep(numpy.ones(x.shape, dtype=bool), ctx.attrs["k"])
        return numpy.where(mask, x, sympy.S.Zero)

    return defop(name, ("x",), params=_band_params, shape=_matrices_shape, text=text,
                 batch=batching.over_leading_axes,
                 latex=latex, numpy=f"numpy.{name}({{x}}, {{k}})",
                 torch=f"torch.{name}({{x}}, {{k}})", elements=band_elements,
                 torch_names=(f"torch.{name}", f"torch.Tensor.{name}"))


@_band("tril", numpy.tril)
def tril(x: TensorLike, k: int = 0) -> Result:
    """x with the elements above the k-th diagonal zeroed (``torch.tril``)."""
    return apply("tril", x, k=k)


@_band("triu", numpy.triu)
def triu(x: TensorLike, k: int = 0) -> Result:
    """x with the elements below the k-th diagonal zeroed (``torch.triu``)."""
    return apply("triu", x, k=k)
