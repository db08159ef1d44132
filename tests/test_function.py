"""Custom ops: ``sg.Function``, like ``torch.autograd.Function`` but symbolic.

The ops ``Exp`` and ``Addition`` must give symbolic gradients equal to ``sympy.diff``
and accumulate like torch's; an aggregate op ``simple`` written as one Function must give
correct gradients of gradients (its saved intermediate becomes a hidden output), checked
against torch.autograd with ``create_graph=True`` on the plain-op reference; a backward
that captures a value any other way is an error.
"""
import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.codegen import compile_function

A0 = np.array([0.4605, 0.4061, 0.9422, 0.3946])   # the inputs of the aggregate-op example
B0 = np.array([0.0850, 0.3296, 0.9888, 0.6494])


class Exp(sg.Function):
    @staticmethod
    def forward(ctx, i):
        r = sg.exp(i)
        ctx.save_for_backward(r)
        return r

    @staticmethod
    def backward(ctx, grad):
        r, = ctx.saved_tensors
        return grad * r


class Addition(sg.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Simple(sg.Function):
    """Seed 003's ``simple(a, b) = (a + b) * b`` as one aggregate op that saves ``t``."""

    @staticmethod
    def forward(ctx, a, b):
        t = a + b
        ctx.save_for_backward(t, b)
        return t * b

    @staticmethod
    def backward(ctx, grad):
        t, b = ctx.saved_tensors
        return grad * b, grad * t + grad * b


def simple(a, b):
    t = a + b
    return t * b


def leaves():
    return (torch.tensor(A0, dtype=torch.float64, requires_grad=True),
            torch.tensor(B0, dtype=torch.float64, requires_grad=True))


def run_gradients(fn, a, b, grad):
    """Seed 003's run_gradients with a given ``grad`` (symbolic or torch)."""
    L0 = fn(a, b).sum()
    da, db = grad(L0, [a, b])
    L1 = (da * da + db * db).sum()
    return grad(L1, [a, b])


def torch_grad(out, ins):
    return torch.autograd.grad(out, ins, create_graph=True)


# ----- Exp and Addition: saved outputs, accumulation ------------------------------------------------------------

def test_exp_backward_equals_sympy_diff_at_orders_1_to_3():
    x = sg.symbol("x")
    X = x.expr
    y = Exp.apply(x)
    expected = sympy.exp(X)
    g = y
    for order in range(1, 4):
        (g,) = sg.grad(g, [x])
        want = sympy.diff(sympy.exp(X), X, order)
        assert sympy.simplify(g.expr - want) == 0, (order, g.expr)
    assert sympy.simplify(y.expr - expected) == 0


def test_exp_graph_views_like_torch():
    x = sg.symbol("x")
    y = Exp.apply(x)
    fn = y.grad_fn
    assert fn.name() == "ExpBackward"
    (nxt, nr), = fn.next_functions
    assert nxt.name() == "AccumulateGrad" and nxt.variable is x and nr == 0
    # saved_tensors holds the output itself, as torch shows (grad_fn=<ExpBackward>)
    (saved,) = fn.saved_tensors
    assert saved is y
    (gx,) = fn(sg.const(1.0))
    assert sympy.simplify(gx.expr - sympy.exp(x.expr)) == 0


def test_exp_compiled_matches_torch_autograd():
    x = sg.symbol("x", ("n",))
    y = sg.sum(Exp.apply(x) * x)
    (dx,) = sg.grad(y, [x])
    (ddx,) = sg.grad(sg.sum(dx), [x])
    xs = np.array([0.3, -1.2, 2.0])
    t = torch.tensor(xs, requires_grad=True)
    (r1,) = torch.autograd.grad((torch.exp(t) * t).sum(), [t], create_graph=True)
    (r2,) = torch.autograd.grad(r1.sum(), [t])
    for backend in ("numpy", "torch"):
        got = compile_function([dx, ddx], [x], backend, zero_shapes=[x.shape] * 2)(xs)
        np.testing.assert_allclose(np.asarray(got[0]), r1.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(got[1]), r2.numpy(), rtol=1e-12)


def test_exp_on_torch_runs_as_autograd_function():
    t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    out = Exp.apply(t)
    assert out.grad_fn is not None and "Exp" in type(out.grad_fn).__name__
    out.backward()
    assert t.grad.item() == pytest.approx(np.exp(2.0), rel=1e-14)


def test_exp_on_numbers_and_arrays_computes():
    assert Exp.apply(0.5) == pytest.approx(np.exp(0.5))
    np.testing.assert_allclose(Exp.apply(np.array([0.0, 1.0])), np.exp([0.0, 1.0]))


def test_addition_backward_equals_sympy_diff_and_accumulates_like_torch():
    a, b = sg.symbol("a"), sg.symbol("b")
    c = Addition.apply(a, b)
    assert c.grad_fn.name() == "AdditionBackward"
    A, B = a.expr, b.expr
    da, db = sg.grad(c, [a, b])
    assert da.expr == sympy.diff(A + B, A) and db.expr == sympy.diff(A + B, B)
    # torch: c.backward() then (5 * c).backward() accumulates 1 + 5 = 6 in a.grad
    d = 5 * c
    da5, db5 = sg.grad(d, [a, b])
    total = sg.grad([c, d], [a, b])
    assert (da5.expr, db5.expr) == (5, 5)
    assert tuple(t.expr for t in total) == (6, 6)


def test_addition_on_torch_accumulates_gradients():
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    c = Addition.apply(a, b)
    c.backward(retain_graph=True)
    (5 * c).backward()
    assert a.grad.item() == 6.0 and b.grad.item() == 6.0


# ----- an aggregate op with a saved intermediate: double backward -----------------------------------------------

def test_simple_as_custom_op_second_order_matches_torch_create_graph():
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    dda, ddb = run_gradients(Simple.apply, a, b, sg.grad)
    ta, tb = leaves()
    ref = run_gradients(simple, ta, tb, torch_grad)
    for backend in ("numpy", "torch"):
        got = compile_function([dda, ddb], [a, b], backend, zero_shapes=[(4,)] * 2)(A0, B0)
        for g, r in zip(got, ref):
            np.testing.assert_allclose(np.asarray(g), r.detach().numpy(), rtol=1e-12)
    # and symbolically: L1 = sum(b^2 + (a + 2b)^2)
    A, B = a.expr, b.expr
    assert sympy.simplify(dda.expr - 2 * (A + 2 * B)) == 0
    assert sympy.simplify(ddb.expr - (2 * B + 4 * (A + 2 * B))) == 0


def test_simple_saved_intermediate_is_a_hidden_output():
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    r = Simple.apply(a, b)
    fn = r.grad_fn
    (t,) = fn.hidden_outputs
    assert t is a + b                       # the replayed forward value, in the outer graph
    assert fn.saved_tensors == (t, b)
    # the second differentiation reaches a only through the hidden output t
    (da,) = sg.grad(sg.sum(r), [a])
    assert sg.grad(sg.sum(da * da), [a], allow_unused=True)[0] is None   # da = b
    _, db = sg.grad(sg.sum(r), [a, b])
    (dda,) = sg.grad(sg.sum(db * db), [a])
    assert dda is not None and sympy.simplify(dda.expr - 2 * (a.expr + 2 * b.expr)) == 0


def test_simple_on_torch_second_order_matches_plain_ops():
    ta, tb = leaves()
    got = run_gradients(Simple.apply, ta, tb, torch_grad)
    ra, rb = leaves()
    ref = run_gradients(simple, ra, rb, torch_grad)
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.detach().numpy(), r.detach().numpy(), rtol=1e-12)


