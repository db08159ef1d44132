"""Code-generation choices made for speed (issue 18): products regrouped so a large array
is scaled once, statement templates holding a literal %, and the first gradient function
of a process not paying SymPy's lazy imports."""
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.codegen import emit
from symgrad.core.program import Template

from backend_support import require_backend

ROOT = Path(__file__).resolve().parents[1]


def logreg(w, b, X, y):
    z = X @ w + b
    return sg.mean(sg.softplus(z) - y * z) + 0.005 * sg.sum(w * w)


def test_the_logistic_hessian_scales_X_once_and_is_a_symmetric_product():
    """Xᵀ diag(w) X with w = σ(1 − σ)/N ≥ 0 is Yᵀ Y, Y = X * sqrt(w): one pass over X,
    then one product of an array with itself (BLAS's syrk, half the multiplications)."""
    H = sg.hessian(logreg, wrt="w", shapes={"w": ("d",), "b": (), "X": ("N", "d"), "y": ("N",)})
    body = H.source().split("def _hessian_logreg_flat")[1]
    assert body.count("X*(numpy.expand_dims((numpy.sqrt(") == 1, body
    assert re.search(r"\((_t\d+)\.T\) @ \1\b", body), body
    rng = np.random.default_rng(0)
    X, y, w = rng.normal(size=(30, 4)), (rng.random(30) < 0.5) * 1.0, rng.normal(size=4)
    ref = torch.func.hessian(lambda w: torch.mean(torch.nn.functional.softplus(torch.tensor(X) @ w
                                                                             + 0.3)
                                                  - torch.tensor(y) * (torch.tensor(X) @ w
                                                                       + 0.3))
                             + 0.005 * torch.sum(w * w))(torch.tensor(w))
    np.testing.assert_allclose(H.compile()(w, 0.3, X, y), ref.numpy(), rtol=1e-12, atol=1e-14)
    # the formulas keep the graph as the rules built it
    assert "d²logreg/dw²" in H.text()


def test_a_template_with_a_literal_percent_sign():
    t = Template("numpy.remainder(sgarg0, 2) % sgarg1 + sgarg0")
    assert t.fill(["a", "b"]) == "numpy.remainder(a, 2) % b + a"
    assert t.repeated == {0}


