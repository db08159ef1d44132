"""The LaTeX view of formulas: SymPy's ``LatexPrinter`` printing floats as Python does;
symgrad's op classes print themselves from their OpDef's LaTeX spelling
(``OpBase._latex``)."""
from sympy.printing.latex import LatexPrinter


class FormulaLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer, with floats as Python prints them."""

    def _print_Float(self, expr):
        return repr(float(expr))


_latex_printer = FormulaLatexPrinter()


def latex_expr(expr):
    return _latex_printer.doprint(expr)
