"""Coverage of the op registry: every OpDef is whole, and every part of symgrad that should
read it does. Parametrized over ``core.opdef.OPS``, so an op is picked up the moment it
is defined:

* it has a rule in rules/ (or is declared not differentiable, or carries its rule in its
  nodes like an ``sg.Function``);
* every backend prints it, and every view shows it (text, LaTeX, matrix notation,
  per-element formulas, the NumPy text: its "numpy_text" spelling or else its "numpy" one,
  in names NumPy has), on the graphs the rule specs trace and differentiate;
* a torch callable of the same name, where torch has one, is mapped by the front end.

Numbers are checked elsewhere (test_rules against torch.autograd); here what matters is
that nothing is missing and nothing is skipped silently.
"""
import ast
import builtins

import numpy as np
import pytest
import sympy

import symgrad as sg
from symgrad.codegen import BACKENDS
from symgrad.codegen.backends import internal
from symgrad.core.build import const, symbol
from symgrad.core.graph import topo_order
from symgrad.core.opdef import OPS
from symgrad.errors import RegistryError
from symgrad.core.shapes import dim_symbol
from symgrad.diff.reverse import backward
from symgrad.torchfront.dispatch import resolve, table
from symgrad.views import explicit
from symgrad.views.latex import latex_expr
from symgrad.views.formulas import render
from symgrad.views.numpy_text import numpy_block
from symgrad.views.text import format_expr

from rule_specs import SPECS

LEAVES = {name for name, op in OPS.items() if op.arity == 0 and name != "eye"}

# torch callables named like an op that the front end does not map, and why
UNMAPPED = {
    "torch.eye": "a creation function of sizes, not of tensors: it never meets a symbolic "
                 "Tensor while sizes are ints",
    "torch.nn.functional.one_hot": "takes integer class indices, which trace as constants",
    "torch.solve": "removed from torch (it raises); torch.linalg.solve is mapped",
    "torch.binary_cross_entropy_with_logits": "ATen's form with an integer reduction code; "
                                              "torch.nn.functional's is mapped",
}


class Square(sg.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


def _sample_graphs():
    """(outputs, dims) of every spec's cases, each with its gradient: graphs holding every
    op with a rule, and what their gradients use (index_scatter, eye, constants, ...)."""
    graphs = []
    for spec in SPECS.values():
        for case in spec.cases:
            xs = [symbol(n, s) for n, s in case.shapes.items()]
            out = spec.build_for(case)(*xs, **case.params)
            dims = {dim_symbol(k): v for k, v in case.dims.items()}
            grads = []
            if spec.differentiable:
                w = symbol("w_out", out.shape)
                grads = [g for g in backward([sg.sum(out * w)], [const(1)], xs) if g is not None]
            graphs.append(([out] + grads, dims))
    x = symbol("x", (3,))
    y = Square.apply(x)
    graphs.append(([y] + backward([sg.sum(y)], [const(1)], [x]), {}))
    z = sg.sum(x * np.arange(3.0) * x)       # a captured array
    graphs.append(([z] + backward([z], [const(1)], [x]), {}))
    m = symbol("m", ("n", "n"))
    e = sg.sum((sg.eye(m.shape[0]) + m) * m)  # the identity of a symbolic size
    graphs.append(([e] + backward([e], [const(1)], [m]), {dim_symbol("n"): 3}))
    return graphs


GRAPHS = _sample_graphs()


def _samples():
    """{op: [(node, dims), ...]}: up to three nodes of each op from the sample graphs."""
    found = {}
    for outputs, dims in GRAPHS:
        for node in topo_order(outputs):
            nodes = found.setdefault(node.op, [])
            if len(nodes) < 3:
                nodes.append((node, dims))
    return found


SAMPLES = _samples()


def test_registry_is_not_empty():
    assert len(OPS) > 50


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_is_whole(name):
    op = OPS[name]
    assert op.function is not None or op.arity == 0 or op.node_rule, \
        f"{name}: no public function applies it"
    assert op.shape_fn is not None, f"{name}: no shape rule"
    assert op.inputs is not None or op.node_rule, f"{name}: operands unnamed"


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_has_a_rule_or_says_why_not(name):
    op = OPS[name]
    if op.node_rule or name in LEAVES or name == "eye":
        return
    assert name in sg.rules or not op.differentiable, (
        f"op {name} has no rule in rules/ and is not declared differentiable=False")
    if name in sg.rules:
        assert sg.rules[name].inputs == op.inputs


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_appears_in_the_sample_graphs(name):
    """Every op is exercised below: a new op needs a rule spec (tests/rule_specs.py)."""
    assert name in SAMPLES, f"no sample graph applies {name}; give it a spec in rule_specs"


def _statement(backend, node):
    names = [None if i.is_const and not i.shape else f"a{k}" for k, i in enumerate(node.inputs)]
    return backend.templates.statement(node, names)


@pytest.mark.parametrize("name", sorted(set(OPS) - LEAVES))
def test_every_backend_prints_the_op(name):
    for node, _ in SAMPLES.get(name, []):
        for backend in BACKENDS.values():
            if backend.name == "torch":
                pytest.importorskip("torch")
            text = _statement(backend, node)
            assert text and "Not supported" not in text, (backend.name, text)
        if OPS[name].pointwise and not node.shape:
            assert _statement(internal("math"), node)


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_view_shows_the_op(name):
    for node, dims in SAMPLES.get(name, []):
        assert format_expr(node.expr)
        assert latex_expr(node.expr)
        for style in ("text", "latex"):
            (out,), _ = render([node], style)
            assert out
        sizes = {d: dims.get(d, 3) for d in node.expr.free_symbols if d.is_integer}
        if all(isinstance(d, int) or d.free_symbols <= set(dims) for d in node.shape):
            (arr,) = explicit.evaluate([node], {**sizes, **dims})
            assert arr.shape == tuple(int(sympy.sympify(d).subs(dims)) for d in node.shape)


def _numpy_names_only(text):
    """Problems of a NumPy text block: a name used before the block defines it (or
    imports it, or Python has it), an ``np.`` attribute NumPy lacks, ``numpy`` unaliased."""
    tree = ast.parse(text)
    head = next(ln for ln in text.splitlines() if ln.startswith("# inputs: "))
    known = set(dir(builtins)) | {n.strip() for n in head[10:].split(" (")[0].split(",")}
    known |= {ln[2:].split(" = ...")[0] for ln in text.splitlines()   # dims to be set
              if ln.startswith("# ") and " = ...  (set this dim" in ln}
    problems = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.Import, ast.ImportFrom)):
            for n in ast.walk(stmt):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in known:
                    problems.append(f"{n.id} is not defined: {ast.unparse(stmt)[:200]}")
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and n.id == "numpy":
                problems.append("numpy is written np in the NumPy text")
            if isinstance(n, ast.Attribute):
                chain, inner = [n.attr], n.value
                while isinstance(inner, ast.Attribute):
                    chain.append(inner.attr)
                    inner = inner.value
                if isinstance(inner, ast.Name) and inner.id == "np":
                    obj = np
                    for part in reversed(chain):
                        obj = getattr(obj, part, None)
                    if obj is None:
                        problems.append(f"NumPy has no np.{'.'.join(reversed(chain))}")
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            known.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            known |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.Assign):
            known |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
    return problems


