"""Matrix notation as SymPy printers of the formula objects (``views.formulas``): Unicode
text (ᵀ, ∘, 𝟙, diag, x∘², t₁) and LaTeX. Precedence comes from SymPy's ``parenthesize``;
an op without a SymPy class prints by its OpDef's spelling (``OpCall._sympystr`` and
``_latex`` call back into the printer for its operands).
"""
import functools

import sympy
from sympy.core.symbol import Str
from sympy.matrices.expressions import (
    HadamardProduct, Inverse, MatAdd, MatMul, MatrixExpr, OneMatrix, Transpose)
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from ..core.opdef import script_base
from .forms import float_text
from .latex import LatexPrecedence, latex_name

_SUPER = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_ATOM = PRECEDENCE["Atom"]
_MUL = PRECEDENCE["Mul"]
_POW = PRECEDENCE["Pow"]


def is_one_by_one(e):
    return isinstance(e, MatrixExpr) and e.shape == (1, 1)


def _heaviside_argument(body, d):
    """The x of a body Heaviside(x, 0) (the [x > 0] of relu's gradient), else None."""
    if isinstance(body, sympy.Heaviside) and body.args[0] == d and len(body.args) == 2 \
            and body.args[1] == 0:
        return True
    return None


class MatrixTextPrinter(StrPrinter):
    """Matrix notation as Unicode text."""

    def _print(self, expr, **kwargs):
        """An op's scalar function by the name its matrix form gives it (σ(aᵀx), as the
        elementwise σ(X w)), before its own text spelling (sigmoid(...))."""
        opdef = getattr(expr, "opdef", None)
        if opdef is not None and isinstance(expr, sympy.Function) and opdef.pointwise:
            name = _function_name(expr)
            if name != opdef.name:
                return f"{name}({', '.join(self._print(o) for o in expr.operands)})"
        return super()._print(expr, **kwargs)

    def _print_Float(self, expr):
        return float_text(expr).replace("-", "−")

    def _print_Symbol(self, expr):
        return _name(expr.name)

    def _print_MatrixSymbol(self, expr):
        return _name(str(expr.name))

    _print_ArraySymbol = _print_MatrixSymbol

    def _print_OneMatrix(self, expr):
        rows, cols = expr.shape
        if rows == 1 and cols == 1:
            return "1"
        if cols == 1:
            return "𝟙"
        if rows == 1:
            return "𝟙ᵀ"
        return "𝟙𝟙ᵀ"

    def _print_ZeroMatrix(self, expr):
        return "0"

    def _print_Identity(self, expr):
        return "I"

    def _print_MatrixBase(self, expr):
        """A small constant: a column as the vector [1, 2, 3], a matrix by rows."""
        rows = expr.tolist()
        if expr.cols == 1:
            return "[" + ", ".join(self._print(r[0]) for r in rows) + "]"
        return "[" + ", ".join("[" + ", ".join(self._print(e) for e in r) + "]"
                               for r in rows) + "]"

    _print_ImmutableDenseMatrix = _print_MatrixBase

    def _print_MatrixElement(self, expr):
        """q[0] of a vector q (a column), A[0, 1] of a matrix."""
        parent = self.parenthesize(expr.parent, _POW, strict=True)
        if expr.parent.shape[1] == 1:
            return f"{parent}[{self._print(expr.i)}]"
        return f"{parent}[{self._print(expr.i)}, {self._print(expr.j)}]"

    def _print_Transpose(self, expr):
        arg = expr.arg
        if isinstance(arg, Inverse):
            return self.parenthesize(arg.arg, _POW, strict=True) + "⁻ᵀ"
        return self.parenthesize(arg, _POW, strict=True) + "ᵀ"

    def _print_Inverse(self, expr):
        arg = expr.arg
        if isinstance(arg, Transpose):
            return self.parenthesize(arg.arg, _POW, strict=True) + "⁻ᵀ"
        return self.parenthesize(arg, _POW, strict=True) + "⁻¹"

    def _print_MatMul(self, expr):
        coeff, factors = expr.as_coeff_matrices()
        sign = ""
        if coeff.could_extract_minus_sign():
            coeff, sign = -coeff, "−"
        parts = [] if coeff == 1 else [self._coefficient(coeff)]
        parts += [self._matrix_factor(f) for f in factors]
        return sign + " ".join(parts)

    def _coefficient(self, c):
        if isinstance(c, sympy.Add) or isinstance(c, sympy.Mul) and any(
                isinstance(f, sympy.Pow) and f.exp.is_negative for f in c.args) or \
                isinstance(c, sympy.Pow) and c.exp.is_negative or \
                isinstance(c, sympy.Rational) and c.q != 1:
            return "(" + self._print(c) + ")"
        return self._scalar_factor(c) if not isinstance(c, sympy.Mul) else self._print(c)

    def _scalar_factor(self, s):
        if isinstance(s, sympy.Trace) and is_one_by_one(s.arg):
            return "(" + self._print(s.arg) + ")" if not _is_atomic(s.arg) \
                else self._print(s.arg)
        if isinstance(s, sympy.Pow) and s.exp == -1:
            return "1/" + self._base(s.base)
        if isinstance(s, sympy.Pow):
            return self._print(s)
        return self.parenthesize(s, _MUL, strict=True)

    def _matrix_factor(self, f):
        if isinstance(f, (MatAdd, HadamardProduct)) or \
                isinstance(f, MatMul) and f.as_coeff_matrices()[0] != 1:
            return "(" + self._print(f) + ")"
        return self.parenthesize(f, _MUL, strict=False)

    def _print_MatAdd(self, expr):
        parts = []
        texts = sorted((self._print(t) for t in expr.args), key=lambda text: (
            text.startswith(("−", "-")), text.rstrip("ᵀ").endswith("𝟙"), text.count("ᵀ")))
        for i, text in enumerate(texts):
            if text.startswith("−") and i:
                parts.append(" − " + text[1:])
            elif text.startswith("-") and i:
                parts.append(" − " + text[1:])
            else:
                parts.append((" + " if i else "") + text)
        return "".join(parts)

    def _print_HadamardProduct(self, expr):
        parts = []
        for i, a in enumerate(expr.args):
            if isinstance(a, sympy.HadamardPower) and a.exp == -1 and i:
                parts.append(" ⊘ " + self._hfactor(a.base))
            else:
                parts.append((" ∘ " if i else "") + self._hfactor(a))
        return "".join(parts)

    def _hfactor(self, a):
        if isinstance(a, (MatAdd, MatMul, HadamardProduct)):
            return "(" + self._print(a) + ")"
        return self.parenthesize(a, _MUL, strict=True)

    def _print_HadamardPower(self, expr):
        base = self.parenthesize(expr.base, _POW, strict=True)
        e = expr.exp
        if e.is_Integer:
            return f"{base}∘{str(e).translate(_SUPER)}"
        return f"{base}∘^({self._print(e)})"

    def _print_ElementwiseApplyFunction(self, expr):
        fn = expr.function
        (d,), body = fn.variables, fn.expr
        arg = self._print(expr.expr)
        if _heaviside_argument(body, d):
            return f"[{arg} > 0]"
        if isinstance(body, sympy.Function) and (body.args == (d,) or getattr(
                body, "opdef", None) is not None and tuple(body.operands) == (d,)
                and not body.params):     # clamp(x, min=-0.5, max=0.5) keeps its bounds
            return f"{_function_name(body)}({arg})"
        placeholder = sympy.Symbol("\x00")
        text = self._print(body.xreplace({d: placeholder}))
        return text.replace("\x00", arg if _is_atomic(expr.expr) else f"({arg})")

    def _print_Trace(self, expr):
        if is_one_by_one(expr.arg):
            return self._print(expr.arg)
        return f"tr({self._print(expr.arg)})"

    def _print_MatPow(self, expr):
        base = self.parenthesize(expr.base, _POW, strict=True)
        e = expr.exp
        return base + (str(e).translate(_SUPER) if e.is_Integer else f"^({self._print(e)})")

    def _print_Determinant(self, expr):
        return f"det({self._print(expr.arg)})"

    def _print_DiagMatrix(self, expr):
        return f"diag({self._print(expr.args[0])})"

    def _print_DiagonalOf(self, expr):
        return f"diag({self._print(expr.arg)})"

    def _print_Mul(self, expr):
        c, rest = expr.as_coeff_Mul()
        sign = ""
        if c.is_negative:
            c, sign = -c, "−"
        num, den = [], []
        for f in sympy.Mul.make_args(rest):
            if isinstance(f, sympy.Pow) and (f.exp.is_Number or f.exp.is_Mul) and \
                    f.exp.as_coeff_Mul()[0].is_negative:
                den.append(f.base if f.exp == -1 else f.base ** -f.exp)
            else:
                num.append(f)
        if c.is_Rational and c.q != 1:
            den.insert(0, sympy.Integer(c.q))
            c = sympy.Integer(c.p)
        head = [] if c == 1 else [self._print(c)]
        text = " ".join(head + [self._scalar_factor(f) for f in num]) or "1"
        if den:
            text += "/" + " ".join(self._base(f) for f in den) \
                if len(den) == 1 else "/(" + " ".join(self._scalar_factor(f) for f in den) + ")"
        return sign + text

    def _base(self, b):
        """A base or denominator: a scalar product 𝟙ᵀx (a trace of a product) in
        parentheses, like any expression below a power."""
        if isinstance(b, sympy.Trace) and is_one_by_one(b.arg) and not _is_atomic(b.arg):
            return "(" + self._print(b.arg) + ")"
        return self.parenthesize(b, _POW, strict=True)

    def _print_Pow(self, expr, rational=False):
        if expr.exp == sympy.S.Half:
            return f"√{self._base(expr.base)}"
        if expr.exp == -1:
            return "1/" + self._base(expr.base)
        base = self._base(expr.base)
        if expr.exp.is_Integer:
            return base + str(expr.exp).translate(_SUPER)
        if isinstance(expr.exp, sympy.Symbol):
            return f"{base}^{self._print(expr.exp)}"
        return f"{base}^({self._print(expr.exp)})"

    def _print_Add(self, expr, order=None):
        """Terms joined by + and − (a term printed with a leading minus, SymPy's - or our
        −, is subtracted)."""
        texts = [(self._print(t), t) for t in self._as_ordered_terms(expr, order=order)]
        texts.sort(key=lambda p: p[0].startswith(("-", "−")))    # b − a, not −a + b
        out = []
        for text, term in texts:
            negative = text.startswith(("-", "−"))
            if negative:
                text = text[1:]
            if isinstance(term, sympy.Add):
                text = f"({text})"
            out.append((" − " if negative else " + ") + text if out else
                       ("−" if negative else "") + text)
        return "".join(out)

    def _print_Relational(self, expr):
        signs = {"==": "=", "!=": "≠", "<=": "≤", ">=": "≥", "<": "<", ">": ">"}
        return (f"{self.parenthesize(expr.lhs, PRECEDENCE['Add'])} "
                f"{signs.get(expr.rel_op, expr.rel_op)} "
                f"{self.parenthesize(expr.rhs, PRECEDENCE['Add'])}")

    def _print_And(self, expr):
        return " & ".join(self._logic_operand(a) for a in expr.args)

    def _print_Or(self, expr):
        return " | ".join(self._logic_operand(a) for a in expr.args)

    def _logic_operand(self, a):
        text = self._print(a)
        return f"({text})" if isinstance(a, (sympy.And, sympy.Or)) else text

    def param_text(self, expr, spec):
        """An op's parameter as code writes it (axis=(-1, 2), not the − of the math)."""
        if spec == "raw":
            return self._print(expr)
        if isinstance(expr, sympy.Tuple):
            items = [self.param_text(e, "") for e in expr]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if isinstance(expr, Str):
            return "None" if expr.name == "None" else repr(expr.name)
        if expr is sympy.true or expr is sympy.false:
            return str(bool(expr))
        if isinstance(expr, sympy.Number):
            return str(expr) if not isinstance(expr, sympy.Float) else float_text(expr)
        return self._print(expr)

    def _print_Integer(self, expr):
        """An integer as written, a huge one (an integral float such as 1e300) as a
        float."""
        if abs(expr) >= 10**16:
            return float_text(expr).replace("-", "−")
        return str(expr).replace("-", "−")

    def _print_Infinity(self, expr):
        return "∞"

    def _print_NegativeInfinity(self, expr):
        return "−∞"

    def _print_Rational(self, expr):
        return str(expr).replace("-", "−")

    def _print_Piecewise(self, expr):
        if _iverson(expr):
            return f"[{self._print(expr.args[0].cond)}]"
        pieces = [f"{self._print(e)} if {self._print(c)}" for e, c in expr.args[:-1]]
        last = expr.args[-1]
        pieces.append(self._print(last[0]) if last[1] == sympy.true
                      else f"{self._print(last[0])} if {self._print(last[1])}")
        return "{" + "; ".join(pieces) + "}"

    def _print_Heaviside(self, expr):
        return f"[{self._print(expr.args[0])} > 0]"


