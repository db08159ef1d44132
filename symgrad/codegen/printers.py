"""What every code printer shares: SymPy's printers extended to symgrad's formulas.

Each backend's printer subclasses SymPy's (``NumPyPrinter``, ``TorchPrinter``,
``PythonCodePrinter``) together with ``ArrayPrinting``, which spells symgrad's op classes
from their OpDefs (``_print_OpBase``: the op's spelling for the printer's ``target``) and
fixes what SymPy's stock printing gets wrong for generated array code: number
subexpressions as IEEE floats, ``x**2`` as a product, scalar factors gathered before they
meet an array. The backends add ``_print_<Class>`` methods only for SymPy's own classes.
"""
import math

import sympy
from sympy.printing.precedence import PRECEDENCE

from ..core.opdef import is_scalar_constant, render
from ..core.program import PLACEHOLDERS
from .names import code_name, dim_code



def float_literal(value):
    """A float as Python source: ``math.inf`` and ``math.nan`` for the non-finite."""
    if math.isnan(value):
        return "math.nan"
    if math.isinf(value):
        return "math.inf" if value > 0 else "(-math.inf)"
    return repr(value) if value >= 0 else f"({value!r})"


def fold(fn, args):
    """``fn(fn(a, b), c)``: a binary function applied along ``args``."""
    out = args[0]
    for a in args[1:]:
        out = f"{fn}({out}, {a})"
    return out


class ArrayPrinting:
    """Printing shared by the code backends; ``M`` is the module prefix, ``target`` the
    name under which OpDefs give this printer's spellings."""

    M = "numpy"
    target = "numpy"
    dim_division = True   # x/n is inf (or nan) for n = 0, as in torch: NumPy divides

    def __init__(self, settings=None):
        super().__init__(dict({"fully_qualified_modules": True}, **(settings or {})))
        self.preamble = {}   # helper definitions the printed code calls

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
                return float_literal(value.real if value.imag == 0 else math.nan)
        return super()._print(expr, **kwargs)

    def _print_OpBase(self, expr):
        return render(expr, self, self.target)

    def _print_Symbol(self, expr):
        """Operand placeholders as they are; dims (the only other symbols code meets) by
        their code names: a user's name never reaches code unchecked."""
        if expr.name.startswith("sgarg") and expr in PLACEHOLDERS:
            return expr.name
        return code_name(expr.name)

    def _print_Float(self, expr):
        return float_literal(float(expr))

    def _print_ceiling(self, expr):
        """Of dims (a slice's length), integer arithmetic: the result may be a shape."""
        if is_scalar_constant(expr):
            return dim_code(expr)
        return super()._print_ceiling(expr)

    def _print_floor(self, expr):
        if is_scalar_constant(expr):
            return dim_code(expr)
        return super()._print_floor(expr)

    def _print_Integer(self, expr):
        # beyond 2**53 an integer is a float for every backend (torch.pow rejects 2**64)
        return str(int(expr)) if abs(expr) <= 2 ** 53 else float_literal(float(expr))

    def _print_Infinity(self, expr):
        return "math.inf"

    def _print_NegativeInfinity(self, expr):
        return "-math.inf"

    def arg(self, expr, level="Atom"):
        """``expr`` parenthesised as an operand at the precedence of ``level``."""
        return self.parenthesize(expr, PRECEDENCE[level], strict=level == "Atom")

    def _divides_by_dims(self, expr):
        """A scalar in dims with a dim in its denominator, which a zero dim makes a
        division by zero (an error for Python numbers)."""
        return (self.dim_division and is_scalar_constant(expr)
                and not expr.is_number and expr.as_numer_denom()[1].free_symbols)

    def _dim_quotient(self, expr):
        """A Python float again, so NumPy keeps float32 arrays float32 (a weak scalar)."""
        numerator, denominator = expr.as_numer_denom()
        return (f"float(numpy.float64({self._print(numerator)})/"
                f"{self.arg(denominator, 'Pow')})")

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        if self._divides_by_dims(expr):
            return self._dim_quotient(expr)
        if e == -1:
            return "1/" + self.arg(base, "Pow")
        if e == sympy.S.Half:
            return f"{self.M}.sqrt({self._print(base)})"
        if e == -sympy.S.Half:
            return f"1/{self.M}.sqrt({self._print(base)})"
        if e == 2:
            b = self.arg(base, "Pow")
            return f"({b}*{b})" if base.is_Atom else f"{b}**2"
        return self.arg(base, "Pow") + "**" + self.arg(e, "Pow")

    def _print_Mul(self, expr):
        """Scalar factors (numbers and dims) multiplied together before they meet an
        array: ``(2/(B*o))*x`` is one array operation, ``2*x/(B*o)`` is two."""
        scalars = [a for a in expr.args if is_scalar_constant(a)]
        rest = [a for a in expr.args if not is_scalar_constant(a)]
        if self._divides_by_dims(expr):
            return self._dim_quotient(expr)
        if not rest or not scalars or len(scalars) == 1 and scalars[0].is_Number:
            return super()._print_Mul(expr)
        coefficient = sympy.Mul(*scalars)
        if coefficient == -1:
            return "-" + self.arg(sympy.Mul(*rest), "Mul")
        scale = (self._dim_quotient(coefficient) if self._divides_by_dims(coefficient)
                 else self._print(coefficient))
        return f"({scale})*{self.arg(sympy.Mul(*rest), 'Mul')}"
