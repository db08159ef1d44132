"""Graph nodes as SymPy matrix expressions: the objects ``g.formulas`` holds and every
matrix-notation view prints.

Vectors are columns (an input ``x`` of shape (n,) is ``MatrixSymbol("x", n, 1)``), scalars
are SymPy scalars (a scalar computed from matrices, such as 𝟙ᵀx, is the trace of a 1×1
product, so SymPy's own calculus applies to it), and arrays of three or more axes are
``ArraySymbol`` / ``ArrayOpCall``. A broadcast is a product with ``OneMatrix`` (a scalar
s over (n,) is s 𝟙), a sum a product with 𝟙, an elementwise product a
``HadamardProduct`` (or a diag scaling), an elementwise function an
``ElementwiseApplyFunction``; inverses, determinants, traces and identities are SymPy's.
An op with no SymPy class is an ``OpCall`` (``views.forms``).

The reader names no op: each OpDef's ``matrix`` form says how its node reads, calling the
methods of ``FormulaReader`` (``m.product(node)``, ``m.mm(m.T(x), y)``, ``m.fn("det", x)``);
an op without one reads elementwise (a pointwise op of one operand) or as an OpCall.
"""
import sympy
from sympy import Piecewise
from sympy.matrices.expressions import (
    Determinant, Identity, Inverse, MatrixSymbol, Trace, Transpose)
from .arrays import array_symbol

from ..core.deep import deep
from ..core.graph import depth_of, topo_order
from ..core.opdef import OPS
from ..core.shapes import numel, shapes_equal
from .algebra import (
    excluding, scaled_ones, add, broadcast, diag, diagonal, elementwise, filled, filled_with, fit, hadamard,
    is_matrix, mat, neg, ones, scalar, symbol, transpose)
from .forms import Bracket, HadamardPow, OpCall, matrix_shape
from .rewrite import tidy
from .written import SMALL, explicit_small

_SCALAR_FUNCTIONS = {"det": Determinant, "tr": Trace,
                     "log det": lambda x: sympy.log(Determinant(x))}


