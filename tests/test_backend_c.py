"""compile("c") beyond the shared backend tests (test_rules, tests/fuzz, the model zoo,
which compare it with torch.autograd): the NumPy backend's outputs and dtypes exactly,
the fast path of scalar programs, the hybrid with NumPy code, user names kept out of the
C source, the disk cache, and the error without a compiler."""
import numpy as np
import pytest

import symgrad as sg
from backend_support import require_backend
from symgrad.codegen.backends import c_build
from symgrad.errors import ArgumentError, SymgradError


@pytest.fixture(autouse=True)
def c_available(request):
    """Every test but the two that check the errors without cffi or a compiler needs both."""
    if not request.node.name.startswith(("test_no_compiler_", "test_no_cffi_")):
        require_backend("c")


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path_factory.getbasetemp() / "c-cache"))


def chain(x, y):
    for _ in range(5):
        x = sg.sin(x) * x + sg.cos(y) * x
    return x


def both(g, *args, **kw):
    return g.compile("numpy", **kw)(*args), g.compile("c", **kw)(*args)


def test_scalar_program_is_one_c_function_returning_python_floats():
    g = sg.grad_fn(chain)
    ref, got = both(g, 0.3, 0.7)
    assert type(got) is tuple and all(type(v) is float for v in got)
    np.testing.assert_allclose(got, ref, rtol=1e-14)
    assert "sin(" in g.compile("c").__symgrad_c_source__


@pytest.mark.parametrize("args", [(np.float32(0.3), 0.7), (np.float64(0.3), 1), (2, np.array(0.5))],
                         ids=["float32", "numpy_float64_and_int", "int_and_0d_array"])
def test_scalar_arguments_of_other_types_give_the_numpy_backends_types(args):
    g = sg.grad_fn(chain)
    ref, got = both(g, *args)
    assert [type(v) for v in got] == [type(v) for v in ref]
    np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(ref, dtype=float),
                               rtol=1e-6)


def test_with_value():
    g = sg.grad_fn(chain)
    (v_ref, ref), (v, got) = both(g, 0.3, 0.7, with_value=True)
    assert v == pytest.approx(v_ref, rel=1e-14) and got == pytest.approx(ref, rel=1e-14)


def mlp(W, b, X):
    return sg.mean(sg.tanh(X @ W + b) ** 2 * sg.sigmoid(X @ W))


SHAPES = {"W": (3, 4), "b": (4,), "X": ("N", 3)}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("N", [5, 0])
def test_hybrid_program_matches_numpy_dtypes_and_all(dtype, N):
    g = sg.grad_fn(mlp, shapes=SHAPES)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype(dtype) for s in [(3, 4), (4,), (N, 3)]]
    ref, got = both(g, *args)
    for r, o in zip(ref, got):
        assert type(o) is type(r) and o.dtype == r.dtype and o.shape == r.shape
        np.testing.assert_allclose(o, r, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-7)
    source = g.compile("c").__symgrad_c_source__
    assert "for (long i = 0; i < n; i++)" in source and "tanh(" in source


def test_program_without_native_part_is_the_numpy_function():
    g = sg.grad_fn(lambda x: sg.sum(x), shapes={"x": (3,)})
    fn = g.compile("c")
    assert not hasattr(fn, "__symgrad_c_source__")
    np.testing.assert_array_equal(fn(np.arange(3.0))[0], np.ones(3))


def test_arguments_are_checked_as_by_numpy():
    g = sg.grad_fn(mlp, shapes=SHAPES)
    fn = g.compile("c")
    with pytest.raises(ArgumentError, match="takes 3 arguments"):
        fn(np.ones((3, 4)))
    with pytest.raises(ArgumentError, match="shape"):
        fn(np.ones((3, 4)), np.ones(5), np.ones((2, 3)))
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        sg.grad_fn(chain).compile("c")(1.0)


