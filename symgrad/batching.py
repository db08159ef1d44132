"""Batching a graph along a new leading axis: the ``vmap`` behind Jacobians and Hessians.

A Jacobian is a JVP (or VJP) applied to every basis vector at once. Tracing the JVP once
on a tangent placeholder gives a graph linear in the tangent; ``batch`` then rebuilds
that graph with the identity matrix in place of the placeholder, giving every column in
one graph that stays symbolic in the dims (``eye(n)``), compiles to array code, and is
differentiable again. Each node that depends on a batched value gets the batch axis in
front; one rule per op says how (pointwise ops broadcast, reductions shift their axes,
``matmul`` folds the batch into rows). An op without a rule raises ``BatchingError``;
the caller then falls back to one sweep per basis vector when the sizes are concrete.
"""
from . import ops
from .errors import SymgradError
from .graph import make, topo_order
from .ops import BINARY, COMPARISONS, LOGICAL, UNARY


class BatchingError(SymgradError):
    """An op with no batching rule (the Jacobian needs concrete sizes then)."""


def batch(outputs, batched, size):
    """``outputs`` rebuilt with a leading axis of ``size`` wherever they depend on a node
    of ``batched`` ({id(node): value of shape (size,) + node.shape}). Returns, for each
    output, a value of shape (size,) + its shape (broadcast if it did not depend on any)."""
    vals = {}
    for node in topo_order(outputs):
        if id(node) in batched:
            vals[id(node)] = (batched[id(node)], True)
            continue
        ins = [vals[id(i)] for i in node.inputs]
        if not any(b for _, b in ins):
            vals[id(node)] = (node, False)
            continue
        rule = RULES.get(node.op)
        if rule is None:
            raise BatchingError(f"op '{node.op}' has no batching rule (needed to build a "
                                "Jacobian with symbolic sizes); give concrete sizes")
        vals[id(node)] = (rule(node, ins, size), True)
    out = []
    for o in outputs:
        v, b = vals[id(o)]
        out.append(v if b else ops.broadcast_to(ops.unsqueeze(v, 0), (size,) + o.shape))
    return out


def _lift(v, rank, size):
    """A batched value of shape (B,) + s as (B,) + (1, ...) + s of rank 1 + ``rank``."""
    base = v.shape[1:]
    if len(base) >= rank:
        return v
    return ops.reshape(v, (size,) + (1,) * (rank - len(base)) + base)


def _pointwise(node, ins, size):
    rank = len(node.shape)
    args = tuple(_lift(v, rank, size) if b else v for v, b in ins)
    return make(node.op, args, node.params)


def _shifted(node, key):
    return tuple(a + 1 for a in node.attrs[key])


def _sum(node, ins, size):
    return ops.sum(ins[0][0], axis=_shifted(node, "axis"), keepdims=node.attrs["keepdims"])


def _mean(node, ins, size):
    return ops.mean(ins[0][0], axis=_shifted(node, "axis"), keepdims=node.attrs["keepdims"])


def _transpose(node, ins, size):
    return ops.transpose(ins[0][0], (0,) + _shifted(node, "axes"))


def _reshape(node, ins, size):
    return ops.reshape(ins[0][0], (size,) + node.shape)


def _broadcast(node, ins, size):
    v = _lift(ins[0][0], len(node.shape), size)
    return ops.broadcast_to(v, (size,) + node.shape)


def _matmul(node, ins, size):
    """Batched x @ y with matrix products of rank 2 at most: the batch axis is folded
    into the rows (or columns) of the batched operand."""
    (x, bx), (y, by) = ins
    xs = x.shape[1:] if bx else x.shape
    ys = y.shape[1:] if by else y.shape
    if len(xs) > 2 or len(ys) > 2:
        raise BatchingError("matmul of operands of rank above 2 has no batching rule")
    if bx and by:
        if len(xs) == 1 and len(ys) == 1:
            return ops.sum(x * y, axis=1)
        if len(ys) == 1:
            return ops.sum(x * ops.unsqueeze(y, 1), axis=2)
        if len(xs) == 1:
            return ops.sum(ops.unsqueeze(x, 2) * y, axis=1)
        return ops.sum(ops.unsqueeze(x, 3) * ops.unsqueeze(y, 1), axis=2)
    if bx:
        if len(xs) == 1:
            return ops.matmul(x, y)                      # (B, k) @ y
        rows = ops.matmul(ops.reshape(x, (size * xs[0], xs[1])), y)
        return ops.reshape(rows, (size,) + node.shape)
    if len(ys) == 1:
        return ops.matmul(y, ops.transpose(x)) if len(xs) == 2 else ops.matmul(y, x)
    # x unbatched, y of shape (B, k, n): contract k with the batch folded into columns.
    cols = ops.reshape(ops.transpose(y, (1, 0, 2)), (ys[0], size * ys[1]))
    out = ops.matmul(x, cols)
    if len(xs) == 1:
        return ops.reshape(out, (size, ys[1]))
    return ops.transpose(ops.reshape(out, (xs[0], size, ys[1])), (1, 0, 2))


RULES = {name: _pointwise for name in list(UNARY) + list(BINARY) + list(COMPARISONS)
         + list(LOGICAL) + ["where", "clamp", "cast", "detach", "logical_not"]}
RULES.update({"sum": _sum, "mean": _mean, "transpose": _transpose, "reshape": _reshape,
              "squeeze": _reshape, "unsqueeze": _reshape, "broadcast_to": _broadcast,
              "matmul": _matmul})
