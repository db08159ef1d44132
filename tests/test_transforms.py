"""sg.vjp, sg.jvp, sg.jacobian, sg.hessian, sg.hvp, sg.no_grad and the tape-level grad API
(torch.func's signatures and return conventions), checked against torch.autograd /
torch.func in float64.

The functions below are written with sg ops, which compute on torch tensors too, so each
one is its own torch reference.
"""
import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.diff import batching
from symgrad.codegen import build_source, compile_function
from symgrad.diff.rules import Rule

pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")

RNG = np.random.default_rng(2024)


def T(a):
    return torch.tensor(a, dtype=torch.float64)


def close(ours, ref, rtol=1e-10, atol=1e-12):
    ours = ours.detach().numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    np.testing.assert_allclose(ours, ref, rtol=rtol, atol=atol)


def spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


# ----- functions of several shapes (each also runs on torch tensors) -----------------------

def tanh_layer(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


def logreg(w, X, y):
    return sg.mean(sg.softplus(-y * (X @ w)))


def quadratic(x, A):
    return x @ A @ x


def rosenbrock(x):
    return sg.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def scalars(x, y):
    return sg.sin(x) * y + x ** 2


def lse(x):
    return sg.logsumexp(x)


def logdet(A):
    return sg.logdet(A)


def norm(x):
    return sg.norm(x)


def softmax_ce(W, x):
    return -sg.log_softmax(W @ x)[0]


HESSIAN_CASES = {
    # name: (f, primals as NumPy arrays, argnums)
    "tanh_layer": (tanh_layer, lambda: [RNG.standard_normal((3, 4)), RNG.standard_normal(4),
                                        RNG.standard_normal(3)], (0, 1, 2)),
    "logreg": (logreg, lambda: [RNG.standard_normal(3), RNG.standard_normal((5, 3)),
                                RNG.choice([-1.0, 1.0], 5)], 0),
    "quadratic": (quadratic, lambda: [RNG.standard_normal(4), RNG.standard_normal((4, 4))],
                  (0, 1)),
    "rosenbrock": (rosenbrock, lambda: [RNG.standard_normal(5)], 0),
    "scalars": (scalars, lambda: [np.array(0.7), np.array(-1.3)], (0, 1)),
    "logsumexp": (lse, lambda: [RNG.standard_normal(4)], 0),
    "logdet": (logdet, lambda: [spd(3)], 0),
    "norm": (norm, lambda: [RNG.standard_normal(4)], 0),
    "softmax_ce": (softmax_ce, lambda: [RNG.standard_normal((3, 4)), RNG.standard_normal(4)],
                   (0, 1)),
}


def _blocks(h, argnums):
    """Blocks of a (possibly nested) Hessian as {(i, j): array}."""
    if isinstance(argnums, int):
        return {(0, 0): h}
    return {(i, j): h[i][j] for i in range(len(argnums)) for j in range(len(argnums))}


@pytest.mark.parametrize("name", sorted(HESSIAN_CASES))
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_hessian_matches_torch_autograd_functional_hessian(name, kind):
    f, make, argnums = HESSIAN_CASES[name]
    arrays = make()
    tensors = [T(a) for a in arrays]
    nums = (argnums,) if isinstance(argnums, int) else argnums
    others = {k: t for k, t in enumerate(tensors) if k not in nums}

    def ref_f(*xs):
        args = [others[k] if k in others else xs[nums.index(k)] for k in range(len(tensors))]
        return f(*args)

    ref = torch.autograd.functional.hessian(ref_f, tuple(tensors[k] for k in nums))
    ref = {(i, j): ref[i][j] for i in range(len(nums)) for j in range(len(nums))}
    primals = tensors if kind == "torch" else arrays
    ours = _blocks(sg.hessian(f, *primals, argnums=argnums), argnums)
    for key, r in ref.items():
        got = ours[key]
        assert isinstance(got, torch.Tensor if kind == "torch" else np.ndarray)
        close(got, r, rtol=1e-9, atol=1e-11)


def test_hessian_of_a_non_scalar_output_matches_torch_func():
    x = RNG.standard_normal(3)
    H = sg.hessian(lambda x: sg.tanh(x) * x, T(x))
    close(H, torch.func.hessian(lambda x: torch.tanh(x) * x)(T(x)))


def test_hessian_of_python_numbers_is_a_float():
    h = sg.hessian(scalars, 0.7, -1.3)
    assert isinstance(h, float)
    assert h == pytest.approx(-np.sin(0.7) * -1.3 + 2, rel=1e-14)


# ----- Jacobians ---------------------------------------------------------------------------

def layer(W, x, b):
    return sg.tanh(W @ x + b)


def pair(x):
    return sg.sin(x), sg.sum(x * x)


JACOBIAN_CASES = {
    # name: (f, primals, argnums, torch reference function or None for f itself)
    "layer": (layer, lambda: [RNG.standard_normal((3, 2)), RNG.standard_normal(2),
                              RNG.standard_normal(3)], (0, 1, 2)),
    "softmax_matrix": (lambda X: sg.softmax(X, axis=1), lambda: [RNG.standard_normal((2, 3))], 0),
    "scalar_in": (lambda t, v: sg.sin(t * v), lambda: [np.array(0.4), RNG.standard_normal(3)],
                  (0, 1)),
    "scalar_out": (lambda x: sg.sum(x ** 3), lambda: [RNG.standard_normal(4)], 0),
    "matmul": (lambda A, B: A @ B, lambda: [RNG.standard_normal((2, 3)),
                                           RNG.standard_normal((3, 4))], (0, 1)),
    "cumsum": (lambda x: sg.cumsum(x * x, 0), lambda: [RNG.standard_normal(4)], 0),
    "outer_dot": (lambda x, y: sg.outer(x, y) * sg.dot(x, y),
                  lambda: [RNG.standard_normal(3), RNG.standard_normal(3)], (0, 1)),
    "trace_diag": (lambda A: sg.diag(sg.diagonal(A)) * sg.trace(A),
                   lambda: [RNG.standard_normal((3, 3))], 0),
    "solve": (lambda A, b: sg.solve(A, b), lambda: [spd(3), RNG.standard_normal(3)], (0, 1)),
    "solve_matrix": (lambda A, B: sg.solve(A, B), lambda: [spd(3), RNG.standard_normal((3, 2))],
                     (0, 1)),
    "inverse": (lambda A: sg.inverse(A), lambda: [spd(3)], 0),
    "slices": (lambda x: x[1:] * x[:-1], lambda: [RNG.standard_normal(5)], 0),
    "reductions": (lambda X: sg.amax(X, axis=1) + sg.prod(X, axis=1) + sg.var(X, axis=1),
                   lambda: [RNG.standard_normal((3, 4))], 0),
    "concat": (lambda x, y: sg.concatenate([sg.exp(x), y * y]),
               lambda: [RNG.standard_normal(2), RNG.standard_normal(3)], (0, 1)),
}


@pytest.mark.parametrize("name", sorted(JACOBIAN_CASES))
@pytest.mark.parametrize("mode", ["reverse", "forward", "auto"])
def test_jacobian_matches_torch_autograd_functional_jacobian(name, mode):
    f, make, argnums = JACOBIAN_CASES[name]
    arrays = make()
    tensors = [T(a) for a in arrays]
    nums = (argnums,) if isinstance(argnums, int) else argnums
    ref = torch.autograd.functional.jacobian(f, tuple(tensors))
    ours = sg.jacobian(f, *tensors, argnums=argnums, mode=mode)
    ours = (ours,) if isinstance(argnums, int) else ours
    for k, got in zip(nums, ours):
        close(got, ref[k])
    ours_np = sg.jacobian(f, *arrays, argnums=argnums, mode=mode)
    ours_np = (ours_np,) if isinstance(argnums, int) else ours_np
    for k, got in zip(nums, ours_np):
        assert isinstance(got, np.ndarray)
        close(got, ref[k])


def test_jacobian_of_several_outputs_is_nested_like_torch_func():
    x = T(RNG.standard_normal(3))
    ours = sg.jacobian(pair, x)
    ref = torch.func.jacrev(lambda x: (torch.sin(x), (x * x).sum()))(x)
    assert isinstance(ours, tuple) and len(ours) == 2
    for o, r in zip(ours, ref):
        close(o, r)
    ours = sg.jacobian(pair, x, argnums=(0,))
    assert isinstance(ours[0], tuple) and len(ours[0]) == 1


def test_jacobian_keeps_torch_dtype():
    x = torch.randn(3, dtype=torch.float32)
    J = sg.jacobian(sg.tanh, x)
    assert J.dtype == torch.float32 and J.shape == (3, 3)
    close(J.double(), torch.autograd.functional.jacobian(torch.tanh, x).double(), rtol=1e-6)


def test_jacobian_chooses_the_mode_by_shape():
    wide = sg.jacobian(lambda x: sg.sum(x * x), shapes={"x": (5,)})
    tall = sg.jacobian(lambda t: t * sg.const(1.0, (5,)), shapes={"t": ()})
    square = sg.jacobian(sg.sin, shapes={"x": ("n",)})
    sym_tall = sg.jacobian(lambda W, x: W @ x, wrt="x", shapes={"W": ("m", "n"), "x": ("n",)})
    assert (wide.mode, tall.mode, square.mode) == ("reverse", "forward", "reverse")
    assert sym_tall.mode == "reverse"         # m vs n is undecidable: reverse mode
    forced = sg.jacobian(lambda x: sg.sum(x * x), shapes={"x": (5,)}, mode="forward")
    assert forced.mode == "forward"


def test_forward_mode_uses_the_jvp_rules_not_the_vjps(monkeypatch):
    def no_vjp(self, node, i, grad):
        raise AssertionError(f"VJP of {self.name} used in forward mode")

    monkeypatch.setattr(Rule, "apply_vjp", no_vjp)
    x = T(RNG.standard_normal(3))
    _, t = sg.jvp(lambda x: sg.exp(sg.sin(x)) * x, (x,), (torch.ones(3, dtype=torch.float64),))
    _, r = torch.func.jvp(lambda x: torch.exp(torch.sin(x)) * x, (x,), (torch.ones(3),))
    close(t, r)
    close(sg.jacobian(sg.tanh, x, mode="forward"),
          torch.autograd.functional.jacobian(torch.tanh, x))
    with pytest.raises(AssertionError, match="VJP of"):
        sg.jacobian(sg.tanh, x, mode="reverse")


def test_jacobian_through_an_op_without_batching_rule(monkeypatch):
    """Concrete sizes: the op runs once per basis vector; symbolic sizes: a clear error.
    (The JVP of cumsum is the cumsum of the tangent, so forward mode batches it.)"""
    monkeypatch.setattr(sg.cumsum.opdef, "batch", None)
    X = T(RNG.standard_normal((2, 3)))
    f = lambda X: sg.cumsum(sg.sin(X), 1)  # noqa: E731
    ref = torch.autograd.functional.jacobian(f, X)
    close(sg.jacobian(f, X, mode="forward"), ref)
    close(sg.jacobian(f, X.numpy(), mode="forward"), ref)
    with pytest.raises(batching.BatchingError, match=r"op 'cumsum' \(shape \(m, n\)\).*concrete"):
        sg.jacobian(f, shapes={"X": ("m", "n")}, mode="forward")


# ----- vjp, jvp, hvp -----------------------------------------------------------------------

def test_vjp_matches_torch_func_vjp():
    W, x, b = (T(a) for a in (RNG.standard_normal((3, 2)), RNG.standard_normal(2),
                               RNG.standard_normal(3)))
    v = T(RNG.standard_normal(3))
    out, fn = sg.vjp(layer, W, x, b)
    ref_out, ref_fn = torch.func.vjp(layer, W, x, b)
    close(out, ref_out)
    grads = fn(v)
    assert isinstance(grads, tuple) and len(grads) == 3
    for g, r in zip(grads, ref_fn(v)):
        close(g, r)
    out_np, fn_np = sg.vjp(layer, W.numpy(), x.numpy(), b.numpy())
    for g, r in zip(fn_np(v.numpy()), ref_fn(v)):
        assert isinstance(g, np.ndarray)
        close(g, r)


def test_vjp_of_several_outputs_and_unused_primal():
    x, y = T(RNG.standard_normal(3)), T(RNG.standard_normal(2))
    out, fn = sg.vjp(lambda x, y: pair(x), x, y)
    ct = (T(RNG.standard_normal(3)), T(1.5))
    gx, gy = fn(ct)
    _, ref_fn = torch.func.vjp(lambda x, y: (torch.sin(x), (x * x).sum()), x, y)
    rx, ry = ref_fn(ct)
    close(gx, rx)
    close(gy, ry)                  # zeros of y's shape, as torch.func gives


def test_jvp_matches_torch_func_jvp():
    prim = tuple(T(a) for a in (RNG.standard_normal((3, 2)), RNG.standard_normal(2),
                                 RNG.standard_normal(3)))
    tans = tuple(T(RNG.standard_normal(p.shape)) for p in prim)
    out, t = sg.jvp(layer, prim, tans)
    ref_out, ref_t = torch.func.jvp(layer, prim, tans)
    close(out, ref_out)
    close(t, ref_t)
    out2, t2 = sg.jvp(pair, (prim[1],), (tans[1],))
    ref2 = torch.func.jvp(lambda x: (torch.sin(x), (x * x).sum()), (prim[1],), (tans[1],))
    for o, r in zip(out2 + t2, ref2[0] + ref2[1]):
        close(o, r)


def test_hvp_matches_torch_autograd_functional_hvp():
    prim = tuple(T(a) for a in (RNG.standard_normal((3, 2)), RNG.standard_normal(2),
                                 RNG.standard_normal(3)))
    tans = tuple(T(RNG.standard_normal(p.shape)) for p in prim)
    out, hv = sg.hvp(tanh_layer, prim, tans)
    ref_out, ref_hv = torch.autograd.functional.hvp(tanh_layer, prim, tans)
    close(out, ref_out)
    for h, r in zip(hv, ref_hv):
        close(h, r)
    x, v = RNG.standard_normal(5), RNG.standard_normal(5)
    _, h = sg.hvp(rosenbrock, x, v)
    _, r = torch.autograd.functional.hvp(rosenbrock, T(x), T(v))
    assert isinstance(h, np.ndarray)
    close(h, r)


def test_has_aux():
    x = T(RNG.standard_normal(3))

    def f(x):
        y = sg.sin(x)
        return sg.sum(y), y

    J, aux = sg.jacobian(f, x, has_aux=True)
    close(J, torch.cos(x))
    close(aux, torch.sin(x))
    out, fn, aux = sg.vjp(f, x, has_aux=True)
    close(fn(T(2.0))[0], 2 * torch.cos(x))
    out, t, aux = sg.jvp(f, (x,), (torch.ones(3, dtype=torch.float64),), has_aux=True)
    close(t, torch.cos(x).sum())


# ----- symbolic in, symbolic out --------------------------------------------------------------

def test_symbolic_primals_give_symbolic_results_that_compile():
    W, x, b = sg.symbol("W", ("m", "n")), sg.symbol("x", ("n",)), sg.symbol("b", ("m",))
    J = sg.jacobian(layer, W, x, b, argnums=1)
    H = sg.hessian(tanh_layer, W, x, b, argnums=1)
    out, fn = sg.vjp(layer, W, x, b)
    v = sg.symbol("v", ("m",))
    gW, gx, gb = fn(v)
    _, tangent = sg.jvp(layer, (W, x, b), (sg.const(0.0, W.shape), sg.const(1.0, x.shape), b))
    assert isinstance(J, sg.Tensor) and J.shape == (W.shape[0], x.shape[0])
    assert H.shape == (x.shape[0], x.shape[0]) and gW.shape == W.shape
    nW, nx, nb, nv = (RNG.standard_normal(s) for s in ((3, 2), (2,), (3,), (3,)))
    tW, tx, tb, tv = (T(a) for a in (nW, nx, nb, nv))
    fns = compile_function([J, H, gW, gx, gb, tangent], [W, x, b, v], "numpy",
                           zero_shapes=[J.shape, H.shape, W.shape, x.shape, b.shape, (3,)])
    got = fns(nW, nx, nb, nv)
    close(got[0], torch.autograd.functional.jacobian(lambda x: layer(tW, x, tb), tx))
    close(got[1], torch.autograd.functional.hessian(lambda x: tanh_layer(tW, x, tb), tx))
    _, ref_fn = torch.func.vjp(layer, tW, tx, tb)
    for g, r in zip(got[2:5], ref_fn(tv)):
        close(g, r)
    _, ref_t = torch.func.jvp(layer, (tW, tx, tb), (torch.zeros(3, 2, dtype=torch.float64),
                                                   torch.ones(2, dtype=torch.float64), tb))
    close(got[5], ref_t)


def test_symbolic_results_are_differentiable_again():
    x = sg.symbol("x", (3,))
    g = sg.jacobian(lambda x: sg.sum(sg.sin(x) * x), x)        # a gradient
    H1 = sg.jacobian(lambda y: g, x)                            # g closes over x: constant
    assert sg.grad(sg.sum(H1), [x], allow_unused=True)[0] is None
    (dg,) = sg.grad(sg.sum(g), [x])                              # g itself is differentiable
    fn = compile_function([dg], [x], "numpy", zero_shapes=[(3,)])
    xs = RNG.standard_normal(3)
    close(fn(xs)[0], -np.sin(xs) * xs + 2 * np.cos(xs))


def test_closed_over_primal_is_a_constant_like_torch_func():
    x = sg.symbol("x", (3,))
    J = sg.jacobian(lambda y: y * x, x)
    xs = RNG.standard_normal(3)
    got = compile_function([J], [x], "numpy", zero_shapes=[(3, 3)])(xs)[0]
    tx = T(xs)
    close(got, torch.func.jacrev(lambda y: y * tx)(tx))


def test_non_leaf_symbolic_primal():
    s = sg.symbol("s", (2,))
    J = sg.jacobian(sg.tanh, sg.sin(s))
    xs = RNG.standard_normal(2)
    got = compile_function([J], [s], "numpy", zero_shapes=[(2, 2)])(xs)[0]
    close(got, np.diag(1 - np.tanh(np.sin(xs)) ** 2))


# ----- Jacobian and Hessian objects ------------------------------------------------------------

LAYER_SHAPES = {"W": ("m", "n"), "x": ("n",), "b": ("m",)}


def test_hessian_of_a_tanh_layer_prints_in_matrix_form():
    H = sg.hessian(tanh_layer, wrt="x", shapes=LAYER_SHAPES)
    text = str(H)
    first = text.splitlines()[0]
    assert first.startswith("d²tanh_layer/dx² = −2 Wᵀ diag(") and "W    [shape (n, n)]" in first
    assert "tanh(W x + b)" in text
    assert set(H.formulas) == {"x"} and isinstance(H.formulas["x"], sympy.Basic)
    tex = H.latex()
    assert r"\frac{\partial^2 tanh_{layer}}{\partial x^2}" in tex or r"\partial^2" in tex
    assert "W^{T}" in tex


def test_hessian_of_logistic_regression_prints_in_matrix_form():
    H = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "X": ("N", "d"), "y": ("N",)})
    first = str(H).splitlines()[0]
    assert first.startswith("d²logreg/dw² = (1/N) Xᵀ diag(")
    assert first.endswith("X    [shape (d, d)]")


