"""Text and LaTeX views of formulas, and the straight-line program view.

``FormulaPrinter`` and ``FormulaLatexPrinter`` extend SymPy's ``StrPrinter`` and
``LatexPrinter`` with a ``_print_<Class>`` method for each of symgrad's SymPy classes.
Formulas of array functions use NumPy notation (``@`` for matrix products, ``*``
elementwise, ``.T``); ``display`` names subexpressions that a formula uses more than
once ("where t1 = ...") so a printed gradient stays linear in the size of its graph.
"""
import sympy
from sympy.printing.latex import LatexPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.str import StrPrinter

from .graph import topo_order
from .program import Program, TemplateCache
from .shapes import fmt_shape


def _tuple_text(p, t):
    items = [p._print(v) for v in t]
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


class FormulaPrinter(StrPrinter):
    """SymPy's str printer with symgrad's array ops in NumPy notation."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _reduce(self, fn, expr):
        x, axes, keep, full = expr.args
        if full is sympy.true and keep is sympy.false:
            return f"{fn}({self._print(x)})"
        ax = axes[0] if len(axes) == 1 else _tuple_text(self, axes)
        extra = ", keepdims=True" if keep is sympy.true else ""
        return f"{fn}({self._print(x)}, axis={self._print(ax)}{extra})"

    def _print_SumOp(self, expr):
        return self._reduce("sum", expr)

    def _print_MeanOp(self, expr):
        return self._reduce("mean", expr)

    def _print_MatmulOp(self, expr):
        a, b = expr.args
        return f"{self.parenthesize(a, PRECEDENCE['Mul'])}@{self.parenthesize(b, PRECEDENCE['Pow'])}"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        if tuple(axes) == (1, 0):
            return f"{self.parenthesize(x, PRECEDENCE['Atom'], strict=True)}.T"
        return f"transpose({self._print(x)}, {_tuple_text(self, axes)})"

    def _print_ReshapeOp(self, expr):
        return f"reshape({self._print(expr.args[0])}, {_tuple_text(self, expr.args[1])})"

    def _print_SqueezeOp(self, expr):
        return f"squeeze({self._print(expr.args[0])}, {_tuple_text(self, expr.args[1])})"

    def _print_UnsqueezeOp(self, expr):
        return f"unsqueeze({self._print(expr.args[0])}, {self._print(expr.args[1])})"

    def _print_BroadcastOp(self, expr):
        return f"broadcast_to({self._print(expr.args[0])}, {_tuple_text(self, expr.args[1])})"

    def _print_FillOp(self, expr):
        shape, value = expr.args
        if value == 0:
            return "0"
        if value == 1:
            return f"ones({_tuple_text(self, shape)})"
        return f"full({_tuple_text(self, shape)}, {self._print(value)})"

    def _print_Where(self, expr):
        return "where(%s)" % ", ".join(self._print(a) for a in expr.args)

    def _print_Clamp(self, expr):
        x, lo, hi = expr.args
        parts = [self._print(x)]
        if lo is not sympy.S.NegativeInfinity:
            parts.append(f"min={self._print(lo)}")
        if hi is not sympy.S.Infinity:
            parts.append(f"max={self._print(hi)}")
        return f"clamp({', '.join(parts)})"

    def _print_AsFloat(self, expr):
        return f"float({self._print(expr.args[0])})"

    def _print_StopGradient(self, expr):
        return f"detach({self._print(expr.args[0])})"

    def _print_ArraySymbol(self, expr):
        from .ops import ARRAY_VALUES
        value = ARRAY_VALUES.get(expr.name)
        if value is not None and value.size <= 12:
            return repr(value.tolist())
        return expr.name


class FormulaLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with symgrad's array ops."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _reduce(self, fn, expr):
        x, axes, keep, full = expr.args
        arg = self._print(x)
        if full is sympy.true:
            return rf"\operatorname{{{fn}}}\left({arg}\right)"
        ax = ",".join(str(a) for a in axes)
        return rf"\operatorname{{{fn}}}_{{{ax}}}\left({arg}\right)"

    def _print_SumOp(self, expr):
        return self._reduce("sum", expr)

    def _print_MeanOp(self, expr):
        return self._reduce("mean", expr)

    def _print_MatmulOp(self, expr):
        a, b = expr.args
        return f"{self.parenthesize(a, PRECEDENCE['Mul'])} {self.parenthesize(b, PRECEDENCE['Mul'])}"

    def _print_TransposeOp(self, expr):
        x, axes = expr.args
        base = self.parenthesize(x, PRECEDENCE["Pow"])
        if tuple(axes) == (1, 0):
            return f"{base}^{{T}}"
        return rf"\operatorname{{transpose}}_{{{','.join(str(a) for a in axes)}}}\left({self._print(x)}\right)"

    def _shape_op(self, name, expr):
        params = ",".join(self._print(a) for a in expr.args[1:])
        return rf"\operatorname{{{name}}}_{{{params}}}\left({self._print(expr.args[0])}\right)"

    def _print_ReshapeOp(self, expr):
        return self._shape_op("reshape", expr)

    def _print_SqueezeOp(self, expr):
        return self._shape_op("squeeze", expr)

    def _print_UnsqueezeOp(self, expr):
        return self._shape_op("unsqueeze", expr)

    def _print_BroadcastOp(self, expr):
        return self._shape_op("broadcast", expr)

    def _print_FillOp(self, expr):
        shape, value = expr.args
        dims = r"\times ".join(self._print(d) for d in shape)
        if value == 1:
            return rf"\mathbb{{1}}_{{{dims}}}"
        if value == 0:
            return rf"\mathbb{{0}}_{{{dims}}}"
        return rf"{self._print(value)} \mathbb{{1}}_{{{dims}}}"

    def _print_Where(self, expr):
        c, a, b = expr.args
        return (r"\begin{cases} %s & \text{if } %s \\ %s & \text{otherwise} \end{cases}"
                % (self._print(a), self._print(c), self._print(b)))

    def _print_Clamp(self, expr):
        return r"\operatorname{clamp}\left(%s\right)" % ", ".join(self._print(a) for a in expr.args)

    def _print_AsFloat(self, expr):
        return r"\left[%s\right]" % self._print(expr.args[0])

    def _print_StopGradient(self, expr):
        return r"\operatorname{sg}\left(%s\right)" % self._print(expr.args[0])

    def _print_sigmoid(self, expr, exp=None):
        return self._fn(r"\sigma", expr, exp)

    def _print_relu(self, expr, exp=None):
        return self._fn(r"\operatorname{relu}", expr, exp)

    def _print_softplus(self, expr, exp=None):
        return self._fn(r"\operatorname{softplus}", expr, exp)

    def _fn(self, name, expr, exp):
        s = rf"{name}\left({self._print(expr.args[0])}\right)"
        return f"{s}^{{{exp}}}" if exp else s


_str_printer = FormulaPrinter()
_latex_printer = FormulaLatexPrinter()


def format_expr(expr):
    return _str_printer.doprint(expr)


def latex_expr(expr):
    return _latex_printer.doprint(expr)


# ----- formulas with shared subexpressions named ---------------------------------------

def _sizes_and_uses(order):
    uses = {}
    for node in order:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    return uses


def shared_forms(outputs, reserved=(), max_inline=40):
    """Closed forms of ``outputs`` where subexpressions used more than once (or too big to
    inline) become symbols t1, t2, ...; returns (output exprs, [(symbol, expr), ...])."""
    order = topo_order([o for o in outputs if o is not None])
    uses = _sizes_and_uses(order)
    for o in outputs:
        if o is not None:
            uses[id(o)] = uses.get(id(o), 0) + 1
    exprs, size, named = {}, {}, []
    counter = 0
    for node in order:
        if node.is_leaf:
            exprs[id(node)] = node.expr
            size[id(node)] = 1
            continue
        s = 1 + sum(size[id(i)] for i in node.inputs)
        e = node.local_expr([exprs[id(i)] for i in node.inputs])
        is_output = any(node is o for o in outputs)
        if not is_output and (uses.get(id(node), 0) >= 2 and s >= 4 or s > max_inline):
            counter += 1
            name = f"t{counter}"
            while name in reserved:
                counter += 1
                name = f"t{counter}"
            sym = sympy.Symbol(name, real=True)
            named.append((sym, e, node))
            e, s = sym, 1
        exprs[id(node)] = e
        size[id(node)] = s
    return [exprs[id(o)] if o is not None else None for o in outputs], named


# ----- straight-line program -----------------------------------------------------------

_text_templates = TemplateCache(_str_printer)


def program_lines(outputs, inputs):
    """The straight-line program computing ``outputs`` ((label, node) pairs): one op per
    line, then one line per output."""
    nodes = [n for _, n in outputs if n is not None]
    prog = Program(nodes, inputs, prefix="v")
    lines = [f"{name} = {_text_templates.statement(node, ops)}"
             for name, node, ops in prog.statements]
    for label, node in outputs:
        if node is None:
            lines.append(f"{label} = 0")
        elif node.op == "const":
            lines.append(f"{label} = {format_expr(node.expr)}")
        else:
            lines.append(f"{label} = {prog.name_of(node)}")
    return lines, prog


def shape_note(shape):
    return "" if not shape else f"    [shape {fmt_shape(shape)}]"
