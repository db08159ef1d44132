"""Elementwise tails (issue 15): the special-function kernels against torch over wide
ranges, the conventions torch has at the edges (sinc at 0, copysign of -0.0, poles of
lgamma and digamma, half and bfloat16 rounding of value and gradient), the refusals of
complex and in-place calls, and formulas that read as ops."""
import inspect
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg
from symgrad.core import ops as sgo
from symgrad.core.ops import special_kernels as K

from backend_support import require_backend

D = torch.float64


def signed(fn, names):
    fn.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    return fn


def grads(f, *arrays):
    """(symgrad's compiled NumPy gradient, torch.autograd's) of sum(f(...) * w)."""
    names = [f"x{k}" for k in range(len(arrays))]
    out = f(*[torch.tensor(a, dtype=D) for a in arrays])
    weights = torch.linspace(-1.0, 1.5, out.numel(), dtype=D).reshape(tuple(out.shape))

    def loss(*xs):
        return (f(*xs) * weights).sum()

    g = sg.grad_fn(signed(loss, names), shapes={n: np.shape(a) for n, a in zip(names, arrays)})
    ours = g.compile("numpy")(*arrays)
    xs = [torch.tensor(a, dtype=D, requires_grad=True) for a in arrays]
    ref = torch.autograd.grad(loss(*xs), xs, allow_unused=True, materialize_grads=True)
    ours = ours if isinstance(ours, tuple) else (ours,)
    return [np.asarray(o, dtype=float) for o in ours], [r.numpy() for r in ref]


def values(f, *arrays):
    """f's value, compiled (NumPy): the gradient of sum(f(...) * w) with respect to w."""
    names = [f"x{k}" for k in range(len(arrays))]
    shape = tuple(f(*[torch.tensor(a, dtype=D) for a in arrays]).shape)

    def loss(*xs):
        return (f(*xs[:-1]) * xs[-1]).sum()

    shapes = {n: np.shape(a) for n, a in zip(names, arrays)}
    g = sg.grad_fn(signed(loss, names + ["w"]), wrt="w", shapes={**shapes, "w": shape})
    out = g.compile("numpy")(*arrays, np.ones(shape))
    return np.asarray(out[0] if isinstance(out, tuple) else out, dtype=float)


def assert_grads(f, *arrays, rtol=1e-9):
    ours, ref = grads(f, *arrays)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o, r, rtol=rtol, atol=1e-12, equal_nan=True)


X = np.concatenate([np.linspace(-8.7, 9.0, 301), [0.5, 1.0, 2.0, 40.0, -40.0, 1e-8]])


@pytest.mark.parametrize("name, ours, ref", [
    ("lgamma", K._sg_lgamma, torch.lgamma),
    ("digamma", lambda x: K._sg_polygamma(0, x), torch.digamma),
    ("polygamma2", lambda x: K._sg_polygamma(2, x), lambda t: torch.polygamma(2, t)),
    ("polygamma5", lambda x: K._sg_polygamma(5, x), lambda t: torch.polygamma(5, t)),
    ("erfcx", K._sg_erfcx, torch.special.erfcx),
    ("log_ndtr", K._sg_log_ndtr, torch.special.log_ndtr),
    ("i0", lambda x: K._sg_bessel_i(0, x, False), torch.special.i0),
    ("i0e", lambda x: K._sg_bessel_i(0, x, True), torch.special.i0e),
    ("i1", lambda x: K._sg_bessel_i(1, x, False), torch.special.i1),
    ("i1e", lambda x: K._sg_bessel_i(1, x, True), torch.special.i1e),
])
def test_kernels_match_torch(name, ours, ref):
    expected = ref(torch.tensor(X, dtype=D)).numpy()
    np.testing.assert_allclose(ours(X), expected, rtol=1e-10, atol=1e-13)


def test_erfinv_kernel_matches_torch_up_to_the_ends():
    u = np.concatenate([np.linspace(-0.99999, 0.99999, 401), [-1.0, 1.0, 0.0, 1.5]])
    np.testing.assert_allclose(K._sg_erfinv(u), torch.erfinv(torch.tensor(u)).numpy(),
                               rtol=1e-12, atol=1e-15, equal_nan=True)


