"""Gradients in textbook matrix notation: ``Aᵀ (A x − b)``, ``𝟙 bᵀ``, ``X diag(v)``,
``[x > 0] ∘ g``, ``X⁻ᵀ``.

Vectors are columns. Each graph node is read as a small matrix-algebra term (``Term``):
broadcasts become outer products with the ones vector 𝟙, sums become products with 𝟙,
elementwise products become Hadamard products ∘ (or ``diag`` scalings when a vector
scales the rows or columns of a matrix), unsqueezes become column or row vectors.
Transposes are pushed through products ((A B)ᵀ = Bᵀ Aᵀ) and cancel. Subterms a formula
uses more than once are named t₁, t₂, ... once ("where t₁ = W x + b").

Both renderings (Unicode text and LaTeX) come from one ``Style``; this module only
reads the graph, so it never changes what is computed.
"""
from dataclasses import dataclass

import sympy

from .graph import topo_order
from .ops import BINARY, COMPARISONS, UNARY
from .shapes import shapes_equal

ADD, MUL, NEG, POW, ATOM = 1, 2, 3, 4, 5


@dataclass(frozen=True)
class Term:
    kind: str
    args: tuple = ()
    data: object = None


def sym(name):
    return Term("sym", (), name)


def num(value):
    return Term("num", (), sympy.sympify(value))


ONES = Term("ones")
EYE = Term("eye")


def is_num(t, value=None):
    return t.kind == "num" and (value is None or t.data == value)


def T(t):
    """The transpose of ``t``, pushed inwards and cancelled where the algebra allows."""
    k = t.kind
    if k == "T":
        return t.args[0]
    if k in ("num", "eye", "diag", "scalar"):
        return t
    if k == "mm":
        return mm(*[T(a) for a in reversed(t.args)])
    if k == "neg":
        return Term(k, (T(t.args[0]),) + t.args[1:], t.data)
    if k == "scale":
        return scale(t.args[0], T(t.args[1]))
    if k == "div":
        return Term("div", (T(t.args[0]), t.args[1]))
    return Term("T", (t,))


def _scalars_and_factors(f):
    """A factor of a product as (scalars, matrix factors): −(2 A B) gives ([−1, 2], [A, B])."""
    if f.kind == "neg":
        c, fs = _scalars_and_factors(f.args[0])
        return [num(-1)] + c, fs
    if f.kind == "scale":
        c, fs = _scalars_and_factors(f.args[1])
        return [f.args[0]] + c, fs
    if f.kind == "mm":
        return [], list(f.args)
    if f.kind == "eye":
        return [], []
    return [], [f]


def inv(t):
    """The inverse of ``t``, with (Aᵀ)⁻¹ written (A⁻¹)ᵀ so transposes can cancel."""
    if t.kind == "T":
        return T(Term("inv", (t.args[0],)))
    return Term("inv", (t,))


def mm(*factors):
    """A matrix product, flattened, with scalar factors (signs too) pulled to the front."""
    out, found = [], []
    for f in factors:
        c, fs = _scalars_and_factors(f)
        found += c
        out += fs
    value = sympy.S.One
    scalars = []
    for c in found:
        if is_num(c):
            value *= c.data
        else:
            scalars.append(c)
    negative = value.is_number and value.is_negative
    if value != 1:
        scalars.insert(0, num(-value if negative else value))
    if not out:
        out = [EYE]
    term = out[0] if len(out) == 1 else Term("mm", tuple(out))
    for c in reversed(scalars):
        term = scale(c, term)
    return Term("neg", (term,)) if negative else term


def scale(c, t):
    if is_num(c, 1):
        return t
    if is_num(c, -1):
        return Term("neg", (t,))
    if t.kind == "scale":
        c2, inner = t.args
        if is_num(c) and is_num(c2):
            return scale(num(c.data * c2.data), inner)
    if t.kind == "neg" and is_num(c):
        return scale(num(-c.data), t.args[0])
    return Term("scale", (c, t))


