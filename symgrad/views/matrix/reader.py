"""Reading graph nodes as matrix-notation terms.

Vectors are columns. Each node becomes a small matrix-algebra term (``algebra.Term``):
broadcasts become outer products with the ones vector 𝟙, sums become products with 𝟙,
elementwise products become Hadamard products ∘ (or ``diag`` scalings when a vector
scales the rows or columns of a matrix), unsqueezes become column or row vectors.

The reader names no op: each OpDef's ``matrix`` form says how its node reads, calling
the forms below (``m.product(node)``, ``m.mm(m.T(x), y)``, ``m.fn("chol", x)``); an op
without one reads as a function call with its parameters (``tril(x, k=1)``).
"""
from ...core.opdef import OPS
from ...core.shapes import numel, shapes_equal
from ..text import format_expr
from .algebra import EYE, ONES, T, Term, add, fn, inv, is_num, mm, num, scale, sym

FLIPPED = {"<": "≥", "≤": ">", ">": "≤", "≥": "<", "=": "≠", "≠": "="}


def ones_like(shape):
    """The all-ones array of ``shape`` as a term: 𝟙, 𝟙ᵀ, 𝟙 𝟙ᵀ."""
    if len(shape) == 0:
        return num(1)
    if len(shape) == 1:
        return ONES
    if len(shape) == 2:
        if shape[0] == 1:
            return T(ONES)
        if shape[1] == 1:
            return ONES
        return mm(ONES, T(ONES))
    return fn("ones", data=shape)


