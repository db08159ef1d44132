"""Negative log-likelihood of a multivariate Gaussian, for any dimension n:
    ½ log det Σ + ½ (x − μ)ᵀ Σ⁻¹ (x − μ) + (n/2) log 2π
with gradients w.r.t. μ and Σ, written three ways: with ``solve``, with ``inverse`` and
with a Cholesky factor (Σ = L Lᵀ, log det Σ = 2 Σᵢ log Lᵢᵢ).

    python examples/gaussian_nll.py
"""
import math

import numpy as np

import symgrad as sg
from _verify import compare, finish


def constant(r):
    return 0.5 * r.shape[0] * math.log(2 * math.pi)


def nll_solve(S, mu, x):
    r = x - mu
    return 0.5 * sg.logdet(S) + 0.5 * sg.dot(r, sg.solve(S, r)) + constant(r)


def nll_inverse(S, mu, x):
    r = x - mu
    return 0.5 * sg.logdet(S) + 0.5 * r @ sg.inverse(S) @ r + constant(r)


def nll_cholesky(S, mu, x):
    L = sg.cholesky(S)
    z = sg.solve(L, x - mu)
    return sg.sum(sg.log(sg.diagonal(L))) + 0.5 * sg.sum(z * z) + constant(z)


def spd(name, shape, rng):
    if len(shape) == 2:
        a = rng.standard_normal(shape)
        return a @ a.T + shape[0] * np.eye(shape[0])
    return rng.standard_normal(shape)


shapes = {"S": ("n", "n"), "mu": ("n",), "x": ("n",)}
ok = True
for f in (nll_solve, nll_inverse, nll_cholesky):
    g = sg.grad_fn(f, shapes=shapes, wrt=["S", "mu"])
    print(f"{f.__name__}:")
    print(g)
    for n in (3, 5):
        rng = np.random.default_rng(n)
        args = [spd("S", (n, n), rng), rng.standard_normal(n), rng.standard_normal(n)]
        print(f" n = {n}:")
        ok &= compare(g, f, args)
    report = sg.check(f, shapes=shapes, wrt=["S", "mu"], dims={"n": 4}, sample=spd, order=2)
    print(report, "\n")
    ok &= report.ok
finish(ok, "Gaussian NLL gradients (logdet, solve, inverse, cholesky) match torch.autograd")