def _coefficient(t):
    """(numeric coefficient, rest) of a term: 2 x -> (2, x), −(c y) -> (−c, y)."""
    if t.kind == "neg":
        c, rest = _coefficient(t.args[0])
        return -c, rest
    if t.kind == "scale" and is_num(t.args[0]):
        c, rest = _coefficient(t.args[1])
        return t.args[0].data * c, rest
    return sympy.S.One, t


def add(a, b):
    """a + b, with a common right factor taken out (A x + B x = (A + B) x) and a common
    scalar factor too ((1/N) a − (1/N) b = (1/N) (a − b))."""
    if a == b:
        return scale(num(2), a)
    ca, ra = _coefficient(a)
    cb, rb = _coefficient(b)
    if ca == cb and ca != 1 and ca != -1:
        return scale(num(ca), add(ra, rb))
    if ca == -cb and ca != 1 and ca != -1:
        if ca.could_extract_minus_sign():
            return scale(num(cb), add(rb, Term("neg", (ra,))))
        return scale(num(ca), add(ra, Term("neg", (rb,))))
    if a.kind == "mm" and b.kind == "mm" and a.args[-1] == b.args[-1]:
        left = lambda t: t.args[0] if len(t.args) == 2 else Term("mm", t.args[:-1])
        return mm(Term("add", (left(a), left(b))), a.args[-1])
    return Term("add", (a, b))


def fn(name, *args, data=None):
    return Term("fn", tuple(args), (name, data))


# ----- reading the graph ------------------------------------------------------------------

