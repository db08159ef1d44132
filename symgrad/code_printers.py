"""Code printers: SymPy's NumPy, torch and Python printers extended to symgrad's classes.

Each printer subclasses SymPy's (``NumPyPrinter``, ``TorchPrinter``, ``PythonCodePrinter``)
and adds a ``_print_<Class>`` method for each symgrad class and for SymPy classes whose
stock printing is wrong for arrays (``Max`` on broadcast operands, ``erf`` without
SciPy, integer operands that slow NumPy down). ``templates(backend)`` is the printer's
``TemplateCache``: each (op, parameters) is printed once with placeholder operands.
``codegen`` assembles the printed statements into functions.
"""
import functools
import math

import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from .errors import ArgumentError
from .program import TemplateCache


@functools.lru_cache(maxsize=None)
def _has_scipy():
    """SciPy's ufuncs (erf, expit) are faster than NumPy compositions; SciPy is optional."""
    try:
        import scipy.special  # noqa: F401
        return True
    except ImportError:
        return False


def _float_literal(value):
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "(-math.inf)"
    return repr(value) if value >= 0 else f"({value!r})"


def _is_scalar_constant(e):
    """A number or an expression in dims (integer symbols): a Python scalar at run time."""
    return e.is_number or bool(e.free_symbols) and all(s.is_integer for s in e.free_symbols)


