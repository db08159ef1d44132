"""torch's sorting, selection, scans and NaN-skipping statistics traced through the front
end (symgrad/torchfront/sorting.py, statistics.py): values, integer indices and gradients
at orders 1 and 2 against torch itself, on ties and NaNs where torch has a convention."""
import numpy as np
import pytest
import torch

import symgrad as sg

TIES = [-1.0, 0.0, 0.5, 2.0]


def _sample(values=None, nans=False):
    def sample(name, shape, rng):
        if values is not None:
            return rng.choice(values, size=shape).astype(float)
        x = rng.standard_normal(shape)
        if nans:
            x = np.where(rng.random(shape) < 0.3, np.nan, x)
        return x
    return sample


def _weighted(fn):
    """sum(out_k * w_k) over the float outputs of ``fn``: the harness's loss."""
    def loss(x):
        out = fn(x)
        outs = out if isinstance(out, tuple) else (out,)
        total = 0
        for o in outs:
            if isinstance(o, torch.Tensor) and not o.is_floating_point():
                continue
            if isinstance(o, sg.Tensor) and o.kind == "int":
                continue
            w = torch.linspace(-1.0, 1.5, int(np.prod(o.shape)) or 1,
                               dtype=torch.float64)[:int(np.prod(o.shape))].reshape(o.shape)
            total = total + (o * w).sum()
        return total
    return loss


CALLS = {
    "sort": lambda x: torch.sort(x, dim=1),
    "sort_desc": lambda x: torch.sort(x, dim=0, descending=True),
    "msort": torch.msort,
    "argsort_read": lambda x: torch.gather(x, 1, torch.argsort(x, dim=1)),
    "topk": lambda x: torch.topk(x, 2, dim=1),
    "topk_small": lambda x: torch.topk(x, 3, dim=0, largest=False),
    "kthvalue": lambda x: torch.kthvalue(x, 2, dim=1, keepdim=True),
    "median_dim": lambda x: torch.median(x, dim=1),
    "median_all": torch.median,
    "nanmedian_dim": lambda x: torch.nanmedian(x, dim=0),
    "nanmedian_all": torch.nanmedian,
    "mode": lambda x: torch.mode(x, dim=1),
    "max_dim": lambda x: torch.max(x, dim=1),
    "min_dim_keep": lambda x: torch.min(x, 0, keepdim=True),
    "argmax_read": lambda x: x.reshape(-1)[torch.argmax(x)] * x.sum(),
    "cummax": lambda x: torch.cummax(x, dim=1),
    "cummin": lambda x: torch.cummin(x, dim=0),
    "cumprod": lambda x: torch.cumprod(x, dim=1),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, 0),
    "aminmax": lambda x: torch.aminmax(x, dim=1),
    "var_mean": lambda x: torch.var_mean(x, dim=1, correction=0),
    "std_mean": lambda x: torch.std_mean(x, 0),
    "nansum": lambda x: torch.nansum(x, dim=1),
    "nanmean": lambda x: torch.nanmean(x),
    "quantile": lambda x: torch.quantile(x, 0.3, dim=1),
    "quantile_q": lambda x: torch.quantile(x, torch.tensor([0.0, 0.25, 1.0],
                                                            dtype=torch.float64), dim=0),
    "quantile_nearest": lambda x: torch.quantile(x, 0.5, interpolation="nearest"),
    "quantile_midpoint": lambda x: torch.quantile(x, 0.4, dim=1, keepdim=True,
                                                  interpolation="midpoint"),
    "nanquantile": lambda x: torch.nanquantile(x, 0.6, dim=1),
}
NAN_SAFE = {"sort", "sort_desc", "msort", "argsort_read", "kthvalue", "median_dim",
            "median_all", "nanmedian_dim", "nanmedian_all", "max_dim", "cummax",
            "cummin", "nansum", "nanmean", "quantile", "nanquantile"}
