"""sg.check (symgrad/check.py): the reference run of the user's own function, tolerances,
and what it says when torch cannot give what it is asked."""
import numpy as np
import pytest
import torch

import symgrad as sg


@pytest.mark.parametrize("f, shapes", [
    (lambda A: (A @ sg.eye(A.shape[0])).sum() * (A * sg.eye("n")).sum(), {"A": ("n", "n")}),
    (lambda x: ((x + sg.ones("n")) * sg.full(("n",), 2.0)).sum() ** 2
     + (sg.zeros_like(x) + sg.ones_like(x) * x).sum(), {"x": ("n",)}),
    (lambda x: (sg.const(3.0, ("n",)) * x).sum() ** 2, {"x": ("n",)}),
], ids=["eye", "ones_full_like", "const"])
def test_symbolic_constructors_run_as_torch_in_the_reference(f, shapes):
    report = sg.check(f, shapes=shapes, dims={"n": 3})
    assert report.ok


def test_sg_grad_inside_the_function_is_torch_autograd_in_the_reference():
    def f(x):
        (g,) = sg.grad((sg.tanh(x) ** 2).sum(), [x])
        return (g * x).sum()

    assert sg.check(f, shapes={"x": ("n",)}).ok
    x = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    (g,) = sg.grad((x ** 3).sum(), [x])
    assert g.requires_grad and torch.allclose(g, 3 * x.detach() ** 2)


def test_integer_inputs_are_sampled_in_their_range():
    import torch.nn.functional as F
    shapes = {"z": ("B", 4), "y": sg.TensorSpec(("B",), dtype="int64")}
    assert sg.check(lambda z, y: F.cross_entropy(z, y), shapes=shapes).ok


def test_tolerance_scales_with_the_gradient_s_size():
    ours, ref = np.array([1e6, 3e-3]), np.array([1e6, 3e-3 + 1e-5])
    report = sg.CheckReport("f", ["x"], {}, 1, 1, ("numpy",))
    from symgrad.check import _compare
    _compare(ours, ref, "d/dx", report, 1e-7, 1e-9)     # 1e-5 is rounding at 1e6's scale
    with pytest.raises(sg.CheckError):
        _compare(np.array([1.0, 3e-3]), np.array([1.0, 3e-3 + 1e-5]), "d/dx", report, 1e-7,
                 1e-9)


def test_a_reference_without_double_backward_says_to_use_order_1():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    def f(x):
        return (x ** 3).sum()

    with pytest.raises(sg.CheckError, match="order=1"):
        sg.check(f, shapes={"x": (3,)}, reference=lambda x: Cube.apply(x).sum())
    assert sg.check(f, shapes={"x": (3,)}, reference=lambda x: Cube.apply(x).sum(), order=1).ok


def test_a_misspelt_dim_is_an_error():
    with pytest.raises(sg.SymgradError, match=r"dims names \['N'\].*\['n'\]"):
        sg.check(lambda x: (x ** 2).sum(), shapes={"x": ("n",)}, dims={"N": 3})
    with pytest.raises(sg.SymgradError, match=r"dims names \['batch'\]"):
        sg.check(lambda x: (x ** 2).sum(), shapes={"x": ("batchsize",)}, dims={"batch": 3})
    # one dims table for several functions: names a function does not use are fine
    assert sg.check(lambda x: (x ** 2).sum(), shapes={"x": ("n",)}, dims={"n": 3, "m": 4}).ok


def test_a_reference_that_is_not_finite_fails_the_check_and_says_why():
    f = lambda x: sg.log(sg.sum(sg.exp(x)))  # noqa: E731
    with pytest.raises(sg.CheckError, match="outside the function's domain.*sample="):
        sg.check(f, shapes={"x": (3,)}, order=1,
                 sample=lambda name, shape, rng: 1000 + rng.standard_normal(shape))


def test_a_module_s_buffers_are_checked_at_their_own_values():
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4),
                              torch.nn.Linear(4, 1)).eval()
    with torch.no_grad():
        net[1].running_var.copy_(torch.rand(4, generator=torch.Generator().manual_seed(0)) + .5)
    report = sg.check(net, shapes={"input": ("B", 3)}, loss=lambda out: (out ** 2).mean())
    assert report.ok and report.order == 2


def test_torch_constants_in_the_reference_are_made_in_float64():
    report = sg.check(lambda A: (A @ torch.eye(A.shape[0])).sum() ** 2, shapes={"A": ("n", "n")})
    assert report.ok
    assert torch.get_default_dtype() == torch.float32


def test_a_mismatch_names_the_index_and_values_as_plain_numbers():
    with pytest.raises(sg.CheckError) as info:
        sg.check(lambda x: sg.sum(x ** 3), shapes={"x": ("n",)},
                 reference=lambda x: (x ** 3).sum() * 1.001)
    assert "np." not in str(info.value) and "at index (" in str(info.value)
