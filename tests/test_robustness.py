"""Numerical robustness of the rule formulas, compared with torch at the edges.

Each case runs a function at fixed inputs where a naive formula overflows, cancels or
divides by zero (softplus, sigmoid, logsumexp at |x| ~ 1000; sqrt, abs, relu at 0;
x / 0; pow at 0; std of equal elements) and requires symgrad's compiled value and
gradients (NumPy and torch backends; orders 1 and 2 unless the case says otherwise) to
equal torch's, inf for inf and nan for nan (``sg.check`` treats equal nans as equal).
"""
import inspect
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg

BIG = [-800.0, -40.0, -1.0, 0.0, 1.0, 40.0, 800.0]


def named(fn, names, name):
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    fn.__name__ = name
    return fn


def agree(f, ref, values, order=2):
    """symgrad's compiled value and gradients of ``f`` equal torch's on ``values``
    (name -> array), numbers, infs and nans alike."""
    values = {k: np.asarray(v, dtype=float) for k, v in values.items()}
    names = list(values)
    fn, ref_fn = f, ref
    f = named(lambda *a: fn(*a), names, "f")
    ref = named(lambda *a: ref_fn(*a), names, "ref")
    shapes = {k: v.shape for k, v in values.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy: divide by zero etc.
        report = sg.check(f, shapes=shapes, order=order, trials=1, reference=ref,
                          sample=lambda name, shape, rng: values[name],
                          raise_on_mismatch=False, equal_nan=True)
        assert report.ok, str(report)
        expected = ref(*[torch.tensor(v, dtype=torch.float64) for v in values.values()])
        g = sg.grad_fn(f, shapes=shapes)
        for backend in ("numpy", "torch"):
            args = [v if v.shape else float(v) for v in values.values()] \
                if backend == "numpy" else \
                [torch.tensor(v, dtype=torch.float64) for v in values.values()]
            value, _ = g.compile(backend, with_value=True)(*args)
            value = value.numpy() if backend == "torch" else value
            np.testing.assert_allclose(np.asarray(value, dtype=float), expected.numpy(),
                                       rtol=1e-12, atol=0, equal_nan=True,
                                       err_msg=f"value [{backend}]")
    return report


def weighted(n):
    return np.linspace(-1.0, 2.0, n)


# ----- large inputs: no overflow, no cancellation ---------------------------------------

@pytest.mark.parametrize("name, sg_fn, torch_fn", [
    ("softplus", sg.softplus, F.softplus),
    ("sigmoid", sg.sigmoid, torch.sigmoid),
    ("tanh", sg.tanh, torch.tanh),
    ("erf", sg.erf, torch.erf),
    ("atan", sg.atan, torch.atan),
    ("relu", sg.relu, torch.relu),
    ("exp", sg.exp, torch.exp),          # overflows to inf, as torch does
    ("cosh", sg.cosh, torch.cosh),
], ids=lambda v: v if isinstance(v, str) else "")
def test_pointwise_at_large_inputs(name, sg_fn, torch_fn):
    w = weighted(len(BIG))
    agree(lambda x, w: sg.sum(sg_fn(x) * w), lambda x, w: torch.sum(torch_fn(x) * w),
          {"x": BIG, "w": w})


def test_softplus_gradient_is_exactly_sigmoid_far_out():
    """d softplus/dx at ±800 is 1 and 0, not nan from exp(800)/(1 + exp(800))."""
    g = sg.grad_fn(lambda x: sg.sum(sg.softplus(x)), shapes={"x": (2,)})
    (dx,) = g.compile("numpy")(np.array([800.0, -800.0]))
    assert np.array_equal(dx, [1.0, 0.0])


@pytest.mark.parametrize("x", [[1e-20, -1e-18, 1e-10], [-1 + 1e-12, -0.5, 1e300]],
                         ids=["tiny", "near_-1_and_huge"])
def test_log1p_and_expm1_keep_their_precision(x):
    agree(lambda x: sg.sum(sg.log1p(x) * np.array([1.0, 2.0, 3.0])),
          lambda x: torch.sum(torch.log1p(x) * torch.tensor([1.0, 2.0, 3.0],
                                                              dtype=torch.float64)), {"x": x})
    small = [v for v in x if abs(v) < 1]
    agree(lambda x: sg.sum(sg.expm1(x)), lambda x: torch.sum(torch.expm1(x)), {"x": small})


@pytest.mark.parametrize("x, axis", [
    (BIG, None),
    ([[1000.0, 1001.0, 999.0], [-1000.0, -1e4, -999.0]], 1),
    ([[1000.0, -1000.0], [1001.0, -1e4], [999.0, -999.0]], 0),
    ([-np.inf, 0.0, 1.0], None),
], ids=["vector", "rows", "columns", "minus_inf"])
def test_logsumexp_at_large_inputs(x, axis):
    x = np.asarray(x)
    out_shape = () if axis is None else np.delete(x.shape, axis)
    w = np.linspace(0.5, 1.5, int(np.prod(out_shape))).reshape(out_shape)
    dims = tuple(range(x.ndim)) if axis is None else axis
    agree(lambda x, w: sg.sum(sg.logsumexp(x, axis=axis) * w),
          lambda x, w: torch.sum(torch.logsumexp(x, dim=dims) * w), {"x": x, "w": w})


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_at_large_logits(name):
    x = np.array([BIG, [-900.0, 0.0, 900.0, 1.0, 2.0, 3.0, -1e4]])
    w = np.arange(x.size, dtype=float).reshape(x.shape) / 7
    sg_fn, t_fn = getattr(sg, name), getattr(torch, name)
    agree(lambda x, w: sg.sum(sg_fn(x, -1) * w), lambda x, w: torch.sum(t_fn(x, -1) * w),
          {"x": x, "w": w})


def test_losses_at_large_logits():
    x = np.array(BIG)
    y = np.array([0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 1.0])
    agree(lambda x, y: sg.binary_cross_entropy_with_logits(x, y),
          lambda x, y: F.binary_cross_entropy_with_logits(x, y), {"x": x, "y": y})
    logits = np.array([[1000.0, -1000.0, 3.0], [-800.0, 0.0, 800.0]])
    target = np.array([0.0, 2.0])
    agree(lambda x: sg.cross_entropy(x, target),
          lambda x: F.cross_entropy(x, torch.tensor([0, 2])), {"x": logits})
    agree(lambda x: sg.cross_entropy(x, target, reduction="sum"),
          lambda x: F.cross_entropy(x, torch.tensor([0, 2]), reduction="sum"), {"x": logits})


# ----- kinks and poles at 0, torch's conventions ----------------------------------------

KINKS = [0.0, -1.5, 2.0]


@pytest.mark.parametrize("name, sg_fn, torch_fn", [
    ("sqrt", sg.sqrt, torch.sqrt),              # inf gradient at 0
    ("abs", sg.abs, torch.abs),                 # sign(0) = 0
    ("relu", sg.relu, torch.relu),              # 0 at 0
    ("sign", lambda x: sg.sign(x) * x * x, lambda x: torch.sign(x) * x * x),
    ("sqrt_of_square", lambda x: sg.sqrt(x * x), lambda x: torch.sqrt(x * x)),
    ("abs_times_x", lambda x: sg.abs(x) * x, lambda x: torch.abs(x) * x),
    ("clamp_at_bounds", lambda x: sg.clamp(x, -1.5, 0.0), lambda x: torch.clamp(x, -1.5, 0.0)),
    ("log", sg.log, torch.log),                 # -inf at 0, nan below
], ids=lambda v: v if isinstance(v, str) else "")
def test_at_zero_like_torch(name, sg_fn, torch_fn):
    agree(lambda x: sg.sum(sg_fn(x)), lambda x: torch.sum(torch_fn(x)), {"x": KINKS})


def test_maximum_and_max_at_ties_like_torch():
    agree(lambda x, y: sg.sum(sg.maximum(x, y) * np.array([1.0, 2.0, 3.0])),
          lambda x, y: torch.sum(torch.maximum(x, y) * torch.tensor([1.0, 2.0, 3.0],
                                                                     dtype=torch.float64)),
          {"x": [1.0, 2.0, 0.0], "y": [1.0, 3.0, 0.0]})
    agree(lambda x: sg.max(x), lambda x: torch.max(x), {"x": [2.0, 2.0, -1.0]})
    agree(lambda x: sg.sum(sg.max(x, axis=1)), lambda x: torch.max(x, dim=1)[0].sum(),
          {"x": [[2.0, 2.0, -1.0], [0.0, 0.0, 0.0]]})


def test_prod_with_zeros_like_torch():
    agree(lambda x: sg.prod(x), lambda x: torch.prod(x), {"x": [0.0, 0.0, 2.0]})
    agree(lambda x: sg.prod(x), lambda x: torch.prod(x), {"x": [0.0, -3.0, 2.0]})


# ----- division by zero ---------------------------------------------------------------

def test_division_by_a_zero_input_like_torch():
    agree(lambda x, y: sg.sum(x / y), lambda x, y: torch.sum(x / y),
          {"x": [1.0, -1.0, 0.0, 2.0], "y": [0.0, 0.0, 0.0, 1.0]})


def test_scalar_division_by_zero_like_torch():
    """The plain-math fast path for scalars must not raise ZeroDivisionError."""
    for x in (1.0, -1.0, 0.0):
        agree(lambda x, y: x / y, lambda x, y: x / y, {"x": x, "y": 0.0})


def test_division_by_a_literal_zero_like_torch():
    """x / 0.0 in the traced function: x * inf, not SymPy's ComplexInfinity (which used
    to reach the printer as KeyError 'ComplexInfinity')."""
    agree(lambda x: sg.sum(x / 0.0), lambda x: torch.sum(x / 0.0), {"x": [1.0, -2.0]})
    agree(lambda x: sg.sum(x / 0.0), lambda x: torch.sum(x / 0.0), {"x": [1.0, 0.0]})


def test_var_of_one_element_like_torch():
    """count - correction = 0: torch gives nan (value and gradient); symgrad used to
    crash printing 1/0 as ComplexInfinity."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)     # torch: degrees of freedom <= 0
        agree(lambda x: sg.var(x), lambda x: torch.var(x), {"x": [2.0]})
        agree(lambda x: sg.std(x), lambda x: torch.std(x), {"x": [2.0]})


@pytest.mark.parametrize("axis", [None, 1])
def test_std_of_equal_elements_like_torch(axis):
    """torch's std gradient is 0 where std is 0, at orders 1 and 2 (symgrad gave nan).
    The weights are constants: torch's mixed derivative d²/dx dw there is nan."""
    x = [[1.5, 1.5, 1.5], [3.0, 4.0, -1.0]] if axis == 1 else np.full((2, 3), 1.5)
    w = np.array([1.0, 2.0]) if axis == 1 else 1.0
    agree(lambda x: sg.sum(sg.std(x, axis=axis) * w),
          lambda x: torch.sum(torch.std(x, dim=axis) * torch.as_tensor(w)), {"x": x})


def test_std_jvp_of_equal_elements_like_torch():
    from symgrad import codegen
    from symgrad.diff.forward import forward
    x, t = sg.symbol("x", (3,)), sg.symbol("t", (3,))
    (tangent,) = forward([sg.std(x)], [x], [t])
    fn = codegen.compile_function([tangent], [x, t], "numpy", "jvp")
    args = (np.full(3, 1.5), np.array([1.0, -2.0, 0.5]))
    _, expected = torch.func.jvp(torch.std, (torch.tensor(args[0]),), (torch.tensor(args[1]),))
    assert np.array_equal(fn(*args)[0], expected.numpy())


@pytest.mark.parametrize("x, y", [
    ([0.0, 0.0, 0.0, 0.0, 0.0, 2.0, -2.0, 1.5], [0.0, 2.0, 0.5, 3.0, -1.0, 0.0, 0.0, 2.5]),
], ids=["base_or_exponent_zero"])
def test_pow_at_zero_like_torch(x, y):
    """torch: d(x^y)/dx is 0 where y = 0, d(x^y)/dy is 0 where x = 0 and y >= 0 (symgrad
    gave nan from 0 · inf and 0 · log 0). First order: torch's own second derivatives
    at these points are nan or asymmetric."""
    agree(lambda x, y: sg.sum(sg.pow(x, y)), lambda x, y: torch.sum(torch.pow(x, y)),
          {"x": x, "y": y}, order=1)


def test_pow_second_order_where_the_exponent_is_zero_like_torch():
    """x^y at y = 0, x != 0: torch's d/dy of the base gradient is 0 (its mask)."""
    agree(lambda x, y: sg.sum(sg.pow(x, y)), lambda x, y: torch.sum(torch.pow(x, y)),
          {"x": [2.0, 0.5, 1.5], "y": [0.0, 0.0, 2.0]})


def test_pow_of_a_constant_zero_base_like_torch():
    """0.0 ** y: d/dy is 0 for y >= 0 as in torch (symgrad crashed printing log(0))."""
    agree(lambda y: sg.sum(sg.pow(0.0, y)), lambda y: torch.sum(torch.pow(0.0, y)),
          {"y": [0.0, 1.0, 2.0]}, order=1)


def test_norm_at_zero_like_torch():
    """‖x‖ at x = 0: gradient 0, as torch (first order; torch's Hessian there is nan)."""
    agree(lambda x: sg.norm(x), lambda x: torch.linalg.vector_norm(x), {"x": [0.0, 0.0]},
          order=1)
    agree(lambda x: sg.sum(sg.norm(x, axis=1)),
          lambda x: torch.linalg.vector_norm(x, dim=1).sum(),
          {"x": [[0.0, 0.0], [3.0, 4.0]]}, order=1)


# ----- constants at the edges: folded, and printable by every backend ----------------------

def test_constant_boolean_in_a_logical_op_compiles_for_torch():
    def f(x):
        return sg.sum(sg.where(sg.logical_and(sg.const(False), x > 0), 0.0, x * x))
    agree(f, lambda x: torch.sum(x * x), {"x": [1.0, -2.0]})


def test_log_of_a_constant_zero_compiles_for_torch():
    agree(lambda x: sg.sum(x * sg.log(sg.const(0))),
          lambda x: torch.sum(x * torch.log(torch.tensor(0.0, dtype=torch.float64))),
          {"x": [1.0, -2.0]})
