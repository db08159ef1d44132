"""The Numba backend (``compile("numba")``) against torch.autograd, through the same
checks as the NumPy and torch backends: the rule table's gradient and JVP checks
(``test_rules.check_gradient``/``check_jvp`` with ``backends=("numba",)``), fuzzed
programs (``tests.fuzz.runner.run_one(..., backends=...)``), plus what is Numba's own:
dtypes as the NumPy backend gives them, ops Numba cannot compile running as NumPy in the
same function, the on-disk kernel cache, and the error when Numba is missing.

Numba compiles each kernel in about a second (the first time; then from its cache), so
the default run takes the first case of every op of the rule table for the gradient
(orders 1 and 2: every op at least once), of every third op for the JVP, an eighth of
the fuzz seeds and one zoo model (cell_loop alone takes Numba
about 90 s to compile cold); the other cases are ``slow`` (``pytest -m slow tests/test_backend_numba.py``).
"""
import subprocess
import sys
import zlib

import numpy as np
import pytest

import symgrad as sg

pytest.importorskip("numba")

from rule_specs import SPECS  # noqa: E402
from test_rules import check_gradient, check_jvp, params  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:`torch.jit.script`:DeprecationWarning")]

BACKENDS = ("numba",)


def subset(test, every=1):
    """The rule-table cases of ``test``: the first case of every ``every``-th op in the
    default run, the rest marked slow."""
    seen, out = set(), []
    for p in params(test):
        spec = p.values[0]
        marks = list(p.marks)
        if spec.op in seen or len(seen) % every:
            marks.append(pytest.mark.slow)
        seen.add(spec.op)
        out.append(pytest.param(*p.values, id=p.id, marks=marks))
    return out


@pytest.mark.parametrize("spec, case", subset("gradient"))
def test_gradient(spec, case):
    check_gradient(spec, case, BACKENDS)


@pytest.mark.parametrize("spec, case", subset("jvp", every=3))
def test_jvp(spec, case):
    check_jvp(spec, case, BACKENDS)


def fuzz_seeds():
    out = []
    for k, op in enumerate(sorted(SPECS)):
        marks = [] if k % 8 == 0 else [pytest.mark.slow]
        out.append(pytest.param(op, id=op, marks=marks))
    return out


@pytest.mark.parametrize("op", fuzz_seeds())
def test_fuzzed_program(op):
    from fuzz.runner import run_one
    outcome = run_one(zlib.crc32(op.encode()), max_steps=4, first_op=op, backends=BACKENDS,
                      edges=False, views=False, names=False)
    assert outcome.status == "ok", "\n" + outcome.report()


FAST_MODELS = ("conv1d_net",)


def zoo_scripts():
    from test_model_zoo import SCRIPTS
    return [pytest.param(p, id=p.stem, marks=[] if p.stem in FAST_MODELS
                         else [pytest.mark.slow]) for p in SCRIPTS]


@pytest.mark.parametrize("script", zoo_scripts())
def test_model(script, monkeypatch, capsys):
    from test_model_zoo import MODELS, load
    monkeypatch.syspath_prepend(str(MODELS))
    import _zoo
    monkeypatch.setattr(_zoo, "BACKENDS", BACKENDS)
    assert load(script).main()
    out = capsys.readouterr().out
    assert "[numba]" in out and "MISMATCH" not in out


# ----- what is the backend's own ------------------------------------------------------

def mlp(W1, b1, W2, X):
    return sg.mean((sg.tanh(X @ W1 + b1) @ W2) ** 2)


MLP_SHAPES = {"W1": ("d", "h"), "b1": ("h",), "W2": ("h", 3), "X": ("B", "d")}


