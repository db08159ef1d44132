"""Gradients of gradients, aggregate ops, vector-Jacobian products and Hessians (seeds 003
and 004) with symgrad.

1. Seed 003's ``run_gradients(simple)``: L0 = simple(a, b).sum(), its gradients, the
   L1 = |dL0/da|² + |dL0/db|² built from them, and the gradients of L1;
2. ``simple`` as one aggregate op (``sg.Function``) that saves its intermediate ``t``:
   symgrad makes ``t`` a hidden output, the fix the seed derives by hand in
   ``simple_variable``, so second-order gradients are right; keeping ``t`` any other way
   (``simple_variable_wrong``) is an error instead of a silently wrong answer;
3. seed 004's vector-Jacobian product ``y.backward(v)`` as ``sg.vjp``, and its error
   messages;
4. Hessians in matrix form: logistic regression, Xᵀ diag(σ (1 − σ)) X / N, and a tanh layer;
   Hessian-vector products.

Every number is compared with torch.autograd (create_graph=True) in float64.

    python examples/higher_order.py
"""
import sys

import numpy as np
import torch

import symgrad as sg
from symgrad.codegen import compile_function

A0 = np.array([0.4605, 0.4061, 0.9422, 0.3946])     # the seed's numbers
B0 = np.array([0.0850, 0.3296, 0.9888, 0.6494])
failures = []


def section(title):
    print()
    print("=" * 72)
    print(title)
    print("=" * 72)


def verify(label, ours, ref, rtol=1e-10, atol=1e-12):
    ours = ours.detach().numpy() if isinstance(ours, torch.Tensor) else np.asarray(ours)
    ref = ref.detach().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref)
    ok = ours.shape == ref.shape and np.allclose(ours, ref, rtol=rtol, atol=atol)
    err = float(np.max(np.abs(ours - ref))) if ours.shape == ref.shape else np.inf
    print(f"  {label:<34} shape {str(ref.shape):<12} max |symgrad - torch| = {err:.1e}  "
          f"{'ok' if ok else 'MISMATCH'}")
    if not ok:
        failures.append(label)


def run_gradients(my_fn, a, b, grad):
    """Seed 003's run_gradients, for sg.grad or torch.autograd.grad(create_graph=True)."""
    L0 = my_fn(a, b).sum()
    dL0_da, dL0_db = grad(L0, [a, b])
    L1 = (dL0_da * dL0_da + dL0_db * dL0_db).sum()
    return (dL0_da, dL0_db) + tuple(grad(L1, [a, b]))


def torch_grad(out, inputs):
    return torch.autograd.grad(out, inputs, create_graph=True)


def torch_run(my_fn):
    a = torch.tensor(A0, requires_grad=True)
    b = torch.tensor(B0, requires_grad=True)
    return run_gradients(my_fn, a, b, torch_grad)


def compiled(nodes, inputs, *args):
    return compile_function(nodes, inputs, "numpy", zero_shapes=[n.shape for n in nodes])(*args)


def simple(a, b):
    t = a + b
    return t * b


LABELS = ["dL0/da", "dL0/db", "dL1/da", "dL1/db"]

# ---------------------------------------------------------------------------------------
section("1. run_gradients(simple): gradients of gradients")
a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
grads = run_gradients(simple, a, b, sg.grad)
for label, g in zip(LABELS, grads):
    print(f"{label} = {g}")
ref = torch_run(simple)
for label, ours, r in zip(LABELS, compiled(list(grads), [a, b], A0, B0), ref):
    verify(label, ours, r)

# ---------------------------------------------------------------------------------------
section("2. simple as one aggregate op: the saved intermediate becomes a hidden output")


class SimpleVariable(sg.Function):
    """simple(a, b) computed as one op; backward reads the saved t = a + b."""

    @staticmethod
    def forward(ctx, a, b):
        t = a + b
        ctx.save_for_backward(t, b)
        return t * b

    @staticmethod
    def backward(ctx, dL_dr):
        t, b = ctx.saved_tensors
        dL_dt = dL_dr * b
        return dL_dt, dL_dt + dL_dr * t


r = SimpleVariable.apply(a, b)
print("r.grad_fn.name()                =", r.grad_fn.name())
print("r.grad_fn.saved_tensors         =", r.grad_fn.saved_tensors)
print("r.grad_fn.hidden_outputs        =", r.grad_fn.hidden_outputs, " (t, as in the seed's fix)")
grads = run_gradients(SimpleVariable.apply, a, b, sg.grad)
for label, g in zip(LABELS, grads):
    print(f"{label} = {g}")
for label, ours, rr in zip(LABELS, compiled(list(grads), [a, b], A0, B0), ref):
    verify(label + " (custom op)", ours, rr)
for label, ours, rr in zip(LABELS, torch_run(SimpleVariable.apply), ref):
    verify(label + " (custom op on torch)", ours, rr)


