"""The text view of formulas and the straight-line program view.

``FormulaPrinter`` is SymPy's ``StrPrinter`` printing floats as a person writes them and
a ``Piecewise`` as Python's ``(0 if a == 0 else a*K**(a - 1))``; symgrad's op classes print themselves
from their OpDef's text spelling (``OpBase._sympystr``), in NumPy-like notation (``@`` for
matrix products, ``*`` elementwise, ``.T``). ``shared_forms`` names subexpressions that a
formula uses more than once ("where t1 = ...") so a printed gradient stays linear in the
size of its graph; an op on scalars reads as ``g.formulas`` reads it (a zero guard is a
``Piecewise``, dropped where SymPy proves it false). ``program_lines`` prints the
straight-line program, one op per line.
"""
import sympy
from sympy.printing.str import StrPrinter

from ..core import extensions
from ..core.build import gc_paused
from ..core.deep import deep
from ..core.graph import depth_of, topo_order
from ..core.forms import node_form
from ..core.program import Program, TemplateCache
from ..core.shapes import fmt_shape
from .forms import float_text
from .formulas import FormulaReader
from .rewrite import tidy_scalar


class FormulaPrinter(StrPrinter):
    """SymPy's str printer, with floats as a person writes them (0.01, not the
    0.010000000000000002 of its rounding) and a Piecewise as a conditional expression."""

    def _print_Float(self, expr):
        return float_text(expr)

    def _print_Heaviside(self, expr):
        """[x > 0], relu's mask, as the text view writes a cast: float(x > 0)."""
        if len(expr.args) == 2 and expr.args[1] == 0:
            return f"float({self._print(expr.args[0])} > 0)"
        return super()._print_Function(expr)

    def _print_Piecewise(self, expr):
        """Python's conditional expression: (0 if a == 0 else a*K**(a - 1)); an Iverson
        bracket {1 if c; 0} as a cast, float(c)."""
        if len(expr.args) == 2 and expr.args[0].expr == 1 and expr.args[1].expr == 0 \
                and expr.args[1].cond == sympy.true:
            return f"float({self._print(expr.args[0].cond)})"
        *pieces, (last, cond) = expr.args
        text = self._print(last)
        if cond != sympy.true:      # no branch holds: nan, as NumPy's where would give
            text = f"{text} if {self._condition(cond)} else nan"
        for e, c in reversed(pieces):
            text = f"{self._print(e)} if {self._condition(c)} else {text}"
        return f"({text})"

    def _condition(self, c):
        """A condition as Python writes it: a == 0 and a >= 0."""
        if isinstance(c, sympy.core.relational.Relational):
            return f"{self._print(c.lhs)} {c.rel_op} {self._print(c.rhs)}"
        if isinstance(c, (sympy.And, sympy.Or)):
            sign = " and " if isinstance(c, sympy.And) else " or "
            return sign.join(f"({self._condition(a)})" if isinstance(a, (sympy.And, sympy.Or))
                             else self._condition(a) for a in c.args)
        if isinstance(c, sympy.Not):
            return f"not ({self._condition(c.args[0])})"
        return self._print(c)


_str_printer = FormulaPrinter()


def format_expr(expr):
    return _str_printer.doprint(expr)


def format_block(expr):
    """A whole gradient block: a zero array is 0 (the block's shape note gives its
    shape); inside a formula it is zeros(shape), which broadcasts as it should."""
    opdef = getattr(expr, "opdef", None)
    if opdef is not None and opdef.name == "const" and expr.params.get("value") == 0:
        return "0"
    return format_expr(expr)


MAX_CLOSED_FORM = 200   # nodes; a larger graph prints with shared subexpressions named


@extensions.format_tensor.provide
def format_tensor(node):
    """A Tensor as text: its closed form, or for a large graph (whose closed form can be
    exponentially long) the form with shared subexpressions named."""
    order = topo_order([node])
    if sum(1 for n in order if n.inputs) <= MAX_CLOSED_FORM:
        return deep(lambda: format_expr(node.expr), depth_of(order))
    (expr,), named = shared_forms([node])
    lines = [format_expr(expr)] + [f"  {s} = {format_expr(e)}" for s, e, _ in named]
    return "\n".join(lines[:1] + ["where"] + lines[1:]) if named else lines[0]


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
    symbol_shapes, memo, defs = {}, {}, {}
    reader = FormulaReader()
    output_ids = {id(o) for o in outputs if o is not None}
    counter = 0
    for node in order:
        if node.is_leaf:
            exprs[id(node)] = node.expr
            size[id(node)] = 1
            if node.is_symbol:
                symbol_shapes[node.expr] = node.shape
            continue
        s = 1 + sum(size[id(i)] for i in node.inputs)
        operands = [exprs[id(i)] for i in node.inputs]
        if not node.shape and not any(i.shape for i in node.inputs):
            e = tidy_scalar(reader.reading(node, operands), defs=defs)
        else:
            e = node_form(node, operands, symbol_shapes, memo)
        is_output = id(node) in output_ids
        if not is_output and (uses.get(id(node), 0) >= 2 and s >= 4 or s > max_inline):
            counter += 1
            name = f"t{counter}"
            while name in reserved:
                counter += 1
                name = f"t{counter}"
            sym = sympy.Symbol(name, real=True)
            symbol_shapes[sym] = node.shape
            named.append((sym, e, node))
            defs[sym] = e
            e, s = sym, 1
        exprs[id(node)] = e
        size[id(node)] = s
    outs = [exprs[id(o)] if o is not None else None for o in outputs]
    return _used_only(outs, named, reserved)


def _used_only(outs, named, reserved):
    """The named subterms the outputs still use (a print form may have read through
    one: t1/(t1 + 1) with t1 = exp(x) is sigmoid(x)), renumbered t1, t2, ..."""
    defs = {sym: e for sym, e, _ in named}
    used, stack = set(), [o for o in outs if o is not None]
    while stack:
        e = stack.pop()
        for sym in getattr(e, "free_symbols", ()):
            if sym in defs and sym not in used:
                used.add(sym)
                stack.append(defs[sym])
    if len(used) == len(named):
        return outs, named
    kept = [(sym, e, node) for sym, e, node in named if sym in used]
    fresh, k = {}, 0
    for sym, _, _ in kept:
        k += 1
        while f"t{k}" in reserved:
            k += 1
        fresh[sym] = sympy.Symbol(f"t{k}", real=True)
    return ([o.xreplace(fresh) if o is not None else None for o in outs],
            [(fresh[sym], e.xreplace(fresh), node) for sym, e, node in kept])


# ----- straight-line program -----------------------------------------------------------

_text_templates = TemplateCache(_str_printer)


@gc_paused
def program_lines(outputs, inputs):
    """The straight-line program computing ``outputs`` ((label, node) pairs): one op per
    line, then one line per output."""
    nodes = [n for _, n in outputs if n is not None]
    prog = Program(nodes, inputs, prefix="v",
                   array_name=lambda node, k: format_expr(node.expr))
    lines = [f"{name} = {_text_templates.statement(node, ops)}"
             for name, node, ops in prog.statements]
    for label, node in outputs:
        if node is None:
            lines.append(f"{label} = 0")
        elif node.is_const:
            lines.append(f"{label} = {format_expr(node.expr)}")
        else:
            lines.append(f"{label} = {prog.name_of(node)}")
    return lines, prog


def shape_note(shape):
    return "" if not shape else f"    [shape {fmt_shape(shape)}]"
