"""The straight-line program: a DAG linearised into one assignment per op.

This is symgrad's common subexpression elimination: every node of the DAG is computed
once, in topological order, under its own name. Code generation and ``program()`` both
print it, one statement per node, so their cost is linear in the graph.

Printing goes through SymPy printers, but printing each statement from scratch costs
~150 us. So each distinct (op, parameters, inlined constants) is printed once, with
placeholder symbols for the operands, into a template that later statements fill in.
"""
import re

import sympy

from .graph import topo_order
from .shapes import broadcast_shapes, shapes_equal

_PLACEHOLDER = re.compile(r"(sgarg\d+)")
PLACEHOLDERS = [sympy.Symbol(f"sgarg{i}") for i in range(8)]


class Template:
    """A printed statement with holes for operand names."""

    __slots__ = ("pieces", "repeated", "preamble")

    def __init__(self, text, preamble=None):
        self.preamble = preamble or {}   # helper definitions the text calls (_softmax)
        parts = _PLACEHOLDER.split(text)
        self.pieces = [(int(p[5:]) if i % 2 else p) for i, p in enumerate(parts)]
        holes = [p for p in self.pieces if isinstance(p, int)]
        self.repeated = {h for h in holes if holes.count(h) > 1}

    def fill(self, names):
        return "".join(names[p] if isinstance(p, int) else p for p in self.pieces)


def _inlinable(node, pos):
    """A scalar constant operand can be printed as a literal inside the statement."""
    inp = node.inputs[pos]
    if inp.op != "const":
        return False
    if not inp.shape:
        return True
    from .ops import BINARY, COMPARISONS, LOGICAL, UNARY
    if node.op not in BINARY and node.op not in COMPARISONS and node.op not in LOGICAL \
            and node.op not in UNARY and node.op not in ("where", "clamp"):
        return False
    others = [i.shape for j, i in enumerate(node.inputs) if j != pos]
    return shapes_equal(broadcast_shapes(*others) if others else (), node.shape)


def _as_float(node, position, value):
    """An integer constant meeting float arrays is printed as a float (``1.0 - x``):
    NumPy and torch handle a Python int operand ~25% slower than a float. Exponents
    stay integers (x**2 is a multiplication)."""
    if value.is_Integer and not (node.op == "pow" and position == 1):
        return sympy.Float(int(value))
    return value


class TemplateCache:
    """Templates of one printer, keyed by op, parameters and inlined constants."""

    def __init__(self, printer, float_constants=False):
        self.printer = printer
        self.float_constants = float_constants
        self.cache = {}

    def statement(self, node, names):
        """The printed right-hand side of ``node`` given its operands' printed names
        (None for an operand inlined as a constant)."""
        return self.template(node, names).fill(names)

    def _print(self, expr):
        """The printed template, with the helpers its printing asked for (code printers
        keep them in ``preamble``; each build collects those of the templates it uses)."""
        outer = getattr(self.printer, "preamble", None)
        if outer is None:
            return Template(self.printer.doprint(expr))
        self.printer.preamble = {}
        try:
            text = self.printer.doprint(expr)
            needs = self.printer.preamble
        finally:
            self.printer.preamble = outer
        outer.update(needs)
        return Template(text, needs)

    def template(self, node, names):
        inline = tuple(i.attrs["value"] if n is None else None
                       for i, n in zip(node.inputs, names))
        # an sg.Function output prints as one of its operands: its application (in the
        # params) must not become a key that keeps it alive
        params = (("index", node.attrs["index"]),) if node.op == "custom" else node.params
        key = (node.op, params, inline)
        tpl = self.cache.get(key)
        if tpl is None:
            operands = [PLACEHOLDERS[i] if v is None else
                        _as_float(node, i, v) if self.float_constants else v
                        for i, v in enumerate(inline)]
            tpl = self._print(node.local_expr(operands))
            self.cache[key] = tpl
        return tpl


class Program:
    """``outputs`` (nodes or None) linearised: ``statements`` is a list of
    (name, node, operand_names) in evaluation order. Constant arrays are globals named in
    ``arrays``; with ``local_arrays`` statements use a local copy (``array_locals``), for
    backends that convert them on entry."""

    def __init__(self, outputs, inputs, prefix="v", local_arrays=False):
        self.outputs = outputs
        self.inputs = inputs
        names = {id(x): x.name for x in inputs}
        taken = set(names.values())
        self.statements = []
        self.arrays = {}
        self.array_locals = {}
        counter = 0
        for node in topo_order(outputs):
            if id(node) in names:
                continue
            if node.op == "symbol":
                names[id(node)] = node.name
                continue
            if node.op == "array":
                sym = node.local_expr([])
                local = f"_{sym.name}" if local_arrays else sym.name
                names[id(node)] = local
                self.arrays[sym.name] = node.attrs["value"].array
                self.array_locals[sym.name] = local
                continue
            operand_names = [None if _inlinable(node, k) else names[id(i)]
                             for k, i in enumerate(node.inputs)]
            if node.op == "const" and not node.shape:
                continue
            name = f"{prefix}{counter}"
            while name in taken:
                counter += 1
                name = f"{prefix}{counter}"
            counter += 1
            names[id(node)] = name
            self.statements.append((name, node, operand_names))
        self.names = names

    def name_of(self, node):
        return self.names.get(id(node))

    def forward_count(self):
        return len(self.statements)
