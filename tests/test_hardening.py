"""Hostile and careless input (issue: nothing injected, nothing mixed up, nothing leaked,
torch's answer at the edges). Every test here failed before the fix it guards."""
import gc
import os
import threading

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.codegen.names import code_name, is_plain

from backend_support import require_backend


def payload(path):
    """Python that writes ``path`` if it ever runs."""
    return f"__import__('pathlib').Path({str(path)!r}).write_text('pwned')"


# ----- code injection -------------------------------------------------------------------

def test_a_symbol_inside_a_constant_is_refused(tmp_path):
    target = tmp_path / "pwned"

    def f(x):
        return sg.sum(x * sg.const(sympy.Symbol(payload(target))))

    with pytest.raises(sg.SymgradError, match="numbers and dims"):
        sg.grad_fn(f, shapes={"x": (3,)}).compile("numpy")(np.ones(3))
    assert not target.exists()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_hostile_dim_name_never_runs(tmp_path, backend):
    """A dim is a SymPy symbol whose name is user text: it is spelled by its code points
    in code, and quoted safely in messages."""
    target = tmp_path / "pwned"
    n = sympy.Symbol(payload(target), integer=True, positive=True)
    quote = sympy.Symbol(f"n') + {payload(target)} + ('", integer=True, positive=True)

    def f(x):
        return sg.sum(sg.sin(x) * sg.const(n))

    for shape in ((n,), (quote, 2), (n, quote)):
        g = sg.grad_fn(f, shapes={"x": shape})
        fn = g.compile(backend)
        x = np.ones((3,) * len(shape))
        args = (torch.tensor(x),) if backend == "torch" else (x,)
        try:
            (gx,) = fn(*args)
        except sg.ArgumentError:
            pass
        exec(compile(g.source(backend), "<standalone>", "exec"), {})
    assert not target.exists()


def test_a_non_integer_symbol_is_not_a_dim(tmp_path):
    with pytest.raises(sg.ShapeError, match="numbers and dims"):
        sg.grad_fn(lambda x: sg.sum(x), shapes={"x": (sympy.Symbol("n"),)})


