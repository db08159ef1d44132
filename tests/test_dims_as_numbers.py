"""Symbolic dims where Python needs a number, and SymPy functions applied to traced
Tensors: clear SymgradErrors that say what to do, while arithmetic on dims stays
symbolic and torch code spelling a dim as a tensor traces."""
import math
import pickle

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.core.shapes import Dim, DimValueError, dim_symbol
from symgrad.torchfront.sympy_guard import SympyOnTensorError

N = {"x": ("n",)}


def grad_text(f, shapes=N):
    return str(sg.grad_fn(f, shapes=shapes))


@pytest.mark.parametrize("f, what", [
    (lambda x: x.sum() / math.log(x.shape[0]), "float() (or a math function such as math.log)"),
    (lambda x: x.sum() * float(x.shape[0]), "float()"),
    (lambda x: x.sum() * int(x.shape[0]), "int()"),
    (lambda x: sum(x[i] for i in range(x.shape[0])), "range()"),
    (lambda x: x.sum() * math.sqrt(x.shape[0]), "float()"),
    (lambda x: x.sum() if x.shape[0] > 3 else -x.sum(), "a comparison (n > 3)"),
])
def test_a_dim_where_a_number_is_needed(f, what):
    with pytest.raises(DimValueError) as info:
        sg.grad_fn(f, shapes=N)
    message = str(info.value)
    assert message.startswith(what)
    assert "n is a symbolic dim" in message
    assert "shapes={'x': (8,)}" in message          # the concrete-size way out
    assert "n is a dim of x" in message
    assert isinstance(info.value, sg.ShapeError) and isinstance(info.value, TypeError)


def test_the_advice_points_to_ops_that_take_dims():
    with pytest.raises(DimValueError, match=r"sg\.log\(n\).*torch\.log\(torch\.tensor\(n\)\)"):
        sg.grad_fn(lambda x: x.sum() / math.log(x.shape[0]), shapes=N)
    with pytest.raises(DimValueError, match="write the loop with tensor ops"):
        sg.grad_fn(lambda x: sum(x[i] for i in range(x.shape[0])), shapes=N)