class FormulaReader:
    """Turns graph nodes into SymPy formulas; ``names`` maps node ids to the names of
    shared subterms (they read as symbols of their shape). Its methods are the forms an
    OpDef's ``matrix`` callable builds with."""

    def __init__(self, names=None):
        self.names = names or {}
        self.memo = {}
        self.node = None
        self.indexing = set()     # the ops read as index or scatter calls

    # ----- reading ---------------------------------------------------------------------------
    def form(self, node, top=False):
        """``node`` as a formula: its name if it has one (unless ``top``), else its reading.
        Readings are made inputs first, iteratively, so deep graphs never recurse."""
        key = id(node)
        if not top and key in self.names:
            return symbol(self.names[key], node.shape)
        if key not in self.memo:
            stack = [(node, False)]
            while stack:
                n, ready = stack.pop()
                if id(n) in self.memo:
                    continue
                if ready:
                    self.memo[id(n)] = self._read(n)
                    continue
                stack.append((n, True))
                stack.extend((i, False) for i in n.inputs
                             if id(i) not in self.memo and id(i) not in self.names)
        return self.memo[key]

    term = form

    def reading(self, node, operands):
        """``node`` read over ``operands``, the forms its caller gives its inputs (the
        text view names its own subterms)."""
        self.memo.update({id(i): e for i, e in zip(node.inputs, operands)})
        return self._read(node)

    def _read(self, node):
        if node.is_symbol:
            return symbol(node.name, node.shape, node.expr)
        if node.is_const:
            return filled(node.attrs["value"], node.shape)
        if node.is_array:
            return captured(node)
        self.node = node
        opdef = OPS[node.op]
        shorter = _shorter_form(node)
        if shorter is not None:
            op, x = shorter
            axis = {"axis": len(x.shape) - 1}
            attrs = node.inputs[0].attrs if OPS[node.inputs[0].op].name in (
                "softmax", "log_softmax") else axis
            last = attrs.get("axis") == len(x.shape) - 1
            return OpCall.of(op, [self.form(x)], attrs, [x.shape], node.shape,
                             display=op if last else "")
        terms = [self.form(i) for i in node.inputs]
        if len(node.shape) > 2 or any(len(i.shape) > 2 for i in node.inputs):
            return self.call(node, *terms)
        if opdef.matrix is not None:
            out = opdef.matrix(self, node, *terms)
        else:
            out = self.call(node, *terms)
        return fit(out, node.shape)

    # ----- forms OpDefs call -------------------------------------------------------------------
    mm = staticmethod(mat)
    T = staticmethod(transpose)
    neg = staticmethod(neg)

    @staticmethod
    def inv(t):
        return Inverse(t)

    def eye(self):
        return Identity(self.node.shape[0])

    def call(self, node, *terms):
        """The op on its operands: elementwise for a pointwise op of one operand or of
        scalars, else an OpCall (the op's own SymPy-evaluable call)."""
        opdef = OPS[node.op]
        if opdef.pointwise and len(node.shape) <= 2:
            if not node.shape:
                return opdef.expr(node.attrs, [scalar(t) for t in terms])
            if len(terms) == 1 and shapes_equal(node.inputs[0].shape, node.shape):
                return elementwise(lambda d: opdef.expr(node.attrs, [d]), terms[0])
        return OpCall.of(node.op, [scalar(t) if not i.shape else t
                                   for t, i in zip(terms, node.inputs)],
                         node.attrs, [i.shape for i in node.inputs], node.shape)

    def fn(self, name, *args, data=None):
        """The op as the function ``name``: SymPy's det/tr/log det of a square matrix,
        elementwise for a pointwise op, else an OpCall that matrix notation writes
        ``name(args)`` when the form gives no parameters (``data``)."""
        node = self.node
        if name in _SCALAR_FUNCTIONS and len(args) == 1 and is_matrix(args[0]) \
                and len(node.inputs[0].shape) == 2 and args[0].is_square:
            return _SCALAR_FUNCTIONS[name](args[0])
        terms = [self.form(i) for i in node.inputs]
        if OPS[node.op].pointwise or data is not None:
            return self.call(node, *terms)
        return OpCall.of(node.op, [scalar(t) if not i.shape else t
                                   for t, i in zip(terms, node.inputs)],
                         node.attrs, [i.shape for i in node.inputs], node.shape, display=name)

    def lift(self, node, shape):
        """``node`` broadcast to ``shape``: s 𝟙, 𝟙 bᵀ, b 𝟙ᵀ, ..."""
        return broadcast(self.form(node), node.shape, shape)

    def plus(self, node):
        p, q = node.inputs
        return add(self.lift(p, node.shape), self.lift(q, node.shape))

    def minus(self, node):
        p, q = node.inputs
        return add(self.lift(p, node.shape), neg(self.lift(q, node.shape)))

    def product(self, node):
        """x ∘ y, a scalar times an array, or a diag scaling of rows or columns."""
        (p, q), shape = node.inputs, node.shape
        if not shape:
            return scalar(self.form(p)) * scalar(self.form(q))
        if not p.shape or not q.shape:
            s, a = (p, q) if not p.shape else (q, p)
            return mat(scalar(self.form(s)), self.lift(a, shape))
        scaled = self._diag_scaling(p, q, shape) or self._diag_scaling(q, p, shape)
        if scaled is not None:
            return scaled
        return hadamard(self.lift(p, shape), self.lift(q, shape))

    def quotient(self, node):
        (p, q), shape = node.inputs, node.shape
        if not q.shape:
            d = scalar(self.form(q))
            return mat(1 / d, self.lift(p, shape)) if shape else scalar(self.form(p)) / d
        return hadamard(self.lift(p, shape), HadamardPow(self.lift(q, shape), -1))

    def _diag_scaling(self, v, m, shape):
        """A vector scaling the columns (X diag(v)) or rows (diag(u) X) of a matrix."""
        if len(shape) != 2 or not shapes_equal(m.shape, shape) or shape[0] == 1 or shape[1] == 1:
            return None
        if numel(v.shape) == 1:
            return None
        if len(v.shape) == 1 or v.shape[0] == 1:
            d = self.form(v) if len(v.shape) == 1 else transpose(self.form(v))
            return mat(self.form(m), diag(d))
        if len(v.shape) == 2 and v.shape[1] == 1:
            return mat(diag(self.form(v)), self.form(m))
        return None

    def power(self, node, base, exponent):
        """x∘ᵉ (Hadamard power) of an array, xᵉ of a scalar."""
        e = node.inputs[1] if isinstance(exponent, sympy.Basic) else None
        if e is not None and not (e.is_const and not e.shape):
            if not node.shape:
                return scalar(base) ** scalar(exponent)
            return self.call(node, base, exponent)
        value = e.attrs["value"] if e is not None else sympy.sympify(exponent)
        if not node.inputs[0].shape:
            return scalar(base) ** value
        return HadamardPow(base, value)

    def matmul(self, node, a, b):
        p, q = node.inputs
        if len(p.shape) == 1 and len(q.shape) == 1:
            return mat(transpose(a), b)
        if len(p.shape) == 1:
            return mat(transpose(b), a)
        return mat(a, b)

    def transpose(self, node, t):
        return transpose(t) if len(node.shape) == 2 else self.call(node, t)

    def reshape(self, node, t):
        """A reshape that only adds or drops size-1 axes: the same vector, as a row or a
        column; any other reshape as a call."""
        s, shape = node.inputs[0].shape, node.shape
        core_s = [d for d in s if d != 1]
        core = [d for d in shape if d != 1]
        if len(core_s) != len(core) or not all(shapes_equal((u,), (v,))
                                                for u, v in zip(core_s, core)):
            return self._reshape_of_reshape(node, t)
        if not core:
            if not shape:
                return scalar(t)
            if not (isinstance(scalar(t), sympy.Expr) and scalar(t).is_commutative):
                return self.call(node, t)
            return filled_with(scalar(t), shape)
        row_in = len(s) == 2 and s[0] == 1 and s[1] != 1
        row_out = len(shape) == 2 and shape[0] == 1 and shape[1] != 1
        return transpose(t) if row_in != row_out else t

    def _reshape_of_reshape(self, node, t):
        """A reshape of a reshape (through the transpose of a vector, which keeps the
        elements' order) is one reshape of the first operand, or that operand itself when
        the shapes agree: an einsum's reshape(reshape(B, (m n, 1))ᵀ, (m, n)) is B."""
        inner = t.arg if isinstance(t, Transpose) and 1 in t.shape else t
        if not (isinstance(inner, OpCall) and inner.op == node.op):
            return self.call(node, t)
        base, base_shape = inner.operands[0], inner.operand_shapes[0]
        if shapes_equal(base_shape, node.shape):
            return base
        return OpCall.of(node.op, [base], node.attrs, [base_shape], node.shape)

    def sum(self, node, t):
        """A sum over axes as products with 𝟙: 𝟙ᵀ x, X 𝟙, 𝟙ᵀ X 𝟙."""
        s, axes, keepdims = node.inputs[0].shape, node.attrs["axis"], node.attrs["keepdims"]
        if len(s) == 0:
            return t
        rows, cols = matrix_shape(s)
        if len(s) == 1:
            return mat(ones(1, rows), t)
        if len(axes) == 2:
            return mat(ones(1, rows), t, ones(cols, 1))
        if axes == (0,):
            return mat(ones(1, rows), t) if keepdims else mat(transpose(t), ones(rows, 1))
        return mat(t, ones(cols, 1))

    def mean(self, node, t):
        n = numel([node.inputs[0].shape[k] for k in node.attrs["axis"]])
        return mat(1 / sympy.sympify(n), fit(self.sum(node, t), node.shape))

    def positive_part(self, node, g, x):
        """[x > 0] ∘ g: relu's gradient (0 at x = 0, as torch's)."""
        mask = elementwise(lambda d: sympy.Heaviside(d, 0), x)
        kept = self.lift(node.inputs[0], node.shape)
        if not node.shape:
            return mask * scalar(kept)
        return hadamard(mask, kept)

    def where(self, node, c, a, b):
        if not node.shape:
            cond = scalar(c)
            if isinstance(cond, (sympy.logic.boolalg.Boolean, sympy.core.relational.Relational)):
                return Piecewise((scalar(a), cond), (excluding(scalar(b), cond), True))
            return self.call(node, c, a, b)
        cond, yes, no = node.inputs
        if no.is_const and no.attrs["value"] == 0 and shapes_equal(cond.shape, node.shape):
            return hadamard(Bracket(c), self.lift(yes, node.shape))
        guard = scalar(c) if not cond.shape else None
        if isinstance(guard, (sympy.logic.boolalg.Boolean, sympy.core.relational.Relational)):
            # one condition for the whole array: {1 if c; 0} a + {0 if c; 1} b
            return add(mat(Piecewise((1, guard), (0, True)), self.lift(yes, node.shape)),
                       mat(Piecewise((0, guard), (1, True)), self.lift(no, node.shape)))
        return self.call(node, c, a, b)

    def diag(self, t):
        node = self.node
        if len(node.inputs[0].shape) == 1 and len(node.shape) == 2:
            return diag(t)
        if len(node.inputs[0].shape) == 2 and len(node.shape) == 1 and is_matrix(t):
            return diagonal(t)
        return self.call(node, t)

    def diag_matrix(self, node, t):
        """diag(v) of a vector; diag(g 𝟙) of a scalar g reads g I."""
        c = scaled_ones(t)
        if c is not None:
            return mat(c, Identity(node.shape[0]))
        v = node.inputs[0]
        if v.is_const:
            return mat(v.attrs["value"], Identity(node.shape[0]))
        if v.op == "broadcast_to" and not v.inputs[0].shape:
            return mat(scalar(self.form(v.inputs[0])), Identity(node.shape[0]))
        return diag(t)

    def norm(self, t):
        if not is_matrix(t):
            return sympy.Abs(t)
        node = self.node
        return OpCall.of(node.op, [t], node.attrs, [node.inputs[0].shape], node.shape,
                         display="‖‖")

    def iverson(self, t):
        if not self.node.shape:
            return Piecewise((1, scalar(t)), (0, True))
        return Bracket(t)

    def relation(self, sign, a, b):
        return self._boolean(a, b)

    def logic(self, sign, *terms):
        return self._boolean(*terms)

    def not_(self, t):
        return self._boolean(t)

    def _boolean(self, *terms):
        node = self.node
        if not node.shape:
            return OPS[node.op].expr(node.attrs, [scalar(t) for t in terms])
        return self.call(node, *terms)

    def index(self, t, index):
        self.indexing.add(self.node.op)
        return self.call(self.node, t)

    def scatter(self, t, index):
        self.indexing.add(self.node.op)
        return self.call(self.node, t)


