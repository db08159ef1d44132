"""Matrix decompositions over batches of matrices (leading dims are a batch, as in torch):
triangular solves, the symmetric eigendecomposition, the SVD, QR and the matrix exponential.

A decomposition with several outputs is one op per output (``eigh_values`` and
``eigh_vectors``, ``svd_u``/``svd_s``/``svd_vh``, ``qr_q``/``qr_r``): each is a plain
array op with one result, and the gradient of the whole decomposition is the sum of the
per-output rules, because torch's backward formulas are linear in the output gradients.
The compiled NumPy code calls LAPACK through numpy.linalg, the torch code torch.linalg.
Derivatives: rules/decomp.yaml, helpers in diff/decomp_grads.py.
"""
import functools

import numpy
import sympy
from sympy.core.symbol import Str

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import OPS, defop
from ..shapes import broadcast_shapes, dims_match, fmt_shape
from . import batching


def _matrices(op, shape, square=False):
    if len(shape) < 2:
        raise ShapeError(f"{op}: expects a matrix or a batch of matrices (..., m, n), got "
                         f"shape {fmt_shape(shape)}")
    if square and not dims_match(shape[-1], shape[-2]):
        raise ShapeError(f"{op}: expects square matrices (..., n, n), got shape "
                         f"{fmt_shape(shape)}")


def _flag(op, name, value):
    if not isinstance(value, bool):
        raise ParameterError(f"{op}: {name} must be True or False, got {value!r}")
    return (name, value)


def smaller(a, b):
    """min(a, b) for dims that may be symbolic."""
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return sympy.Min(a, b)


class _Element(sympy.Function):
    """One element of a decomposition's result, an opaque function of the input elements
    (no closed form exists); numeric inputs evaluate it with the compiled NumPy op.
    Args: the op's name, per input a Tuple of its elements and one of its shape, a Tuple
    of (parameter, value) pairs, then the element's index."""

    def _eval_evalf(self, prec):
        name, *rest = self.args
        arity = OPS[name.name].arity
        value = _evaluated(name.name, tuple(rest[:2 * arity + 1]))
        if value is None:
            return None
        idx = tuple(int(i) for i in rest[2 * arity + 1:])
        return sympy.Float(float(value[idx]), prec)


_DIGITS = 20


@functools.lru_cache(maxsize=1024)
def _evaluated(name, args):
    """The whole result of decomposition ``name`` at the inputs in ``args`` (per input a
    Tuple of elements and one of the shape, then the parameters), or None when an input
    is not a number. Cached: each of the op's n² elements asks for it, and an element of a
    later op asks for every element of an earlier one, which without the cache made the
    evaluation of a chain of decompositions (a Gaussian process's Cholesky factor and its
    solves) grow as a product of their sizes. The op computes in float64, so the inputs
    are evaluated to 20 digits whatever precision evalf asks for (it asks again with more
    when it suspects cancellation)."""
    from .. import extensions
    arity = OPS[name].arity
    arrays = []
    for k in range(arity):
        flat, shape = args[2 * k], args[2 * k + 1]
        values = [e.doit().evalf(_DIGITS) for e in flat]   # doit: decides Eq(0, 1)
        if not all(v.is_Number for v in values):
            return None
        arrays.append(numpy.array([float(v) for v in values]).reshape(
            tuple(int(d) for d in shape)))
    params = {p.name: bool(v) for p, v in args[2 * arity]}
    return numpy.asarray(extensions.evaluate(name, arrays, params))


def _opaque(name):
    """The per-element form (``explicit``) of a decomposition: ``_Element`` per index."""
    def elements(ctx, *ins):
        args = [Str(name)]
        for a in ins:
            a = numpy.asarray(a)
            args += [sympy.Tuple(*[sympy.sympify(e) for e in a.flat]), sympy.Tuple(*a.shape)]
        args.append(sympy.Tuple(*[sympy.Tuple(Str(k), sympy.true if v else sympy.false)
                                  for k, v in ctx.attrs.items() if isinstance(v, bool)]))
        out = numpy.empty(ctx.shape, dtype=object)
        for idx in numpy.ndindex(*ctx.shape):
            out[idx] = _Element(*args, *idx)
        return out
    return elements


def _call_text(name):
    def text(**fields):
        args = [str(fields.pop("x"))]
        args += [f"{k}={v}" for k, v in fields.items() if v.value is True]
        return f"{name}({', '.join(args)})"
    return text


# ----- triangular solve ---------------------------------------------------------------------

