"""``text("numpy")``: the derivative as one block of NumPy that a person can paste and run.

The block reads top to bottom: ``import numpy as np`` (and ``import math`` when used), the
helper functions some ops need (each once), a comment naming the inputs the block expects
(NumPy arrays bound to those names) and the captured arrays it refers to
(``# C = g.constants['C']``), one line per symbolic dim bound from an input's shape
(``n = z.shape[0]``), the shared subterms (``t1 = ...``) and one line per derivative
(``df_dz = ...  # df/dz, shape (n,)``).

``NumpyTextPrinter`` is SymPy's ``NumPyPrinter`` with the module written ``np``: SymPy's own
nodes (Add, Mul, Pow, relationals, Piecewise, Max, ...) print as NumPy with SymPy's
precedence; symgrad's op classes print from their OpDef's "numpy_text" spelling, which
falls back to the compiled backend's "numpy" one (``OpDef.spelling``). A spelling is
rendered with a mark standing for each operand and parameter; ``numpy.`` is written
``np.`` in that text before the marks are filled in, so nothing printed from the user's
formula is ever rewritten. An operand that a spelling uses twice
(``x - np.logaddexp.reduce(x, ...)``) gets a line of its own when it is more than a name,
so the text stays linear in the formula. How tightly a spelled op binds is read off the
parse tree of its spelling (a call is an atom, ``a - b`` a sum, ``1/(...)`` a product),
and operands are parenthesised by it.

Names: every user name (input, dim, captured array) is written as compiled code writes it
(``core.names.code_name``), then kept distinct from ``np``, ``math``, the helpers' names
and every other name of the block; subterms and results get fresh names.
"""
import ast
import re
import unicodedata
from collections import Counter

import sympy
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE

from ..core.build import ArraySymbol
from ..core.forms import node_form
from ..core.graph import topo_order
from ..core.names import DimPrinter, code_name, is_plain
from ..core.opdef import OpBase, Operand, Param
from ..errors import RegistryError, SymgradError

_MARK = re.compile("\x00(\\d+)\x00")
_NUMPY = re.compile(r"\bnumpy\.")
# names the block defines itself, and what a helper may need that it does not define
SUPPORT = {"ArgumentError": "ArgumentError = ValueError",
           "EvaluationError": "EvaluationError = ValueError"}
RESERVED = {"np", "math"} | set(SUPPORT)
DTYPES = {"int": "int64", "bool": "bool"}


def as_np(source):
    """Our own code (a spelling or a helper) with the module written ``np``."""
    return _NUMPY.sub("np.", source)


# ----- how tightly a spelling binds ----------------------------------------------------

_BINARY = {ast.Add: "Add", ast.Sub: "Add", ast.Mult: "Mul", ast.Div: "Mul",
           ast.FloorDiv: "Mul", ast.Mod: "Mul", ast.MatMult: "Mul", ast.Pow: "Pow"}
_binding_cache: dict[str, int] = {}


def binding(text):
    """SymPy's precedence level of a piece of Python ``text`` (read off its parse tree)."""
    level = _binding_cache.get(text)
    if level is None:
        try:
            node = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as e:
            raise RegistryError(f"a numpy spelling printed text that is not Python: {text!r} "
                                f"({e.msg})") from None
        if isinstance(node, ast.BinOp):
            level = PRECEDENCE[_BINARY.get(type(node.op), "Lambda")]
        elif isinstance(node, ast.UnaryOp):
            level = PRECEDENCE["Lambda" if isinstance(node.op, ast.Not) else "Mul"]
        elif isinstance(node, ast.Compare):
            level = PRECEDENCE["Relational"]
        elif isinstance(node, ast.BoolOp):
            level = PRECEDENCE["And" if isinstance(node.op, ast.And) else "Or"]
        elif isinstance(node, (ast.IfExp, ast.Lambda, ast.NamedExpr)) or \
                isinstance(node, ast.Tuple) and not text.strip().startswith("("):
            level = PRECEDENCE["Lambda"]
        else:
            level = PRECEDENCE["Atom"]
        _binding_cache[text] = level
    return level


class _Hole:
    """An operand or parameter in a spelling: formats as a mark, recording the format
    spec (``{x:mul}``); everything else (``.expr``, ``.value``, ``.printer``) is the
    field's."""

    __slots__ = ("field", "marks")

    def __init__(self, field, marks):
        self.field = field
        self.marks = marks

    def __format__(self, spec):
        self.marks.append((self.field, spec))
        return f"\x00{len(self.marks) - 1}\x00"

    def __str__(self):
        return self.__format__("")

    def __getattr__(self, name):
        return getattr(self.field, name)


