"""Pooling indices and unpooling through the torch front end (torchfront/unpool.py,
core/ops/unpool.py): F.max_pool*d / adaptive_max_pool*d with return_indices=True (integer
indices equal to torch's), F.max_unpool1d/2d/3d, ATen's max_pool2d_with_indices_backward,
torch.constant_pad_nd and F.pad's negative padding, against torch.autograd in float64 at
orders 1 and 2 (``sg.check``), plus printed formulas and the refusals."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ArgumentError, ShapeError, UnsupportedOpError

D = torch.float64


def cubes(y):
    return (y * y * y).sum()


def check(f, shapes, dims=None, **kw):
    report = sg.check(f, shapes=shapes, dims=dims, order=2, trials=2, **kw)
    assert report.ok
    return report


@pytest.mark.parametrize("d, call", [
    (1, lambda x: F.max_pool1d(x, 3, 2, 1, return_indices=True)),
    (2, lambda x: F.max_pool2d(x, 3, 2, 1, (1, 2), True, return_indices=True)),
    (3, lambda x: F.max_pool3d(x, 2, (1, 2, 2), 1, return_indices=True)),
    (2, lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True)),
    (1, lambda x: F.adaptive_max_pool1d(x, 4, return_indices=True)),
])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_indices_are_torchs(d, call, backend):
    """d/dx sum(values * indices) is each window's index at its maximum: exact, with ties."""
    shape = (2, 3) + (5, 6, 4)[:d]
    x = torch.tensor(np.random.default_rng(d).choice([0.0, 1.0, 2.0], size=shape), dtype=D)
    g = sg.grad_fn(lambda x: (call(x)[0] * call(x)[1]).sum(), shapes={"x": shape})
    ours = g.compile(backend)(x.numpy() if backend == "numpy" else x)
    xs = x.clone().requires_grad_()
    ref, = torch.autograd.grad((call(xs)[0] * call(xs)[1]).sum(), xs)
    np.testing.assert_array_equal(np.asarray(ours[0] if isinstance(ours, tuple) else ours),
                                  ref.numpy())


UNPOOL = {
    "unpool2d_of_pool": (lambda x: cubes(F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True),
                                                        2)), {"x": (2, 3, 4, 6)}),
    "unpool1d_output_size": (lambda x: cubes(F.max_unpool1d(
        *F.max_pool1d(x, 3, 2, 1, return_indices=True), 3, 2, 1, output_size=(2, 2, 9))),
        {"x": (2, 2, 9)}),
    "unpool3d_modules": (lambda x: cubes(nn.MaxUnpool3d(2)(
        *nn.MaxPool3d(2, return_indices=True)(x))), {"x": (1, 2, 4, 4, 2)}),
    "unpool_adaptive_indices": (lambda x: cubes(F.max_unpool2d(
        *F.adaptive_max_pool2d(x, (2, 3), return_indices=True), (2, 2), output_size=(4, 6))),
        {"x": (1, 2, 4, 6)}),
    "symbolic_batch": (lambda x: cubes(F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True),
                                                      2)), {"x": ("N", 2, 4, 4)}),
    "with_indices_backward": (lambda x, g: cubes(torch.ops.aten.max_pool2d_with_indices_backward(
        g * g, x, [3, 3], [2, 2], [1, 1], [1, 1], False,
        F.max_pool2d(x, 3, 2, 1, return_indices=True)[1])), {"x": (1, 2, 5, 5), "g": (1, 2, 3, 3)}),
}


@pytest.mark.parametrize("name", sorted(UNPOOL))
def test_unpool_gradients(name):
    f, shapes = UNPOOL[name]
    check(f, shapes, dims={"N": 2} if "N" in str(shapes) else None)


def test_unpool_with_constant_indices():
    x0 = torch.randn(1, 2, 4, 4, dtype=D)
    _, idx = F.max_pool2d(x0, 2, return_indices=True)
    check(lambda v: cubes(F.max_unpool2d(v, idx, 2)), {"v": (1, 2, 2, 2)})


