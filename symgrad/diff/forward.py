"""Forward mode: ``forward`` pushes tangents through the traced DAG in topological order
with the rules' JVP formulas (never a transposed VJP)."""
from ..core.build import as_tensor, gc_paused
from ..core.constructors import zeros
from ..core.graph import Tensor, topo_order
from ..core.ops.shape import broadcast_to
from ..core.shapes import shapes_equal
from .reverse import rule_for
from .symmetric import symmetrized


@gc_paused
def forward(outputs, sources, tangents):
    """Tangents of ``outputs`` given tangents of ``sources`` (None where zero). A tangent V
    of a symmetric input acts as (V + Vᵀ)/2: the input moves along symmetric directions
    only (``diff.symmetric``), so a Jacobian or Hessian by forward mode agrees with one
    by reverse mode."""
    order = topo_order(outputs)
    tangents = symmetrized(sources, list(tangents))
    tan = {id(s): t for s, t in zip(sources, tangents) if t is not None}
    for node in order:
        if id(node) in tan or not node.inputs:
            continue
        if not any(id(i) in tan for i in node.inputs):
            continue
        rule = rule_for(node)
        if not rule.differentiable:
            continue
        ins = [tan.get(id(i)) if id(i) in tan else zeros(i.shape) for i in node.inputs]
        t = rule.apply_jvp(node, ins)
        if t is None:
            continue
        if not isinstance(t, Tensor):
            t = as_tensor(t)
        if t.is_const and t.attrs["value"] == 0:
            continue
        if not shapes_equal(t.shape, node.shape):
            t = broadcast_to(t, node.shape)
        tan[id(node)] = t
    return [tan.get(id(o)) for o in outputs]
