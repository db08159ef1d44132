"""The LaTeX view keeps names whole (views/latex.py) and writes logic in LaTeX."""
import pytest
import sympy

import symgrad as sg
from symgrad.views.latex import latex_name


@pytest.mark.parametrize("name, tex", [
    ("x", "x"), ("alpha", r"\alpha"), ("Gamma", r"\Gamma"), ("lamda", r"\lambda"),
    ("x_train", r"\mathit{x\_train}"), ("sigma2", r"\mathit{sigma2}"),
    ("log_ell", r"\mathit{log\_ell}"), ("W1", r"\mathit{W1}"), ("lam", r"\mathit{lam}"),
    ("x_hat", r"\mathit{x\_hat}"), ("t3", "t_{3}"),
])
def test_names_stay_whole_and_greek_only_when_exact(name, tex):
    assert latex_name(name) == tex


def test_gradient_latex_uses_whole_names_and_renders_with_sympy_names_unchanged():
    def f(x_train, sigma2, W1):
        return ((W1 @ x_train) ** 2).sum() / sigma2

    g = sg.grad_fn(f, shapes={"x_train": (3,), "W1": (3, 3)})
    tex = g.latex()
    assert r"\mathit{x\_train}" in tex and r"\mathit{sigma2}" in tex and r"\mathit{W1}" in tex
    assert "x_{train}" not in tex and r"\sigma_{2}" not in tex and "W_{1}" not in tex
    assert "W1" in g.text() and sympy.Symbol("x_train").name == "x_train"


def test_logic_in_latex_is_latex():
    torch = pytest.importorskip("torch")

    def f(x):
        return torch.linalg.norm(x)

    tex = sg.grad_fn(f, shapes={"x": (3,)}).latex()
    assert "¬" not in tex and "∧" not in tex and "≤" not in tex
