"""The backward graph behind ``grad_fn`` (seeds 000 and 004) with symgrad.

Seed 000 prints the graph of ``l = (b @ a @ x + c).sum()`` by walking
``grad_fn.next_functions``; seed 004 shows ``grad_fn`` of ``y = x + 2``, ``z = y * y * 3``,
``out = z.mean()`` and stops gradients with ``no_grad`` and ``detach``. symgrad has the
same views on its traced graph (``name()``, ``next_functions``, saved values), prints the
tree with ``sg.print_graph``, writes Graphviz DOT with ``sg.to_dot`` (and PNG/SVG when
Graphviz is installed), and shows the gradient each backward node computes as a formula.
Each graph is compared with the one torch builds for the same code.

    python examples/graph.py
"""
import os
import sys
import tempfile

import torch

import symgrad as sg
from symgrad.views.graph import graph_text, graphviz_available

failures = []


def expect(label, ok):
    print(f"  {label}: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def torch_print_graph(node, indent=0, lines=None):
    """Seed 000's recursive print_graph, collecting the lines."""
    lines = [] if lines is None else lines
    lines.append(" " * indent + f"<{type(node).__name__} object>")
    for next_node, _ in node.next_functions:
        if next_node is not None:
            torch_print_graph(next_node, indent + 4, lines)
    return lines


def module(a, b, c, x):
    # (m, r) @ (r, n) @ (n) + (m), as CustomModule.forward in seed 000
    return b @ a @ x + c


# ---------------------------------------------------------------------------------------
section("1. Seed 000: l = (b @ a @ x + c).sum()")
a, b, c = sg.symbol("a", ("r", "n")), sg.symbol("b", ("m", "r")), sg.symbol("c", ("m",))
x = sg.stop_gradient(sg.symbol("x", ("n",)))      # like torch.randn(2): no gradient needed
l = sg.sum(module(a, b, c, x))
print("sg.print_graph(l):")
sg.print_graph(l)
ta, tb, tc = (torch.randn(*s, requires_grad=True) for s in [(1, 2), (3, 1), (3,)])
ref = torch_print_graph(module(ta, tb, tc, torch.randn(2)).sum().grad_fn)
print("\nseed 000's print_graph(l.grad_fn) on the torch module:")
print("\n".join(ref))
ours = [line.split(">  ")[0] + ">" if "AccumulateGrad" in line else line
        for line in graph_text(l).splitlines()]    # without the leaf labels
renamed = [line.replace("MvBackward0", "MatmulBackward0").replace("MmBackward0",
                                                                    "MatmulBackward0")
           for line in ref]
expect("the same tree as torch's (torch's Mv/Mm are symgrad's Matmul)", ours == renamed)

print("\nwhat each backward node computes, as formulas (grad_fn(v) for a symbolic v):")
v = sg.symbol("v")
node = l.grad_fn
print(f"  {node.name()}(v) = {node(v)}")
add = node.next_functions[0][0]
g = sg.symbol("g", ("m",))
print(f"  {add.name()}(g) = {add(g)}")

print("\nsg.to_dot(l):")
dot = sg.to_dot(l)
print(dot)
expect("DOT names every backward node and leaf",
       all(s in dot for s in ("SumBackward0", "AddBackward0", "MatmulBackward0", "a (r, n)",
                              "b (m, r)", "c (m,)")) and dot.count("->") == 6)
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "graph.dot")
    sg.to_dot(l, path)
    expect("to_dot(l, 'graph.dot') writes the same text", open(path).read() == dot)
    if graphviz_available():
        sg.to_dot(l, os.path.join(tmp, "graph.svg"))
        expect("rendered with Graphviz", os.path.getsize(os.path.join(tmp, "graph.svg")) > 0)
    else:
        print("  (Graphviz not installed: pip install graphviz and apt install graphviz to "
              "render .png/.svg)")

# ---------------------------------------------------------------------------------------
section("2. Seed 004: grad_fn of y = x + 2, z = y * y * 3, out = z.mean()")
x = sg.symbol("x", (2, 2))
y = x + 2
z = y * y * 3
out = sg.mean(z)
tx = torch.ones(2, 2, requires_grad=True)
ty = tx + 2
tz = ty * ty * 3
tout = tz.mean()
for name, ours_t, theirs in [("y", y, ty), ("z", z, tz), ("out", out, tout)]:
    print(f"  {name}.grad_fn = {ours_t.grad_fn}   torch: <{type(theirs.grad_fn).__name__}>")
    expect(f"{name}.grad_fn.name() as in torch", ours_t.grad_fn.name() ==
           type(theirs.grad_fn).__name__)
print("sg.print_graph(out):")
sg.print_graph(out)

print("\nno_grad and detach: values that carry no gradient have no grad_fn")
with sg.no_grad():
    x2 = x ** 2
with torch.no_grad():
    tx2 = tx ** 2
print("  with sg.no_grad(): (x ** 2).grad_fn =", x2.grad_fn,
      "  torch requires_grad:", tx2.requires_grad)
expect("no_grad as in torch", x2.grad_fn is None and not tx2.requires_grad)
xd = x.detach()
print("  x.detach().grad_fn =", xd.grad_fn, "  torch requires_grad:", tx.detach().requires_grad)
(gx,) = sg.grad(sg.sum(x * xd), [x])
print("  d/dx sum(x * x.detach()) =", gx, "(the detached factor is a constant)")
(tg,) = torch.autograd.grad((tx * tx.detach()).sum(), [tx])
expect("detach as in torch", xd.grad_fn is None and bool(torch.equal(tg, tx.detach())))

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: graphs, names, no_grad and detach as PyTorch shows them")
