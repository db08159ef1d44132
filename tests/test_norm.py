"""Normalisations through the torch front end (torchfront/norm.py): F.batch_norm (training and
evaluation), F.instance_norm, F.group_norm, F.layer_norm, F.rms_norm, F.local_response_norm and
the nn modules that call them, against torch.autograd in float64 at orders 1 and 2 (both
backends through ``sg.check``), with symbolic batch dims, printed formulas and refusals."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError, ShapeError

D = torch.float64
RM = torch.tensor([0.3, -0.2, 0.5], dtype=D)
RV = torch.tensor([0.7, 1.3, 0.9], dtype=D)


def cubes(y):
    return (y * y * y).sum()


def check(f, shapes, dims=None, **kw):
    report = sg.check(f, shapes=shapes, dims=dims, order=2, trials=2, **kw)
    assert report.ok
    return report


FUNCTIONS = {
    "batch_norm_train": (lambda x, w, b: cubes(F.batch_norm(x, None, None, w, b, True)),
                         {"x": ("N", 3, 4, 2), "w": (3,), "b": (3,)}),
    "batch_norm_train_running": (lambda x: cubes(F.batch_norm(x, RM.clone(), RV.clone(),
                                                              training=True, eps=1e-3)),
                                 {"x": (5, 3)}),
    "batch_norm_eval": (lambda x, w: cubes(F.batch_norm(x, RM, RV, w, None, False)),
                        {"x": ("N", 3, 2), "w": (3,)}),
    "instance_norm": (lambda x, w, b: cubes(F.instance_norm(x, weight=w, bias=b)),
                      {"x": ("N", 3, 5), "w": (3,), "b": (3,)}),
    "instance_norm_3d": (lambda x: cubes(F.instance_norm(x, eps=1e-3)), {"x": (2, 3, 2, 3, 2)}),
    "instance_norm_running": (lambda x: cubes(F.instance_norm(x, RM, RV, use_input_stats=False)),
                              {"x": (2, 3, 4)}),
    "group_norm": (lambda x, w, b: cubes(F.group_norm(x, 3, w, b)),
                   {"x": ("N", 6, 2, 2), "w": (6,), "b": (6,)}),
    "layer_norm": (lambda x, w, b: cubes(F.layer_norm(x, (3, 2), w, b)),
                   {"x": ("N", 3, 2), "w": (3, 2), "b": (3, 2)}),
    "rms_norm": (lambda x, w: cubes(F.rms_norm(x, (4,), w, 1e-6)), {"x": ("N", 4), "w": (4,)}),
    **{f"local_response_norm_{k}": ((lambda k: lambda x: cubes(
        F.local_response_norm(x, k, alpha=0.5, beta=0.7, k=1.2)))(k), {"x": (2, 5, 3)})
       for k in (1, 2, 3, 4, 6)},
    "local_response_norm_4d_symbolic": (lambda x: cubes(F.local_response_norm(x, 2, 0.3)),
                                        {"x": ("N", 4, 2, 3)}),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_against_torch(name):
    f, shapes = FUNCTIONS[name]
    dims = {"N": 3} if any("N" in s for s in shapes.values()) else None
    check(f, shapes, dims)


MODULES = {
    "BatchNorm1d_train": (lambda: nn.BatchNorm1d(3), {"input": ("N", 3)}),
    "BatchNorm1d_train_3d": (lambda: nn.BatchNorm1d(3), {"input": (4, 3, 2)}),
    "BatchNorm2d_train": (lambda: nn.BatchNorm2d(3), {"input": (2, 3, 2, 3)}),
    "BatchNorm3d_train": (lambda: nn.BatchNorm3d(2, affine=False), {"input": (2, 2, 2, 2, 2)}),
    "BatchNorm2d_no_running_stats": (lambda: nn.BatchNorm2d(3, track_running_stats=False).eval(),
                                     {"input": (2, 3, 2, 2)}),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True), {"input": ("N", 3, 5)}),
    "InstanceNorm1d_unbatched": (lambda: nn.InstanceNorm1d(3), {"input": (3, 5)}),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(2, affine=True), {"input": (2, 2, 3, 3)}),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2), {"input": (1, 2, 2, 3, 2)}),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), {"input": ("N", 4, 3)}),
    "LayerNorm": (lambda: nn.LayerNorm((3, 2)), {"input": (2, 3, 2)}),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3, alpha=0.2), {"input": (2, 5, 3)}),
}


def _perturbed(module):
    """Non-trivial affine parameters (torch initialises them to 1 and 0)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.linspace(-0.3, 0.4, p.numel()).reshape(p.shape))
    return module


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_against_torch(name):
    torch.manual_seed(0)
    make, shapes = MODULES[name]
    dims = {"N": 3} if any("N" in s for s in shapes.values()) else None
    check(_perturbed(make()), shapes, dims, loss=cubes)