def test_user_names_never_reach_the_c_source():
    names = ["double", "sin", "né", "return_"]

    def f(a, b, c, d):
        return sg.sum(sg.exp(a * b) * sg.log1p(c * c) / d)

    f.__signature__ = __import__("inspect").Signature(
        [__import__("inspect").Parameter(n, 1) for n in names])
    g = sg.grad_fn(f, shapes={n: ("int",) for n in names})
    args = [np.linspace(0.1, 1, 4) + k for k in range(4)]
    ref, got = both(g, *args)
    for r, o in zip(ref, got):
        np.testing.assert_allclose(o, r, rtol=1e-13)
    source = g.compile("c").__symgrad_c_source__
    body = source[source.index("void sg_k0"):]
    for word in ("double sin", " né", "return_", " int "):
        assert word not in body


def test_the_module_is_built_once_and_loaded_from_the_disk_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path))
    g = sg.grad_fn(lambda x, y: sg.atan2(x, y) * sg.erf(x * y + 0.25))
    ref = g.compile("c")(0.4, 0.9)
    built = list((tmp_path / "c").glob("_symgrad_c_*"))
    assert len(built) == 1
    c_build._modules.clear()            # a new process: nothing loaded yet

    def refuse(*a):
        raise AssertionError("compiled again")
    monkeypatch.setattr(c_build, "_build", refuse)
    g2 = sg.grad_fn(lambda x, y: sg.atan2(x, y) * sg.erf(x * y + 0.25))
    assert g2.compile("c")(0.4, 0.9) == ref


def test_a_damaged_cached_module_is_built_again(tmp_path):
    """A truncated module (a full disk) in the cache is rebuilt, not an ImportError."""
    import os
    import subprocess
    import sys
    code = ("import symgrad as sg; print(sg.grad_fn(lambda x, y: sg.sin(x) * sg.exp(y))"
            ".compile('c')(0.3, 0.4))")
    env = dict(os.environ, SYMGRAD_CACHE=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout
    built = list((tmp_path / "c").glob("_symgrad_c_*"))
    assert built
    for path in built:
        path.write_bytes(b"")
    again = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout == first


def test_no_compiler_is_an_error_saying_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(c_build._sysconfig(), "get_config_var",
                        lambda name: "no-such-cc" if name == "CC" else None)
    g = sg.grad_fn(lambda x: sg.sin(x) * sg.exp(x))
    with pytest.raises(c_build.CompilerError, match="C compiler.*install") as e:
        g.compile("c")
    assert isinstance(e.value, SymgradError) and isinstance(e.value, ImportError)


def test_no_cffi_is_an_error_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "cffi", None)
    g = sg.grad_fn(lambda x: sg.cos(x) * sg.exp(x))
    with pytest.raises(c_build.CompilerError, match="cffi.*symgrad\\[c\\]"):
        g.compile("c")


def test_nan_and_inf_follow_numpy():
    def f(x, y):
        return sg.log(x) * sg.maximum(x, y) + sg.sqrt(y) + sg.sign(x) * sg.abs(y) / x
    g = sg.grad_fn(f)
    for args in [(-1.0, 2.0), (0.0, 1.0), (float("nan"), 1.0), (2.0, float("inf"))]:
        with np.errstate(all="ignore"):
            ref, got = both(g, *args)
        np.testing.assert_allclose(got, ref, rtol=1e-14, equal_nan=True)


def test_source_says_where_the_c_is():
    g = sg.grad_fn(chain)
    with pytest.raises(ArgumentError, match="__symgrad_c_source__"):
        g.source("c")


def test_every_compiled_function_shows_its_own_source_in_tracebacks():
    """A rolled C gradient, a hybrid one and a NumPy one each get a file name of their own
    (two counters once named the first rolled and the first hybrid both <symgrad-c-0>)."""
    import linecache

    def long_chain(x, y):
        for _ in range(100):
            x = sg.sin(x) * x + sg.cos(y) * 0.5
        return x
    rolled = sg.grad_fn(long_chain)
    assert "for _lk in range(" in rolled.source("numpy")
    fns = [rolled.compile("c"),
           sg.grad_fn(mlp, shapes=SHAPES).compile("c"),
           sg.grad_fn(chain).compile("numpy")]
    names = [fn.__code__.co_filename for fn in fns]
    assert len(set(names)) == 3, names
    for fn, name in zip(fns, names):
        assert f"def {fn.__name__}(" in "".join(linecache.getlines(name))