PADS = {
    "replicate_crop_to_nothing": (lambda x: cubes(F.pad(x, (-4, 5, 0, 0), mode="replicate")),
                                  {"x": (2, 3, 4, 4)}),
    "replicate_mixed": (lambda x: cubes(F.pad(x, (5, -4, -1, 3), mode="replicate")),
                        {"x": (1, 2, 4, 6)}),
    "reflect_negative": (lambda x: cubes(F.pad(x, (2, -1), mode="reflect")), {"x": (2, 5)}),
    "circular_negative": (lambda x: cubes(F.pad(x, (-1, 2), mode="circular")), {"x": (2, 5)}),
    "constant_pad_nd": (lambda x: cubes(torch.constant_pad_nd(x, (1, -1, 2, 0), 0.5)),
                        {"x": (2, 3, 4)}),
    "constant_on_empty": (lambda x: cubes(F.pad(x, (1, 1, 1, 1, 1, 1))), {"x": (0, 2, 2)}),
}


@pytest.mark.parametrize("name", sorted(PADS))
def test_pad_gradients(name):
    f, shapes = PADS[name]
    check(f, shapes)


def test_formulas_read_as_unpooling():
    g = sg.grad_fn(lambda x: cubes(F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2)),
                   shapes={"x": (1, 1, 4, 4)})
    text = str(g)
    assert "max_unpool(" in text and "max_pool2d_indices(x, kernel_size=(2, 2)" in text
    assert "unpool_gather(" in text


def test_index_out_of_range_raises_at_call_time():
    g = sg.grad_fn(lambda x, i: cubes(F.max_unpool1d(x, i, 2)),
                   shapes={"x": (1, 1, 2), "i": sg.TensorSpec((1, 1, 2), dtype="int64")})
    for backend, conv in (("numpy", np.asarray), ("torch", torch.as_tensor)):
        fn = g.compile(backend)
        fn(conv(np.ones((1, 1, 2))), conv(np.array([[[0, 3]]])))
        with pytest.raises(ArgumentError, match="index 4 is out of range"):
            fn(conv(np.ones((1, 1, 2))), conv(np.array([[[0, 4]]])))


def test_refusals():
    with pytest.raises(ShapeError, match="invalid output_size"):
        sg.grad_fn(lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2,
                                            output_size=(9, 9)).sum(), shapes={"x": (1, 1, 4, 4)})


@pytest.mark.parametrize("d, shape, kernel, out", [
    (2, (2, 3, 9, 7), (3, 2), (4, 3)), (3, (1, 2, 6, 5, 7), (2, 3, 2), (3, 2, 4)),
    (2, (3, 8, 8), 2, (5, 4))])
def test_fractional_max_pool_with_fixed_windows(d, shape, kernel, out):
    """Values and indices of torch's fractional max pool given _random_samples: orders 1
    and 2 of the values, and d/dx sum(values * indices) equal to torch's exactly."""
    n = 1 if len(shape) == d + 1 else shape[0]
    samples = torch.rand(n, shape[-d - 1], d, dtype=D, generator=torch.Generator().manual_seed(d))
    fn = F.fractional_max_pool2d if d == 2 else F.fractional_max_pool3d

    def pooled(x):
        return fn(x, kernel, output_size=out, return_indices=True, _random_samples=samples)
    check(lambda x: cubes(pooled(x)[0]), {"x": shape})
    x0 = torch.randn(shape, dtype=D, generator=torch.Generator().manual_seed(1))
    g = sg.grad_fn(lambda x: (pooled(x)[0] * pooled(x)[1]).sum(), shapes={"x": shape})
    xs = x0.clone().requires_grad_()
    ref, = torch.autograd.grad((pooled(xs)[0] * pooled(xs)[1]).sum(), xs)
    for backend, arg in (("numpy", x0.numpy()), ("torch", x0)):
        ours = g.compile(backend)(arg)
        np.testing.assert_array_equal(np.asarray(ours[0] if isinstance(ours, tuple) else ours),
                                      ref.numpy())


def test_fractional_ratio_and_refusal():
    samples = torch.rand(1, 2, 2, dtype=D, generator=torch.Generator().manual_seed(0))
    check(lambda x: cubes(F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5),
                                                  _random_samples=samples)), {"x": (1, 2, 8, 6)})
    with pytest.raises(UnsupportedOpError, match="fractional_max_pool3d.*drawn at random"):
        sg.grad_fn(lambda x: F.fractional_max_pool3d(x, 2, output_size=2).sum(),
                   shapes={"x": (1, 1, 5, 5, 5)})
