"""Matrix Cookbook / matrixcalculus.org problems (``tests/cookbook_problems.py``): for each,
independently of symgrad's own claims,

(a) the compiled gradient (or Hessian) equals torch.autograd's, in float64, at inputs
    drawn from the function's domain;
(b) the formula ``g.formulas[key]``, evaluated by SymPy alone, equals the compiled result
    (no wrong view);
(c) the textbook answer, evaluated by SymPy at the same point, equals the compiled result
    (the table itself is right);
(d) the printed formula (``g.text()``, where-clauses included) is classified "textbook"
    when it is the textbook's SymPy object or prints no longer than the textbook answer
    (both through ``matrix_text``); "equal" when it prints longer but ``sympy.simplify``
    proves it the same (that is correctness, which (b) and (c) already show, not form:
    ``(Aᵀ + A + A + Aᵀ) x`` is "equal" to ``2 (A + Aᵀ) x``); else "clumsy". At least 85%
    must be "textbook".

``python -m tests.test_cookbook`` prints the table.
"""
import functools
import inspect
import re

import numpy as np
import pytest
import sympy
import torch
from sympy import MatrixSymbol

import symgrad as sg
from symgrad.core.shapes import dim_symbol
from symgrad.views.matrix_print import matrix_text
from symgrad.views.verify import evaluate_formula

try:
    from cookbook_problems import PROBLEMS, TorchOps
except ImportError:  # run as ``python -m tests.test_cookbook``
    from .cookbook_problems import PROBLEMS, TorchOps

SIZES = {"n": 3, "m": 2, "k": 4}
DIMS = {dim_symbol(k): v for k, v in SIZES.items()}
TEXTBOOK_SHARE = 0.85


def concrete(shape):
    return tuple(SIZES[d] if isinstance(d, str) else d for d in shape)


def draw(p, seed=0):
    """Inputs in the function's domain: 'sq' well-conditioned square, 'pd' (and
    'pdsmall') positive definite, 'pos' positive, '01' labels, 'prob' a distribution."""
    rng = np.random.default_rng(seed)
    values = {}
    for name, shape in p.shapes.items():
        shape, kind = concrete(shape), p.domain.get(name)
        if kind == "sq":
            v = rng.standard_normal(shape) + shape[0] * np.eye(shape[0])
        elif kind in ("pd", "pdsmall"):
            a = rng.standard_normal(shape)
            v = a @ a.T + shape[0] * np.eye(shape[0])
            v = v / 10 if kind == "pdsmall" else v
        elif kind == "pos":
            v = rng.uniform(0.5, 2.0, shape)
        elif kind == "01":
            v = rng.integers(0, 2, shape).astype(np.float64)
        elif kind == "prob":
            v = rng.dirichlet(np.ones(shape[0]))
        else:
            v = rng.standard_normal(shape)
        values[name] = np.asarray(v, dtype=np.float64)
    return values


def names(p):
    return [q.name for q in inspect.signature(p.f).parameters.values() if q.name != "o"]


@functools.lru_cache(maxsize=None)
def derivative(p):
    if p.hessian:
        return sg.hessian(p.f, shapes=p.shapes, wrt=p.key)
    return sg.grad_fn(p.f, wrt=p.key, shapes=p.shapes)


def shape_of(p):
    s = concrete(p.shapes[p.key])
    return s + s if p.hessian else s


def compiled(p, values):
    out = derivative(p).compile()(*[values[k] for k in names(p)])
    while isinstance(out, (tuple, list)):
        (out,) = out
    return np.asarray(out, dtype=np.float64).reshape(shape_of(p))


def reference(p, values):
    """torch.autograd's gradient (or Hessian) of the function written with torch's ops."""
    args = [torch.tensor(values[k], dtype=torch.float64, requires_grad=True) for k in names(p)]
    i = names(p).index(p.key)
    if p.hessian:
        def at(v):
            return p.f(*args[:i], v, *args[i + 1:], o=TorchOps)
        out = torch.autograd.functional.hessian(at, args[i].detach())
    else:
        (out,) = torch.autograd.grad(p.f(*args, o=TorchOps), args[i])
    return out.detach().numpy().reshape(shape_of(p))