def _is_dims(expr):
    """A number or an expression of dims (integer symbols): Python ints at run time."""
    return expr.is_number or bool(expr.free_symbols) and all(
        s.is_integer for s in expr.free_symbols)


class _DimText(DimPrinter):
    """Integer arithmetic on dims, with the block's names for them."""

    def __init__(self, names):
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr):
        return self.names[expr]

    def _quotient(self, expr):
        num, den = expr.args[0].as_numer_denom()
        return num, self.parenthesize(den, PRECEDENCE["Mul"], strict=False)

    def _print_floor(self, expr):
        num, den = self._quotient(expr)
        return f"({self.parenthesize(num, PRECEDENCE['Mul'], strict=True)} // {den})"

    def _print_ceiling(self, expr):
        """ceil(a/d) = (a + d - 1) // d for a positive integer d, else -(-a // d)."""
        num, den = self._quotient(expr)
        d = expr.args[0].as_numer_denom()[1]
        if d.is_Integer and d > 0:
            top = self.parenthesize(num + d - 1, PRECEDENCE["Mul"], strict=True)
            return f"({top} // {den})"
        return f"(-({self.parenthesize(-num, PRECEDENCE['Mul'], strict=True)} // {den}))"


def float_text(value):
    value = float(value)
    if value != value:
        return "np.nan"
    if value in (float("inf"), float("-inf")):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def array_literal(value):
    """A small NumPy array as an ``np.array(...)`` literal."""
    def nested(a):
        if a.ndim == 0:
            return repr(bool(a)) if a.dtype == bool else float_text(a)
        return "[" + ", ".join(nested(x) for x in a) + "]"
    return f"np.array({nested(value)})"


