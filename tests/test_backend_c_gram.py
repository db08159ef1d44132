"""compile("c")'s Gram kernel (codegen/backends/c_gram.py, c_gram_src.py): the products
Xᵀ diag(w) X it recognises in Hessians (logistic regression, weighted least squares with
weights of either sign, Gauss–Newton JᵀJ, a concave term), every instruction set's path at
sizes around its vector width, float32, strided arguments, and products it leaves to NumPy;
every result checked against torch (torch.func.hessian or the product itself) in float64."""
import linecache

import numpy as np
import pytest

import symgrad as sg
from backend_support import require_backend
from symgrad.api.derivative import DerivativeFn

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def c_available(tmp_path_factory, monkeypatch):
    require_backend("c")
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path_factory.getbasetemp() / "c-cache"))


def python_source(derivative):
    """The Python text of ``derivative.compile("c")``'s flat function."""
    fn = DerivativeFn.compile(derivative, "c")
    return "".join(linecache.getlines(fn.__code__.co_filename))


def T(a):
    return torch.tensor(np.array(a, dtype=np.float64))


def assert_gram_close(got, ref, scale):
    """``got`` is exactly symmetric and within 1e-13 of ``ref`` relative to ``scale``
    (|X|ᵀ|w||X|, the size of the terms summed: near-cancelling entries are held to the
    terms, not to their small sum)."""
    got = np.asarray(got)
    assert np.array_equal(got, got.T)
    assert np.all(np.abs(got - ref) <= 1e-13 * scale + 1e-300), np.abs(got - ref).max()


SIZES = [(0, 3), (3, 0), (1, 1), (7, 7), (8, 8), (9, 9), (20, 50), (300, 130), (130, 17)]


def layouts(x):
    """X as given, column-major, a strided view, rows reversed."""
    wide = np.zeros((x.shape[0], 2 * x.shape[1] + 1))
    wide[:, 1::2] = x
    return {"c": x, "f": np.asfortranarray(x), "strided": wide[:, 1::2], "reversed":
            np.ascontiguousarray(x[::-1])[::-1]}


@pytest.mark.parametrize("isa", ["base", "avx2", "avx512", "numpy"])
@pytest.mark.parametrize("n,d", SIZES, ids=[f"{n}x{d}" for n, d in SIZES])
def test_kernel_of_every_instruction_set_matches_torch(isa, n, d):
    """Each path of the kernel (a set this CPU lacks runs the widest one it has), and the
    NumPy products used on CPUs with neither AVX2 nor AVX-512."""
    from symgrad.codegen.backends import c_gram
    gram = c_gram._numpy_gram if isa == "numpy" else c_gram.kernel(isa)
    rng = np.random.default_rng(n * 1000 + d)
    x0 = rng.standard_normal((n, d))
    w = rng.standard_normal(n)
    cases = [(None, False, False, np.ones(n)), (w, False, False, w), (np.abs(w), True, False, w * w),
             (w, False, True, -w), (None, False, True, -np.ones(n))]
    for name, x in layouts(x0).items():
        for weights, square, negate, effective in cases:
            got = gram(x, weights, square, negate)
            assert got.shape == (d, d) and got.dtype == np.float64
            assert got.flags.c_contiguous or isa == "numpy"
            ref = (T(x).T @ torch.diag(T(effective)) @ T(x)).numpy()
            scale = np.abs(x).T @ (np.abs(effective)[:, None] * np.abs(x))
            assert_gram_close(got, ref, scale)


def logreg(w, b, X, y):
    z = X @ w + b
    return sg.mean(sg.softplus(z) - y * z) + 0.005 * sg.sum(w * w)


def logreg_torch(w, b, X, y):
    z = X @ w + b
    return (torch.nn.functional.softplus(z) - y * z).mean() + 0.005 * (w * w).sum()