_SOLVE_TRIANGULAR = (
    "def _solve_triangular(a, b, upper, left, unit):\n"
    "    t = numpy.triu(a) if upper else numpy.tril(a)\n"
    "    if unit:\n"
    "        n = t.shape[-1]\n"
    "        t = t * (1.0 - numpy.eye(n)) + numpy.eye(n)\n"
    "    if not left:\n"
    "        t, b = numpy.swapaxes(t, -1, -2), numpy.swapaxes(b, -1, -2)\n"
    "    batch = numpy.broadcast_shapes(t.shape[:-2], b.shape[:-2])\n"
    "    t = numpy.broadcast_to(t, batch + t.shape[-2:])\n"
    "    b = numpy.broadcast_to(b, batch + b.shape[-2:])\n"
    "    if t.size == 0 or b.size == 0:\n"
    "        x = numpy.zeros(b.shape)\n"
    "    elif not (numpy.isfinite(t).all() and numpy.isfinite(b).all()):\n"
    "        x = _substitute(t, b, upper != (not left))\n"
    "    else:\n"
    "        try:\n"
    "            x = _triangular_lapack(t, b, upper != (not left), unit)\n"
    "        except numpy.linalg.LinAlgError:\n"
    "            x = _substitute(t, b, upper != (not left))\n"
    "    return x if left else numpy.swapaxes(x, -1, -2)\n"
    "\n"
    "\n"
    "_SCIPY_TRIANGULAR = []\n"
    "\n"
    "\n"
    "def _triangular_lapack(t, b, upper, unit):\n"
    "    # LAPACK's triangular solve (SciPy's solve_triangular, imported on first use), one\n"
    "    # matrix at a time; without SciPy, NumPy's general solve of the triangle\n"
    "    if not _SCIPY_TRIANGULAR:\n"
    "        try:\n"
    "            from scipy.linalg import solve_triangular\n"
    "        except ImportError:\n"
    "            solve_triangular = None\n"
    "        _SCIPY_TRIANGULAR.append(solve_triangular)\n"
    "    solve = _SCIPY_TRIANGULAR[0]\n"
    "    if solve is None:\n"
    "        return numpy.linalg.solve(t, b)\n"
    "    if t.ndim == 2:\n"
    "        return solve(t, b, lower=not upper, unit_diagonal=unit, check_finite=False)\n"
    "    x = numpy.empty(b.shape)\n"
    "    for i in numpy.ndindex(*b.shape[:-2]):\n"
    "        x[i] = solve(t[i], b[i], lower=not upper, unit_diagonal=unit, check_finite=False)\n"
    "    return x\n"
    "\n"
    "\n"
    "def _substitute(t, b, upper):\n"
    "    # a singular triangle: substitution row by row gives torch's infs and nans\n"
    "    n = t.shape[-1]\n"
    "    x = numpy.zeros(b.shape)\n"
    "    rows = range(n - 1, -1, -1) if upper else range(n)\n"
    "    with numpy.errstate(all='ignore'):\n"
    "        for i in rows:\n"
    "            known = t[..., i:i + 1, :] @ x\n"
    "            x[..., i, :] = (b[..., i, :] - known[..., 0, :]) / t[..., i, i:i + 1]\n"
    "    return x")


def _solve_triangular_params(op, shapes, upper, left=True, unitriangular=False):
    return (_flag(op, "upper", upper), _flag(op, "left", left),
            _flag(op, "unitriangular", unitriangular))


def _solve_triangular_shape(op, shapes, attrs):
    a, b = shapes
    _matrices(op, a, square=True)
    _matrices(op, b)
    inner = b[-2] if attrs["left"] else b[-1]
    if not dims_match(a[-1], inner):
        side = "rows" if attrs["left"] else "columns"
        raise ShapeError(f"{op}: A has shape {fmt_shape(a)}, so B needs {a[-1]} {side}; got "
                         f"{fmt_shape(b)}")
    return broadcast_shapes(a[:-2], b[:-2], op=op) + tuple(b[-2:])


def _solve_triangular_latex(a, b, upper, left, unitriangular):
    """triu(A)^{-1} B or B tril(A)^{-1}: a product, B in parentheses when it is a sum."""
    inverse = rf"\operatorname{{{'triu' if upper.value else 'tril'}}}\left({a}\right)^{{-1}}"
    return f"{inverse} {b:mul}" if left.value else f"{b:mul} {inverse}"


@defop("solve_triangular", ("a", "b"), elements=_opaque("solve_triangular"), params=_solve_triangular_params,
       shape=_solve_triangular_shape, batch=batching.over_leading_axes,
       text=lambda a, b, upper, left, unitriangular:
           f"solve_triangular({a}, {b}, upper={upper}"
           + ("" if left.value else ", left=False")
           + (", unitriangular=True" if unitriangular.value else "") + ")",
       latex=_solve_triangular_latex, latex_precedence="Product",
       numpy=("_solve_triangular({a}, {b}, {upper}, {left}, {unitriangular})",
              {"_solve_triangular": _SOLVE_TRIANGULAR}),
       torch="torch.linalg.solve_triangular({a}, {b}, upper={upper}, left={left}, "
             "unitriangular={unitriangular})")