class NumpyTextPrinter(NumPyPrinter):
    """SymPy's NumPy printer writing ``np.``, symgrad's ops from their "numpy_text"
    spellings, and symbols by the block's names (``names``: {Symbol: name}); ``fresh()``
    gives a new name for an operand a spelling repeats. ``helpers`` collects the helper
    definitions the text calls, ``pending`` the lines it needs before the current one,
    ``modules`` the modules besides NumPy it uses."""

    def __init__(self, names, fresh):
        super().__init__({"fully_qualified_modules": True})
        self.names = names
        self.fresh = fresh
        self.helpers = {}
        self.pending = []
        self.modules = set()
        self._hoisted = {}
        self._binding = {}
        self._dims = _DimText(names)

    def _module_format(self, fqn, register=True):
        module, _, rest = fqn.partition(".")
        if module == "numpy":
            return "np." + rest
        self.modules.add(module)
        return fqn

    # ----- names ------------------------------------------------------------------------
    def _print_Symbol(self, expr):
        name = self.names.get(expr)
        if name is not None:
            return name
        if isinstance(expr, ArraySymbol):
            value = expr.value() if getattr(expr, "value", None) is not None else None
            if value is not None:
                return array_literal(value)
        raise SymgradError(f"text('numpy'): the formula uses {expr.name!r}, which is not an "
                           "input, a dim or a captured array of the derivative")

    # (SymPy has an ArraySymbol class of its own, which its StrPrinter prints by name)
    _print_Dummy = _print_ArraySymbol = _print_Symbol

    def _print_Float(self, expr):
        return float_text(expr)

    def _print_Infinity(self, expr):
        return "np.inf"

    def _print_NegativeInfinity(self, expr):
        return "-np.inf"

    # ----- symgrad's ops ------------------------------------------------------------------
    def _print_OpBase(self, expr):
        opdef = expr.opdef
        sp = opdef.spelling("numpy_text")
        if sp is None:
            raise RegistryError(f"op {opdef.name} has no numpy spelling; give its OpDef "
                                f"numpy=... in {opdef.module}")
        marks = []
        fields = {n: _Hole(Operand(self, e), marks)
                  for n, e in zip(opdef.inputs or (), expr.operands)}
        fields.update({n: _Hole(Param(self, e), marks) for n, e in expr.params.items()})
        skeleton, helpers = sp.render(fields)
        skeleton = as_np(skeleton)
        for name, source in helpers.items():
            self.helpers.setdefault(name, as_np(source))
        uses = Counter(id(field) for field, _ in marks)
        texts = []
        for field, spec in marks:
            if isinstance(field, Operand) and uses[id(field)] > 1 and not field.expr.is_Atom:
                texts.append(self._named(field.expr))
            else:
                texts.append(format(field, spec))
        text = _MARK.sub(lambda m: texts[int(m.group(1))], skeleton)
        level = binding(_MARK.sub("_", skeleton))
        if level < PRECEDENCE["Add"]:           # a comparison: atomic from outside
            text, level = f"({text})", PRECEDENCE["Atom"]
        self._binding[expr] = level
        return text

    def _named(self, expr):
        """The name of a line computing ``expr`` (an operand a spelling repeats)."""
        name = self._hoisted.get(expr)
        if name is None:
            text = self._print(expr)
            name = self._hoisted[expr] = self.fresh()
            self.pending.append((name, text))
        return name

    def parenthesize(self, item, level, strict=False):
        if isinstance(item, OpBase):
            text = self._print(item)
            own = self._binding.get(item, PRECEDENCE["Atom"])
            if own < level or (not strict and own <= level):
                return f"({text})"
            return text
        return super().parenthesize(item, level, strict)

    # ----- SymPy's nodes that NumPyPrinter prints for arrays of one shape only -----------
    def _fold(self, fn, args):
        out = self._print(args[0])
        for a in args[1:]:
            out = f"np.{fn}({out}, {self._print(a)})"
        return out

    def _print_Max(self, expr):
        return self._dims.doprint(expr) if _is_dims(expr) else self._fold("maximum", expr.args)

    def _print_Min(self, expr):
        return self._dims.doprint(expr) if _is_dims(expr) else self._fold("minimum", expr.args)

    def _print_And(self, expr):
        return self._fold("logical_and", expr.args)

    def _print_Or(self, expr):
        return self._fold("logical_or", expr.args)

    def _print_Abs(self, expr):
        return f"np.abs({self._print(expr.args[0])})"

    def _print_ceiling(self, expr):
        if _is_dims(expr):
            return self._dims.doprint(expr)
        return f"np.ceil({self._print(expr.args[0])})"

    def _print_floor(self, expr):
        if _is_dims(expr):
            return self._dims.doprint(expr)
        return f"np.floor({self._print(expr.args[0])})"

    def _print_Pow(self, expr, rational=False):
        """x**-k as 1/x**k: NumPy refuses negative integer powers of integer arrays."""
        base, exp = expr.args
        if exp.is_Integer and exp < 0:
            inverse = base if exp == -1 else sympy.Pow(base, -exp, evaluate=False)
            return "1/" + self.parenthesize(inverse, PRECEDENCE["Mul"], strict=False)
        return super()._print_Pow(expr, rational)

    def _print_Piecewise(self, expr):
        """Nested np.where, the last piece's condition True (else nan) as the default."""
        pieces = list(expr.args)
        *rest, (value, cond) = pieces
        out = self._print(value) if cond == sympy.true else \
            f"np.where({self._print(cond)}, {self._print(value)}, np.nan)"
        for value, cond in reversed(rest):
            out = f"np.where({self._print(cond)}, {self._print(value)}, {out})"
        return out

    def _print_ComplexInfinity(self, expr):
        raise SymgradError("text('numpy'): a formula holds SymPy's complex infinity (zoo), "
                           "which has no real value; g.source('numpy') is the code that "
                           "computes the gradient")

    def _print_erf(self, expr):
        self.helpers["_erf"] = "_erf = np.vectorize(math.erf, otypes=[float])"
        return f"_erf({self._print(expr.args[0])})"

    def shape_text(self, shape):
        """A shape as a Python tuple of the block's dim names."""
        items = [str(d) if isinstance(d, int) else self._dims.doprint(d) for d in shape]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


# ----- the block ------------------------------------------------------------------------

def comment(text):
    """``text`` for a comment: as it is when printable (no line breaks), else escaped."""
    return text if text.isprintable() else repr(text)[1:-1]


def _variable(label, k):
    """A Python name for a derivative block, from its label (``df/dz`` -> ``df_dz``,
    ``d²f/dx²`` -> ``d2f_dx2``), or ``d<k>`` when the label gives none."""
    name = label.translate(str.maketrans("²³/", "23_"))
    name = re.sub(r"_+", "_", re.sub(r"[^0-9A-Za-z_]", "_", name)).strip("_")
    return name if name and is_plain(name) else f"d{k}"


