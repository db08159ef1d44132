"""The convolution family through the torch front end: nn.Conv*d / nn.ConvTranspose*d
modules (bias, groups, depthwise, every padding_mode, 'same'), F.pad in every mode,
unfold/fold and pixel shuffles, checked against torch.autograd in float64 at orders 1
and 2 on both backends; the printed gradients read as convolutions; bad arguments are
refused with errors that say what to do. (The ops themselves are covered by their
specs in rule_specs.py: test_rules, test_registry.)"""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from symgrad.errors import ParameterError, ShapeError

D = torch.float64


def square_sum(y):
    return (y * y).sum()


def curved(y):
    """A loss with non-constant second derivatives (a plain sum of squares would give
    Hessian-vector products blind to the curvature of sin)."""
    return (y * y).sum() + torch.sin(y).sum()


MODULES = {
    "conv1d_bias": (lambda: nn.Conv1d(3, 4, 3), (3, 9)),
    "conv1d_reflect_stride": (lambda: nn.Conv1d(2, 4, 4, stride=2, padding=2, groups=2,
                                                padding_mode="reflect"), (2, 10)),
    "conv1d_circular_dilation": (lambda: nn.Conv1d(2, 3, 3, padding=3, dilation=2,
                                                   padding_mode="circular"), (2, 7)),
    "conv2d_stride_padding": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (3, 7, 6)),
    "conv2d_depthwise_same": (lambda: nn.Conv2d(4, 4, 3, groups=4, padding="same"), (4, 5, 5)),
    "conv2d_groups_replicate": (lambda: nn.Conv2d(4, 6, (3, 2), groups=2, padding=(1, 2),
                                                  padding_mode="replicate", bias=False),
                                (4, 5, 6)),
    "conv2d_same_even_kernel": (lambda: nn.Conv2d(2, 3, (4, 2), padding="same", dilation=(1, 2)),
                                (2, 6, 5)),
    "conv3d_circular": (lambda: nn.Conv3d(2, 2, 2, stride=(1, 2, 1), padding=1,
                                          padding_mode="circular"), (2, 3, 4, 3)),
    "conv_transpose1d_groups": (lambda: nn.ConvTranspose1d(4, 2, 3, groups=2, dilation=2),
                                (4, 5)),
    "conv_transpose2d_output_padding": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2,
                                                                   padding=1, output_padding=1),
                                        (3, 4, 3)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False),
                         (2, 2, 3, 2)),
}


def _module(name):
    torch.manual_seed(sorted(MODULES).index(name))
    return MODULES[name][0]()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_torch_autograd(name):
    """sg.check runs the real module under torch.autograd: gradients and Hessian-vector
    products on both backends, at two batch sizes of one traced formula."""
    module = _module(name)
    shapes = {"input": ("N",) + MODULES[name][1]}
    for n in (1, 3):
        report = sg.check(module, shapes=shapes, loss=curved, dims={"N": n}, order=2,
                          trials=1)
        assert report.ok


@pytest.mark.parametrize("name", ["conv2d_stride_padding", "conv_transpose2d_output_padding",
                                  "conv1d_reflect_stride"])
def test_module_gradients_equal_backward(name):
    """The compiled gradients of every parameter (NumPy and torch) are what
    loss.backward() puts in .grad, on an input of the module's own dtype."""
    module = _module(name).double()
    shapes = {"input": ("N",) + MODULES[name][1]}
    fn = sg.module_function(module, shapes=shapes, loss=curved)
    g = sg.grad_fn(fn)
    x = torch.randn((2,) + MODULES[name][1], dtype=D)
    curved(module(x)).backward()
    expected = [p.grad.numpy() for p in module.parameters()]
    for backend in ("numpy", "torch"):
        grads = g.compile(backend)(*fn.arguments(x, backend=backend))
        for ours, ref in zip(grads, expected):
            np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-10, atol=1e-12)


def test_unbatched_input_and_input_gradient():
    torch.manual_seed(0)
    module = nn.Conv2d(2, 3, 3, stride=2, padding=1)
    report = sg.check(module, shapes={"input": (2, 7, 6)}, loss=curved, order=2,
                      wrt=("input", "weight"))
    assert report.ok