def test_sympy_tensor_loads_with_the_first_formula_not_with_a_compiled_gradient():
    """SymPy imports sympy.tensor (~20 ms) on the first Add it evaluates. Sums in code
    templates are built unevaluated (``Placeholder``), so compiling this gradient does
    not pay it:
    the first printed formula does (``import symgrad`` alone stays cheap too,
    tests/test_import_cost.py); the gradient is the same either way."""
    code = ("import sys, symgrad as sg\n"
            "assert 'sympy.tensor.tensor' not in sys.modules\n"
            "g = sg.grad_fn(lambda a, b: sg.sin(a) * b + a * a - b / 2.0)\n"
            "f = g.compile()\n"
            "print(f(0.5, 2.0))\n"
            "print('sympy.tensor.tensor' in sys.modules)\n"
            "str(g)\n"
            "print('sympy.tensor.tensor' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=300)
    assert out.returncode == 0, out.stderr
    values, before, after = out.stdout.splitlines()
    grads = [float(v) for v in values.strip("()").split(",")]
    assert abs(grads[0] - (2.0 * math.cos(0.5) + 1.0)) < 1e-12
    assert abs(grads[1] - (math.sin(0.5) - 0.5)) < 1e-12
    assert (before, after) == ("False", "True")


def test_a_gram_matrix_of_weights_of_unknown_sign_stays_a_general_product():
    def f(w, X):
        return sg.sum(sg.tanh(X @ w))          # tanh'' has either sign
    H = sg.hessian(f, wrt="w", shapes={"w": ("d",), "X": ("N", "d")})
    assert "sqrt" not in H.source()
    rng = np.random.default_rng(1)
    X, w = rng.normal(size=(20, 3)), rng.normal(size=3)
    ref = torch.func.hessian(lambda w: torch.tanh(torch.tensor(X) @ w).sum())(torch.tensor(w))
    for backend in ("numpy", "c"):
        require_backend(backend)
        np.testing.assert_allclose(H.compile(backend)(w, X), ref.numpy(), rtol=1e-12, atol=1e-14)


def _scalar_spec_gradients():
    from rule_specs import SPECS
    out = []
    for spec in SPECS.values():
        for case in spec.cases:
            if all(shape == () for shape in case.shapes.values()):
                out.append(pytest.param(spec, case, id=f"{spec.op}-{case.id}"))
    return out


@pytest.mark.parametrize("spec,case", _scalar_spec_gradients())
def test_a_scalar_programs_numpy_statements_translated_from_its_math_ones_are_exact(
        spec, case, monkeypatch):
    """The NumPy fallback of a scalar program is the math body with math. read numpy.
    when every template it fills allows that, which saves a second pass over long
    programs; the source must be the one the second pass writes, character for
    character."""
    from fuzz.test_views import spec_gradient
    fast = spec_gradient(spec, case).source("numpy")
    monkeypatch.setattr(emit, "_translated_body", lambda *args: None)
    slow = spec_gradient(spec, case).source("numpy")
    assert fast == slow


def test_a_long_chain_of_smooth_scalar_ops_takes_the_translated_body(monkeypatch):
    calls = []
    translated = emit._translated_body

    def spy(*args):
        calls.append(translated(*args) is not None)
        return translated(*args)
    monkeypatch.setattr(emit, "_translated_body", spy)

    def f(x, y):
        for _ in range(20):
            x = sg.sin(x) * x + sg.cos(y) * sg.exp(-x * x) + sg.tanh(x) / (1.0 + y * y)
        return x
    g = sg.grad_fn(f).compile("numpy")
    assert calls == [True]
    xt, yt = torch.tensor(0.3, dtype=torch.float64, requires_grad=True), \
        torch.tensor(-0.7, dtype=torch.float64, requires_grad=True)
    x = xt
    for _ in range(20):
        x = torch.sin(x) * x + torch.cos(yt) * torch.exp(-x * x) + torch.tanh(x) / (1.0 + yt * yt)
    ref = torch.autograd.grad(x, (xt, yt))
    np.testing.assert_allclose(g(0.3, -0.7), [r.item() for r in ref], rtol=1e-12)
    np.testing.assert_allclose(g(np.float32(0.3), -0.7), [r.item() for r in ref], rtol=1e-6)


def test_the_translated_fallback_gives_nan_and_inf_where_math_raises():
    def f(x, y):
        return sg.log(x) * sg.sin(y) + sg.exp(y) * sg.sqrt(x)
    g = sg.grad_fn(f).compile("numpy")
    with np.errstate(all="ignore"):
        for x, y in ((-1.0, 0.5), (0.0, 0.5), (2.0, 800.0)):
            xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
            yt = torch.tensor(y, dtype=torch.float64, requires_grad=True)
            value = torch.log(xt) * torch.sin(yt) + torch.exp(yt) * torch.sqrt(xt)
            ref = torch.autograd.grad(value, (xt, yt))
            np.testing.assert_array_equal(g(x, y), [r.item() for r in ref])


def _pointwise_forms():
    from symgrad.core.opdef import OPS
    out = []
    for name, opdef in sorted(OPS.items()):
        if not opdef.pointwise or not opdef.inputs or opdef.params_fn is not None and \
                getattr(opdef.params_fn, "__name__", "") != "no_params":
            continue
        out.append(name)
    return out


@pytest.mark.parametrize("op", _pointwise_forms())
@pytest.mark.parametrize("backend", ["numpy", "math", "torch", "jax"])
def test_placeholder_sums_print_as_sympys_evaluated_sums(op, backend):
    """Templates are printed from the op's form over ``Placeholder`` operands, whose sums
    stay unevaluated; printed, each reads as the form over plain symbols, evaluated,
    including with a constant in each operand's place (1.0 - x)."""
    import sympy
    from symgrad.codegen.backends import backend as public, internal
    from symgrad.core import program
    from symgrad.core.opdef import OPS
    target = internal(backend) if backend == "math" else public(backend)
    opdef = OPS[op]
    n = len(opdef.inputs)
    plain = [sympy.Symbol(f"sgarg{i}") for i in range(n)]
    program.PLACEHOLDERS.extend(plain)      # the printers print both by name
    try:
        for constant in [None] + list(range(n)):
            ours = [sympy.Float(1.5) if i == constant else program.placeholder(i)
                    for i in range(n)]
            theirs = [sympy.Float(1.5) if i == constant else plain[i] for i in range(n)]
            try:
                expected = target.printer().doprint(opdef.expr({}, theirs))
            except Exception as error:     # no spelling for this backend: none for ours
                with pytest.raises(type(error)):
                    target.printer().doprint(opdef.expr({}, ours))
                continue
            assert target.printer().doprint(opdef.expr({}, ours)) == expected
    finally:
        del program.PLACEHOLDERS[-n:]
