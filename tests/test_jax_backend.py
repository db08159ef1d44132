"""The JAX backend beyond the rule table (which holds it to torch.autograd op by op, see
``EXTRA_BACKENDS`` in test_rules): what it takes and returns, its dtypes, jit, its source,
and what happens without JAX."""
import sys

import numpy as np
import pytest

import symgrad as sg
from symgrad.errors import ArgumentError

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def mlp(x, w1, w2):
    return sg.sum(sg.tanh(x @ w1) @ w2)


SHAPES = {"x": ("N", 3), "w1": (3, 4), "w2": (4, 2)}


def _args(rng, n=5, dtype=np.float64):
    return [rng.standard_normal(s).astype(dtype) for s in ((n, 3), (3, 4), (4, 2))]


def test_takes_numpy_and_returns_jax_arrays_equal_to_numpy():
    g = sg.grad_fn(mlp, shapes=SHAPES)
    args = _args(np.random.default_rng(0))
    got = g.compile("jax")(*args)
    want = g.compile("numpy")(*args)
    for o, w in zip(got, want):
        assert isinstance(o, jax.Array)
        assert o.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-12)


def test_takes_jax_arrays_and_lists():
    g = sg.grad_fn(lambda x: sg.sum(x * x), shapes={"x": (3,)})
    f = g.compile("jax")
    with jax.enable_x64(True):
        (a,) = f(jnp.asarray([1.0, 2.0, 3.0]))
    (b,) = f([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(a), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(np.asarray(b), [2.0, 4.0, 6.0])


def test_float32_stays_float32_and_x64_stays_as_the_user_set_it():
    g = sg.grad_fn(mlp, shapes=SHAPES)
    f = g.compile("jax")
    before = jax.config.jax_enable_x64
    out32 = f(*_args(np.random.default_rng(1), dtype=np.float32))
    assert [o.dtype for o in out32] == [jnp.float32] * 3
    out64 = f(*_args(np.random.default_rng(1)))
    assert [o.dtype for o in out64] == [jnp.float64] * 3
    assert jax.config.jax_enable_x64 == before
    want = g.compile("numpy")(*_args(np.random.default_rng(1), dtype=np.float32))
    assert [w.dtype for w in want] == [np.float32] * 3


def test_python_scalars_compute_in_float64():
    g = sg.grad_fn(lambda a, b: sg.sin(a) * b)
    (da, db) = g.compile("jax")(0.5, 2.0)
    assert da.dtype == jnp.float64
    np.testing.assert_allclose(float(da), 2.0 * np.cos(0.5), rtol=1e-15)


def test_symbolic_dims_are_read_from_each_call():
    g = sg.grad_fn(mlp, shapes=SHAPES)
    f = g.compile("jax")
    for n in (2, 7):
        (dx, _, _) = f(*_args(np.random.default_rng(n), n=n))
        assert dx.shape == (n, 3)


def test_wrong_shape_and_dtype_are_argument_errors():
    f = sg.grad_fn(mlp, shapes=SHAPES).compile("jax")
    x, w1, w2 = _args(np.random.default_rng(2))
    with pytest.raises(ArgumentError, match="argument w1 must have shape"):
        f(x, w2, w2)
    with pytest.raises(ArgumentError, match="argument x must be real numbers"):
        f(x.astype(complex), w1, w2)
    with pytest.raises(ArgumentError, match="takes 3 arguments"):
        f(x, w1)


def test_the_function_is_jitted_and_its_source_runs_standalone():
    g = sg.grad_fn(mlp, shapes=SHAPES)
    f = g.compile("jax")
    assert hasattr(f.__wrapped__, "lower")          # a jax.jit function
    src = g.source("jax")
    assert "jax.numpy." in src and "jax.jit(" in src and "numpy.zeros" not in src
    namespace = {}
    exec(compile(src, "<jax source>", "exec"), namespace)  # noqa: S102 - our own output
    args = _args(np.random.default_rng(3))
    for o, w in zip(namespace["grad_mlp"](*args), g.compile("numpy")(*args)):
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-12)


def test_convolutions_are_xla_convolutions():
    def f(x, w):
        return sg.sum(sg.conv(x, w, padding=1) ** 2)
    g = sg.grad_fn(f, shapes={"x": (2, 3, 6, 6), "w": (4, 3, 3, 3)})
    src = g.source("jax")
    assert "jax.lax.conv_general_dilated" in src and "sliding_window_view" not in src
    rng = np.random.default_rng(4)
    args = [rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))]
    for o, w in zip(g.compile("jax")(*args), g.compile("numpy")(*args)):
        np.testing.assert_allclose(np.asarray(o), w, rtol=1e-10)


def test_host_ops_run_numpy_inside_jit():
    """Ops spelled ``jax="host"`` (max pooling here) call their NumPy code through
    jax.pure_callback: same values, still one jitted function."""
    F = pytest.importorskip("torch.nn.functional")

    def f(x):
        return (F.max_pool2d(x, 2) ** 2).sum()
    g = sg.grad_fn(f, shapes={"x": (1, 2, 4, 4)})
    assert "jax.pure_callback" in g.source("jax")
    x = np.random.default_rng(5).standard_normal((1, 2, 4, 4))
    np.testing.assert_allclose(np.asarray(g.compile("jax")(x)[0]), g.compile("numpy")(x)[0])
    (dx,) = g.compile("jax")(x.astype(np.float32))
    assert dx.dtype == jnp.float32