def test_small_conv_net():
    """A LeNet-like stack: convolutions, relu, a transposed convolution, pixel shuffle."""
    torch.manual_seed(1)
    net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.Tanh(),
                        nn.Conv2d(4, 8, 3, stride=2, groups=2), nn.Tanh(),
                        nn.ConvTranspose2d(8, 4, 2, stride=2), nn.PixelShuffle(2),
                        nn.Flatten(), nn.Linear(4 * 1 * 1 * 4 * 4, 3))
    assert sg.check(net, shapes={"input": ("N", 1, 5, 5)}, loss=curved, dims={"N": 2},
                    order=2, trials=1).ok


# ----- functional forms -----------------------------------------------------------------

def _verify(f, shapes, **kw):
    report = sg.check(f, shapes=shapes, order=2, trials=1, **kw)
    assert report.ok
    return report


PADS = [((1, 2), "constant", None), ((1, 0, 2, 1), "constant", 0.5),
        ((-1, 2, 0, -1), "constant", None), ((2, 1, 1, 2), "reflect", None),
        ((2, 3, 1, 0), "replicate", None), ((1, 2, 2, 1), "circular", None),
        ((1, 1, 1, 1, 1, 1), "circular", None), ((0, 1, 2, 0, 1, 1), "replicate", None),
        ((3, 3, 0, 0), "reflect", None), ((1, 1, 0, 0, 0, 0, 2, 1), "constant", -1.0)]


@pytest.mark.parametrize("pad, mode, value", PADS, ids=[f"{m}{p}" for p, m, _ in PADS])
def test_pad_modes(pad, mode, value):
    kw = {} if value is None else {"value": value}
    _verify(lambda x: curved(F.pad(x, pad, mode=mode, **kw)), {"x": (2, 3, 4, 5)})


def test_pad_symbolic_dims():
    for mode in ("reflect", "replicate", "circular", "constant"):
        _verify(lambda x: curved(F.pad(x, (2, 1), mode=mode)), {"x": ("N", "L")},
                dims={"N": 2, "L": 5})


def test_unfold_fold_pixel_shuffle():
    _verify(lambda x: curved(F.fold(F.unfold(x, 2, padding=1) * 2.0, (5, 4), 2, padding=1)),
            {"x": ("N", 3, 5, 4)}, dims={"N": 2})
    _verify(lambda x: curved(F.pixel_unshuffle(F.pixel_shuffle(x, 2) ** 2, 2)),
            {"x": (2, 8, 3, 2)})
    _verify(lambda x: curved(nn.Unfold((2, 3), stride=2)(x)), {"x": (1, 2, 5, 7)})


def test_conv_with_symbolic_spatial_dims_and_stride():
    """Strided: the output size is floor((H + 2p - k)/s) + 1 in the forward formula; the
    input gradient needs H modulo the stride, so that dim must be concrete."""
    x = sg.symbol("x", ("N", 2, "H", 5))
    w = sg.symbol("w", (3, 2, 3, 3))
    y = sg.conv(x, w, stride=2, padding=1)
    assert str(y.shape[2]) == "floor(H/2 - 1/2) + 1"
    with pytest.raises(ShapeError, match="depends on H modulo the stride; give that dim a "
                                         "concrete size"):
        sg.grad_fn(lambda x, w: sg.sum(sg.conv(x, w, stride=2, padding=1)),
                   shapes={"x": ("N", 2, "H", 5), "w": (3, 2, 3, 3)})


# ----- formulas -------------------------------------------------------------------------

def test_gradient_formulas_read_as_convolutions():
    g = sg.grad_fn(lambda x, W: sg.sum(sg.conv(x, W, stride=2, padding=1) ** 2),
                   shapes={"x": ("N", 3, 8, 7), "W": (4, 3, 3, 2)})
    text = str(g)
    assert "df/dx = conv_transpose2d(t₁, W, stride=2, padding=1, output_padding=1)" in text
    assert "df/dW = conv2d_weight(x, t₁, kernel=(3, 2), stride=2, padding=1)" in text
    assert "t₁ = 2 conv2d(x, W, stride=2, padding=1)" in text
    latex = g.latex()
    assert r"\operatorname{conv2d}^{T}\left(t_{1}, W;\ \mathrm{stride=2}" in latex
    assert r"\operatorname{conv2d\_weight}\left(x, t_{1};" in latex


