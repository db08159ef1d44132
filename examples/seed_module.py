"""Seed 000 end to end: the notebook's PyTorch module ``b @ a @ x + c``, summed, as
gradient *functions* instead of gradients at one point.

symgrad traces the module's own forward (its parameters a, b, c and the input x become
symbols with symbolic sizes n, r, m), prints the backward graph the way the notebook's
``print_graph(l.grad_fn)`` does, prints dL/da, dL/db, dL/dc in matrix notation, compiles
them to NumPy and PyTorch, and checks them against ``l.backward()`` on the real module at
two different sizes. Exits non-zero on any mismatch.

    python examples/seed_module.py
"""
import numpy as np
import torch
import torch.nn as nn

import symgrad as sg
from _verify import compare, finish


class CustomModule(nn.Module):
    def __init__(self, n, r, m):
        super().__init__()
        self.a = nn.Parameter(torch.randn(r, n))
        self.b = nn.Parameter(torch.randn(m, r))
        self.c = nn.Parameter(torch.randn(m))

    def forward(self, x):
        # (m,r) @ (r,n) @ (n) + (m)
        return self.b @ self.a @ x + self.c


torch.manual_seed(0)
module = CustomModule(n=2, r=1, m=3)
shapes = {"a": ("r", "n"), "b": ("m", "r"), "c": ("m",), "x": ("n",)}
g = sg.grad_fn(module, shapes=shapes, loss=torch.sum)

print("l = module(x).sum() with a: (r, n), b: (m, r), c: (m,), x: (n,)\n")
print("backward graph of l (as the notebook's print_graph(l.grad_fn)):")
sg.print_graph(g.output)
print("\ngradient functions, for every n, r, m:")
print(g)
print("\nLaTeX:\n" + g.latex())
print("\ngenerated PyTorch code:\n" + g.source("torch"))

ok = True
for n, r, m in [(2, 1, 3), (5, 4, 2)]:
    real = CustomModule(n, r, m).double()
    x = torch.randn(n, dtype=torch.float64)
    print(f"n={n}, r={r}, m={m}: against l.backward() on the real module")
    real.zero_grad()
    real(x).sum().backward()
    args = sg.module_function(real, shapes=shapes, loss=torch.sum).arguments(x)
    for backend in ("numpy", "torch"):
        call = [a.numpy() for a in args] if backend == "numpy" else args
        for name, ours, p in zip("abc", g.compile(backend)(*call), (real.a, real.b, real.c)):
            ours = np.asarray(ours)
            good = ours.shape == tuple(p.grad.shape) and np.allclose(ours, p.grad.numpy(),
                                                                    rtol=1e-10, atol=1e-12)
            ok &= good
            print(f"  dl/d{name} [{backend:5}] shape {str(ours.shape):<8} "
                  f"{'ok' if good else 'MISMATCH'}")
    print("  and against torch.autograd through torch.func.functional_call:")
    fn = sg.module_function(real, shapes=shapes, loss=torch.sum)
    ok &= compare(g, fn, [a.numpy() for a in args])

report = sg.check(module, shapes=shapes, loss=torch.sum, dims={"n": 3, "r": 2, "m": 4})
print("\n" + str(report))
finish(ok and report.ok, "seed 000's module: formulas for a, b, c match torch.autograd")