@pytest.mark.parametrize("sizes", [(3, 2), (2, 4)])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_hessian_object_compiles_for_any_sizes(sizes, backend):
    H = sg.hessian(tanh_layer, shapes=LAYER_SHAPES)
    m, n = sizes
    arrays = [RNG.standard_normal((m, n)), RNG.standard_normal(n), RNG.standard_normal(m)]
    ref = torch.autograd.functional.hessian(tanh_layer, tuple(T(a) for a in arrays))
    args = arrays if backend == "numpy" else [T(a) for a in arrays]
    got = H.compile(backend)(*args)             # torch.func-style structure, as H(*args)
    assert len(got) == 3 and all(len(row) == 3 for row in got)
    for i in range(3):
        for j in range(3):
            close(got[i][j], ref[i][j])
    nested = H(*args)
    close(nested[1][2], ref[1][2])
    assert [b.label for b in H._blocks()][:2] == ["d²tanh_layer/dW²", "d²tanh_layer/dWdx"]


def test_hessian_source_is_standalone_and_runs():
    H = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "X": ("N", "d"), "y": ("N",)})
    src = H.source("numpy")
    assert "symgrad" not in src
    ns = {}
    exec(compile(src, "<hessian>", "exec"), ns)  # noqa: S102 - our generated code
    w, X, y = RNG.standard_normal(3), RNG.standard_normal((6, 3)), RNG.choice([-1.0, 1.0], 6)
    got = ns["hessian_logreg"](w, X, y)      # one block: the block itself, as compile()
    ref = torch.autograd.functional.hessian(lambda w: logreg(w, T(X), T(y)), T(w))
    close(got, ref)


