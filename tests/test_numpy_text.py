"""``text("numpy")`` is NumPy a person can paste and run.

Each test prints a derivative's NumPy text, runs it with NumPy and math only
(``fuzz.views.run_numpy_block``: the block's own imports, the input arrays under the names
its ``# inputs:`` comment gives, the captured arrays its comments name) and compares every
result with torch.autograd in float64, the function itself running on torch tensors (sg
ops compute eagerly there). The cases are those of issue 16: the precedence of a tanh
layer's gradient, the broadcasts of sum(x)**2 and sum(A@x)**2, sigmoid/logsumexp/softmax
as NumPy (no helper functions), the norm's zero guard, Cobb-Douglas scalars, hostile names,
captured arrays, and Jacobian/Hessian objects.
"""
import ast
import inspect
import re

import numpy as np
import pytest
import torch

import symgrad as sg

from fuzz.views import ViewError, run_numpy_block

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def named(f, name="f"):
    f.__name__ = name
    return f


def inputs(g, rng, dims, low=-1.0, high=1.0):
    """Random float64 arrays for ``g.inputs`` at ``dims``."""
    def size(d):
        return d if isinstance(d, int) else int(d.subs({s: dims[str(s)] for s in d.free_symbols}))
    return [rng.uniform(low, high, tuple(size(d) for d in x.shape)) for x in g.inputs]


def torch_grads(f, args):
    """torch.autograd's gradient of ``f`` (sg ops on torch tensors) at ``args``, float64."""
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    out = f(*ts)
    grads = torch.autograd.grad(out, ts, allow_unused=True)
    return [np.zeros(a.shape) if d is None else d.numpy() for a, d in zip(args, grads)]


def run(g, args):
    """{label: value} of ``g.text("numpy")`` run with NumPy alone; each result's shape is
    its comment's shape note."""
    text = g.text("numpy")
    out = {}
    for label, (value, shape) in run_numpy_block(text, [np.asarray(a) for a in args],
                                                 g.constants).items():
        assert np.shape(value) == shape, (label, np.shape(value), shape, text)
        out[label] = np.asarray(value, dtype=np.float64)
    return out, text


def check(f, shapes, dims=None, rng=None, args=None, **kw):
    """g.text("numpy") of ``f`` run with NumPy equals torch.autograd; returns the text."""
    f = named(f)
    g = sg.grad_fn(f, shapes=shapes)
    args = args if args is not None else inputs(g, rng or np.random.default_rng(0),
                                                dims or {}, **kw)
    got, text = run(g, args)
    want = torch_grads(f, args)
    assert set(got) == {f"df/d{x.name}" for x in g.inputs}, text
    for x, w in zip(g.inputs, want):
        np.testing.assert_allclose(got[f"df/d{x.name}"], w, rtol=1e-10, atol=1e-12,
                                   err_msg=f"df/d{x.name}\n{text}")
    return text


def calls(text):
    """The dotted names of every call in ``text`` (``np.exp``, ``_softmax``)."""
    def dotted(node):
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = dotted(node.value)
            return None if inner is None else f"{inner}.{node.attr}"
        return None
    return {dotted(n.func) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)}


# ----- the cases of the issue ------------------------------------------------------------------

def test_a_two_layer_tanh_net_keeps_its_matrix_products():
    """Was ``(1 - t1**2)*t2@W2``, which Python reads as ((1 - t1**2)*t2) @ W2."""
    def f(x, W1, b1, W2):
        return sg.sum(sg.tanh(sg.tanh(x @ W1 + b1) @ W2))
    text = check(f, {"x": ("B", "n"), "W1": ("n", "h"), "b1": ("h",), "W2": ("h", "m")},
                 {"B": 4, "n": 3, "h": 5, "m": 2})
    assert "B = x.shape[0]" in text and "h = W1.shape[1]" in text, text
    for line in text.splitlines():        # a product with a matrix product in it is bracketed
        tree = ast.parse(line) if line and not line.startswith("#") else None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                assert not (isinstance(node.left, ast.BinOp)
                            and isinstance(node.left.op, ast.Mult)), line


def test_sum_squared_broadcasts_back():
    text = check(lambda x: sg.sum(x) ** 2, {"x": ("n",)}, {"n": 5})
    assert "n = x.shape[0]" in text


def test_sum_of_a_matrix_vector_product_squared():
    check(lambda A, x: sg.sum(A @ x) ** 2, {"A": ("m", "n"), "x": ("n",)}, {"m": 3, "n": 4})


def test_sigmoid_logsumexp_softmax_read_as_numpy():
    def f(w, z, y):
        return (sg.sum(sg.sigmoid(w) * y) + sg.logsumexp(z) + sg.sum(sg.softmax(z) * y)
                + sg.sum(sg.log_softmax(z) * y) + sg.sum(sg.softplus(w)))
    text = check(f, {"w": ("n",), "z": ("n",), "y": ("n",)}, {"n": 6}, low=-3, high=3)
    used = calls(text)
    assert "np.logaddexp.reduce" in used and "np.exp" in used, text
    assert all(c.startswith("np.") for c in used), sorted(used)     # no helper functions
    assert "def " not in text and "import math" not in text, text


