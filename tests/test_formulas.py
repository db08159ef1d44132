"""Formulas are SymPy's own matrix objects, evaluate with SymPy alone, print as a person
writes them, and ``g.verify()`` checks every view against the compiled code.

The rule table and the fuzzer's programs are checked view by view in
``tests/fuzz/test_views.py`` (the "formulas" view); here: the objects themselves, the
cases the issue listed (each printed before and after), Matrix Cookbook identities
compared as SymPy objects, and ``verify``.
"""
import numpy as np
import pytest
import sympy
from sympy import ImmutableMatrix, Inverse, MatrixSymbol, Transpose
from sympy.matrices.expressions import MatrixExpr, ZeroMatrix

import symgrad as sg
from symgrad.core.shapes import dim_symbol
from symgrad.views.verify import evaluate_formula

n, m = dim_symbol("n"), dim_symbol("m")


def grad(f, **shapes):
    return sg.grad_fn(f, shapes=shapes)


def compiled(g, values):
    out = g.compile()(*[values[x.name] for x in g.inputs])
    return out if isinstance(out, tuple) else (out,)


def test_inputs_are_matrix_symbols_and_vectors_are_columns():
    g = grad(lambda x, A, c: c * (x @ A @ x), x=("n",), A=("n", "n"), c=())
    f = g.formulas
    assert isinstance(f["x"], MatrixExpr) and f["x"].shape == (n, 1)
    assert isinstance(f["A"], MatrixExpr) and f["A"].shape == (n, n)
    assert not isinstance(f["c"], MatrixExpr)
    x, A = MatrixSymbol("x", n, 1), MatrixSymbol("A", n, n)
    assert f["x"].has(x) and f["x"].has(A)
    assert f["A"] == sympy.Symbol("c", real=True) * x * x.T


def test_a_formula_evaluates_with_sympy_alone():
    g = grad(lambda x, A: sg.sum(sg.tanh(A @ x)) ** 2, x=("n",), A=("m", "n"))
    rng = np.random.default_rng(0)
    X, AA = rng.standard_normal(3), rng.standard_normal((2, 3))
    fx = g.formulas["x"]
    value = fx.subs({n: 3, m: 2}).xreplace({
        MatrixSymbol("x", 3, 1): ImmutableMatrix(X), MatrixSymbol("A", 2, 3): ImmutableMatrix(AA)
    }).doit()
    value = np.array(value.evalf(), dtype=float).ravel()
    np.testing.assert_allclose(value, compiled(g, {"x": X, "A": AA})[0], rtol=1e-10)


def test_an_unused_input_has_a_sympy_zero():
    g = grad(lambda x, y, s: sg.sum(x), x=("n",), y=("m", "n"), s=())
    assert g.formulas["y"] == ZeroMatrix(m, n)
    assert g.formulas["s"] == 0


def test_sympy_prints_and_differentiates_the_objects():
    g = grad(lambda x, A: x @ A @ x, x=("n",), A=("n", "n"))
    fx = g.formulas["x"]
    assert sympy.latex(fx) and sympy.pretty(fx)
    x, A = MatrixSymbol("x", n, 1), MatrixSymbol("A", n, n)
    assert sympy.simplify(fx - (A + A.T) * x) == ZeroMatrix(n, 1)


# ----- Matrix Cookbook identities, as SymPy objects -----------------------------------

def test_cookbook_logdet():
    f = grad(lambda X: sg.logdet(X), X=("n", "n")).formulas["X"]
    X = MatrixSymbol("X", n, n)
    assert f == Transpose(Inverse(X)) or f == Inverse(X).T


def test_cookbook_quadratic_form_and_linear_forms():
    x, a, A = MatrixSymbol("x", n, 1), MatrixSymbol("a", n, 1), MatrixSymbol("A", n, n)
    assert grad(lambda x, a: a @ x, x=("n",), a=("n",)).formulas["x"] == a
    fx = grad(lambda x, A: x @ A @ x, x=("n",), A=("n", "n")).formulas["x"]
    assert sympy.simplify(fx - (A + A.T) * x) == ZeroMatrix(n, 1)
    fA = grad(lambda x, A: x @ A @ x, x=("n",), A=("n", "n")).formulas["A"]
    assert fA == x * x.T
    fB = grad(lambda A, B: sg.trace(A @ B), A=("n", "n"), B=("n", "n")).formulas["B"]
    assert fB == A.T