@pytest.mark.parametrize("f, what, subject", [
    (lambda x: x.sum() / float(x.shape[0] - 1), "float()", "n - 1 is an expression"),
    (lambda x: x.sum() * int(x.shape[0] // 2), "int()", "floor(n/2) is an expression"),
    (lambda x: sum(x[i] for i in range(x.shape[0] - 1)), "range()", "a SymPy Add"),
    (lambda x: x.sum() if 2 * x.shape[0] > 3 else x.sum(), "a comparison (2*n > 3)",
     "n is a symbolic dim"),
])
def test_an_expression_of_dims_where_a_number_is_needed(f, what, subject):
    with pytest.raises(DimValueError) as info:
        sg.grad_fn(f, shapes=N)
    assert str(info.value).startswith(what) and subject in str(info.value)


@pytest.mark.parametrize("f, expected", [
    (lambda x: x.sum() * (x.shape[0] * 2 - 1) / (x.shape[0] / 2),
     "df/dx = (2 (2 n − 1)/n) 𝟙    [shape (n,)]"),
    (lambda x: x.sum() if x.shape[0] > 0 else -x.sum(), "df/dx = 𝟙    [shape (n,)]"),
    (lambda x: x.sum() if x.shape[0] >= 1 and not x.shape[0] < 1 else -x.sum(),
     "df/dx = 𝟙    [shape (n,)]"),
    (lambda x: x.sum() / sg.log(x.shape[0]), "df/dx = (1/log(n)) 𝟙    [shape (n,)]"),
    (lambda x: x.sum() / torch.log(torch.tensor(x.shape[0])), "df/dx = (1/log(n)) 𝟙    [shape (n,)]"),
    (lambda x: x.sum() / torch.log(torch.as_tensor(x.shape[0] - 1)),
     "df/dx = (1/log(n − 1)) 𝟙    [shape (n,)]"),
    (lambda x: x.sum() / sympy.log(x.shape[0]), "df/dx = (1/log(n)) 𝟙    [shape (n,)]"),
    (lambda x: (x.shape[0] * x).sum(), "df/dx = n 𝟙    [shape (n,)]"),
])
def test_dims_stay_symbolic_in_arithmetic(f, expected):
    assert grad_text(f) == expected


def test_the_log_of_a_dim_computes():
    g = sg.grad_fn(lambda x: x.sum() / torch.log(torch.tensor(x.shape[0])), shapes=N)
    x = np.arange(5.0)
    np.testing.assert_allclose(g.compile()(x)[0], np.full(5, 1 / math.log(5)))


def test_a_dim_is_still_the_sympy_symbol():
    n = dim_symbol("n")
    plain = sympy.Symbol("n", integer=True, positive=True)
    assert isinstance(n, Dim) and isinstance(n, sympy.Symbol)
    assert n == plain and plain == n and hash(n) == hash(plain) and not n != plain
    assert sympy.srepr(n) == "Symbol('n', integer=True, positive=True)"
    again = pickle.loads(pickle.dumps(n))
    assert isinstance(again, Dim) and again == n
    assert str(2 * n - 1) == "2*n - 1" and (n > 0) is sympy.true


def test_undecided_comparison_is_still_a_relation():
    n = dim_symbol("n")
    rel = n > 3
    assert isinstance(rel, sympy.StrictGreaterThan) and rel.subs(n, 5) is sympy.true
    with pytest.raises(DimValueError, match="n > 3"):
        bool(rel)


@pytest.mark.parametrize("f, name, hint", [
    (lambda x: sympy.gamma(x).sum(), "gamma", "torch.lgamma(x).exp()"),
    (lambda x: sympy.exp(x).sum(), "exp", "sg.exp(x) or torch.exp(x)"),
    (lambda x: sympy.sqrt(x).sum(), "sqrt", "sg.sqrt(x) or torch.sqrt(x)"),
    (lambda x: sympy.sin(x).sum(), "sin", "sg.sin(x) or torch.sin(x)"),
    (lambda x: sympy.erf(x).sum(), "erf", "sg.erf(x)"),
    (lambda x: sympy.Max(x, 0).sum(), "Max", "sg.maximum(x, y)"),
])
def test_sympy_function_on_a_tensor(f, name, hint):
    with pytest.raises(SympyOnTensorError) as info:
        sg.grad_fn(f, shapes=N)
    message = str(info.value)
    assert message.startswith(f"sympy.{name} was applied to a symbolic Tensor")
    assert hint in message and "float()" not in message
    assert isinstance(info.value, sg.SymgradError)


def test_sympy_numbers_and_dims_still_combine_with_tensors():
    assert grad_text(lambda x: (sympy.Integer(2) * x).sum()) == "df/dx = 2 𝟙    [shape (n,)]"
    assert grad_text(lambda x: (x.shape[0] + x).sum()) == "df/dx = 𝟙    [shape (n,)]"
    assert grad_text(lambda x: sympy.Float(1.5) - x.sum()) == "df/dx = −𝟙    [shape (n,)]"


def test_numpy_math_of_a_dim_is_an_expression_of_it_and_errors_name_the_input():
    g = sg.grad_fn(lambda x: sg.sum(x) / np.sqrt(x.shape[0]), shapes={"x": ("n",)})
    np.testing.assert_allclose(g.compile("numpy")(np.ones(4))[0], np.full(4, 0.5))
    with pytest.raises(DimValueError, match=r"numpy.sqrt\(\) needs a number"):
        sg.grad_fn(lambda x: sg.sum(x) / np.sqrt(x.shape[0] - 1), shapes={"x": ("n",)})

    def attention_scale(q, k):
        return sg.sum(q @ k.T) / math.sqrt(q.shape[-1])
    with pytest.raises(DimValueError, match=r"shapes=\{'q': \(s, 8\)\}.*d is a dim of q"):
        sg.grad_fn(attention_scale, shapes={"q": ("s", "d"), "k": ("s", "d")})