class _ArrayPrinterMixin:
    """Printing shared by the array backends; ``M`` is the module prefix."""

    M = "numpy"

    def _print(self, expr, **kwargs):
        """A number subexpression (exp(2), 1/(2*pi)) is printed as its float64 value,
        with IEEE semantics: what overflows is inf, what is not real is nan (as in torch)."""
        if isinstance(expr, sympy.Expr) and not expr.is_Atom and expr.is_number:
            value = expr.evalf()
            if value.is_Number or value.is_number and value.is_extended_real is False:
                try:
                    value = complex(value)
                except (TypeError, ValueError, OverflowError):
                    value = complex(math.inf if value.is_extended_positive else math.nan)
                return _float_literal(value.real if value.imag == 0 else math.nan)
        return super()._print(expr, **kwargs)

    def _print_Float(self, expr):
        return _float_literal(float(expr))

    def _print_Integer(self, expr):
        # beyond 2**53 an integer is a float for every backend (torch.pow rejects 2**64)
        return str(int(expr)) if abs(expr) <= 2 ** 53 else _float_literal(float(expr))

    def _print_Infinity(self, expr):
        return "math.inf"

    def _print_NegativeInfinity(self, expr):
        return "-math.inf"

    def _arg(self, expr, level="Atom"):
        return self.parenthesize(expr, PRECEDENCE[level], strict=level == "Atom")

    def _tuple(self, t):
        items = [self._print(v) for v in t]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == -1:
            return "1/" + self._arg(base, "Pow")
        if e == sympy.S.Half:
            return f"{self.M}.sqrt({self._print(base)})"
        if e == -sympy.S.Half:
            return f"1/{self.M}.sqrt({self._print(base)})"
        if e == 2:
            b = self._arg(base, "Pow")
            return f"({b}*{b})" if base.is_Atom else f"{b}**2"
        return self._arg(base, "Pow") + "**" + self._arg(e, "Pow")

    def _print_StopGradient(self, expr):
        return self._print(expr.args[0])

    def _print_Mul(self, expr):
        """Scalar factors (numbers and dims) multiplied together before they meet an
        array: ``(2/(B*o))*x`` is one array operation, ``2*x/(B*o)`` is two."""
        scalars = [a for a in expr.args if _is_scalar_constant(a)]
        rest = [a for a in expr.args if not _is_scalar_constant(a)]
        if not rest or not scalars or len(scalars) == 1 and scalars[0].is_Number:
            return super()._print_Mul(expr)
        coefficient = sympy.Mul(*scalars)
        if coefficient == -1:
            return "-" + self._arg(sympy.Mul(*rest), "Mul")
        return f"({self._print(coefficient)})*{self._arg(sympy.Mul(*rest), 'Mul')}"

    def _reduce(self, fn, expr, extra=""):
        """A reduction call; ``axis``/``keepdims`` spelled as the backend spells them."""
        x, axes, keep, full = expr.args[:4]
        axis_kw, keep_kw = ("axis", "keepdims") if self.M == "numpy" else ("dim", "keepdim")
        if full is sympy.true and keep is sympy.false:
            return f"{fn}({self._print(x)}{extra})"
        return (f"{fn}({self._print(x)}, {axis_kw}={self._tuple(axes)}, "
                f"{keep_kw}={keep is sympy.true}{extra})")

    def _index_text(self, index):
        items = []
        for e in index:
            if isinstance(e, sympy.Tuple):
                start, stop, step = (self._print(v) for v in e)
                start = "" if e[0] == 0 else start
                stop = "" if e[1] is sympy.oo else stop
                items.append(f"{start}:{stop}" + ("" if e[2] == 1 else f":{step}"))
            else:
                items.append(self._print(e))
        return ", ".join(items) + ("," if len(items) == 1 else "")

    def _index_tuple(self, index):
        items = []
        for e in index:
            if isinstance(e, sympy.Tuple):
                items.append("slice(%s)" % ", ".join(
                    "None" if v is sympy.oo else self._print(v) for v in e))
            else:
                items.append(self._print(e))
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    def _print_IndexOp(self, expr):
        x, index = expr.args
        return f"{self._arg(x)}[{self._index_text(index)}]"

    def _print_IndexScatterOp(self, expr):
        g, shape, index = expr.args
        self.preamble["_index_scatter"] = self._INDEX_SCATTER
        extra = ", _dt, _dev" if self.M == "torch" else ""
        return (f"_index_scatter({self._print(g)}, {self._tuple(shape)}, "
                f"{self._index_tuple(index)}{extra})")

    def _loss(self, per_element, reduction):
        r = str(reduction)
        if r == "none":
            return per_element
        return f"{self.M}.{'mean' if r == 'mean' else 'sum'}({per_element})"

    def _print_MseLossOp(self, expr):
        x, y, r = expr.args
        return self._loss(f"{self.M}.square({self._print(x)} - {self._arg(y, 'Add')})", r)

    def _print_BceWithLogitsOp(self, expr):
        x, y, r = expr.args
        a, b, m = self._print(x), self._arg(y, "Mul"), self.M
        ax = self._arg(x, "Mul")
        relu = f"numpy.maximum({a}, 0.0)" if m == "numpy" else f"torch.relu({a})"
        return self._loss(f"{relu} - {ax}*{b} + {m}.log1p({m}.exp(-{m}.abs({a})))", r)

    def _print_MatmulOp(self, expr):
        a, b = expr.args
        return f"{self._arg(a, 'Mul')} @ {self._arg(b, 'Pow')}"