def _iverson(p):
    """Whether a Piecewise is {1 if c; 0}: the Iverson bracket [c]."""
    return len(p.args) == 2 and p.args[0].expr == 1 and p.args[1].expr == 0 \
        and p.args[1].cond == sympy.true


def _is_atomic(e):
    return isinstance(e, (sympy.Symbol, sympy.MatrixSymbol, OneMatrix, sympy.Number)) or \
        isinstance(e, Transpose) and isinstance(e.arg, (sympy.MatrixSymbol, OneMatrix))


def _function_name(f):
    """How matrix notation names an elementwise function: the name its OpDef's matrix
    form gives it (σ for sigmoid), else the op's name, else SymPy's."""
    opdef = getattr(f, "opdef", None)
    if opdef is None:
        return str(type(f).__name__)
    return _matrix_name(opdef, tuple(sorted(f.params.items(), key=str))) or opdef.name


class _NameProbe:
    """Stands in for the formula reader to read the name an OpDef's matrix form calls
    ``fn`` with."""

    def fn(self, name, *args, data=None):
        return name


class _Stub:
    def __init__(self, attrs, shape=(), inputs=()):
        self.attrs, self.shape, self.inputs = attrs, shape, inputs


@functools.lru_cache(maxsize=None)
def _matrix_name(opdef, params):
    if opdef.matrix is None:
        return None
    try:
        from ..core.opdef import decode
        attrs = {k: decode(v) for k, v in params}
        name = opdef.matrix(_NameProbe(), _Stub(attrs, (2,), [_Stub({}, (2,))]), "x")
    except Exception:  # noqa: BLE001 - a form that is not a named call
        return None
    return name if isinstance(name, str) else None