def solve_triangular(a, b, upper, left=True, unitriangular=False):
    """X with T X = B (``left``) or X T = B, T the upper or lower triangle of ``a`` (with a
    unit diagonal if ``unitriangular``); like ``torch.linalg.solve_triangular``."""
    return apply("solve_triangular", a, b, upper=upper, left=left, unitriangular=unitriangular)


# ----- symmetric eigendecomposition -----------------------------------------------------------

def _upper_params(op, shapes, upper=False):
    return (_flag(op, "upper", upper),)


def _eigh_shape(values):
    def shape(op, shapes, attrs):
        _matrices(op, shapes[0], square=True)
        return tuple(shapes[0][:-1]) if values else tuple(shapes[0])
    return shape


def _eigh_code(module, part):
    # JAX averages the two triangles unless told not to; torch and NumPy read one
    extra = ", symmetrize_input=False" if module == "jax.numpy" else ""

    def spell(x, upper):
        uplo = "'U'" if upper.value else "'L'"
        return f"{module}.linalg.eigh({x}, UPLO={uplo}{extra})[{part}]"
    return spell


@defop("eigh_values", ("x",), elements=_opaque("eigh_values"), params=_upper_params, shape=_eigh_shape(True),
       text=_call_text("eigh_values"), latex=r"\lambda\left({x}\right)",
       numpy=_eigh_code("numpy", 0), torch=_eigh_code("torch", 0), jax=_eigh_code("jax.numpy", 0))
def eigh_values(x, upper=False):
    """The eigenvalues (ascending) of the symmetric matrices whose lower (or ``upper``)
    triangle ``x`` holds, like ``torch.linalg.eigvalsh``."""
    return apply("eigh_values", x, upper=upper)


@defop("eigh_vectors", ("x",), elements=_opaque("eigh_vectors"), params=_upper_params, shape=_eigh_shape(False),
       text=_call_text("eigh_vectors"), latex=r"V\left({x}\right)",
       numpy=_eigh_code("numpy", 1), torch=_eigh_code("torch", 1), jax=_eigh_code("jax.numpy", 1))
def eigh_vectors(x, upper=False):
    """The orthonormal eigenvectors (columns, in the order of ``eigh_values``) of the
    symmetric matrices in ``x``: ``torch.linalg.eigh(x)[1]``. A vector's sign is LAPACK's
    choice; the gradient is torch's (``eigh_backward``)."""
    return apply("eigh_vectors", x, upper=upper)


# ----- singular value decomposition -----------------------------------------------------------

_SVD = ("def _svd(x, full):\n"
        "    m, n = x.shape[-2:]\n"
        "    if x.size == 0:\n"
        "        k = min(m, n)\n"
        "        b = x.shape[:-2]\n"
        "        u = numpy.broadcast_to(numpy.eye(m, m if full else k), b + (m, m if full else k))\n"
        "        vh = numpy.broadcast_to(numpy.eye(n if full else k, n), b + (n if full else k, n))\n"
        "        return u.copy(), numpy.zeros(b + (k,)), vh.copy()\n"
        "    return numpy.linalg.svd(x, full_matrices=full)")


def _full_params(op, shapes, full=False):
    return (_flag(op, "full", full),)


def _svd_shape(part):
    def shape(op, shapes, attrs):
        s = tuple(shapes[0])
        _matrices(op, s)
        m, n = s[-2:]
        k = smaller(m, n)
        full = attrs.get("full", False)
        return {"u": s[:-2] + (m, m if full else k), "s": s[:-2] + (k,),
                "vh": s[:-2] + (n if full else k, n)}[part]
    return shape


def _svd_code(part, module):
    index = {"u": 0, "s": 1, "vh": 2}[part]

    def spell(x, full=None):
        f = bool(full and full.value)
        if module == "numpy":
            return f"_svd({x}, {f})[{index}]", {"_svd": _SVD}
        return f"torch.linalg.svd({x}, full_matrices={f})[{index}]"
    return spell


@defop("svd_u", ("x",), elements=_opaque("svd_u"), params=_full_params, shape=_svd_shape("u"),
       text=_call_text("svd_u"), latex=r"U\left({x}\right)",
       numpy=_svd_code("u", "numpy"), torch=_svd_code("u", "torch"))
def svd_u(x, full=False):
    """The left singular vectors U of x = U diag(S) Vh (m x k, or m x m if ``full``)."""
    return apply("svd_u", x, full=full)


