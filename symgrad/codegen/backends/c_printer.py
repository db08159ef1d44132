"""C99 for one element of a pointwise op: SymPy's ``C99CodePrinter`` extended to symgrad's
formulas, with NumPy's semantics where C's differ (NaN-propagating maximum and minimum,
sign(NaN) = 0, Python's remainder, logaddexp).

Every value is a ``double`` (booleans are 0.0 / 1.0). OpDefs carry no C spellings: the C
forms of symgrad's own op classes are the table ``C_FORMS`` here (op name -> function of
the printer and the printed operands and parameters). An op missing from the table, or a
SymPy function C99 cannot print, raises ``PrintMethodNotImplementedError`` and the
statement stays NumPy code (see ``c.py``). Names are never user text: operands are
``a<k>``/``s<k>``/``t<k>`` filled into templates, dims are ``sgd_<code name>``.
"""
import math

import sympy
from sympy.printing.c import C99CodePrinter
from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ...core.program import PLACEHOLDERS
from ..names import code_name

PRELUDE = r"""#include <math.h>
#include <stdlib.h>
static inline double sg_max(double a, double b) { return (a >= b || a != a) ? a : b; }
static inline double sg_min(double a, double b) { return (a <= b || a != a) ? a : b; }
static inline double sg_sign(double x) { return (double)((x > 0) - (x < 0)); }
static inline double sg_logaddexp(double a, double b) {
    if (a == b) return a + 0.6931471805599453;
    double d = a - b;
    if (d > 0) return a + log1p(exp(-d));
    if (d <= 0) return b + log1p(exp(d));
    return d;
}
static inline double sg_remainder(double a, double b) {
    double m = fmod(a, b);
    if (b == 0) return m;
    if (m != 0) { if ((b < 0) != (m < 0)) m += b; }
    else m = copysign(0.0, b);
    return m;
}
"""


def c_float(value):
    """A double literal (``INFINITY``, ``NAN`` for the non-finite)."""
    if math.isnan(value):
        return "NAN"
    if math.isinf(value):
        return "INFINITY" if value > 0 else "(-INFINITY)"
    text = repr(float(value))
    return text if value >= 0 else f"({text})"


def dim_name(symbol):
    """A dim in C: the code name (an ASCII identifier, see ``names``) behind a prefix no C
    keyword or libm function has."""
    return "sgd_" + code_name(symbol.name)


def _round(p, x, decimals):
    d = int(decimals)
    if d == 0:
        return f"nearbyint({x})"
    if d > 0:
        return f"(nearbyint(({x}) * {10.0 ** d!r}) / {10.0 ** d!r})"
    return f"(nearbyint(({x}) / {10.0 ** -d!r}) * {10.0 ** -d!r})"


def _clamp(p, x, lo, hi):
    out = x
    if lo != "(-INFINITY)":
        out = f"sg_max({out}, {lo})"
    if hi != "INFINITY":
        out = f"sg_min({out}, {hi})"
    return out


C_FORMS = {
    "logaddexp": lambda p, x, y: f"sg_logaddexp({x}, {y})",
    "hypot": lambda p, x, y: f"hypot({x}, {y})",
    "sigmoid": lambda p, x: f"(1.0/(1.0 + exp(-({x}))))",
    "relu": lambda p, x: f"sg_max({x}, 0.0)",
    "relu_grad": lambda p, g, x: f"(({x}) <= 0 ? 0.0 : ({g}))",
    "softplus": lambda p, x: f"sg_logaddexp(0.0, {x})",
    "isnan": lambda p, x: f"(double)isnan({x})",
    "cast": lambda p, x: f"(({x}) != 0 ? 1.0 : 0.0)",
    "where": lambda p, c, x, y: f"(({c}) != 0 ? ({x}) : ({y}))",
    "clamp": _clamp,
    "detach": lambda p, x: f"({x})",
    "floor": lambda p, x: f"floor({x})",
    "ceil": lambda p, x: f"ceil({x})",
    "trunc": lambda p, x: f"trunc({x})",
    "round": _round,
    "signbit": lambda p, x: f"(double)(signbit({x}) != 0)",
    "fmod": lambda p, x, y: f"fmod({x}, {y})",
    "remainder": lambda p, x, y: f"sg_remainder({x}, {y})",
    "nextafter": lambda p, x, y: f"nextafter({x}, {y})",
    "erfc": lambda p, x: f"erfc({x})",
}
RAW_PARAMS = {"round"}   # parameters passed as Python values, not printed


