"""``GradFn.explicit``: per-element closed forms for concrete sizes, for every rule.

For each small case of the rule specs (``rule_specs``), the explicit per-element
gradient of ``sum(op(...) * w_out)`` is evaluated at random inputs by substituting
numbers for the element symbols, and compared with ``torch.autograd`` on the pure-torch
reference: the element-level view must say the same as the compiled code.
"""
import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad.views.explicit import element_symbols

from rule_specs import SPECS
from test_rules import as_torch, concrete, draw, losses, seed_of

MAX_ELEMENTS = 12
# SymPy's per-element forms of these take 10-70 s (a Cholesky factor inside a Gaussian
# likelihood, the SVD of a non-square matrix); other cases of the same ops stay in the
# default run, these run with `-m slow`.
SLOW_CASES = {"cholesky-gaussian_nll", "svd_vh-wide", "svd_u-tall"}


def small_cases():
    out = []
    for spec in SPECS.values():
        for case in spec.cases:
            sizes = [int(np.prod(concrete(s, case.dims))) for s in case.shapes.values()]
            if sum(sizes) <= MAX_ELEMENTS:
                key = f"{spec.op}-{case.id}"
                marks = [pytest.mark.slow] if key in SLOW_CASES else []
                out.append(pytest.param(spec, case, id=key, marks=marks))
    return out


def _values(name, array):
    syms = element_symbols(name, array.shape)
    return {s: sympy.Float(float(v)) for s, v in zip(syms.ravel(), np.ravel(array))}


def _numeric(expr):
    arr = np.asarray(expr.tolist() if hasattr(expr, "tolist") else expr, dtype=object)
    return np.vectorize(lambda e: float(sympy.sympify(e).evalf()), otypes=[float])(arr)


@pytest.mark.parametrize("spec, case", small_cases())
def test_explicit_matches_torch(spec, case):
    loss, loss_ref, shapes = losses(spec, case)
    g = sg.grad_fn(loss, shapes=shapes)
    explicit = g.explicit(simplify=False, **case.dims)
    rng = np.random.default_rng(seed_of(spec, case) + 3)
    arrays = draw(spec, case, rng)
    out_shape = concrete(shapes["w_out"], case.dims)
    arrays.append(rng.standard_normal(out_shape))
    tensors = as_torch(arrays, requires_grad=True)
    ref = torch.autograd.grad(loss_ref(*tensors), tensors, allow_unused=True,
                              materialize_grads=True)
    subs = {}
    for name, a in zip(shapes, arrays):
        subs.update(_values(name, a))
    for name, r in zip(shapes, ref):
        expr = explicit[name]
        got = _numeric(expr.xreplace(subs) if hasattr(expr, "xreplace") else
                       sympy.Array(expr).xreplace(subs))
        want = r.detach().numpy()
        assert got.shape == want.shape or got.size == want.size == 1, (got.shape, want.shape)
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-9, atol=1e-12,
                                   err_msg=f"explicit d/d{name}")


def test_explicit_of_a_vector_is_a_list_of_element_formulas():
    g = sg.grad_fn(lambda x: sg.sum(sg.softmax(x) * x), shapes={"x": ("n",)})
    ex = g.explicit(n=2)["x"]
    assert len(ex) == 2
    x0, x1 = sympy.symbols("x_0 x_1", real=True)
    assert ex[0].free_symbols == {x0, x1}


def test_explicit_needs_every_dim():
    g = sg.grad_fn(lambda x: sg.sum(x * x), shapes={"x": ("n",)})
    with pytest.raises(sg.ShapeError, match="n"):
        g.explicit()


def test_a_chain_of_decompositions_is_evaluated_once_per_op(monkeypatch):
    """A per-element form of a decomposition evaluates the op at its inputs' values; every
    element of a solve against a Cholesky factor asks for every element of the factor.
    Each op is computed once per input values (a Gaussian process's verify() took 54 s at
    N = 2 when each element recomputed its inputs), and the views still match torch."""
    from symgrad.core import extensions
    calls = []
    evaluate = extensions.evaluate

    def counted(name, arrays, params):
        calls.append(name)
        return evaluate(name, arrays, params)
    monkeypatch.setattr(extensions, "evaluate", counted)

    def nll(A, y):
        L = sg.cholesky(A @ A.T + 3.0 * sg.eye(3))
        z = sg.solve(L, y)
        return sg.sum(z * z) + sg.sum(sg.log(sg.diagonal(L)))
    g = sg.grad_fn(nll, shapes={"A": (3, 3), "y": (3,)})
    report = g.verify()
    assert report, report
    assert len(calls) <= 40, f"{len(calls)} evaluations of {sorted(set(calls))}"


def test_elements_are_named_apart_from_every_input_in_any_order():
    from symgrad.views.explicit import explicit, input_elements

    def f(x, x_0):                  # x_0 not in any gradient graph
        return sg.sum(x**2) + 3 * x_0

    g = sg.grad_fn(f, shapes=dict(x=(3,), x_0=()))
    blocks = [b.filled for b in g._blocks()]       # the gradient graphs
    (dx, dx0) = explicit(blocks, {}, True, g.inputs)
    assert [str(e) for e in dx] == ["2*x[0]", "2*x[1]", "2*x[2]"] and dx0 == 3
    names = {str(s) for s in dx[0].free_symbols}
    assert "x_0" not in names
    # one naming for explicit and verify, whatever the inputs' order (x wide: x_0_0)
    a = input_elements([("x", (11, 2)), ("x_0", (2,))])
    b = input_elements([("x_0", (2,)), ("x", (11, 2))])
    assert all((a[k] == b[k]).all() for k in a)
    assert len({s for v in a.values() for s in v.ravel()}) == 24

    def f2(x_0, x):
        return sg.sum(x_0 * x_0) * sg.sum(x[0]) + sg.sum(x**2)

    report = sg.grad_fn(f2, shapes=dict(x=(11, 2), x_0=(2,))).verify()
    assert report, str(report)


def test_views_of_singular_value_derivatives_are_verified():
    """Their per-element forms compare opaque singular values (Eq(svd_s[...], Max(...))),
    which SymPy left undecided: verify() raised a TypeError."""
    for g in (sg.grad_fn(lambda A: torch.linalg.matrix_norm(A, 2), shapes={"A": (3, 2)}),
              sg.hessian(lambda A: (torch.linalg.svdvals(A) ** 3).sum(), shapes={"A": (3, 2)})):
        report = g.verify()
        assert report, report