@pytest.mark.parametrize("name", ["len", "numpy", "torch", "math", "lambda", "args", "_t0",
                                  "ArgumentError", "sgarg0", "_fallback", "print", "_dt"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_dims_named_like_code_or_python_compile(name, backend):
    def f(x, y):
        return sg.sum(sg.exp(x) * sg.mean(x)) + sg.sum(y * y)

    g = sg.grad_fn(f, shapes={"x": (name, 2), "y": (name,)})
    x, y = np.arange(6.0).reshape(3, 2) / 6, np.arange(3.0)
    args = (torch.tensor(x), torch.tensor(y)) if backend == "torch" else (x, y)
    gx, gy = g.compile(backend)(*args)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    rx, ry = torch.autograd.grad(f(tx, ty), [tx, ty])
    np.testing.assert_allclose(np.asarray(gx), rx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gy), ry.numpy(), rtol=1e-12)
    assert name in g.text()           # views keep the user's spelling
    with pytest.raises(sg.ArgumentError, match=f"{name} = 3 from x.shape"):
        g.compile(backend)(*args[:1], *((torch.ones(4),) if backend == "torch" else
                                        (np.ones(4),)))


@pytest.mark.parametrize("name", ["numpy", "len", "lambda", "_t1", "args", "ｘ"])
def test_symbols_named_like_code_or_python_compile(name):
    x = sg.symbol(name, (2,))
    (gx,) = sg.grad(sg.sum(sg.sin(x) * x), [x])
    fn = sg.codegen.compile_function([gx], [x], "numpy")
    v = np.array([0.3, -1.2])
    np.testing.assert_allclose(fn(v)[0], np.cos(v) * v + np.sin(v))


def test_parameters_named_like_modules_compile():
    def numpy(numpy, math):
        return numpy * numpy * math

    assert sg.grad_fn(numpy).compile("numpy")(2.0, 3.0) == (12.0, 4.0)


def test_code_names_are_plain_or_renamed_apart():
    names = ["n", "ｎ", "len", "_len", "__len", "lambda", "x0", "_t0", "sgarg1", "é", "args"]
    codes = [code_name(n) for n in names]
    assert len(set(codes)) == len(codes)
    assert all(c.isidentifier() and c.isascii() for c in codes)
    assert code_name("n") == "n" and is_plain("W1") and not is_plain("sgarg1")


# ----- names that look alike ---------------------------------------------------------------

def test_look_alike_dims_are_an_error():
    def f(x, y):
        return sg.sum(x) * sg.sum(y * y)

    with pytest.raises(sg.ShapeError, match="'n' and 'ｎ'.*NFKC"):
        sg.grad_fn(f, shapes={"x": ("n",), "y": ("ｎ",)})


def test_explicit_element_names_never_equal_an_input():
    def f(x, x_0):
        return sg.sum(x * x) * x_0

    ex = sg.grad_fn(f, shapes={"x": (2,)}).explicit()
    x_0 = sympy.Symbol("x_0", real=True)
    e0, e1 = (sympy.Symbol(f"x[{i}]", real=True) for i in range(2))
    assert list(ex["x"]) == [2 * e0 * x_0, 2 * e1 * x_0]
    assert ex["x_0"] == e0 ** 2 + e1 ** 2


# ----- torch's answer at the edges ---------------------------------------------------------

def torch_grads(f, *values):
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    return [g.numpy() for g in torch.autograd.grad(f(*ts), ts, allow_unused=True,
                                                    materialize_grads=True)]


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_extrema_at_nan_split_the_gradient_like_torch(op, backend):
    def f(x, y):
        return sg.sum(getattr(sg, op)(x, y) * (x + 2))

    x, y = np.array([np.nan, 1.0, 2.0, 2.0]), np.array([1.0, np.nan, 2.0, 3.0])
    fn = sg.grad_fn(f, shapes={"x": (4,), "y": (4,)}).compile(backend)
    args = [torch.tensor(x), torch.tensor(y)] if backend == "torch" else [x, y]
    for got, ref in zip(fn(*args), torch_grads(f, x, y)):
        np.testing.assert_allclose(np.asarray(got), ref, equal_nan=True)


@pytest.mark.parametrize("backend", ["numpy", "numba", "c"])
@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_extrema_of_scalars_at_nan_are_nan_like_torch(op, backend):
    """Scalar programs ran Python's max(1.0, nan), which is 1.0."""
    pytest.importorskip("numba") if backend == "numba" else None

    def f(x, y):
        return getattr(sg, op)(x, y) ** 2 + getattr(sg, op)(y, 2.0) * x

    fn = sg.grad_fn(f).compile(backend, with_value=True)
    for x, y in ((1.0, np.nan), (np.nan, 1.0), (1.0, 3.0), (2.0, 2.0)):
        value, grads = fn(x, y)
        tx, ty = (torch.tensor(v, dtype=torch.float64) for v in (x, y))
        np.testing.assert_allclose(value, f(tx, ty).item(), equal_nan=True)
        np.testing.assert_allclose(grads, torch_grads(f, x, y), equal_nan=True)


def test_fractional_power_of_a_negative_scalar_is_nan_not_complex():
    (g,) = sg.grad_fn(lambda x: x ** 0.5).compile("numpy")(-1.0)
    assert isinstance(g, float) or np.ndim(g) == 0
    assert np.isnan(g)
    (ref,) = torch_grads(lambda x: x ** 0.5, -1.0)
    assert np.isnan(ref)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_singular_matrix_in_det_gradient_says_what_to_do(backend):
    g = sg.grad_fn(lambda X: sg.det(X), shapes={"X": (2, 2)})
    X = np.ones((2, 2))
    with pytest.raises(sg.ArgumentError, match="singular"):
        g.compile(backend)(torch.tensor(X) if backend == "torch" else X)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("labels", [[0.0, 3.0], [-1.0, 1.0], [0.5, 1.0]],
                         ids=["too_large", "negative", "fractional"])
def test_class_labels_out_of_range_are_refused(labels, backend):
    def loss(logits, y):
        return sg.cross_entropy(logits, y)

    g = sg.grad_fn(loss, shapes={"logits": (2, 3), "y": (2,)}, wrt="logits")
    z, y = np.zeros((2, 3)), np.array(labels)
    args = [torch.tensor(z), torch.tensor(y)] if backend == "torch" else [z, y]
    with pytest.raises(sg.ArgumentError, match=r"class indices must be integers in \[0, 3\)"):
        g.compile(backend, with_value=True)(*args)
    with pytest.raises(sg.ArgumentError, match="class indices"):
        g.compile(backend)(*args)


NORMS = {
    "2": lambda x: torch.linalg.vector_norm(x),
    "3": lambda x: torch.linalg.vector_norm(x, 3),
    "1.5_rows": lambda x: torch.norm(x, 1.5, dim=1).sum(),
    "0.5": lambda x: torch.linalg.norm(x.reshape(-1), 0.5),
    "1": lambda x: x.norm(1),
    "inf": lambda x: torch.linalg.vector_norm(x, float("inf")),
}


@pytest.mark.parametrize("name", sorted(NORMS))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_p_norms_at_zero_have_the_zero_subgradient(name, backend):
    f = NORMS[name]
    g = sg.grad_fn(f, shapes={"x": (2, 3)})
    x = np.zeros((2, 3))
    x[1] = [1.0, -2.0, 0.0]
    (got,) = g.compile(backend)(torch.tensor(x) if backend == "torch" else x)
    np.testing.assert_allclose(np.asarray(got), torch_grads(f, x)[0], atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda x: sg.norm(x, ord=0),
    lambda x: sg.var(x, correction="1"),
    lambda x: sg.clamp(x),
    lambda x: sg.tril(x, k=0.5),
    lambda x: sg.cross_entropy(x, x, reduction="avg"),
    lambda x: sg.sum(x, axis=5),
    lambda x: sg.stack([]),
    lambda x: len(sg.sum(x)),
], ids=["ord", "correction", "clamp", "tril", "reduction", "axis", "stack", "len0d"])
def test_bad_parameters_are_symgrad_errors(call):
    x = sg.symbol("x", (2, 2))
    with pytest.raises(sg.SymgradError):
        call(x)


