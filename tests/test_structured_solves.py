"""Solves against matrices triangular by construction (Cholesky factors, tril/triu and their
transposes) become triangular solves: sg.solve rewrites to solve_triangular, torch's
cholesky_solve with a Cholesky factor needs no second factorisation, NumPy code calls
LAPACK's triangular solve (SciPy) with NumPy's general solve as the fallback. Gradients
are checked against torch.autograd at orders 1 and 2."""
import math

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core.graph import topo_order
from symgrad.core.structure import triangle

RNG = np.random.default_rng(3)
N = 5


def spd(n=N):
    a = RNG.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def ops_of(node):
    return {n.op for n in topo_order([node])}


def test_structure_of_factors_and_triangles():
    K = sg.symbol("K", (N, N))
    L = sg.cholesky(K)
    assert triangle(L) == "lower"
    assert triangle(sg.transpose(L)) == "upper"
    assert triangle(sg.tril(K)) == "lower" and triangle(sg.tril(K, -1)) == "lower"
    assert triangle(sg.triu(K, 1)) == "upper" and triangle(sg.tril(K, 1)) is None
    assert triangle(K) is None and triangle(sg.transpose(K)) is None
    B = sg.symbol("B", (2, N, N))
    assert triangle(sg.transpose(sg.cholesky(B), (0, 2, 1))) == "upper"
    assert triangle(sg.transpose(sg.cholesky(B), (1, 0, 2))) is None


@pytest.mark.parametrize("build, upper", [
    (lambda K: sg.cholesky(K), False),
    (lambda K: sg.transpose(sg.cholesky(K)), True),
    (lambda K: sg.tril(K), False),
    (lambda K: sg.triu(K), True),
])
@pytest.mark.parametrize("vector", [True, False])
def test_solve_against_a_triangle_is_a_triangular_solve(build, upper, vector):
    K = sg.symbol("K", (N, N))
    b = sg.symbol("b", (N,) if vector else (N, 2))
    x = sg.solve(build(K), b)
    ops = ops_of(x)
    assert "solve_triangular" in ops and "solve" not in ops
    tri = [n for n in topo_order([x]) if n.op == "solve_triangular"][0]
    assert tri.attrs["upper"] is upper
    assert x.shape == b.shape


def test_a_general_solve_stays_general():
    K, b = sg.symbol("K", (N, N)), sg.symbol("b", (N,))
    assert "solve" in ops_of(sg.solve(K, b))
    assert "solve" in ops_of(sg.solve(sg.tril(K, 1), b))


def torch_reference(f, args, wrt):
    ts = [torch.tensor(a, requires_grad=i in wrt) for i, a in enumerate(args)]
    out = f(*ts)
    grads = torch.autograd.grad(out, [ts[i] for i in wrt], create_graph=True)
    return ts, grads


def sg_solve_nll(K, y):
    L = sg.cholesky(K)
    alpha = sg.solve(sg.transpose(L), sg.solve(L, y))
    return 0.5 * sg.sum(y * alpha) + sg.sum(sg.log(sg.diagonal(L)))


def torch_solve_nll(K, y):
    L = torch.linalg.cholesky(K)
    alpha = torch.linalg.solve(L.T, torch.linalg.solve(L, y))
    return 0.5 * (y * alpha).sum() + torch.log(torch.diagonal(L)).sum()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_gradient_and_hvp_through_rewritten_solves_match_torch(backend):
    K, y = spd(), RNG.normal(size=N)
    g = sg.grad_fn(sg_solve_nll, wrt="K", shapes={"K": (N, N), "y": (N,)})
    src = g.source(backend)
    assert "linalg.solve(" not in src.split("def grad_")[1]
    ts, (ref,) = torch_reference(torch_solve_nll, [K, y], [0])
    args = [K, y] if backend == "numpy" else [torch.tensor(K), torch.tensor(y)]
    (got,) = g.compile(backend)(*args)
    np.testing.assert_allclose(np.asarray(got), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    v = RNG.normal(size=(N, N))
    v = v + v.T     # a symmetric direction: cholesky reads one triangle, its gradient is symmetric
    _, hv = sg.hvp(lambda K: sg_solve_nll(K, y), (K,), (v,))
    (ref2,) = torch.autograd.grad((ref * torch.tensor(v)).sum(), ts[0])
    np.testing.assert_allclose(np.asarray(hv[0]), ref2.numpy(), rtol=1e-9, atol=1e-11)


def gp_nll(log_l, log_n, X, y):
    n = X.shape[0]
    sq = (X * X).sum(dim=1)
    D = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    K = torch.exp(-0.5 * D / torch.exp(2.0 * log_l)) \
        + torch.exp(2.0 * log_n) * torch.eye(n, dtype=X.dtype)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y[:, None], L)
    return 0.5 * (y[:, None] * alpha).sum() + torch.log(torch.diagonal(L)).sum() \
        + 0.5 * n * math.log(2 * math.pi)