def test_hessian_explicit_equals_sympy_hessian():
    H = sg.hessian(tanh_layer, wrt="x", shapes=LAYER_SHAPES)
    ex = H.explicit(m=2, n=2)["x"]
    value = H.explicit_value(m=2, n=2)
    xs = sorted((s for s in value.free_symbols if s.name.startswith("x_")), key=lambda s: s.name)
    want = sympy.hessian(value, xs)
    rng = np.random.default_rng(3)
    subs = {s: rng.standard_normal() for s in value.free_symbols}
    got = np.array(sympy.Matrix(ex).subs(subs).evalf().tolist(), dtype=float)
    np.testing.assert_allclose(got, np.array(want.subs(subs).evalf().tolist(), dtype=float),
                               rtol=1e-10)


def test_jacobian_object_views():
    J = sg.jacobian(layer, wrt="x", shapes=LAYER_SHAPES)
    assert str(J) == "dlayer/dx = diag(𝟙 − tanh(W x + b)∘²) W    [shape (m, n)]"
    assert J.mode == "reverse" and repr(J).startswith("<Jacobian of layer(W: (m, n)")
    prog = J.program()
    assert prog.startswith("# inputs: W(m, n), x(n,), b(m,)") and "dlayer/dx = " in prog
    W, x, b = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal(3)
    ref = torch.autograd.functional.jacobian(lambda x: layer(T(W), x, T(b)), T(x))
    close(J.compile("numpy")(W, x, b), ref)
    close(J(T(W), T(x), T(b)), ref)
    value, jx = J.compile("torch", with_value=True)(T(W), T(x), T(b))
    close(jx, ref)
    close(value, layer(T(W), T(x), T(b)))
    ns = {}
    exec(compile(J.source("torch"), "<jacobian>", "exec"), ns)  # noqa: S102
    close(ns["jacobian_layer"](T(W), T(x), T(b)), ref)


