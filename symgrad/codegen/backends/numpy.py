"""The NumPy backend: SymPy's NumPy printer extended to symgrad's formulas, arguments
converted to float64 arrays, and scalar programs run as plain ``math`` code with NumPy as
the fallback where ``math`` raises (log(-1), overflow), since NumPy gives nan and inf."""
import math

import numpy
from sympy.printing.numpy import NumPyPrinter

from ...core.ops.pointwise import has_scipy
from ..printers import ArrayPrinting, fold
from .base import Backend, shape_tuple


class NumpyCodePrinter(ArrayPrinting, NumPyPrinter):
    """SymPy's NumPy printer, extended to symgrad's formulas."""

    M = "numpy"
    target = "numpy"

    def _print_Max(self, expr):
        return fold("numpy.maximum", [self._print(a) for a in expr.args])

    def _print_Min(self, expr):
        return fold("numpy.minimum", [self._print(a) for a in expr.args])

    def _print_Abs(self, expr):
        return f"numpy.abs({self._print(expr.args[0])})"

    def _print_And(self, expr):
        return fold("numpy.logical_and", [self._print(a) for a in expr.args])

    def _print_Or(self, expr):
        return fold("numpy.logical_or", [self._print(a) for a in expr.args])

    def _print_erf(self, expr):
        if has_scipy():
            self.preamble["_erf"] = "from scipy.special import erf as _erf"
        else:
            self.preamble["_erf"] = "_erf = numpy.vectorize(math.erf, otypes=[float])"
        return f"_erf({self._print(expr.args[0])})"


class NumpyBackend(Backend):
    name = "numpy"
    modules = ("math", "numpy")
    scalar_backend = "math"
    argument_helper = (
        "def _real_array(value, name):\n"
        "    array = numpy.asarray(value)\n"
        "    if array.dtype.kind not in 'fiu':\n"
        "        raise ArgumentError('argument %s must be real numbers (float or int), got "
        "%s of dtype %s' % (name, type(value).__name__, array.dtype))\n"
        "    if array.dtype.kind != 'f':\n"
        "        array = array.astype(numpy.float64)\n"
        "    return array if array.ndim else float(array)\n")

    def printer(self):
        return NumpyCodePrinter()

    def namespace(self):
        return {"numpy": numpy, "math": math}

    def argument_lines(self, x):
        name = x.name
        if x.shape:
            return [f"if type({name}) is not numpy.ndarray or {name}.dtype.kind != 'f':",
                    f"    {name} = _real_array({name}, '{name}')"]
        return [f"if type({name}) is not float:",
                f"    {name} = _real_array({name}, '{name}')",
                f"    if type({name}) is not float:",
                f"        raise ArgumentError('argument {name} must have shape (), "
                f"got shape %s' % (tuple({name}.shape),))"]

    def checks_shape(self, x):
        """Scalars are checked by their conversion already."""
        return bool(x.shape)

    def body_prefix(self, inputs):
        return [f"{x.name} = numpy.float64({x.name})" for x in inputs if not x.shape]

    def zeros(self, shape):
        return f"numpy.zeros({shape_tuple(shape)})" if shape else "0.0"

    def copy(self, name):
        return f"numpy.array({name}, dtype=numpy.float64)"

    def array_literal(self, array):
        return f"numpy.array({array.tolist()!r})"