F = torch.nn.functional
_ZEROS = torch.zeros(2, 3, dtype=torch.float64)
NONFINITE = {
    "amax": lambda x: torch.amax(x, 1), "amax_all": torch.amax,
    "max_dim": lambda x: torch.max(x, 1)[0], "max_all": torch.max,
    "min_dim": lambda x: torch.min(x, 1)[0], "amin": lambda x: torch.amin(x, 1),
    "logsumexp": lambda x: torch.logsumexp(x, 1), "softmax": lambda x: torch.softmax(x, 1),
    "log_softmax": lambda x: torch.log_softmax(x, 1), "relu": torch.relu,
    "trace": lambda x: torch.trace(x[:, :2]), "diagonal": lambda x: torch.diagonal(x[:, :2]),
    "clamp": lambda x: torch.clamp(x, -0.5, 0.5), "abs": torch.abs,
    "sign": lambda x: torch.sign(x) * x, "where": lambda x: torch.where(x > 0, x, 0.0),
    "maximum": lambda x: torch.maximum(x, x.flip(1)), "cumsum": lambda x: torch.cumsum(x, 1),
    "prod": lambda x: torch.prod(x, 1), "norm": lambda x: torch.linalg.vector_norm(x, dim=1),
    "std": lambda x: torch.std(x, 1), "leaky_relu": lambda x: F.leaky_relu(x, 0.1),
    "elu": F.elu, "celu": lambda x: F.celu(x, 2.0), "hardtanh": F.hardtanh,
    "relu6": F.relu6, "gelu": F.gelu, "silu": F.silu, "softplus": F.softplus,
    "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "huber": lambda x: F.huber_loss(x, _ZEROS, delta=0.7),
    "smooth_l1": lambda x: F.smooth_l1_loss(x, _ZEROS, beta=0.7),
    "l1": lambda x: F.l1_loss(x, _ZEROS), "mse": lambda x: F.mse_loss(x, x.flip(0)),
    "atan2": lambda x: torch.atan2(x, x.flip(1)), "hypot": lambda x: torch.hypot(x, x.flip(1)),
    "logaddexp": lambda x: torch.logaddexp(x, x.flip(1)),
    "bce_logits": lambda x: F.binary_cross_entropy_with_logits(x, torch.full_like(x, 0.3)),
    "cross_entropy": lambda x: F.cross_entropy(x, torch.tensor([0, 2])),
    "layer_norm": lambda x: F.layer_norm(x, (3,)),
}


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", sorted(NONFINITE))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_nonfinite_element_gives_torch_s_gradient(name, value, backend):
    """One element nan or ±inf: the same gradient as torch, element by element (where torch
    gives 0 off the path of a nan, so does symgrad)."""
    f = NONFINITE[name]
    x = np.array([[1.0, value, 0.5], [2.0, 3.0, -1.0]])
    w = np.linspace(0.5, 2.0, np.asarray(f(torch.tensor(x)).detach()).size)

    def loss(x):
        y = f(x)
        return (y * torch.tensor(w).reshape(y.shape)).sum()

    (got,) = sg.grad_fn(loss, shapes={"x": (2, 3)}).compile(backend)(
        torch.tensor(x) if backend == "torch" else x)
    (want,) = torch_grads(loss, x)
    np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(want))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", [F.hardtanh, F.relu6, lambda x: F.elu(x, 0.5)],
                         ids=["hardtanh", "relu6", "elu"])
