"""SymPy classes that SymPy lacks, for the formulas and the code symgrad prints.

Two kinds:

* elementwise functions (``sigmoid``, ``relu``, ``softplus``, ``Where``, ``Clamp``,
  ``AsFloat``) that act on scalars, so closed forms of scalar functions stay plain
  SymPy that ``sympy.diff`` and ``lambdify`` understand (each defines ``fdiff`` or
  ``_eval_derivative`` and a rewrite to elementary SymPy);
* array ops (``SumOp``, ``MatmulOp``, ...) used in array-level expressions, where a
  symbol stands for a whole array and ``*`` is elementwise. Their parameters (axes,
  shapes) are SymPy tuples in ``args`` so printers can read them.

Printers for all of these live in ``printing`` (text, LaTeX) and ``codegen`` (NumPy,
torch, math).
"""
import sympy
from sympy import Function, Piecewise, S, Tuple


def _formula_str(self, printer):
    """``str()`` of symgrad's SymPy classes is the formula notation of ``sg`` formulas."""
    from .printing import FormulaPrinter
    formula_printer = printer if isinstance(printer, FormulaPrinter) else FormulaPrinter()
    method = getattr(formula_printer, "_print_" + type(self).__name__, None)
    return method(self) if method else formula_printer._print_Function(self)


class sigmoid(Function):
    """The logistic function 1 / (1 + exp(-x))."""

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return S.Half

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return 1 / (1 + sympy.exp(-x))

    def _eval_evalf(self, prec):
        if self.args[0].is_number:
            return self._eval_rewrite_as_exp(self.args[0])._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real


class softplus(Function):
    """log(1 + exp(x)), computed stably by every backend."""

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sympy.log(2)

    def fdiff(self, argindex=1):
        return sigmoid(self.args[0])

    def _eval_rewrite_as_log(self, x, **kwargs):
        return sympy.log(1 + sympy.exp(x))

    def _eval_evalf(self, prec):
        if self.args[0].is_number:
            return self._eval_rewrite_as_log(self.args[0])._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real


class relu(Function):
    """max(x, 0); its derivative at 0 is 0, as in torch."""

    @classmethod
    def eval(cls, x):
        if x.is_number and x.is_extended_real:
            return sympy.Max(x, 0)

    def fdiff(self, argindex=1):
        return Where(sympy.StrictGreaterThan(self.args[0], 0), S.One, S.Zero)

    def _eval_rewrite_as_Max(self, x, **kwargs):
        return sympy.Max(x, 0)

    def _eval_rewrite_as_Piecewise(self, x, **kwargs):
        return Piecewise((x, x > 0), (0, True))

    def _eval_is_real(self):
        return self.args[0].is_real


class Where(Function):
    """where(cond, a, b): a where cond holds, else b (elementwise)."""

    _sympystr = _formula_str

    @classmethod
    def eval(cls, cond, a, b):
        if cond is S.true:
            return a
        if cond is S.false:
            return b
        if a == b:
            return a

    def _eval_derivative(self, s):
        return Where(self.args[0], self.args[1].diff(s), self.args[2].diff(s))

    def _eval_rewrite_as_Piecewise(self, cond, a, b, **kwargs):
        return Piecewise((a, cond), (b, True))


class Clamp(Function):
    """clamp(x, lo, hi); lo = -oo or hi = oo when a bound is absent."""

    _sympystr = _formula_str

    @classmethod
    def eval(cls, x, lo, hi):
        if x.is_number and lo.is_number and hi.is_number:
            return sympy.Min(sympy.Max(x, lo), hi)

    def _eval_derivative(self, s):
        x, lo, hi = self.args
        inside = sympy.And(sympy.GreaterThan(x, lo), sympy.LessThan(x, hi))
        return Where(inside, x.diff(s), S.Zero)

    def _eval_rewrite_as_Piecewise(self, x, lo, hi, **kwargs):
        return Piecewise((lo, x < lo), (hi, x > hi), (x, True))


class AsFloat(Function):
    """1.0 where a boolean holds, else 0.0 (Iverson bracket)."""

    _sympystr = _formula_str

    @classmethod
    def eval(cls, cond):
        if cond is S.true:
            return S.One
        if cond is S.false:
            return S.Zero

    def _eval_derivative(self, s):
        return S.Zero

    def _eval_rewrite_as_Piecewise(self, cond, **kwargs):
        return Piecewise((1, cond), (0, True))


class StopGradient(Function):
    """x, treated as a constant by differentiation (``detach``)."""

    _sympystr = _formula_str

    def _eval_evalf(self, prec):
        return self.args[0]._eval_evalf(prec)

    def _eval_derivative(self, s):
        return S.Zero


class ArrayOp(Function):
    """Base of array-level ops: the first args are operands, the rest parameters."""

    n_operands = 1

    _sympystr = _formula_str


class SumOp(ArrayOp):
    """sum(x, axes, keepdims, full): ``full`` is true when every axis is reduced."""


class MeanOp(ArrayOp):
    """mean(x, axes, keepdims, full)."""


class MatmulOp(ArrayOp):
    """x @ y with NumPy's rules for 1-D operands."""

    n_operands = 2
    is_commutative = False