def mlp_args(dtype=np.float64):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in ((4, 5), (5,), (5, 3), (6, 4))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_values_and_dtypes_as_numpy(dtype):
    g = sg.grad_fn(mlp, shapes=MLP_SHAPES)
    args = mlp_args(dtype)
    ours, theirs = g.compile("numba")(*args), g.compile("numpy")(*args)
    for o, t in zip(ours, theirs):
        assert type(o) is type(t) and o.dtype == t.dtype and o.shape == t.shape
        np.testing.assert_allclose(o, t, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_with_value_and_scalars():
    g = sg.grad_fn(lambda x, y: sg.sin(x) * y + x ** 3)
    (v, (dx, dy)) = g.compile("numba", with_value=True)(0.5, 2.0)
    (v2, (dx2, dy2)) = g.compile("numpy", with_value=True)(0.5, 2.0)
    np.testing.assert_allclose([v, dx, dy], [v2, dx2, dy2], rtol=1e-14)


def test_argument_errors_as_numpy():
    fn = sg.grad_fn(mlp, shapes=MLP_SHAPES).compile("numba")
    args = mlp_args()
    with pytest.raises(sg.SymgradError, match="argument W1 must have shape"):
        fn(np.ones(3), *args[1:])
    with pytest.raises(sg.SymgradError, match="takes 4 arguments"):
        fn(*args[:3])


def test_elementwise_chain_is_one_loop_and_products_are_blas():
    g = sg.grad_fn(mlp, shapes=MLP_SHAPES)
    src = g.source("numba")
    assert "@numba.njit(cache=True" in src
    assert " @ " in src                     # matrix products: Numba's BLAS
    assert "numpy.tanh" not in src and "math.tanh" in src    # tanh is one loop's element
    assert g.compile("numba").__doc__.endswith("ops run by NumPy: none.")


def test_ops_numba_cannot_compile_run_as_numpy_in_the_same_function():
    def f(x):
        return sg.logsumexp(x) * sg.sum(sg.exp(x) * x)
    g = sg.grad_fn(f, shapes={"x": (5,)})
    fn = g.compile("numba")
    x = np.array([0.3, -1.0, 2.0, 0.1, 0.7])
    np.testing.assert_allclose(fn(x)[0], g.compile("numpy")(x)[0], rtol=1e-12)
    assert "ops run by NumPy: logsumexp" in fn.__doc__
    assert "Ops in Numba kernels: " in fn.__doc__ and "exp" in fn.__doc__


def test_kernels_are_cached_on_disk_for_a_second_process(tmp_path):
    code = ("import sys, numpy, symgrad as sg\n"
            "g = sg.grad_fn(lambda x: sg.sum(sg.exp(x) * x), shapes={'x': ('n',)})\n"
            "g.compile('numba')(numpy.ones(3))\n"
            "kernels = [k for m in list(sys.modules) if m.startswith('symgrad_numba_')\n"
            "           for n, k in vars(sys.modules[m]).items() if n.startswith('_k')]\n"
            "print(sum(sum(k.stats.cache_hits.values()) for k in kernels))\n")
    env = {"SYMGRAD_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": ":".join(sys.path)}

    def cache_hits():
        return int(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                  capture_output=True, text=True).stdout)
    assert cache_hits() == 0
    assert list((tmp_path / "numba").glob("k*.py")), "no kernel source in the cache"
    assert cache_hits() >= 1     # the second process loads the machine code


def test_missing_numba_says_how_to_install(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_numba(name, *a, **k):
        if name == "numba" or name.startswith("numba."):
            raise ImportError("No module named 'numba'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_numba)
    g = sg.grad_fn(lambda x: x * x)
    with pytest.raises(sg.SymgradError, match=r"pip install 'symgrad\[numba\]'"):
        g.compile("numba")


def test_strided_and_integer_arguments():
    g = sg.grad_fn(mlp, shapes=MLP_SHAPES)
    args = mlp_args()
    strided = [np.asfortranarray(args[0]), args[1], args[2][:, ::1], args[3].T.copy().T]
    strided[1] = np.repeat(args[1], 2)[::2]            # a view with stride 2
    ours, theirs = g.compile("numba")(*strided), g.compile("numpy")(*args)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o, t, rtol=1e-12)
    ints = [a.round().astype(np.int64) for a in args]
    for o, t in zip(g.compile("numba")(*ints), g.compile("numpy")(*ints)):
        assert o.dtype == t.dtype
        np.testing.assert_allclose(o, t, rtol=1e-12)


@pytest.mark.parametrize("op", ["floor", "ceil", "trunc", "round", "round2", "frac"])
def test_roundings_keep_nan_inf_and_huge_values_as_torch(op):
    """Numba's math.floor (ceil, trunc, round) returns int64: nan, inf and |x| >= 2**63
    came back as -2**63, in fused loops and in all-scalar programs alike."""
    import torch
    fns = {"floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc,
           "round": torch.round, "round2": lambda t: torch.round(t, decimals=2),
           "frac": torch.frac}
    fn = fns[op]
    x = np.array([np.nan, np.inf, -np.inf, 1e300, 3e19, -1e19, 2.5, -7.25])
    g = sg.grad_fn(lambda x, y: (fn(x) * y).sum(), shapes={"x": ("n",), "y": ("n",)})
    value, (_, dy) = g.compile("numba", with_value=True)(x, np.ones_like(x))
    want = fn(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(dy, want)
    scalar = sg.grad_fn(lambda x, y: fn(x) * y).compile("numba")
    for v, w in zip(x, want):
        np.testing.assert_array_equal(scalar(float(v), 1.0)[1], w)


def test_det_of_a_matrix_with_nan_is_nan_as_torch():
    """Numba's np.linalg.det refuses non-finite input; torch gives nan: det runs as NumPy."""
    import torch
    A = np.array([[1.0, 2.0], [np.nan, 4.0]])
    t = torch.tensor(A, requires_grad=True)
    (want,) = torch.autograd.grad(torch.det(t), t)
    (got,) = sg.grad_fn(lambda A: torch.det(A), shapes={"A": (2, 2)}).compile("numba")(A)
    np.testing.assert_array_equal(got, want.numpy())