def test_poles_and_infinities_as_torch():
    x = np.array([0.0, -1.0, -2.0, np.inf, -np.inf, np.nan])
    t = torch.tensor(x)
    np.testing.assert_array_equal(K._sg_lgamma(x), torch.lgamma(t).numpy())
    np.testing.assert_array_equal(K._sg_polygamma(0, x), torch.digamma(t).numpy())


def test_bfloat16_and_half_round_through_float32_as_torch():
    x = np.random.default_rng(0).standard_normal(20000) * 10
    x[:3] = [1 + 2 ** -8 + 1e-9, 1 + 2 ** -11 + 1e-12, 7e4]   # double rounding, overflow
    t = torch.tensor(x)
    np.testing.assert_array_equal(K._sg_bfloat16(x), t.bfloat16().double().numpy())
    np.testing.assert_array_equal(sgo.to_precision(x, "float16"), t.half().double().numpy())


@pytest.mark.parametrize("method", ["half", "bfloat16"])
def test_lower_precision_rounds_value_and_gradient(method):
    x = np.random.default_rng(1).standard_normal((3, 4)) * 5
    assert_grads(lambda t: getattr(t, method)() * t, x, rtol=0)
    assert_grads(lambda t: t.to(getattr(torch, "float16" if method == "half" else method)),
                 x, rtol=0)


def test_sinc_at_zero_is_one_with_zero_gradient():
    x = np.array([0.0, 0.5, -1.25, 3.0])
    assert_grads(torch.sinc, x)
    np.testing.assert_allclose(values(torch.sinc, x), torch.sinc(torch.tensor(x)).numpy(),
                               rtol=1e-15)


def test_copysign_follows_the_sign_bit():
    x = np.array([1.5, -2.0, 0.0, 3.0])
    y = np.array([-0.0, 0.0, -1.0, 2.0])
    assert_grads(torch.copysign, x, y)
    np.testing.assert_array_equal(values(torch.copysign, x, y),
                                  torch.copysign(torch.tensor(x), torch.tensor(y)))


def test_integer_valued_results_carry_no_gradient():
    x = np.array([-2.5, -0.4, 0.5, 1.5, 2.7])
    y = np.array([1.5, -2.0, 0.7, 0.3, -1.1])
    for fn in (torch.floor, torch.ceil, torch.trunc, torch.round,
               lambda t: torch.round(t, decimals=1), torch.frac):
        assert_grads(lambda t: fn(t) * t, x)
    for mode in ("trunc", "floor"):
        assert_grads(lambda a, b: torch.div(a, b, rounding_mode=mode) * a * b, x, y)
    assert_grads(torch.fmod, x, y)
    assert_grads(torch.remainder, x, y)
    assert_grads(lambda a, b: torch.Tensor.__rmod__(b, a), x, y)


def test_frexp_mantissa_and_exponent():
    x = np.array([0.0, 3.0, -0.3, 1e-300, 7e5])
    mantissa = values(lambda t: torch.frexp(t)[0], x)
    exponent = values(lambda t: torch.frexp(t)[1] * 1.0, x)
    ref = torch.frexp(torch.tensor(x))
    np.testing.assert_array_equal(mantissa, ref.mantissa.numpy())
    np.testing.assert_array_equal(exponent, ref.exponent.numpy())
    # torch divides by exponent.exp2() of its int32 exponent, in float32: inf for 1e-300
    assert_grads(lambda t: torch.frexp(t)[0], x[[0, 1, 2, 4]])


def test_nan_to_num_and_threshold():
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.3])
    np.testing.assert_array_equal(values(lambda t: torch.nan_to_num(t, neginf=-7.0), x),
                                  torch.nan_to_num(torch.tensor(x), neginf=-7.0))
    assert_grads(lambda t: torch.nan_to_num(t, posinf=3.0), x)
    assert_grads(lambda t: torch.nn.functional.threshold(t, 0.1, -2.0), x[3:])


def test_real_tensors_are_their_own_conjugate_real_part_and_angle():
    x = np.array([-1.5, 0.0, 2.0])
    for fn in (torch.conj, torch.conj_physical, torch.resolve_conj, torch.resolve_neg,
               torch.real, torch.positive):
        assert_grads(fn, x)
    assert_grads(lambda t: torch.angle(t) * t, x)
    assert_grads(lambda t: t.real * t, x)


@pytest.mark.parametrize("call", [lambda x: x.cdouble(), lambda x: x.cfloat(),
                                  lambda x: torch.view_as_complex(x),
                                  lambda x: torch.polar(x, x), lambda x: torch.complex(x, x)])