@defop("svd_s", ("x",), elements=_opaque("svd_s"), shape=_svd_shape("s"), text="svd_s({x})",
       latex=r"\sigma\left({x}\right)", numpy=_svd_code("s", "numpy"),
       torch="torch.linalg.svdvals({x})")
def svd_s(x):
    """The singular values of x, descending (``torch.linalg.svdvals``)."""
    return apply("svd_s", x)


@defop("svd_vh", ("x",), elements=_opaque("svd_vh"), params=_full_params, shape=_svd_shape("vh"),
       text=_call_text("svd_vh"), latex=r"V^{{T}}\left({x}\right)",
       numpy=_svd_code("vh", "numpy"), torch=_svd_code("vh", "torch"))
def svd_vh(x, full=False):
    """The right singular vectors Vh of x = U diag(S) Vh (k x n, or n x n if ``full``)."""
    return apply("svd_vh", x, full=full)


# ----- QR -------------------------------------------------------------------------------------

def _complete_params(op, shapes, complete=False):
    return (_flag(op, "complete", complete),)


def _qr_shape(part):
    def shape(op, shapes, attrs):
        s = tuple(shapes[0])
        _matrices(op, s)
        m, n = s[-2:]
        k = m if attrs["complete"] else smaller(m, n)
        return s[:-2] + ((m, k) if part == "q" else (k, n))
    return shape


def _qr_code(module, part):
    def spell(x, complete):
        mode = "'complete'" if complete.value else "'reduced'"
        return f"{module}.linalg.qr({x}, mode={mode})[{part}]"
    return spell


@defop("qr_q", ("x",), elements=_opaque("qr_q"), params=_complete_params, shape=_qr_shape("q"), text=_call_text("qr_q"),
       latex=r"Q\left({x}\right)", numpy=_qr_code("numpy", 0), torch=_qr_code("torch", 0))
def qr_q(x, complete=False):
    """Q of the QR decomposition x = Q R (Householder, as LAPACK's geqrf)."""
    return apply("qr_q", x, complete=complete)


@defop("qr_r", ("x",), elements=_opaque("qr_r"), params=_complete_params, shape=_qr_shape("r"), text=_call_text("qr_r"),
       latex=r"R\left({x}\right)", numpy=_qr_code("numpy", 1), torch=_qr_code("torch", 1))
def qr_r(x, complete=False):
    """R (upper triangular) of the QR decomposition x = Q R."""
    return apply("qr_r", x, complete=complete)


# ----- matrix exponential ---------------------------------------------------------------------

# Scaling and squaring with the degree-13 Pade approximant (Higham 2005), over the batch.
_EXPM = (
    "def _matrix_exp(a):\n"
    "    if a.size == 0:\n"
    "        return numpy.zeros(a.shape)\n"
    "    n = a.shape[-1]\n"
    "    norm = numpy.max(numpy.sum(numpy.abs(a), axis=-2), axis=-1)[..., None, None]\n"
    "    finite = numpy.isfinite(norm)\n"
    "    theta = 5.371920351148152\n"
    "    safe = numpy.where(finite & (norm > theta), norm, theta)\n"
    "    s = numpy.ceil(numpy.log2(safe / theta)).astype(int)\n"
    "    a = numpy.where(finite, a, 0.0) / 2.0 ** s\n"
    "    c = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,\n"
    "         1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,\n"
    "         33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)\n"
    "    i = numpy.eye(n)\n"
    "    a2 = a @ a\n"
    "    a4 = a2 @ a2\n"
    "    a6 = a2 @ a4\n"
    "    u = a @ (a6 @ (c[13] * a6 + c[11] * a4 + c[9] * a2)\n"
    "             + c[7] * a6 + c[5] * a4 + c[3] * a2 + c[1] * i)\n"
    "    v = a6 @ (c[12] * a6 + c[10] * a4 + c[8] * a2) + c[6] * a6 + c[4] * a4 + c[2] * a2 \\\n"
    "        + c[0] * i\n"
    "    r = numpy.linalg.solve(v - u, v + u)\n"
    "    for k in range(int(s.max())):\n"
    "        r = numpy.where(s > k, r @ r, r)\n"
    "    return numpy.where(finite, r, numpy.nan)")


def _square_shape(op, shapes, attrs):
    _matrices(op, shapes[0], square=True)
    return tuple(shapes[0])


@defop("matrix_exp", ("x",), elements=_opaque("matrix_exp"), shape=_square_shape,
       batch=batching.over_leading_axes, text="matrix_exp({x})",
       latex=r"e^{{{x}}}", numpy=("_matrix_exp({x})", {"_matrix_exp": _EXPM}),
       torch="torch.linalg.matrix_exp({x})")
def matrix_exp(x):
    """The matrix exponential of square matrices (``torch.linalg.matrix_exp``)."""
    return apply("matrix_exp", x)