def test_activation_gradients_at_their_kinks_like_torch(f):
    x = np.array([-1.0, 1.0, 0.0, 6.0, -2.0, 3.0])
    (got,) = sg.grad_fn(lambda x: f(x).sum(), shapes={"x": (6,)}).compile("numpy")(x)
    np.testing.assert_array_equal(got, torch_grads(lambda x: f(x).sum(), x)[0])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_integer_arguments_compute_in_float64(backend):
    g = sg.grad_fn(lambda x, y: sg.sum(sg.atan2(x, y) * x), shapes={"x": (3,), "y": (3,)})
    x, y = np.array([0, 1, -2]), np.array([0, 0, 3])
    args = [torch.tensor(x), torch.tensor(y)] if backend == "torch" else [x, y]
    got = g.compile(backend)(*args)
    want = torch_grads(lambda x, y: (torch.atan2(x, y) * x).sum(), x.astype(float),
                       y.astype(float))
    for a, b in zip(got, want):
        assert str(a.dtype).endswith("float64")
        np.testing.assert_allclose(np.asarray(a), b)


def test_numpy_scalars_keep_their_dtype_like_0d_tensors():
    g = sg.grad_fn(lambda x, w: sg.sin(x) * w).compile("numpy")
    assert [np.asarray(r).dtype for r in g(np.float32(1), np.float32(2))] == [np.float32] * 2
    assert [type(r) for r in g(np.float32(1), 2.0)] == [float, float]   # a Python float is
    assert [type(r) for r in g(1.0, 2.0)] == [float, float]             # float64, as torch


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_zero_size_dims_like_torch(backend):
    def f(x):
        return torch.mean(x * x, 1).sum() + torch.mean(x) + torch.cumsum(x, 1).sum()

    g = sg.grad_fn(f, shapes={"x": ("m", "n")})
    x = np.zeros((2, 0))
    (got,) = g.compile(backend)(torch.tensor(x) if backend == "torch" else x)
    assert tuple(got.shape) == (2, 0)
    (value, _) = g.compile(backend, with_value=True)(torch.tensor(x) if backend == "torch"
                                                     else x)
    assert np.isnan(float(value)) and np.isnan(float(f(torch.tensor(x))))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_what_torch_cannot_compute_is_an_evaluation_error(backend):
    g = sg.grad_fn(lambda x: torch.amax(x, 1).sum(), shapes={"x": ("m", "n")})
    x = np.zeros((2, 0))
    with pytest.raises(sg.EvaluationError, match="grad_"):
        g.compile(backend)(torch.tensor(x) if backend == "torch" else x)
    with pytest.raises(Exception):
        torch.amax(torch.tensor(x), 1)


def test_a_negative_dim_expression_is_an_argument_error():
    g = sg.grad_fn(lambda x: (x[1:] * x[:-1]).sum(), shapes={"x": ("n",)})
    with pytest.raises(sg.ArgumentError, match=r"n - 1 must not be negative.*n = 0"):
        g.compile("numpy")(np.zeros(0))
    np.testing.assert_allclose(g.compile("numpy")(np.array([1.0]))[0], [0.0])


def test_generated_names_of_errors_are_reserved():
    g = sg.grad_fn(lambda x: sg.sum(x * x), shapes={"x": ("EvaluationError",)})
    np.testing.assert_allclose(g.compile("numpy")(np.ones(2))[0], [2.0, 2.0])
    assert code_name("EvaluationError") == "_EvaluationError"


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_where_of_two_numbers_keeps_float64(backend):
    """torch.where with two Python-float branches is float32 in torch; the gradient is not."""
    def f(x):
        return (torch.where(x > 0, 1.0, 2.0) * x * x).sum()

    g = sg.grad_fn(f, shapes={"x": (3,)})
    x = np.array([1.0, -1.0, 2.0])
    (got,) = g.compile(backend)(torch.tensor(x) if backend == "torch" else x)
    assert str(got.dtype).endswith("float64")
    np.testing.assert_allclose(np.asarray(got), torch_grads(f, x)[0])