def test_cholesky_solve_with_a_cholesky_factor_factorises_once():
    X, y = RNG.normal(size=(8, 2)), RNG.normal(size=8)
    g = sg.grad_fn(gp_nll, wrt=["log_l", "log_n"],
                   shapes={"log_l": (), "log_n": (), "X": ("N", "d"), "y": ("N",)})
    body = g.source("numpy").split("def grad_gp_nll")[1]
    assert body.count("cholesky(") == 1 and "numpy.linalg.solve(" not in body
    hyper = [np.array(0.3), np.array(-0.7)]
    ts, ref = torch_reference(gp_nll, hyper + [X, y], [0, 1])
    for backend in ("numpy", "torch"):
        args = hyper + [X, y] if backend == "numpy" else [torch.tensor(a) for a in hyper + [X, y]]
        got = g.compile(backend)(*args)
        np.testing.assert_allclose([float(v) for v in got], [float(r.detach()) for r in ref],
                                   rtol=1e-10)
    H = sg.hessian(lambda a, b: gp_nll(a, b, torch.tensor(X), torch.tensor(y)),
                   *[float(h) for h in hyper], argnums=(0, 1))
    ref_h = torch.autograd.functional.hessian(
        lambda a, b: gp_nll(a, b, torch.tensor(X), torch.tensor(y)),
        tuple(torch.tensor(float(h), dtype=torch.float64) for h in hyper))
    np.testing.assert_allclose(np.array(H, dtype=float), np.array(
        [[float(v) for v in row] for row in ref_h]), rtol=1e-9)


def test_cholesky_solve_against_an_input_keeps_torchs_gradient_over_all_of_L():
    L0 = np.linalg.cholesky(spd())
    b = RNG.normal(size=(N, 2))

    def f(L, b):
        return (torch.cholesky_solve(b, L) ** 2).sum()
    g = sg.grad_fn(f, wrt="L", shapes={"L": (N, N), "b": (N, 2)})
    _, (ref,) = torch_reference(f, [L0, b], [0])
    (got,) = g.compile()(L0, b)
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-9)
    assert np.abs(np.triu(got, 1)).max() > 0


def test_numpy_triangular_solve_without_scipy_falls_back_to_numpys_solve():
    K, y = spd(), RNG.normal(size=N)
    g = sg.grad_fn(sg_solve_nll, wrt="K", shapes={"K": (N, N), "y": (N,)})
    fn = g.compile("numpy")
    (with_scipy,) = fn(K, y)
    fn.__globals__["_SCIPY_TRIANGULAR"][:] = [None]   # as if SciPy were not installed
    (without,) = fn(K, y)
    np.testing.assert_allclose(without, with_scipy, rtol=1e-10)


def test_batched_triangular_solves_match_torch():
    A = np.stack([spd(), spd(), spd()])
    b = RNG.normal(size=(3, N, 2))

    def f(A, b):
        L = torch.linalg.cholesky(A)
        return (torch.linalg.solve_triangular(L, b, upper=False) ** 2).sum()
    g = sg.grad_fn(f, wrt="A", shapes={"A": (3, N, N), "b": (3, N, 2)})
    _, (ref,) = torch_reference(f, [A, b], [0])
    (got,) = g.compile()(A, b)
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-9, atol=1e-12)


def test_bounds_follow_the_ops_intervals():
    from symgrad.core.structure import bounds
    x = sg.symbol("x", ("n",))
    N = sg.symbol("X", ("N", "d")).shape[0]
    s = sg.sigmoid(x)
    assert bounds(s) == (0.0, 1.0)
    assert bounds(s * (1 - s) * (1 / N))[0] == 0.0
    assert bounds(sg.exp(x) - 1) == (-1.0, float("inf"))
    assert bounds(-sg.square(sg.tanh(x))) == (float("-inf"), 0.0)
    assert bounds(x * s) == (float("-inf"), float("inf"))
    assert bounds(sg.transpose(sg.reshape(sg.relu(x), (1, "n")))) == (0.0, float("inf"))
