"""Matrix-calculus identities: the printed gradient is the textbook matrix formula, and
the compiled gradient matches torch.autograd (``sg.check``, orders 1 and 2)."""
import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.views.formulas import render


def spd(shape, rng):
    a = rng.standard_normal(shape)
    return a @ a.T + shape[0] * np.eye(shape[0])


def formulas(g):
    outs, defs = render(g.grads, "text", {x.name for x in g.inputs})
    return {x.name: o for x, o in zip(g.wrt, outs)}, dict(defs)


IDENTITIES = [
    # (id, f, shapes, wrt, expected text per input, sampler)
    ("d_trace_AB_dA", lambda A, B: sg.trace(A @ B), {"A": ("n", "m"), "B": ("m", "n")},
     ["A"], {"A": "Bᵀ"}, None),
    ("d_xTAx_dx", lambda x, A: x @ A @ x, {"x": ("n",), "A": ("n", "n")},
     ["x"], {"x": "(A + Aᵀ) x"}, None),
    ("d_logdet_dX", lambda X: sg.logdet(X), {"X": ("n", "n")},
     ["X"], {"X": "X⁻ᵀ"}, lambda name, shape, rng: spd(shape, rng)),
    ("d_least_squares_dx", lambda A, x, b: sg.sum((A @ x - b) ** 2),
     {"A": ("m", "n"), "x": ("n",), "b": ("m",)}, ["x"], {"x": "2 Aᵀ (A x − b)"}, None),
    ("d_aTXb_dX", lambda a, X, b: a @ X @ b, {"a": ("m",), "X": ("m", "n"), "b": ("n",)},
     ["X"], {"X": "a bᵀ"}, None),
    # sympy #27406 returned 0 for this one
    ("d_trace_ATA_plus_BTB", lambda A, B: sg.trace(A.T @ A) + sg.trace(B.T @ B),
     {"A": ("m", "n"), "B": ("n", "n")}, ["A", "B"], {"A": "2 A", "B": "2 B"}, None),
    ("d_inverse_quadratic", lambda X, y: y @ sg.inverse(X) @ y, {"X": ("n", "n"), "y": ("n",)},
     ["X"], {"X": "−X⁻ᵀ y yᵀ X⁻ᵀ"}, lambda name, shape, rng: spd(shape, rng)
     if len(shape) == 2 else rng.standard_normal(shape)),
]


@pytest.mark.parametrize("case", IDENTITIES, ids=[c[0] for c in IDENTITIES])
def test_identity_prints_at_matrix_level_and_matches_torch(case):
    _, f, shapes, wrt, expected, sampler = case
    g = sg.grad_fn(f, shapes=shapes, wrt=wrt)
    got, _ = formulas(g)
    for name, text in expected.items():
        assert text in got[name] or got[name] == text, f"d/d{name} printed as {got[name]!r}"
        assert "[" not in got[name] and "sum(" not in got[name], "element indices or sums"
    sg.check(f, shapes=shapes, wrt=wrt, dims={"n": 3, "m": 4}, order=2, sample=sampler)
    sg.check(f, shapes=shapes, wrt=wrt, dims={"n": 4, "m": 2}, order=2, sample=sampler)


def test_trace_of_ATA_is_2A_not_zero():
    g = sg.grad_fn(lambda A, B: sg.trace(A.T @ A) + sg.trace(B.T @ B),
                   shapes={"A": (3, 2), "B": (2, 2)})
    fn = g.compile("numpy")
    A, B = np.arange(6.0).reshape(3, 2), np.array([[1.0, 2.0], [3.0, 4.0]])
    dA, dB = fn(A, B)
    np.testing.assert_allclose(dA, 2 * A)
    np.testing.assert_allclose(dB, 2 * B)


def seed_module(a, b, c, x):
    return sg.sum(b @ a @ x + c)


SEED_SHAPES = {"a": ("r", "n"), "b": ("m", "r"), "c": ("m",), "x": ("n",)}


def test_low_rank_module_prints_matrix_formulas():
    g = sg.grad_fn(seed_module, shapes=SEED_SHAPES)
    got, defs = formulas(g)
    assert got == {"a": "bᵀ 𝟙 xᵀ", "b": "𝟙 xᵀ aᵀ", "c": "𝟙", "x": "aᵀ bᵀ 𝟙"}
    assert not defs
    text = str(g)
    assert "df/da = bᵀ 𝟙 xᵀ" in text.replace("seed_module", "f")
    report = sg.check(seed_module, shapes=SEED_SHAPES, dims={"n": 2, "r": 1, "m": 3})
    assert report.ok


