"""Pooling and interpolation through the torch front end (torchfront/pool.py): functions and
nn modules against torch.autograd in float64 at orders 1 and 2 (``sg.check`` compiles for
NumPy and torch), forward values of both backends against torch, symbolic batch dims,
torch's conventions at ties and nan (the gradient goes to the first maximum of a window),
interpolation index rules at awkward sizes, printed formulas, and the refusals."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError, ShapeError, UnsupportedOpError

D = torch.float64


def cubes(y):
    return (y * y * y).sum()


def check(f, shapes, dims=None, **kw):
    report = sg.check(f, shapes=shapes, dims=dims, order=2, trials=2, **kw)
    assert report.ok
    return report


def values_agree(f, shapes, dims=None, rng_seed=0, sampler=None):
    """The compiled value (both backends) equals torch's on random inputs."""
    g = sg.grad_fn(f, shapes=shapes)
    rng = np.random.default_rng(rng_seed)
    args = []
    for shape in shapes.values():
        concrete = tuple(dims[d] if isinstance(d, str) else d for d in shape)
        args.append(sampler(concrete, rng) if sampler else rng.standard_normal(concrete))
    ref = f(*[torch.tensor(a, dtype=D) for a in args]).item()
    for backend in ("numpy", "torch"):
        ins = args if backend == "numpy" else [torch.tensor(a) for a in args]
        value, _ = g.compile(backend, with_value=True)(*ins)
        np.testing.assert_allclose(float(value), ref, rtol=1e-11, atol=1e-12)


FUNCTIONS = {
    "max_pool2d_ceil_pad_dilation": (lambda x: cubes(F.max_pool2d(x, 3, 2, 1, (1, 2), True)),
                                     {"x": ("N", 2, 7, 8)}),
    "max_pool1d_unbatched": (lambda x: cubes(F.max_pool1d(x, 3, 2, 1)), {"x": (3, 9)}),
    "max_pool3d": (lambda x: cubes(F.max_pool3d(x, (2, 3, 2), (1, 2, 2), (1, 1, 0))),
                   {"x": (1, 2, 4, 5, 4)}),
    "avg_pool2d_options": (lambda x: cubes(F.avg_pool2d(x, 3, 2, 1, True, False)),
                           {"x": ("N", 2, 7, 6)}),
    "avg_pool2d_divisor": (lambda x: cubes(F.avg_pool2d(x, (2, 3), 1, (1, 0),
                                                        divisor_override=4)), {"x": (2, 2, 5, 6)}),
    "avg_pool1d": (lambda x: cubes(F.avg_pool1d(x, 4, 3, 2, True)), {"x": (2, 2, 11)}),
    "avg_pool3d": (lambda x: cubes(F.avg_pool3d(x, 2, (1, 2, 2), 1, True, False)),
                   {"x": (1, 2, 4, 5, 4)}),
    "adaptive_avg_pool2d": (lambda x: cubes(F.adaptive_avg_pool2d(x, (3, 5))),
                            {"x": ("N", 2, 7, 6)}),
    "adaptive_avg_pool1d_grow": (lambda x: cubes(F.adaptive_avg_pool1d(x, 7)), {"x": (2, 3, 4)}),
    "adaptive_avg_pool3d": (lambda x: cubes(F.adaptive_avg_pool3d(x, (2, None, 3))),
                            {"x": (1, 2, 3, 4, 5)}),
    "adaptive_max_pool2d": (lambda x: cubes(F.adaptive_max_pool2d(x, (3, 4))),
                            {"x": ("N", 2, 7, 6)}),
    "adaptive_max_pool1d": (lambda x: cubes(F.adaptive_max_pool1d(x, 4)), {"x": (2, 9)}),
    "adaptive_max_pool3d": (lambda x: cubes(F.adaptive_max_pool3d(x, 2)), {"x": (1, 2, 3, 4, 5)}),
    "lp_pool2d": (lambda x: F.lp_pool2d(x.exp(), 3, 2).sum(), {"x": (2, 2, 4, 6)}),
    "lp_pool1d": (lambda x: F.lp_pool1d(x.exp(), 2, 3, 2, ceil_mode=True).sum(), {"x": (2, 7)}),
    "nearest_scale": (lambda x: cubes(F.interpolate(x, scale_factor=(1.7, 0.6))),
                      {"x": ("N", 2, 5, 6)}),
    "nearest_exact_size": (lambda x: cubes(F.interpolate(x, (7, 3), mode="nearest-exact")),
                           {"x": (1, 2, 5, 6)}),
    "linear": (lambda x: cubes(F.interpolate(x, scale_factor=2.5, mode="linear")),
               {"x": (2, 2, 4)}),
    "bilinear_align": (lambda x: cubes(F.interpolate(x, (7, 3), mode="bilinear",
                                                     align_corners=True)), {"x": ("N", 2, 4, 5)}),
    "bicubic": (lambda x: cubes(F.interpolate(x, scale_factor=1.6, mode="bicubic")),
                {"x": (1, 2, 4, 5)}),
    "bicubic_recompute": (lambda x: cubes(F.interpolate(x, scale_factor=1.6, mode="bicubic",
                                                        recompute_scale_factor=True)),
                          {"x": (1, 2, 4, 5)}),
    "trilinear": (lambda x: cubes(F.interpolate(x, (3, 5, 4), mode="trilinear")),
                  {"x": (1, 2, 2, 3, 3)}),
    "area": (lambda x: cubes(F.interpolate(x, scale_factor=0.6, mode="area")),
             {"x": (1, 2, 7, 6)}),
    "upsample_bilinear": (lambda x: cubes(F.upsample_bilinear(x, scale_factor=2)),
                          {"x": (1, 2, 3, 3)}),
    "upsample_nearest": (lambda x: cubes(F.upsample_nearest(x, size=(5, 4))),
                         {"x": (1, 2, 3, 3)}),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_against_torch(name):
    f, shapes = FUNCTIONS[name]
    dims = {"N": 2} if any("N" in s for s in shapes.values()) else None
    check(f, shapes, dims)
    values_agree(f, shapes, {"N": 3})


MODULES = {
    "MaxPool2d": (lambda: nn.MaxPool2d(3, 2, 1, ceil_mode=True), {"input": ("N", 2, 6, 5)}),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), {"input": (2, 3, 6)}),
    "AvgPool2d": (lambda: nn.AvgPool2d(3, 1, 1, count_include_pad=False), {"input": (2, 2, 5, 4)}),
    "AvgPool3d": (lambda: nn.AvgPool3d(2), {"input": (1, 2, 4, 4, 2)}),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), {"input": ("N", 2, 5, 4)}),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2), {"input": (2, 2, 5, 4)}),
    "LPPool2d": (lambda: nn.LPPool2d(2, 2), {"input": (1, 2, 4, 4)}),
    "Upsample_bilinear": (lambda: nn.Upsample(scale_factor=2, mode="bilinear"),
                          {"input": (1, 2, 3, 3)}),
    "Upsample_nearest": (lambda: nn.Upsample(size=(5, 4)), {"input": ("N", 2, 3, 3)}),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=1.5),
                             {"input": (1, 2, 3, 4)}),
    "conv_free_net": (lambda: nn.Sequential(nn.Linear(6, 6), nn.Unflatten(-1, (1, 2, 3)),
                                            nn.Upsample(scale_factor=2, mode="bilinear"),
                                            nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1),
                                            nn.Flatten()), {"input": (3, 6)}),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_against_torch(name):
    torch.manual_seed(0)
    make, shapes = MODULES[name]
    dims = {"N": 2} if any("N" in s for s in shapes.values()) else None
    check(make(), shapes, dims, loss=cubes)


