"""The Numba backend: ``compile("numba")`` gives a function with the NumPy backend's
arguments, checks and results (NumPy arrays in the arguments' dtype), whose program runs
as ``@numba.njit`` kernels.

Inside a kernel, elementwise statements of one shape are fused into one loop nest, sums
and means are loops, and matrix products are Numba's BLAS calls (``numba_kernels``). Ops
Numba cannot compile run as NumPy code between kernels in the same outer function, whose
docstring says which ops run where. Kernels compute in float64; the outer function
converts the arguments to float64 and the results to the arguments' dtype, as the NumPy
backend's dtype policy says.

The pipeline is ``codegen.numba_compile`` (it assembles the function with ``emit``'s
parts, which import the backends). Numba's on-disk cache (``cache=True``) needs the source in a real file: the kernels are
written to ``$SYMGRAD_CACHE/numba/<hash>.py`` (default ``~/.cache/symgrad/numba``), named by
a hash of their source, and imported from there, so a second process reuses the machine
code instead of compiling again (about a second per kernel).
"""
from ...core.opdef import render
from ...core.optional import MissingDependencyError
from ...core.program import TemplateCache
from . import rolled_native
from .math import MathCodePrinter
from .numpy import NumpyBackend, NumpyCodePrinter

def require_numba(feature='compile("numba")'):
    """The numba module, or a MissingDependencyError saying how to install it."""
    try:
        import numba
    except ImportError as e:
        raise MissingDependencyError(
            f"{feature} needs Numba, which is not installed here; install it with "
            "pip install 'symgrad[numba]' (the NumPy backend works without it)") from e
    return numba


class ElementPrinter(MathCodePrinter):
    """One element of an elementwise op, as scalar code Numba compiles."""

    # Numba's math.floor, ceil, trunc and round return int64: nan, inf and |x| >= 2**63
    # come back as -2**63. NumPy's spellings keep floats.
    FLOAT_ROUNDING = frozenset({"floor", "ceil", "trunc", "round"})

    def _print_OpBase(self, expr):
        if type(expr).opdef.name in self.FLOAT_ROUNDING:
            return render(expr, self, "numpy")
        return super()._print_OpBase(expr)

    def _print_Pow(self, expr, rational=False):
        """A negative integer power as a quotient of floats: Numba's x ** negative int is
        an integer power, 0 for an int x and an error for x = 0, where NumPy and torch
        give 1/x**k and inf. A power of dims in float (dims are ints)."""
        base, e = expr.args
        dims = bool(base.free_symbols) and all(s.is_integer for s in base.free_symbols)
        if e.is_Integer and e < 0:   # in float: an int element's power would overflow
            b = f"float({self._print(base)})"
            return f"(1.0/{b})" if e == -1 else f"(1.0/{b}**{-int(e)})"
        if dims and not (e.is_Integer and e >= 0):
            return f"float({self._print(base)})**{self.arg(e, 'Pow')}"
        return super()._print_Pow(expr, rational)


class KernelArrayPrinter(NumpyCodePrinter):
    """NumPy spellings inside a kernel (what Numba's NumPy support compiles)."""

    def _print_sign(self, expr):
        return f"numpy.sign({self._print(expr.args[0])})"


class NumbaBackend(NumpyBackend):
    name = "numba"
    modules = ("math", "numpy")
    scalar_backend = None

    def __init__(self):
        super().__init__()
        self._elements = None
        self._arrays = None

    def rolls(self, plan):
        """A rolled gradient of scalars whose every statement has an element form is one
        jitted function with loops (``rolled_native``); one with arrays keeps its
        straight-line program and its fused kernels."""
        return rolled_native.native(plan, self.caches()[0])

    def scalar_result(self, name):
        """A kernel returns Python floats; the NumPy backend NumPy scalars."""
        return f"numpy.float64({name})"

    def caches(self):
        if self._elements is None:
            self._elements = TemplateCache(ElementPrinter(), float_constants=True)
            self._arrays = TemplateCache(KernelArrayPrinter(), float_constants=True)
        return self._elements, self._arrays