def captured(node):
    """A captured constant array: by the name of the variable that held it (``Y``), or
    as its values when it is small and unnamed, else by its name C₁, C₂, ... (whose
    values ``constants`` gives)."""
    arr = node.attrs["value"].array
    if "name" not in node.attrs and arr.size <= 12:
        values = [sympy.true if v is True else sympy.false if v is False else sympy.Float(v)
                  if not float(v).is_integer() else sympy.Integer(int(v))
                  for v in arr.ravel().tolist()]
        if arr.ndim <= 2:
            rows, cols = (arr.shape[0], 1) if arr.ndim == 1 else arr.shape
            return sympy.ImmutableMatrix(rows, cols, values)
        return sympy.ImmutableDenseNDimArray(values, arr.shape)
    return symbol(constant_name(node), node.shape)


def constant_name(node):
    return node.expr.name


def constants(nodes):
    """{name: array} of the captured arrays the formulas of ``nodes`` show by name."""
    out = {}
    for n in topo_order([m for m in nodes if m is not None]):
        if n.is_array and ("name" in n.attrs or n.attrs["value"].array.size > 12):
            out[constant_name(n)] = n.attrs["value"].array
    return out


# exp(log_softmax(x)) is softmax(x) and log(softmax(x)) is log_softmax(x): the shorter,
# stabler form a person writes (the gradient rules produce the longer one).
_SHORTER = {("exp", "log_softmax"): "softmax", ("log", "softmax"): "log_softmax"}


