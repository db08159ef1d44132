"""The LaTeX view of formulas: SymPy's ``LatexPrinter`` printing floats as Python does and
names whole; symgrad's op classes print themselves from their OpDef's LaTeX spelling
(``OpBase._latex``)."""
import re

from sympy import Symbol, true
from sympy.printing.latex import LatexPrinter, greek_letters_set

from .forms import float_text

_INTERMEDIATE = re.compile(r"t(\d+)")
_GREEK = greek_letters_set | {g.capitalize() for g in greek_letters_set} | {"lamda", "Lamda"}


def latex_name(name):
    """A user's name kept whole: ``x_train`` is x\\_train and ``sigma2`` is sigma2 in one
    italic word (SymPy would read them as x subscript train and σ₂). A name is Greek only
    when it is exactly a Greek letter's name, one letter stays as it is, and symgrad's own
    intermediates t1, t2, ... print as t₁, t₂."""
    match = _INTERMEDIATE.fullmatch(name)
    if match:
        return f"t_{{{match.group(1)}}}"
    if name in _GREEK:
        return LatexPrinter()._print_Symbol(Symbol(name))
    if len(name) == 1:
        return name
    return r"\mathit{" + name.translate(_ESCAPES) + "}"


_ESCAPES = str.maketrans({c: "\\" + c for c in "_{}#$%&"})


class FormulaLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer, with floats as Python prints them and names kept whole."""

    def _print_Float(self, expr):
        return float_text(expr)

    def _print_Symbol(self, expr, style="plain"):
        return latex_name(expr.name)

    def _print_Piecewise(self, expr):
        """{1 if c; 0} as the Iverson bracket [c] (relu's slope [x > 0])."""
        if len(expr.args) == 2 and expr.args[0].expr == 1 and expr.args[1].expr == 0 \
                and expr.args[1].cond is true:
            return rf"\left[{self._print(expr.args[0].cond)}\right]"
        return super()._print_Piecewise(expr)

    def _print_Heaviside(self, expr, exp=None):
        if len(expr.args) == 2 and expr.args[1] == 0:
            return rf"\left[{self._print(expr.args[0])} > 0\right]"
        return super()._print_Heaviside(expr, exp)


_latex_printer = FormulaLatexPrinter()


def latex_expr(expr):
    return _latex_printer.doprint(expr)
