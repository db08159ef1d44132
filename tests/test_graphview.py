"""The backward graph behind ``y.grad_fn``: names, next_functions,
saved values, ``print_graph`` and ``to_dot``, compared with what PyTorch shows."""
import re

import pytest
import sympy
import torch

import symgrad as sg
from symgrad.views.graph import graph_text, graphviz_available


def torch_tree(fn, indent=0, out=None):
    """Seed 000's recursive print_graph, as (indent, name) pairs."""
    out = [] if out is None else out
    out.append((indent, type(fn).__name__))
    for nxt, _ in fn.next_functions:
        if nxt is not None:
            torch_tree(nxt, indent + 4, out)
    return out


def our_tree(text):
    pairs = []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        pairs.append((indent, re.match(r"\s*<(\w+) object>", line).group(1)))
    return pairs


# ----- names, saved values, next_functions ------------------------------------------

def test_mul_saves_the_other_factor():
    c = sg.symbol("c")
    d = sg.stop_gradient(sg.symbol("d"))     # like d_tensor: a value that needs no gradient
    e = c * d
    assert c.grad_fn is None and d.grad_fn is None
    fn = e.grad_fn
    assert fn.name() == "MulBackward0"
    assert fn._saved_other is d and fn._saved_self is None       # as PyTorch: only d saved
    assert fn.saved == {"_saved_y": d}
    # "why we store d": de/dc = d (sympy.diff of the closed forms)
    C = c.expr
    assert sympy.diff(C * sympy.Symbol("d_"), C) == sympy.Symbol("d_")
    (dc,) = sg.grad(e, [c])
    assert dc is d
    (acc, nr), (none, nr2) = fn.next_functions
    assert acc.name() == "AccumulateGrad" and acc.variable is c and nr == 0
    assert none is None and nr2 == 0


def test_next_functions_are_the_inputs_grad_fns():
    c = sg.symbol("c")
    e = c * sg.stop_gradient(sg.symbol("d"))
    g = e * sg.stop_gradient(sg.symbol("f"))
    assert g.grad_fn.name() == "MulBackward0"
    assert g.grad_fn.next_functions[0][0] is e.grad_fn
    assert g.grad_fn.next_functions[1] == (None, 0)


def test_backward_node_called_gives_the_rule_gradients():
    x, y = sg.symbol("x"), sg.symbol("y")
    out = sg.sin(x) * y
    v = sg.symbol("v")
    gx, gy = out.grad_fn(v)
    assert gx.expr == v.expr * y.expr and gy.expr == v.expr * sympy.sin(x.expr)


@pytest.mark.parametrize("build, name", [
    (lambda x: x + 2, "AddBackward0"),
    (lambda x: x * x * 3, "MulBackward0"),
    (lambda x: sg.mean(x), "MeanBackward0"),
    (lambda x: sg.sum(x), "SumBackward0"),
    (lambda x: sg.tanh(x), "TanhBackward0"),
    (lambda x: x / 2, "DivBackward0"),
    (lambda x: x.T, "TransposeBackward0"),
    (lambda x: x @ x, "MatmulBackward0"),
])
def test_names_follow_pytorch(build, name):
    x = sg.symbol("x", (2, 2))
    assert build(x).grad_fn.name() == name


def test_values_without_gradient_have_no_grad_fn():
    x = sg.symbol("x", (3,))
    assert x.grad_fn is None                       # a leaf
    assert sg.const(2.0).grad_fn is None           # a constant
    assert (x > 0).grad_fn is None                 # a comparison
    assert sg.detach(x * 2).grad_fn is None        # detached
    assert (sg.detach(x) * 2).grad_fn is None
    with sg.no_grad():
        assert (x * 2).grad_fn is None             # made under no_grad


