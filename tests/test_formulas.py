"""Formulas are SymPy's own matrix objects, evaluate with SymPy alone, print as a person
writes them, and ``g.verify()`` checks every view against the compiled code.

The rule table and the fuzzer's programs are checked view by view in
``tests/fuzz/test_views.py`` (the "formulas" view); here: the objects themselves, the
cases the issue listed (each printed before and after), Matrix Cookbook identities
compared as SymPy objects, and ``verify``.
"""
import inspect

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


# ----- print forms (issue 16 items: guards, stable forms, structure), each evaluated -------

def _torch_reference(f, values, wrt, hessian=False):
    """torch.autograd's gradient (or Hessian) w.r.t. ``wrt`` of ``f`` run on torch tensors
    (symgrad's ops compute on them)."""
    import torch
    names = list(values)
    args = [torch.tensor(values[k], dtype=torch.float64, requires_grad=True) for k in names]
    i = names.index(wrt)
    if hessian:
        def at(v):
            return f(*args[:i], v, *args[i + 1:])
        return torch.autograd.functional.hessian(at, args[i].detach()).numpy()
    (out,) = torch.autograd.grad(f(*args), args[i])
    return out.numpy()


def _agrees_with_torch(g, f, values, dims=None, hessian=False):
    """Every formula of ``g``, evaluated by SymPy alone, equals torch.autograd's result."""
    for key in g.formulas:
        want = _torch_reference(f, values, key, hessian)
        got = evaluate_formula(g.formulas[key], values, dims or {})
        np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want,
                                   rtol=1e-9, atol=1e-12)


def _line(g, label):
    line = next(l for l in str(g).splitlines() if l.startswith(label + " = "))
    return line.split(" = ", 1)[1].split("    [")[0]


def test_scalar_guards_are_piecewise_in_every_view():
    """Cobb-Douglas: the zero-exponent guard of a symbolic exponent is a SymPy Piecewise,
    printed as a conditional (text), cases (LaTeX), {…; …} (matrix notation); SymPy
    simplifies it without recursing forever."""
    f = lambda K, L, a: K ** a * L ** (1 - a)  # noqa: E731
    g = sg.grad_fn(f)
    fK = g.formulas["K"]
    K, L, a = sympy.symbols("K L a", real=True)
    assert isinstance(fK, sympy.Piecewise) and fK.args[0].cond == sympy.Eq(a, 0)
    text = g.text()
    assert "where(" not in text and "Eq(" not in text
    assert _line(g, "df/dK") == "(0 if a == 0 else K**(a - 1)*a*t1)"
    assert r"\begin{cases}" in g.latex() and "Eq" not in g.latex()
    assert g.text("matrix").splitlines()[0] == "df/dK = {0 if a = 0; a K^(a − 1) L^(1 − a)}"
    assert sympy.simplify(fK / L ** (1 - a)) == a * K ** (a - 1)
    _agrees_with_torch(g, f, {"K": 1.3, "L": 0.7, "a": 0.4})
    assert g.verify()


def test_a_guard_sympy_proves_false_or_a_literal_exponent_prints_none():
    ces = lambda K, L, rho: (K ** rho + L ** rho) ** (1 / rho)  # noqa: E731
    g = sg.grad_fn(ces)
    assert "1/rho == 0" not in g.text() and "if rho == 0" in g.text()
    _agrees_with_torch(g, ces, {"K": 1.3, "L": 0.7, "rho": 0.5})
    h = sg.grad_fn(lambda x: x ** 2 + x ** 0.5)
    assert str(h) == "df/dx = 2*x + 0.5/sqrt(x)" and not h.formulas["x"].has(sympy.Piecewise)
    _agrees_with_torch(h, lambda x: x ** 2 + x ** 0.5, {"x": 1.7})