def test_jacobian_object_of_several_outputs():
    J = sg.jacobian(pair, shapes={"x": ("n",)})
    assert list(J.formulas) == [(0, "x"), (1, "x")]
    assert [line.split(" = ")[0] for line in str(J).splitlines()[:2]] == \
        ["dpair[0]/dx", "dpair[1]/dx"]
    x = RNG.standard_normal(4)
    j0, j1 = J(x)
    close(j0, np.diag(np.cos(x)))
    close(j1, 2 * x)
    with pytest.raises(sg.ArgumentError, match="several outputs"):
        J.compile("numpy", with_value=True)


def test_object_of_scalars_prints_sympy_formulas():
    H = sg.hessian(scalars)
    x, y = sympy.symbols("x y", real=True)
    f = sympy.sin(x) * y + x ** 2
    assert set(H.formulas) == {("x", "x"), ("x", "y"), ("y", "x"), ("y", "y")}
    for (a, b), e in H.formulas.items():
        want = sympy.diff(f, sympy.Symbol(a, real=True), sympy.Symbol(b, real=True))
        assert sympy.simplify(e - want) == 0
    assert str(H).splitlines()[0] == "d²scalars/dx² = -y*sin(x) + 2"


# ----- gradients of gradients with the torch.autograd-style grad API ----------------------