def _name(text):
    if text.startswith("t") and text[1:].isdigit():
        return "t" + text[1:].translate(_SUB)
    return text


class MatrixLatexPrinter(LatexPrecedence, LatexPrinter):
    """Matrix notation as LaTeX: SymPy's LaTeX printer with names kept whole, 𝟙 as
    \\mathbf{1} and 1×1 products as the scalars they are. A function applied element by
    element is written \\exp(A), never e^{A}, which is the matrix exponential."""

    elementwise = 0     # > 0 while printing a function applied element by element

    def _print_exp(self, expr, exp=None):
        if not self.elementwise:
            return self._print_ExpBase(expr, exp)
        power = f"^{{{exp}}}" if exp else ""
        return rf"\exp{power}\left({self._print(expr.args[0])}\right)"

    def _print_MatMul(self, expr):
        """SymPy's, with a minus sign taken out without lowering the factors' level (its
        own puts -(A ∘ B) x as - A \\circ B x)."""
        args = list(expr.args)
        sign = ""
        if expr.could_extract_minus_sign():
            args = args[1:] if args[0] == -1 else [-args[0]] + args[1:]
            sign = "- "
        if len(args) == 1:                 # -(A ∘ B) as a term: - A \circ B
            return sign + self.parenthesize(args[0], _MUL, strict=True)
        return sign + " ".join(
            self._print(a) if isinstance(a, sympy.Mul) and not isinstance(a, MatMul)
            else self.parenthesize(a, _MUL, strict=False) for a in args)

    def _script_base(self, expr, script="^"):
        """``expr`` as the base of a superscript (or, ``script="^_"``, a subscript)."""
        return script_base(self.parenthesize(expr, _POW, strict=True), script)

    def _print_Float(self, expr):
        return float_text(expr)

    def _print_Symbol(self, expr, style="plain"):
        return latex_name(expr.name)

    def _print_MatrixSymbol(self, expr):
        return latex_name(str(expr.name))

    _print_ArraySymbol = _print_MatrixSymbol

    def _print_OneMatrix(self, expr):
        rows, cols = expr.shape
        if cols == 1:
            return r"\mathbf{1}"
        if rows == 1:
            return r"\mathbf{1}^{T}"
        return r"\mathbf{1}\mathbf{1}^{T}"

    def _print_Ones(self, expr):
        return self._print_OneMatrix(expr)

    def _print_ZeroMatrix(self, expr):
        return "0"

    def _print_Identity(self, expr):
        return "I"

    def _print_MatAdd(self, expr):
        texts = sorted((self._print(t) for t in expr.args), key=lambda text: (
            text.startswith("-"), text.endswith(r"\mathbf{1}") or text.endswith("^{T}")
            and r"\mathbf{1}" in text[-20:], text.count("^{T}")))
        out = texts[0]
        for text in texts[1:]:
            out += " - " + text[1:].lstrip() if text.startswith("-") else " + " + text
        return out

    def _print_Trace(self, expr):
        if is_one_by_one(expr.arg):
            inner = self._print(expr.arg)
            return inner if _is_atomic(expr.arg) else rf"\left({inner}\right)"
        return rf"\operatorname{{tr}}\left({self._print(expr.arg)}\right)"

    def _print_ElementwiseApplyFunction(self, expr):
        fn = expr.function
        (d,), body = fn.variables, fn.expr
        arg = self._print(expr.expr)
        if _heaviside_argument(body, d):
            return rf"\left[{arg} > 0\right]"
        self.elementwise += 1
        try:
            return self._elementwise_body(expr, body, d, arg)
        finally:
            self.elementwise -= 1

    def _elementwise_body(self, expr, body, d, arg):
        if isinstance(body, sympy.Function) and body.args == (d,):
            placeholder = sympy.Symbol("XPLACEHOLDERX")
            return self._print(body.func(placeholder)).replace(
                r"\mathit{XPLACEHOLDERX}", arg)
        placeholder = sympy.Symbol("XPLACEHOLDERX")
        text = self._print(body.xreplace({d: placeholder}))
        wrapped = arg if _is_atomic(expr.expr) else rf"\left({arg}\right)"
        return text.replace(r"\mathit{XPLACEHOLDERX}", wrapped)

    def _print_HadamardPower(self, expr):
        return rf"{self._script_base(expr.base)}^{{\circ {self._print(expr.exp)}}}"

    def _print_Transpose(self, expr):
        if isinstance(expr.arg, Inverse):
            return self._script_base(expr.arg.arg) + "^{-T}"
        return self._script_base(expr.arg) + "^{T}"

    def _print_Inverse(self, expr):
        if isinstance(expr.arg, Transpose):
            return self._script_base(expr.arg.arg) + "^{-T}"
        return self._script_base(expr.arg) + "^{-1}"

    def _print_Piecewise(self, expr):
        if _iverson(expr):
            return rf"\left[{self._print(expr.args[0].cond)}\right]"
        return super()._print_Piecewise(expr)

    def _print_MatrixElement(self, expr):
        """q_{0} of a vector q (a column), A_{0, 1} of a matrix."""
        parent = self._script_base(expr.parent, "^_")
        if expr.parent.shape[1] == 1:
            return f"{parent}_{{{self._print(expr.i)}}}"
        return f"{parent}_{{{self._print(expr.i)}, {self._print(expr.j)}}}"

    def _print_DiagMatrix(self, expr):
        return rf"\operatorname{{diag}}\left({self._print(expr.args[0])}\right)"

    def _print_DiagonalOf(self, expr):
        return rf"\operatorname{{diag}}\left({self._print(expr.arg)}\right)"


_TEXT = MatrixTextPrinter()
_LATEX = MatrixLatexPrinter()


def matrix_text(expr):
    return _TEXT.doprint(expr)


def matrix_latex(expr):
    return _LATEX.doprint(expr)
