"""The shape family's torch mappings beyond the table test: the gradients read as ops
(roll, diag_embed), symbolic batch dims, the clear errors, and as_strided_scatter's input
gradient, where torch.autograd's own answer is wrong (its OpInfo marks the gradient test
an expected failure), so it is checked against central differences of torch's values."""
import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.errors import ShapeError, UnsupportedOpError

D = torch.float64


def _grad(f, shapes, *args):
    g = sg.grad_fn(f, shapes=shapes)
    return g, g.compile("numpy")(*args)


def test_roll_gradient_reads_as_a_roll_back():
    g = sg.grad_fn(lambda x: (torch.roll(x, (1, -2), (0, 1)) * torch.sin(x)).sum(),
                   shapes={"x": (3, 4)})
    assert "roll(sin(x), (-1, 2), axis=(0, 1))" in str(g)


def test_offset_diagonal_gradient_is_a_diag_embed():
    g = sg.grad_fn(lambda x: (torch.diagonal(x, 1, 0, 2) ** 2).sum(), shapes={"x": (3, 2, 4)})
    assert "diag_embed(" in str(g) and "offset=1" in str(g)


def test_symbolic_batch_compiles_for_any_size():
    f = lambda x: (torch.diagonal(x, -1, 1, 2) ** 2).sum() + (torch.roll(x, 1, 1) * x).sum()
    g = sg.grad_fn(f, shapes={"x": ("N", 3, 3)})
    run = g.compile("numpy")
    for n in (1, 4):
        x = torch.randn(n, 3, 3, dtype=D, requires_grad=True)
        (ref,) = torch.autograd.grad(f(x), x)
        (ours,) = run(x.detach().numpy())
        np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-12)


def test_diag_embed_with_symbolic_batch():
    f = lambda v: (torch.diag_embed(v, 1) * torch.arange(16.0, dtype=D).reshape(4, 4)).sum()
    g = sg.grad_fn(f, shapes={"v": ("B", 3)})
    v = torch.randn(2, 3, dtype=D, requires_grad=True)
    (ref,) = torch.autograd.grad(f(v), v)
    np.testing.assert_allclose(g.compile("numpy")(v.detach().numpy())[0], ref.numpy())


def _central_difference(f, args, i, h=1e-6):
    out = torch.zeros_like(args[i])
    for k in range(out.numel()):
        up = [a.clone() for a in args]
        down = [a.clone() for a in args]
        up[i].view(-1)[k] += h
        down[i].view(-1)[k] -= h
        out.view(-1)[k] = (f(*up) - f(*down)) / (2 * h)
    return out


def test_as_strided_scatter_input_gradient_against_differences():
    w = torch.arange(9.0, dtype=D).reshape(3, 3)

    def f(x, s):
        return (torch.as_strided_scatter(x, s, (2, 2), (1, 2), 1) * w).sum()

    x, s = torch.randn(3, 3, dtype=D), torch.randn(2, 2, dtype=D)
    _, (gx, gs) = _grad(f, {"x": (3, 3), "s": (2, 2)}, x.numpy(), s.numpy())
    np.testing.assert_allclose(gx, _central_difference(f, [x, s], 0).numpy(), atol=1e-7)
    np.testing.assert_allclose(gs, _central_difference(f, [x, s], 1).numpy(), atol=1e-7)
    assert np.all(gx.reshape(-1)[[1, 2, 3, 4]] == 0)


def test_as_strided_past_the_traced_elements_is_refused():
    with pytest.raises(UnsupportedOpError, match=r"torch.as_strided .*past the 10 elements"):
        sg.grad_fn(lambda x: torch.as_strided(x, (2, 2), (1, 2), 8).sum(), shapes={"x": (10,)})


def test_overlapping_as_strided_scatter_is_refused():
    with pytest.raises(UnsupportedOpError, match="overlap"):
        sg.grad_fn(lambda x, s: torch.as_strided_scatter(x, s, (2, 2), (1, 1)).sum(),
                   shapes={"x": (4,), "s": (2, 2)})


@pytest.mark.parametrize("call, match", [
    (lambda x: torch.hsplit(x, 3), "does not divide into 3 equal sections"),
    (lambda x: torch.roll(x, (1, 2)), "2 shifts without dims"),
    (lambda x: torch.rot90(x, 1, (1, 1)), "the two dims must differ"),
    (lambda x: torch.diagonal(x, 0, 1, 1), "the two axes must differ"),
    (lambda x: torch.nn.functional.channel_shuffle(x.reshape(1, 4, 2), 3), "do not divide"),
    (lambda x: x.unfold(1, 5, 1), "do not fit dim 1 of size 4"),
    (lambda x: torch.repeat_interleave(x, torch.tensor([1, 2, 3]), 0), "one for each of the 2"),
    (lambda x: x.sum_to_size(3), "does not sum to"),
])
def test_clear_shape_errors(call, match):
    with pytest.raises(ShapeError, match=match):
        sg.grad_fn(lambda x: call(x)[0].sum() if isinstance(call(x), tuple) else call(x).sum(),
                   shapes={"x": (2, 4)})


def test_tensor_split_of_a_symbolic_dim_asks_for_indices():
    with pytest.raises(ShapeError, match="give the split indices"):
        sg.grad_fn(lambda x: torch.tensor_split(x, 2)[0].sum(), shapes={"x": ("n",)})
    g = sg.grad_fn(lambda x: (torch.tensor_split(x, [1])[1] ** 2).sum(), shapes={"x": ("n",)})
    np.testing.assert_allclose(g.compile("numpy")(np.arange(4.0))[0], [0, 2, 4, 6])