A0 = np.array([0.4605, 0.4061, 0.9422, 0.3946])
B0 = np.array([0.0850, 0.3296, 0.9888, 0.6494])


def simple(a, b):
    t = a + b
    return t * b


def test_gradients_of_gradients_match_torch_create_graph():
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    L0 = simple(a, b).sum()
    da, db = sg.grad(L0, [a, b], create_graph=True)
    L1 = (da * da + db * db).sum()
    dda, ddb = sg.grad(L1, [a, b])
    ta, tb = (torch.tensor(v, requires_grad=True) for v in (A0, B0))
    r0 = torch.autograd.grad(simple(ta, tb).sum(), [ta, tb], create_graph=True)
    r1 = torch.autograd.grad((r0[0] * r0[0] + r0[1] * r0[1]).sum(), [ta, tb])
    for backend in ("numpy", "torch"):
        got = compile_function([da, db, dda, ddb], [a, b], backend, zero_shapes=[(4,)] * 4)(
            A0, B0)
        for g, r in zip(got, list(r0) + list(r1)):
            close(g, r)


def test_grad_with_several_outputs_and_grad_outputs():
    x, y = sg.symbol("x", (3,)), sg.symbol("y", (3,))
    o1, o2 = sg.sin(x) * y, sg.sum(x * x)
    v = sg.symbol("v", (3,))
    gx, gy = sg.grad([o1, o2], [x, y], grad_outputs=[v, None])
    xs, ys, vs = (RNG.standard_normal(3) for _ in range(3))
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (xs, ys))
    ref = torch.autograd.grad([torch.sin(tx) * ty, (tx * tx).sum()], [tx, ty],
                              grad_outputs=[T(vs), None])
    got = compile_function([gx, gy], [x, y, v], "numpy", zero_shapes=[(3,), (3,)])(xs, ys, vs)
    for g, r in zip(got, ref):
        close(g, r)


