"""Seed 000: the module ``b @ a @ x + c`` with symbolic sizes n, r, m, summed to a scalar.

symgrad gives the gradient *functions* dL/da, dL/db, dL/dc, dL/dx in matrix notation, for
every size at once, then compiles them and checks them against torch.autograd at two
different instantiations of the sizes.

    python examples/module_formulas.py
"""
import numpy as np

import symgrad as sg
from _verify import compare, finish


def L(a, b, c, x):
    return sg.sum(b @ a @ x + c)


shapes = {"a": ("r", "n"), "b": ("m", "r"), "c": ("m",), "x": ("n",)}
g = sg.grad_fn(L, shapes=shapes)
print("L = sum(b @ a @ x + c),  a: (r, n), b: (m, r), c: (m,), x: (n,)\n")
print(g)
print("\nLaTeX:\n" + g.latex())
print("\nstraight-line program:\n" + g.program())

ok = True
rng = np.random.default_rng(0)
for n, r, m in [(2, 1, 3), (5, 4, 2)]:
    print(f"\nn={n}, r={r}, m={m}:")
    args = [rng.standard_normal(s) for s in [(r, n), (m, r), (m,), (n,)]]
    ok &= compare(g, L, args)
report = sg.check(L, shapes=shapes, dims={"n": 3, "r": 2, "m": 4}, order=2)
print("\n" + str(report))
finish(ok and report.ok, "seed 000 module formulas in matrix form match torch.autograd")
