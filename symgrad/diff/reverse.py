"""Reverse mode: ``backward``, one sweep over the traced DAG in reverse topological order,
applying each node's rule.

A gradient that is known to be zero is ``None`` and costs nothing: nodes whose incoming
gradient is None are skipped in constant time (PyTorch's undefined tensors). Each rule
application builds graph nodes, so the gradients are Tensors that can be differentiated
again.
"""
from ..core.build import as_tensor, gc_paused
from ..core.graph import Tensor, topo_order
from ..core.opdef import OPS
from ..core.shapes import fmt_shape, shapes_equal
from ..errors import NotDifferentiableError, UnsupportedOpError
from .helpers import sum_to
from .rules import NON_DIFFERENTIABLE, rules
from .symmetric import symmetrized


class NoGradient:
    """The rule of an op declared not differentiable (``differentiable=False``) that has
    no entry in rules/: nothing flows through any input."""

    differentiable = False
    jvp = None

    def __init__(self, op):
        self.name = op
        self.inputs = tuple(OPS[op].inputs or ())
        self.params = {}
        self.vjp = {name: NON_DIFFERENTIABLE for name in self.inputs}

    def input_differentiable(self, i):
        return False

    def apply_vjp(self, node, i, grad):
        return None

    def apply_jvp(self, node, tangents):
        return None


def rule_for(node):
    """The rule of ``node``: its own (an sg.Function application carries one in
    ``attrs["rule"]``) or the table's."""
    rule = node.attrs["rule"] if OPS[node.op].node_rule else rules.get(node.op)
    if rule is not None:
        return rule
    if not OPS[node.op].differentiable:
        return NoGradient(node.op)
    raise UnsupportedOpError(
        f"no derivative rule for op '{node.op}' (output shape {fmt_shape(node.shape)}); "
        "add an entry for it to its family's file in rules/ (see the header of "
        "rules/pointwise.yaml), or mark the op differentiable=False")


def requires_grad(order, sources):
    """Ids of nodes whose value depends differentiably on any of ``sources``."""
    live = {id(s) for s in sources}
    for node in order:
        if id(node) in live or not node.inputs:
            continue
        rule = None
        for i, inp in enumerate(node.inputs):
            if id(inp) in live:
                rule = rule or rule_for(node)
                if rule.input_differentiable(i):
                    live.add(id(node))
                    break
    return live


def _accumulate(grads, node, contribution):
    if contribution is None:
        return
    if not isinstance(contribution, Tensor):
        contribution = as_tensor(contribution)
    if contribution.is_const and contribution.attrs["value"] == 0:
        return
    contribution = sum_to(contribution, node.shape)
    if not shapes_equal(contribution.shape, node.shape):
        raise NotDifferentiableError(
            f"internal: gradient of shape {fmt_shape(contribution.shape)} for a node of "
            f"shape {fmt_shape(node.shape)} ({node.op})")
    prev = grads.get(id(node))
    grads[id(node)] = contribution if prev is None else prev + contribution


@gc_paused
def backward(outputs, seeds, sources):
    """Gradients of ``sum(seed * output)`` w.r.t. each of ``sources`` (None if zero); the
    gradient of a symmetric input is the symmetric one, (G + Gᵀ)/2 (``diff.symmetric``)."""
    order = topo_order(outputs)
    live = requires_grad(order, sources)
    grads = {}
    for out, seed in zip(outputs, seeds):
        if id(out) in live and seed is not None:
            _accumulate(grads, out, seed)
    for node in reversed(order):
        grad = grads.get(id(node))
        if grad is None or not node.inputs:
            continue
        rule = None
        for i, inp in enumerate(node.inputs):
            if id(inp) not in live:
                continue
            rule = rule or rule_for(node)
            _accumulate(grads, inp, rule.apply_vjp(node, i, grad))
    return symmetrized(sources, [grads.get(id(s)) for s in sources])