def test_ids_out_of_range_are_argument_errors():
    """As in the NumPy and torch backends (JAX itself would clamp them silently)."""
    F = pytest.importorskip("torch.nn.functional")

    def f(table, ids):
        return (F.embedding(ids, table) ** 2).sum()
    g = sg.grad_fn(f, shapes={"table": (4, 3), "ids": sg.TensorSpec((5,), dtype="int64")},
                   wrt=["table"])
    fn = g.compile("jax")
    table = np.ones((4, 3))
    (dt,) = fn(table, np.array([0, 1, 2, 3, 3]))
    np.testing.assert_allclose(np.asarray(dt)[3], 4.0)
    with pytest.raises(ArgumentError, match="index 4 is out of range for a dim of size 4"):
        fn(table, np.array([0, 1, 2, 3, 4]))


def test_missing_jax_says_how_to_install(monkeypatch):
    g = sg.grad_fn(lambda x: x * x)
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(sg.SymgradError, match=r"pip install 'symgrad\[jax\]'"):
        g.compile("jax")
    assert "jax.numpy" in g.source("jax")     # source needs no JAX to be written


def test_host_ops_take_float64_arguments_whole_on_any_thread():
    """A host op's callback may run on one of XLA's threads, where x64 is off: its
    float64 arguments then arrived as float32 (gradients off by 1e-8, now and then)."""
    torch = pytest.importorskip("torch")
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1, self.bn = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4)
            self.p1 = nn.MaxPool2d(2)
            self.c2, self.p2 = nn.Conv2d(4, 3, 3, bias=False), nn.AvgPool2d(2)
            self.fc = nn.Linear(3, 5)

        def forward(self, x):
            return self.fc(self.p2(torch.tanh(self.c2(self.p1(F.relu(self.c1(x)))))).flatten(1))

    net = CNN().double().eval()
    shapes = {"x": ("B", 2, 8, 8), "target": sg.TensorSpec(("B",), dtype="int64")}
    g = sg.grad_fn(net, shapes=shapes, loss=F.cross_entropy)
    params = {**dict(net.named_parameters()), **dict(net.named_buffers())}
    symbols = {s: k for k, s in sg.module_function(net, shapes=shapes,
                                                   loss=F.cross_entropy).symbols.items()}
    rng = np.random.default_rng(0)
    jitted, reference = g.compile("jax"), g.compile("numpy")
    for batch in (1, 3):
        x, y = rng.standard_normal((batch, 2, 8, 8)), rng.integers(0, 5, batch)
        args = [params[symbols[i.name]].detach().numpy() if i.name in symbols
                else (x if i.name == "x" else y) for i in g.inputs]
        want = reference(*args)
        for _ in range(6):
            for got, w in zip(jitted(*args), want):
                np.testing.assert_allclose(np.asarray(got), w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("x64", [False, True])
def test_runs_inside_outer_jax_transforms(x64):
    """Under an outer jax.vmap / jax.jit / jax.grad the function takes the tracers as they
    are and the precision is the outer scope's: entering x64 inside mixed float32 avals
    with float64 buffers (a raw JaxRuntimeError under vmap with x64 off)."""
    torch = pytest.importorskip("torch")
    g = sg.grad_fn(mlp, shapes=SHAPES).compile("jax")
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 5, 3))
    w1, w2 = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def torch_grads(x):
        x, a, b = (torch.tensor(v, requires_grad=True) for v in (x, w1, w2))
        return [t.numpy() for t in torch.autograd.grad((torch.tanh(x @ a) @ b).sum(), (x, a, b))]

    want = [np.stack(w) for w in zip(*(torch_grads(x) for x in xs))]
    with jax.enable_x64(x64):
        batched = jax.vmap(g, in_axes=(0, None, None))(xs, w1, w2)
        jitted = jax.jit(jax.vmap(g, in_axes=(0, None, None)))(xs, w1, w2)
        through = jax.grad(lambda x: jnp.sum(g(x, w1, w2)[1]))(xs[0])
    dtype, rtol = (jnp.float64, 1e-12) if x64 else (jnp.float32, 1e-4)
    for got in (batched, jitted):
        for o, w in zip(got, want):
            assert o.dtype == dtype
            np.testing.assert_allclose(np.asarray(o), w, rtol=rtol, atol=rtol)
    x = torch.tensor(xs[0], requires_grad=True)
    a, b = torch.tensor(w1, requires_grad=True), torch.tensor(w2)
    (dw1,) = torch.autograd.grad((torch.tanh(x @ a) @ b).sum(), a, create_graph=True)
    (second,) = torch.autograd.grad(dw1.sum(), x)
    np.testing.assert_allclose(np.asarray(through), second.numpy(), rtol=rtol, atol=rtol)