def test_compile_names_the_backends_and_const_takes_an_array_shape():
    g = sg.grad_fn(lambda x: sg.sum(x * x), shapes={"x": (2,)})
    with pytest.raises(sg.ArgumentError, match="'numpy', 'torch'"):
        g.compile("math")
    c = np.arange(3.0)
    assert sg.const(c, shape=c.shape).shape == (3,)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("f", [lambda x: sum(torch.unbind(x)), lambda x: x[0] + x[2] * 3.0,
                               lambda x: torch.unbind(x)[1] - torch.unbind(x)[0]],
                         ids=["sum_of_unbind", "two_indices", "difference"])
def test_sums_of_constant_slices_compile(f, backend):
    """Gradients that are sums of constants written into slices (unbind of a vector)."""
    g = sg.grad_fn(f, shapes={"x": (3,)})
    x = np.array([1.0, 2.0, 3.0])
    (got,) = g.compile(backend)(torch.tensor(x) if backend == "torch" else x)
    np.testing.assert_allclose(np.asarray(got), torch_grads(f, x)[0])


def test_const_of_an_array_is_a_constant_array():
    c = np.arange(3.0)
    x = sg.symbol("x", (3,))
    assert sg.const(c, shape=(3,)).shape == (3,)
    (g,) = sg.grad(sg.sum(x * sg.const(c)), [x])
    np.testing.assert_allclose(sg.codegen.compile_function([g], [x], "numpy")(np.ones(3))[0], c)
    with pytest.raises(sg.SymgradError, match="cannot fill"):
        sg.const(c, shape=(4,))