def test_complex_results_are_refused_with_what_to_do(call):
    with pytest.raises(sg.UnsupportedOpError, match="real-valued.*two real tensors"):
        sg.grad_fn(lambda x: call(x).sum(), shapes={"x": (3, 2)})


def test_in_place_fill_is_refused_with_the_out_of_place_forms():
    with pytest.raises(sg.UnsupportedOpError, match="zeros_like"):
        sg.grad_fn(lambda x: torch.zero_(x).sum(), shapes={"x": (3,)})
    assert_grads(lambda t: torch.fill(t, 2.5) * t, np.array([1.0, -2.0]))


def test_gradients_read_as_ops():
    g = sg.grad_fn(lambda x: (torch.lgamma(x) + torch.special.i1(x)
                              + torch.special.log_ndtr(x)).sum(), shapes={"x": (3,)})
    text = str(g)
    for name in ("ψ", "i0(x)", "log_ndtr(x)"):
        assert name in text, text


def test_torch_and_scalar_backends_agree_with_numpy():
    def f(x):
        return (torch.lgamma(x) + torch.polygamma(2, x) + torch.erfinv(x / 10)
                + torch.special.i1e(x) + torch.special.erfcx(x) + torch.special.log_ndtr(x)
                + torch.fmod(x, 0.7) + x.bfloat16() + x.half()).sum()
    g = sg.grad_fn(f, shapes={"x": (4,)})
    x = np.array([0.3, 1.7, 4.2, 8.9])
    ours = g.compile("numpy")(x)
    np.testing.assert_allclose(g.compile("torch")(torch.tensor(x))[0].numpy(), ours[0],
                               rtol=1e-12)
    scalar = sg.grad_fn(f, shapes={"x": ()})
    for v in x:
        np.testing.assert_allclose(scalar.compile("numpy")(v)[0],
                                   g.compile("numpy")(np.full(4, v))[0][0], rtol=1e-12)


def test_mvlgamma_and_second_order():
    x = np.array([[2.5, 3.1], [4.0, 7.5]])
    for p in (1, 3, 5):
        assert_grads(lambda t: torch.mvlgamma(t, p), x)
    report = sg.check(lambda x: (torch.special.i1(x) * torch.digamma(x)
                                 + torch.special.erfcx(x)).sum(),
                      shapes={"x": (4,)}, order=2,
                      sample=lambda name, shape, rng: rng.uniform(0.5, 3.0, shape))
    assert report.ok


def test_polygamma_order_must_be_a_natural_number():
    with pytest.raises(sg.SymgradError, match="n must be an integer >= 0"):
        sg.grad_fn(lambda x: torch.polygamma(-1, x).sum(), shapes={"x": (3,)})
    assert math.isclose(K._sg_polygamma(1, np.array([1.0]))[0], math.pi ** 2 / 6,
                        rel_tol=1e-14)


# ----- torch's values and gradients at the edges of the compositions, every backend -------

EDGE_BACKENDS = ("numpy", "torch", "jax", "c", "numba")


def assert_backends(f, *arrays):
    """The value and gradient of sum(f(...) * w) compiled for every backend (a scalar
    program too where the arrays are 1-d) against torch.autograd's, nan and inf included."""
    names = [f"x{k}" for k in range(len(arrays))]
    w = np.linspace(-1.0, 1.5, len(arrays[0]))

    def loss(*xs):
        weights = w if isinstance(xs[0], sg.Tensor) else torch.tensor(w)
        return (f(*xs) * weights).sum()

    xs = [torch.tensor(a, dtype=D, requires_grad=True) for a in arrays]
    out = loss(*xs)
    ref = [r.numpy() for r in torch.autograd.grad(out, xs, materialize_grads=True,
                                                   allow_unused=True)]
    g = sg.grad_fn(signed(loss, names), shapes={n: np.shape(a) for n, a in zip(names, arrays)})
    for backend in EDGE_BACKENDS:
        require_backend(backend)
        args = [torch.tensor(a) for a in arrays] if backend == "torch" else arrays
        value, ours = g.compile(backend, with_value=True)(*args)
        np.testing.assert_allclose(np.asarray(value, dtype=float), out.item(), rtol=1e-12,
                                   equal_nan=True, err_msg=backend)
        for o, r in zip(ours, ref):
            np.testing.assert_allclose(np.asarray(o, dtype=float), r, rtol=1e-12, atol=0,
                                       equal_nan=True, err_msg=backend)
    if len(arrays) <= 2:
        scalar = sg.grad_fn(signed(lambda *xs: f(*xs), names), shapes={n: () for n in names})
        for k in range(len(arrays[0])):
            point = [float(a[k]) for a in arrays]
            ts = [torch.tensor(p, dtype=D, requires_grad=True) for p in point]
            ref = torch.autograd.grad(f(*ts), ts, materialize_grads=True, allow_unused=True)
            for backend in ("numpy", "numba"):
                ours = scalar.compile(backend)(*point)
                np.testing.assert_allclose(np.asarray(ours, dtype=float),
                                           [r.item() for r in ref], rtol=1e-12,
                                           equal_nan=True, err_msg=f"{backend} at {point}")