@pytest.mark.parametrize("f, shapes, key, printed", [
    (lambda x: sg.log(1 + sg.exp(x)), {}, "x", "sigmoid(x)"),
    (lambda x, y: sg.log(1 + sg.exp(x * y)), {}, "y", "x*sigmoid(x*y)"),
    (lambda x: sg.sum(sg.log(sg.exp(x) + 1)), {"x": ("n",)}, "x", "σ(x)"),
    (lambda x: sg.sum(1 / (1 + sg.exp(-x))), {"x": ("n",)}, "x", "σ(x) ∘ (𝟙 − σ(x))"),
    (lambda x: sg.log(sg.sum(sg.exp(x))) ** 2, {"x": ("n",)}, "x",
     "2 logsumexp(x) softmax(x)"),
    (lambda x: sg.sqrt(sg.sum(x ** 2)), {"x": ("n",)}, "x", "(1/‖x‖) x"),
    (lambda x: sg.sqrt(sg.sum(x ** 2)) ** 3, {"x": ("n",)}, "x", "3 ‖x‖ x"),
    (lambda x: sg.norm(x) ** 2, {"x": ("n",)}, "x", "2 x"),
    (lambda x: sg.norm(x), {"x": ("n",)}, "x", "{0 if ‖x‖ = 0; 1/‖x‖} x"),
    (lambda w, X, y: -sg.sum(y * sg.log(sg.sigmoid(X @ w)) + (1 - y) * sg.log(
        1 - sg.sigmoid(X @ w))), {"w": ("n",), "X": ("m", "n"), "y": ("m",)}, "w",
     "Xᵀ (σ(X w) − y)"),
])
def test_stable_forms_print_and_evaluate(f, shapes, key, printed):
    g = sg.grad_fn(f, shapes=shapes, wrt=key)
    assert _line(g, f"df/d{key}") == printed
    rng = np.random.default_rng(3)
    names = list(inspect.signature(f).parameters)
    dims = {n: 3, m: 2}
    values = {k: rng.uniform(0.2, 0.8, tuple({"n": 3, "m": 2}.get(d, d)
                                             for d in shapes.get(k, ())))
              for k in names}
    _agrees_with_torch(g, f, values, dims)
    assert g.verify()


def test_the_value_formulas_are_the_stable_ops():
    assert "softplus" in str(sg.grad_fn(lambda x: sg.log(1 + sg.exp(x))).value)
    v = sg.grad_fn(lambda x: sg.log(sg.sum(sg.exp(x))), shapes={"x": ("n",)}).value
    assert "logsumexp" in str(v)
    x = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(evaluate_formula(v, {"x": x}, {n: 3}),
                               np.log(np.exp(x).sum()), rtol=1e-12)


@pytest.mark.parametrize("f, shapes, printed", [
    (lambda x, A: x @ A @ x, {"x": ("n",), "A": ("n", "n")}, "A + Aᵀ"),
    (lambda x: sg.sum(x ** 3), {"x": ("n",)}, "6 diag(x)"),
    (lambda x, a: (a @ x) ** 2, {"x": ("n",), "a": ("n",)}, "2 a aᵀ"),
    (lambda x: (x @ x) ** 2, {"x": ("n",)}, "8 x xᵀ + 4 (xᵀ x) I"),
    (lambda x, B, b, lam: sg.sum((B @ x - b) ** 2) + lam * sg.sum(x ** 2),
     {"x": ("n",), "B": ("m", "n"), "b": ("m",), "lam": ()}, "2 (lam I + Bᵀ B)"),
    (lambda x: sg.sum(sg.softplus(x)), {"x": ("n",)}, "diag(σ(x) ∘ (𝟙 − σ(x)))"),
    (lambda x: sg.sum(sg.log(1 + sg.exp(x))), {"x": ("n",)}, "diag(σ(x) ∘ (𝟙 − σ(x)))"),
    (lambda x: sg.norm(x), {"x": ("n",)},
     "{0 if ‖x‖ = 0; 1/‖x‖} I + {0 if ‖x‖ = 0; −1/‖x‖³} x xᵀ"),
    (lambda x: 0.1 * 3 * sg.sum(x ** 2), {"x": ("n",)}, "0.6 I"),
])
def test_hessians_print_in_matrix_form_and_evaluate(f, shapes, printed):
    H = sg.hessian(f, shapes=shapes, wrt="x")
    assert _line(H, "d²f/dx²") == printed
    assert "0000000" not in H.latex()
    rng = np.random.default_rng(4)
    values = {k: rng.uniform(0.2, 0.8, tuple({"n": 3, "m": 2}[d] for d in s))
              for k, s in shapes.items()}
    _agrees_with_torch(H, f, values, {n: 3, m: 2}, hessian=True)