# torch leaves the order of equal elements unspecified here (its topk and kthvalue select
# without a stable sort, quantile sorts unstably); symgrad takes the stable order
TIES_UNSPECIFIED = {"topk", "topk_small", "kthvalue", "quantile_nearest"}


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize("data", ["normal", "ties", "nans"])
def test_against_torch_orders_1_and_2(name, data):
    if data == "nans" and name not in NAN_SAFE:
        pytest.skip("NaN propagates into every gradient, or torch leaves NaN unordered")
    if data == "ties" and name in TIES_UNSPECIFIED:
        pytest.skip("torch's choice among equal elements is unspecified")
    loss = _weighted(CALLS[name])
    sample = _sample(TIES if data == "ties" else None, nans=data == "nans")
    order = 1 if data == "nans" else 2       # torch's NaN Hessians are NaN noise
    sg.check(loss, shapes={"x": (4, 5)}, order=order, sample=sample, trials=2)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_indices_are_integer_tensors_equal_to_torch(backend):
    from symgrad.codegen.compile import compile_function
    x = np.array([[1., 2, 2, 3, 1, 3], [5, 4, 4, 5, 7, 7]])
    y = np.array([[1., np.nan, 2, np.nan, 0, 0.5]])
    for data in (x, y):
        for fn in (lambda t: torch.sort(t, 1, descending=True).indices,
                   lambda t: torch.sort(t, 1).indices, lambda t: torch.max(t, 1).indices,
                   lambda t: torch.mode(t, 1).indices, lambda t: torch.median(t, 1).indices,
                   lambda t: torch.nanmedian(t, 1).indices,
                   lambda t: torch.cummax(t, 1).indices, lambda t: torch.cummin(t, 1).indices,
                   lambda t: torch.argmin(t)):
            s = sg.symbol("x", data.shape)
            traced = fn(s)
            assert traced.kind == "int"
            (got,) = compile_function([traced], [s], backend)(
                data if backend == "numpy" else torch.tensor(data))
            assert np.array_equal(np.asarray(got), fn(torch.tensor(data)).numpy())


def test_median_of_everything_shares_the_gradient_between_ties():
    g = sg.grad_fn(lambda x: torch.median(x), shapes={"x": (5,)}).compile("numpy")
    (d,) = g(np.array([3.0, 1.0, 2.0, 2.0, 5.0]))
    assert np.allclose(d, [0, 0, 0.5, 0.5, 0])


@pytest.mark.parametrize("backend", ["numpy", "torch", "c", "jax", "numba"])
@pytest.mark.parametrize("fn", [torch.median, torch.nanmedian])
def test_median_of_an_empty_tensor_is_nan_as_torchs(fn, backend):
    """torch: nan, and an empty gradient; symgrad read past the end of the empty input."""
    from backend_support import require_backend
    require_backend(backend)
    g = sg.grad_fn(lambda x: fn(x) * 2, shapes={"x": ("m", "n")})
    for x in (np.zeros((0, 3)), np.zeros((2, 0)), np.array([[1.0, 4.0, 2.0], [np.nan, 3, 0]])):
        t = torch.tensor(x, requires_grad=True)
        out = fn(t) * 2
        (ref,) = torch.autograd.grad(out, [t])
        value, (d,) = g.compile(backend, with_value=True)(torch.tensor(x) if backend == "torch"
                                                         else x)
        np.testing.assert_array_equal(np.asarray(value), out.item())
        np.testing.assert_array_equal(np.asarray(d), ref.numpy())


def test_cumprod_is_exact_at_zeros_to_second_order():
    x = np.array([[2.0, 0.0, 3.0, 0.0, 1.5], [0.0, -1.0, 0.5, 2.0, 0.0]])
    sg.check(_weighted(lambda t: torch.cumprod(t, 1)), shapes={"x": (2, 5)},
             sample=lambda n, s, rng: x, trials=1)


