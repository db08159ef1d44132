"""Compiled gradients and their standalone source, for both backends.

``g.source(backend)`` exec'd in an empty namespace, ``g.compile(backend)`` and
``torch.autograd`` (running the same function on torch tensors, since sg ops compute on
them) must agree; compiled code holds no symgrad objects.
"""
import inspect
import types

import numpy as np
import pytest
import torch

import symgrad as sg


# ----- functions under test: (function, shapes, sizes of the symbolic dims) ------------

def mlp(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


def scalar(x, y):
    return sg.sin(x) * y + x ** 2


def broadcast(A, v, s):
    return sg.mean(sg.exp(-(A - v) ** 2) * s) + sg.sum(sg.maximum(A, v) * A.T.T)


def reductions(A, c):
    return sg.sum(sg.softplus(A).sum(axis=0) * c) + sg.sum(sg.where(A > 0, A, 0.1 * A) ** 2)


def two_layer(W1, W2, x):
    h = sg.relu(W1 @ x)
    return sg.sum(sg.sigmoid(W2 @ h)) + 0.5 * sg.sum(x * x)


CASES = {
    "mlp": (mlp, {"W": ("m", "n"), "x": ("n",), "b": ("m",)}, {"m": 3, "n": 2}),
    "scalar": (scalar, {}, {}),
    "broadcast": (broadcast, {"A": ("n", "k"), "v": ("k",), "s": ()}, {"n": 3, "k": 2}),
    "reductions": (reductions, {"A": (2, "k"), "c": ("k",)}, {"k": 4}),
    "two_layer": (two_layer, {"W1": ("h", "n"), "W2": ("o", "h"), "x": ("n",)},
                  {"h": 4, "n": 3, "o": 2}),
}


def concrete(shape, dims):
    return tuple(d if isinstance(d, int) else dims[d] for d in shape)


def draw(f, shapes, dims, seed=0):
    rng = np.random.default_rng(seed)
    names = list(inspect.signature(f).parameters)
    out = []
    for n in names:
        shape = concrete(shapes.get(n, ()), dims)
        out.append(rng.standard_normal(shape) if shape else float(rng.standard_normal()))
    return out


def autograd(f, args, dtype=torch.float64):
    ts = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in args]
    out = f(*ts)
    return out.detach().numpy(), [g.numpy() for g in torch.autograd.grad(out, ts)]


def exec_source(src, name):
    namespace = {}
    exec(compile(src, f"<source of {name}>", "exec"), namespace)
    return namespace[name]


