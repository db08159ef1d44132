"""symgrad quickstart: gradient formulas, a gradient program and compiled code, checked
against torch.autograd.

    python examples/quickstart.py

Exits with status 1 if any compiled gradient disagrees with torch.autograd (float64).
"""
import sys

import numpy as np
import torch

import symgrad as sg

failures = []


def verify(label, ours, ref):
    """Compare one gradient (NumPy array, float or torch tensor) with torch's."""
    if isinstance(ours, torch.Tensor):
        ours = ours.detach().numpy()
    ours = np.asarray(ours, dtype=np.float64)
    ref = ref.detach().numpy()
    ok = ours.shape == ref.shape and np.allclose(ours, ref, rtol=1e-10, atol=1e-12)
    err = float(np.max(np.abs(ours - ref))) if ours.shape == ref.shape else float("nan")
    print(f"  {label:<24} shape {str(ref.shape):<8} max |symgrad - torch| = {err:.1e}"
          f"  {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


# ---------------------------------------------------------------------------------------
# 1. A scalar function of two scalars.
# ---------------------------------------------------------------------------------------
def f(x, y):
    return sg.sin(x) * y + x**2


section("1. f(x, y) = sin(x)*y + x**2")
g = sg.grad_fn(f)

print("print(g):")
print(g)
print()
print("g.value    =", g.value)
print("g.formulas =", g.formulas)
print()
print("g.latex():")
print(g.latex())
print()
print("g.program():")
print(g.program())

grad_np = g.compile("numpy")
grad_t = g.compile("torch")

# Reference: torch.autograd on float64 tensors. symgrad ops are polymorphic, so the very
# same f runs on torch tensors.
print()
print("compiled gradients vs torch.autograd:")
for x0, y0 in [(1.0, 2.0), (-0.7, 0.3), (2.5, -1.25)]:
    tx = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(y0, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(f(tx, ty), [tx, ty])

    gx, gy = grad_np(x0, y0)
    print(f" at x={x0}, y={y0}: numpy -> ({gx:.6f}, {gy:.6f})")
    verify("numpy  df/dx", gx, ref[0])
    verify("numpy  df/dy", gy, ref[1])

    tgx, tgy = grad_t(torch.tensor(x0, dtype=torch.float64), torch.tensor(y0, dtype=torch.float64))
    verify("torch  df/dx", tgx, ref[0])
    verify("torch  df/dy", tgy, ref[1])

# with_value=True returns (value, grads) from one call.
value, (gx, gy) = g.compile("numpy", with_value=True)(1.0, 2.0)
print(f" with_value=True at (1, 2): f = {value:.6f}, grads = ({gx:.6f}, {gy:.6f})")
if not np.isclose(value, np.sin(1.0) * 2.0 + 1.0):
    failures.append("with_value")


# ---------------------------------------------------------------------------------------
# 2. A tensor function with symbolic shapes.
# ---------------------------------------------------------------------------------------
def loss(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


SHAPES = {"W": ("m", "n"), "x": ("n",), "b": ("m",)}

section("2. loss(W, x, b) = sum(tanh(W @ x + b)),  W: (m, n), x: (n,), b: (m,)")
g = sg.grad_fn(loss, shapes=SHAPES)
print("print(g):")
print(g)
print()
print('g.source("numpy"):')
print(g.source("numpy"))

grad_np = g.compile("numpy")
grad_t = g.compile("torch")
rng = np.random.default_rng(0)

# One compiled function serves every size consistent with the symbolic dims.
for m, n in [(3, 2), (7, 5)]:
    W0 = rng.standard_normal((m, n))
    x0 = rng.standard_normal(n)
    b0 = rng.standard_normal(m)
    targs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (W0, x0, b0)]
    ref = torch.autograd.grad(loss(*targs), targs)

    print(f"compiled gradients vs torch.autograd at m={m}, n={n}:")
    ours_np = grad_np(W0, x0, b0)
    ours_t = grad_t(*[torch.tensor(a, dtype=torch.float64) for a in (W0, x0, b0)])
    for name, o_np, o_t, r in zip("Wxb", ours_np, ours_t, ref):
        verify(f"numpy  dloss/d{name}", o_np, r)
        verify(f"torch  dloss/d{name}", o_t, r)

# sg.check: numpy and torch backends, first and second order (Hessian-vector products),
# several random inputs; raises sg.CheckError on a mismatch.
print()
try:
    report = sg.check(loss, shapes=SHAPES, dims={"m": 3, "n": 2}, order=2)
    print(report)
except sg.CheckError as e:
    print("sg.check FAILED:", e)
    failures.append("sg.check")

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: quickstart gradients (numpy and torch backends) match torch.autograd")