# ----- no_grad, detach, stop_gradient --------------------------------------------------------

def test_no_grad_values_are_constants_for_differentiation():
    x = sg.symbol("x", (3,))
    with sg.no_grad():
        assert not sg.is_grad_enabled()
        y = x * 2
    assert sg.is_grad_enabled() and y.grad_fn is None
    z = sg.sum(y * sg.sin(x))
    (gx,) = sg.grad(z, [x])
    xs = RNG.standard_normal(3)
    tx = torch.tensor(xs, requires_grad=True)
    with torch.no_grad():
        ty = tx * 2
    (ref,) = torch.autograd.grad((ty * torch.sin(tx)).sum(), [tx])
    close(compile_function([gx], [x], "numpy", zero_shapes=[(3,)])(xs)[0], ref)


def test_no_grad_decorator_enable_grad_and_torch_mode():
    x = sg.symbol("x")

    @sg.no_grad()
    def f(x):
        assert not torch.is_grad_enabled()
        with sg.enable_grad():
            inner = sg.sin(x)
        return inner, sg.cos(x)

    inner, outer = f(x)
    assert inner.grad_fn is not None and outer.grad_fn is None
    assert torch.is_grad_enabled() and sg.is_grad_enabled()
    with pytest.raises(ValueError):
        with sg.no_grad():
            raise ValueError("restored on error")
    assert sg.is_grad_enabled() and torch.is_grad_enabled()


def test_transforms_inside_no_grad_still_differentiate():
    x = T(RNG.standard_normal(3))
    with sg.no_grad():
        J = sg.jacobian(sg.tanh, x)
        H = sg.hessian(lambda x: sg.sum(sg.sin(x)), x)
    close(J, torch.diag(1 - torch.tanh(x) ** 2))
    close(H, torch.diag(-torch.sin(x)))


def test_requires_grad_like_torch():
    x = sg.symbol("x", (2, 2))
    with sg.no_grad():
        y = x * 2
    assert x.requires_grad and (x + 2).requires_grad
    assert not y.requires_grad and not x.detach().requires_grad
    assert not (x > 0).requires_grad and not sg.const(1.0).requires_grad


def test_grad_fn_inside_no_grad_still_differentiates():
    with sg.no_grad():
        g = sg.grad_fn(lambda x: x ** 3)
    assert g.compile("numpy")(2.0)[0] == pytest.approx(12.0)


@pytest.mark.parametrize("stop", [sg.detach, sg.stop_gradient, lambda x: x.detach()])
def test_detach_matches_torch(stop):
    x = sg.symbol("x", (3,))
    (gx,) = sg.grad(sg.sum(x * stop(x) ** 2), [x])
    with pytest.raises(sg.SymgradError, match="not have been used"):   # torch raises too
        sg.grad(sg.sum(gx), [x])
    (hx,) = sg.grad(sg.sum(gx), [x], allow_unused=True)
    xs = RNG.standard_normal(3)
    tx = torch.tensor(xs, requires_grad=True)
    (r1,) = torch.autograd.grad((tx * tx.detach() ** 2).sum(), [tx], create_graph=True)
    got = compile_function([gx], [x], "numpy", zero_shapes=[(3,)])(xs)[0]
    close(got, r1)
    assert r1.grad_fn is None and hx is None       # no second-order path, as in torch


# ----- errors ----------------------------------------------------------------------------------

def test_jvp_tangent_of_the_wrong_shape_names_both_shapes():
    with pytest.raises(sg.ShapeError, match=r"tangents\[0\] has shape \(2,\) but must have "
                                            r"the shape \(3,\) of primals\[0\] \(x\)"):
        sg.jvp(lambda x: sg.sin(x), (np.ones(3),), (np.ones(2),))


def test_jvp_count_mismatch():
    with pytest.raises(sg.SymgradError, match=r"2 primal\(s\) but 1 tangent"):
        sg.jvp(lambda x, y: x * y, (1.0, 2.0), (1.0,))


def test_vjp_cotangent_of_the_wrong_shape_names_both_shapes():
    _, fn = sg.vjp(lambda x: sg.sin(x), np.ones(3))
    with pytest.raises(sg.ShapeError, match=r"cotangents\[0\] has shape \(4,\) but must have "
                                            r"the shape \(3,\) of output 0"):
        fn(np.ones(4))
    with pytest.raises(sg.SymgradError, match="structure of the output"):
        fn((np.ones(3), np.ones(3)))


def test_hvp_needs_a_scalar_output():
    with pytest.raises(sg.NonScalarOutputError, match=r"shape \(3,\).*sg.hessian"):
        sg.hvp(sg.sin, np.ones(3), np.ones(3))


@pytest.mark.parametrize("kwargs, words", [
    ({"argnums": 2}, "argnums=2 is out of range for 1 primal"),
    ({"argnums": "x"}, "argnums must be ints"),
    ({"argnums": 0, "wrt": 0}, "argnums or wrt, not both"),
    ({"mode": "sideways"}, "mode must be 'auto', 'reverse' or 'forward'"),
    ({"shapes": {"x": (3,)}}, "shapes= is for the symbolic object"),
])
def test_jacobian_argument_errors(kwargs, words):
    with pytest.raises(sg.SymgradError, match=words):
        sg.jacobian(sg.sin, np.ones(3), **kwargs)