def test_ties_and_nan_follow_torch():
    """Windows full of equal values send the gradient to their first maximum; a window
    holding nan sends it to its (last) nan, as torch's kernels do."""
    x = torch.tensor([[[1.0, 1.0, 0.0, 1.0], [1.0, float("nan"), 1.0, 1.0],
                       [2.0, 2.0, 2.0, float("nan")]]], dtype=D)
    for f in (lambda x: F.max_pool2d(x, 2, 1), lambda x: F.adaptive_max_pool2d(x, (2, 3)),
              lambda x: F.max_pool1d(x, 3, 1, 1)):
        g = sg.grad_fn(lambda x: (f(x) * torch.arange(1.0, 7.0).reshape(-1)[:1]).sum(),
                       shapes={"x": (1, 3, 4)})
        t = x.clone().requires_grad_()
        (f(t) * torch.arange(1.0, 7.0)[:1]).sum().backward()
        for backend in ("numpy", "torch"):
            arg = x.numpy() if backend == "numpy" else x
            (ours,) = g.compile(backend)(arg)
            np.testing.assert_array_equal(np.asarray(ours), t.grad.numpy())


def test_nearest_and_linear_index_rules_at_awkward_sizes():
    """torch computes nearest indices in float32 (floor(o · scale)) and copies an axis a
    linear mode keeps at its size even when given a scale factor."""
    rng = np.random.default_rng(0)
    for n in (3, 5, 7):
        x = rng.standard_normal((1, 1, n))
        for kw in (dict(size=2 * n + 1), dict(size=n - 1), dict(scale_factor=1.1),
                   dict(scale_factor=1 / 3), dict(scale_factor=2.7)):
            for mode in ("nearest", "nearest-exact", "linear"):
                ref = F.interpolate(torch.tensor(x), mode=mode, **kw)
                w = torch.linspace(-1, 2, ref.shape[-1], dtype=D)
                values_agree(lambda x: (F.interpolate(x, mode=mode, **kw) * w).sum(),
                             {"x": (1, 1, n)}, rng_seed=n)


