"""The public API: grad_fn and its views, tracing, local simplification and
polymorphic ops."""
import re

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg


def f(x, y):
    return sg.sin(x) * y + x ** 2


def loss(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


LOSS_SHAPES = {"W": ("m", "n"), "x": ("n",), "b": ("m",)}


def autograd(fn, *args):
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    return [g.numpy() for g in torch.autograd.grad(fn(*ts), ts)]


# ----- grad_fn and wrt ---------------------------------------------------------------------

def test_grad_fn_prints_the_spec_example():
    assert str(sg.grad_fn(f)) == "df/dx = 2*x + y*cos(x)\ndf/dy = sin(x)"


@pytest.mark.parametrize("wrt, names", [
    (None, ["x", "y"]),
    ("x", ["x"]),
    (("x",), ["x"]),
    (0, ["x"]),
    (1, ["y"]),
    (-1, ["y"]),
    ((0, 1), ["x", "y"]),
    ((1, 0), ["y", "x"]),
    (["y", "x"], ["y", "x"]),
    (("y", 0), ["y", "x"]),
])
def test_wrt_selects_and_orders(wrt, names):
    g = sg.grad_fn(f, wrt=wrt)
    assert [x.name for x in g.wrt] == names
    assert list(g.formulas) == names
    full = dict(zip(["x", "y"], autograd(f, 1.0, 2.0)))
    for backend in ("numpy", "torch"):
        out = g.compile(backend)(1.0, 2.0)
        assert isinstance(out, tuple) and len(out) == len(names)
        for name, o in zip(names, out):
            assert float(o) == pytest.approx(float(full[name]), rel=1e-12)


def test_wrt_order_in_printing():
    assert str(sg.grad_fn(f, wrt=(1, 0))).splitlines()[0] == "df/dy = sin(x)"


def test_one_input_gives_a_one_tuple():
    out = sg.grad_fn(f, wrt="x").compile("numpy")(1.0, 2.0)
    assert isinstance(out, tuple) and len(out) == 1


def test_lambda_is_named_f():
    assert str(sg.grad_fn(lambda x: x * x)) == "df/dx = 2*x"


# ----- shapes by annotation --------------------------------------------------------------

def annotated(W: sg.Tensor["m", "n"], x: sg.Tensor["n"]):
    return sg.sum(sg.tanh(W @ x))


def test_annotations_give_shapes():
    g = sg.grad_fn(annotated)
    assert [x.shape for x in g.inputs] == [(sympy.Symbol("m", integer=True, positive=True),
                                            sympy.Symbol("n", integer=True, positive=True)),
                                           (sympy.Symbol("n", integer=True, positive=True),)]
    text = str(g)
    assert "[shape (m, n)]" in text and "[shape (n,)]" in text


def test_annotations_equal_shapes_argument():
    by_shapes = sg.grad_fn(lambda W, x: sg.sum(sg.tanh(W @ x)),
                           shapes={"W": ("m", "n"), "x": ("n",)})
    assert str(sg.grad_fn(annotated)).replace("dannotated", "df") == str(by_shapes)


def test_string_annotations_are_read_not_evaluated():
    ns = {}
    exec("from __future__ import annotations\nimport symgrad as sg\n"
         "def h(v: sg.Tensor['k']):\n    return sg.sum(v * v)\n", ns)
    g = sg.grad_fn(ns["h"])
    assert "[shape (k,)]" in str(g)


def test_tensor_spec_repr():
    assert repr(sg.Tensor["m", 3]) == "Tensor[m, 3]"


def test_shapes_argument_overrides_annotations():
    g = sg.grad_fn(annotated, shapes={"W": (2, 3), "x": (3,)})
    assert [x.shape for x in g.inputs] == [(2, 3), (3,)]


# ----- formulas, value, LaTeX, program ----------------------------------------------------

def test_formulas_and_value_are_sympy():
    g = sg.grad_fn(f)
    x, y = sympy.symbols("x y", real=True)
    assert set(g.formulas) == {"x", "y"}
    assert all(isinstance(e, sympy.Basic) for e in g.formulas.values())
    assert sympy.simplify(g.formulas["x"] - (2 * x + y * sympy.cos(x))) == 0
    assert sympy.simplify(g.formulas["y"] - sympy.sin(x)) == 0
    assert isinstance(g.value, sympy.Basic)
    assert sympy.simplify(g.value - (sympy.sin(x) * y + x ** 2)) == 0


def test_formulas_agree_with_sympy_diff():
    g = sg.grad_fn(f)
    for name, expr in g.formulas.items():
        sym = next(s for s in g.value.free_symbols if s.name == name)
        assert sympy.simplify(expr - sympy.diff(g.value, sym)) == 0


def test_array_formulas_are_sympy():
    g = sg.grad_fn(loss, shapes=LOSS_SHAPES)
    assert all(isinstance(e, sympy.Basic) for e in g.formulas.values())
    assert isinstance(g.value, sympy.Basic)


def test_unused_input_formula_is_zero():
    g = sg.grad_fn(lambda x, y: sg.sin(x))
    assert g.formulas["y"] == 0
    assert str(g).splitlines()[1] == "df/dy = 0"


def test_latex():
    g = sg.grad_fn(f)
    tex = g.latex()
    assert tex.startswith("\\begin{aligned}") and tex.endswith("\\end{aligned}")
    assert "\\frac{\\partial f}{\\partial x} &= " in tex
    assert "\\frac{\\partial f}{\\partial y} &= \\sin{\\left(x \\right)}" in tex
    assert "\\cos{\\left(x \\right)}" in tex
    assert g._repr_latex_() == "$$" + tex + "$$"


def test_latex_of_matrix_formulas():
    tex = sg.grad_fn(loss, shapes=LOSS_SHAPES).latex()
    assert "\\tanh" in tex and "W^{T}" in tex


STATEMENT = re.compile(r"^v(\d+) = (.+)$")


def test_program_one_op_per_line():
    g = sg.grad_fn(loss, shapes=LOSS_SHAPES)
    lines = g.program().splitlines()
    assert lines[0] == "# inputs: W(m, n), x(n,), b(m,)"
    stmts = [STATEMENT.match(line) for line in lines[1:] if STATEMENT.match(line)]
    outs = [line for line in lines[1:] if not STATEMENT.match(line)]
    # statements are numbered in order, and use only inputs and earlier statements
    assert [int(m.group(1)) for m in stmts] == list(range(len(stmts)))
    for m in stmts:
        used = {int(k) for k in re.findall(r"\bv(\d+)\b", m.group(2))}
        assert all(k < int(m.group(1)) for k in used)
        names = set(re.findall(r"\b[A-Za-z_]\w*\b", m.group(2))) - {"v"}
        ops = names - {"W", "x", "b", "m", "n"} - {f"v{k}" for k in used}
        assert len(ops) <= 1, m.group(0)            # at most one named function
    assert len(stmts) == g.op_counts()[1]
    assert [o.split(" = ")[0] for o in outs] == ["loss", "dloss/dW", "dloss/dx", "dloss/db"]


def test_program_of_scalar_function():
    text = sg.grad_fn(f).program()
    assert "sin(x)" in text and "cos(x)" in text
    assert text.splitlines()[-2:] == [s for s in text.splitlines() if s.startswith("df/d")]


def test_gradient_program_is_a_small_multiple_of_forward():
    fwd, total = sg.grad_fn(loss, shapes=LOSS_SHAPES).op_counts()
    assert fwd == 4 and total <= 4 * fwd


def test_repr():
    r = repr(sg.grad_fn(loss, shapes=LOSS_SHAPES))
    assert r.startswith("<GradFn of loss(W: (m, n), x: (n,), b: (m,)) w.r.t. W, x, b>")


# ----- explicit per-element forms ---------------------------------------------------------

def test_explicit_agrees_with_compiled():
    g = sg.grad_fn(loss, shapes=LOSS_SHAPES)
    ex = g.explicit(m=2, n=3)
    assert set(ex) == {"W", "x", "b"}
    assert tuple(ex["W"].shape) == (2, 3)
    assert tuple(ex["x"].shape) == (3,) and tuple(ex["b"].shape) == (2,)
    rng = np.random.default_rng(0)
    W, x, b = rng.standard_normal((2, 3)), rng.standard_normal(3), rng.standard_normal(2)
    values = {}
    for name, arr in (("W", W), ("x", x), ("b", b)):
        for idx in np.ndindex(arr.shape):
            values[name + "_" + "".join(map(str, idx))] = arr[idx]
    compiled = g.compile("numpy")(W, x, b)
    for name, ours in zip(["W", "x", "b"], compiled):
        form = ex[name]
        subs = {s: values[s.name] for s in sympy.Array(form).free_symbols}
        got = np.array(sympy.Array(form).subs(subs).tolist(), dtype=float)
        np.testing.assert_allclose(got, ours, rtol=1e-12)


def test_explicit_value_and_scalars():
    g = sg.grad_fn(f)
    ex = g.explicit()
    x, y = sympy.symbols("x y", real=True)
    assert sympy.simplify(ex["x"] - (2 * x + y * sympy.cos(x))) == 0
    assert sympy.simplify(g.explicit_value() - (sympy.sin(x) * y + x ** 2)) == 0


def test_explicit_of_sum_of_vector():
    g = sg.grad_fn(lambda v: sg.sum(v * v), shapes={"v": ("n",)})
    ex = g.explicit(n=3)["v"]
    v0, v1, v2 = sorted(sympy.Array(ex).free_symbols, key=lambda s: s.name)
    assert list(ex) == [2 * v0, 2 * v1, 2 * v2]


# ----- structural hashing and local simplification -----------------------------------------

def test_structural_hashing():
    x, y = sg.symbol("x"), sg.symbol("y")
    assert sg.symbol("x") is x
    assert sg.sin(x) is sg.sin(x)
    assert x * y is x * y
    assert sg.sum(sg.symbol("v", (3,)), axis=0) is sg.sum(sg.symbol("v", (3,)), axis=0)
    assert x * y is not y * x            # no reordering: the same op on the same inputs only
    assert sg.symbol("x", (2,)) is not x


def test_identities():
    x = sg.symbol("x")
    v = sg.symbol("v", (3,))
    M = sg.symbol("M", (2, 3))
    assert x * 1 is x and 1 * x is x
    assert x + 0 is x and 0 + x is x
    assert x - 0 is x
    assert x / 1 is x
    assert x ** 1 is x
    assert -(-x) is x
    assert +x is x
    assert M.T.T is M
    assert sg.transpose(sg.transpose(M)) is M
    assert v * 1 is v


def test_known_zeros():
    x = sg.symbol("x")
    v = sg.symbol("v", (3,))
    for z in (x * 0, 0 * x, x - x, 0 / (x + 1)):
        assert z.op == "const" and z.attrs["value"] == 0
    z = v * 0
    assert z.op == "const" and z.attrs["value"] == 0 and z.shape == (3,)
    assert sg.symbol("M", (2, 3)) @ sg.const(0, (3,)) is sg.const(0, (2,))


def test_constant_folding():
    c = sg.const(2) * 3
    assert c is sg.const(6)
    assert c.op == "const" and c.attrs["value"] == 6
    assert sg.const(2) + sg.const(3) is sg.const(5)
    x = sg.symbol("x")
    assert 2 * (3 * x) is 6 * x
    assert (sg.const(1) > sg.const(0)).attrs["value"] is sympy.true


def test_gradient_through_simplified_graph():
    x = sg.symbol("x")
    (dx,) = sg.grad(x * 1 + 0, [x])
    assert dx is sg.const(1)


# ----- tensor methods ----------------------------------------------------------------------

def test_tensor_shape_and_methods():
    M = sg.symbol("M", ("m", "n"))
    assert M.ndim == 2 and M.T.shape == tuple(reversed(M.shape))
    assert M.sum(axis=0).shape == M.shape[1:]
    assert M.mean(dim=1, keepdim=True).shape == (M.shape[0], 1)
    assert M.name == "M" and M.is_leaf
    assert "shape=(m, n)" in repr(M)


# ----- polymorphism -----------------------------------------------------------------------

def test_ops_on_python_floats():
    assert sg.sin(1.0) == pytest.approx(np.sin(1.0))
    assert f(1.0, 2.0) == pytest.approx(np.sin(1.0) * 2 + 1)
    assert isinstance(sg.exp(0.0), float) or np.ndim(sg.exp(0.0)) == 0
    assert sg.maximum(1.0, 2.0) == 2.0


def test_ops_on_numpy_arrays():
    rng = np.random.default_rng(0)
    W, x, b = rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(3)
    out = loss(W, x, b)
    assert out == pytest.approx(np.tanh(W @ x + b).sum())
    a = np.array([-1.0, 0.5, 2.0])
    np.testing.assert_allclose(sg.relu(a), np.maximum(a, 0))
    np.testing.assert_allclose(sg.where(a > 0, a, 0.1 * a), np.where(a > 0, a, 0.1 * a))
    np.testing.assert_allclose(sg.sum(np.ones((2, 3)), axis=0), [2.0, 2.0, 2.0])
    assert isinstance(sg.tanh(a), np.ndarray)


def test_ops_on_torch_tensors_and_autograd_flows():
    rng = np.random.default_rng(1)
    W, x, b = (torch.tensor(a, requires_grad=True) for a in
               (rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal(3)))
    out = loss(W, x, b)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    assert out.grad_fn is not None
    out.backward()
    g = sg.grad_fn(loss, shapes=LOSS_SHAPES)
    ours = g.compile("numpy")(W.detach().numpy(), x.detach().numpy(), b.detach().numpy())
    for t, o in zip((W, x, b), ours):
        np.testing.assert_allclose(t.grad.numpy(), o, rtol=1e-12)


def test_torch_second_order_through_sg_ops():
    t = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    (d1,) = torch.autograd.grad(f(t, 2.0), t, create_graph=True)
    (d2,) = torch.autograd.grad(d1, t)
    assert d2.item() == pytest.approx(-np.sin(0.7) * 2 + 2)


def test_torch_float32_stays_float32():
    t = torch.ones(3, dtype=torch.float32)
    assert sg.tanh(t).dtype == torch.float32
    assert sg.add(t, 1.0).dtype == torch.float32


def test_sympy_operands_give_sympy():
    x = sympy.Symbol("x")
    assert sg.sin(x) == sympy.sin(x)


def test_detach_on_values():
    t = torch.ones(2, requires_grad=True)
    assert not sg.detach(t).requires_grad
    a = np.ones(2)
    assert sg.stop_gradient(a) is a


def test_one_function_traced_and_run():
    """The same f gives symbolic formulas and runs under torch.autograd as the reference."""
    report = sg.check(f, order=1, trials=2)
    assert report.ok and report.wrt == ["x", "y"]


def test_clean_interpreter_exit():
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c",
                        "import symgrad as sg\ny = sg.symbol('x') * 0.5\n"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    assert r.stderr == ""


def test_constructors_take_symbolic_dims_and_have_torch_values():
    import torch

    def f(x):
        n = x.shape[0]
        return (x * sg.ones(n)).sum() + (x * sg.full((n,), 0.5)).sum() + \
            (sg.zeros_like(x) + sg.ones_like(x) * 2 + sg.full_like(x, 3.0)).sum() * x.sum()

    g = sg.grad_fn(f, shapes={"x": ("n",)})
    x = np.array([1.0, -2.0, 0.5])
    (ours,) = g.compile("numpy")(x)
    xt = torch.tensor(x, requires_grad=True)
    n = 3
    (xt.sum() * 1.5 + 5.0 * n * xt.sum()).backward()
    np.testing.assert_allclose(ours, xt.grad.numpy())
    assert sg.zeros(("n", 2)).shape[1] == 2 and sg.full((), 1.0).shape == ()


def test_without_torch_numpy_works_and_torch_features_say_how_to_install():
    import subprocess
    import sys
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np, symgrad as sg\n"
        "g = sg.grad_fn(lambda x: (sg.tanh(x) ** 2).sum(), shapes={'x': (3,)})\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "print(g.compile('numpy')(np.ones(3))[0].shape)\n"
        "for call in (lambda: g.compile('torch'), lambda: sg.check(lambda x: (sg.tanh(x) ** 2).sum(), shapes={'x': (3,)})):\n"
        "    try:\n"
        "        call()\n"
        "    except sg.MissingDependencyError as e:\n"
        "        assert \"pip install 'symgrad[torch]'\" in str(e), e\n"
        "        print('refused')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["(3,)", "refused", "refused"]


def test_a_variadic_function_is_a_clear_error():
    def v(*xs):
        return sum(x.sum() for x in xs)

    with pytest.raises(sg.SymgradError, match=r"v\(\*xs\).*lambda x, y: v\(x, y\)"):
        sg.grad_fn(v, shapes={"x": (2,)})
    with pytest.raises(sg.SymgradError, match="one named parameter per input"):
        sg.grad_fn(v)


def test_default_arguments_stay_defaults_unless_shapes_names_them():
    def h(x, scale=2.0):
        return (x * scale).sum()

    g = sg.grad_fn(h, shapes={"x": (2,)})
    assert [x.name for x in g.inputs] == ["x"]
    np.testing.assert_allclose(g.compile("numpy")(np.ones(2))[0], [2.0, 2.0])
    g2 = sg.grad_fn(h, shapes={"x": (2,), "scale": ()})
    assert [x.name for x in g2.wrt] == ["x", "scale"]


def test_keyword_only_parameters_are_inputs_after_the_positional_ones():
    import torch

    def f(x, *, y):
        return sg.sum(sg.sin(x) * y)
    g = sg.grad_fn(f, shapes={"x": ("n",), "y": ("n",)})
    assert [p.name for p in g.inputs] == ["x", "y"]
    x, y = np.array([0.3, -1.2]), np.array([2.0, 0.5])
    tx, ty = (torch.tensor(v, requires_grad=True) for v in (x, y))
    ref = torch.autograd.grad((torch.sin(tx) * ty).sum(), (tx, ty))
    for ours, r in zip(g.compile("numpy")(x, y), ref):
        np.testing.assert_allclose(ours, r.numpy(), rtol=1e-14)
    assert sg.check(f, shapes={"x": ("n",), "y": ("n",)}).ok

    def h(x, a=2.0, *, y, z=3.0):     # y has no default: a before it becomes an input
        return x * y * a * z
    assert [p.name for p in sg.grad_fn(h).inputs] == ["x", "a", "y"]
    assert sg.hessian(h, wrt=("x", "y"), shapes={}).compile()(1.0, 2.0, 3.0)[0][1] == 6.0


def test_a_gradient_function_is_callable_and_checks_its_dim_names():
    import torch
    g = sg.grad_fn(lambda x, y: sg.sum(x * sg.exp(y)), shapes={"x": ("n",), "y": ("n",)})
    x, y = np.array([1.0, 2.0]), np.array([0.0, 1.0])
    gx, gy = g(x, y)
    np.testing.assert_allclose(gx, np.exp(y)) and np.testing.assert_allclose(gy, x * np.exp(y))
    tx, ty = g(torch.tensor(x), torch.tensor(y))
    assert isinstance(tx, torch.Tensor) and torch.allclose(ty, torch.tensor(x * np.exp(y)))
    with pytest.raises(sg.ArgumentError, match="m is not a dim of f's inputs"):
        g.verify(m=3)
    with pytest.raises(sg.ArgumentError, match="its dims: n"):
        g.explicit(n=2, m=3)
