"""SymPy forms of nodes that keep the node's shape.

SymPy simplifies as it builds: in an elementwise formula an array factor may cancel
(``u*b/u`` is ``b``) or vanish, and what remains can be smaller than the node, a scalar
where the node is a matrix. Code is unaffected (it is printed op by op), but a printed
formula would silently drop a broadcast. ``node_form`` infers the shape of the form it
built from the shapes of the symbols in it and the ops' own shape rules, and wraps a form
that lost its shape in ``broadcast_to``.
"""
import sympy

from .opdef import OPS, decode
from .shapes import broadcast_shapes, shapes_equal


def form_shape(expr, symbol_shapes, memo):
    """The shape of the array a SymPy form stands for, or None where it cannot be told
    (``symbol_shapes``: {Symbol: shape} of the arrays in it; other symbols are dims)."""
    stack = [expr]
    while stack:
        e = stack[-1]
        if e in memo:
            stack.pop()
            continue
        parts = _operands(e)
        todo = [p for p in parts if p not in memo]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        memo[e] = _shape_of(e, [memo[p] for p in parts], symbol_shapes)
    return memo[expr]


def _operands(e):
    opdef = getattr(e, "opdef", None)
    if opdef is not None:
        return e.args[:opdef.arity] if opdef.arity is not None else ()
    if isinstance(e, sympy.Symbol) or not isinstance(e, sympy.Basic) or e.is_Atom:
        return ()
    return tuple(a for a in e.args if isinstance(a, sympy.Basic))


def _shape_of(e, shapes, symbol_shapes):
    if any(s is None for s in shapes):
        return None
    opdef = getattr(e, "opdef", None)
    try:
        if opdef is not None:
            if opdef.arity is None:
                return None
            attrs = {k: decode(v) for k, v in e.params.items()}
            return tuple(opdef.shape(list(shapes), attrs))
        if isinstance(e, sympy.Symbol):
            if e in symbol_shapes:
                return tuple(symbol_shapes[e])
            return () if e.is_integer else None    # a dim; else an array of unknown shape
        return tuple(broadcast_shapes(*shapes)) if shapes else ()
    except Exception:  # noqa: BLE001 - an op rule that needs more than its form holds
        return None


def node_form(node, operands, symbol_shapes, memo):
    """The SymPy form of ``node`` over its operands' forms, with its shape kept."""
    opdef = OPS[node.op]
    e = opdef.expr(node.attrs, operands, node.shape)
    if node.shape and opdef.pointwise and node.kind != "bool":
        got = form_shape(e, symbol_shapes, memo)
        if got is not None and not shapes_equal(got, node.shape):
            e = OPS["broadcast_to"].expr({"shape": tuple(node.shape)}, (e,))
    return e
