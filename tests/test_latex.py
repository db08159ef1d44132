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


# ----- precedence and scripts in matrix-notation LaTeX (views/matrix_print.py, latex.py) --

def _tokens_ok(text):
    """Problems of LaTeX ``text``: unbalanced braces or \\left/\\right, a double
    superscript or subscript (x^{a}^{b}, t_{1}_{[0]}), which LaTeX, MathJax and KaTeX
    reject. Read independently of the printers' own check."""
    import re
    if text.count("{") - text.count(r"\{") != text.count("}") - text.count(r"\}"):
        return ["unbalanced braces"]
    if len(re.findall(r"\\left\b", text)) != len(re.findall(r"\\right\b", text)):
        return ["unbalanced \\left/\\right"]
    problems, scripts, depth, i = [], [set()], 0, 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", text[i:])
            word = m.group(1)
            i += len(m.group(0))
            if word == "left":
                scripts.append(set())
                i += 1 if text[i] != "\\" else len(re.match(r"\\([A-Za-z]+|.)", text[i:])[0])
            elif word == "right":
                scripts.pop()
                scripts[-1] = set()
                i += 1 if text[i] != "\\" else len(re.match(r"\\([A-Za-z]+|.)", text[i:])[0])
            else:
                scripts[-1] = set()
            continue
        if c == "{":
            scripts.append(set())
        elif c == "}":
            scripts.pop()
        elif c in "^_":
            if c in scripts[-1]:
                problems.append(f"double {c} at {i}: {text[max(0, i - 40):i + 10]}")
            scripts[-1].add(c)
            i += 1
            if text[i] == "{":             # the script's group: its contents are its own
                depth, j = 0, i
                while True:
                    depth += (text[j] == "{") - (text[j] == "}")
                    j += 1
                    if depth == 0:
                        break
                problems += _tokens_ok(text[i + 1:j - 1])
                i = j
            else:
                i += 1
            continue
        elif not c.isspace() and c != "&":
            scripts[-1] = set()
        i += 1
    return problems


def test_the_checker_finds_double_scripts():
    assert _tokens_ok(r"A^{\circ 2}^{T}") and _tokens_ok(r"t_{2}_{[:2]}")
    assert _tokens_ok(r"e^{A}^{T} \mathbf{1}") and _tokens_ok(r"\left(x")
    assert not _tokens_ok(r"\left(A^{\circ 2}\right)^{T} t_{1}^{T} x_{[0]}^{2}")


def test_triangular_solves_parenthesise_their_operand_and_bind_as_a_product():
    torch = pytest.importorskip("torch")
    shapes = dict(A=("n", "n"), B=("n", "k"), C=("n", "k"))

    def f2(A, B, C):
        x = torch.linalg.solve_triangular(A, B + C, upper=True)
        return torch.sum(x.T @ x)

    tex = sg.grad_fn(f2, shapes=shapes, wrt="B").latex()
    assert r"\operatorname{triu}\left(A\right)^{-1} \left(B + C\right)" in tex
    assert r"^{-1} B + C" not in tex and not _tokens_ok(tex)

    def f1(A, B, C):
        return torch.sum(torch.linalg.solve_triangular(A, B, upper=False) * C)

    tex = sg.grad_fn(f1, shapes=shapes, wrt="A").latex()     # the transpose of the solve
    assert r"\left(\operatorname{tril}\left(A\right)^{-1} B\right)^{T}" in tex
    assert not _tokens_ok(tex)

    def f3(A, B):
        x = torch.linalg.solve_triangular(A, B, upper=True, left=False)
        return torch.sum(torch.exp(x.T))

    tex = sg.grad_fn(f3, shapes=dict(A=("n", "n"), B=("k", "n")), wrt="B").latex()
    assert r"\left(B \operatorname{triu}\left(A\right)^{-1}\right)^{T}" in tex
    assert not _tokens_ok(tex)

    spd = sg.TensorSpec(("n", "n"), symmetric=True)
    tex = sg.grad_fn(lambda P: sg.sum(sg.cholesky(P)), shapes=dict(P=spd)).latex()
    assert r"^{-1} \left(\operatorname{tril}_{-1}" in tex and not _tokens_ok(tex)