def test_hessian_and_jvp_through_a_custom_op():
    def f(a, b):
        return sg.sum(Simple.apply(a, b) * sg.sin(a))

    def f_ref(a, b):
        return (simple(a, b) * torch.sin(a)).sum()

    ta, tb = (torch.tensor(v) for v in (A0, B0))
    H = sg.hessian(f, ta, tb, argnums=(0, 1))
    ref = torch.autograd.functional.hessian(f_ref, (ta, tb))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(H[i][j].numpy(), ref[i][j].numpy(), rtol=1e-12,
                                       atol=1e-14)
    _, t = sg.jvp(lambda a, b: Simple.apply(a, b), (ta, tb), (tb, ta))
    _, r = torch.func.jvp(simple, (ta, tb), (tb, ta))
    np.testing.assert_allclose(t.numpy(), r.numpy(), rtol=1e-12)


# ----- what backward may use --------------------------------------------------------------------

class KeptOnCtx(sg.Function):
    """Seed 003's simple_variable_wrong: t is used by backward but not saved."""

    @staticmethod
    def forward(ctx, a, b):
        t = a + b
        ctx.t = t
        ctx.save_for_backward(b)
        return t * b

    @staticmethod
    def backward(ctx, grad):
        b, = ctx.saved_tensors
        return grad * b, grad * ctx.t + grad * b


def test_backward_capturing_an_unsaved_intermediate_raises():
    a, b = sg.symbol("a", (4,)), sg.symbol("b", (4,))
    with pytest.raises(sg.FunctionError) as e:
        KeptOnCtx.apply(a, b)
    msg = str(e.value)
    assert "KeptOnCtx.backward" in msg and "save_for_backward" in msg
    assert "'a'" in msg and "'b'" in msg and "hidden output" in msg