_INF, _NAN = math.inf, math.nan


@pytest.mark.parametrize("fn", [torch.xlogy, torch.special.xlog1py])
def test_xlogy_gradient_at_zeros_of_x_is_torchs(fn):
    """d/dx at x == 0 is log y (log1p y), 0 only where y <= 0 (<= -1); nan where y is."""
    x = np.array([0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 2.0, -0.5, 0.0])
    y = np.array([2.5, 1.0, 0.0, -1.0, -2.0, _NAN, _INF, 0.0, -0.5, 3.0, 1e-300])
    assert_backends(fn, x, y)


@pytest.mark.parametrize("fn", [torch.fmax, torch.fmin])
def test_fmax_and_fmin_send_the_gradient_to_the_number_and_a_tie_to_x(fn):
    x = np.array([_NAN, 0.0, 1.0, _NAN, 2.0, -1.0, _INF])
    y = np.array([0.0, _NAN, 1.0, _NAN, -1.0, 2.0, _INF])
    assert_backends(fn, x, y)
    assert_backends(lambda a: fn(a, torch.tensor(0.5, dtype=D)), x)


def test_entr_at_nan_is_nan():
    """(At 0 and below torch's gradient is inf and nan, symgrad's 0: see entr.)"""
    assert_backends(torch.special.entr, np.array([_NAN, 0.5, 2.0, 1e-300]))


def test_logit_gradient_is_nan_outside_the_unit_interval_and_inf_at_its_ends():
    x = np.array([-1.0, 2.5, 0.0, 1.0, 0.25, 0.999, 1e-300, -0.0, _NAN])
    assert_backends(torch.logit, x)
    assert_backends(lambda t: torch.logit(t, eps=0.1), x)
    assert_backends(lambda t: torch.logit(t, eps=0.0), x[x != 0.0])


@pytest.mark.parametrize("power", [0.5, -0.5])
def test_half_powers_are_sqrt_and_rsqrt_as_torchs(power):
    """torch computes x ** ±0.5 as sqrt / rsqrt: -0.0 stays -0.0 (rsqrt -inf), -inf is
    nan; pow(-0.0, 0.5) is +0.0 and pow(-inf, 0.5) inf."""
    assert_backends(lambda t: t ** power, np.array([-0.0, -_INF, 4.0, _INF, 0.0]))
    assert_backends(lambda t: torch.pow(t, power), np.array([-0.0, -_INF, 2.5]))


@pytest.mark.parametrize("fn", [F.hardshrink, F.softshrink])
def test_shrinks_keep_nan_and_torchs_values_at_their_edges(fn):
    """(torch's own gradient at nan depends on the length of the tensor, its value not.)"""
    x = np.array([0.5, -0.5, 0.0, 0.7, -2.0, _INF, -_INF, 0.49])
    assert_backends(fn, x)
    assert_backends(lambda t: fn(t, 0.0), x)
    g = sg.grad_fn(lambda t: fn(t).sum(), shapes={"t": (2,)})
    for backend in EDGE_BACKENDS:
        require_backend(backend)
        value, _ = g.compile(backend, with_value=True)(np.array([_NAN, 1.0]))
        assert math.isnan(float(value)), backend
    if fn is F.softshrink:
        with pytest.raises(sg.ParameterError, match="lambd must be >= 0"):
            sg.grad_fn(lambda t: F.softshrink(t, -1.0).sum(), shapes={"t": (3,)})
