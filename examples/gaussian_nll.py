"""Negative log-likelihood of a multivariate Gaussian:
    ½ log det Σ + ½ (x − μ)ᵀ Σ⁻¹ (x − μ) + (n/2) log 2π
with gradients w.r.t. μ and Σ, once with ``solve`` and once with ``inverse``.

    python examples/gaussian_nll.py
"""
import math

import numpy as np

import symgrad as sg
from _verify import compare, finish

N = 3


def nll_solve(S, mu, x):
    r = x - mu
    return 0.5 * sg.logdet(S) + 0.5 * sg.dot(r, sg.solve(S, r)) + 0.5 * N * math.log(2 * math.pi)


def nll_inverse(S, mu, x):
    r = x - mu
    return 0.5 * sg.logdet(S) + 0.5 * r @ sg.inverse(S) @ r + 0.5 * N * math.log(2 * math.pi)


def spd(name, shape, rng):
    if len(shape) == 2:
        a = rng.standard_normal(shape)
        return a @ a.T + shape[0] * np.eye(shape[0])
    return rng.standard_normal(shape)


shapes = {"S": (N, N), "mu": (N,), "x": (N,)}
rng = np.random.default_rng(3)
args = [spd("S", (N, N), rng), rng.standard_normal(N), rng.standard_normal(N)]
ok = True
for f in (nll_solve, nll_inverse):
    g = sg.grad_fn(f, shapes=shapes, wrt=["S", "mu"])
    print(f"{f.__name__}:")
    print(g)
    ok &= compare(g, f, args)
    report = sg.check(f, shapes=shapes, wrt=["S", "mu"], sample=spd, order=2)
    print(report, "\n")
    ok &= report.ok
finish(ok, "Gaussian NLL gradients (logdet, solve, inverse) match torch.autograd")