class TransposeOp(ArrayOp):
    """transpose(x, axes): permute the axes."""


class ReshapeOp(ArrayOp):
    """reshape(x, shape)."""


class SqueezeOp(ArrayOp):
    """squeeze(x, axes): drop size-1 axes."""


class UnsqueezeOp(ArrayOp):
    """unsqueeze(x, axis): insert a size-1 axis."""


class BroadcastOp(ArrayOp):
    """broadcast_to(x, shape)."""


class FillOp(ArrayOp):
    """full(shape, value): a constant array."""

    n_operands = 0


class EyeOp(ArrayOp):
    """eye(n): the identity matrix."""

    n_operands = 0


# ----- linear algebra ---------------------------------------------------------------

class DotOp(ArrayOp):
    """dot(x, y) of two vectors: xᵀy."""

    n_operands = 2


class OuterOp(ArrayOp):
    """outer(x, y) of two vectors: x yᵀ."""

    n_operands = 2


class TraceOp(ArrayOp):
    """trace(X): the sum of the diagonal."""


class DiagonalOp(ArrayOp):
    """diagonal(X): the diagonal of a square matrix as a vector."""


class DiagOp(ArrayOp):
    """diag(v): the square matrix with v on its diagonal."""


class InverseOp(ArrayOp):
    """inverse(X): X⁻¹."""


class DetOp(ArrayOp):
    """det(X)."""


class LogdetOp(ArrayOp):
    """logdet(X) = log det X (nan when det X < 0, as in torch)."""


class LogAbsDetOp(ArrayOp):
    """log |det X|, the second output of slogdet."""


class SolveOp(ArrayOp):
    """solve(A, B) = A⁻¹B."""

    n_operands = 2
    is_commutative = False


class CholeskyOp(ArrayOp):
    """cholesky(A) = L, lower triangular with L Lᵀ = A."""


class TrilOp(ArrayOp):
    """tril(X, k): X with the elements above the k-th diagonal set to 0."""


class TriuOp(ArrayOp):
    """triu(X, k): X with the elements below the k-th diagonal set to 0."""


class NormOp(ArrayOp):
    """norm(x, axes, keepdims, full): the 2-norm (Frobenius norm for matrices)."""


# ----- reductions along axes ------------------------------------------------------------

class AmaxOp(ArrayOp):
    """amax(x, axes, keepdims, full); gradient split evenly between ties."""


class AminOp(ArrayOp):
    """amin(x, axes, keepdims, full)."""


class MaxOp(ArrayOp):
    """max(x, axes, keepdims, full); along one axis the gradient goes to the first
    maximum (torch.max(x, dim))."""


class MinOp(ArrayOp):
    """min(x, axes, keepdims, full)."""


class ProdOp(ArrayOp):
    """prod(x, axes, keepdims, full)."""


class CumsumOp(ArrayOp):
    """cumsum(x, axis)."""


class VarOp(ArrayOp):
    """var(x, axes, keepdims, full, correction)."""


class StdOp(ArrayOp):
    """std(x, axes, keepdims, full, correction)."""


# ----- neural-network ops ---------------------------------------------------------------

class SoftmaxOp(ArrayOp):
    """softmax(x, axis)."""


class LogSoftmaxOp(ArrayOp):
    """log_softmax(x, axis)."""


class LogsumexpOp(ArrayOp):
    """logsumexp(x, axes, keepdims, full)."""


class OneHotOp(ArrayOp):
    """one_hot(t, num_classes): 1.0 where the class index t equals the column."""


class CrossEntropyOp(ArrayOp):
    """cross_entropy(logits, target, probabilities, reduction)."""

    n_operands = 2


class MseLossOp(ArrayOp):
    """mse_loss(x, y, reduction)."""

    n_operands = 2


class BceWithLogitsOp(ArrayOp):
    """binary_cross_entropy_with_logits(x, y, reduction)."""

    n_operands = 2


# ----- indexing and joining -------------------------------------------------------------

class IndexOp(ArrayOp):
    """x[index]: ``index`` is a tuple of integers and (start, stop, step) slices."""


class IndexScatterOp(ArrayOp):
    """zeros(shape) with ``g`` written at ``index``: the gradient of indexing."""


class ConcatOp(ArrayOp):
    """concatenate((x, y), axis)."""

    n_operands = 2


def sym_tuple(values):
    return Tuple(*[sympy.sympify(v) for v in values])


def sym_bool(value):
    return S.true if value else S.false


def to_elementary(expr):
    """Rewrite symgrad's elementwise classes into plain SymPy (for ``sympy.diff`` checks)."""
    return expr.replace(
        lambda e: isinstance(e, (sigmoid, softplus, relu, Where, Clamp, AsFloat, StopGradient)),
        _elementary)


def _elementary(e):
    if isinstance(e, sigmoid):
        return 1 / (1 + sympy.exp(-e.args[0]))
    if isinstance(e, softplus):
        return sympy.log(1 + sympy.exp(e.args[0]))
    if isinstance(e, relu):
        return Piecewise((e.args[0], e.args[0] > 0), (0, True))
    if isinstance(e, StopGradient):
        return e.args[0]
    return e.rewrite(Piecewise)