def test_batch_norm_eval_module_with_its_running_statistics():
    """In eval mode the running statistics are constants of the module's state: check
    against torch with them frozen at their (non-trivial) values."""
    bn = _perturbed(nn.BatchNorm2d(3))
    with torch.no_grad():
        bn.running_mean.copy_(RM)
        bn.running_var.copy_(RV)
    bn.eval()
    fn = sg.module_function(bn, shapes={"input": ("N", 3, 2, 2)}, loss=cubes)
    g = sg.grad_fn(fn, wrt=("W", "b", "input"))
    x = torch.randn(2, 3, 2, 2, dtype=D, requires_grad=True)
    bn64 = bn.double()
    cubes(bn64(x)).backward()
    values = {"W": bn64.weight.detach(), "b": bn64.bias.detach(),
              "running_mean": bn64.running_mean, "running_var": bn64.running_var, "input": x.detach()}
    ours = g.compile("torch")(*[values[n] for n in fn.names])
    for got, want in zip(ours, (bn64.weight.grad, bn64.bias.grad, x.grad)):
        torch.testing.assert_close(got, want)


def test_train_mode_gradient_matches_torch_at_a_point():
    """The batch statistics depend on the input: the gradient is not the eval-mode one."""
    x = torch.randn(4, 3, dtype=D, requires_grad=True)
    cubes(F.batch_norm(x, None, None, training=True)).backward()
    g = sg.grad_fn(lambda x: cubes(F.batch_norm(x, None, None, training=True)),
                   shapes={"x": ("N", 3)})
    for backend in ("numpy", "torch"):
        arg = x.detach().numpy() if backend == "numpy" else x.detach()
        (got,) = g.compile(backend)(arg)
        np.testing.assert_allclose(np.asarray(got), x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_formulas_print():
    g = sg.grad_fn(lambda x: cubes(F.local_response_norm(F.batch_norm(x, None, None,
                                                                     training=True), 3)),
                   shapes={"x": ("N", 4, 2)})
    text = str(g)
    assert "avg_pool1d_backward(" in text and "avg_pool1d(" in text
    assert g.latex() and g.program()
    assert "symgrad" not in g.source("torch")


def test_refusals_are_clear():
    cases = [
        (lambda x: F.batch_norm(x, None, None, training=True).sum(), {"x": (1, 3)}, ShapeError,
         "more than 1 value per channel"),
        (lambda x: F.batch_norm(x, None, None, training=False).sum(), {"x": (2, 3)},
         ParameterError, "running_mean"),
        (lambda x: F.batch_norm(x, None, None, torch.ones(4, dtype=D), training=True).sum(),
         {"x": (2, 3)}, ShapeError, "weight must have shape"),
        (lambda x: F.instance_norm(x).sum(), {"x": (2, 3, 1)}, ShapeError,
         "more than 1 spatial element"),
        (lambda x: F.group_norm(x, 4).sum(), {"x": (2, 6, 3)}, ParameterError, "num_groups"),
        (lambda x: F.local_response_norm(x, 2).sum(), {"x": (2, 3)}, ShapeError, "rank >= 3"),
        (lambda x: F.layer_norm(x, (4,)).sum(), {"x": (2, 3)}, ShapeError, "normalized_shape"),
    ]
    for f, shapes, error, match in cases:
        with pytest.raises(error, match=match):
            sg.grad_fn(f, shapes=shapes)