def _shorter_form(node):
    """(op, operand) of a shorter equal form of ``node``, or None: softmax for
    exp(log_softmax(z)), exp(z − logsumexp(z)) and exp(z)/𝟙ᵀexp(z) of a vector z,
    log_softmax for log(softmax(z))."""
    if len(node.inputs) == 1 and node.inputs[0].op is not None:
        inner = node.inputs[0]
        op = _SHORTER.get((node.op, inner.op))
        if op is not None and op in OPS:
            return op, inner.inputs[0]
        if node.op == "exp" and inner.op == "sub" and len(inner.shape) == 1:
            z, lse = inner.inputs
            if lse.op == "logsumexp" and lse.inputs[0] is z and not lse.shape:
                return "softmax", z
    if node.op in ("mul", "div") and len(node.shape) == 1:
        e, r = node.inputs if node.inputs[0].shape else node.inputs[::-1]
        if e.op == "exp" and not r.shape:
            total = r if node.op == "div" else (
                r.inputs[1] if r.op == "div" and r.inputs[0].is_const
                and r.inputs[0].attrs["value"] == 1 else None)
            if total is not None and total.op == "sum" and total.inputs[0] is e:
                return "softmax", e.inputs[0]
    return None


def formulas(nodes, names=None):
    """The formulas of ``nodes`` in their print form (``views.rewrite``); None for a known
    zero stays None."""
    reader = FormulaReader(names)
    order = topo_order([n for n in nodes if n is not None])
    forms = deep(lambda: [tidy(reader.form(n)) if n is not None else None for n in nodes],
                 depth_of(order))
    if names:
        return forms
    written = [written_out(n) for n in nodes]
    return [w if w is not None else f for f, w in zip(forms, written)]


