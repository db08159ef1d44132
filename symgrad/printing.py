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

from .graph import gc_paused, topo_order
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
        x, axes, keep, full = expr.args[:4]
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

    def _call(self, name, *args, **params):
        items = [self._print(a) for a in args]
        items += [f"{k}={v}" for k, v in params.items()]
        return f"{name}({', '.join(items)})"

    def _print_AmaxOp(self, expr):
        return self._reduce("amax", expr)

    def _print_AminOp(self, expr):
        return self._reduce("amin", expr)

    def _print_MaxOp(self, expr):
        return self._reduce("max", expr)

    def _print_MinOp(self, expr):
        return self._reduce("min", expr)

    def _print_ProdOp(self, expr):
        return self._reduce("prod", expr)

    def _print_NormOp(self, expr):
        return self._reduce("norm", expr)

    def _print_LogsumexpOp(self, expr):
        return self._reduce("logsumexp", expr)

    def _print_VarOp(self, expr):
        text = self._reduce("var", expr)
        c = expr.args[4]
        return text if c == 1 else text[:-1] + f", correction={self._print(c)})"

    def _print_StdOp(self, expr):
        text = self._reduce("std", expr)
        c = expr.args[4]
        return text if c == 1 else text[:-1] + f", correction={self._print(c)})"

    def _print_CumsumOp(self, expr):
        return self._call("cumsum", expr.args[0], axis=self._print(expr.args[1]))

    def _print_SoftmaxOp(self, expr):
        return self._call("softmax", expr.args[0], axis=self._print(expr.args[1]))

    def _print_LogSoftmaxOp(self, expr):
        return self._call("log_softmax", expr.args[0], axis=self._print(expr.args[1]))

    def _print_OneHotOp(self, expr):
        return self._call("one_hot", *expr.args)

    def _print_CrossEntropyOp(self, expr):
        x, t, probabilities, reduction = expr.args
        extra = {} if str(reduction) == "mean" else {"reduction": repr(str(reduction))}
        return self._call("cross_entropy", x, t, **extra)

    def _print_MseLossOp(self, expr):
        x, y, reduction = expr.args
        extra = {} if str(reduction) == "mean" else {"reduction": repr(str(reduction))}
        return self._call("mse_loss", x, y, **extra)

    def _print_BceWithLogitsOp(self, expr):
        x, y, reduction = expr.args
        extra = {} if str(reduction) == "mean" else {"reduction": repr(str(reduction))}
        return self._call("binary_cross_entropy_with_logits", x, y, **extra)

    def _print_DotOp(self, expr):
        return self._call("dot", *expr.args)

    def _print_OuterOp(self, expr):
        return self._call("outer", *expr.args)

    def _print_TraceOp(self, expr):
        return self._call("trace", *expr.args)

    def _print_DiagonalOp(self, expr):
        return self._call("diagonal", *expr.args)

    def _print_DiagOp(self, expr):
        return self._call("diag", *expr.args)

    def _print_InverseOp(self, expr):
        return self._call("inv", *expr.args)

    def _print_DetOp(self, expr):
        return self._call("det", *expr.args)

    def _print_LogdetOp(self, expr):
        return self._call("logdet", *expr.args)

    def _print_LogAbsDetOp(self, expr):
        return self._call("logabsdet", *expr.args)

    def _print_SolveOp(self, expr):
        return self._call("solve", *expr.args)

    def _print_EyeOp(self, expr):
        return self._call("eye", *expr.args)

    def _print_CholeskyOp(self, expr):
        return self._call("cholesky", *expr.args)

    def _print_TrilOp(self, expr):
        x, k = expr.args
        return self._call("tril", x) if k == 0 else self._call("tril", x, k=self._print(k))

    def _print_TriuOp(self, expr):
        x, k = expr.args
        return self._call("triu", x) if k == 0 else self._call("triu", x, k=self._print(k))

    def _index_text(self, index):
        items = []
        for e in index:
            if isinstance(e, sympy.Tuple):
                start, stop, step = e
                text = (("" if start == 0 else self._print(start)) + ":"
                        + ("" if stop is sympy.oo else self._print(stop)))
                items.append(text + ("" if step == 1 else f":{self._print(step)}"))
            else:
                items.append(self._print(e))
        return ", ".join(items)

    def _print_IndexOp(self, expr):
        x, index = expr.args
        return f"{self.parenthesize(x, PRECEDENCE['Atom'], strict=True)}[{self._index_text(index)}]"

    def _print_IndexScatterOp(self, expr):
        g, shape, index = expr.args
        return f"scatter({self._print(g)}, {_tuple_text(self, shape)}, [{self._index_text(index)}])"

    def _print_ConcatOp(self, expr):
        x, y, axis = expr.args
        return f"concatenate(({self._print(x)}, {self._print(y)}), axis={self._print(axis)})"


class FormulaLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with symgrad's array ops."""

    def _print_Float(self, expr):
        return repr(float(expr))

    def _reduce(self, fn, expr):
        x, axes, keep, full = expr.args[:4]
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

    def _op(self, name, *args, sub=None):
        inner = ", ".join(self._print(a) for a in args)
        sub = f"_{{{sub}}}" if sub else ""
        return rf"\operatorname{{{name}}}{sub}\left({inner}\right)"

    def _axes_sub(self, expr):
        x, axes, keep, full = expr.args[:4]
        return None if full is sympy.true else ",".join(str(a) for a in axes)

    def _print_AmaxOp(self, expr):
        return self._op("max", expr.args[0], sub=self._axes_sub(expr))

    _print_MaxOp = _print_AmaxOp

    def _print_AminOp(self, expr):
        return self._op("min", expr.args[0], sub=self._axes_sub(expr))

    _print_MinOp = _print_AminOp

    def _print_ProdOp(self, expr):
        return self._op("prod", expr.args[0], sub=self._axes_sub(expr))

    def _print_NormOp(self, expr):
        sub = self._axes_sub(expr)
        body = rf"\left\lVert {self._print(expr.args[0])} \right\rVert"
        return body + (f"_{{{sub}}}" if sub else "")

    def _print_LogsumexpOp(self, expr):
        return self._op("logsumexp", expr.args[0], sub=self._axes_sub(expr))

    def _print_VarOp(self, expr):
        return self._op("var", expr.args[0], sub=self._axes_sub(expr))

    def _print_StdOp(self, expr):
        return self._op("std", expr.args[0], sub=self._axes_sub(expr))

    def _print_CumsumOp(self, expr):
        return self._op("cumsum", expr.args[0], sub=self._print(expr.args[1]))

    def _print_SoftmaxOp(self, expr):
        return self._op("softmax", expr.args[0], sub=self._print(expr.args[1]))

    def _print_LogSoftmaxOp(self, expr):
        return self._op("log\\_softmax", expr.args[0], sub=self._print(expr.args[1]))

    def _print_OneHotOp(self, expr):
        return self._op("onehot", *expr.args)

    def _print_CrossEntropyOp(self, expr):
        return self._op("CE", *expr.args[:2])

    def _print_MseLossOp(self, expr):
        return self._op("MSE", *expr.args[:2])

    def _print_BceWithLogitsOp(self, expr):
        return self._op("BCE", *expr.args[:2])

    def _print_DotOp(self, expr):
        x, y = expr.args
        return f"{self.parenthesize(x, PRECEDENCE['Pow'])}^{{T}} {self.parenthesize(y, PRECEDENCE['Mul'])}"

    def _print_OuterOp(self, expr):
        x, y = expr.args
        return f"{self.parenthesize(x, PRECEDENCE['Mul'])} {self.parenthesize(y, PRECEDENCE['Pow'])}^{{T}}"

    def _print_TraceOp(self, expr):
        return self._op("tr", expr.args[0])

    def _print_DiagonalOp(self, expr):
        return self._op("diag", expr.args[0])

    def _print_DiagOp(self, expr):
        return self._op("diag", expr.args[0])

    def _print_InverseOp(self, expr):
        return f"{self.parenthesize(expr.args[0], PRECEDENCE['Pow'])}^{{-1}}"

    def _print_DetOp(self, expr):
        return self._op("det", expr.args[0])

    def _print_LogdetOp(self, expr):
        return rf"\log \det {self.parenthesize(expr.args[0], PRECEDENCE['Pow'])}"

    def _print_LogAbsDetOp(self, expr):
        return rf"\log \left|\det {self._print(expr.args[0])}\right|"

    def _print_SolveOp(self, expr):
        a, b = expr.args
        return f"{self.parenthesize(a, PRECEDENCE['Pow'])}^{{-1}} {self.parenthesize(b, PRECEDENCE['Mul'])}"

    def _print_EyeOp(self, expr):
        return rf"I_{{{self._print(expr.args[0])}}}"

    def _print_CholeskyOp(self, expr):
        return self._op("chol", expr.args[0])

    def _print_TrilOp(self, expr):
        return self._op("tril", expr.args[0], sub=None if expr.args[1] == 0 else self._print(expr.args[1]))

    def _print_TriuOp(self, expr):
        return self._op("triu", expr.args[0], sub=None if expr.args[1] == 0 else self._print(expr.args[1]))

    def _print_IndexOp(self, expr):
        x, index = expr.args
        return f"{self.parenthesize(x, PRECEDENCE['Atom'], strict=True)}_{{[{FormulaPrinter()._index_text(index)}]}}"

    def _print_IndexScatterOp(self, expr):
        g, shape, index = expr.args
        return self._op("scatter", g) + f"_{{[{FormulaPrinter()._index_text(index)}]}}"

    def _print_ConcatOp(self, expr):
        x, y, axis = expr.args
        return self._op("concat", x, y, sub=self._print(axis))

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
    output_ids = {id(o) for o in outputs if o is not None}
    counter = 0
    for node in order:
        if node.is_leaf:
            exprs[id(node)] = node.expr
            size[id(node)] = 1
            continue
        s = 1 + sum(size[id(i)] for i in node.inputs)
        e = node.local_expr([exprs[id(i)] for i in node.inputs])
        is_output = id(node) in output_ids
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


@gc_paused
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