def _ones_like(shape):
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
    """Turns graph nodes into Terms; ``names`` maps node ids to the symbol naming them."""

    def __init__(self, names):
        self.names = names
        self.memo = {}

    def term(self, node, top=False):
        key = id(node)
        if not top and key in self.names:
            return sym(self.names[key])
        if key not in self.memo or top:
            t = self._read(node)
            if top:
                return t
            self.memo[key] = t
        return self.memo[key]

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

    def _read(self, node):
        op, a, ins = node.op, node.attrs, node.inputs
        if op == "symbol":
            return sym(node.name)
        if op == "const":
            value = a["value"]
            if not node.shape or value == 0:
                return num(value)
            return scale(num(value), _ones_like(node.shape))
        if op == "array":
            from .printing import format_expr
            return sym(format_expr(node.local_expr([])))
        if op == "eye":
            return EYE
        x = [self.term(i) for i in ins]
        if op in ("add", "sub", "mul", "div", "maximum", "minimum") or op in COMPARISONS:
            return self._binary(node)
        if op == "neg":
            return Term("neg", (x[0],))
        if op == "pow" and ins[1].op == "const" and not ins[1].shape:
            return self._power(ins[0], x[0], ins[1].attrs["value"])
        if op == "square":
            return self._power(ins[0], x[0], 2)
        if op in ("softmax", "log_softmax") and len(ins[0].shape) == 1:
            return fn(op, x[0])
        if op in UNARY:
            name = {"sigmoid": "σ", "abs": "abs"}.get(op, op)
            return fn(name, x[0])
        if op == "matmul":
            return self._matmul(ins, x)
        if op == "transpose":
            return T(x[0]) if len(node.shape) == 2 else fn("transpose", x[0], data=a["axes"])
        if op in ("unsqueeze", "squeeze", "reshape"):
            return self._reshape(ins[0], x[0], node.shape)
        if op == "broadcast_to":
            return self.lift(ins[0], node.shape)
        if op in ("sum", "mean"):
            total = self._sum(ins[0], x[0], a["axis"], a["keepdims"])
            if op == "mean":
                from .shapes import numel
                n = numel([ins[0].shape[k] for k in a["axis"]])
                return Term("div", (total, num(n)))
            return total
        if op == "where":
            return self._where(ins, x)
        if op == "cast":
            return Term("iverson", (x[0],))
        if op in ("logical_and", "logical_or"):
            return Term("logic", tuple(x), "∧" if op == "logical_and" else "∨")
        if op == "logical_not":
            return Term("not", (x[0],))
        if op == "dot":
            return mm(T(x[0]), x[1])
        if op == "outer":
            return mm(x[0], T(x[1]))
        if op == "inverse":
            return inv(x[0])
        if op == "solve":
            return mm(inv(x[0]), x[1])
        if op in ("diag", "diagonal"):
            return Term("diag", (x[0],))
        if op == "trace":
            return fn("tr", x[0])
        if op == "cholesky":
            return fn("chol", x[0])
        if op == "det":
            return fn("det", x[0])
        if op == "logdet":
            return fn("log det", x[0])
        if op == "logabsdet":
            return fn("log |det|", x[0])
        if op == "norm" and a["full"]:
            return Term("norm", (x[0],))
        if op == "detach":
            return x[0]
        if op == "index":
            return Term("index", (x[0],), a["index"])
        if op == "index_scatter":
            return Term("scatter", (x[0],), a["index"])
        params = {k: v for k, v in a.items()
                  if k not in ("full", "first") and not (k == "keepdims" and not v)
                  and not (k == "axis" and a.get("full"))}
        return fn(op, *x, data=params or None)

    def _binary(self, node):
        op, (p, q), shape = node.op, node.inputs, node.shape
        if op in COMPARISONS:
            sign = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤", "eq": "=", "ne": "≠"}[op]
            return Term("rel", (self.term(p), self.term(q)), sign)
        if op in ("maximum", "minimum"):
            return fn("max" if op == "maximum" else "min", self.term(p), self.term(q))
        if op == "mul":
            if not p.shape:
                return scale(self.term(p), self.term(q))
            if not q.shape:
                return scale(self.term(q), self.term(p))
            scaled = self._diag_scaling(p, q, shape) or self._diag_scaling(q, p, shape)
            if scaled is not None:
                return scaled
            return Term("had", (self.lift(p, shape), self.lift(q, shape)))
        if op == "div":
            if not q.shape:
                return Term("div", (self.lift(p, shape), self.term(q)))
            return Term("hdiv", (self.lift(p, shape), self.lift(q, shape)))
        left, right = self.lift(p, shape), self.lift(q, shape)
        if op == "sub":
            right = Term("neg", (right,))
        return add(left, right)

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

    def _power(self, node, t, e):
        return Term("hpow" if node.shape else "pow", (t,), e)

    def _matmul(self, ins, x):
        (p, q), (a, b) = ins, x
        if len(p.shape) > 2 or len(q.shape) > 2:
            return fn("matmul", a, b)
        if len(p.shape) == 1 and len(q.shape) == 1:
            return mm(T(a), b)
        if len(p.shape) == 1:
            return mm(T(b), a)
        return mm(a, b)

    def _reshape(self, src, t, shape):
        s = src.shape
        core_s = [d for d in s if d != 1]
        core = [d for d in shape if d != 1]
        if len(core_s) != len(core) or not all(shapes_equal((u,), (v,)) for u, v in zip(core_s, core)):
            return fn("reshape", t, data=shape)
        if len(core) == 0 or len(shape) > 2 or len(s) > 2:
            return t if len(core) == 0 else fn("reshape", t, data=shape)
        row_in = len(s) == 2 and s[0] == 1 and s[1] != 1
        row_out = len(shape) == 2 and shape[0] == 1 and shape[1] != 1
        return T(t) if row_in != row_out else t

    def _sum(self, node, t, axes, keepdims):
        s = node.shape
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

    def _where(self, ins, x):
        c, a, b = x
        if is_num(b, 0):
            return Term("had", (Term("iverson", (c,)), a))
        if is_num(a, 0):
            return Term("had", (Term("iverson", (Term("not", (c,)),)), b))
        return fn("where", c, a, b)


# ----- rendering ---------------------------------------------------------------------------