ZERO_D = {
    "amax": lambda x: torch.amax(x),
    "amin": lambda x: torch.amin(x, 0),
    "max": lambda x: torch.max(x),
    "flatten": lambda x: torch.flatten(x).sum(),
    "vector_norm": lambda x: torch.linalg.vector_norm(x),
    "logsumexp": lambda x: torch.logsumexp(x, 0),
    "reshape_as": lambda x: (x.reshape_as(x) * x).sum(),
    "unsqueeze": lambda x: (x.unsqueeze(0) * x.unsqueeze(-1)).sum(),
    "mean_dim0": lambda x: torch.mean(x, 0),
    "sum_dim-1": lambda x: torch.sum(x * x, -1),
    "prod_dim0": lambda x: torch.prod(x, 0),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_zero_d_inputs_like_torch(name, backend):
    f = ZERO_D[name]
    g = sg.grad_fn(f, shapes={"x": ()})
    for v in (1.5, -0.5):
        (got,) = g.compile(backend)(torch.tensor(v, dtype=torch.float64) if backend == "torch"
                                    else v)
        np.testing.assert_allclose(np.asarray(got, dtype=float), torch_grads(f, v)[0])


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_softmax_over_an_empty_dim(backend):
    def f(x):
        return (torch.softmax(x, 0) + torch.log_softmax(x, 0)).sum() + torch.logsumexp(x, 0)

    g = sg.grad_fn(f, shapes={"x": (0,)})
    (got,) = g.compile(backend)(torch.zeros(0, dtype=torch.float64) if backend == "torch"
                                else np.zeros(0))
    assert tuple(got.shape) == (0,)


# ----- dtypes -------------------------------------------------------------------------------

def _dtype_program(x, W, b):
    return sg.sum(sg.tanh(W @ x + b)) + sg.sum(W * 0) + sg.mean(b) * 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_results_have_the_dtype_of_the_inputs(dtype, backend):
    """The policy (README, Errors and guarantees): results in the promoted floating dtype
    of the array arguments, as torch.autograd gives for inputs of one dtype."""
    g = sg.grad_fn(_dtype_program, shapes={"x": ("n",), "W": ("m", "n"), "b": ("m",)})
    args = [np.ones(3), np.ones((2, 3)) / 3, np.zeros(2)]
    if backend == "torch":
        if dtype == "float16":
            pytest.skip("torch's CPU kernels for float16 matmul vary by build")
        args = [torch.tensor(a, dtype=getattr(torch, dtype)) for a in args]
        ts = [a.clone().requires_grad_() for a in args]
        ref = torch.autograd.grad(_dtype_program(*ts), ts)
        assert [r.dtype for r in ref] == [getattr(torch, dtype)] * 3
    else:
        args = [a.astype(dtype) for a in args]
    value, grads = g.compile(backend, with_value=True)(*args)
    for out in (value,) + tuple(grads):
        assert str(out.dtype).replace("torch.", "") == dtype


def test_mixed_dtypes_promote_in_both_backends():
    g = sg.grad_fn(_dtype_program, shapes={"x": ("n",), "W": ("m", "n"), "b": ("m",)})
    args = [np.ones(3, np.float32), np.ones((2, 3)), np.zeros(2, np.float32)]
    for backend in ("numpy", "torch"):
        a = [torch.tensor(v) for v in args] if backend == "torch" else args
        assert {str(o.dtype).replace("torch.", "") for o in g.compile(backend)(*a)} == {"float64"}


# ----- leaks and threads ---------------------------------------------------------------------

def _rss_mb():
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    pytest.skip("no /proc/self/status")


def test_dropped_gradient_functions_release_their_arrays():
    """1000 gradient functions, each capturing its own 0.4 MB array, created, compiled,
    called and dropped: resident memory stays flat (each would keep its array if captured
    arrays lived in a process-wide table)."""
    def make(k):
        c = np.full(50_000, float(k))

        def f(x):
            return sg.sum(sg.sin(x) * c)
        g = sg.grad_fn(f, shapes={"x": (50_000,)})
        fn = g.compile("numpy")
        fn(np.zeros(50_000))
        str(g)

    for k in range(20):      # warm caches (templates, SymPy) first
        make(k)
    gc.collect()
    before = _rss_mb()
    for k in range(1000):
        make(k)
    gc.collect()
    assert _rss_mb() - before < 80, "captured arrays are kept after their functions died"


def test_first_compiles_from_many_threads(monkeypatch):
    """Statement templates are printed once per op; eight threads asking at once must all
    get complete code (helpers included)."""
    for name in ("numpy", "torch"):
        monkeypatch.setattr(sg.codegen.backend(name), "_templates", None)
    errors, results = [], []

    def work(k):
        try:
            def f(x):
                return sg.sum(sg.softmax(x * (k + 1), -1) * sg.log_softmax(x, -1)) + \
                    sg.logsumexp(x) + sg.sum(sg.erf(x))
            g = sg.grad_fn(f, shapes={"x": (2, 3)})
            for backend in ("numpy", "torch"):
                fn = g.compile(backend)
                x = np.linspace(-1, 1, 6).reshape(2, 3)
                results.append(np.asarray(fn(torch.tensor(x) if backend == "torch" else x)[0]))
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k % 3,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 16


def test_tracing_from_many_threads_keeps_the_collector_and_the_graph_right():
    was = gc.isenabled()
    errors = []

    def work(k):
        try:
            for _ in range(30):
                x = sg.symbol("x", (3,))
                y = sg.sum(sg.exp(x * (k % 4)) * x)
                (g,) = sg.grad(y, [x])
                fn = sg.codegen.compile_function([g], [x], "numpy")
                v = np.array([0.1, 0.2, 0.3])
                np.testing.assert_allclose(fn(v)[0], np.exp(v * (k % 4)) * (1 + (k % 4) * v))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert gc.isenabled() == was


# ----- depth -----------------------------------------------------------------------------------

def _chain(steps):
    def f(x, y):
        for _ in range(steps):
            x = sg.sin(x) * x + sg.cos(y) * x
        return x
    return f


def _sin_chain(x, steps=300):
    for _ in range(steps):
        x = sg.sin(x) * x
    return x


@pytest.mark.slow
def test_formulas_value_and_explicit_of_a_300_step_chain():
    """SymPy recurses as deep as the expression; symgrad gives it room (core.deep)."""
    g = sg.grad_fn(lambda x: _sin_chain(x))
    assert g.formulas["x"].has(sympy.Symbol("x", real=True)) and g.value.has(sympy.sin)
    ex = sg.grad_fn(lambda x: sg.sum(_sin_chain(x)), shapes={"x": (2,)})
    assert len(ex.explicit()["x"]) == 2


@pytest.mark.parametrize("steps", [1000, pytest.param(2000, marks=pytest.mark.slow),
                                   pytest.param(10_000, marks=pytest.mark.slow)])
def test_a_long_chain_prints_in_linear_size(steps):
    f = _chain(steps)
    g = sg.grad_fn(f)
    text, latex = g.text(), g.latex()
    assert text.count("\n") < 5 * steps and len(text) < 200 * steps
    assert len(latex) < 400 * steps
    x = sg.symbol("x")
    y = f(x, sg.symbol("y"))
    graph = sg.views.graph.graph_text(y)
    assert len(graph) < 400 * 4 * steps      # capped indentation: linear, not quadratic
    assert len(str(y)) < 200 * 4 * steps
    assert len(sg.to_dot(y)) < 200 * 4 * steps


@pytest.mark.parametrize("steps", [1200, pytest.param(3000, marks=pytest.mark.slow)])
def test_matrix_notation_of_a_deep_vector_chain(steps):
    def f(x):
        for _ in range(steps):
            x = sg.tanh(x) * x
        return sg.sum(x)
    g = sg.grad_fn(f, shapes={"x": ("n",)})
    assert g.text().count("t₁") >= 1
    assert g.latex()


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "c"])
def test_a_nan_constant_times_an_array_keeps_the_arrays_shape(backend):
    """SymPy makes nan * x the scalar nan; the printed statement once dropped x's shape."""
    require_backend(backend)
    g = sg.grad_fn(lambda x: sg.sum(sg.const(float("nan")) * sg.exp(x)), shapes={"x": ("n",)})
    x = np.ones(3)
    value, (dx,) = g.compile(backend, with_value=True)(
        torch.tensor(x) if backend == "torch" else x)
    t = torch.tensor(x, requires_grad=True)
    out = (float("nan") * torch.exp(t)).sum()
    (want,) = torch.autograd.grad(out, t)
    assert np.asarray(dx).shape == (3,)
    np.testing.assert_array_equal(np.asarray(dx), want.numpy())
    assert np.isnan(float(value))