def symbols(p):
    out = []
    for k in names(p):
        shape = [dim_symbol(d) if isinstance(d, str) else d for d in p.shapes[k]]
        if not shape:
            out.append(sympy.Symbol(k, real=True))
        else:
            out.append(MatrixSymbol(k, shape[0], shape[1] if len(shape) == 2 else 1))
    return out


def textbook(p):
    return p.textbook(*symbols(p))


def sympy_value(expr, p, values):
    return np.asarray(evaluate_formula(expr, values, DIMS), dtype=np.float64).reshape(
        shape_of(p))


def printed(p):
    """Our printed formula for ``p.key``: the expression and its where-clauses."""
    lines = derivative(p).text().splitlines()
    expr = re.sub(r"\s{4}\[shape .*\]$", "", lines[0].split(" = ", 1)[1])
    wheres = [line.strip() for line in lines[1:] if line.strip() != "where"]
    return "; ".join([expr] + wheres)


def classify(p):
    """(class, textbook text, our text): "textbook" when our formula is the textbook's
    object or prints no longer than it; "equal" when it prints longer but
    ``sympy.simplify`` proves it the same expression (so the difference is form, e.g.
    ``(Aᵀ + A + A + Aᵀ) x`` for ``2 (A + Aᵀ) x``, which the issue counts as clumsy); else
    "clumsy". Only "textbook" counts towards the 85%."""
    ours, book = printed(p), matrix_text(textbook(p))
    formula, answer = derivative(p).formulas[p.key], textbook(p)
    if len(ours) <= len(book) or formula == answer:
        return "textbook", book, ours
    try:
        diff = sympy.simplify(formula - answer)
        same = diff == 0 or isinstance(diff, sympy.ZeroMatrix)
    except Exception:  # noqa: BLE001 - SymPy cannot compare them
        same = False
    return ("equal" if same else "clumsy"), book, ours


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)


def test_there_are_at_least_60_problems():
    assert len(PROBLEMS) >= 60
    assert len({p.name for p in PROBLEMS}) == len(PROBLEMS)


@pytest.mark.parametrize("p", PROBLEMS, ids=[p.name for p in PROBLEMS])
def test_problem(p):
    values = draw(p)
    got = compiled(p, values)
    close(got, reference(p, values))                                   # (a)
    close(sympy_value(derivative(p).formulas[p.key], p, values), got)   # (b)
    close(sympy_value(textbook(p), p, values), got)                     # (c)


def table():
    return [(p.name, *classify(p)) for p in PROBLEMS]


def share(rows):
    return sum(c == "textbook" for _, c, _, _ in rows) / len(rows)


def test_formulas_print_like_the_textbook():
    rows = table()
    clumsy = [f"{name}: ours {ours!r}, textbook {book!r}"
              for name, c, book, ours in rows if c != "textbook"]
    assert share(rows) >= TEXTBOOK_SHARE, "\n".join(clumsy)


def test_a_power_of_a_scalar_product_is_parenthesised():
    x, a = (MatrixSymbol(k, dim_symbol("n"), 1) for k in "xa")
    assert matrix_text(sympy.Trace(a.T * x) ** 2) == "(aᵀ x)²"
    assert matrix_text(sympy.sqrt(sympy.Trace(x.T * x))) == "√(xᵀ x)"
    g = sg.grad_fn(lambda x, a: (a @ x) ** 3, wrt="x", shapes={"x": ("n",), "a": ("n",)})
    assert "(aᵀ x)²" in g.text()


def main():
    rows = table()
    width = max(len(r[0]) for r in rows)
    for name, c, book, ours in rows:
        print(f"{name:{width}}  {c:8}  textbook: {book}\n{'':{width}}            ours:     {ours}")
    counts = {c: sum(r[1] == c for r in rows) for c in ("textbook", "equal", "clumsy")}
    print(f"\n{share(rows):.1%} textbook-or-shorter of {len(rows)} problems; {counts}")


if __name__ == "__main__":
    main()