class Style:
    """Unicode text."""

    T = "ᵀ"
    INV = "⁻¹"
    INV_T = "⁻ᵀ"
    ONES = "𝟙"
    EYE = "I"
    HAD = " ∘ "
    HDIV = " ⊘ "
    MM = " "
    NEG = "−"
    SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")

    def number(self, value):
        from .printing import format_expr
        return format_expr(value)

    def name(self, text):
        if text.startswith("t") and text[1:].isdigit():
            return "t" + text[1:].translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
        return text

    def power(self, base, e, hadamard):
        sup = str(e).translate(self.SUPERSCRIPTS)
        return f"{base}∘{sup}" if hadamard else f"{base}{sup}"

    def call(self, name, args):
        return f"{name}({', '.join(args)})"

    def div(self, a, b):
        return f"{a}/{b}"

    def iverson(self, c):
        return f"[{c}]"

    def norm(self, x):
        return f"‖{x}‖"

    def paren(self, s):
        return f"({s})"


class LatexStyle(Style):
    T = "^{T}"
    INV = "^{-1}"
    INV_T = "^{-T}"
    ONES = r"\mathbf{1}"
    EYE = "I"
    HAD = r" \circ "
    HDIV = r" \oslash "
    MM = " "
    NEG = "-"

    def number(self, value):
        from .printing import latex_expr
        return latex_expr(value)

    def name(self, text):
        if text.startswith("t") and text[1:].isdigit():
            return f"t_{{{text[1:]}}}"
        from .printing import latex_expr
        return latex_expr(sympy.Symbol(text))

    def power(self, base, e, hadamard):
        return f"{base}^{{\\circ {e}}}" if hadamard else f"{base}^{{{e}}}"

    def call(self, name, args):
        names = {"σ": r"\sigma", "log det": r"\log\det", "tr": r"\operatorname{tr}",
                 "det": r"\det", "exp": r"\exp", "log": r"\log", "tanh": r"\tanh",
                 "sin": r"\sin", "cos": r"\cos"}
        head = names.get(name, rf"\operatorname{{{name}}}".replace("_", r"\_"))
        return rf"{head}\left({', '.join(args)}\right)"

    def div(self, a, b):
        return rf"\frac{{{a}}}{{{b}}}"

    def iverson(self, c):
        return rf"\left[{c}\right]"

    def norm(self, x):
        return rf"\left\lVert {x} \right\rVert"

    def paren(self, s):
        return rf"\left({s}\right)"


