"""The compiled backends agree with torch and with each other on what they return: value,
type and dtype, and never memory shared with an argument.

Each case is a corner a new user meets on the first day: a constant gradient, a scalar
parameter of an array program, ids among the arguments, arguments of different float
dtypes, a gradient that is a view of an argument (x[0], W.T), an index past a symbolic
dim, a negative power at 0.
"""
import numpy as np
import pytest
import torch

import symgrad as sg

from backend_support import require_backend

BACKENDS = ("numpy", "torch", "jax", "c", "numba")
IDS = sg.TensorSpec(("n",), dtype="int64")


def compiled(g, backend, **kw):
    require_backend(backend)
    return g.compile(backend, **kw)


def call(fn, backend, *args):
    """``fn`` on NumPy arguments, or their torch tensors for the torch backend."""
    if backend == "torch":
        args = [torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a
                for a in args]
    return fn(*args)


def as_numpy(value):
    if isinstance(value, torch.Tensor):
        return value.numpy()
    return np.asarray(value)


def reference(f, *args):
    """torch.autograd's gradients of ``f`` (torch ops) at float64 NumPy ``args``; ids
    stay ints and get no gradient."""
    ts = [torch.tensor(a, requires_grad=np.asarray(a).dtype.kind == "f") for a in args]
    out = f(*ts)
    wrt = [t for t in ts if t.requires_grad]
    return [g.numpy() for g in torch.autograd.grad(out, wrt)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_constant_gradients_of_scalar_programs_are_floats(backend):
    g = sg.grad_fn(lambda x, y: 2 * x + sg.sin(y))
    fn = compiled(g, backend)
    dx, dy = fn(0.3, 0.7)
    assert float(dx) == 2.0 and float(dy) == pytest.approx(np.cos(0.7))
    if backend in ("numpy", "c", "numba"):
        assert type(dx) is float and type(dy) is float
    value, (dx, _) = compiled(g, backend, with_value=True)(0.3, 0.7)
    if backend in ("numpy", "c", "numba"):
        assert type(value) is float and type(dx) is float


@pytest.mark.parametrize("backend", ["numpy", "c", "numba"])
def test_scalar_parameters_of_array_programs_are_numpy_scalars(backend):
    """NumPy scalars, as the NumPy backend computes them: never an int for a constant
    gradient nor a 0-d array from ``numpy.where``."""
    cases = [(lambda x, s: sg.sum(x) + 2 * s, 2.0),
             (lambda x, s: sg.sum(x * sg.relu(s)), 3.0),
             (lambda x, s: sg.sum(sg.sin(x) * sg.cos(x)) + sg.exp(-sg.relu(s) ** 2), None)]
    for f, expected in cases:
        g = sg.grad_fn(f, shapes={"x": (3,), "s": ()})
        dx, ds = compiled(g, backend)(np.ones(3), 0.5)
        assert type(ds) is np.float64, (f, type(ds))
        if expected is not None:
            assert ds == expected
        dx32, ds32 = compiled(g, backend)(np.ones(3, np.float32), np.float32(0.5))
        assert dx32.dtype == np.float32 and ds32.dtype == np.float32


@pytest.mark.parametrize("backend", BACKENDS)
def test_arguments_of_different_float_dtypes_give_the_promoted_dtype(backend):
    g = sg.grad_fn(lambda x, y: sg.sum(sg.sin(x) * y), shapes={"x": ("n",), "y": ("n",)})
    x, y = np.linspace(0.1, 0.9, 3).astype(np.float32), np.linspace(1, 2, 3)
    dx, dy = call(compiled(g, backend), backend, x, y)
    for d in (dx, dy):
        assert as_numpy(d).dtype == np.float64
    want = reference(lambda x, y: (torch.sin(x) * y).sum(), x.astype(np.float64), y)
    np.testing.assert_allclose(as_numpy(dy), np.sin(x).astype(np.float64), rtol=1e-7)
    np.testing.assert_allclose(as_numpy(dx), want[0], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_0d_float64_argument_does_not_promote_float32_arrays(backend):
    """torch's rule: a 0-d tensor of the same category does not widen a dimensioned one.
    Every result is in that dtype (torch returns d/dy in y's own dtype, float64)."""
    g = sg.grad_fn(lambda x, y: sg.sum(sg.sin(x) * y), shapes={"x": ("n",), "y": ()})
    x, y = np.linspace(0.1, 0.9, 3).astype(np.float32), np.array(2.0)
    value, (dx, dy) = call(compiled(g, backend, with_value=True), backend, x, y)
    xt, yt = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out = (torch.sin(xt) * yt).sum()
    want = torch.autograd.grad(out, (xt, yt))
    assert out.dtype == torch.float32
    for got in (value, dx, dy):
        assert as_numpy(got).dtype == np.float32
    for got, w in zip((dx, dy), want):
        np.testing.assert_allclose(as_numpy(got), w.numpy(), rtol=1e-6)


IDS_TERMS = {
    "y - 1": (lambda x, y: sg.sum(x * (y - 1)), (4,)),
    "abs(y)": (lambda x, y: sg.sum(x * sg.abs(y)), (4,)),
    "y**3": (lambda x, y: sg.sum(x * y ** 3), (4,)),
    "where(y > 0, y, 5)": (lambda x, y: sg.sum(x * sg.where(y > 0, y, 5)), (4,)),
    "abs(y)[:2]": (lambda x, y: sg.sum(x * sg.abs(y)[:2]), (2,)),
    "(y**2)[1:]": (lambda x, y: sg.sum(x * (y ** 2)[1:]), (3,)),
    "abs(y).reshape": (lambda x, y: sg.sum(x * sg.reshape(sg.abs(y), (2, 2))), (2, 2)),
    "sum(abs(y))": (lambda x, y: sg.sum(x) * sg.sum(sg.abs(y)), (2,)),
    "detach(y)": (lambda x, y: sg.sum(x * sg.detach(y)), (4,)),
    "y[[1, 0, 3, 2]]": (lambda x, y: sg.sum(x * y[[1, 0, 3, 2]]), (4,)),
    "concatenate": (lambda x, y: sg.sum(x * sg.concatenate([y, y])), (8,)),
    "y @ y": (lambda x, y: sg.sum(x * (y @ y)), (2,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("term", sorted(IDS_TERMS))
def test_gradients_of_float_inputs_through_ids_are_floats(backend, term):
    """NumPy and torch compute abs(y), y**3, y[1:] and sum(y) of ids y as ints."""
    f, shape = IDS_TERMS[term]
    g = sg.grad_fn(f, shapes={"x": shape, "y": sg.TensorSpec((4,), dtype="int64")},
                   wrt="x")
    x = np.linspace(-1.2, 2.0, 4) if shape == (4,) else np.ones(shape)
    y = np.array([-3, 2, 1, 5])
    (dx,) = call(compiled(g, backend), backend, x, y)
    assert as_numpy(dx).dtype == np.float64
    want = reference(lambda x, y: f(x, y), x, y)[0]
    np.testing.assert_allclose(as_numpy(dx), want)


@pytest.mark.parametrize("backend", ["numpy", "torch", "c", "numba"])
@pytest.mark.parametrize("view", ["W[0]", "W[:, 1:]", "W.reshape", "W.T", "W[None]",
                                  "detach(W)"])
def test_a_gradient_never_shares_memory_with_an_argument(backend, view):
    """An optimiser writes into its gradients (``g *= 0``): a gradient that is a view of
    an argument would change the argument."""
    v = {"W[0]": lambda W: W[0], "W[:, 1:]": lambda W: W[:, 1:],
         "W.reshape": lambda W: W.reshape((6,)), "W.T": lambda W: W.T,
         "W[None]": lambda W: W[None],
         "detach(W)": lambda W: sg.detach(W) if isinstance(W, sg.Tensor) else W}[view]
    shape = v(np.zeros((2, 3))).shape
    g = sg.grad_fn(lambda x, W: sg.sum(x * v(W)), shapes={"x": shape, "W": (2, 3)},
                   wrt="x")
    W = np.arange(6.0).reshape(2, 3)
    args = [np.ones(shape), W]
    if backend == "torch":
        args = [torch.ones(shape, dtype=torch.float64), torch.from_numpy(W)]
    (dx,) = compiled(g, backend)(*args)
    assert not np.shares_memory(as_numpy(dx), W)
    np.testing.assert_array_equal(as_numpy(dx), v(W))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("index", ["x[3]", "x[-3]", "x[1:3]", "x[-3:]", "x[1:10:3]"])
def test_an_index_past_a_symbolic_dim_is_an_argument_error(backend, index):
    """torch raises there; NumPy would wrap x[-3] around and clamp x[1:3], and a compiled
    kernel would read past the end of the array."""
    f = {"x[3]": lambda x: 2 * x[3] + sg.sum(x), "x[-3]": lambda x: 2 * x[-3] + sg.sum(x),
         "x[1:3]": lambda x: sg.sum(x[1:3] ** 2), "x[-3:]": lambda x: sg.sum(x[-3:] ** 2),
         "x[1:10:3]": lambda x: sg.sum(x[1:10:3] ** 2)}[index]
    g = sg.grad_fn(f, shapes={"x": ("n",)})
    fn = compiled(g, backend)
    too_short = 7 if index == "x[1:10:3]" else 2    # x[1:10:3] takes x[7] last
    with pytest.raises(sg.ArgumentError, match=rf"indexing needs .* n = {too_short}"):
        call(fn, backend, np.ones(too_short))
    x = np.linspace(1, 2, 8 if index == "x[1:10:3]" else 5)
    (got,) = call(fn, backend, x)
    np.testing.assert_allclose(as_numpy(got), reference(lambda x: f(x), x)[0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_negative_integer_powers_at_zero_are_infinite(backend):
    g = sg.grad_fn(lambda x: sg.sum(x ** -2), shapes={"x": ("n",)})
    x = np.array([0.0, 1.0, -2.0])
    (got,) = call(compiled(g, backend), backend, x)
    np.testing.assert_array_equal(as_numpy(got), reference(lambda x: (x ** -2).sum(), x)[0])


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_negative_power_of_ids_is_never_an_integer_power(backend):
    """NumPy refuses ints to negative int powers; compiled kernels computed 0."""
    g = sg.grad_fn(lambda x, y: sg.sum(x * y ** -2), shapes={"x": ("n",), "y": IDS},
                   wrt="x")
    x, y = np.array([0.3, -1.2, 2.0, 0.7]), np.array([-3, 2, 1, 10 ** 10])
    try:
        (got,) = compiled(g, backend)(x, y)
    except sg.EvaluationError:
        assert backend == "numpy"
        return
    np.testing.assert_allclose(got, 1.0 / y.astype(float) ** 2)


@pytest.mark.parametrize("backend", ["numpy", "c", "numba"])
def test_scalar_ids_and_flags(backend):
    k, b = sg.TensorSpec((), dtype="int64"), sg.TensorSpec((), dtype="bool")
    g = sg.grad_fn(lambda s, k: s * (k * 2 + 1), shapes={"k": k}, wrt=0)
    (ds,) = compiled(g, backend)(1.5, 3)
    assert np.shape(ds) == () and ds == 7.0
    g = sg.grad_fn(lambda x, k: sg.sum(sg.exp(x) * (k + 1)), shapes={"x": ("n",), "k": k},
                   wrt=0)
    (dx,) = compiled(g, backend)(np.zeros(3), 3)
    np.testing.assert_array_equal(dx, np.full(3, 4.0))
    g = sg.grad_fn(lambda s, b: sg.where(b, s * s, s), shapes={"b": b}, wrt=0)
    assert compiled(g, backend)(1.5, True)[0] == 3.0
    assert compiled(g, backend)(1.5, False)[0] == 1.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_relu_passes_the_gradient_at_nan_as_torch_does(backend):
    """torch's threshold_backward keeps the gradient where x <= 0 is false, nan too."""
    x = np.array([np.nan, 1.0, -1.0, 0.0])
    for f in (lambda x: sg.sum(sg.relu(x)), lambda x: sg.sum(3.0 * sg.relu(x))):
        g = sg.grad_fn(f, shapes={"x": ("n",)})
        (got,) = call(compiled(g, backend), backend, x)
        want = reference(lambda x: f(x), x)[0]
        np.testing.assert_array_equal(as_numpy(got), want)


@pytest.mark.parametrize("backend", ["numpy", "torch", "c", "numba"])
@pytest.mark.parametrize("case", ["same", "transposed", "row"])
def test_two_gradients_never_share_memory(backend, case):
    """d/dx = exp(W) and d/dy = exp(W), exp(W).T or exp(W)[0]: one array in the program,
    two arrays returned, as torch.autograd returns."""
    f, ys = {"same": (lambda x, y, W: sg.sum(x * sg.exp(W)) + sg.sum(y * sg.exp(W)), (2, 3)),
             "transposed": (lambda x, y, W: sg.sum(x * sg.exp(W)) + sg.sum(y * sg.exp(W).T),
                            (3, 2)),
             "row": (lambda x, y, W: sg.sum(x * sg.exp(W)) + sg.sum(y * sg.exp(W)[0]),
                     (3,))}[case]
    g = sg.grad_fn(f, shapes={"x": (2, 3), "y": ys, "W": (2, 3)}, wrt=("x", "y"))
    args = [np.ones((2, 3)), np.ones(ys), np.arange(6.0).reshape(2, 3) / 10]
    dx, dy = call(compiled(g, backend), backend, *args)
    assert not np.shares_memory(as_numpy(dx), as_numpy(dy))
    want = reference(lambda x, y, W: f(x, y, W), *args)
    np.testing.assert_allclose(as_numpy(dx), want[0])
    np.testing.assert_allclose(as_numpy(dy), want[1])