def _solvable(d, bound):
    """(symbol, scale, offset) when dim ``d`` is ``scale*symbol + offset`` with a positive
    integer scale, the symbol not yet bound and the offset of bound dims only."""
    if isinstance(d, int) or isinstance(d, sympy.Symbol):
        return None
    free = [s for s in d.free_symbols if s not in bound]
    if len(free) != 1:
        return None
    s = free[0]
    scale = d.coeff(s)
    offset = sympy.expand(d - scale * s)
    if not (scale.is_Integer and scale > 0) or offset.has(s):
        return None
    return s, int(scale), offset


class _Names:
    """The block's names: user names as code writes them, each distinct."""

    def __init__(self, reserved):
        self.taken = set(reserved)

    def fresh(self, base):
        while base in self.taken:
            base = "_" + base
        self.taken.add(base)
        return base

    def numbered(self, prefix="t"):
        k = 1
        while f"{prefix}{k}" in self.taken:
            k += 1
        self.taken.add(f"{prefix}{k}")
        return f"{prefix}{k}"


def _constant_code(key):
    """A captured array's name in code: its NFKC form when that is a plain identifier
    (``C₁`` -> ``C1``), else as compiled code writes the name."""
    plain = unicodedata.normalize("NFKC", key)
    return plain if is_plain(plain) else code_name(key)


def numpy_block(blocks, inputs, constants=None, owner="g"):
    """The NumPy block of derivative ``blocks`` ([(label, node, shape)], node None for a
    known zero) of a function of ``inputs`` (the traced symbols). The captured arrays in
    ``constants`` ({name: array}: the derivative's ``constants``) are referred to by
    name, the comment saying they are ``<owner>.constants[name]``; other captured arrays
    (small ones) are written out."""
    reserved = set(RESERVED)
    for _ in range(3):
        text, helpers, taken = _block(blocks, inputs, constants or {}, owner, reserved)
        clash = _defined(helpers) & (taken - RESERVED)
        if not clash:
            return text
        reserved |= clash                # a helper's name: the block's own names yield
    raise SymgradError(f"text('numpy'): helper names {sorted(clash)} clash with the block's")


def _defined(helpers):
    """The names the helper sources define at their top level."""
    names = set()
    for source in helpers.values():
        for node in ast.parse(source).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _used(source):
    return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}


def _leaf_names(inputs, nodes, constants, names, owner):
    """({Symbol: name in code} of the inputs, their dims and the named captured arrays,
    [dims], [comment lines for the captured arrays])."""
    # an input renamed in code never takes the spelling of another input ('а' is _u430
    # unless an input is named _u430): the user's code binds each name as it reads
    spelled = {x.name for x in inputs}
    chosen = {}
    for x in inputs:
        base = code_name(x.name)
        while base != x.name and base in spelled:
            base = "_" + base
        chosen[id(x)] = names.fresh(base)
    symbols = {x.expr: chosen[id(x)] for x in inputs}
    dims = []
    for x in inputs:
        for d in x.shape:
            for s in sorted(getattr(d, "free_symbols", ()), key=str):
                if s not in symbols:
                    symbols[s] = names.fresh(code_name(s.name))
                    dims.append(s)
    by_array = {id(a): k for k, a in constants.items()}
    lines = []
    for node in topo_order([n for n in nodes if n is not None]):
        if not node.is_array or node.expr in symbols:
            continue
        array = node.attrs["value"].array
        key = by_array.get(id(array))
        if key is not None:
            symbols[node.expr] = names.fresh(_constant_code(key))
            lines.append(f"# {symbols[node.expr]} = {owner}.constants[{key!r}]  "
                         f"(a captured array of shape {tuple(array.shape)})")
    return symbols, dims, lines


def shared_subterms(outputs, reserved, max_inline=40):
    """Like ``text.shared_forms`` (subterms used twice, or too big to inline, become
    symbols t1, t2, ...), but a result used again by another result is named too, so
    ``dloss_db = t1`` follows the lines that use t1 instead of repeating its formula."""
    order = topo_order([o for o in outputs if o is not None])
    uses = {}
    for node in order:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    for o in outputs:
        if o is not None:
            uses[id(o)] = uses.get(id(o), 0) + 1
    exprs, size, named, shapes, memo = {}, {}, [], {}, {}
    counter = 0
    for node in order:
        if node.is_leaf:
            exprs[id(node)], size[id(node)] = node.expr, 1
            if node.is_symbol:
                shapes[node.expr] = node.shape
            continue
        s = 1 + sum(size[id(i)] for i in node.inputs)
        e = node_form(node, [exprs[id(i)] for i in node.inputs], shapes, memo)
        if uses.get(id(node), 0) >= 2 and s >= 4 or s > max_inline:
            counter += 1
            while f"t{counter}" in reserved:
                counter += 1
            sym = sympy.Symbol(f"t{counter}", real=True)
            shapes[sym] = node.shape
            named.append((sym, e, node))
            e, s = sym, 1
        exprs[id(node)], size[id(node)] = e, s
    return [exprs[id(o)] if o is not None else None for o in outputs], named