@pytest.mark.parametrize("n,d", [(1, 1), (7, 7), (50, 8), (200, 9), (1000, 50), (300, 130)])
@pytest.mark.parametrize("symbolic", [True, False], ids=["symbolic", "concrete"])
def test_logistic_regression_hessian_matches_torch_func(n, d, symbolic):
    shapes = {"w": ("d",), "b": (), "X": ("N", "d"), "y": ("N",)} if symbolic else \
        {"w": (d,), "b": (), "X": (n, d), "y": (n,)}
    h = sg.hessian(logreg, wrt="w", shapes=shapes)
    if symbolic or d > 1:              # (1, 1) is a product of scalars
        assert "_gram(X, " in python_source(h)
        # the weights σ(1 − σ)/N themselves, not reassociate's sqrt of them
        c_source = DerivativeFn.compile(h, "c").__symgrad_c_source__
        assert "sqrt" not in c_source and "Gram kernel" in c_source
    rng = np.random.default_rng(d)
    args = (0.3 * rng.standard_normal(d), 0.2, rng.standard_normal((n, d)),
            (rng.random(n) > 0.5).astype(float))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(logreg_torch)(*[T(a) for a in args]).numpy()
    assert np.array_equal(got, got.T)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def signed_wls(p, X, w):
    return 0.5 * sg.sum(w * (X @ p) ** 2)


@pytest.mark.parametrize("n,d", [(0, 4), (5, 0), (9, 9), (120, 17)])
def test_weighted_least_squares_with_weights_of_either_sign(n, d):
    h = sg.hessian(signed_wls, wrt="p", shapes={"p": ("d",), "X": ("N", "d"), "w": ("N",)})
    assert "_gram(X, w, False, False)" in python_source(h)    # w itself: no square root
    rng = np.random.default_rng(3)
    args = (rng.standard_normal(d), rng.standard_normal((n, d)), rng.standard_normal(n))
    got = h.compile("c")(*args)
    ref = np.zeros((0, 0)) if d == 0 else torch.func.hessian(   # torch.func: no d = 0
        lambda p, X, w: 0.5 * (w * (X @ p) ** 2).sum())(*[T(a) for a in args]).numpy()
    scale = np.abs(args[1]).T @ (np.abs(args[2])[:, None] * np.abs(args[1]))
    assert got.shape == (d, d)
    assert_gram_close(got, ref, scale)


def test_gauss_newton_hessian_of_a_computed_jacobian():
    """0.5‖J p − y‖² with J = tanh(A) computed in the program: the Hessian JᵀJ is one
    unweighted product of J."""
    def f(p, A, y):
        return 0.5 * sg.sum((sg.tanh(A) @ p - y) ** 2)
    h = sg.hessian(f, wrt="p", shapes={"p": ("d",), "A": ("N", "d"), "y": ("N",)})
    assert ", None, False, False)" in python_source(h)
    rng = np.random.default_rng(4)
    args = (rng.standard_normal(13), rng.standard_normal((40, 13)), rng.standard_normal(40))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(lambda p, A, y: 0.5 * ((torch.tanh(A) @ p - y) ** 2).sum())(
        *[T(a) for a in args]).numpy()
    assert np.array_equal(got, got.T)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)


