"""Reverse mode over a rolled loop: the gradient of a function whose trace repeats a body
K times (``core.loops.Loop``), derived from one copy of the body.

The function is cut at the loop into a *head* (what runs before it, ending in the loop's
initial carries and its invariants), the loop, and a *tail* (the rest, which reads the
loop's last carries). Then:

- the body is rebuilt once on symbols, one per carry it reads and one per invariant
  computed in the head; its VJP, seeded with a symbol per carry it hands on, gives the
  cotangents of the carries it read and contributions to the invariants' cotangents.
  The body's values that VJP reads are the *residuals* the forward loop saves per step.
- the tail is rebuilt on symbols for the loop's last carries and swept from the output:
  their cotangents, and the gradient along paths that avoid the loop.
- the head is swept from the loop's inits and invariants, seeded with symbols for what
  the backward loop leaves.

The gradient is the tail's plus the head's contribution (linearity of the chain rule
across the cut). Each piece is an ordinary graph of a few nodes whatever K is, built by
the same sweep (``diff.reverse``) as any gradient; ``codegen.rolled`` runs the body and
its VJP in two loops.
"""
from ..core.build import gc_paused, internal_symbol, make
from ..core.grad_mode import enable_grad
from ..core.graph import topo_order
from ..core.loops import Loop, RolledGradient
from .reverse import backward, requires_grad


def _rebuilt(loop, carry_in, stand_in):
    """The body on ``carry_in`` (per carry position) and ``stand_in`` ({id(outside node):
    symbol}); None when building it simplifies a node away (it then is not the body)."""
    slot = {o: s for o, s in zip(loop.carries, carry_in)}
    new, made = [], set()
    for node, row in zip(loop.body, loop.roles):
        ins = []
        for kind, ref in row:
            if kind == "step":
                ins.append(new[ref])
            elif kind == "carry":
                ins.append(slot[ref])
            else:
                ins.append(stand_in.get(id(ref), ref))
        out = make(node.op, tuple(ins), node.params)
        if out.op != node.op or id(out) in made:
            return None
        made.add(id(out))
        new.append(out)
    return new


def _tail(loop, finals):
    """The nodes after the loop rebuilt on ``finals`` (symbols for ``loop.finals``):
    {id(old node): new node} for those that read the loop."""
    mapping = {id(f): s for f, s in zip(loop.finals, finals)}
    for node in loop.order[loop.end:]:
        if any(id(i) in mapping for i in node.inputs):
            ins = tuple(mapping.get(id(i), i) for i in node.inputs)
            mapping[id(node)] = make(node.op, ins, node.params)
    return mapping


def _residuals(body, carry_in, vjp_outputs):
    """The values of the forward body (its nodes and the carries it read) that the VJP
    graph reads, in body order."""
    forward = {id(n): k for k, n in enumerate(list(carry_in) + list(body))}
    found, seen = set(), set()
    stack = [o for o in vjp_outputs if o is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if id(node) in forward:
            found.add(forward[id(node)])
            continue
        stack.extend(node.inputs)
    every = list(carry_in) + list(body)
    return [every[k] for k in sorted(found)]


def _plus(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@enable_grad()
@gc_paused
def rolled_gradient(loop: Loop, output, inputs, wrt):
    """The gradient of scalar ``output`` w.r.t. ``wrt`` through ``loop`` as a
    ``RolledGradient``, or None when the loop's body cannot be rebuilt as it was traced."""
    carry_nodes = [loop.body[o] for o in loop.carries]
    carry_in = [internal_symbol(f"_loop_in{j}", n.shape, n.kind)
                for j, n in enumerate(carry_nodes)]
    invariants = [n for n in loop.outside if n.inputs]
    invariant_symbols = [internal_symbol(f"_loop_inv{j}", n.shape, n.kind)
                         for j, n in enumerate(invariants)]
    stand_in = {id(n): s for n, s in zip(invariants, invariant_symbols)}
    body = _rebuilt(loop, carry_in, stand_in)
    if body is None:
        return None
    carry_out = [body[o] for o in loop.carries]

    head_order = topo_order(list(loop.inits) + list(loop.outside))
    live = requires_grad(head_order, wrt)
    cot_targets = [n for n in loop.outside if n.kind == "float" and id(n) in live
                   and (n.inputs or n.op == "symbol")]
    cot_sources = [stand_in.get(id(n), n) for n in cot_targets]

    cot_out = [internal_symbol(f"_loop_cot{j}", n.shape) if n.kind == "float" else None
               for j, n in enumerate(carry_nodes)]
    float_carries = [j for j, c in enumerate(cot_out) if c is not None]
    step_sources = [carry_in[j] for j in float_carries] + cot_sources
    if float_carries:
        step_grads = backward([carry_out[j] for j in float_carries],
                              [cot_out[j] for j in float_carries], step_sources)
    else:
        step_grads = [None] * len(step_sources)
    cot_in = [None] * len(carry_in)
    for j, g in zip(float_carries, step_grads):
        cot_in[j] = g
    contributions = list(step_grads[len(float_carries):])
    residuals = _residuals(body, carry_in, cot_in + contributions)

    finals = [internal_symbol(f"_loop_final{j}", n.shape, n.kind)
              for j, n in enumerate(carry_nodes)]
    mapping = _tail(loop, finals)
    value = mapping.get(id(output), output)
    float_finals = [finals[j] for j in float_carries]
    tail = backward([value], [1.0], list(wrt) + float_finals)
    tail_grads = tail[:len(wrt)]
    cot_finals = [None] * len(finals)
    for j, g in zip(float_carries, tail[len(wrt):]):
        cot_finals[j] = g

    cot_inits = [internal_symbol(f"_loop_cotinit{j}", n.shape) if n.kind == "float" else None
                 for j, n in enumerate(carry_nodes)]
    cot_outside = [internal_symbol(f"_loop_cotinv{j}", n.shape)
                   for j, n in enumerate(cot_targets)]
    seeds = [(n, s) for n, s in zip(loop.inits, cot_inits) if s is not None]
    seeds += list(zip(cot_targets, cot_outside))
    head_grads = backward([n for n, _ in seeds], [s for _, s in seeds], wrt) if seeds \
        else [None] * len(wrt)
    grads = [_plus(t, h) for t, h in zip(tail_grads, head_grads)]
    return RolledGradient(
        inputs=inputs, wrt=wrt, steps=loop.steps, inits=list(loop.inits),
        invariants=invariants, carry_in=carry_in, invariant_symbols=invariant_symbols,
        carry_out=carry_out, residuals=residuals, finals=finals, value=value,
        cot_finals=cot_finals, tail_grads=tail_grads, cot_out=cot_out, cot_in=cot_in,
        cot_sources=cot_sources, cot_targets=cot_targets, cot_contributions=contributions,
        cot_inits=cot_inits, cot_outside=cot_outside, grads=grads)
