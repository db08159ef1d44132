"""Batching a graph along a new leading axis: the ``vmap`` behind Jacobians and Hessians.

A Jacobian is a JVP (or VJP) applied to every basis vector at once. Tracing the JVP once
on a tangent placeholder gives a graph linear in the tangent; ``batch`` then rebuilds
that graph with the identity matrix in place of the placeholder, giving every column in
one graph that stays symbolic in the dims (``eye(n)``), compiles to array code, and is
differentiable again. Each node that depends on a batched value gets the batch axis in
front; one rule per op says how (pointwise ops broadcast, reductions shift their axes,
``matmul`` folds the batch into rows). An op without a rule is applied to each basis
vector in turn and the results stacked, when the number of basis vectors is concrete;
with a symbolic number it raises ``BatchingError``.

``jacobian_blocks`` builds Jacobians this way in reverse mode (one VJP per output
element, batched: the rows) or forward mode (one JVP per input element: the columns).
"""
import itertools

import sympy

from ..core.build import const, symbol
from ..core.graph import topo_order
from ..core.opdef import OPS
from ..core.ops import batching as rules_of_batching
from ..core.ops.linalg import eye
from ..core.ops.shape import broadcast_to, reshape, transpose, unsqueeze
from ..core.shapes import fmt_shape, numel
from ..errors import SymgradError
from .forward import forward
from .reverse import backward


class BatchingError(SymgradError):
    """An op with no batching rule (the Jacobian needs concrete sizes then)."""


def batch_rule(op):
    """The op's batching rule: its own (``OpDef.batch``), broadcasting for elementwise
    ops, or None."""
    opdef = OPS[op]
    if opdef.batch is not None:
        return opdef.batch
    return rules_of_batching.pointwise if opdef.pointwise else None


def batch(outputs, batched, size):
    """``outputs`` rebuilt with a leading axis of ``size`` wherever they depend on a node
    of ``batched`` ({id(node): value of shape (size,) + node.shape}). Returns, for each
    output, a value of shape (size,) + its shape (broadcast if it did not depend on any).
    An op without a rule, or whose rule declines (returns None), is applied to each batch
    element in turn, which needs a concrete ``size``."""
    vals = {}
    for node in topo_order(outputs):
        if id(node) in batched:
            vals[id(node)] = (batched[id(node)], True)
            continue
        ins = [vals[id(i)] for i in node.inputs]
        if not any(b for _, b in ins):
            vals[id(node)] = (node, False)
            continue
        rule = batch_rule(node.op)
        value = rule(node, ins, size) if rule is not None else None
        if value is None:
            if not isinstance(size, int):
                why = ("has no batching rule" if rule is None else
                       "has a batching rule that does not cover these shapes")
                raise BatchingError(
                    f"op '{node.op}' (shape {fmt_shape(node.shape)}) {why}, so a Jacobian "
                    f"through it needs a concrete number of rows or columns (here {size}); "
                    "give concrete sizes (shapes={...: (3, 2)}) or extend the op's batch "
                    "rule in its OpDef")
            value = rules_of_batching.one_by_one(node, ins, size)
        vals[id(node)] = (value, True)
    out = []
    for o in outputs:
        v, b = vals[id(o)]
        out.append(v if b else broadcast_to(unsqueeze(v, 0), (size,) + o.shape))
    return out


# ----- Jacobians -------------------------------------------------------------------------

_placeholders = itertools.count()


def placeholder(kind, shape):
    """A fresh symbol standing for a tangent, cotangent or primal while tracing."""
    return symbol(f"_{kind}{next(_placeholders)}", shape)


def basis(shape):
    """The one-hot arrays of ``shape`` stacked: the identity, of shape (N,) + shape."""
    n = numel(shape)
    e = eye(n)
    return e if len(shape) == 1 else reshape(e, (n,) + tuple(shape))


def _unflatten(node, shape):
    """A node of shape (..., N) with N = numel(shape) as (...) + shape."""
    if len(shape) == 1:
        return node
    return reshape(node, node.shape[:-1] + tuple(shape))


def jacrev(outputs, wrt):
    """Reverse mode: ``blocks[k][j]``, the Jacobian of ``outputs[k]`` w.r.t. ``wrt[j]``
    (shape outputs[k].shape + wrt[j].shape, None where known to be zero), from one VJP
    per output traced on a cotangent placeholder and batched over the identity."""
    blocks = []
    for out in outputs:
        if not out.shape:
            blocks.append(backward([out], [const(1)], wrt))
            continue
        ct = placeholder("ct", out.shape)
        grads = backward([out], [ct], wrt)
        live = [g for g in grads if g is not None]
        rows = iter(batch(live, {id(ct): basis(out.shape)}, numel(out.shape)))
        row = []
        for g, x in zip(grads, wrt):
            if g is None:
                row.append(None)
                continue
            r = next(rows)
            row.append(r if len(out.shape) == 1 else reshape(r, out.shape + x.shape))
        blocks.append(row)
    return blocks


def jacfwd(outputs, wrt):
    """Forward mode: the same blocks as ``jacrev`` from one JVP per input traced on a
    tangent placeholder with the rules' JVP formulas and batched over the identity (the
    columns), then moved behind the output's axes."""
    cols = []
    for x in wrt:
        if not x.shape:
            cols.append(forward(outputs, [x], [const(1)]))
            continue
        t = placeholder("tan", x.shape)
        tangents = forward(outputs, [x], [t])
        live = [v for v in tangents if v is not None]
        batched = iter(batch(live, {id(t): basis(x.shape)}, numel(x.shape)))
        col = []
        for out, v in zip(outputs, tangents):
            if v is None:
                col.append(None)
                continue
            b = next(batched)
            rank = len(out.shape)
            moved = transpose(b, tuple(range(1, rank + 1)) + (0,)) if rank else b
            col.append(_unflatten(moved, x.shape))
        cols.append(col)
    return [[cols[j][k] for j in range(len(wrt))] for k in range(len(outputs))]


def reverse_is_cheaper(outputs, wrt):
    """True when the outputs have no more elements than the inputs (reverse mode then
    needs fewer sweeps); undecidable symbolic comparisons choose reverse mode."""
    n_out = sympy.sympify(sum((numel(o.shape) for o in outputs), 0))
    n_in = sympy.sympify(sum((numel(x.shape) for x in wrt), 0))
    return (n_out - n_in).is_positive is not True


def jacobian_blocks(outputs, wrt, mode="auto"):
    """``blocks[k][j]`` by ``mode``: "reverse", "forward" or "auto" (by shape)."""
    if mode == "auto":
        mode = "reverse" if reverse_is_cheaper(outputs, wrt) else "forward"
    if mode == "reverse":
        return jacrev(outputs, wrt)
    if mode == "forward":
        return jacfwd(outputs, wrt)
    raise SymgradError(f"jacobian: mode must be 'auto', 'reverse' or 'forward', got {mode!r}")
