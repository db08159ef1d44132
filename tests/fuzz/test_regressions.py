"""Regression tests for what the fuzzer found, each program written out by hand (the
smallest form that still failed) and checked against torch.autograd at orders 1 and 2.
The seed that found it is in the test's name; ``python -m tests.fuzz --seed N
--programs 1 -v`` prints the original program.
"""
import inspect

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def check(f, ref, shapes, sample=None, **kw):
    """sg.check of ``f`` (sg ops) against ``ref`` (torch only), raising on mismatch."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    sig = inspect.Signature([inspect.Parameter(n, kind) for n in shapes])
    f.__signature__ = ref.__signature__ = sig
    return sg.check(f, shapes=shapes, reference=ref, order=2, trials=3, seed=1,
                    sample=sample, **kw)


def test_seed_115_std_of_a_broadcast_value():
    """std of equal elements: symgrad's gradient was nan (grad / std at std = 0), torch's
    is 0."""
    w = np.array([0.5, -1.0, 2.0])

    def f(x):
        return sg.sum(sg.std(sg.broadcast_to(x * x, (3, 4)), axis=-1) * w) + sg.sin(sg.exp(x))

    def ref(x):
        return torch.sum(torch.std(torch.broadcast_to(x * x, (3, 4)), dim=-1)
                         * torch.as_tensor(w)) + torch.sin(torch.exp(x))
    check(f, ref, {"x": ()})


def test_seed_179_pow_with_an_integer_exponent_that_can_be_zero():
    """x ** t with t a class index (0, 1, 2): torch's d/dx is 0 where t = 0 as a mask, so
    its d²/dx dt there is 0; symgrad's unmasked y·x^(y-1) gave 1/x."""
    def f(x, t, w):
        v0 = sg.cross_entropy(x, t, reduction="sum")
        return sg.sum(sg.pow(0.3 + 1.7 * sg.sigmoid(sg.broadcast_to(v0, (4,))), t) * w)

    def ref(x, t, w):
        v0 = F.cross_entropy(x, t.long(), reduction="sum")
        return torch.sum(torch.pow(0.3 + 1.7 * torch.sigmoid(torch.broadcast_to(v0, (4,))),
                                   t) * w)

    def sample(name, shape, rng):
        if name == "t":
            return np.array([0.0, 1.0, 2.0, 0.0])
        return rng.standard_normal(shape)
    check(f, ref, {"x": (4, 3), "t": (4,), "w": (4,)}, sample)


def test_seed_807_maximum_with_a_constant_left_operand_on_torch():
    """maximum(x - x, y): x - x folds to 0, the maximum rule compares 0 == y, and the
    torch printer emitted torch.eq(0, y), which torch rejects (TypeError)."""
    def f(x, y, w):
        return sg.sum(sg.maximum(x - x, y) * w) + sg.sum(x)

    def ref(x, y, w):
        return torch.sum(torch.maximum(x - x, y) * w) + torch.sum(x)
    check(f, ref, {"x": (2, 3), "y": (2, 3), "w": (2, 3)})
    check(lambda y: sg.sum(sg.maximum(0.0, y) + sg.minimum(y, 0.0) * y),
          lambda y: torch.sum(torch.clamp(y, min=0) + torch.clamp(y, max=0) * y), {"y": (5,)})


def test_seed_1517_norm_of_a_zero_vector_mixed_second_derivative():
    """‖x‖·w at x = 0: d/dw of the gradient w.r.t. x is 0 in torch; symgrad's
    where(‖x‖ = 0, 0, grad / ‖x‖) sent 0 · (1/0) = nan into it."""
    x, w, v = sg.symbol("x", (3,)), sg.symbol("w"), sg.symbol("v", (3,))
    (gx,) = sg.grad(sg.norm(x) * w, [x])
    (gw,) = sg.grad(sg.sum(gx * v), [w])
    from symgrad import codegen
    fn = codegen.compile_function([gw], [x, w, v], "numpy", "mixed")
    xt = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(1.7, dtype=torch.float64, requires_grad=True)
    vt = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    (gxt,) = torch.autograd.grad(torch.linalg.vector_norm(xt) * wt, xt, create_graph=True)
    (expected,) = torch.autograd.grad((gxt * vt).sum(), wt)
    (got,) = fn(np.zeros(3), 1.7, vt.numpy())
    assert np.array_equal(np.asarray(got, dtype=float), expected.numpy())


def test_seed_1939_scatter_added_to_a_broadcast_gradient():
    """The Hessian-vector product of sum(sin(broadcast(scatter(g)) - mean(x))): its
    program adds a (3, 4) gradient slice to a (4, 3, 4) array."""
    from symgrad.core.ops.indexing import index_scatter, normalise as _normalise
    entries, _ = _normalise(sg.symbol("_", (3, 4)).shape, (slice(None), 1))

    def f(g, x):
        s = index_scatter(g, shape=(3, 4), index=entries)
        return sg.sum(sg.sin(sg.broadcast_to(s, (4, 3, 4)) - sg.broadcast_to(sg.mean(x),
                                                                            (4, 1, 4))))

    def ref(g, x):
        s = torch.zeros((3, 4), dtype=g.dtype)
        s[:, 1] = g
        return torch.sum(torch.sin(torch.broadcast_to(s, (4, 3, 4))
                                   - torch.broadcast_to(x.mean(), (4, 1, 4))))
    check(f, ref, {"g": (3,), "x": (4,)})


def test_seed_4188_explicit_of_a_maximum_sympy_cannot_order():
    """maximum(a, broadcast(a)) with a = atan2(m, m), m a mean of where branches: SymPy's
    Max refused to order its arguments and explicit() raised; the gradient is torch's."""
    def f(c, x, y, w):
        m = sg.mean(sg.where(c > 0, x, y))
        a = sg.atan2(m, m)
        return sg.sum(sg.maximum(a, sg.broadcast_to(a, (4,))) * w)

    def ref(c, x, y, w):
        m = torch.mean(torch.where(c > 0, x, y))
        a = torch.atan2(m, m)
        return torch.sum(torch.maximum(a, torch.broadcast_to(a, (4,))) * w)
    shapes = {"c": (3,), "x": (2, 1), "y": (1, 3), "w": (4,)}
    check(f, ref, shapes)
    g = sg.grad_fn(f, shapes=shapes)
    assert set(g.explicit()) == {"c", "x", "y", "w"}
