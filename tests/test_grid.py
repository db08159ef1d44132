"""Grid sampling through the torch front end (torchfront/grid.py, core/ops/grid.py):
F.grid_sample and torch.grid_sampler_2d/3d in every mode, padding mode and align_corners,
against torch.autograd in float64 at orders 1 and 2 (``sg.check``, NumPy and torch
backends), symbolic batch dims, the printed formula and the refusals."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError, ShapeError


def grid_sampler():
    def sample(arg, shp, rng):
        if arg == "grid":
            return rng.uniform(-1.3, 1.3, shp)
        return rng.standard_normal(shp)
    return sample


def cubes(y):
    return (y * y * y).sum()


CASES = [(mode, padding, align, d) for mode in ("bilinear", "nearest", "bicubic")
         for padding in ("zeros", "border", "reflection") for align in (False, True)
         for d in (2, 3) if not (mode == "bicubic" and d == 3)]


@pytest.mark.parametrize("mode, padding, align, d", CASES)
def test_grid_sample_orders_1_and_2(mode, padding, align, d):
    shapes = {"x": (2, 2, 3, 4) if d == 2 else (1, 2, 2, 3, 4),
              "grid": (2, 3, 2, 2) if d == 2 else (1, 2, 2, 2, 3)}

    def f(x, grid):
        return cubes(F.grid_sample(x, grid, mode=mode, padding_mode=padding,
                                   align_corners=align))
    report = sg.check(f, shapes=shapes, order=2, trials=2, sample=grid_sampler())
    assert report.ok


def test_aten_grid_sampler_and_symbolic_batch():
    def f(x, grid):
        return cubes(torch.grid_sampler_2d(x, grid, 0, 2, False))
    assert sg.check(f, shapes={"x": ("N", 2, 4, 4), "grid": ("N", 3, 3, 2)}, dims={"N": 2},
                    order=2, trials=2, sample=grid_sampler()).ok


def test_formula_reads_as_weights_times_gathers():
    g = sg.grad_fn(lambda x, grid: F.grid_sample(x, grid, align_corners=False).sum(),
                   shapes={"x": (1, 1, 3, 3), "grid": (1, 2, 2, 2)})
    text = str(g)
    assert "grid_scatter(" in text and "grid_cell(" in text


def test_refusals():
    with pytest.raises(ParameterError, match="mode='bicubic' needs a 4-D input"):
        sg.grad_fn(lambda x, g: F.grid_sample(x, g, mode="bicubic").sum(),
                   shapes={"x": (1, 1, 2, 2, 2), "g": (1, 1, 1, 1, 3)})
    with pytest.raises(ShapeError, match="same batch size"):
        sg.grad_fn(lambda x, g: F.grid_sample(x, g).sum(),
                   shapes={"x": (2, 1, 3, 3), "g": (1, 2, 2, 2)})
    with pytest.raises(ParameterError, match="padding_mode must be one of"):
        sg.grad_fn(lambda x, g: F.grid_sample(x, g, padding_mode="wrap").sum(),
                   shapes={"x": (1, 1, 3, 3), "g": (1, 2, 2, 2)})


def test_gather_of_cells_far_outside_reads_zero():
    """With zeros padding a cell outside the input reads (and sends its gradient) nowhere."""
    from symgrad.core import ops as sgo
    x = np.arange(6.0).reshape(1, 1, 2, 3)
    cell = np.array([[[[-5.0, 0.0], [2.0, 1.0], [3.0, 0.0]]]])
    fn = sg.grad_fn(lambda x, c: sgo.grid_gather(x, c).sum(),
                    shapes={"x": (1, 1, 2, 3), "c": (1, 1, 3, 2)}).compile("numpy")
    value_grad = fn(x, cell)
    np.testing.assert_array_equal(np.asarray(value_grad[0]).ravel(), [0, 0, 0, 0, 0, 1])
