"""Products reassociated for the code only: ``(M * a) * b`` with a large array M and
smaller factors a, b (vectors broadcast along M, scalars) is computed as ``M * (a * b)``,
one pass over M instead of two. Second derivatives are full of these (the logistic
Hessian's ``(1/N) * ((Xᵀ * s) * (1 - s))`` made three passes over a 50 × 1000 array where a
hand-written Hessian makes one). The formulas and views keep the graph as the rules wrote it;
only the program that code is generated from changes."""
from ..core import grad_mode
from ..core.build import make
from ..core.graph import topo_order
from ..core.shapes import broadcast_shapes, shapes_equal


def _smaller(node, shape):
    return not shapes_equal(node.shape, shape)


def _regroup(node, inputs, uses):
    """``mul(big, mul(small, small))`` for ``mul(mul(big, small), small)`` (either side),
    or None. ``uses`` counts the uses of the original inputs: a product used elsewhere
    too is computed anyway, regrouping it would add work."""
    shape = node.shape
    for k in (0, 1):
        inner, other = inputs[k], inputs[1 - k]
        if inner.op != "mul" or uses.get(id(node.inputs[k]), 0) != 1 \
                or not _smaller(other, shape):
            continue
        a, b = inner.inputs
        for big, small in ((a, b), (b, a)):
            if big.kind != "float" or _smaller(big, shape) or not _smaller(small, shape):
                continue
            if shapes_equal(broadcast_shapes(small.shape, other.shape), shape):
                continue
            return make("mul", (big, make("mul", (small, other))))
    return None


def reassociate(outputs, inputs=()):
    """{id(node): replacement} for the nodes of ``outputs`` (None entries allowed) whose
    products regroup; empty when none does (the common case costs one scan, and programs
    of scalars, such as long scalar chains, not even that)."""
    if not any(x.shape for x in inputs) and not any(o.shape for o in outputs if o is not None):
        return {}
    order = topo_order([o for o in outputs if o is not None])
    if not any(n.op == "mul" and n.shape and any(i.op == "mul" for i in n.inputs)
               for n in order):
        return {}
    uses = {}
    for n in order:
        for i in n.inputs:
            uses[id(i)] = uses.get(id(i), 0) + 1
    for o in outputs:
        if o is not None:
            uses[id(o)] = uses.get(id(o), 0) + 2
    new = {}
    with grad_mode.enable_grad():
        for n in order:
            inputs = tuple(new.get(id(i), i) for i in n.inputs)
            changed = any(a is not b for a, b in zip(inputs, n.inputs))
            if n.op == "mul" and n.shape:
                regrouped = _regroup(n, inputs, uses)
                if regrouped is not None:
                    new[id(n)] = regrouped
                    continue
            if changed:
                new[id(n)] = make(n.op, inputs, n.params)
    return new