class NumpyCodePrinter(_ArrayPrinterMixin, NumPyPrinter):
    """SymPy's NumPy printer, extended to symgrad's classes."""

    M = "numpy"

    def __init__(self, settings=None):
        super().__init__(dict({"fully_qualified_modules": True}, **(settings or {})))
        self.preamble = {}

    def _print_Max(self, expr):
        args = [self._print(a) for a in expr.args]
        return self._fold("numpy.maximum", args)

    def _print_Min(self, expr):
        args = [self._print(a) for a in expr.args]
        return self._fold("numpy.minimum", args)

    @staticmethod
    def _fold(fn, args):
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out

    def _print_Abs(self, expr):
        return f"numpy.abs({self._print(expr.args[0])})"

    def _print_And(self, expr):
        return self._fold("numpy.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return self._fold("numpy.logical_or", [self._print(a) for a in expr.args])

    def _print_erf(self, expr):
        if _has_scipy():
            self.preamble["_erf"] = "from scipy.special import erf as _erf"
        else:
            self.preamble["_erf"] = "_erf = numpy.vectorize(math.erf, otypes=[float])"
        return f"_erf({self._print(expr.args[0])})"

    def _print_sigmoid(self, expr):
        if _has_scipy():
            self.preamble["_expit"] = "from scipy.special import expit as _expit"
            return f"_expit({self._print(expr.args[0])})"
        return f"numpy.exp(-numpy.logaddexp(0.0, -{self._arg(expr.args[0], 'Mul')}))"

    def _print_softplus(self, expr):
        return f"numpy.logaddexp(0.0, {self._print(expr.args[0])})"

    def _print_relu(self, expr):
        return f"numpy.maximum({self._print(expr.args[0])}, 0.0)"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        return f"numpy.where({c}, {a}, {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        lo = "None" if lo is sympy.S.NegativeInfinity else self._print(lo)
        hi = "None" if hi is sympy.S.Infinity else self._print(hi)
        return f"numpy.clip({self._print(x)}, {lo}, {hi})"

    def _print_AsFloat(self, expr):
        return f"numpy.where({self._print(expr.args[0])}, 1.0, 0.0)"

    def _print_SumOp(self, expr):
        # the ufunc method directly: numpy.sum's Python wrapper costs ~1.7 µs a call
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"numpy.add.reduce({self._print(x)}, axis=None)"
        return (f"numpy.add.reduce({self._print(x)}, axis={self._tuple(axes)}, "
                f"keepdims={keep is sympy.true})")

    def _print_MeanOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"numpy.mean({self._print(x)})"
        return f"numpy.mean({self._print(x)}, axis={self._tuple(axes)}, keepdims={keep is sympy.true})"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        if tuple(axes) == (1, 0):
            return f"{self._arg(x)}.T"
        return f"numpy.transpose({self._print(x)}, {self._tuple(axes)})"

    def _print_ReshapeOp(self, expr):
        return f"numpy.reshape({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_SqueezeOp(self, expr):
        return f"numpy.squeeze({self._print(expr.args[0])}, axis={self._tuple(expr.args[1])})"

    def _print_UnsqueezeOp(self, expr):
        return f"numpy.expand_dims({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_BroadcastOp(self, expr):
        return f"numpy.broadcast_to({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        return f"numpy.full({self._tuple(shape)}, {self._print(value)}, dtype=numpy.float64)"

    def _print_ArraySymbol(self, expr):
        return expr.name

    _INDEX_SCATTER = ("def _index_scatter(g, shape, index):\n"
                      "    out = numpy.zeros(shape)\n"
                      "    out[index] = g\n"
                      "    return out")

    def _helper(self, name, source):
        self.preamble[name] = source
        return name

    def _print_AmaxOp(self, expr):
        return self._reduce("numpy.max", expr)

    _print_MaxOp = _print_AmaxOp

    def _print_AminOp(self, expr):
        return self._reduce("numpy.min", expr)

    _print_MinOp = _print_AminOp

    def _print_ProdOp(self, expr):
        return self._reduce("numpy.prod", expr)

    def _print_NormOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"numpy.sqrt(numpy.sum(numpy.square({self._print(x)})))"
        return (f"numpy.sqrt(numpy.sum(numpy.square({self._print(x)}), axis={self._tuple(axes)}, "
                f"keepdims={keep is sympy.true}))")

    def _print_VarOp(self, expr):
        return self._reduce("numpy.var", expr, f", ddof={self._print(expr.args[4])}")

    def _print_StdOp(self, expr):
        return self._reduce("numpy.std", expr, f", ddof={self._print(expr.args[4])}")

    def _print_CumsumOp(self, expr):
        return f"numpy.cumsum({self._print(expr.args[0])}, axis={self._print(expr.args[1])})"

    def _print_SoftmaxOp(self, expr):
        fn = self._helper("_softmax", (
            "def _softmax(x, axis):\n"
            "    e = numpy.exp(x - numpy.max(x, axis=axis, keepdims=True))\n"
            "    return e / numpy.sum(e, axis=axis, keepdims=True)"))
        return f"{fn}({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _log_softmax_helper(self):
        return self._helper("_log_softmax", (
            "def _log_softmax(x, axis):\n"
            "    y = x - numpy.max(x, axis=axis, keepdims=True)\n"
            "    return y - numpy.log(numpy.sum(numpy.exp(y), axis=axis, keepdims=True))"))

    def _print_LogSoftmaxOp(self, expr):
        fn = self._log_softmax_helper()
        return f"{fn}({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_LogsumexpOp(self, expr):
        x, axes, keep, full = expr.args
        fn = self._helper("_logsumexp", (
            "def _logsumexp(x, axis, keepdims):\n"
            "    m = numpy.max(x, axis=axis, keepdims=True)\n"
            "    m = numpy.where(numpy.isfinite(m), m, 0.0)\n"
            "    r = numpy.log(numpy.sum(numpy.exp(x - m), axis=axis, keepdims=True)) + m\n"
            "    return r if keepdims else numpy.squeeze(r, axis=axis)"))
        return f"{fn}({self._print(x)}, {self._tuple(axes)}, {keep is sympy.true})"

    def _print_OneHotOp(self, expr):
        t, n = expr.args
        return (f"numpy.equal(numpy.expand_dims({self._print(t)}, -1), "
                f"numpy.arange({self._print(n)})).astype(numpy.float64)")

    def _print_CrossEntropyOp(self, expr):
        x, t, probabilities, reduction = expr.args
        self._log_softmax_helper()
        fn = self._helper("_cross_entropy", (
            "def _cross_entropy(x, t, probabilities, reduction):\n"
            "    lsm = _log_softmax(x, -1)\n"
            "    if probabilities:\n"
            "        loss = -numpy.sum(t * lsm, axis=-1)\n"
            "    else:\n"
            "        t = numpy.expand_dims(numpy.asarray(t).astype(numpy.int64), -1)\n"
            "        loss = -numpy.take_along_axis(lsm, t, -1)[..., 0]\n"
            "    if reduction == 'none':\n"
            "        return loss\n"
            "    return numpy.mean(loss) if reduction == 'mean' else numpy.sum(loss)"))
        return (f"{fn}({self._print(x)}, {self._print(t)}, {probabilities is sympy.true}, "
                f"{str(reduction)!r})")

    def _print_DotOp(self, expr):
        return f"numpy.dot({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_OuterOp(self, expr):
        return f"numpy.outer({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_TraceOp(self, expr):
        return f"numpy.trace({self._print(expr.args[0])})"

    def _print_DiagonalOp(self, expr):
        return f"numpy.diagonal({self._print(expr.args[0])}).copy()"

    def _print_DiagOp(self, expr):
        return f"numpy.diag({self._print(expr.args[0])})"

    def _print_InverseOp(self, expr):
        return f"numpy.linalg.inv({self._print(expr.args[0])})"

    def _print_DetOp(self, expr):
        return f"numpy.linalg.det({self._print(expr.args[0])})"

    def _print_LogdetOp(self, expr):
        fn = self._helper("_logdet", (
            "def _logdet(x):\n"
            "    sign, logabs = numpy.linalg.slogdet(x)\n"
            "    return logabs if sign > 0 else (-math.inf if sign == 0 else math.nan)"))
        return f"{fn}({self._print(expr.args[0])})"

    def _print_LogAbsDetOp(self, expr):
        return f"numpy.linalg.slogdet({self._print(expr.args[0])})[1]"

    def _print_SolveOp(self, expr):
        return f"numpy.linalg.solve({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_EyeOp(self, expr):
        return f"numpy.eye({self._print(expr.args[0])})"

    def _print_CholeskyOp(self, expr):
        return f"numpy.linalg.cholesky({self._print(expr.args[0])})"

    def _print_TrilOp(self, expr):
        return f"numpy.tril({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_TriuOp(self, expr):
        return f"numpy.triu({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_ConcatOp(self, expr):
        x, y, axis = expr.args
        return f"numpy.concatenate(({self._print(x)}, {self._print(y)}), axis={self._print(axis)})"


class _TorchPrinting(_ArrayPrinterMixin):
    """symgrad's additions to SymPy's torch printer (``TorchCodePrinter``). ``_dt`` and
    ``_dev`` are the dtype and device of the arguments, bound by the generated function."""

    M = "torch"

    def __init__(self, settings=None):
        super().__init__(settings)
        self.preamble = {}

    def _print_Max(self, expr):
        return self._minmax("torch.maximum", "min", expr)

    def _print_Min(self, expr):
        return self._minmax("torch.minimum", "max", expr)

    def _minmax(self, fn, bound, expr):
        tensors = [a for a in expr.args if not a.is_number]
        numbers = [a for a in expr.args if a.is_number]
        out = self._print(tensors[0])
        for a in tensors[1:]:
            out = f"{fn}({out}, {self._print(a)})"
        for a in numbers:
            out = f"torch.clamp({out}, {bound}={self._print(a)})"
        return out

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == 2 or e == -1 or abs(e) == sympy.S.Half:
            return _ArrayPrinterMixin._print_Pow(self, expr)
        if base.is_number or all(v.is_integer for v in base.free_symbols):  # dims
            return f"torch.pow(torch.as_tensor({self._print(base)}, dtype=_dt, device=_dev), {self._print(e)})"
        return f"torch.pow({self._print(base)}, {self._print(e)})"

    def _print_Abs(self, expr):
        return f"torch.abs({self._print(expr.args[0])})"

    def _print_sign(self, expr):
        return f"torch.sign({self._print(expr.args[0])})"

    def _print_log1p(self, expr):
        return f"torch.log1p({self._print(expr.args[0])})"

    def _print_expm1(self, expr):
        return f"torch.expm1({self._print(expr.args[0])})"

    def _print_sigmoid(self, expr):
        return f"torch.sigmoid({self._print(expr.args[0])})"

    def _print_softplus(self, expr):
        x = self._print(expr.args[0])
        return f"torch.logaddexp({x}, torch.zeros_like({x}))"

    def _print_relu(self, expr):
        return f"torch.relu({self._print(expr.args[0])})"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        if expr.args[1].is_number and expr.args[2].is_number:
            a = f"torch.as_tensor({a}, dtype=_dt, device=_dev)"
        return f"torch.where({c}, {a}, {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        lo = "None" if lo is sympy.S.NegativeInfinity else self._print(lo)
        hi = "None" if hi is sympy.S.Infinity else self._print(hi)
        return f"torch.clamp({self._print(x)}, min={lo}, max={hi})"

    def _print_AsFloat(self, expr):
        return f"({self._print(expr.args[0])}).to(_dt)"

    def _print_StopGradient(self, expr):
        return f"{self._arg(expr.args[0])}.detach()"

    def _print_Relational(self, expr):
        fn = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[expr.rel_op]
        return f"torch.{fn}({self._print(expr.lhs)}, {self._print(expr.rhs)})"

    def _print_And(self, expr):
        return NumpyCodePrinter._fold("torch.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return NumpyCodePrinter._fold("torch.logical_or", [self._print(a) for a in expr.args])

    def _print_Not(self, expr):
        return f"torch.logical_not({self._print(expr.args[0])})"

    def _print_SumOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"torch.sum({self._print(x)})"
        return f"torch.sum({self._print(x)}, dim={self._tuple(axes)}, keepdim={keep is sympy.true})"

    def _print_MeanOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"torch.mean({self._print(x)})"
        return f"torch.mean({self._print(x)}, dim={self._tuple(axes)}, keepdim={keep is sympy.true})"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        if tuple(axes) == (1, 0):
            return f"{self._arg(x)}.T"
        return f"torch.permute({self._print(x)}, {self._tuple(axes)})"

    def _print_ReshapeOp(self, expr):
        return f"torch.reshape({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_SqueezeOp(self, expr):
        return f"torch.squeeze({self._print(expr.args[0])}, dim={self._tuple(expr.args[1])})"

    def _print_UnsqueezeOp(self, expr):
        return f"torch.unsqueeze({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_BroadcastOp(self, expr):
        return f"torch.broadcast_to({self._print(expr.args[0])}, {self._tuple(expr.args[1])})"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        return f"torch.full({self._tuple(shape)}, {self._print(value)}, dtype=_dt, device=_dev)"

    def _print_ArraySymbol(self, expr):
        return f"torch.as_tensor({expr.name}, dtype=_dt, device=_dev)"

    _INDEX_SCATTER = ("def _index_scatter(g, shape, index, dtype=None, device=None):\n"
                      "    out = torch.zeros(shape, dtype=dtype, device=device)\n"
                      "    out[index] = g\n"
                      "    return out")

    def _call(self, fn, expr):
        return f"{fn}(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_AmaxOp(self, expr):
        return self._reduce("torch.amax", expr)

    _print_MaxOp = _print_AmaxOp

    def _print_AminOp(self, expr):
        return self._reduce("torch.amin", expr)

    _print_MinOp = _print_AminOp

    def _print_ProdOp(self, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"torch.prod({self._print(x)})"
        if len(axes) == 1:
            return f"torch.prod({self._print(x)}, dim={self._print(axes[0])}, keepdim={keep is sympy.true})"
        return f"torch.prod({self._print(x)}).reshape({self._tuple([1] * len(axes))})"

    def _print_NormOp(self, expr):
        return self._reduce("torch.linalg.vector_norm", expr)

    def _print_VarOp(self, expr):
        return self._reduce("torch.var", expr, f", correction={self._print(expr.args[4])}")

    def _print_StdOp(self, expr):
        return self._reduce("torch.std", expr, f", correction={self._print(expr.args[4])}")

    def _print_CumsumOp(self, expr):
        return f"torch.cumsum({self._print(expr.args[0])}, dim={self._print(expr.args[1])})"

    def _print_SoftmaxOp(self, expr):
        return f"torch.softmax({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_LogSoftmaxOp(self, expr):
        return f"torch.log_softmax({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_LogsumexpOp(self, expr):
        x, axes, keep, full = expr.args
        return f"torch.logsumexp({self._print(x)}, dim={self._tuple(axes)}, keepdim={keep is sympy.true})"

    def _print_OneHotOp(self, expr):
        t, n = expr.args
        return f"torch.nn.functional.one_hot(({self._print(t)}).long(), {self._print(n)}).to(_dt)"

    def _print_CrossEntropyOp(self, expr):
        x, t, probabilities, reduction = expr.args
        target = self._print(t) if probabilities is sympy.true else f"({self._print(t)}).long()"
        return (f"torch.nn.functional.cross_entropy({self._print(x)}, {target}, "
                f"reduction={str(reduction)!r})")

    def _print_DotOp(self, expr):
        return self._call("torch.dot", expr)

    def _print_OuterOp(self, expr):
        return self._call("torch.outer", expr)

    def _print_TraceOp(self, expr):
        return self._call("torch.trace", expr)

    def _print_DiagonalOp(self, expr):
        return f"torch.diagonal({self._print(expr.args[0])}).clone()"

    def _print_DiagOp(self, expr):
        return self._call("torch.diag", expr)

    def _print_InverseOp(self, expr):
        return self._call("torch.linalg.inv", expr)

    def _print_DetOp(self, expr):
        return self._call("torch.linalg.det", expr)

    def _print_LogdetOp(self, expr):
        return self._call("torch.logdet", expr)

    def _print_LogAbsDetOp(self, expr):
        return f"torch.linalg.slogdet({self._print(expr.args[0])})[1]"

    def _print_SolveOp(self, expr):
        return self._call("torch.linalg.solve", expr)

    def _print_EyeOp(self, expr):
        return f"torch.eye({self._print(expr.args[0])}, dtype=_dt, device=_dev)"

    def _print_CholeskyOp(self, expr):
        return self._call("torch.linalg.cholesky", expr)

    def _print_TrilOp(self, expr):
        return self._call("torch.tril", expr)

    def _print_TriuOp(self, expr):
        return self._call("torch.triu", expr)

    def _print_ConcatOp(self, expr):
        x, y, axis = expr.args
        return f"torch.cat(({self._print(x)}, {self._print(y)}), dim={self._print(axis)})"


class MathCodePrinter(_ArrayPrinterMixin, PythonCodePrinter):
    """Plain Python floats and ``math``: the fastest code when every value is a scalar."""

    M = "math"

    def __init__(self, settings=None):
        super().__init__(dict({"fully_qualified_modules": True}, **(settings or {})))
        self.preamble = {}

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if e == -1 or abs(e) == sympy.S.Half or e == 2:
            return _ArrayPrinterMixin._print_Pow(self, expr)
        return self._arg(base, "Pow") + "**" + self._arg(e, "Pow")

    def _print_sigmoid(self, expr):
        return f"(1.0/(1.0 + math.exp(-{self._arg(expr.args[0], 'Mul')})))"

    def _print_softplus(self, expr):
        x = self._print(expr.args[0])
        return f"(max({x}, 0.0) + math.log1p(math.exp(-abs({x}))))"

    def _print_relu(self, expr):
        return f"max({self._print(expr.args[0])}, 0.0)"

    def _print_Where(self, expr):
        c, a, b = (self._print(x) for x in expr.args)
        return f"({a} if {c} else {b})"

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        out = self._print(x)
        if lo is not sympy.S.NegativeInfinity:
            out = f"max({out}, {self._print(lo)})"
        if hi is not sympy.S.Infinity:
            out = f"min({out}, {self._print(hi)})"
        return out

    def _print_AsFloat(self, expr):
        return f"(1.0 if {self._print(expr.args[0])} else 0.0)"

    def _print_MseLossOp(self, expr):
        x, y, _ = expr.args
        return f"({self._print(x)} - {self._arg(y, 'Add')})**2"

    def _print_BceWithLogitsOp(self, expr):
        x, y, _ = expr.args
        a = self._print(x)
        return (f"(max({a}, 0.0) - {self._arg(x, 'Mul')}*{self._arg(y, 'Mul')} "
                f"+ math.log1p(math.exp(-abs({a}))))")

    def _print_FillOp(self, expr):
        shape, value = expr.args
        if len(shape):
            raise ValueError("MathCodePrinter prints scalars only")
        return _float_literal(float(value))


_torch_printer_class = None


def torch_printer_class():
    """``TorchCodePrinter``, built on first use: SymPy's torch printer imports torch,
    which ``import symgrad`` should not pay for."""
    global _torch_printer_class
    if _torch_printer_class is None:
        try:
            from sympy.printing.pytorch import TorchPrinter as base
        except ImportError:  # pragma: no cover - SymPy < 1.13
            base = NumPyPrinter
        _torch_printer_class = type("TorchCodePrinter", (_TorchPrinting, base),
                                    {"__doc__": _TorchPrinting.__doc__,
                                     "__module__": __name__})
    return _torch_printer_class


def __getattr__(name):
    if name == "TorchCodePrinter":
        return torch_printer_class()
    raise AttributeError(name)


PRINTERS = {"numpy": NumpyCodePrinter, "torch": lambda: torch_printer_class()(),
            "math": MathCodePrinter}
_template_caches = {}


def templates(backend):
    cache = _template_caches.get(backend)
    if cache is None:
        if backend not in PRINTERS:
            raise ArgumentError(f"unknown backend {backend!r}; choose 'numpy' or 'torch'")
        cache = _template_caches[backend] = TemplateCache(PRINTERS[backend](),
                                                          float_constants=True)
    return cache