def test_logcumsumexp_gradient_of_widely_spread_values():
    """d out_j / d x_i = exp(x_i - out_j) never overflows; torch's backward agrees."""
    x = torch.tensor([[-800.0, 0.0, 700.0, 1.0], [5.0, -5.0, 900.0, -900.0]],
                     dtype=torch.float64, requires_grad=True)
    loss = _weighted(lambda t: torch.logcumsumexp(t, 1))
    (d,) = sg.grad_fn(loss, shapes={"x": (2, 4)}).compile("numpy")(x.detach().numpy())
    (ref,) = torch.autograd.grad(loss(x), x)
    assert np.all(np.isfinite(d))
    assert np.allclose(d, ref.numpy())


def test_quantile_sends_gradient_to_a_symbolic_level():
    loss = lambda x, q: (torch.quantile(x, q, dim=1) * torch.tensor(  # noqa: E731
        [[1.0, -2.0, 0.5]], dtype=torch.float64).T).sum()
    sg.check(loss, shapes={"x": (3, 5), "q": (3,)},
             sample=lambda n, s, rng: rng.uniform(0, 1, s) if n == "q" else rng.normal(size=s))


def test_quantile_gradient_reads_as_ops():
    g = sg.grad_fn(lambda x: torch.quantile(x, 0.3, dim=1).sum(), shapes={"x": (3, 5)})
    text = str(g)
    assert "put_along_add" in text and "argsort" in text


@pytest.mark.parametrize("call, error, match", [
    (lambda x: torch.topk(x, 7, dim=1), sg.ShapeError, "k=7 is out of range"),
    (lambda x: torch.kthvalue(x, 0, dim=1), sg.ShapeError, "k=0 is out of range"),
    (lambda x: torch.quantile(x, 1.5), sg.ParameterError, r"q must be in \[0, 1\]"),
    (lambda x: torch.quantile(x, 0.5, interpolation="cubic"), sg.ParameterError,
     "interpolation must be one of"),
    (lambda x: torch.sort(x, dim=3), sg.SymgradError, "axis 3"),
])
def test_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call(sg.symbol("x", (3, 5)))


def test_quantile_of_a_symbolic_length_asks_for_a_concrete_one():
    with pytest.raises(sg.ShapeError, match="concrete length"):
        torch.quantile(sg.symbol("x", (3, "n")), 0.5, dim=1)


def test_sorting_with_a_symbolic_batch_compiles_for_both_backends():
    w = torch.tensor([1.0, -2.0, 0.5, 3.0], dtype=torch.float64)

    def loss(x):
        return (torch.sort(x, dim=1, descending=True).values * w).sum()
    g = sg.grad_fn(loss, shapes={"x": ("B", 4)})
    x = np.random.default_rng(0).normal(size=(3, 4))
    t = torch.tensor(x, requires_grad=True)
    (ref,) = torch.autograd.grad(loss(t), t)
    for backend in ("numpy", "torch"):
        (d,) = g.compile(backend)(x if backend == "numpy" else torch.tensor(x))
        assert np.allclose(np.asarray(d), ref.numpy())


def test_logcumsumexp_second_derivative_where_torch_s_is_wrong():
    """torch's logcumsumexp backward works with log(grad), so its double backward is wrong
    where the incoming gradient has zeros (amax of a running log-sum-exp); symgrad's
    Hessian equals central differences of torch's own first derivative."""
    def f(x):
        return torch.amax(torch.logcumsumexp(x, 1), 1).sin().sum()

    x = torch.tensor([[1.54, -0.29, -2.18, 0.57]], dtype=torch.float64)
    ours = np.asarray(sg.hessian(f, shapes={"x": (1, 4)})(x.numpy())).reshape(4, 4)

    def grad(z):
        z = z.clone().requires_grad_()
        return torch.autograd.grad(f(z), z)[0].reshape(-1)

    h = 1e-5
    steps = torch.eye(4, dtype=torch.float64).reshape(4, 1, 4) * h
    differences = torch.stack([(grad(x + e) - grad(x - e)) / (2 * h) for e in steps])
    np.testing.assert_allclose(ours, differences.numpy(), rtol=1e-6, atol=1e-8)
