"""Seed 003 ("Simple Grad") redone with symgrad.

The seed builds a tape-based reverse-mode autograd by hand and prints the straight-line
gradient program it records. Here the same three experiments use symgrad:

  1. simple(a, b) = (a + b) * b on 4-vectors, L0 = simple(a, b).sum():
     gradient formulas and the straight-line gradient program;
  2. the zero-gradient case loss = a*a, where the gradient w.r.t. b is None (never computed);
  3. gradients of gradients (the seed's ``run_gradients``):
     da, db = grad(L0, [a, b]); L1 = (da*da + db*db).sum(); dda, ddb = grad(L1, [a, b]).

Every compiled result is checked against torch.autograd in float64 on the seed's numbers.

    python examples/simple_grad.py
"""
import sys

import numpy as np
import sympy
import torch

import symgrad as sg
from symgrad.codegen import compile_function

# The numbers printed in the seed's run_gradients cell.
a_global = np.array([0.4605, 0.4061, 0.9422, 0.3946])
b_global = np.array([0.0850, 0.3296, 0.9888, 0.6494])

failures = []


def verify(label, ours, ref):
    if isinstance(ours, torch.Tensor):
        ours = ours.detach().numpy()
    ours = np.asarray(ours, dtype=np.float64)
    ref = ref.detach().numpy()
    ok = ours.shape == ref.shape and np.allclose(ours, ref, rtol=1e-10, atol=1e-12)
    print(f"  {label:<10} symgrad {np.array2string(ours, precision=4)}   "
          f"torch {np.array2string(ref, precision=4)}   {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def leaves():
    """Fresh float64 torch leaves holding the seed's numbers."""
    return (torch.tensor(a_global, dtype=torch.float64, requires_grad=True),
            torch.tensor(b_global, dtype=torch.float64, requires_grad=True))


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def simple(a, b):
    t = a + b
    return t * b


SHAPES = {"a": (4,), "b": (4,)}

# ---------------------------------------------------------------------------------------
section("1. L0 = simple(a, b).sum(),  simple(a, b) = (a + b) * b")


def L0(a, b):
    return simple(a, b).sum()


g = sg.grad_fn(L0, shapes=SHAPES)
print(g)
print()
print("straight-line program (forward, then gradient; cf. the seed's v0 = a + b ...):")
print(g.program())
print()
ta, tb = leaves()
ref = torch.autograd.grad(L0(ta, tb), [ta, tb])
da, db = g.compile("numpy")(a_global, b_global)
verify("dL0/da", da, ref[0])
verify("dL0/db", db, ref[1])
tda, tdb = g.compile("torch")(torch.tensor(a_global), torch.tensor(b_global))
verify("dL0/da[t]", tda, ref[0])
verify("dL0/db[t]", tdb, ref[1])

# ---------------------------------------------------------------------------------------
section("2. Zero gradients: loss = (a*a).sum() does not use b")

a = sg.symbol("a", shape=(4,))
b = sg.symbol("b", shape=(4,))
loss = (a * a).sum()
da, db = sg.grad(loss, [a, b], allow_unused=True)
print("sg.grad(loss, [a, b], allow_unused=True) ->")
print("  da =", repr(da))
print("  db =", repr(db), "   (a known-zero gradient is None and is never computed)")
if db is not None:
    failures.append("db should be None")
try:
    sg.grad(loss, [a, b])
    print("  sg.grad without allow_unused did NOT raise")
    failures.append("allow_unused=False should raise")
except sg.SymgradError as e:
    print("  without allow_unused=True, as in PyTorch:", type(e).__name__ + ":", e)


def loss_aa(a, b):
    return (a * a).sum()


g = sg.grad_fn(loss_aa, shapes=SHAPES)
print()
print("sg.grad_fn shows the zero gradient explicitly and compiles it to zeros:")
print(g)
print(g.program())
ta, tb = leaves()
ref_a, ref_b = torch.autograd.grad(loss_aa(ta, tb), [ta, tb], allow_unused=True)
print(f"  torch.autograd.grad(..., allow_unused=True) gives db = {ref_b}")
if ref_b is not None:
    failures.append("torch db should be None")
cda, cdb = g.compile("numpy")(a_global, b_global)
verify("dloss/da", cda, ref_a)
verify("dloss/db", cdb, torch.zeros(4, dtype=torch.float64))

# ---------------------------------------------------------------------------------------
section("3. Gradients of gradients (the seed's run_gradients)")

a = sg.symbol("a", shape=(4,))
b = sg.symbol("b", shape=(4,))
L0_t = simple(a, b).sum()
dL0_da, dL0_db = sg.grad(L0_t, [a, b])
L1_t = (dL0_da * dL0_da + dL0_db * dL0_db).sum()
dL1_da, dL1_db = sg.grad(L1_t, [a, b])
# str(tensor) is its closed form; tensor.expr is the SymPy expression itself.
print("first order:  dL0/da =", dL0_da, "   dL0/db =", dL0_db)
print("L1 = sum(dL0/da**2 + dL0/db**2) =", L1_t)
print("second order: dL1/da =", dL1_da, "   dL1/db =", dL1_db)
# Gradients of gradients are ordinary closed forms: L1 = sum(b**2 + (a + 2*b)**2), so
# dL1/da = 2*(a + 2*b) and dL1/db = 2*b + 4*(a + 2*b) elementwise.
A, B = a.expr, b.expr               # the SymPy symbols symgrad uses for a and b
want = {"a": 2 * (A + 2 * B), "b": 2 * B + 4 * (A + 2 * B)}
for name, got in (("a", dL1_da.expr), ("b", dL1_db.expr)):
    ok = sympy.simplify(got - want[name]) == 0
    print(f"  dL1/d{name} == {want[name]} (by hand): {ok}")
    if not ok:
        failures.append(f"dL1/d{name} formula")


# The same thing as a traced function, to get the straight-line program of L1's gradient.
def L1(a, b):
    da, db = sg.grad(simple(a, b).sum(), [a, b])
    return (da * da + db * db).sum()


g1 = sg.grad_fn(L1, shapes=SHAPES)
print()
print(g1)
print()
print("straight-line program of L1 and its gradient:")
print(g1.program())

run = compile_function([dL1_da, dL1_db], [a, b], "numpy")
dda, ddb = run(a_global, b_global)

# torch reference: the seed's run_gradients with torch.autograd and create_graph=True.
ta, tb = leaves()
l0 = simple(ta, tb).sum()
t_da, t_db = torch.autograd.grad(l0, [ta, tb], create_graph=True)
l1 = (t_da * t_da + t_db * t_db).sum()
ref_dda, ref_ddb = torch.autograd.grad(l1, [ta, tb])
print()
print("compiled second-order gradients vs torch.autograd (create_graph=True):")
verify("dL1/da", dda, ref_dda)
verify("dL1/db", ddb, ref_ddb)
gda, gdb = g1.compile("numpy")(a_global, b_global)
verify("grad_fn da", gda, ref_dda)
verify("grad_fn db", gdb, ref_ddb)
tda, tdb = g1.compile("torch")(torch.tensor(a_global), torch.tensor(b_global))
verify("torch da", tda, ref_dda)
verify("torch db", tdb, ref_ddb)

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: simple_grad first- and second-order gradients match torch.autograd")
