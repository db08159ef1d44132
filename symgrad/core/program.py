"""The straight-line program: a DAG linearised into one assignment per op.

This is symgrad's common subexpression elimination: every node of the DAG is computed
once, in topological order, under its own name. Code generation and ``program()`` both
print it, one statement per node, so their cost is linear in the graph.

Printing goes through SymPy printers, but printing each statement from scratch costs
~150 us. So each distinct (op, parameters, inlined constants) is printed once, with
placeholder symbols for the operands, into a template that later statements fill in.
Sums of placeholders are built unevaluated (``Placeholder``).
"""
import re
import threading

import sympy
from sympy import S

from .build import typed_key
from .graph import topo_order
from .opdef import OPS
from .shapes import broadcast_shapes, shapes_equal

_PLACEHOLDER = re.compile(r"\b(sgarg\d+)\b")
_NAN_NAME = re.compile(r"\bsgnan\b")


class Placeholder(sympy.Symbol):
    """An operand of a template. A sum or difference with it is built unevaluated: SymPy
    would only put the terms in its canonical order, which its printers restore, and its
    first evaluated sum imports sympy.tensor (20 ms), which a process that compiles sums
    of its inputs need not pay. Its ``_op_priority`` makes 1.0 - x call ``__rsub__``."""

    _op_priority = 10.5

    def __add__(self, other):
        return sympy.Add(self, sympy.sympify(other), evaluate=False)

    def __radd__(self, other):
        return sympy.Add(sympy.sympify(other), self, evaluate=False)

    def __sub__(self, other):
        return sympy.Add(self, -sympy.sympify(other), evaluate=False)

    def __rsub__(self, other):
        return sympy.Add(sympy.sympify(other), -self, evaluate=False)


PLACEHOLDERS = [Placeholder(f"sgarg{i}") for i in range(8)]
_NAN = sympy.Symbol("sgnan", real=True)


def placeholder(i):
    """The symbol standing for operand ``i`` in a template."""
    while len(PLACEHOLDERS) <= i:
        PLACEHOLDERS.append(Placeholder(f"sgarg{len(PLACEHOLDERS)}"))
    return PLACEHOLDERS[i]


class Template:
    """A printed statement with holes for operand names."""

    __slots__ = ("pieces", "repeated", "preamble", "_format", "_holes")

    def __init__(self, text, preamble=None):
        self.preamble = preamble or {}   # helper definitions the text calls (_softmax)
        parts = _PLACEHOLDER.split(text)
        self.pieces = [(int(p[5:]) if i % 2 else p) for i, p in enumerate(parts)]
        holes = [p for p in self.pieces if isinstance(p, int)]
        self.repeated = {h for h in holes if holes.count(h) > 1}
        # one %-format per template: filling it is one C call (long programs fill one
        # template per statement)
        self._format = "".join("%s" if isinstance(p, int) else p.replace("%", "%%")
                               for p in self.pieces)
        self._holes = tuple(holes)

    def fill(self, names):
        return self._format % tuple([names[h] for h in self._holes])


def _inlinable(node, pos):
    """A scalar constant operand can be printed as a literal inside the statement."""
    inp = node.inputs[pos]
    if not inp.is_const:
        return False
    if not inp.shape:
        return True
    if not OPS[node.op].pointwise:
        return False
    others = [i.shape for j, i in enumerate(node.inputs) if j != pos]
    return shapes_equal(broadcast_shapes(*others) if others else (), node.shape)


def _as_float(node, position, value):
    """An integer constant meeting float arrays is printed as a float (``1.0 - x``):
    NumPy and torch handle a Python int operand ~25% slower than a float. Exponents
    stay integers (x**2 is a multiplication): ``OpDef.exact_operands``."""
    if value.is_Integer and position not in OPS[node.op].exact_operands:
        return sympy.Float(int(value))
    return value


# Templates are keyed by inlined constants too, so a process that compiles functions with
# ever new constants would grow the cache without end: it starts again past this size.
MAX_TEMPLATES = 4096