def test_symbolic_spatial_dims_compile_for_any_size():
    """Output sizes are dim expressions (floor((H - 1)/2) + 1); the compiled code binds H."""
    f = lambda x: cubes(F.max_pool2d(x, 3, 2, 1)) + cubes(F.avg_pool2d(x, 2))  # noqa: E731
    g = sg.grad_fn(f, shapes={"x": ("N", 2, "H", "W")})
    for h, w in ((5, 6), (8, 7)):
        check(f, {"x": ("N", 2, "H", "W")}, {"N": 2, "H": h, "W": w})
    up = lambda x: cubes(F.interpolate(x, scale_factor=2, mode="bilinear"))  # noqa: E731
    check(up, {"x": (1, 2, "H", "W")}, {"H": 3, "W": 4})
    assert "max_pool2d_backward" in str(g)


def test_formulas_print_as_ops():
    g = sg.grad_fn(lambda x: cubes(F.max_pool2d(x, 2)) + cubes(F.interpolate(
        x, scale_factor=2, mode="bilinear")) + cubes(F.adaptive_avg_pool2d(x, 3)),
        shapes={"x": ("N", 2, 6, 6)})
    text = str(g)
    for piece in ("max_pool2d_backward(", "max_pool2d(", "interpolate_backward(",
                  "mode='bilinear'", "adaptive_avg_pool2d_backward("):
        assert piece in text, piece
    assert "\\operatorname{max\\_pool2d\\_backward}" in g.latex()
    assert "max_pool2d" in g.program()
    source = g.source("numpy")
    assert "symgrad" not in source and "def _max_where" in source
    x = sg.symbol("x", (2, 6))
    (gx,) = sg.grad(cubes(F.max_pool1d(x, 2)), [x])
    (hx,) = sg.grad((gx * gx).sum(), [x])   # second order: the gather reads the gradient
    assert "max_pool1d_gather(" in str(hx) and "max_pool1d_backward(" in str(hx)


def test_refusals_are_clear():
    x4 = {"x": (1, 2, 4, 4)}
    cases = [
        (lambda x: F.max_pool2d(x, 2, padding=2).sum(), x4, ParameterError, "at most half"),
        (lambda x: F.max_pool2d(x[0, 0, 0], 2).sum(), x4, ShapeError, "3-D or 4-D"),
        (lambda x: F.avg_pool2d(x, 2, divisor_override=0).sum(), x4, ParameterError,
         "divisor_override"),
        (lambda x: F.max_pool2d(x, 5).sum(), x4, ShapeError, "too small"),
        (lambda x: F.interpolate(x, scale_factor=2, mode="nearest", antialias=True).sum(), x4,
         ParameterError, "antialias"),
        (lambda x: F.interpolate(x, size=3, mode="nearest", align_corners=True).sum(), x4,
         ParameterError, "align_corners"),
        (lambda x: F.interpolate(x, mode="nearest").sum(), x4, ParameterError, "exactly one"),
        (lambda x: F.interpolate(x, size=3, mode="trilinear").sum(), x4, ShapeError, "5-D"),
        (lambda x: F.interpolate(x, size=3, mode="lanczos").sum(), x4, UnsupportedOpError,
         "lanczos"),
        (lambda x: F.max_pool2d(x, 3, ceil_mode=True).sum(), {"x": (1, 2, "H", 4)}, ShapeError,
         "concrete size"),
    ]
    for f, shapes, error, match in cases:
        with pytest.raises(error, match=match):
            sg.grad_fn(f, shapes=shapes)


def test_return_indices_values_trace():
    """(The indices, an integer tensor, are checked in test_unpool.py.)"""
    def ok(x):
        values, _ = F.max_pool2d(x, 2, return_indices=True)
        return cubes(values)
    check(ok, {"x": (1, 2, 4, 4)})


def test_compiled_torch_max_pool_follows_an_input_written_in_place():
    """The torch code keeps a max pool's argmax with its input for the backward op of
    the same call; an input written in place between calls must be pooled again."""
    def f(x):
        return (F.max_pool2d(x, 2) ** 2).sum()
    fn = sg.grad_fn(f, shapes={"x": (1, 1, 4, 4)}).compile("torch")
    x = torch.arange(16.0, dtype=torch.float64).reshape(1, 1, 4, 4)
    for _ in range(2):
        t = x.clone().requires_grad_()
        (ref,) = torch.autograd.grad(f(t), t)
        (ours,) = fn(x)
        assert torch.equal(ours, ref)
        x.mul_(-1.0)              # same tensor, new values: the argmax moves