def test_negated_product_of_a_concave_term():
    h = sg.hessian(lambda p, X: sg.sum(sg.cos(X @ p)), wrt="p",
                   shapes={"p": ("d",), "X": ("N", "d")})
    assert "False, True)" in python_source(h)
    rng = np.random.default_rng(5)
    args = (rng.standard_normal(10), rng.standard_normal((60, 10)))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(lambda p, X: torch.cos(X @ p).sum())(*[T(a) for a in args])
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sign", [1, -1], ids=["nonnegative", "of_either_sign"])
def test_square_root_of_weights_of_unknown_sign_is_kept(sign):
    """(X √v)ᵀ (X √v) with v of unknown sign is X diag(√v²) X: NaN where v < 0, as in
    torch."""
    def f(c, X, v):
        Y = X * sg.unsqueeze(sg.sqrt(v), 1)
        return (Y.T @ Y) @ c
    J = sg.jacobian(f, wrt="c", shapes={"c": ("d",), "X": ("N", "d"), "v": ("N",)})
    assert ", True, False)" in python_source(J)
    rng = np.random.default_rng(10)
    args = (rng.standard_normal(5), rng.standard_normal((30, 5)),
            rng.random(30) - (0.5 if sign < 0 else 0.0))
    with np.errstate(invalid="ignore"):
        got = J.compile("c")(*args)

    def f_torch(c, X, v):
        Y = X * torch.sqrt(v)[:, None]
        return (Y.T @ Y) @ c
    ref = torch.func.jacrev(f_torch)(*[T(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13, equal_nan=True)
    assert np.isnan(got).all() == (sign < 0)


def test_float32_arguments_give_float32_like_the_numpy_backend():
    h = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "b": (), "X": ("N", "d"), "y": ("N",)})
    rng = np.random.default_rng(6)
    args = (rng.standard_normal(9).astype(np.float32), np.float32(0.1),
            rng.standard_normal((70, 9)).astype(np.float32),
            (rng.random(70) > 0.5).astype(np.float32))
    got, numpy_result = h.compile("c")(*args), h.compile("numpy")(*args)
    assert got.dtype == numpy_result.dtype == np.float32 and got.shape == (9, 9)
    ref = torch.func.hessian(logreg_torch)(*[T(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["f", "strided", "reversed"])
def test_non_contiguous_data_matrix(layout):
    h = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "b": (), "X": ("N", "d"), "y": ("N",)})
    rng = np.random.default_rng(7)
    X = layouts(rng.standard_normal((150, 11)))[layout]
    args = (0.2 * rng.standard_normal(11), -0.1, X, (rng.random(150) > 0.5).astype(float))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(logreg_torch)(*[T(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_batched_products_stay_numpy_code():
    def f(p, X):
        return 0.5 * sg.sum((X @ p) ** 2)
    h = sg.hessian(f, wrt="p", shapes={"p": (5,), "X": ("B", "N", 5)})
    assert "_gram(" not in python_source(h)
    rng = np.random.default_rng(8)
    args = (rng.standard_normal(5), rng.standard_normal((3, 20, 5)))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(lambda p, X: 0.5 * ((X @ p) ** 2).sum())(*[T(a) for a in args])
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-12)


def test_kernel_source_is_portable():
    """No CPU-specific build flag: the wide instruction sets are per-function ``target``
    attributes chosen at run time, so a module cached on one CPU runs on any other."""
    from symgrad.codegen.backends import c_build, c_gram_src
    text = c_gram_src.source()
    assert not any(f.startswith(("-march", "-mavx", "-mtune")) for f in c_build.FLAGS)
    assert '__builtin_cpu_supports("avx512f")' in text and 'target("avx512f,fma")' in text
    assert text == c_gram_src.source()


def test_numpy_products_without_avx2(monkeypatch):
    """The portable C path is slower than BLAS, so a CPU with neither AVX2 nor AVX-512 gets
    NumPy's products; the compiled function still matches torch."""
    from symgrad.codegen.backends import c_gram

    class Portable:
        @staticmethod
        def sg_gram_isa():
            return 0
    monkeypatch.setattr(c_gram, "_library", lambda: (Portable, None))
    assert c_gram.runtime() is c_gram._numpy_gram
    h = sg.hessian(signed_wls, wrt="p", shapes={"p": ("d",), "X": ("N", "d"), "w": ("N",)})
    rng = np.random.default_rng(9)
    args = (rng.standard_normal(6), rng.standard_normal((30, 6)), rng.standard_normal(30))
    got = h.compile("c")(*args)
    ref = torch.func.hessian(lambda p, X, w: 0.5 * (w * (X @ p) ** 2).sum())(
        *[T(a) for a in args]).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-13)
    assert np.array_equal(got, got.T)


def test_toolchain_that_cannot_build_the_wide_paths_gets_the_portable_module(monkeypatch):
    from symgrad.codegen.backends import c_build, c_gram
    real = c_gram.load

    def old_assembler(cdef, text, **kw):
        if "#define SG_PORTABLE 1" not in text:
            raise c_build.CBuildError("unknown instruction vfmadd231pd %zmm...")
        return real(cdef, text, **kw)
    monkeypatch.setattr(c_gram, "_runtime", {})
    monkeypatch.setattr(c_gram, "load", old_assembler)
    assert c_gram._library()[0].sg_gram_isa() == 0
    assert c_gram.runtime() is c_gram._numpy_gram
    x = np.random.default_rng(11).standard_normal((40, 9))
    assert_gram_close(c_gram.kernel()(x, None, False, False), (T(x).T @ T(x)).numpy(),
                      np.abs(x).T @ np.abs(x))
