"""Helpers for the batching rules of ops (``OpDef.batch``, read by ``diff.batching``).

A batching rule rebuilds one node with a new leading axis of size ``size`` on the operands
that have one: ``batch(node, inputs, size)``, where ``inputs`` pairs each operand's new
value with whether it is batched, returns a node of shape (size,) + node.shape.
"""
from ..build import make
from ..opdef import FUNCTIONS


def lift(v, rank, size):
    """A batched value of shape (B,) + s as (B,) + (1, ...) + s of rank 1 + ``rank``."""
    base = v.shape[1:]
    if len(base) >= rank:
        return v
    return FUNCTIONS["reshape"](v, (size,) + (1,) * (rank - len(base)) + base)


def unbatched(v, b, size):
    """An operand of a batched op given the batch axis even if it had none."""
    if b:
        return v
    return FUNCTIONS["broadcast_to"](FUNCTIONS["unsqueeze"](v, 0), (size,) + v.shape)


def pointwise(node, ins, size):
    """An elementwise op: the batch axis broadcasts (operands lifted to the same rank)."""
    rank = len(node.shape)
    args = tuple(lift(v, rank, size) if b else v for v, b in ins)
    return make(node.op, args, node.params)


def over_leading_axes(node, ins, size):
    """An op on its operands' trailing axes that maps over leading ones, broadcasting them
    (tril, cholesky, a triangular solve): the batch axis is one more leading axis."""
    return pointwise(node, ins, size)


def shift_axes(node):
    """The node's parameters with ``axis`` moved past the new batch axis; reductions over
    every axis become reductions over those axes only (``full`` False)."""
    out = []
    for k, v in node.params:
        if k == "axis":
            v = tuple(a + 1 for a in v) if isinstance(v, tuple) else v + 1
        elif k == "full":
            v = False
        out.append((k, v))
    return tuple(out)


def along_axes(node, ins, size):
    """An op along axes named by its ``axis`` parameter (reductions, softmax, concat):
    the same op with the axes shifted, on operands that all get the batch axis."""
    args = tuple(unbatched(v, b, size) for v, b in ins)
    return make(node.op, args, shift_axes(node))


def one_by_one(node, ins, size):
    """The op applied to each batch element in turn, results stacked (concrete sizes):
    the fallback for an op without a rule."""
    rows = [make(node.op, tuple(v[k] if b else v for v, b in ins), node.params)
            for k in range(size)]
    return FUNCTIONS["stack"](rows, axis=0)