def test_log_sqrt_and_powers_of_negative_constants_are_nan_in_every_view():
    """torch gives nan where SymPy's log(-2) is log 2 + iπ and sqrt(-4) is 2i: the views
    printed complex numbers the compiled code never computes."""
    g = sg.grad_fn(lambda x: sg.sum((-2.0) ** x), shapes={"x": ("n",)})
    x = np.array([1.0, 2.0, 3.0])
    t = torch.tensor(x, requires_grad=True)
    (want,) = torch.autograd.grad(((-2.0) ** t).sum(), t)
    np.testing.assert_array_equal(g.compile("numpy")(x)[0], want.numpy())
    scope = {"x": x}
    exec(g.text("numpy"), scope)
    np.testing.assert_array_equal(scope["df_dx"], want.numpy())
    for f, torch_f in [(lambda x: x * sg.sqrt(sg.const(-4.0)),
                        lambda t: t * torch.sqrt(torch.tensor(-4.0, dtype=torch.float64))),
                       (lambda x: x * sg.log(sg.const(-1.0)),
                        lambda t: t * torch.log(torch.tensor(-1.0, dtype=torch.float64)))]:
        g = sg.grad_fn(f)
        assert "I" not in str(g.formulas["x"]) and "j" not in g.text("numpy").split("=")[-1]
        t = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
        (want,) = torch.autograd.grad(torch_f(t), t)
        assert np.isnan(g.compile("numpy")(0.7)[0]) and torch.isnan(want)
        assert g.verify()


# ----- hostile constants, captured symbols and internal names -------------------------------

def test_a_sympy_constant_of_a_foreign_class_is_refused_and_never_printed(tmp_path):
    """A NumberSymbol subclass carries its own printer hooks; SymPy's printers paste what
    they return into generated code."""
    import mpmath
    from sympy.core.numbers import NumberSymbol
    marker = tmp_path / "ran"
    hook = f"__import__('pathlib').Path({str(marker)!r}).touch()"

    class Half(NumberSymbol):
        is_real = True
        is_positive = True
        is_irrational = True
        __slots__ = ()

        def _as_mpf_val(self, prec):
            return mpmath.mpf(0.5)._mpf_

        def _numpycode(self, printer):
            return hook

        _pythoncode = _torchcode = _numpycode

    with pytest.raises(sg.OperandError, match="SymPy's own classes"):
        sg.grad_fn(lambda x: sg.sin(x) * Half())
    assert not marker.exists()


@pytest.mark.parametrize("value, says", [(sympy.I, "must be real"), (sympy.zoo, "must be real")])
def test_complex_sympy_constants_are_refused(value, says):
    with pytest.raises(sg.OperandError, match=says):
        sg.grad_fn(lambda x: x * value)


