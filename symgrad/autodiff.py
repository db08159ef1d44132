"""Reverse and forward mode over the traced DAG, driven by the rule table.

Reverse mode (``backward``) is one sweep in reverse topological order. A gradient that
is known to be zero is ``None`` and costs nothing: nodes whose incoming gradient is None
are skipped in constant time, as in seed 003 and PyTorch's undefined tensors. Each rule
application builds graph nodes, so the gradients are Tensors that can be differentiated
again.

Forward mode (``forward``) pushes tangents through the graph in topological order with
the rules' JVP formulas.
"""
from .errors import NotDifferentiableError, UnsupportedOpError
from .graph import Tensor, gc_paused, topo_order, zeros
from .rule_helpers import sum_to
from .rules import rules
from .shapes import fmt_shape, shapes_equal


def rule_for(node):
    # A node may carry its own rule: an sg.Function application (symgrad/function.py).
    rule = node.attrs["rule"] if "rule" in node.attrs else rules.get(node.op)
    if rule is None:
        raise UnsupportedOpError(
            f"no derivative rule for op '{node.op}' (output shape {fmt_shape(node.shape)}); "
            "add an entry for it to a file in rules/ (see the header of rules/pointwise.yaml)")
    return rule


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
        from .ops import as_tensor
        contribution = as_tensor(contribution)
    if contribution.op == "const" and contribution.attrs["value"] == 0:
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
    """Gradients of ``sum(seed * output)`` w.r.t. each of ``sources`` (None if zero)."""
    order = topo_order(outputs)
    live = requires_grad(order, sources)
    grads = {}
    for out, seed in zip(outputs, seeds):
        if id(out) in live and seed is not None:
            _accumulate(grads, out, seed)
    source_ids = {id(s) for s in sources}
    for node in reversed(order):
        grad = grads.get(id(node))
        if grad is None or not node.inputs or id(node) in source_ids and not node.inputs:
            continue
        rule = None
        for i, inp in enumerate(node.inputs):
            if id(inp) not in live:
                continue
            rule = rule or rule_for(node)
            _accumulate(grads, inp, rule.apply_vjp(node, i, grad))
    return [grads.get(id(s)) for s in sources]


@gc_paused
def forward(outputs, sources, tangents):
    """Tangents of ``outputs`` given tangents of ``sources`` (None where zero)."""
    order = topo_order(outputs)
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
            from .ops import as_tensor
            t = as_tensor(t)
        if t.op == "const" and t.attrs["value"] == 0:
            continue
        if not shapes_equal(t.shape, node.shape):
            from .ops import broadcast_to
            t = broadcast_to(t, node.shape)
        tan[id(node)] = t
    return [tan.get(id(o)) for o in outputs]