def test_logsumexp_over_several_axes_and_large_logits():
    def f(z):
        return sg.sum(sg.logsumexp(z, axis=(0, 2)) ** 2) + sg.logsumexp(z)
    check(f, {"z": (2, 3, 4)}, low=700, high=800)


def test_the_norms_zero_guard_is_numpy():
    def f(x):
        return sg.norm(x) + sg.sum(sg.norm(x * x, axis=1))
    shapes = {"x": ("m", "n")}
    text = check(f, shapes, {"m": 2, "n": 3})
    assert "Eq(" not in text and "np.linalg.norm(" in text, text
    check(f, shapes, args=[np.zeros((2, 3))])            # torch's subgradient there: 0


def test_cobb_douglas_scalars():
    def f(K, L, a):
        return K ** a * L ** (1 - a)
    text = check(f, {}, low=0.5, high=2.0)
    assert "shape ()" in text and "np.where(" in text, text
    check(f, {}, args=[np.float64(1.5), np.float64(2.5), np.float64(0.0)])  # the guard


@pytest.mark.parametrize("names", [("np", "len"), ("math", "_softmax"), ("ｘ", "ﬁ"),
                                   ("df_dnp", "np"), ("t1", "t2")])
def test_hostile_names(names):
    """A parameter named like NumPy's alias, a builtin, a helper, a result or a subterm,
    or spelled with NFKC look-alikes, is renamed in the code (and the rename said)."""
    a, b = names

    def f(*args):
        return sg.sum(sg.tanh(sg.sigmoid(args[0]) * args[1]) * args[0])
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD     # names Python's parser would change
    f.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    text = check(f, {a: ("n",), b: ("n",)}, {"n": 4})
    for name in (a, b):
        head = next(ln for ln in text.splitlines() if ln.startswith("# inputs:"))
        if name in ("np", "math", "len", "_softmax", "ｘ", "ﬁ"):
            assert f"is the input {name!r}" in text, text
            assert not head.startswith(f"# inputs: {name},"), head


def test_dims_named_like_keywords_and_look_alikes():
    def f(x, y):
        return sg.sum(sg.sin(x) * y)
    text = check(f, {"x": ("lambda", "ｎ"), "y": ("ｎ",)}, {"lambda": 2, "ｎ": 3})
    assert "lambda =" not in text, text


# ----- captured arrays ------------------------------------------------------------------------

def test_captured_arrays_are_referred_to_by_name():
    """A captured array is referred to by its name in ``g.constants`` (a variable's name,
    or C1, ... for a large unnamed one), the comment saying where its value comes from; a
    small unnamed one is written out."""
    weights = np.linspace(0.0, 1.0, 30).reshape(5, 6)

    def f(x, v):
        return (sg.sum(sg.tanh(weights @ x)) + sg.sum(v * np.array([1.0, -2.0, 3.0]))
                + sg.sum(sg.sin(x * np.linspace(0.5, 1.5, 24).reshape(4, 6))))
    g = sg.grad_fn(named(f), shapes={"x": (6,), "v": (3,)})
    text = g.text("numpy")
    assert "# weights = g.constants['weights']" in text, text
    unnamed = [k for k in g.constants if k != "weights"]
    assert len(unnamed) == 1 and f"g.constants[{unnamed[0]!r}]" in text, text
    assert "np.array([1.0, -2.0, 3.0])" in text, text
    assert "0.0344" not in text and "0.5434" not in text, text     # no large data pasted
    args = inputs(g, np.random.default_rng(1), {})
    got, _ = run(g, args)
    c = np.linspace(0.5, 1.5, 24).reshape(4, 6)
    want = torch_grads(lambda x, v: (torch.tanh(torch.from_numpy(weights) @ x).sum()
                                     + (v * torch.tensor([1.0, -2.0, 3.0], dtype=v.dtype)).sum()
                                     + torch.sin(x * torch.from_numpy(c)).sum()), args)
    np.testing.assert_allclose(got["df/dx"], want[0], rtol=1e-10)
    np.testing.assert_allclose(got["df/dv"], want[1], rtol=1e-10)
    with pytest.raises(ViewError, match="g.constants has no key"):
        run_numpy_block(text, args, {})


# ----- Jacobians and Hessians -------------------------------------------------------------

