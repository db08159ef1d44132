"""Antialiased interpolation (F.interpolate(..., antialias=True), ATen's
_upsample_bilinear2d_aa): the resample kinds linear_aa / cubic_aa against torch.autograd
in float64 at orders 1 and 2 on both backends, the printed formula and the refusal."""
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError


def cubes(y):
    return (y * y * y).sum()


CASES = {
    "bilinear_shrink": lambda x: F.interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
    "bicubic_shrink_align": lambda x: F.interpolate(x, size=(4, 2), mode="bicubic",
                                                    align_corners=True, antialias=True),
    "bilinear_scale": lambda x: F.interpolate(x, scale_factor=(0.6, 1.5), mode="bilinear",
                                              antialias=True),
    "bicubic_recompute": lambda x: F.interpolate(x, scale_factor=0.7, mode="bicubic",
                                                 recompute_scale_factor=True, antialias=True),
    "aten_size": lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, [4, 3], False),
    "aten_vec": lambda x: torch.ops.aten._upsample_bilinear2d_aa(x, None, True, [0.5, 0.8]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_antialiased_orders_1_and_2(name):
    f = CASES[name]
    assert sg.check(lambda x: cubes(f(x)), shapes={"x": (2, 2, 9, 7)}, order=2, trials=2).ok


def test_symbolic_batch_and_formula():
    f = CASES["bilinear_shrink"]
    assert sg.check(lambda x: cubes(f(x)), shapes={"x": ("N", 1, 9, 7)}, dims={"N": 2},
                    order=1, trials=1).ok
    g = sg.grad_fn(lambda x: f(x).sum(), shapes={"x": (1, 1, 9, 7)})
    assert "antialias=True" in str(g)


def test_refusal():
    with pytest.raises(ParameterError, match="antialias=True is restricted to the bilinear"):
        sg.grad_fn(lambda x: F.interpolate(x, size=4, mode="nearest", antialias=True).sum(),
                   shapes={"x": (1, 1, 9, 7)})