def as_numpy(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def close(ours, ref, rtol=1e-10, atol=1e-12):
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        o = as_numpy(o)
        assert o.shape == np.shape(r)
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    f, shapes, dims = CASES[request.param]
    return f, shapes, dims, sg.grad_fn(f, shapes=shapes)


# ----- source == compile == torch.autograd -----------------------------------------------

def test_numpy_source_compile_and_autograd_agree(case):
    f, shapes, dims, g = case
    args = draw(f, shapes, dims)
    _, ref = autograd(f, args)
    standalone = exec_source(g.source("numpy"), g._func_name())
    close(standalone(*args), ref)
    close(g.compile("numpy")(*args), ref)
    for o in g.compile("numpy")(*args):
        assert isinstance(o, (float, np.floating, np.ndarray))


def test_torch_source_compile_and_autograd_agree(case):
    f, shapes, dims, g = case
    args = draw(f, shapes, dims)
    _, ref = autograd(f, args)
    targs = [torch.tensor(a, dtype=torch.float64) for a in args]
    standalone = exec_source(g.source("torch"), g._func_name())
    for fn in (standalone, g.compile("torch")):
        ours = fn(*targs)
        assert all(isinstance(o, torch.Tensor) and o.dtype == torch.float64 for o in ours)
        close(ours, ref)


def test_source_is_standalone(case):
    *_, g = case
    for backend in ("numpy", "torch"):
        src = g.source(backend)
        assert "symgrad" not in src
        imports = {line for line in src.splitlines() if line.startswith(("import", "from"))}
        # SciPy's special functions are used when SciPy is installed (optional)
        imports = {i for i in imports if not i.startswith("from scipy.special import ")}
        assert imports <= {"import math", "import numpy", "import torch"}
        assert ("import torch" in imports) == (backend == "torch")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_standalone_source_keeps_captured_arrays_exact(backend):
    """Captured arrays are written in their own dtype: torch.tensor of a list of floats
    would be float32 (0.85 off by 2e-8), and the standalone gradient another number."""
    weights = np.array([0.85, 0.72, 0.62])
    ids = np.array([2, 0, 1])
    g = sg.grad_fn(lambda x: sg.sum(sg.sin(x * weights) * weights[ids]), shapes={"x": (3,)})
    x = np.array([0.3, -1.2, 2.5])
    arg = torch.tensor(x) if backend == "torch" else x
    (standalone,) = exec_source(g.source(backend), g._func_name())(arg)
    (compiled,) = g.compile(backend)(arg)
    np.testing.assert_array_equal(as_numpy(standalone), as_numpy(compiled))


def test_compiled_globals_hold_no_symgrad_objects(case):
    """Only numpy, torch, math, constant arrays and the function itself. The symgrad
    names are the error classes the code raises (ArgumentError for a bad argument,
    EvaluationError where the array library refuses); ``source()`` binds them to
    ValueError instead."""
    *_, g = case
    for backend in ("numpy", "torch"):
        fn = g.compile(backend)
        assert fn.__closure__ is None
        for name, value in fn.__globals__.items():
            if name == "__builtins__":
                continue
            if name in ("ArgumentError", "EvaluationError"):
                assert value is getattr(sg, name)
                continue
            if isinstance(value, types.ModuleType):
                assert value.__name__ in ("numpy", "torch", "math"), name
            elif isinstance(value, types.FunctionType):
                # the function itself, or a helper of the generated source (_softmax)
                assert value.__code__.co_filename == fn.__code__.co_filename, name
            elif name == "_FALLBACK":
                assert isinstance(value, str)  # source of the lazily compiled NumPy path
            elif isinstance(value, np.dtype):
                # the default dtype results are compared with, and float64 promoted from
                # arguments of different dtypes
                assert name in ("_FLOAT64", "_PROMOTED64"), name
            elif isinstance(value, (np.ufunc, np.vectorize)):
                # scipy.special's ufuncs when SciPy is installed, math.erf vectorized if not
                assert name in ("_expit", "_erf"), name
            else:
                assert isinstance(value, np.ndarray), (name, type(value))
            module = getattr(value, "__module__", None) or type(value).__module__
            assert not str(module).startswith("symgrad"), (name, module)


def test_compile_is_cached(case):
    *_, g = case
    assert g.compile("numpy") is g.compile("numpy")
    assert g.compile("torch") is not g.compile("numpy")


# ----- with_value -----------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_with_value_returns_value_and_grads(case, backend):
    f, shapes, dims, g = case
    args = draw(f, shapes, dims, seed=1)
    value, ref = autograd(f, args)
    if backend == "torch":
        args = [torch.tensor(a, dtype=torch.float64) for a in args]
    for fn in (g.compile(backend, with_value=True),
               exec_source(g.source(backend, with_value=True), g._func_name())):
        v, grads = fn(*args)
        np.testing.assert_allclose(as_numpy(v), value, rtol=1e-12)
        close(grads, ref)


# ----- symbolic dims ---------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_symbolic_dims_work_for_several_sizes(backend):
    g = sg.grad_fn(mlp, shapes=CASES["mlp"][1])
    fn = g.compile(backend)
    for m, n in [(3, 2), (1, 7), (5, 5)]:
        args = draw(mlp, CASES["mlp"][1], {"m": m, "n": n}, seed=m + n)
        _, ref = autograd(mlp, args)
        if backend == "torch":
            args = [torch.tensor(a) for a in args]
        ours = fn(*args)
        assert [tuple(o.shape) for o in ours] == [(m, n), (n,), (m,)]
        close(ours, ref)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_mean_over_square_symbolic_dims(backend):
    g = sg.grad_fn(lambda A, s: sg.mean(A * s), shapes={"A": ("n", "n")}, wrt="s")
    assert "A/n*n" not in g.source(backend)
    A, s = np.arange(9.0).reshape(3, 3), 2.0
    if backend == "torch":
        A, s = torch.tensor(A), torch.tensor(s, dtype=torch.float64)
    (ds,) = g.compile(backend)(A, s)
    assert float(ds) == pytest.approx(4.0)          # mean(A)


# ----- known-zero gradients --------------------------------------------------------------

def unused(x, y, z):
    return sg.sum(x * y)


UNUSED_SHAPES = {"x": ("n",), "y": ("n",), "z": ("k", 2)}


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_unused_input_gives_zeros_of_its_shape(backend):
    g = sg.grad_fn(unused, shapes=UNUSED_SHAPES)
    assert "dunused/dz = " in str(g)
    x, y, z = np.arange(3.0), np.arange(3.0) + 1, np.ones((4, 2))
    if backend == "torch":
        x, y, z = map(torch.tensor, (x, y, z))
    for fn in (g.compile(backend), exec_source(g.source(backend), "grad_unused")):
        dx, dy, dz = fn(x, y, z)
        assert tuple(dz.shape) == (4, 2)
        assert not as_numpy(dz).any()
        np.testing.assert_array_equal(as_numpy(dx), as_numpy(y))
        np.testing.assert_array_equal(as_numpy(dy), as_numpy(x))
        if backend == "torch":
            assert dz.dtype == torch.float64


def test_unused_scalar_input_torch():
    g = sg.grad_fn(lambda x, y: sg.sin(x))
    dx, dy = g.compile("torch")(torch.tensor(0.5, dtype=torch.float64), torch.tensor(2.0))
    assert dy.shape == () and dy.item() == 0.0
    assert dx.item() == pytest.approx(np.cos(0.5))


def test_unused_scalar_input_numpy():
    dx, dy = sg.grad_fn(lambda x, y: sg.sin(x)).compile("numpy")(0.5, 2.0)
    assert dy == 0.0 and dx == pytest.approx(np.cos(0.5))


def test_constant_scalar_gradient_numpy():
    (dx,) = sg.grad_fn(lambda x: 2 * x).compile("numpy")(3.0)
    assert dx == 2.0


def test_constant_scalar_gradient_torch():
    (dx,) = sg.grad_fn(lambda x: 2 * x).compile("torch")(torch.tensor(3.0))
    assert dx.item() == 2.0


def test_constant_vector_gradient():
    g = sg.grad_fn(lambda v: sg.sum(3 * v), shapes={"v": ("n",)})
    (dn,) = g.compile("numpy")(np.ones(4))
    (dt,) = g.compile("torch")(torch.ones(4, dtype=torch.float64))
    np.testing.assert_array_equal(dn, np.full(4, 3.0))
    np.testing.assert_array_equal(dt.numpy(), np.full(4, 3.0))


# ----- outputs are fresh arrays ----------------------------------------------------------

@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_gradients_do_not_alias_inputs(backend):
    """d(sum(x*y))/dx is y; writing into the returned gradient must not change y."""
    g = sg.grad_fn(unused, shapes=UNUSED_SHAPES)
    x, y, z = np.zeros(3), np.ones(3), np.zeros((1, 2))
    if backend == "torch":
        x, y, z = map(torch.tensor, (x, y, z))
    dx, dy, dz = g.compile(backend)(x, y, z)
    dx[0] = 42.0
    assert float(y[0]) == 1.0


# ----- dtypes ---------------------------------------------------------------------------

def test_torch_keeps_float32():
    """Current behaviour: float32 tensors in, float32 tensors out (computed in float32)."""
    g = sg.grad_fn(mlp, shapes=CASES["mlp"][1])
    args = draw(mlp, CASES["mlp"][1], {"m": 3, "n": 2})
    _, ref = autograd(mlp, args)
    ours = g.compile("torch")(*[torch.tensor(a, dtype=torch.float32) for a in args])
    assert all(o.dtype == torch.float32 for o in ours)
    close(ours, ref, rtol=1e-5, atol=1e-6)


def test_torch_accepts_python_floats_and_arrays_as_float64():
    g = sg.grad_fn(scalar)
    dx, dy = g.compile("torch")(1.0, 2.0)
    assert dx.dtype == dy.dtype == torch.float64
    assert dx.item() == pytest.approx(2 + 2 * np.cos(1.0))


def test_numpy_accepts_lists_and_ints():
    g = sg.grad_fn(mlp, shapes=CASES["mlp"][1])
    dW, dx, db = g.compile("numpy")([[1, 0], [0, 1], [1, 1]], [1, 2], [0, 0, 0])
    assert dW.shape == (3, 2) and dW.dtype == np.float64


def test_torch_maximum_with_constant_keeps_float64():
    g = sg.grad_fn(lambda x: sg.sum(sg.maximum(x, 0.5)), shapes={"x": (3,)})
    (dx,) = g.compile("torch")(torch.tensor([0.5, 1.0, 0.2], dtype=torch.float64))
    assert dx.dtype == torch.float64


# ----- constant arrays ------------------------------------------------------------------

def weighted(x):
    return sg.sum(sg.sin(x) * np.array([1.0, 2.0, 3.0]))


def test_constant_array_numpy():
    g = sg.grad_fn(weighted, shapes={"x": (3,)})
    x = np.array([0.1, 0.2, 0.3])
    expected = np.cos(x) * [1.0, 2.0, 3.0]
    np.testing.assert_allclose(g.compile("numpy")(x)[0], expected)
    np.testing.assert_allclose(exec_source(g.source("numpy"), "grad_weighted")(x)[0], expected)


def test_constant_array_torch_in_a_product():
    g = sg.grad_fn(weighted, shapes={"x": (3,)})
    x = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
    (dx,) = g.compile("torch")(x)
    assert isinstance(dx, torch.Tensor)
    np.testing.assert_allclose(dx.numpy(), np.cos(x.numpy()) * [1.0, 2.0, 3.0])


def test_constant_array_gradient_torch():
    g = sg.grad_fn(lambda x: sg.sum(x * np.array([1.0, 2.0, 3.0])), shapes={"x": (3,)})
    (dx,) = g.compile("torch")(torch.ones(3, dtype=torch.float64))
    assert isinstance(dx, torch.Tensor)
    np.testing.assert_array_equal(dx.numpy(), [1.0, 2.0, 3.0])


def test_unknown_backend():
    g = sg.grad_fn(scalar)
    with pytest.raises(sg.ArgumentError, match="unknown backend 'tensorflow'; the backends are"):
        g.compile("tensorflow")


@pytest.mark.parametrize("scipy", [True, False], ids=["with_scipy", "numpy_only"])
def test_special_functions_with_and_without_scipy(scipy, monkeypatch):
    """sigmoid and erf print as SciPy ufuncs when SciPy is there, NumPy code otherwise;
    both agree with torch, also far in the tails."""
    from symgrad.codegen.backends import numpy as numpy_backend
    from symgrad.core.ops import pointwise
    if scipy:
        pytest.importorskip("scipy")
    monkeypatch.setattr(pointwise, "has_scipy", lambda: scipy)
    monkeypatch.setattr(numpy_backend, "has_scipy", lambda: scipy)
    monkeypatch.setattr(sg.codegen.backend("numpy"), "_templates", None)

    def f(x):
        return sg.sum(sg.sigmoid(x) * sg.erf(x) + sg.softplus(x))

    g = sg.grad_fn(f, shapes={"x": ("n",)})
    src = g.source("numpy")
    assert ("scipy" in src) == scipy
    x = np.array([-800.0, -40.0, -3.0, 0.0, 0.5, 40.0, 800.0])
    ours = exec_source(src, g._func_name())(x)[0]
    tx = torch.tensor(x, requires_grad=True)
    (ref,) = torch.autograd.grad(f(tx), tx)
    # at x = -40 the three terms, of size sigmoid(-40) = 4e-18, cancel: torch is one ulp
    # of them (7.7e-34) off zero where SciPy's expit gives 0, so absolute 1e-30 there
    np.testing.assert_allclose(ours, ref.numpy(), rtol=1e-12, atol=1e-30)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("shape", [(4,), ("n",)])
def test_a_number_for_an_array_parameter_is_a_shape_error(backend, shape):
    g = sg.grad_fn(lambda a, b: sg.sum((a + b) * b), shapes={"a": shape, "b": shape})
    with pytest.raises(sg.ArgumentError, match=r"argument a must have shape \((4|n),\), got shape \(\)"):
        g.compile(backend)(1.0, np.ones(4))


@pytest.mark.parametrize("dtype", ["float64", "float32", ">f8", "int64"])
def test_float64_arrays_take_the_fast_entry_and_other_arrays_are_converted(dtype):
    g = sg.grad_fn(lambda a, b: sg.sum((a + b) * b), shapes={"a": (4,), "b": (4,)})
    fn = g.compile("numpy")
    assert "_dt = _FLOAT64" in g.source("numpy")
    a, b = np.arange(4).astype(dtype), np.arange(1, 5).astype(dtype)
    da, db = fn(a, b)
    ta, tb = (torch.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in (a, b))
    torch.sum((ta + tb) * tb).backward()
    want = np.float32 if dtype == "float32" else np.float64
    assert da.dtype == want and db.dtype == want
    np.testing.assert_allclose(da, ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-6)
    assert not np.shares_memory(db, b)
