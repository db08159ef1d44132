"""The LaTeX view of formulas: SymPy's ``LatexPrinter`` printing floats as Python does and
names whole; symgrad's op classes print themselves from their OpDef's LaTeX spelling
(``OpBase._latex``)."""
import re

from sympy import Symbol, true
from sympy.printing.latex import LatexPrinter, greek_letters_set
from sympy.printing.precedence import PRECEDENCE, precedence_traditional

from ..core.opdef import PRECEDENCE as OP_PRECEDENCE, PRECEDENCE_SPECS, script_base
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


_ESCAPES = str.maketrans({**{c: "\\" + c for c in "_{}#$%&"}, "\\": r"\backslash{}",
                          "^": r"\wedge{}", "~": r"\sim{}"})


def latex_precedence(item):
    """How tightly ``item``'s LaTeX binds: an op's own LaTeX precedence (``x \\bmod y``
    below a product, ``A^{-1} b`` a product, a call an atom), else SymPy's."""
    own = getattr(item, "latex_precedence", None)
    return own if isinstance(own, int) else precedence_traditional(item)


class LatexPrecedence:
    """What symgrad's LaTeX printers add to SymPy's: ops parenthesised by the precedence
    of their LaTeX spelling, not of their text (``solve_triangular(A, b)`` is a call in
    text and the product ``A^{-1} b`` in LaTeX), and no double superscripts or subscripts
    on the operands of a spelling."""

    def parenthesize(self, item, level, is_neg=False, strict=False):
        if is_neg and strict or latex_precedence(item) < level or \
                not strict and latex_precedence(item) <= level:
            return self._add_parens(self._print(item))
        return self._print(item)

    def _needs_mul_brackets(self, expr, first=False, last=False):
        """An op's LaTeX below a product in parentheses, and one at a product's level
        too unless it comes last (``\\log \\det A`` before x)."""
        own = getattr(expr, "latex_precedence", None)
        if isinstance(own, int):
            return own < PRECEDENCE["Mul"] or own == PRECEDENCE["Mul"] and not last
        return super()._needs_mul_brackets(expr, first=first, last=last)  # type: ignore[misc]

    def operand_text(self, expr, spec):
        """An operand of an op's LaTeX spelling at the precedence ``spec`` names; a call
        counts as an atom (f(x)_{0}), and a base already carrying a script is put in
        parentheses (``{x:atom}`` takes a subscript, ``{x:pow}`` a superscript)."""
        level = PRECEDENCE_SPECS[spec]
        if level is None:
            return self._print(expr)
        if level == "Atom":
            return script_base(self.parenthesize(expr, PRECEDENCE["Func"], strict=True))
        text = self.parenthesize(expr, OP_PRECEDENCE[level], strict=False)
        return script_base(text, "^") if level == "Pow" else text


class FormulaLatexPrinter(LatexPrecedence, LatexPrinter):
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