@pytest.mark.parametrize("backend", ["numpy", "torch", "c"])
def test_sympys_rarer_named_numbers_are_their_values(backend):
    require_backend(backend)
    for value in (sympy.Catalan, sympy.EulerGamma, sympy.GoldenRatio):
        g = sg.grad_fn(lambda x: sg.sin(x * value))
        (got,) = g.compile(backend)(torch.tensor(0.3, dtype=torch.float64)
                                    if backend == "torch" else 0.3)
        t = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
        (want,) = torch.autograd.grad(torch.sin(t * float(value)), t)
        assert float(got) == pytest.approx(want.item(), rel=1e-14)


def test_a_captured_symbol_is_not_read_as_a_parameter_of_its_name():
    outer = sg.symbol("x", shape=(2,))
    with pytest.raises(sg.OperandError, match="symbol x of shape \\(2,\\), which is not one of"):
        sg.grad_fn(lambda x: sg.sin(x) * sg.sum(outer))
    n = sg.symbol("n")
    with pytest.raises(sg.OperandError, match="symbol n"):
        sg.grad_fn(lambda x: sg.sum(x * n), shapes={"x": ("n",)})


def test_a_parameter_named_like_a_functions_placeholder_is_not_that_placeholder():
    """sg.Function traces forward on placeholders; one of a user's name is still outside."""
    captured = {}

    class Scale(sg.Function):
        @staticmethod
        def forward(ctx, x):
            return x * captured["w"]

        @staticmethod
        def backward(ctx, grad):
            return grad * 3.0

    from symgrad.diff import function
    n = next(function._counter) + 1       # the number the next application gets
    name = f"_Scale{n}_x"
    namespace = {"captured": captured, "Scale": Scale}
    exec(f"def f({name}, y):\n    captured['w'] = {name}\n    return Scale.apply(y)\n",
         namespace)
    with pytest.raises(sg.SymgradError, match="not one of its arguments"):
        sg.grad_fn(namespace["f"])


def test_check_directions_never_take_a_parameters_name():
    def f(x, _v_x):
        return sg.sin(x) * _v_x ** 2 + x ** 3 * _v_x
    assert sg.check(f, order=2).ok


def test_template_and_dim_caches_are_bounded():
    from symgrad.core import program, shapes
    from symgrad.codegen.backends import backend
    cache = backend("numpy").templates
    for k in range(program.MAX_TEMPLATES + 10):
        cache.cache[("probe", k)] = None
    sg.grad_fn(lambda x: sg.sum(x * 1.2345678), shapes={"x": ("n",)}).compile("numpy")
    assert len(cache.cache) <= program.MAX_TEMPLATES
    assert shapes.dim_symbol.cache_info().maxsize is not None


def test_dim_expressions_never_merge_look_alike_names_and_long_ones_are_shape_errors():
    with pytest.raises(sg.ShapeError, match="NFKC"):
        sg.grad_fn(lambda x, y: sg.sum(x[1:] * y), shapes={"x": ("n",), "y": ("ｎ-1",)})
    for text in ["+".join(["n"] * 100_000), "-" * 100_000 + "n"]:
        with pytest.raises(sg.ShapeError):
            sg.grad_fn(lambda x: sg.sum(x), shapes={"x": (text,)})


def test_op_parameters_equal_as_numbers_but_of_other_types_are_other_nodes():
    """3.0 == 3 in Python: a scale factor of 3.0 and a size of 3 were one interned node
    (and one printed template), so a trace returned another trace's interpolation."""
    import torch.nn.functional as F
    shapes = {"x": ("N", "C", "W")}
    x = np.random.default_rng(0).standard_normal((1, 2, 7))

    def up(x):
        return (F.interpolate(x, scale_factor=3.0, mode="nearest",
                              recompute_scale_factor=True) ** 2).sum()

    def down(x):
        y = F.interpolate(x, size=3, mode="nearest")
        return (y.cumsum(-1) * y).sum()

    def both(x):
        a = F.interpolate(x, scale_factor=2.0, mode="linear", recompute_scale_factor=True)
        b = F.interpolate(x, size=2, mode="linear")
        return (a ** 2).sum() + (b.cumsum(-1) * b).sum()

    kept = sg.grad_fn(up, shapes=shapes)
    for fn in (down, both, up):
        (got,) = sg.grad_fn(fn, shapes=shapes).compile("numpy")(x)
        t = torch.tensor(x, requires_grad=True)
        (want,) = torch.autograd.grad(fn(t), t)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    assert kept is not None