class TemplateCache:
    """Templates of one printer, keyed by op, parameters and inlined constants."""

    def __init__(self, printer, float_constants=False):
        self.printer = printer
        self.float_constants = float_constants
        self.cache = {}
        self.lock = threading.Lock()   # the printer's preamble is swapped while printing

    def statement(self, node, names):
        """The printed right-hand side of ``node`` given its operands' printed names
        (None for an operand inlined as a constant)."""
        return self.template(node, names).fill(names)

    def _print(self, expr):
        """The printed template, with the helpers its printing asked for (code printers
        keep them in ``preamble``; each build collects those of the templates it uses)."""
        outer = getattr(self.printer, "preamble", None)
        if outer is None:
            return Template(self._nan_spelled(self.printer.doprint(expr)))
        self.printer.preamble = {}
        try:
            text = self._nan_spelled(self.printer.doprint(expr))
            needs = self.printer.preamble
        finally:
            self.printer.preamble = outer
        outer.update(needs)
        return Template(text, needs)

    def _nan_spelled(self, text):
        """An inlined nan stands in the template as the symbol ``sgnan`` (SymPy would make
        nan * x the scalar nan, dropping x's shape), printed as the printer's nan."""
        if "sgnan" not in text:
            return text
        return _NAN_NAME.sub(self.printer.doprint(S.NaN).replace("\\", "\\\\"), text)

    def template(self, node, names):
        if None in names:
            inline = tuple(i.attrs["value"] if n is None else None
                           for i, n in zip(node.inputs, names))
        else:
            inline = len(names)
        key = (node.op, typed_key(node.params if OPS[node.op].key_params is None
                               else OPS[node.op].template_key(node.params)), inline)
        tpl = self.cache.get(key)
        if tpl is None:
            if isinstance(inline, int):
                inline = (None,) * inline
            operands = [placeholder(i) if v is None else _NAN if v is S.NaN else
                        _as_float(node, i, v) if self.float_constants else v
                        for i, v in enumerate(inline)]
            with self.lock:
                tpl = self._print(node.local_expr(operands))
            if len(self.cache) >= MAX_TEMPLATES:
                self.cache.clear()
            self.cache[key] = tpl
        return tpl


class Program:
    """``outputs`` (nodes or None) linearised: ``statements`` is a list of
    (name, node, operand_names) in evaluation order, temporaries named ``<prefix>0``,
    ``<prefix>1``, ... Constant arrays are this program's own: ``arrays`` maps the name
    each gets (``array_name(node, k)``, by default ``<prefix>c<k>``) to its value; inputs
    are named ``input_name(node)`` (by default their own names)."""

    def __init__(self, outputs, inputs, prefix="v", array_name=None, input_name=None,
                 known=None):
        self.outputs = outputs
        self.inputs = inputs
        input_name = input_name or (lambda x: x.name)
        names = {id(x): input_name(x) for x in inputs}
        if known:   # {id(node): name} computed before this program: read, not computed
            names.update(known)
        taken = set(names.values())
        self.statements = []
        self.arrays = {}
        counter = 0
        statements = self.statements
        clash = any(n.startswith(prefix) for n in taken)
        for node in topo_order(outputs, known):
            nid = id(node)
            if nid in names:
                continue
            op = node.op
            if op == "symbol":
                names[nid] = input_name(node)
                continue
            if op == "array":
                k = len(self.arrays)
                name = array_name(node, k) if array_name else f"{prefix}c{k}"
                names[nid] = name
                self.arrays[name] = node.attrs["value"].array
                continue
            operand_names = [None if i.op == "const" and _inlinable(node, k) else names[id(i)]
                             for k, i in enumerate(node.inputs)]
            if op == "const" and not node.shape:
                continue
            name = f"{prefix}{counter}"
            while clash and name in taken:
                counter += 1
                name = f"{prefix}{counter}"
            counter += 1
            names[nid] = name
            statements.append((name, node, operand_names))
        self.names = names

    def name_of(self, node):
        return self.names.get(id(node))

    def forward_count(self):
        return len(self.statements)