class SimpleVariableWrong(sg.Function):
    """The seed's simple_variable_wrong: t is kept on ctx, not saved."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.t = a + b
        ctx.save_for_backward(b)
        return ctx.t * b

    @staticmethod
    def backward(ctx, dL_dr):
        b, = ctx.saved_tensors
        dL_dt = dL_dr * b
        return dL_dt, dL_dt + dL_dr * ctx.t


try:
    SimpleVariableWrong.apply(a, b)
    print("SimpleVariableWrong did NOT raise")
    failures.append("capture error")
except sg.FunctionError as e:
    print("SimpleVariableWrong.apply(a, b) raises FunctionError:")
    print("   ", e)

# ---------------------------------------------------------------------------------------
section("3. Seed 004: vector-Jacobian products, y.backward(v)")
x0 = np.array([0.3164, -1.1508, 1.5400])
k = 1
while np.linalg.norm(x0 * 2.0 ** k) < 1000:      # the seed's data-dependent loop, on numbers
    k += 1


def doubled(x):
    return x * 2.0 ** k


v0 = np.array([0.1, 1.0, 0.0001])
y, vjp_fn = sg.vjp(doubled, x0)
(gx,) = vjp_fn(v0)
x_t = torch.tensor(x0, requires_grad=True)
y_t = doubled(x_t)
y_t.backward(torch.tensor(v0))
print(f"y = x * 2**{k} =", y)
print("sg.vjp: v^T J =", gx, "  torch x.grad =", x_t.grad.numpy())
verify("vjp", gx, x_t.grad)
xs = sg.symbol("x", (3,))
(sym,) = sg.vjp(doubled, xs)[1](sg.symbol("v", (3,)))
print("symbolic: v^T J =", sym)
for call, what in [(lambda: sg.grad(doubled(xs), [xs]), "implicit seed, non-scalar output"),
                   (lambda: sg.grad(doubled(xs), [xs], grad_outputs=np.ones(2)),
                    "grad_outputs of the wrong shape")]:
    try:
        call()
        failures.append(what)
    except sg.SymgradError as e:
        print(f"  {what}: {type(e).__name__}: {e}")

# ---------------------------------------------------------------------------------------
section("4. Hessians in matrix form")


def logreg(w, X, y):
    """Logistic-regression loss, labels y in {-1, 1}."""
    return sg.mean(sg.softplus(-y * (X @ w)))


H = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "X": ("N", "d"), "y": ("N",)})
print(H)
print()
print(H.latex())
print()
rng = np.random.default_rng(3)
for N, dim in [(8, 3), (20, 5)]:
    w, X, yl = rng.standard_normal(dim), rng.standard_normal((N, dim)), rng.choice([-1.0, 1.0], N)
    tX, ty = torch.tensor(X), torch.tensor(yl)
    ref_h = torch.autograd.functional.hessian(lambda w: logreg(w, tX, ty), torch.tensor(w))
    verify(f"logreg Hessian N={N}, d={dim} [numpy]", H.compile("numpy")(w, X, yl), ref_h)
    verify(f"logreg Hessian N={N}, d={dim} [torch]",
           H.compile("torch")(torch.tensor(w), tX, ty), ref_h)
    s = 1 / (1 + np.exp(yl * (X @ w)))
    by_hand = X.T @ np.diag(s * (1 - s)) @ X / N    # the textbook formula
    verify(f"= Xᵀ diag(σ(1 − σ)) X / N, N={N}", H(w, X, yl), by_hand)


def tanh_layer(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


H2 = sg.hessian(tanh_layer, wrt="x", shapes={"W": ("m", "n"), "x": ("n",), "b": ("m",)})
print()
print(H2)
W, x, b = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(4)
tW, tb = torch.tensor(W), torch.tensor(b)
ref_h = torch.autograd.functional.hessian(lambda x: tanh_layer(tW, x, tb), torch.tensor(x))
verify("tanh layer Hessian", H2(W, x, b), ref_h)
v = rng.standard_normal(3)
_, hv = sg.hvp(lambda x: tanh_layer(W, x, b), x, v)
_, ref_hv = torch.autograd.functional.hvp(lambda x: tanh_layer(tW, x, tb), torch.tensor(x),
                                          torch.tensor(v))
verify("Hessian-vector product", hv, ref_hv)
J = sg.jacobian(lambda W, x, b: sg.tanh(W @ x + b), wrt="x",
                shapes={"W": ("m", "n"), "x": ("n",), "b": ("m",)})
print()
print(J, f"   ({J.mode} mode)")
ref_j = torch.autograd.functional.jacobian(lambda x: torch.tanh(tW @ x + tb), torch.tensor(x))
verify("tanh layer Jacobian", J(W, x, b), ref_j)

print()
if failures:
    print("FAILED:", ", ".join(failures))
    sys.exit(1)
print("OK: gradients of gradients, the aggregate op, vjp and Hessians match torch.autograd")