def test_primal_of_an_unsupported_kind():
    with pytest.raises(sg.SymgradError, match=r"primal 0 \(x\) is a str"):
        sg.jacobian(lambda x: x, "abc")


def test_vjp_without_primals_points_to_the_object():
    with pytest.raises(sg.SymgradError, match=r"needs primals.*sg.jacobian\(f, shapes="):
        sg.vjp(sg.sin)


def test_has_aux_needs_a_pair():
    with pytest.raises(sg.SymgradError, match=r"has_aux=True needs f to return a pair"):
        sg.jacobian(sg.sin, np.ones(2), has_aux=True)


def test_object_called_with_the_wrong_arguments():
    J = sg.jacobian(layer, wrt="x", shapes=LAYER_SHAPES)
    with pytest.raises(sg.SymgradError, match=r"takes 3 argument\(s\) \(W, x, b\), got 1"):
        J(np.ones(2))
    with pytest.raises(sg.ArgumentError, match=r"argument x must have shape \(n,\)"):
        J(np.ones((3, 2)), np.ones((2, 2)), np.ones(3))


def test_no_sympy_traceback_in_transform_errors():
    for call in (lambda: sg.jvp(sg.sin, (np.ones(3),), (np.ones(2),)),
                 lambda: sg.hvp(sg.sin, np.ones(3), np.ones(3))):
        with pytest.raises(sg.SymgradError) as e:
            call()
        assert "sympy" not in str(e.value).lower()


def test_hessian_source_returns_the_nested_layout_of_compile():
    H = sg.hessian(lambda x, y: sg.sum(x * y) ** 2, shapes={"x": (2,), "y": (2,)})
    namespace = {}
    exec(H.source(), namespace)      # noqa: S102 - our own generated code
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    got, want = namespace["hessian_f"](x, y), H.compile()(x, y)
    assert len(got) == 2 and all(len(row) == 2 for row in got)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(got[i][j], want[i][j])


def test_transforms_keep_the_primals_float_dtype_as_compiled_gradients_do():
    """float32 primals give float32 results (README "dtype policy"), as grad_fn's
    compiled code and torch.func do; different float dtypes promote."""
    def f(x, w):
        return sg.sum(sg.sin(x) * w)
    x = np.array([0.5, 1.0, -2.0], dtype=np.float32)
    w = np.ones(3, np.float32)
    assert sg.jacobian(f, x, w).dtype == np.float32
    assert sg.hessian(f, x, w).dtype == np.float32
    _, vjp_fn = sg.vjp(f, x, w)
    assert [g.dtype for g in vjp_fn(np.float32(1.0))] == [np.float32] * 2
    assert [np.asarray(v).dtype for v in sg.jvp(f, (x, w), (x, w))] == [np.float32] * 2
    assert sg.hvp(f, (x, w), (x, w))[1][0].dtype == np.float32
    assert sg.hessian(f, x.astype(np.float64), w).dtype == np.float64
    a = torch.tensor([0.5, 1.0, -2.0], dtype=torch.float32)
    b = torch.ones(3, dtype=torch.float64)
    want = torch.func.jacrev(lambda x, w: (torch.sin(x) * w).sum(), argnums=1)(a, b)
    got = sg.jacobian(f, a, b, argnums=1)
    assert got.dtype == want.dtype == torch.float64
    torch.testing.assert_close(got, want)


SYMBOLIC_SIZE_HESSIANS = {
    "cholesky-solves": lambda K, b: (torch.linalg.solve(torch.linalg.cholesky(K), b) ** 2).sum()
    + (torch.linalg.solve(torch.tril(K).T, b) ** 3).sum(),
    "triu-tril": lambda K, b: ((0.1 * torch.triu(K, 1)) @ b).sum() + (torch.tril(K, -1) ** 3).sum(),
    "logdet-cholesky": lambda K, b: torch.log(torch.diagonal(torch.linalg.cholesky(K))).sum()
    * (b * b).sum(),
    "matrix_exp": lambda K, b: (torch.linalg.matrix_exp(0.2 * K) @ b).pow(2).sum(),
}


@pytest.mark.parametrize("name", sorted(SYMBOLIC_SIZE_HESSIANS))
@pytest.mark.parametrize("wrt", ["K", "b"])
def test_hessians_at_symbolic_sizes_through_matrix_ops(name, wrt):
    """Cholesky, triangular solves, tril/triu and matrix_exp batch over a leading axis, so
    Hessians need no concrete size; against torch.func.hessian, on numpy and torch."""
    f = SYMBOLIC_SIZE_HESSIANS[name]
    rng = np.random.default_rng(0)
    n = 4
    A = rng.normal(size=(n, n))
    K, b = A @ A.T + n * np.eye(n), rng.normal(size=n)
    H = sg.hessian(f, shapes={"K": ("n", "n"), "b": ("n",)}, wrt=wrt)
    want = torch.func.hessian(f, argnums=0 if wrt == "K" else 1)(torch.tensor(K),
                                                                    torch.tensor(b))
    np.testing.assert_allclose(H.compile("numpy")(K, b), want.numpy(), rtol=1e-9, atol=1e-12)
    got = H.compile("torch")(torch.tensor(K), torch.tensor(b))
    torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-12)