class Renderer:
    def __init__(self, style):
        self.s = style

    def __call__(self, t):
        return self.render(t)[0]

    def wrap(self, t, level):
        text, prec = self.render(t)
        return self.s.paren(text) if prec < level else text

    def render(self, t):
        s, k = self.s, t.kind
        if k == "sym":
            return s.name(t.data), ATOM
        if k == "num":
            text = s.number(t.data)
            atom = t.data.is_Symbol or (t.data.is_Integer or t.data.is_Float) and t.data >= 0
            # a positive fraction is one block in LaTeX (\frac{1}{N}), a quotient in text
            atom = atom or isinstance(s, LatexStyle) and bool(t.data.is_positive)
            return text, ATOM if atom else MUL
        if k == "ones":
            return s.ONES, ATOM
        if k == "eye":
            return s.EYE, ATOM
        if k == "T":
            inner = t.args[0]
            if inner.kind == "inv":
                return self.wrap(inner.args[0], ATOM) + s.INV_T, POW
            return self.wrap(inner, ATOM) + s.T, POW
        if k == "inv":
            if t.args[0].kind == "T":
                return self.wrap(t.args[0].args[0], ATOM) + s.INV_T, POW
            return self.wrap(t.args[0], ATOM) + s.INV, POW
        if k == "mm":
            return s.MM.join(self.wrap(a, POW if a.kind != "mm" else MUL) for a in t.args), MUL
        if k == "had":
            return s.HAD.join(self.wrap(a, POW) for a in t.args), MUL
        if k == "hdiv":
            return self.wrap(t.args[0], POW) + s.HDIV + self.wrap(t.args[1], POW), MUL
        if k == "scale":
            c, x = t.args
            return self.wrap(c, POW) + s.MM + self.wrap(x, MUL if x.kind == "mm" else POW), MUL
        if k == "div":
            a, b = t.args
            if isinstance(s, LatexStyle):
                return s.div(self(a), self(b)), ATOM
            return self.wrap(a, MUL) + "/" + self.wrap(b, POW), MUL
        if k == "neg":
            return s.NEG + self.wrap(t.args[0], MUL), NEG
        if k == "add":
            parts = []
            terms = list(t.args)
            if terms[0].kind in ("num", "neg") and terms[1].kind not in ("num", "neg"):
                terms = terms[1:] + terms[:1]
            for i, a in enumerate(terms):
                if a.kind == "neg" and i:
                    parts.append(f" {s.NEG} " + self.wrap(a.args[0], MUL))
                elif a.kind == "num" and a.data < 0 and i:
                    parts.append(f" {s.NEG} " + s.number(-a.data))
                else:
                    text = self.wrap(a, ADD)
                    parts.append((" + " if i else "") + text)
            return "".join(parts), ADD
        if k in ("hpow", "pow"):
            return s.power(self.wrap(t.args[0], ATOM), t.data, k == "hpow"), POW
        if k == "iverson":
            return s.iverson(self(t.args[0])), ATOM
        if k == "rel":
            return f"{self.wrap(t.args[0], ADD)} {t.data} {self.wrap(t.args[1], ADD)}", 0
        if k == "logic":
            return f" {t.data} ".join(self.wrap(a, ATOM) for a in t.args), 0
        if k == "not":
            return "¬" + self.wrap(t.args[0], ATOM), ATOM
        if k == "diag":
            return s.call("diag", [self(t.args[0])]), ATOM
        if k == "norm":
            return s.norm(self(t.args[0])), ATOM
        if k == "index":
            from .printing import FormulaPrinter
            idx = FormulaPrinter()._index_text(_index_expr(t.data))
            return f"{self.wrap(t.args[0], ATOM)}[{idx}]", ATOM
        if k == "scatter":
            from .printing import FormulaPrinter
            idx = FormulaPrinter()._index_text(_index_expr(t.data))
            return s.call("scatter", [self(t.args[0]), f"[{idx}]"]), ATOM
        if k == "fn":
            name, data = t.data
            args = [self(a) for a in t.args]
            if isinstance(data, dict):
                args += [f"{key}={_fmt(v)}" for key, v in data.items()]
            elif data is not None:
                args.append(_fmt(data))
            return s.call(name, args), ATOM
        raise ValueError(f"matrix notation: unknown term {k}")


def _fmt(v):
    if isinstance(v, tuple):
        return "(" + ", ".join(map(str, v)) + ("," if len(v) == 1 else "") + ")"
    return str(v)


def _index_expr(index):
    from .indexing import index_expr
    return index_expr(index)


# ----- naming shared subterms ------------------------------------------------------------

TRANSPARENT = {"symbol", "const", "array", "eye", "transpose", "unsqueeze", "squeeze",
               "reshape", "broadcast_to", "neg", "cast", "detach"} | set(COMPARISONS)


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
        if node.op in TRANSPARENT or not node.inputs:
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


def render(outputs, style="text", reserved=()):
    """(rendered outputs, [(name, rendered definition), ...]) in matrix notation."""
    names, named = shared_names(outputs, reserved)
    reader = Reader(names)
    renderer = Renderer(LatexStyle() if style == "latex" else Style())
    out = [renderer(reader.term(o)) if o is not None else renderer(num(0)) for o in outputs]
    defs = [(renderer.s.name(names[id(n)]), renderer(reader.term(n, top=True))) for n in named]
    return out, defs