def _pendulum(q):
    theta, omega, length = q[0], q[1], q[2]
    return 0.5 * length ** 2 * omega ** 2 - 9.81 * length * sg.cos(theta)


def test_indexed_coordinates_print_a_small_explicit_vector_and_matrix():
    g = sg.grad_fn(_pendulum, shapes={"q": (3,)})
    H = sg.hessian(_pendulum, shapes={"q": (3,)})
    assert str(g) == ("d_pendulum/dq = [9.81 q[2] sin(q[0]), q[2]² q[1], "
                      "q[1]² q[2] − 9.81 cos(q[0])]    [shape (3,)]")
    for d in (g, H):
        text, tex = str(d), d.latex()
        assert "scatter" not in text and "I[:" not in text and "scatter" not in tex
        assert isinstance(d.formulas["q"], ImmutableMatrix)
    assert r"\begin{matrix}" in H.latex() and "q_{2}" in H.latex()
    q = np.array([0.3, 1.1, 0.8])
    _agrees_with_torch(g, _pendulum, {"q": q})
    _agrees_with_torch(H, _pendulum, {"q": q}, hessian=True)


def test_diagonals_of_outer_products_read_as_vectors():
    g = sg.grad_fn(lambda x, y: sg.sum(sg.diag(x) @ y), shapes={"x": ("n",), "y": ("n",)})
    assert _line(g, "df/dx") == "y"
    h = sg.grad_fn(lambda x: sg.sum(sg.diag(x) @ x), shapes={"x": ("n",)})
    assert _line(h, "df/dx") == "2 x"
    t = sg.grad_fn(lambda A: sg.trace(A) ** 2, shapes={"A": ("n", "n")})
    assert _line(t, "df/dA") == "2 tr(A) I"
    assert g.verify() and h.verify() and t.verify()


def _attention(Q, K, V, G):
    return sg.sum((sg.softmax(Q @ K.T / 2.0, axis=1) @ V) * G)


def _attention_einsum(Q, K, V, G):
    import torch
    S = torch.einsum("id,jd->ij", Q, K) / 2.0
    return torch.sum(torch.einsum("ij,je->ie", torch.softmax(S, dim=1), V) * G)


@pytest.mark.parametrize("f", [_attention, _attention_einsum], ids=["sg", "torch.einsum"])
def test_attention_gradient_reads_like_the_textbook(f):
    shapes = {"Q": ("s", 4), "K": ("t", 4), "V": ("t", "e"), "G": ("s", "e")}
    g = sg.grad_fn(f, shapes=shapes, wrt=["Q", "K", "V"])
    text = str(g)
    formulas = " ".join(line.split(" = ", 1)[1] for line in text.splitlines() if " = " in line)
    assert "reshape" not in formulas and "permute" not in formulas and "ein" not in formulas
    assert f"d{f.__name__}/dQ = t₂ K" in text and f"d{f.__name__}/dV = t₁ᵀ G" in text
    assert "t₁ = softmax((1/2) Q Kᵀ)" in text
    rng = np.random.default_rng(5)
    sizes = {"s": 3, "t": 2, "e": 2}
    values = {k: rng.standard_normal(tuple(sizes.get(d, d) for d in s))
              for k, s in shapes.items()}
    dims = {dim_symbol(k): v for k, v in sizes.items()}
    for key in ("Q", "K", "V"):
        want = _torch_reference(f if f is _attention_einsum else _attention, values, key)
        np.testing.assert_allclose(evaluate_formula(g.formulas[key], values, dims), want,
                                   rtol=1e-9)


def test_an_einsum_frobenius_product_and_trace_read_as_matrices():
    import torch
    g = sg.grad_fn(lambda A, B: torch.einsum("ij,ij->", A, B),
                   shapes={"A": ("m", "n"), "B": ("m", "n")})
    assert _line(g, "df/dA") == "B" and _line(g, "df/dB") == "A"
    h = sg.grad_fn(lambda A: torch.einsum("ii->", A) ** 2, shapes={"A": ("n", "n")})
    assert _line(h, "df/dA") == "2 tr(A) I"
    assert g.verify() and h.verify()
