"""Gaussian-process negative log marginal likelihood: its gradient w.r.t. the three
hyperparameters at N = 200, symgrad's compiled NumPy and torch code against torch eager
(issue 18, Build 5: solves against a Cholesky factor as triangular solves).

    nll(log_l, log_s, log_n, X, y) = ½ yᵀ K⁻¹ y + Σ log diag(L) + N/2 log 2π,
    K = s² exp(-D / (2 l²)) + n² I,  L = cholesky(K),  D the squared distances of X's rows

written once as PyTorch code (torch.linalg.cholesky, torch.cholesky_solve, the log-diagonal)
and traced by symgrad. Per-call medians of interleaved rounds in one process, float64, one
thread (pinned to one core where the OS allows); gradients checked against torch.autograd.

    python bench/gp.py            # N = 200
    python bench/gp.py --n 500
"""
import argparse
import math
import os
import statistics
import time

import numpy as np
import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)   # torch.eye and friends in float64, as symgrad


def nll(log_l, log_s, log_n, X, y):
    n = X.shape[0]
    sq = (X * X).sum(dim=1)
    D = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    K = torch.exp(2.0 * log_s) * torch.exp(-0.5 * D / torch.exp(2.0 * log_l)) \
        + torch.exp(2.0 * log_n) * torch.eye(n)
    L = torch.linalg.cholesky(K)
    alpha = torch.cholesky_solve(y[:, None], L)
    return 0.5 * (y[:, None] * alpha).sum() + torch.log(torch.diagonal(L)).sum() \
        + 0.5 * n * math.log(2 * math.pi)


def rounds(calls, seconds=0.03, n=21):
    """Median µs per call of each of ``calls`` over ``n`` interleaved rounds."""
    per = {}
    for name, fn in calls.items():
        fn()
        t = time.perf_counter()
        fn()
        per[name] = max(1, int(seconds / max(time.perf_counter() - t, 1e-7)))
    times = {name: [] for name in calls}
    for _ in range(n):
        for name, fn in calls.items():
            t = time.perf_counter()
            for _ in range(per[name]):
                fn()
            times[name].append((time.perf_counter() - t) / per[name] * 1e6)
    return {name: statistics.median(v) for name, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--source", action="store_true", help="print the generated NumPy code")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        try:
            allowed = sorted(os.sched_getaffinity(0))
            os.sched_setaffinity(0, {1 if 1 in allowed else allowed[-1]})
        except OSError:
            pass
    import symgrad as sg
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1)
    except ImportError:
        pass

    N, d = args.n, args.d
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, d))
    y = np.sin(X.sum(axis=1)) + 0.1 * rng.normal(size=N)
    hyper = [np.array(0.1), np.array(0.2), np.array(-1.0)]

    t0 = time.perf_counter()
    g = sg.grad_fn(nll, wrt=["log_l", "log_s", "log_n"],
                   shapes={"log_l": (), "log_s": (), "log_n": (), "X": ("N", "d"), "y": ("N",)})
    fn_np = g.compile("numpy")
    fn_np(*hyper, X, y)
    derive = time.perf_counter() - t0
    fn_t = g.compile("torch")
    if args.source:
        print(g.source("numpy"))

    th = [torch.tensor(float(h), dtype=torch.float64, requires_grad=True) for h in hyper]
    tX, ty = torch.tensor(X), torch.tensor(y)

    def eager():
        return torch.autograd.grad(nll(*th, tX, ty), th)

    ref = np.array([float(v) for v in eager()])
    targs = [torch.tensor(float(h), dtype=torch.float64) for h in hyper] + [tX, ty]
    got_np = np.array([float(v) for v in fn_np(*hyper, X, y)])
    got_t = np.array([float(v) for v in fn_t(*targs)])
    for name, got in (("numpy", got_np), ("torch", got_t)):
        err = np.max(np.abs(got - ref)) / np.max(np.abs(ref))
        print(f"symgrad {name}: max relative error vs torch.autograd {err:.1e}")
        assert err < 1e-9, (name, got, ref)

    us = rounds({"torch eager": eager, "symgrad numpy": lambda: fn_np(*hyper, X, y),
                 "symgrad torch": lambda: fn_t(*targs)})
    body = g.source("numpy").split("def grad_nll")[1]
    ops = {op: body.count(op) for op in
           ("_solve_triangular(", "numpy.linalg.solve(", "cholesky(")}
    print(f"GP negative log marginal likelihood gradient, N={N}, d={d}; float64, one thread; "
          f"load {os.getloadavg()[0]:.2f}; torch {torch.__version__}, NumPy {np.__version__}")
    print(f"symgrad derive (grad_fn + compile + first call) {derive:.3f} s; generated NumPy "
          f"calls: " + ", ".join(f"{k[:-1]} ×{v}" for k, v in ops.items()))
    base = us["torch eager"]
    for name, v in us.items():
        print(f"  {name:<16} {v:>10.1f} µs   torch eager / this = {base / v:.2f}×")


if __name__ == "__main__":
    main()