def test_module_formula_names_the_ops():
    torch.manual_seed(0)
    g = sg.grad_fn(nn.Conv2d(3, 4, 3, stride=2, padding=1, padding_mode="circular"),
                   shapes={"input": ("N", 3, 8, 8)}, loss=square_sum,
                   wrt=("input", "weight"))
    text = str(g)
    assert "conv_transpose2d(" in text and "conv2d_weight(" in text and "conv2d(" in text


def test_explicit_elements_of_a_small_convolution():
    """explicit() writes each gradient element as a SymPy expression of the input
    elements; evaluated, it equals torch's gradient."""
    g = sg.grad_fn(lambda x, w: sg.sum(sg.conv(x, w, stride=2, padding=1) ** 2),
                   shapes={"x": (1, 1, 5), "w": (1, 1, 3)})
    exprs = g.explicit()
    assert str(exprs["x"][0][0][0]) .startswith("2*w_")
    xs, ws = np.arange(1.0, 6.0), np.array([0.5, -1.0, 2.0])
    xt = torch.tensor(xs.reshape(1, 1, 5), requires_grad=True)
    wt = torch.tensor(ws.reshape(1, 1, 3), requires_grad=True)
    (F.conv1d(xt, wt, stride=2, padding=1) ** 2).sum().backward()
    values = {f"x_00{i}": v for i, v in enumerate(xs)}
    values.update({f"w_00{i}": v for i, v in enumerate(ws)})
    for key, ref in (("x", xt.grad), ("w", wt.grad)):
        arr = np.asarray(exprs[key], dtype=object)
        got = np.array([float(e.subs({s: values[s.name] for s in e.free_symbols}))
                        for e in arr.ravel()]).reshape(arr.shape)
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-12)


# ----- refusals -------------------------------------------------------------------------

def test_refusals_are_clear():
    x = sg.symbol("x", (2, 3, 6, 6))
    with pytest.raises(ShapeError, match=r"conv2d: input \(2, 3, 6, 6\) has 3 channels, but "
                                         r"weight \(4, 2, 3, 3\) with groups=1 expects 2"):
        sg.conv(x, sg.symbol("w", (4, 2, 3, 3)))
    with pytest.raises(ShapeError, match="must be divisible by groups"):
        sg.conv(x, sg.symbol("w", (4, 1, 3, 3)), groups=3)
    with pytest.raises(ShapeError, match="at least the dilated kernel"):
        sg.conv(x, sg.symbol("w", (4, 3, 4, 4)), dilation=2)
    with pytest.raises(ParameterError, match="stride must be >= 1"):
        sg.conv(x, sg.symbol("w", (4, 3, 3, 3)), stride=0)
    with pytest.raises(ShapeError, match="kernel sizes must be concrete"):
        sg.conv(x, sg.symbol("w", (4, 3, "k", 3)))

    def same_strided(x, w):
        return F.conv2d(x, w, stride=2, padding="same").sum()
    with pytest.raises(ParameterError, match="padding='same' is not supported for strided"):
        sg.grad_fn(same_strided, shapes={"x": (2, 3, 6, 6), "w": (4, 3, 3, 3)})
    with pytest.raises(ShapeError, match=r"reflect padding \(4, 0\) of dim 1 must be at most 3"):
        sg.grad_fn(lambda x: F.pad(x, (4, 0), mode="reflect").sum(), shapes={"x": (2, 4)})
    with pytest.raises(ParameterError, match="mode must be one of"):
        sg.grad_fn(lambda x: F.pad(x, (1, 0), mode="wrap").sum(), shapes={"x": (2, 4)})
    with pytest.raises(ShapeError, match="not divisible by upscale_factor"):
        sg.grad_fn(lambda x: F.pixel_shuffle(x, 2).sum(), shapes={"x": (1, 6, 2, 2)})


def test_numpy_kernels_have_no_pixel_loops():
    """The generated NumPy code uses sliding windows and matmul; loops run over kernel
    taps only (col2im), never over output positions."""
    g = sg.grad_fn(lambda x, w: sg.sum(sg.conv(x, w, stride=2, padding=1) ** 2),
                   shapes={"x": ("N", 3, 8, 7), "w": (4, 3, 3, 2)})
    source = g.source("numpy")
    assert "sliding_window_view" in source and "numpy.matmul" in source
    assert "for tap in numpy.ndindex(*kernel)" in source
    assert "_conv_transpose_t(torch.nn.functional.conv_transpose2d, " in g.source("torch")
