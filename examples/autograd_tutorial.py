"""Seed 004 (the PyTorch autograd tutorial) redone with symgrad.

The tutorial computes, for x = torch.ones(2, 2, requires_grad=True),

    y = x + 2;  z = y * y * 3;  out = z.mean()        # out = 27
    out.backward();  x.grad                             # 4.5 everywhere

and explains it by hand: o = 1/4 * sum_i 3 (x_i + 2)^2, so do/dx_i = 3/2 (x_i + 2),
which is 9/2 = 4.5 at x_i = 1. symgrad derives that formula instead of one number:
for a fixed 2x2 shape, for a symbolic (n, m) shape, and per element via ``explicit``.

    python examples/autograd_tutorial.py
"""
import sys

import numpy as np
import sympy
import torch

import symgrad as sg

failures = []


def expect(label, ok):
    print(f"  {label}: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def close(ours, ref):
    if isinstance(ours, torch.Tensor):
        ours = ours.detach().numpy()
    ours = np.asarray(ours, dtype=np.float64)
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    return ours.shape == ref.shape and np.allclose(ours, ref, rtol=1e-12, atol=1e-12)


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def out(x):
    y = x + 2
    z = y * y * 3
    return sg.mean(z)            # on torch tensors this is z.mean(), as in the tutorial


def torch_reference(x_np):
    """The tutorial's own code, in float64: returns (out, x.grad)."""
    x = torch.tensor(x_np, dtype=torch.float64, requires_grad=True)
    y = x + 2
    z = y * y * 3
    o = z.mean()
    o.backward()
    return o.detach(), x.grad


def per_element_check(explicit_grad, shape):
    """Every entry of the explicit gradient equals 3/(number of elements)*2*(x_ij + 2)
    -- for a 2x2 x, 3/2*(x_ij + 2) as in the tutorial."""
    count = int(np.prod(shape))
    ok = explicit_grad.shape == shape
    for idx in np.ndindex(*shape):
        x_ij = sympy.Symbol("x_" + "".join(map(str, idx)), real=True)
        want = sympy.Rational(6, count) * (x_ij + 2)
        ok = ok and sympy.simplify(explicit_grad[idx] - want) == 0
    return ok


ONES = np.ones((2, 2))
rng = np.random.default_rng(4)
RANDOM = rng.standard_normal((2, 2))

# ---------------------------------------------------------------------------------------
section("1. x of shape (2, 2): out = mean(3*(x + 2)**2)")
g = sg.grad_fn(out, shapes={"x": (2, 2)})
print(g)
print()
print(g.program())
print()
X = sympy.MatrixSymbol("x", 2, 2)     # the matrix symbol symgrad uses for the parameter x
print("g.formulas['x'] =", g.formulas["x"], "  (a SymPy matrix expression)")
at_ones = g.formulas["x"].xreplace({X: sympy.ones(2, 2)}).doit()
expect("g.formulas['x'] at x = ones is 3/2*(1 + 2) = 9/2 everywhere",
       sympy.Matrix(at_ones) == sympy.Matrix(2, 2, [sympy.Rational(9, 2)] * 4))
value = g.explicit_value()
print("out, per element  =", value)
print("out at x = ones   =", value.subs({s: 1 for s in value.free_symbols}))

grad_np = g.compile("numpy", with_value=True)
v, (gx,) = grad_np(ONES)
print("compiled at ones  : out =", v, " d(out)/dx =", gx.tolist())
t_out, t_grad = torch_reference(ONES)
print("torch.autograd    : out =", float(t_out), " x.grad =", t_grad.tolist())
expect("out == 27", float(v) == 27.0 and float(t_out) == 27.0)
expect("d(out)/dx == 4.5 everywhere", np.all(gx == 4.5))
expect("compiled numpy gradient == torch x.grad at ones", close(gx, t_grad))
expect("compiled numpy gradient == torch x.grad at random x", close(
    g.compile("numpy")(RANDOM)[0], torch_reference(RANDOM)[1]))
expect("compiled torch gradient == torch x.grad at random x", close(
    g.compile("torch")(torch.tensor(RANDOM))[0], torch_reference(RANDOM)[1]))

print()
E = g.explicit()["x"]
print("g.explicit()['x'] (per-element formulas):")
sympy.pprint(E)
expect("each entry equals 3/2*(x_ij + 2) (sympy.simplify of the difference is 0)",
       per_element_check(E, (2, 2)))
ones_val = E.subs({s: 1 for s in E.free_symbols})
print("at x = ones:", ones_val.tolist())
expect("explicit formula at ones gives 9/2 = 4.5", all(v == sympy.Rational(9, 2) for v in ones_val))

# ---------------------------------------------------------------------------------------
section('2. x of symbolic shape ("n", "m")')
g = sg.grad_fn(out, shapes={"x": ("n", "m")})
print(g)
print("  (the 1/(m*n) of the mean stays symbolic; for n = m = 2 it is 6/4 = 3/2)")
print()
E = g.explicit(n=2, m=2)["x"]
print("g.explicit(n=2, m=2)['x']:")
sympy.pprint(E)
expect("explicit(n=2, m=2) entries equal 3/2*(x_ij + 2)", per_element_check(E, (2, 2)))
E23 = g.explicit(n=2, m=3)["x"]
print("g.explicit(n=2, m=3)['x']:")
sympy.pprint(E23)
expect("explicit(n=2, m=3) entries equal 1*(x_ij + 2)", per_element_check(E23, (2, 3)))

grad_np = g.compile("numpy")
grad_t = g.compile("torch")
for shape in [(2, 2), (3, 5)]:
    x0 = rng.standard_normal(shape)
    _, ref = torch_reference(x0)
    expect(f"compiled numpy gradient == torch x.grad at shape {shape}", close(grad_np(x0)[0], ref))
    expect(f"compiled torch gradient == torch x.grad at shape {shape}",
           close(grad_t(torch.tensor(x0))[0], ref))
(gx,) = grad_np(ONES)
expect("symbolic-shape gradient at ones(2, 2) is 4.5 everywhere", np.all(gx == 4.5))

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: autograd tutorial: out = 27, gradient 4.5 = 3/2*(x_ij + 2) at ones, "
      "matches torch.autograd")
