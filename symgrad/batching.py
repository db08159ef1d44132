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
from . import ops
import itertools

import sympy

from .autodiff import backward, forward
from .errors import SymgradError
from .graph import const, make, symbol, topo_order
from .indexing import Slice
from .linalg import eye
from .ops import BINARY, COMPARISONS, LOGICAL, UNARY
from .shapes import fmt_shape, numel


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
            if not isinstance(size, int):
                raise BatchingError(
                    f"op '{node.op}' (shape {fmt_shape(node.shape)}) has no batching rule, "
                    f"so a Jacobian through it needs a concrete number of rows or columns "
                    f"(here {size}); give concrete sizes (shapes={{...: (3, 2)}}) or add a "
                    "rule to symgrad/batching.py")
            rule = _one_by_one
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


def _unbatched(v, b, size):
    """An operand of a batched op given the batch axis even if it had none."""
    return v if b else ops.broadcast_to(ops.unsqueeze(v, 0), (size,) + v.shape)


def _shift_axes(node, extra=()):
    """The node's parameters with ``axis`` moved past the new batch axis; reductions
    over every axis become reductions over those axes only (``full`` False)."""
    out = []
    for k, v in node.params:
        if k == "axis":
            v = tuple(a + 1 for a in v) if isinstance(v, tuple) else v + 1
        elif k == "full":
            v = False
        out.append((k, v))
    return tuple(out) + tuple(extra)


def _axis_op(node, ins, size):
    args = tuple(_unbatched(v, b, size) for v, b in ins)
    return make(node.op, args, _shift_axes(node))


def _index(node, ins, size):
    index = (Slice(0, None, 1),) + node.attrs["index"]
    return make("index", (ins[0][0],), (("index", index),))


def _index_scatter(node, ins, size):
    index = (Slice(0, None, 1),) + node.attrs["index"]
    return make("index_scatter", (ins[0][0],),
                (("shape", (size,) + node.attrs["shape"]), ("index", index)))


def _dot(node, ins, size):
    (x, bx), (y, by) = ins
    if bx and by:
        return ops.sum(x * y, axis=1)
    return ops.matmul(x, y) if bx else ops.matmul(y, x)


def _outer(node, ins, size):
    (x, bx), (y, by) = ins
    col = ops.unsqueeze(x, 2 if bx else 1)
    row = ops.unsqueeze(y, 1) if by else y
    return col * row


def _trace(node, ins, size):
    return ops.sum(ins[0][0] * eye(node.inputs[0].shape[0]), axis=(1, 2))


def _diagonal(node, ins, size):
    return ops.sum(ins[0][0] * eye(node.shape[0]), axis=2)


def _diag(node, ins, size):
    return ops.unsqueeze(ins[0][0], 2) * eye(node.shape[0])


def _solve(node, ins, size):
    """solve(A, B) with only B batched: the batch goes into B's columns."""
    (a, ba), (b, bb) = ins
    if ba:
        return _one_by_one(node, ins, size)
    if len(node.shape) == 1:
        return ops.transpose(make("solve", (a, ops.transpose(b))))
    n, k = node.shape
    cols = ops.reshape(ops.transpose(b, (1, 0, 2)), (n, size * k))
    out = ops.reshape(make("solve", (a, cols)), (n, size, k))
    return ops.transpose(out, (1, 0, 2))


def _one_by_one(node, ins, size):
    """The op applied to each basis vector in turn, results stacked (concrete sizes)."""
    from .indexing import stack
    rows = [make(node.op, tuple(v[k] if b else v for v, b in ins), node.params)
            for k in range(size)]
    return stack(rows, axis=0)


RULES = {name: _pointwise for name in list(UNARY) + list(BINARY) + list(COMPARISONS)
         + list(LOGICAL) + ["where", "clamp", "cast", "detach", "logical_not"]}
RULES.update({"sum": _sum, "mean": _mean, "transpose": _transpose, "reshape": _reshape,
              "squeeze": _reshape, "unsqueeze": _reshape, "broadcast_to": _broadcast,
              "matmul": _matmul})
RULES.update({name: _axis_op for name in (
    "amax", "amin", "max", "min", "prod", "var", "std", "cumsum", "norm", "softmax",
    "log_softmax", "logsumexp", "concat")})
RULES.update({"index": _index, "index_scatter": _index_scatter, "dot": _dot, "outer": _outer,
              "trace": _trace, "diagonal": _diagonal, "diag": _diag, "solve": _solve})


# ----- Jacobians -------------------------------------------------------------------------

_placeholders = itertools.count()


def placeholder(kind, shape):
    """A fresh symbol standing for a tangent, cotangent or primal while tracing."""
    return symbol(f"_{kind}{next(_placeholders)}", shape)


def basis(shape):
    """The one-hot arrays of ``shape`` stacked: the identity, of shape (N,) + shape."""
    n = numel(shape)
    e = eye(n)
    return e if len(shape) == 1 else ops.reshape(e, (n,) + tuple(shape))


def _unflatten(node, shape):
    """A node of shape (..., N) with N = numel(shape) as (...) + shape."""
    if len(shape) == 1:
        return node
    return ops.reshape(node, node.shape[:-1] + tuple(shape))


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
            row.append(r if len(out.shape) == 1 else ops.reshape(r, out.shape + x.shape))
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
            moved = ops.transpose(b, tuple(range(1, rank + 1)) + (0,)) if rank else b
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