def test_cookbook_inverse_of_a_gram_matrix_reads_2_X_inverse():
    g = grad(lambda X: sg.logdet(X @ X.T), X=("k", "n"))       # no inverse of X itself
    assert g.text().splitlines()[0] == "df/dX = 2 (X Xᵀ)⁻¹ X    [shape (k, n)]"
    g = grad(lambda X: sg.logdet(X @ X.T), X=("n", "n"))       # square: (X Xᵀ)⁻¹ X = X⁻ᵀ
    assert g.text().splitlines()[0] == "df/dX = 2 X⁻ᵀ    [shape (n, n)]"
    X = np.random.default_rng(0).standard_normal((3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(evaluate_formula(g.formulas["X"], {"X": X}, {n: 3}),
                               compiled(g, {"X": X})[0], rtol=1e-9)


# ----- the printed cases, before and after ----------------------------------------------

PRINTED = [
    # (function, shapes, key, before (wrong or clumsy), after)
    (lambda x: sg.sum(x) ** 2, {"x": ("n",)}, "x", "2 𝟙ᵀ x", "2 (𝟙ᵀ x) 𝟙"),
    (lambda A, B: sg.sum(B @ (A + 1)), {"A": ("n", "n"), "B": ("n", "n")}, "B",
     "𝟙 𝟙ᵀ (A + 1)ᵀ", "𝟙𝟙ᵀ (Aᵀ + 𝟙𝟙ᵀ)"),
    (lambda x, c: sg.sum(x * c), {"x": ("n",), "c": ()}, "x", "c", "c 𝟙"),
    (lambda A, x: sg.sum(A @ x) ** 2, {"A": ("n", "n"), "x": ("n",)}, "x",
     "2 Aᵀ 𝟙ᵀ A x", "2 (𝟙ᵀ A x) Aᵀ 𝟙"),
    (lambda x, A: x @ A @ x, {"x": ("n",), "A": ("n", "n")}, "x", "(Aᵀ + A) x",
     "(A + Aᵀ) x"),
    (lambda x, s, l: sg.exp(l) * sg.sum(x ** 2) / s / s, {"x": ("n",), "s": (), "l": ()}, "x",
     "(2 (exp(l) (1/s))) ∘ x", "(2 exp(l)/s²) x"),
]


@pytest.mark.parametrize("f, shapes, key, before, after", PRINTED,
                         ids=[p[4] for p in PRINTED])
def test_printed_case(f, shapes, key, before, after):
    g = grad(f, **shapes)
    line = next(l for l in g.text().splitlines() if l.startswith(f"df/d{key} ="))
    assert line.split(" = ", 1)[1].split("    [")[0] == after
    assert g.verify()


def test_a_scalar_added_to_a_matrix_prints_the_all_ones_matrix():
    g = grad(lambda A, B: sg.sum(B @ (A + 1)), A=("n", "n"), B=("n", "n"))
    assert "𝟙𝟙ᵀ" in g.text() and r"\mathbf{1}\mathbf{1}^{T}" in g.latex()


# ----- verify ---------------------------------------------------------------------------

def test_verify_agrees_on_a_network_and_a_hessian():
    g = grad(lambda x, W1, W2: sg.sum(W2 @ sg.tanh(W1 @ x)),
             x=("n",), W1=("h", "n"), W2=("m", "h"))
    report = g.verify(seed=1)
    assert report and "formulas" in str(report) and not report.differing
    H = sg.hessian(lambda x, A: x @ A @ x, shapes={"x": ("n",), "A": ("n", "n")})
    assert H.verify(n=3)


def test_verify_names_a_view_that_differs(monkeypatch):
    g = grad(lambda x: sg.sum(sg.sin(x)), x=("n",))
    wrong = {"x": g.formulas["x"] * 2}
    monkeypatch.setattr(type(g), "formulas", property(lambda self: wrong))
    report = g.verify()
    assert not report and report.differing == [("formulas", "x")]
    assert "DIFFERS" in str(report)


def test_evaluate_formula_reads_columns_as_vectors():
    x = MatrixSymbol("x", n, 1)
    got = evaluate_formula(2 * x, {"x": np.arange(3.0)}, {n: 3})
    np.testing.assert_allclose(got.ravel(), [0, 2, 4])


# ----- more printed forms ---------------------------------------------------------------

def _text(d):
    return str(d)


def test_softmax_cross_entropy_reads_softmax_minus_y_and_its_hessian_diag_p_minus_ppT():
    f = lambda z, y: -sg.sum(y * sg.log_softmax(z))  # noqa: E731
    shapes = {"z": ("n",), "y": ("n",)}
    assert "df/dz = (𝟙ᵀ y) softmax(z) − y" in _text(sg.grad_fn(f, shapes=shapes))
    H = sg.hessian(f, shapes=shapes, wrt="z")
    assert _text(H) == ("d²f/dz² = (𝟙ᵀ y) (diag(softmax(z)) − softmax(z) softmax(z)ᵀ)    "
                        "[shape (n, n)]")
    assert H.verify()


def test_logistic_regression_gradient_reads_sigmoid_minus_y():
    g = grad(lambda w, X, y: sg.binary_cross_entropy_with_logits(X @ w, y),
             w=("d",), X=("N", "d"), y=("N",))
    assert "t₁ = (1/N) (σ(X w) − y)" in g.text() and "df/dw = Xᵀ t₁" in g.text()


def test_captured_arrays_are_named_after_their_variable():
    Y = np.arange(6.0).reshape(2, 3)
    g = grad(lambda W: sg.sum((W - Y) ** 2) + sg.sum(W * np.array([[1.0, 2, 3], [4, 5, 6]])),
             W=(2, 3))
    assert g.text().startswith("df/dW = [[1, 2, 3], [4, 5, 6]] + 2 (W − Y)")
    assert set(g.constants) == {"Y"} and g.verify()


def test_the_norm_prints_its_zero_guard_once():
    g = grad(lambda x: sg.norm(x), x=("n",))
    assert g.text().startswith("df/dx = {0 if ‖x‖ = 0; 1/‖x‖} x")


def test_floats_print_without_rounding_noise():
    g = grad(lambda x: 0.01 * 3 * sg.sum(x ** 2), x=("n",))
    assert g.text().startswith("df/dx = 0.06 x")
