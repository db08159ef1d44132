"""Products rewritten for the code only; the formulas and views keep the graph as the
rules wrote it, only the program that code is generated from changes.

* ``(M * a) * b`` with a large array M and smaller factors a, b (vectors broadcast along M,
  scalars) is computed as ``M * (a * b)``, one pass over M instead of two. Second
  derivatives are full of these (the logistic Hessian's ``(1/N) * ((Xᵀ * s) * (1 - s))``
  made three passes over a 50 × 1000 array where a hand-written Hessian makes one).
* A Gram matrix ``(Xᵀ * w) @ X`` whose weights w are nonnegative (``core.structure.bounds``:
  the logistic Hessian's σ(z)(1 − σ(z))/N) is ``Yᵀ @ Y`` with ``Y = X * sqrt(w)``: a
  symmetric product, which BLAS computes with half the multiplications (NumPy calls
  ``syrk`` when both operands are one array)."""
from ..core import grad_mode
from ..core.build import make
from ..core.graph import topo_order
from ..core.shapes import broadcast_shapes, shapes_equal
from ..core.structure import bounds


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


def _gram(node, inputs, uses):
    """``Yᵀ @ Y`` with ``Y = X * sqrt(w)[:, None]`` for ``(Xᵀ * w) @ X`` (w of shape (N,),
    X of shape (N, d), w known nonnegative and the weighted product used only here), or
    None."""
    weighted, x = inputs
    if weighted.op != "mul" or len(x.shape) != 2 or x.kind != "float" \
            or uses.get(id(node.inputs[0]), 0) != 1:
        return None
    for xt, w in (weighted.inputs, weighted.inputs[::-1]):
        if xt.op == "transpose" and xt.inputs[0] is x and len(w.shape) == 1 \
                and shapes_equal(w.shape, x.shape[:1]) and bounds(w)[0] >= 0:
            y = make("mul", (x, make("unsqueeze", (make("sqrt", (w,)),), (("axis", 1),))))
            return make("matmul", (make("transpose", (y,), (("axes", (1, 0)),)), y))
    return None


def reassociate(outputs, inputs=()):
    """{id(node): replacement} for the nodes of ``outputs`` (None entries allowed) whose
    products regroup; empty when none does (the common case costs one scan, and programs
    of scalars, such as long scalar chains, not even that)."""
    if not any(x.shape for x in inputs) and not any(o.shape for o in outputs if o is not None):
        return {}
    order = topo_order([o for o in outputs if o is not None])
    if not any(n.op == "mul" and n.shape and any(i.op == "mul" for i in n.inputs)
               or n.op == "matmul" and len(n.shape) == 2 for n in order):
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
            if n.op == "matmul" and len(n.shape) == 2:
                gram = _gram(n, inputs, uses)
                if gram is not None:
                    new[id(n)] = gram
                    continue
            if changed:
                new[id(n)] = make(n.op, inputs, n.params)
    return new


def for_code(outputs, with_value, inputs):
    """(outputs, with_value) as the code computes them (``reassociate``'s rewrites)."""
    rewritten = reassociate(list(outputs) + [with_value], inputs)
    if not rewritten:
        return list(outputs), with_value
    return ([rewritten.get(id(o), o) if o is not None else None for o in outputs],
            rewritten.get(id(with_value), with_value))