def test_backward_capturing_an_outside_tensor_raises():
    w = sg.symbol("w", (3,))

    class Scale(sg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * w

    with pytest.raises(sg.FunctionError, match=r"Scale.backward uses the Tensor 'w' \(shape "
                                               r"\(3,\)\) from outside"):
        Scale.apply(sg.symbol("x", (3,)))


def test_forward_using_an_outside_tensor_raises():
    w = sg.symbol("w", (3,))

    class Closure(sg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * w

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(sg.FunctionError, match="Closure.forward uses the Tensor 'w'.*argument"):
        Closure.apply(sg.symbol("x", (3,)))


def test_backward_returning_the_wrong_number_of_gradients():
    class Two(sg.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(sg.FunctionError, match=r"returned 1 gradient\(s\) but forward takes 2"):
        Two.apply(sg.symbol("a"), sg.symbol("b"))


def test_backward_returning_the_wrong_shape():
    class Wrong(sg.Function):
        @staticmethod
        def forward(ctx, x):
            return sg.sum(x)

        @staticmethod
        def backward(ctx, grad):
            return sg.const(1.0, (2,)) * grad

    with pytest.raises(sg.ShapeError, match=r"shape \(2,\) for argument 'x' of shape \(3,\)"):
        Wrong.apply(sg.symbol("x", (3,)))


def test_saving_a_non_tensor_and_instantiating():
    class SavesFloat(sg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(2.0)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    with pytest.raises(sg.FunctionError, match="save_for_backward takes Tensors"):
        SavesFloat.apply(sg.symbol("x"))
    with pytest.raises(TypeError, match=r"call Exp.apply"):
        Exp()


# ----- ctx, several outputs, torch-2 style --------------------------------------------------------

def test_needs_input_grad():
    seen = []

    class Record(sg.Function):
        @staticmethod
        def forward(ctx, x, y):
            seen.append(ctx.needs_input_grad)
            return x * y

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    Record.apply(sg.symbol("x"), sg.stop_gradient(sg.symbol("y")))
    assert seen == [(True, False)]


def test_several_outputs_and_non_differentiable_output():
    class SumProd(sg.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            mask = a > b
            ctx.mark_non_differentiable(mask)
            return a + b, a * b, mask

        @staticmethod
        def backward(ctx, g_sum, g_prod, g_mask):
            a, b = ctx.saved_tensors
            return g_sum + g_prod * b, g_sum + g_prod * a

    a, b = sg.symbol("a"), sg.symbol("b")
    s, p, m = SumProd.apply(a, b)
    assert m.grad_fn is None
    assert s.grad_fn is p.grad_fn and s.grad_fn.name() == "SumProdBackward"
    A, B = a.expr, b.expr
    target = 3 * (A + B) + sympy.sin(A * B)
    da, db = sg.grad(3 * s + sg.sin(p), [a, b])
    assert sympy.simplify(da.expr - sympy.diff(target, A)) == 0
    assert sympy.simplify(db.expr - sympy.diff(target, B)) == 0
    (dda,) = sg.grad(da, [a])
    assert sympy.simplify(dda.expr - sympy.diff(target, A, 2)) == 0


def test_torch2_style_setup_context():
    class Square(sg.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, grad):
            x, = ctx.saved_tensors
            return 2 * x * grad

    x = sg.symbol("x")
    (dx,) = sg.grad(Square.apply(sg.sin(x)), [x])
    X = x.expr
    assert sympy.simplify(dx.expr - sympy.diff(sympy.sin(X) ** 2, X)) == 0
    t = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    Square.apply(torch.sin(t)).backward()
    assert t.grad.item() == pytest.approx(2 * np.sin(0.7) * np.cos(0.7), rel=1e-14)


def test_custom_op_in_grad_fn_compiles_and_prints():
    def loss(a, b):
        return sg.sum(Simple.apply(a, b))

    g = sg.grad_fn(loss, shapes={"a": ("n",), "b": ("n",)})
    ta, tb = leaves()
    ref = torch.autograd.grad(simple(ta, tb).sum(), [ta, tb])
    for backend in ("numpy", "torch"):
        got = g.compile(backend)(A0, B0)
        for o, r in zip(got, ref):
            np.testing.assert_allclose(np.asarray(o), r.numpy(), rtol=1e-12)
    assert "dloss/da = b" in str(g)


# ----- applications in rewritten graphs and their lifetime ------------------------------------

def test_application_is_carried_by_graph_rewrites():
    """sg.vjp substitutes its primal placeholders: the custom node is rebuilt, and its
    saved values (inputs of the node) follow, so no placeholder survives."""
    x = sg.symbol("x", (3,))
    out, _ = sg.vjp(lambda t: Exp.apply(t), x)
    (dx,) = sg.grad(sg.sum(out), [x])
    assert str(dx) == "exp(x)"


def test_applications_do_not_keep_their_graphs_alive():
    import gc
    from symgrad.core.build import interned as _interned

    def loss(x):
        return sg.sum(Exp.apply(x * x))

    gc.collect()
    before = len(_interned)
    for _ in range(20):
        sg.grad_fn(loss, shapes={"x": (3,)}).compile("numpy")
    gc.collect()
    assert len(_interned) <= before + 12