def _block(blocks, inputs, constants, owner, reserved):
    """(text, helpers, names taken) of the block."""
    names = _Names(reserved)
    nodes = [node for _, node, _ in blocks]
    symbols, dims, const_lines = _leaf_names(inputs, nodes, constants, names, owner)
    exprs, named = shared_subterms(nodes, names.taken | {x.name for x in inputs})
    for s, _, _ in named:
        symbols[s] = names.fresh(str(s))
    for e in [e for e in exprs if e is not None] + [e for _, e, _ in named]:
        for s in getattr(e, "free_symbols", ()):
            if s not in symbols and s.is_integer:        # a dim no input's shape holds
                symbols[s] = names.fresh(code_name(s.name))
                dims.append(s)
    variables = [names.fresh(_variable(label, k)) for k, (label, _, _) in enumerate(blocks)]
    printer = NumpyTextPrinter(symbols, lambda: names.numbered("t"))

    def statement(name, text, note=""):
        out = [f"{n} = {t}" for n, t in printer.pending] + [f"{name} = {text}{note}"]
        printer.pending = []
        return out

    body = _dim_lines(inputs, dims, symbols, printer)
    for s, e, _ in named:
        body += statement(symbols[s], printer.doprint(e))
    for var, e, (label, _, shape) in zip(variables, exprs, blocks):
        if e is None:
            text = f"np.zeros({printer.shape_text(shape)})" if shape else "0.0"
        else:
            text = printer.doprint(e)
        body += statement(var, text, f"  # {comment(label)}, shape {printer.shape_text(shape)}")

    helpers = printer.helpers
    used = set().union(*[_used(h) for h in helpers.values()])
    head = ["import numpy as np"]
    if "math" in printer.modules or "math" in used:
        head.append("import math")
    head += [line for name, line in SUPPORT.items() if name in used]
    if helpers:
        head += [""] + [h + "\n" for h in helpers.values()]
    return "\n".join(head + [""] + _input_lines(inputs, symbols, printer) + const_lines
                     + body), helpers, names.taken


def _input_lines(inputs, symbols, printer):
    """The comment naming the variables the block expects, and those renamed."""
    if not inputs:
        return ["# inputs: none"]
    shapes = ", ".join(f"{symbols[x.expr]} {printer.shape_text(x.shape)}"
                       + ("" if x.kind == "float" else f" {DTYPES[x.kind]}") for x in inputs)
    lines = [f"# inputs: {', '.join(symbols[x.expr] for x in inputs)} "
             f"(NumPy arrays, float64 unless noted: {shapes})"]
    return lines + [f"# {symbols[x.expr]} is the input {comment(repr(x.name))}"
                    for x in inputs if symbols[x.expr] != x.name]


def _dim_lines(inputs, dims, symbols, printer):
    """``n = z.shape[0]`` for every dim an input's shape gives, then the dims solvable from
    an expression (``H = x.shape[1] // 4`` for a dim 4*H); a comment for any other."""
    lines, bound = [], set()
    for x in inputs:
        for axis, d in enumerate(x.shape):
            if isinstance(d, sympy.Symbol) and d not in bound:
                bound.add(d)
                lines.append(f"{symbols[d]} = {symbols[x.expr]}.shape[{axis}]")
    changed = True
    while changed:
        changed = False
        for x in inputs:
            for axis, d in enumerate(x.shape):
                solved = _solvable(d, bound)
                if solved is None:
                    continue
                s, scale, offset = solved
                bound.add(s)
                changed = True
                size = f"{symbols[x.expr]}.shape[{axis}]"
                if offset != 0:
                    size = f"({size} - {printer._dims.doprint(offset)})"
                lines.append(f"{symbols[s]} = {size} // {scale}" if scale != 1 else
                             f"{symbols[s]} = {size}")
    for d in dims:
        if d not in bound:
            lines.append(f"# {symbols[d]} = ...  (set this dim: no input's shape gives it)")
    return lines