@pytest.mark.parametrize("name", sorted(set(OPS) - LEAVES))
def test_the_numpy_text_spells_the_op_in_numpy(name):
    """``text("numpy")`` prints every op as NumPy (its "numpy_text" spelling, else its
    "numpy" one, with ``np.``); the numbers are checked over the rule table in
    tests/fuzz/test_views.py."""
    op = OPS[name]
    assert op.spelling("numpy_text") is (op.spell.get("numpy_text") or op.spell.get("numpy"))
    for node, _ in SAMPLES.get(name, []):
        inputs = [n for n in topo_order([node]) if n.is_symbol]
        text = numpy_block([("y", node, node.shape)], inputs, {})
        assert text.startswith("import numpy as np\n"), text
        problems = _numpy_names_only(text)
        assert not problems, "\n".join(problems) + "\n\n" + text


def test_the_numpy_text_spelling_is_preferred():
    """An op whose compiled spelling calls a helper reads as NumPy where NumPy has a short
    form (``OpDef(numpy_text=...)``): sigmoid, softmax, log_softmax, logsumexp."""
    x = symbol("x", ("n",))
    for fn in (sg.sigmoid, sg.softmax, sg.log_softmax, sg.logsumexp):
        node = fn(x)
        assert "numpy_text" in OPS[node.op].spell
        text = numpy_block([("y", node, node.shape)], [x], {})
        assert "def " not in text and "_expit" not in text, text
        assert not _numpy_names_only(text), text


def test_a_view_names_an_op_it_cannot_show(monkeypatch):
    """No silent skip: an op without a form for a view is an error naming it."""
    x = sg.symbol("x", (2, 2))
    y = sg.cholesky(x)
    monkeypatch.setattr(OPS["cholesky"], "elements", None)
    with pytest.raises(sg.UnsupportedOpError, match="cholesky has no per-element form"):
        explicit.evaluate([y], {})
    monkeypatch.setitem(OPS["cholesky"].spell, "numpy", None)
    monkeypatch.delitem(OPS["cholesky"].spell, "numpy")
    with pytest.raises(RegistryError, match="cholesky has no numpy spelling"):
        BACKENDS["numpy"].printer().doprint(y.local_expr([sympy.Symbol("a")]))


@pytest.mark.parametrize("name", sorted(OPS))
def test_torch_callables_of_the_same_name_are_mapped(name):
    mapped = table()
    for namespace in ("torch", "torch.linalg", "torch.nn.functional", "torch.special"):
        full = f"{namespace}.{name}"
        if resolve(full) is not None and full not in UNMAPPED:
            assert full in mapped, f"torch has {full} but the front end does not map it"


@pytest.mark.parametrize("name", sorted(n for op in OPS.values() for n in op.torch_names))
def test_every_torch_name_of_an_op_exists(name):
    assert resolve(name) is not None, f"an OpDef names {name}, which this torch lacks"


def test_unknown_backend_lists_the_known_ones():
    g = sg.grad_fn(lambda x: x * x)
    for name in ("math", "nope", None):
        with pytest.raises(sg.SymgradError,
                           match=r"the backends are .*'c', .*'jax', .*'numba', .*'numpy', 'torch'"):
            g.compile(name)


def test_compiled_functions_keep_their_own_constants():
    """Captured arrays live in the compiled function's namespace, named by position."""
    c = np.arange(3.0)
    g = sg.grad_fn(lambda x: sg.sum(x * c * x), shapes={"x": (3,)})
    fn = g.compile("numpy")
    assert "_c0" in fn.__globals__ and fn.__globals__["_c0"] is not c
    np.testing.assert_allclose(fn(np.ones(3))[0], 2 * c)
    assert "_c0 = numpy.array([0.0, 1.0, 2.0])" in g.source("numpy")