# ----- primals of other kinds, dtypes of tangents, mistakes --------------------------------

def test_integer_primals_outside_argnums_index_as_in_torch_func():
    """An int or bool primal that is not differentiated is an input of its kind (ids, a
    mask), as torch.func passes non-differentiated arguments on: it can index."""
    x = T([0.5, -1.0, 2.0])
    idx = torch.tensor([0, 2])

    def pick(x, i):
        return x[i] * x[i]
    close(sg.jacobian(pick, x, idx), torch.func.jacrev(pick)(x, idx))
    close(sg.jacobian(pick, x.numpy(), idx.numpy()), torch.func.jacrev(pick)(x, idx))
    close(sg.hessian(lambda x, i: (x[i] ** 3).sum(), x, idx),
          torch.func.hessian(lambda x, i: (x[i] ** 3).sum())(x, idx))

    def row(x, k):
        return x[k] * x
    close(sg.jacobian(row, x, 1), torch.func.jacrev(row)(x, 1))

    def gathered(x, i):
        return torch.gather(x, 0, i).sum()
    close(sg.jacobian(gathered, x, idx), torch.func.jacrev(gathered)(x, idx))

    def masked(x, m):
        return torch.where(m, x * x, -x).sum()
    m = torch.tensor([True, False, True])
    close(sg.jacobian(masked, x, m), torch.func.jacrev(masked)(x, m))
    # differentiated int primals are still taken as floats
    close(sg.jacobian(lambda a: a * a, np.array([1, 2])), np.diag([2.0, 4.0]))


def test_tangents_and_cotangents_are_taken_in_their_primals_and_outputs_dtype():
    x32 = torch.tensor([0.3, 1.2])
    t64 = T([1.0, 2.0])
    out, tan = sg.jvp(torch.sin, (x32,), (t64,))
    want_out, want_tan = torch.func.jvp(torch.sin, (x32,), (t64.float(),))
    assert out.dtype == tan.dtype == torch.float32
    close(out, want_out, rtol=1e-6)
    close(tan, want_tan, rtol=1e-6)
    (g,) = sg.vjp(torch.sin, x32)[1](t64)
    (want,) = torch.func.vjp(torch.sin, x32)[1](t64.float())
    assert g.dtype == want.dtype == torch.float32
    close(g, want, rtol=1e-6)
    out, _ = sg.jvp(lambda a: a * a, (np.ones(2, np.float32),), (np.ones(2),))
    assert out.dtype == np.float32


@pytest.mark.parametrize("value, says", [
    (np.array([1 + 2j, 3 - 1j]), "is complex"),
    (torch.tensor([1 + 2j]), "is complex"),
    (1 + 2j, "is complex"),
    (np.array(["a", "b"]), "has dtype <U1"),
    (np.array([1.0, None]), "has dtype object"),
])
def test_complex_and_non_numeric_primals_are_argument_errors(value, says):
    for transform in (sg.jacobian, sg.hessian, sg.vjp):
        with pytest.raises(sg.ArgumentError, match=says):
            transform(lambda a: (a * a).sum(), value)
    with pytest.raises(sg.ArgumentError, match=says):
        sg.jvp(lambda a: a * a, (np.ones(2),), (value,))


def test_wrong_number_of_primals_and_symbolic_tangents_are_argument_errors():
    x = np.array([1.0, 2.0])
    with pytest.raises(sg.ArgumentError, match=r"f\(a\) cannot be called with 2 primal"):
        sg.jacobian(lambda a: a, x, x)
    with pytest.raises(sg.ArgumentError, match="missing a required argument: 'b'"):
        sg.hessian(lambda a, b: (a * b).sum(), x)
    with pytest.raises(sg.ArgumentError, match="symbolic Tensor but the primals are numbers"):
        sg.jvp(lambda a: a * 2, (x,), (sg.symbol("t", shape=(2,)),))
    with pytest.raises(sg.ArgumentError, match="another structure"):
        sg.vjp(lambda a: {"a": a, "b": a.sum()}, x)[1]({"b": 1.0, "a": np.ones(2)})


def test_grad_under_no_grad_is_differentiable_and_a_detached_output_is_unused():
    """torch.autograd.grad(create_graph=True) under no_grad gives gradients that
    differentiate again; an output built under no_grad does not reach the input."""
    a = sg.symbol("a", shape=(3,))
    out = sg.sum(a ** 3)
    with sg.no_grad():
        (da,) = sg.grad(out, a)
        with pytest.raises(sg.SymgradError, match="not have been used"):
            sg.grad(sg.sum(a ** 2), a)
    (dda,) = sg.grad(sg.sum(da), a)
    t = T([0.5, -1.0, 2.0]).requires_grad_()
    tout = (t ** 3).sum()
    with torch.no_grad():
        (dt,) = torch.autograd.grad(tout, t, create_graph=True)
        with pytest.raises(RuntimeError, match="does not require grad"):
            torch.autograd.grad((t ** 2).sum(), t)
    (ddt,) = torch.autograd.grad(dt.sum(), t)
    got = compile_function([dda], [a], "numpy", zero_shapes=[(3,)])(t.detach().numpy())[0]
    close(got, ddt)