def test_hessian_and_jacobian_objects():
    def f(x, y):
        return sg.sum(sg.tanh(x) * y) + sg.sum(x) ** 2
    h = sg.hessian(named(f), shapes={"x": (3,), "y": (3,)})
    x, y = np.random.default_rng(2).standard_normal((2, 3))
    got, text = run(h, [x, y])
    want = torch.autograd.functional.hessian(f, (torch.tensor(x), torch.tensor(y)))
    names = ["x", "y"]
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            label = f"d²f/d{a}²" if a == b else f"d²f/d{a}d{b}"
            np.testing.assert_allclose(got[label], want[i][j].numpy(), rtol=1e-10,
                                       atol=1e-12, err_msg=text)
    assert "d2f_dx2 = " in text, text

    def v(x):
        return sg.softmax(x) * 2
    jac = sg.jacobian(named(v, "v"), shapes={"x": (4,)})
    got, text = run(jac, [x[:1].repeat(4)])
    want = torch.autograd.functional.jacobian(v, torch.tensor(x[:1].repeat(4)))
    np.testing.assert_allclose(got["dv/dx"], want.numpy(), rtol=1e-10, atol=1e-12,
                               err_msg=text)


def test_known_zero_gradients_have_their_shapes():
    text = check(lambda x, y: sg.sum(x * 2.0) + 0 * sg.sum(y), {"x": ("n",), "y": (2, 3)},
                 {"n": 3})
    assert "np.zeros((2, 3))" in text, text


def test_a_deep_chain_prints_in_linear_size():
    def f(x):
        for _ in range(300):
            x = sg.sin(x) * x + sg.logsumexp(x) * 0.001
        return sg.sum(x)
    g = sg.grad_fn(named(f), shapes={"x": (3,)})
    text = g.text("numpy")
    assert len(text) < 300_000, len(text)
    args = [np.random.default_rng(3).uniform(-1, 1, 3)]
    got, _ = run(g, args)
    np.testing.assert_allclose(got["df/dx"], torch_grads(f, args)[0], rtol=1e-8)


# ----- SymPy's own nodes --------------------------------------------------------------------

def test_sympys_nodes_print_as_numpy_of_their_value():
    """Piecewise, Max/Min of arrays, logic, relationals, powers and dims print as NumPy
    that computes what SymPy computes (elementwise, compared at each element)."""
    import sympy
    from symgrad.views.numpy_text import NumpyTextPrinter
    x, y = sympy.symbols("x y", real=True)
    n = sympy.Symbol("n", integer=True, positive=True)
    exprs = [sympy.Piecewise((x, x > 0), (y ** 2, y > 0.5), (1 - x, True)),
             sympy.Max(x, y, 0.25) - sympy.Min(x, 2 * y), x ** -2 + 1 / (x + y) ** 3,
             sympy.Piecewise((x, sympy.And(x > 0, y < 1, sympy.Not(sympy.Eq(x, y)))),
                             (0, True)),
             x * sympy.ceiling(n / 3) / n + sympy.floor(x) + abs(x) ** sympy.Rational(1, 3),
             sympy.atan2(x, y) * sympy.sign(y) + sympy.exp(x) * sympy.pi]
    printer = NumpyTextPrinter({x: "x", y: "y", n: "n"}, None)
    rng = np.random.default_rng(4)
    xs, ys = rng.uniform(-2, 2, 7), rng.uniform(-2, 2, 7)
    for e in exprs:
        text = printer.doprint(e)
        got = eval(text, {"np": np, "x": xs, "y": ys, "n": 5})  # noqa: S307 - the view under test
        want = [float(e.subs({x: a, y: b, n: 5}).evalf()) for a, b in zip(xs, ys)]
        np.testing.assert_allclose(np.broadcast_to(got, xs.shape), want, rtol=1e-12,
                                   err_msg=f"{e} printed {text}")


def test_complex_infinity_is_an_error_not_code():
    import sympy
    from symgrad.views.numpy_text import NumpyTextPrinter
    with pytest.raises(sg.SymgradError, match="complex infinity"):
        NumpyTextPrinter({}, None).doprint(sympy.zoo)


def test_an_escaped_name_never_takes_another_inputs_spelling():
    """'а' (Cyrillic) is escaped as _u430 in code; with an input spelled _u430 too, the
    pasted block would read the user's _u430 as 'а'. No name in the block is another
    input's spelling: pasted as is, it fails loudly instead of swapping them."""
    scope = {"sg": sg}
    exec("def f(_u430, а):\n    return sg.sin(_u430) * а ** 2\n", scope)
    g = sg.grad_fn(scope["f"])
    text = g.text("numpy")
    code = "\n".join(ln.split("#")[0] for ln in text.splitlines())
    assert not re.search(r"(?<![\w])_u430(?![\w])", code), text
    renamed = dict(re.findall(r"# (\w+) is the input '(.+)'", text))
    env = {k: {"_u430": 0.3, "а": 2.0}[v] for k, v in renamed.items()}
    exec(text, env)
    t = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.3, 2.0)]
    want = torch.autograd.grad(torch.sin(t[0]) * t[1] ** 2, t)
    assert env["df_d_u430"] == pytest.approx(want[0].item())