class CCodePrinter(C99CodePrinter):
    """Doubles throughout; see the module docstring."""

    def __init__(self, settings=None):
        super().__init__(dict(settings or {}))
        self.preamble = {}

    def _print(self, expr, **kwargs):
        """A number subexpression as its double value, IEEE semantics (overflow is inf,
        a non-real value NaN), as the other backends print it."""
        if isinstance(expr, sympy.Expr) and not expr.is_Atom and expr.is_number:
            value = expr.evalf()
            if value.is_Number or value.is_number and value.is_extended_real is False:
                try:
                    value = complex(value)
                except (TypeError, ValueError, OverflowError):
                    value = complex(math.inf if value.is_extended_positive else math.nan)
                return c_float(value.real if value.imag == 0 else math.nan)
        return super()._print(expr, **kwargs)

    def emptyPrinter(self, expr):
        raise PrintMethodNotImplementedError(f"no C form for {type(expr).__name__}")

    def _print_not_supported(self, expr):
        raise PrintMethodNotImplementedError(f"no C form for {type(expr).__name__}")

    def _print_Symbol(self, expr):
        if expr.name.startswith("sgarg") and expr in PLACEHOLDERS:
            return expr.name
        if expr.is_integer:
            return dim_name(expr)
        raise PrintMethodNotImplementedError(f"no C form for the symbol {expr}")

    def _print_Float(self, expr):
        return c_float(float(expr))

    def _print_Integer(self, expr):
        return c_float(float(int(expr)))

    def _print_Rational(self, expr):
        return c_float(float(expr))

    def _print_Infinity(self, expr):
        return "INFINITY"

    def _print_NegativeInfinity(self, expr):
        return "(-INFINITY)"

    def _print_NaN(self, expr):
        return "NAN"

    def _print_Pow(self, expr, rational=False):
        base, e = expr.args
        b = self._print(base)
        if e == 2:
            return f"(({b})*({b}))"
        if e == -1:
            return f"(1.0/({b}))"
        if e == sympy.S.Half:
            return f"sqrt({b})"
        if e == -sympy.S.Half:
            return f"(1.0/sqrt({b}))"
        return f"pow({b}, {self._print(e)})"

    def _print_Max(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"sg_max({out}, {self._print(a)})"
        return out

    def _print_Min(self, expr):
        out = self._print(expr.args[0])
        for a in expr.args[1:]:
            out = f"sg_min({out}, {self._print(a)})"
        return out

    def _print_sign(self, expr):
        return f"sg_sign({self._print(expr.args[0])})"

    def _print_Abs(self, expr):
        return f"fabs({self._print(expr.args[0])})"

    def _print_Relational(self, expr):
        op = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}[expr.rel_op]
        return f"(double)(({self._print(expr.lhs)}) {op} ({self._print(expr.rhs)}))"

    def _print_And(self, expr):
        return "(double)(" + " && ".join(f"(({self._print(a)}) != 0)" for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(double)(" + " || ".join(f"(({self._print(a)}) != 0)" for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"(double)(({self._print(expr.args[0])}) == 0)"

    def _print_BooleanTrue(self, expr):
        return "1.0"

    def _print_BooleanFalse(self, expr):
        return "0.0"

    def _print_OpBase(self, expr):
        opdef = type(expr).opdef
        form = C_FORMS.get(opdef.name)
        if form is None:
            raise PrintMethodNotImplementedError(f"op {opdef.name} has no C form")
        operands = [self._print(e) for e in expr.operands]
        params = [expr.params[n] for n in (opdef.sympy_params or ())]
        if opdef.name in RAW_PARAMS:
            params = [_raw(v) for v in params]
        else:
            params = [self._print(v) for v in params]
        return form(self, *operands, *params)


def _raw(value):
    try:
        return int(value)
    except TypeError:
        return value