class Reader:
    """Turns graph nodes into Terms; ``names`` maps node ids to the symbol naming them.
    Its methods are the forms an OpDef's ``matrix`` callable builds terms with."""

    def __init__(self, names):
        self.names = names
        self.memo = {}

    def term(self, node, top=False):
        """``node`` as a term: its name if it has one (unless ``top``), else its reading.
        Readings are made inputs first, iteratively, so deep graphs never recurse."""
        key = id(node)
        if not top and key in self.names:
            return sym(self.names[key])
        if key not in self.memo:
            self._read_below(node)
        return self.memo[key]

    def _read_below(self, node):
        """Read ``node`` and every unread node it needs (named inputs stand as symbols)."""
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

    def _read(self, node):
        if node.is_symbol:
            return sym(node.name)
        if node.is_const:
            value = node.attrs["value"]
            if not node.shape or value == 0:
                return num(value)
            return scale(num(value), ones_like(node.shape))
        if node.is_array:
            return sym(format_expr(node.expr))
        terms = [self.term(i) for i in node.inputs]
        form = OPS[node.op].matrix
        if form is None:
            return self.call(node, *terms)
        return form(self, node, *terms)

    # ----- the algebra ---------------------------------------------------------------------
    fn = staticmethod(fn)
    mm = staticmethod(mm)
    T = staticmethod(T)
    inv = staticmethod(inv)

    @staticmethod
    def eye():
        return EYE

    @staticmethod
    def diag(t):
        return Term("diag", (t,))

    def diag_matrix(self, node, t):
        """diag(v) of the op diag; diag(g 𝟙) of a scalar g reads g I."""
        v = node.inputs[0]
        if v.is_const and v.attrs["value"] != 0:
            return scale(num(v.attrs["value"]), EYE)
        if v.op == "broadcast_to" and not v.inputs[0].shape:
            return scale(self.term(v.inputs[0]), EYE)
        return Term("diag", (t,))

    @staticmethod
    def norm(t):
        return Term("norm", (t,))

    @staticmethod
    def iverson(t):
        return Term("iverson", (t,))

    @staticmethod
    def neg(t):
        return Term("neg", (t,))

    @staticmethod
    def relation(sign, a, b):
        return Term("rel", (a, b), sign)

    @staticmethod
    def logic(sign, *terms):
        return Term("logic", tuple(terms), sign)

    @staticmethod
    def not_(t):
        """¬(a ≤ b) reads a > b: the same for real numbers, which formulas are about."""
        if t.kind == "rel" and t.data in FLIPPED:
            return Term("rel", t.args, FLIPPED[t.data])
        return Term("not", (t,))

    @staticmethod
    def index(t, index):
        return Term("index", (t,), index)

    @staticmethod
    def scatter(t, index):
        return Term("scatter", (t,), index)

    # ----- forms that read the node ----------------------------------------------------------
    def call(self, node, *terms):
        """The op as a function call with its parameters: ``tril(x, k=1)``."""
        a = node.attrs
        params = {k: v for k, v in a.items()
                  if k not in ("full", "first") and not (k == "keepdims" and not v)
                  and not (k == "axis" and a.get("full"))}
        return fn(node.op, *terms, data=params or None)

    def lift(self, node, shape):
        """``node`` broadcast to ``shape``, as a term: 𝟙 bᵀ for a row-broadcast vector."""
        s = node.shape
        t = self.term(node)
        if len(s) == 0 or shapes_equal(s, shape):
            return t
        if len(shape) == 2:
            if len(s) == 1:
                return mm(ONES, T(t))
            if s[0] == 1 and s[1] != 1:
                return mm(ONES, t)
            if s[1] == 1 and s[0] != 1:
                return mm(t, T(ONES))
            if s == (1, 1):
                return t
        if len(shape) == 1 and len(s) == 1:
            return t
        return fn("broadcast", t, data=shape)

    def plus(self, node):
        p, q = node.inputs
        return add(self.lift(p, node.shape), self.lift(q, node.shape))

    def minus(self, node):
        p, q = node.inputs
        return add(self.lift(p, node.shape), Term("neg", (self.lift(q, node.shape),)))

    def product(self, node):
        """x ∘ y, a scalar times an array, or a diag scaling of rows or columns."""
        (p, q), shape = node.inputs, node.shape
        if not p.shape:
            return scale(self.term(p), self.term(q))
        if not q.shape:
            return scale(self.term(q), self.term(p))
        scaled = self._diag_scaling(p, q, shape) or self._diag_scaling(q, p, shape)
        if scaled is not None:
            return scaled
        return Term("had", (self.lift(p, shape), self.lift(q, shape)))

    def quotient(self, node):
        (p, q), shape = node.inputs, node.shape
        if not q.shape:
            return Term("div", (self.lift(p, shape), self.term(q)))
        return Term("hdiv", (self.lift(p, shape), self.lift(q, shape)))

    def _diag_scaling(self, v, m, shape):
        """A vector scaling the columns (X diag(v)) or rows (diag(u) X) of a matrix."""
        if len(shape) != 2 or not shapes_equal(m.shape, shape) or shape[0] == 1 or shape[1] == 1:
            return None
        if len(v.shape) == 1 or v.shape[0] == 1:
            d = self.term(v) if len(v.shape) == 1 else T(self.term(v))
            return mm(self.term(m), Term("diag", (d,)))
        if len(v.shape) == 2 and v.shape[1] == 1:
            return mm(Term("diag", (self.term(v),)), self.term(m))
        return None

    def power(self, node, base, exponent):
        """x∘ᵉ (Hadamard power) of an array, xᵉ of a scalar, for a constant exponent."""
        if isinstance(exponent, Term):
            e = node.inputs[1]
            if not (e.is_const and not e.shape):
                return self.call(node, base, exponent)
            exponent = e.attrs["value"]
        return Term("hpow" if node.inputs[0].shape else "pow", (base,), exponent)

    def matmul(self, node, a, b):
        p, q = node.inputs
        if len(p.shape) > 2 or len(q.shape) > 2:
            return fn("matmul", a, b)
        if len(p.shape) == 1 and len(q.shape) == 1:
            return mm(T(a), b)
        if len(p.shape) == 1:
            return mm(T(b), a)
        return mm(a, b)

    def transpose(self, node, t):
        return T(t) if len(node.shape) == 2 else fn("transpose", t, data=node.attrs["axes"])

    def reshape(self, node, t):
        """A reshape that only adds or drops size-1 axes: the same vector, as a row or a
        column; any other reshape as a call."""
        s, shape = node.inputs[0].shape, node.shape
        core_s = [d for d in s if d != 1]
        core = [d for d in shape if d != 1]
        if len(core_s) != len(core) or not all(shapes_equal((u,), (v,))
                                                for u, v in zip(core_s, core)):
            return fn("reshape", t, data=shape)
        if len(core) == 0 or len(shape) > 2 or len(s) > 2:
            return t if len(core) == 0 else fn("reshape", t, data=shape)
        row_in = len(s) == 2 and s[0] == 1 and s[1] != 1
        row_out = len(shape) == 2 and shape[0] == 1 and shape[1] != 1
        return T(t) if row_in != row_out else t

    def sum(self, node, t):
        """A sum over axes as products with 𝟙: 𝟙ᵀ x, X 𝟙, 𝟙ᵀ X 𝟙."""
        s, axes, keepdims = node.inputs[0].shape, node.attrs["axis"], node.attrs["keepdims"]
        if len(s) == 0:
            return t
        if len(s) == 1:
            return mm(T(ONES), t)
        if len(s) == 2:
            if len(axes) == 2:
                return mm(T(ONES), t, ONES)
            if axes == (0,):
                return mm(T(ONES), t) if keepdims else mm(T(t), ONES)
            return mm(t, ONES)
        return fn("sum", t, data={"axis": axes})

    def mean(self, node, t):
        """A sum divided by the number of elements it adds."""
        n = numel([node.inputs[0].shape[k] for k in node.attrs["axis"]])
        return Term("div", (self.sum(node, t), num(n)))

    def positive_part(self, node, g, x):
        """[x > 0] ∘ g: relu's gradient, as the where(x ≤ 0, 0, g) it stands for reads."""
        mask = Term("iverson", (Term("rel", (x, num(0)), ">"),))
        kept = self.lift(node.inputs[0], node.shape)
        if is_num(g, 1) or is_num(kept, 1) or kept == ONES or g == ONES:
            return mask
        return Term("had", (mask, kept))

    def where(self, node, c, a, b):
        if is_num(b, 0):
            return Term("had", (Term("iverson", (c,)), a))
        if is_num(a, 0):
            return Term("had", (Term("iverson", (Term("not", (c,)),)), b))
        return fn("where", c, a, b)