# ----- naming shared subterms ------------------------------------------------------------

def shared_names(outputs, reserved=(), max_size=12):
    """Nodes to name: used twice or more (and not a mere view of another node), or
    large; ``{id(node): "t1", ...}`` and the named nodes in evaluation order."""
    roots = [o for o in outputs if o is not None]
    order = topo_order(roots)
    uses = {}
    for node in order:
        for i in node.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    root_ids = {id(o) for o in roots}
    names, named, size, counter = {}, [], {}, 0
    for node in order:
        if not node.inputs or OPS[node.op].wrapper:
            size[id(node)] = 0 if not node.inputs else sum(size[id(i)] for i in node.inputs)
            continue
        s = 1 + sum(size[id(i)] for i in node.inputs)
        shared = uses.get(id(node), 0) >= 2 and s >= 2
        if shared or id(node) not in root_ids and s > max_size:
            counter += 1
            while f"t{counter}" in reserved:
                counter += 1
            names[id(node)] = f"t{counter}"
            named.append(node)
            s = 0
        size[id(node)] = s
    return names, named


SHORT_SUBTERM = 12   # characters: a shared subterm this short reads better written out


def _fresh_names(count, reserved):
    out, k = [], 0
    while len(out) < count:
        k += 1
        if f"t{k}" not in reserved:
            out.append(f"t{k}")
    return out


def render(outputs, style="text", reserved=()):
    """(printed outputs, [(name, printed definition), ...]) in matrix notation, with the
    subterms used more than once named t₁, t₂, ..."""
    from .matrix_print import matrix_latex, matrix_text
    show = matrix_latex if style == "latex" else matrix_text
    names, named = shared_names(outputs, reserved)
    short = [n for n in named if len(matrix_text(FormulaReader(names).form(n, top=True)))
             <= SHORT_SUBTERM]
    if short:
        dropped = {id(n) for n in short}
        named = [n for n in named if id(n) not in dropped]
        names = dict(zip([id(n) for n in named], _fresh_names(len(named), reserved)))
    written = {k: w for k, w in enumerate(written_out(o) for o in outputs) if w is not None}
    if written:     # names only the other outputs use
        needed = {id(n) for n in topo_order([o for k, o in enumerate(outputs)
                                             if o is not None and k not in written])}
        named = [n for n in named if id(n) in needed]
        names = dict(zip([id(n) for n in named], _fresh_names(len(named), reserved)))
    reader = FormulaReader(names)
    defs = {}
    for n in named:
        scalars = {s: e for s, e in defs.items() if not is_matrix(s)}
        defs[symbol(names[id(n)], n.shape)] = tidy(reader.form(n, top=True), scalars)
    scalars = {s: e for s, e in defs.items() if not is_matrix(s)}
    outs = [written[k] if k in written else tidy(reader.form(o), scalars)
            if o is not None else None for k, o in enumerate(outputs)]
    outs, defs = _named_in_use(outs, defs, reserved)
    return ([show(o) if o is not None else "0" for o in outs],
            [(show(s), show(e)) for s, e in defs.items()])


