"""Seed 001 redone with symgrad: saved values, gradient accumulation, custom Functions.

The seed pokes at PyTorch's autograd: why ``e = c * d`` saves ``d`` (``_saved_other``),
why sympy.diff(c*d, c) is d, how gradients accumulate, and two custom
``torch.autograd.Function``s, ``Exp`` and ``Addition``. Here the same ops are symbolic:
``grad_fn`` shows the saved *formulas*, and the custom ops' backwards are formulas that
equal ``sympy.diff`` and can be differentiated again. Every number is checked against
torch.autograd on the seed's own torch code.

    python examples/custom_function.py
"""
import sys

import numpy as np
import sympy as sp
import torch

import symgrad as sg
from symgrad.codegen import compile_function

failures = []


def expect(label, ok):
    print(f"  {label}: {'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def value(node, inputs, args):
    """A symbolic Tensor evaluated by compiled NumPy code."""
    (out,) = compile_function([node], inputs, "numpy", zero_shapes=[node.shape])(*args)
    return float(out)


# ---------------------------------------------------------------------------------------
section("1. e = c * d: what grad_fn saves, and why (sympy.diff)")

c = sg.symbol("c")
d = sg.stop_gradient(sg.symbol("d"))      # like d_tensor: a value that needs no gradient
e = c * d
print("e.grad_fn.name()         =", e.grad_fn.name())
print("e.grad_fn.next_functions =", e.grad_fn.next_functions)
print("e.grad_fn._saved_other   =", e.grad_fn._saved_other)
C, D = sp.symbols("c d")
print("sympy.diff(c*d, c)       =", sp.diff(C * D, C))
(dc,) = sg.grad(e, [c])
print("sg.grad(e, [c])          =", dc)
expect("MulBackward0 with (AccumulateGrad, None) as next_functions, like torch",
       e.grad_fn.name() == "MulBackward0"
       and e.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
       and e.grad_fn.next_functions[1] == (None, 0))
expect("the saved value is d, and de/dc is d", e.grad_fn._saved_other is d and dc is d)

c_t = torch.tensor(2.0 * 2.0, requires_grad=True)
d_t = torch.tensor(2.0)
e_t = c_t * d_t
expect("torch saves the same value (_saved_other is d_tensor)",
       e_t.grad_fn is not None and id(e_t.grad_fn._saved_other) == id(d_t))
e_t.backward()
expect("c.grad = d = 2 in torch and in symgrad",
       c_t.grad.item() == value(dc, [sg.symbol("d")], [2.0]) == 2.0)

# ---------------------------------------------------------------------------------------
section("2. Gradient accumulation: c = a + b, then d = 5 * c")

a, b = sg.symbol("a"), sg.symbol("b")
s = a + b
five = 5 * s
print("dc/da, dc/db           =", sg.grad(s, [a, b]))
print("dd/da, dd/db           =", sg.grad(five, [a, b]))
acc = sg.grad([s, five], [a, b])          # the sum of both backward passes, as a.grad holds
print("accumulated (c and d)  =", acc)
a_t = torch.tensor(2.0, requires_grad=True)
b_t = torch.tensor(2.0, requires_grad=True)
c2_t = a_t + b_t
c2_t.backward(retain_graph=True)
(5 * c2_t).backward()
print("torch a.grad, b.grad   =", a_t.grad.item(), b_t.grad.item())
expect("accumulated gradients 6 and 6, as torch", tuple(float(g.expr) for g in acc)
       == (a_t.grad.item(), b_t.grad.item()) == (6.0, 6.0))

# ---------------------------------------------------------------------------------------
section("3. A custom Function: Exp (symbolic in both directions)")


class Exp(sg.Function):
    @staticmethod
    def forward(ctx, i):
        result = sg.exp(i)
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


class TorchExp(torch.autograd.Function):
    """The seed's own torch.autograd.Function, the reference."""

    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result


i = sg.symbol("i")
out = Exp.apply(i)
print("out                     =", out)
print("out.grad_fn.name()      =", out.grad_fn.name())
print("out.grad_fn.saved_tensors =", out.grad_fn.saved_tensors, " (the output itself)")
(d1,) = sg.grad(out, [i])
(d2,) = sg.grad(d1, [i])
print("d out/di                =", d1)
print("d2 out/di2              =", d2)
I = sp.Symbol("i", real=True)
expect("backward equals sympy.diff(exp(i), i)", sp.simplify(d1.expr - sp.diff(sp.exp(I), I)) == 0)
expect("double backward equals sympy.diff(exp(i), i, 2)",
       sp.simplify(d2.expr - sp.diff(sp.exp(I), I, 2)) == 0)
in_t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
(g1,) = torch.autograd.grad(TorchExp.apply(in_t), [in_t], create_graph=True)
(g2,) = torch.autograd.grad(g1, [in_t])
print("torch: in.grad         =", g1.item(), " second order =", g2.item())
expect("first and second order at i = 2 match torch",
       np.isclose(value(d1, [i], [2.0]), g1.item(), rtol=1e-14)
       and np.isclose(value(d2, [i], [2.0]), g2.item(), rtol=1e-14))
sg_t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
Exp.apply(sg_t).backward()
expect("Exp.apply on a torch tensor runs as a torch.autograd.Function",
       np.isclose(sg_t.grad.item(), np.exp(2.0), rtol=1e-14))

# ---------------------------------------------------------------------------------------
section("4. A custom Function with two inputs: Addition")


class Addition(sg.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


c3 = Addition.apply(a, b)
print("c.grad_fn.name()         =", c3.grad_fn.name())
da, db = sg.grad(c3, [a, b])
print("dc/da, dc/db             =", da, db, "  sympy:", sp.diff(C + D, C), sp.diff(C + D, D))
expect("backward equals sympy.diff(a + b, ·)", (da.expr, db.expr) == (1, 1))
acc = sg.grad([c3, 5 * c3], [a, b])
print("accumulated with 5 * c   =", acc)
a_t = torch.tensor(2.0, requires_grad=True)
b_t = torch.tensor(2.0, requires_grad=True)
c3_t = Addition.apply(a_t, b_t)
c3_t.backward(retain_graph=True)
(5 * c3_t).backward()
expect("accumulated 6 and 6 (torch runs the same Function)",
       tuple(float(g.expr) for g in acc) == (a_t.grad.item(), b_t.grad.item()) == (6.0, 6.0))

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: seed 001 (saved values, accumulation, Exp and Addition) matches sympy.diff and "
      "torch.autograd")
