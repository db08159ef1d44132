"""Rule formulas: one Python expression, parsed with ``ast`` and checked against a
whitelist, turned into a tree of small closures that call symgrad ops.

Names must be the op's inputs and parameters, ``result``, ``grad`` (VJP) or
``<input>_t`` (JVP); calls must name a symgrad op or a helper from ``diff.helpers``;
only arithmetic, comparisons, calls, tuples and number literals are allowed. Anything
else is a ``RuleError`` naming the file and line. Nothing is ever ``eval``-ed: applying
an accepted formula calls symgrad ops, so it builds graph nodes that can be
differentiated again.
"""
import ast

import sympy

from ..core.build import const
from ..core.opdef import FUNCTIONS as OP_FUNCTIONS
from ..core.ops import pointwise as pw
from ..core.ops.linalg import matmul
from ..errors import RuleError
from . import helpers

BINOPS = {ast.Add: pw.add, ast.Sub: pw.sub, ast.Mult: pw.mul, ast.Div: pw.div,
          ast.Pow: pw.pow, ast.MatMult: matmul, ast.BitAnd: pw.logical_and,
          ast.BitOr: pw.logical_or}
CMPOPS = {ast.Gt: pw.gt, ast.GtE: pw.ge, ast.Lt: pw.lt, ast.LtE: pw.le,
          ast.Eq: pw.eq, ast.NotEq: pw.ne}
CONSTANTS = {"pi": sympy.pi}


def formula_functions():
    """Every function a formula may call: symgrad's public functions and the rule
    helpers (looked up when a formula is compiled, so ops registered later count)."""
    fns = {name: fn for name, fn in OP_FUNCTIONS.items()
           if getattr(fn, "opdef", None) is not None and name != "symbol"}
    fns.update({name: getattr(helpers, name) for name in helpers.__all__})
    return fns


class Formula:
    """One parsed formula: its text, where it came from, and a closure evaluating it.
    A formula of a rule file checked in an earlier process (``diff.rules.ComposedRules``)
    is compiled on its first use (``Formula.deferred``): a process then compiles only the
    rules its functions use."""

    __slots__ = ("text", "_fn", "_names", "_source")

    def __init__(self, text, fn, names):
        self.text = text
        self._fn = fn
        self._names = names
        self._source = None

    @classmethod
    def deferred(cls, text, allowed, where, functions):
        formula = cls(text.strip(), None, None)
        formula._source = (text, allowed, where, functions)
        return formula

    @property
    def fn(self):
        if self._fn is None:
            compiled = compile_formula(*self._source)
            self._fn, self._names = compiled._fn, compiled._names
        return self._fn

    @property
    def names(self):
        self.fn
        return self._names

    def __call__(self, env):
        return (self._fn or self.fn)(env)

    def __repr__(self):
        return self.text


class _Compiler:
    """Turns a whitelisted ``ast`` expression into nested closures over an env dict."""

    def __init__(self, allowed, where, functions):
        self.allowed = allowed
        self.where = where
        self.names = set()
        self.functions = functions

    def fail(self, node, msg):
        file, line, op = self.where
        raise RuleError(f"{file}:{line}: rule {op}: {msg} "
                        f"(at column {getattr(node, 'col_offset', 0) + 1} of the formula)")

    def compile(self, node):
        method = getattr(self, "c_" + type(node).__name__, None)
        if method is None:
            self.fail(node, f"'{type(node).__name__}' is not allowed in a formula; use "
                            "arithmetic, comparisons, calls of symgrad ops and number literals")
        return method(node)

    def c_Expression(self, node):
        return self.compile(node.body)

    def c_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or v is None or isinstance(v, (int, float)):
            return lambda env: v
        self.fail(node, f"literal {v!r} is not allowed; only numbers, True, False and None")

    def c_Name(self, node):
        name = node.id
        if name.startswith("_"):
            self.fail(node, f"name '{name}' is not allowed (no private or dunder names)")
        if name in CONSTANTS:
            value = CONSTANTS[name]
            return lambda env: const(value)
        if name in self.functions and name not in self.allowed:
            self.fail(node, f"'{name}' is a function; call it")
        if name not in self.allowed:
            self.fail(node, f"name '{name}' is not allowed; a formula may use "
                            f"{', '.join(sorted(self.allowed))}, pi, and calls of symgrad ops")
        self.names.add(name)
        return lambda env: env[name]

    def c_BinOp(self, node):
        fn = BINOPS.get(type(node.op))
        if fn is None:
            self.fail(node, f"operator {type(node.op).__name__} is not allowed")
        a, b = self.compile(node.left), self.compile(node.right)
        return lambda env: fn(a(env), b(env))

    def c_UnaryOp(self, node):
        x = self.compile(node.operand)
        if isinstance(node.op, ast.USub):
            return lambda env: pw.neg(x(env))
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Invert):
            return lambda env: pw.logical_not(x(env))
        self.fail(node, f"operator {type(node.op).__name__} is not allowed; use ~ for not")

    def c_Compare(self, node):
        if len(node.ops) != 1:
            self.fail(node, "chained comparisons are not allowed; combine with &")
        fn = CMPOPS.get(type(node.ops[0]))
        if fn is None:
            self.fail(node, f"comparison {type(node.ops[0]).__name__} is not allowed")
        a, b = self.compile(node.left), self.compile(node.comparators[0])
        return lambda env: fn(a(env), b(env))

    def c_Tuple(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: tuple(i(env) for i in items)

    def c_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.fail(node, "only plain function names can be called (no attributes)")
        name = node.func.id
        if name.startswith("_") or name not in self.functions:
            self.fail(node, f"'{name}' is not a symgrad op or rule helper")
        fn = self.functions[name]
        args = [self.compile(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None or kw.arg.startswith("_"):
                self.fail(node, "**kwargs and private keyword names are not allowed")
            kwargs[kw.arg] = self.compile(kw.value)
        return lambda env: fn(*[a(env) for a in args],
                              **{k: v(env) for k, v in kwargs.items()})


def compile_formula(text, allowed, where, functions=None):
    """``text`` as a Formula; ``functions`` (default ``formula_functions()``) are what it
    may call."""
    file, line, op = where
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise RuleError(f"{file}:{line}: rule {op}: syntax error in formula {text!r}: "
                        f"{e.msg}") from None
    c = _Compiler(allowed, where, functions or formula_functions())
    fn = c.compile(tree)
    return Formula(text.strip(), fn, c.names)