def _named_in_use(outs, defs, reserved):
    """The outputs and the definitions they still use (a print form may have read
    through a name), with a name used once whose definition is short written in place
    (then tidied there: t₁ᵀ of a symmetric t₁ is t₁'s form); renumbered t₁, t₂, ..."""
    from .matrix_print import matrix_text
    defs = dict(defs)
    while True:
        uses = {s: 0 for s in defs}
        for e in [o for o in outs if o is not None] + list(defs.values()):
            for s, k in _occurrences(e, uses).items():
                uses[s] += k
        once = [s for s in defs if uses[s] == 1 and len(matrix_text(defs[s])) <= INLINE]
        if not once:
            break
        s = once[0]
        value = defs.pop(s)
        outs = [tidy(o.xreplace({s: value})) if o is not None and o.has(s) else o
                for o in outs]
        defs = {t: tidy(e.xreplace({s: value})) if e.has(s) else e for t, e in defs.items()}
    live, stack = set(), [s for o in outs if o is not None for s in _names_in(o, defs)]
    while stack:
        s = stack.pop()
        if s not in live:
            live.add(s)
            stack.extend(_names_in(defs[s], defs))
    kept = [s for s in defs if s in live]
    fresh = {s: _renamed(s, name) for s, name in zip(kept, _fresh_names(len(kept), reserved))}
    if all(fresh[s] == s for s in kept) and len(kept) == len(defs):
        return outs, defs
    return ([o.xreplace(fresh) if o is not None else None for o in outs],
            {fresh[s]: defs[s].xreplace(fresh) for s in kept})


INLINE = 40     # characters: a subterm used once and this short is written in place


def _occurrences(e, names, memo=None):
    """{name: how many times ``e`` shows it} (counted as printed, through a memo)."""
    memo = {} if memo is None else memo
    if e in names:
        return {e: 1}
    if e in memo:
        return memo[e]
    out = {}
    for a in getattr(e, "args", ()):
        if isinstance(a, sympy.Basic):
            for s, k in _occurrences(a, names, memo).items():
                out[s] = out.get(s, 0) + k
    memo[e] = out
    return out


def _names_in(e, names):
    return [a for a in e.atoms(sympy.Symbol, MatrixSymbol, array_symbol()) if a in names]


def _renamed(s, name):
    if isinstance(s, MatrixSymbol):
        return MatrixSymbol(name, *s.shape)
    if isinstance(s, array_symbol()):
        return array_symbol()(name, s.shape)
    return sympy.Symbol(name, real=True)


MAX_WRITTEN_OUT = 200    # graph nodes: a larger formula is never written out element-wise


def written_out(node):
    """The formula of ``node`` written out element by element when it is small, of a
    concrete shape, and reads through index and scatter calls (the ops whose matrix form
    is the reader's ``index`` or ``scatter``; ``explicit_small``); else None."""
    if node is None or not node.shape or not all(
            isinstance(d, int) or sympy.sympify(d).is_Integer for d in node.shape):
        return None
    if len(node.shape) > 2 or numel(node.shape) > SMALL:
        return None
    order = topo_order([node])
    if len(order) > MAX_WRITTEN_OUT:
        return None
    reader = FormulaReader()
    return deep(lambda: explicit_small(tidy(reader.form(node)), reader.indexing),
                depth_of(order))