def test_grad_fn_chain_of_a_small_program():
    x = sg.symbol("x", (2, 2))
    y = x + 2
    z = y * y * 3
    out = sg.mean(z)
    assert out.grad_fn.name() == "MeanBackward0"
    assert out.grad_fn.next_functions[0][0] is z.grad_fn
    assert y.grad_fn.name() == "AddBackward0"
    # the simplifier writes x + 2 as 2 + x (constants first), so x is the second input
    accumulate = [fn for fn, _ in y.grad_fn.next_functions if fn is not None]
    assert len(accumulate) == 1 and accumulate[0].variable is x


# ----- print_graph and to_dot ------------------------------------------------------

def module(a, b, c, x):
    return b @ a @ x + c


def test_print_graph_has_the_shape_of_pytorchs_graph():
    """Seed 000's module b @ a @ x + c (x needs no gradient): the same tree as PyTorch's,
    with PyTorch's Mv/Mm named Matmul."""
    a, b, c = sg.symbol("a", ("r", "n")), sg.symbol("b", ("m", "r")), sg.symbol("c", ("m",))
    x = sg.stop_gradient(sg.symbol("x", ("n",)))
    loss = sg.sum(module(a, b, c, x))
    ta = torch.randn(1, 2, requires_grad=True)
    tb = torch.randn(3, 1, requires_grad=True)
    tc = torch.randn(3, requires_grad=True)
    ref = torch_tree(module(ta, tb, tc, torch.randn(2)).sum().grad_fn)
    rename = {"MvBackward0": "MatmulBackward0", "MmBackward0": "MatmulBackward0"}
    ref = [(i, rename.get(n, n)) for i, n in ref]
    assert our_tree(graph_text(loss)) == ref


def test_print_graph_prints_and_labels_leaves(capsys):
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    sg.print_graph(sg.sum((a + b) * b))
    text = capsys.readouterr().out
    assert text.splitlines()[0] == "<SumBackward0 object>"
    assert "<AccumulateGrad object>  a (4,)" in text
    assert "<AccumulateGrad object>  b (4,)" in text


def test_print_graph_expands_a_shared_function_once():
    x = sg.symbol("x")
    t = sg.sin(x)
    text = graph_text(t * t + t)
    assert text.count("<SinBackward0 object>") == 3
    assert text.count("(shown above)") == 2


def test_print_graph_of_a_leaf_is_an_error():
    with pytest.raises(sg.SymgradError, match="has no grad_fn"):
        sg.print_graph(sg.symbol("x"))


def test_to_dot_nodes_and_edges():
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    loss = sg.sum((a + b) * b)
    dot = sg.to_dot(loss)
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    labels = dict(re.findall(r"(n\d+) \[label=\"([^\"]+)\"", dot))
    edges = re.findall(r"(n\d+) -> (n\d+);", dot)
    assert sorted(labels.values()) == sorted(["SumBackward0", "MulBackward0", "AddBackward0",
                                              "a (4,)", "b (4,)"])
    named = {(labels[u], labels[v]) for u, v in edges}
    assert named == {("MulBackward0", "SumBackward0"), ("AddBackward0", "MulBackward0"),
                     ("b (4,)", "MulBackward0"), ("a (4,)", "AddBackward0"),
                     ("b (4,)", "AddBackward0")}
    assert len(edges) == len(named)           # the shared node b is drawn once


def test_to_dot_writes_dot_files(tmp_path):
    x = sg.symbol("x")
    path = tmp_path / "g.dot"
    text = sg.to_dot(sg.sin(x), path)
    assert path.read_text() == text


def test_to_dot_image_needs_graphviz(tmp_path):
    x = sg.symbol("x")
    if graphviz_available():
        sg.to_dot(sg.sin(x), tmp_path / "g.svg")
        assert (tmp_path / "g.svg").read_text().lstrip().startswith(("<?xml", "<svg"))
    else:
        with pytest.raises(sg.SymgradError, match="graphviz"):
            sg.to_dot(sg.sin(x), tmp_path / "g.png")
    with pytest.raises(sg.SymgradError, match=r"\.dot, \.gv, \.png, \.svg"):
        sg.to_dot(sg.sin(x), tmp_path / "g.txt")
