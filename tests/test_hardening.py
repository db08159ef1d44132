"""Hostile and careless input (issue: nothing injected, nothing mixed up, nothing leaked,
torch's answer at the edges). Every test here failed before the fix it guards."""
import gc
import os
import threading

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.codegen.names import code_name, is_plain


def payload(path):
    """Python that writes ``path`` if it ever runs."""
    return f"__import__('pathlib').Path({str(path)!r}).write_text('pwned')"


# ----- code injection -------------------------------------------------------------------

def test_a_symbol_inside_a_constant_is_refused(tmp_path):
    target = tmp_path / "pwned"

    def f(x):
        return sg.sum(x * sg.const(sympy.Symbol(payload(target))))

    with pytest.raises(sg.SymgradError, match="numbers and dims"):
        sg.grad_fn(f, shapes={"x": (3,)}).compile("numpy")(np.ones(3))
    assert not target.exists()


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_a_hostile_dim_name_never_runs(tmp_path, backend):
    """A dim is a SymPy symbol whose name is user text: it is spelled by its code points
    in code, and quoted safely in messages."""
    target = tmp_path / "pwned"
    n = sympy.Symbol(payload(target), integer=True, positive=True)
    quote = sympy.Symbol(f"n') + {payload(target)} + ('", integer=True, positive=True)

    def f(x):
        return sg.sum(sg.sin(x) * sg.const(n))

    for shape in ((n,), (quote, 2), (n, quote)):
        g = sg.grad_fn(f, shapes={"x": shape})
        fn = g.compile(backend)
        x = np.ones((3,) * len(shape))
        args = (torch.tensor(x),) if backend == "torch" else (x,)
        try:
            (gx,) = fn(*args)
        except sg.ArgumentError:
            pass
        exec(compile(g.source(backend), "<standalone>", "exec"), {})
    assert not target.exists()


def test_a_non_integer_symbol_is_not_a_dim(tmp_path):
    with pytest.raises(sg.ShapeError, match="numbers and dims"):
        sg.grad_fn(lambda x: sg.sum(x), shapes={"x": (sympy.Symbol("n"),)})


@pytest.mark.parametrize("name", ["len", "numpy", "torch", "math", "lambda", "args", "_t0",
                                  "ArgumentError", "sgarg0", "_fallback", "print", "_dt"])
@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_dims_named_like_code_or_python_compile(name, backend):
    def f(x, y):
        return sg.sum(sg.exp(x) * sg.mean(x)) + sg.sum(y * y)

    g = sg.grad_fn(f, shapes={"x": (name, 2), "y": (name,)})
    x, y = np.arange(6.0).reshape(3, 2) / 6, np.arange(3.0)
    args = (torch.tensor(x), torch.tensor(y)) if backend == "torch" else (x, y)
    gx, gy = g.compile(backend)(*args)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    rx, ry = torch.autograd.grad(f(tx, ty), [tx, ty])
    np.testing.assert_allclose(np.asarray(gx), rx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(gy), ry.numpy(), rtol=1e-12)
    assert name in g.text()           # views keep the user's spelling
    with pytest.raises(sg.ArgumentError, match=f"{name} = 3 from x.shape"):
        g.compile(backend)(*args[:1], *((torch.ones(4),) if backend == "torch" else
                                        (np.ones(4),)))


@pytest.mark.parametrize("name", ["numpy", "len", "lambda", "_t1", "args", "ｘ"])
def test_symbols_named_like_code_or_python_compile(name):
    x = sg.symbol(name, (2,))
    (gx,) = sg.grad(sg.sum(sg.sin(x) * x), [x])
    fn = sg.codegen.compile_function([gx], [x], "numpy")
    v = np.array([0.3, -1.2])
    np.testing.assert_allclose(fn(v)[0], np.cos(v) * v + np.sin(v))


def test_parameters_named_like_modules_compile():
    def numpy(numpy, math):
        return numpy * numpy * math

    assert sg.grad_fn(numpy).compile("numpy")(2.0, 3.0) == (12.0, 4.0)


def test_code_names_are_plain_or_renamed_apart():
    names = ["n", "ｎ", "len", "_len", "__len", "lambda", "x0", "_t0", "sgarg1", "é", "args"]
    codes = [code_name(n) for n in names]
    assert len(set(codes)) == len(codes)
    assert all(c.isidentifier() and c.isascii() for c in codes)
    assert code_name("n") == "n" and is_plain("W1") and not is_plain("sgarg1")


# ----- names that look alike ---------------------------------------------------------------

def test_look_alike_dims_are_an_error():
    def f(x, y):
        return sg.sum(x) * sg.sum(y * y)

    with pytest.raises(sg.ShapeError, match="'n' and 'ｎ'.*NFKC"):
        sg.grad_fn(f, shapes={"x": ("n",), "y": ("ｎ",)})


def test_explicit_element_names_never_equal_an_input():
    def f(x, x_0):
        return sg.sum(x * x) * x_0

    ex = sg.grad_fn(f, shapes={"x": (2,)}).explicit()
    x_0 = sympy.Symbol("x_0", real=True)
    e0, e1 = (sympy.Symbol(f"x[{i}]", real=True) for i in range(2))
    assert list(ex["x"]) == [2 * e0 * x_0, 2 * e1 * x_0]
    assert ex["x_0"] == e0 ** 2 + e1 ** 2