def test_low_rank_module_latex():
    g = sg.grad_fn(seed_module, shapes=SEED_SHAPES)
    latex = g.latex()
    assert r"b^{T} \mathbf{1} x^{T}" in latex
    assert r"\begin{aligned}" in latex


def test_shared_subexpressions_are_named_once():
    def layer(W, x, b):
        return sg.sum(sg.tanh(W @ x + b))
    g = sg.grad_fn(layer, shapes={"W": ("m", "n"), "x": ("n",), "b": ("m",)})
    got, defs = formulas(g)
    assert got == {"W": "t₁ xᵀ", "x": "Wᵀ t₁", "b": "t₁"}
    assert defs == {"t₁": "𝟙 − tanh(W x + b)∘²"}
    assert str(g).count("tanh") == 1


def test_bias_broadcast_over_a_batch_is_a_ones_outer_product():
    def mlp(W, b, X):
        return sg.sum(sg.tanh(X @ W.T + b))
    g = sg.grad_fn(mlp, shapes={"W": ("h", "d"), "b": ("h",), "X": ("B", "d")})
    got, defs = formulas(g)
    assert "𝟙 bᵀ" in str(g)
    assert got["b"].endswith("ᵀ 𝟙")


def test_relu_mask_is_an_iverson_bracket():
    g = sg.grad_fn(lambda W, x: sg.sum(sg.relu(W @ x)), shapes={"W": ("m", "n"), "x": ("n",)})
    got, _ = formulas(g)
    assert got["W"] == "[W x > 0] xᵀ"


def test_vector_scaling_columns_prints_as_diag():
    g = sg.grad_fn(lambda X, v, Y: sg.sum((X * v) @ Y),
                   shapes={"X": ("m", "n"), "v": ("n",), "Y": ("n", "k")})
    assert "diag(v)" in str(g)
    sg.check(lambda X, v, Y: sg.sum((X * v) @ Y),
             shapes={"X": ("m", "n"), "v": ("n",), "Y": ("n", "k")}, dims={"m": 2, "n": 3, "k": 4})


def test_softmax_jacobian_applied_to_a_vector():
    def f(x, v):
        return sg.dot(sg.softmax(x), v)
    g = sg.grad_fn(f, shapes={"x": ("n",), "v": ("n",)}, wrt=["x"])
    got, _ = formulas(g)
    assert got["x"] == "softmax(x) ∘ (v − (vᵀ softmax(x)) 𝟙)"
    sg.check(f, shapes={"x": ("n",), "v": ("n",)}, dims={"n": 5})


def test_per_element_formula():
    g = sg.grad_fn(lambda x: sg.mean(3 * (x + 2) ** 2), shapes={"x": (2, 2)})
    got, _ = formulas(g)
    assert got["x"] == "(3/2) (x + 2 𝟙𝟙ᵀ)"


def test_numpy_notation_is_still_available():
    g = sg.grad_fn(seed_module, shapes=SEED_SHAPES)
    assert "@" in g.text("numpy")
    with pytest.raises(sg.ArgumentError):
        g.text("klingon")


def test_latex_of_identities():
    g = sg.grad_fn(lambda X: sg.logdet(X), shapes={"X": ("n", "n")})
    assert "X^{-T}" in g.latex()
    g = sg.grad_fn(lambda A, x, b: sg.sum((A @ x - b) ** 2),
                   shapes={"A": ("m", "n"), "x": ("n",), "b": ("m",)}, wrt=["x"])
    assert r"A^{T} \left(A x - b\right)" in g.latex()


def test_clamp_keeps_its_bounds_and_big_or_infinite_numbers_read_as_numbers():
    text = str(sg.grad_fn(lambda x: sg.sum(sg.clamp(x, -0.5, 0.5) * x), shapes=dict(x=("n",))))
    assert "clamp(x, min=-0.5, max=0.5)" in text
    text = str(sg.grad_fn(lambda x: sg.sum(x**2 * 1e300), shapes=dict(x=("n",))))
    assert "2e+300 x" in text and "000000" not in text
    text = str(sg.grad_fn(lambda x: sg.sum(sg.minimum(x, float("inf")) * x),
                          shapes=dict(x=("n",))))
    assert "∞" in text and "oo" not in text