def test_a_negated_matrix_product_keeps_a_hadamard_factor_in_parentheses():
    g = sg.grad_fn(lambda A, B, x, y: y @ x - y @ ((A * B) @ x),
                   shapes=dict(A=("n", "n"), B=("n", "n"), x=("n",), y=("n",)), wrt="y")
    assert r"x - \left(A \circ B\right) x" in g.latex()
    g = sg.grad_fn(lambda A, B: sg.sum(sg.softmax(A, axis=1) * B),
                   shapes=dict(A=("m", "n"), B=("m", "n")), wrt="A")
    assert r"B - \left(B \circ \operatorname{softmax}\left(A\right)\right) \mathbf{1}" \
        in g.latex()


def test_infix_ops_are_parenthesised_as_powers_and_factors():
    torch = pytest.importorskip("torch")
    tex = sg.grad_fn(lambda x, y: torch.fmod(x, y)**2 * x).latex()
    assert r"\left(x \bmod_{t} y\right)^{2}" in tex
    assert r"2 x \left(x \bmod_{t} y\right)" in tex
    tex = sg.grad_fn(lambda x, y: torch.remainder(x, y)**3).latex()
    assert r"\left(x \bmod y\right)^{2}" in tex and r"y^{2}" not in tex


def test_batched_elementwise_and_matrix_products_read_apart():
    torch = pytest.importorskip("torch")
    g = sg.grad_fn(lambda A, B: torch.sum(torch.inverse(A)**2 * B),
                   shapes=dict(A=(2, "n", "n"), B=(2, "n", "n")))
    tex = g.latex()
    assert r"\left(2 B\right) \circ A^{-1}" in tex                 # elementwise: ∘
    assert r"\left(A^{-1}\right)^{\circ 2}" in tex and not _tokens_ok(tex)
    assert "2 B A^{-1}" not in tex


def test_no_double_scripts_and_elementwise_exp_is_not_the_matrix_exponential():
    torch = pytest.importorskip("torch")
    g = sg.grad_fn(lambda A, x: sg.sum((A * A) @ x), shapes=dict(A=("m", "n"), x=("n",)),
                   wrt="x")
    assert r"\left(A^{\circ 2}\right)^{T} \mathbf{1}" in g.latex()
    g = sg.grad_fn(lambda A, x: sg.sum(sg.exp(A) @ x), shapes=dict(A=("m", "n"), x=("n",)),
                   wrt="x")
    assert r"\exp\left(A\right)^{T} \mathbf{1}" in g.latex() and "e^{A}" not in g.latex()
    g = sg.grad_fn(lambda a, b: torch.sum(torch.linalg.cross(a, b)**2),
                   shapes=dict(a=(3,), b=(3,)))
    assert r"\left(t_{2}\right)_{[:2]}" in g.latex() and not _tokens_ok(g.latex())
    g = sg.grad_fn(lambda A: torch.sum(torch.matrix_exp(A).T @ A), shapes=dict(A=("n", "n")))
    tex = g.latex()
    assert r"e^{A} \mathbf{1}\mathbf{1}^{T}" in tex and r"\exp" not in tex     # matrix exp
    assert not _tokens_ok(tex)


def test_function_names_are_escaped_as_parameter_names():
    """A function's name is any string (``f.__name__``): in LaTeX it is one escaped word,
    never commands (``\\href``) or subscripts."""
    def my_loss_v2(x_in):
        return sg.sin(x_in)
    assert r"\partial \mathit{my\_loss\_v2}" in sg.grad_fn(my_loss_v2).latex()

    def h(x):
        return x ** 2
    h.__name__ = r"}\href{javascript:alert(1)}{f"
    for text in (sg.grad_fn(h).latex(), sg.hessian(h, shapes={"x": ()}).latex()):
        assert r"\href" not in text.replace(r"\backslash{}href", "")
        assert text.count("{") - text.count(r"\{") == text.count("}") - text.count(r"\}")
