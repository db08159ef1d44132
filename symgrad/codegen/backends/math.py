"""Plain Python floats and ``math``: the fastest code when every value is a scalar. Not a
public backend: the NumPy backend runs scalar programs with it (``scalar_backend``)."""
import math

import sympy
from sympy.printing.pycode import PythonCodePrinter

from ..printers import ArrayPrinting, float_literal, fold
from .base import Backend

# maximum and minimum as torch's: a nan on either side is the result (Python's max(1.0,
# nan) is 1.0). A call of these is also faster than one of the builtins.
_EXTREMA = {
    "_sg_max": "def _sg_max(a, b):\n    return a if a >= b or a != a else b",
    "_sg_min": "def _sg_min(a, b):\n    return a if a <= b or a != a else b",
}


class MathCodePrinter(ArrayPrinting, PythonCodePrinter):
    """Python floats and the ``math`` module."""

    M = "math"
    target = "math"
    dim_division = False

    def _print_Pow(self, expr, rational=False):
        """x**k for an integer k; ``math.pow`` otherwise, which raises (and the NumPy
        code takes over, giving nan) where Python's ** would return a complex number."""
        base, e = expr.args
        if e == -1 or abs(e) == sympy.S.Half or e == 2:
            return ArrayPrinting._print_Pow(self, expr)
        if e.is_Integer:
            return self.arg(base, "Pow") + "**" + self.arg(e, "Pow")
        return f"math.pow({self._print(base)}, {self._print(e)})"


    def _print_Max(self, expr):
        self.preamble["_sg_max"] = _EXTREMA["_sg_max"]
        return fold("_sg_max", [self._print(a) for a in expr.args])

    def _print_Min(self, expr):
        self.preamble["_sg_min"] = _EXTREMA["_sg_min"]
        return fold("_sg_min", [self._print(a) for a in expr.args])

    def _print_sign(self, expr):
        """0 at nan, as torch.sign."""
        x = self.arg(expr.args[0], "Atom")
        return f"(1.0 if {x} > 0 else -1.0 if {x} < 0 else 0.0)"


class MathBackend(Backend):
    name = "math"
    modules = ("math",)
    scatter_in_place = False

    def printer(self):
        return MathCodePrinter()

    def namespace(self):
        return {"math": math}

    def zeros(self, shape):
        return "0.0"

    def as_float(self, name, shape):
        return f"float({name})"

    def scalar_output(self, value, printer):
        return float_literal(float(value))
