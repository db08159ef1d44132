"""Rendering matrix-notation terms as Unicode text or LaTeX, and naming the subterms a
formula uses more than once (t₁, t₂, ...: "where t₁ = W x + b").

Both renderings come from one ``Renderer`` with a ``Style`` (Unicode) or ``LatexStyle``;
this module only reads the graph, so it never changes what is computed.
"""
import sympy

from ...core.graph import topo_order
from ...core.opdef import OPS
from ...core.ops.indexing import index_expr, index_text
from ..latex import latex_expr
from ..text import FormulaPrinter, format_expr
from .algebra import ATOM, ADD, MUL, NEG, POW, num
from .reader import Reader

_TEXT = FormulaPrinter()


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
    SYMBOLS = {}
    SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")

    def number(self, value):
        return format_expr(value)

    def symbol(self, text):
        """A relation or logic sign as this notation writes it."""
        return self.SYMBOLS.get(text, text)

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
    SYMBOLS = {"¬": r"\neg ", "≤": r"\le", "≥": r"\ge", "≠": r"\ne", "<": "<", ">": ">",
               "∧": r"\land", "∨": r"\lor"}

    def number(self, value):
        return latex_expr(value)

    def name(self, text):
        if text.startswith("t") and text[1:].isdigit():
            return f"t_{{{text[1:]}}}"
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
            return (f"{self.wrap(t.args[0], ADD)} {s.symbol(t.data)} "
                    f"{self.wrap(t.args[1], ADD)}"), 0
        if k == "logic":
            return f" {s.symbol(t.data)} ".join(self.wrap(a, ATOM) for a in t.args), 0
        if k == "not":
            return s.symbol("¬") + self.wrap(t.args[0], ATOM), ATOM
        if k == "diag":
            return s.call("diag", [self(t.args[0])]), ATOM
        if k == "norm":
            return s.norm(self(t.args[0])), ATOM
        if k == "index":
            idx = index_text(_TEXT, index_expr(t.data))
            return f"{self.wrap(t.args[0], ATOM)}[{idx}]", ATOM
        if k == "scatter":
            idx = index_text(_TEXT, index_expr(t.data))
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


def render(outputs, style="text", reserved=()):
    """(rendered outputs, [(name, rendered definition), ...]) in matrix notation."""
    names, named = shared_names(outputs, reserved)
    reader = Reader(names)
    renderer = Renderer(LatexStyle() if style == "latex" else Style())
    out = [renderer(reader.term(o)) if o is not None else renderer(num(0)) for o in outputs]
    defs = [(renderer.s.name(names[id(n)]), renderer(reader.term(n, top=True))) for n in named]
    return out, defs
