"""Every rule in the table, tested from its spec in ``rule_specs``.

For each op and shape case (ids like ``tanh-matrix``, ``add-broadcast_2x3_3``):

* ``test_forward``: the op computes what torch computes (sg ops on NumPy and on torch),
  the traced graph really contains the op, and its symbolic shape is torch's shape;
* ``test_gradient``: ``sg.check`` of ``sum(op(...) * w_out)`` against ``torch.autograd``
  on the pure-torch reference, compiled for NumPy and torch, at orders 1 and 2 (cases
  with symbolic dims at two instantiations of the dims);
* ``test_jvp``: forward mode (``diff.forward.forward`` + ``compile_function``) against
  ``torch.func.jvp``;
* ``test_sympy_diff`` (scalar cases of elementwise ops): symgrad's closed-form gradient
  agrees numerically with ``sympy.diff`` of the closed-form value.

``test_every_rule_has_a_spec`` fails as soon as a rule is added without a spec.
"""
import inspect
import zlib

import numpy as np
import pytest
import sympy
import torch

import symgrad as sg
from symgrad import codegen
from symgrad.core.build import symbol
from symgrad.core.graph import topo_order
from symgrad.core.ops import functions
from symgrad.core.shapes import as_shape
from symgrad.diff.forward import forward

from backend_support import require_backend
from rule_specs import SPECS

# torch.func.jvp loads torch's JVP decompositions through torch.jit.script, deprecated
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")

WEIGHT = "w_out"   # the random weights of the scalar loss sum(op(...) * w_out)

# (test, "op-case") -> reason: known symgrad bugs, reported and marked strict xfail.
KNOWN_BUGS = {}

# ----- helpers --------------------------------------------------------------------------

def all_cases():
    return [(spec, case) for spec in SPECS.values() for case in spec.cases]


def params(test, select=lambda spec, case: True):
    out = []
    for spec, case in all_cases():
        if not select(spec, case):
            continue
        cid = f"{spec.op}-{case.id}"
        reason = KNOWN_BUGS.get((test, cid))
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        out.append(pytest.param(spec, case, id=cid, marks=marks))
    return out


# Backends beyond NumPy and torch, held to the same table: each case once more per backend
# (id "<op>-<case>-<backend>"), the first case of each op in the default run and the whole
# table under ``slow`` (a jit compile per case).
EXTRA_BACKENDS = ("jax", "c")


def backend_params(test, select=lambda spec, case: True):
    """``params`` with the backends each case is compiled for: NumPy and torch together,
    then each of ``EXTRA_BACKENDS`` alone."""
    out, seen = [], set()
    for p in params(test, select):
        spec, case = p.values
        out.append(pytest.param(spec, case, ("numpy", "torch"), id=p.id, marks=p.marks))
    for b in EXTRA_BACKENDS:
        for p in params(test, select):
            spec, case = p.values
            marks = list(p.marks)
            if spec.op in seen:
                marks.append(pytest.mark.slow)
            seen.add(spec.op)
            out.append(pytest.param(spec, case, (b,), id=f"{p.id}-{b}", marks=marks))
        seen.clear()
    return out


def with_signature(fn, names, name):
    """``fn(*args)`` with named positional parameters, as grad_fn reads them."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    fn.__name__ = name
    return fn


def concrete(shape, dims):
    out = []
    for d in as_shape(shape):
        if isinstance(d, int):
            out.append(d)
        else:
            out.append(int(sympy.sympify(d).subs({s: dims[str(s)] for s in d.free_symbols})))
    return tuple(out)


def traced_output(spec, case):
    xs = [symbol(n, s) for n, s in case.shapes.items()]
    return xs, spec.build_for(case)(*xs, **case.params)


def draw(spec, case, rng):
    """One set of inputs (NumPy) for ``case``, each in its sampler's domain."""
    out = []
    for name, shape in case.shapes.items():
        a = spec.sampler(case, name)(concrete(shape, case.dims), rng)
        out.append(np.asarray(a, dtype=float))
    return out


def as_torch(arrays, requires_grad=False):
    return [torch.tensor(a, dtype=torch.float64, requires_grad=requires_grad) for a in arrays]


def seed_of(spec, case):
    return zlib.crc32(f"{spec.op}-{case.id}".encode())


# ----- coverage -------------------------------------------------------------------------

def test_every_rule_has_a_spec():
    names = set(sg.rules.names())
    assert names, "the rule table is empty"
    missing = sorted(names - set(SPECS))
    assert not missing, f"rules without a test spec in tests/rule_specs.py: {missing}"
    unknown = sorted(set(SPECS) - names)
    assert not unknown, f"specs naming no rule in sg.rules: {unknown}"


@pytest.mark.parametrize("op", sorted(SPECS))
def test_spec_matches_rule(op):
    spec, rule = SPECS[op], sg.rules[op]
    assert spec.differentiable == rule.differentiable, (
        f"spec says differentiable={spec.differentiable}, rule at {rule.source} says "
        f"{rule.differentiable}")
    assert spec.cases, f"{op}: no shape cases"
    ids = [c.id for c in spec.cases]
    assert len(ids) == len(set(ids)), f"{op}: duplicate case ids {ids}"
    if spec.elementwise:
        assert any(all(s == () for s in c.shapes.values()) for c in spec.cases), \
            f"{op}: elementwise op without a scalar case (needed for the sympy.diff check)"


# ----- forward values and shapes --------------------------------------------------------

@pytest.mark.parametrize("spec, case", params("forward"))
def test_forward(spec, case):
    xs, out = traced_output(spec, case)
    assert isinstance(out, sg.Tensor)
    ops = {n.op for n in topo_order([out])}
    assert spec.op in ops, f"the traced case never applies {spec.op} (ops: {sorted(ops)})"

    rng = np.random.default_rng(seed_of(spec, case))
    arrays = draw(spec, case, rng)
    ref = spec.ref_for(case)(*as_torch(arrays), **case.params)
    ref = ref.detach().numpy()
    assert concrete(out.shape, case.dims) == ref.shape
    build = spec.build_for(case)
    got_t = build(*as_torch(arrays), **case.params)
    assert isinstance(got_t, torch.Tensor)
    assert got_t.dtype == torch.float64
    np.testing.assert_allclose(got_t.detach().numpy(), ref, rtol=1e-12, atol=1e-14)
    got_np = build(*[a if a.shape else float(a) for a in arrays], **case.params)
    np.testing.assert_allclose(np.asarray(got_np, dtype=float), ref, rtol=1e-12, atol=1e-14)
    assert np.shape(got_np) == ref.shape


# ----- reverse mode against torch.autograd, orders 1 and 2 ------------------------------

def losses(spec, case):
    """(symgrad loss, torch reference loss, shapes) for ``sum(op(...) * w_out)``."""
    _, out = traced_output(spec, case)
    names = list(case.shapes) + [WEIGHT]
    shapes = dict(case.shapes)
    shapes[WEIGHT] = out.shape
    build, ref, kw = spec.build_for(case), spec.ref_for(case), case.params

    def loss(*args):
        return sg.sum(build(*args[:-1], **kw) * args[-1])

    def loss_ref(*args):
        return torch.sum(ref(*args[:-1], **kw) * args[-1])

    return (with_signature(loss, names, "loss"), with_signature(loss_ref, names, "loss_ref"),
            shapes)


@pytest.mark.parametrize("spec, case, backends", backend_params("gradient"))
def test_gradient(spec, case, backends):
    for b in backends:
        require_backend(b)
    check_gradient(spec, case, backends)


def check_gradient(spec, case, backends=("numpy", "torch")):
    """``sg.check`` of the case's loss compiled for ``backends`` (other backends' test
    files run this for theirs)."""
    loss, loss_ref, shapes = losses(spec, case)

    def sample(name, shape, rng):
        if name == WEIGHT:
            return rng.standard_normal(shape)
        return spec.sampler(case, name)(shape, rng)

    # symbolic dims: the same formulas at two different instantiations of the dims
    instantiations = [case.dims, {k: v + 1 for k, v in case.dims.items()}] if case.dims \
        else [{}]
    for dims in instantiations:
        # the specs draw nan and inf on purpose where an op must propagate them as torch
        # does (isnan, half-precision overflow): there nan must agree with nan
        report = sg.check(loss, shapes=shapes, dims=dims, order=2, sample=sample,
                          reference=loss_ref, trials=2, seed=seed_of(spec, case),
                          backends=backends, equal_nan=True)
        assert report.wrt == list(shapes)
        assert report.dims == dims
        # every gradient and Hessian-vector product was compared, on every backend
        for name in shapes:
            for b in backends:
                assert f"d/d{name} [{b}]" in report.max_abs_error
                assert f"H·v d/d{name} [{b}]" in report.max_abs_error


# ----- forward mode against torch.func.jvp -----------------------------------------------

@pytest.mark.parametrize("spec, case, backends", backend_params("jvp"))
def test_jvp(spec, case, backends):
    for b in backends:
        require_backend(b)
    check_jvp(spec, case, backends)


def check_jvp(spec, case, backends=("numpy", "torch")):
    """The case's JVP compiled for ``backends`` against torch.func.jvp."""
    xs, out = traced_output(spec, case)
    ts = [symbol(f"{x.name}_dot", x.shape) for x in xs]
    (tangent,) = forward([out], xs, ts)
    fns = {b: codegen.compile_function([tangent], xs + ts, b, "jvp", zero_shapes=[out.shape])
           for b in backends}

    ref_fn = spec.ref_for(case)
    rng = np.random.default_rng(seed_of(spec, case) + 1)
    for _ in range(2):
        primals = draw(spec, case, rng)
        tangents = [rng.standard_normal(p.shape) for p in primals]
        _, ref = torch.func.jvp(lambda *a: ref_fn(*a, **case.params),
                                tuple(as_torch(primals)), tuple(as_torch(tangents)))
        ref = ref.detach().numpy()
        args = [a if a.shape else float(a) for a in primals + tangents]
        for b, fn in fns.items():
            if b == "torch":
                (got,) = fn(*as_torch(primals + tangents))
                assert isinstance(got, torch.Tensor) and tuple(got.shape) == ref.shape
                got = got.numpy()
            else:
                (got,) = fn(*args)
                assert np.shape(got) == ref.shape, b
                assert np.asarray(got).dtype == np.float64, b
            np.testing.assert_allclose(np.asarray(got, dtype=float), ref, rtol=1e-9, atol=1e-12,
                                       err_msg=b)


# ----- scalar rules against sympy.diff ----------------------------------------------------

def _heaviside(x, h0=0.5):
    return 1.0 if x > 0 else (0.0 if x < 0 else float(h0))


LAMBDIFY_MODULES = [{"Heaviside": _heaviside, "DiracDelta": lambda *a: 0.0}, "math"]


def elementary(expr):
    """symgrad's classes rewritten to plain SymPy, keeping stop-gradients opaque: each
    ``StopGradient(e)`` becomes a fresh symbol, returned with its replacement."""
    stops = {}

    def hide(e):
        d = sympy.Dummy("stop")
        stops[d] = e.args[0]
        return d

    hidden = expr.replace(lambda e: isinstance(e, functions.StopGradient), hide)
    back = {d: functions.to_elementary(e) for d, e in stops.items()}
    return functions.to_elementary(hidden), back


def is_scalar_case(case):
    return all(s == () for s in case.shapes.values())


@pytest.mark.parametrize("spec, case", params(
    "sympy", lambda spec, case: spec.elementwise and is_scalar_case(case)))
def test_sympy_diff(spec, case):
    loss, _, shapes = losses(spec, case)
    g = sg.grad_fn(loss)
    syms = {n: sympy.Symbol(n, real=True) for n in shapes}
    value, stops = elementary(g.value)
    assert value.free_symbols - set(stops) <= set(syms.values()), value
    rng = np.random.default_rng(seed_of(spec, case) + 2)
    points = []
    for _ in range(4):
        xs = [float(a) for a in draw(spec, case, rng)]
        points.append(xs + [float(rng.standard_normal())])
    order = [syms[n] for n in shapes]
    for name in shapes:
        expected = sympy.diff(value, syms[name]).xreplace(stops)
        ours, ours_stops = elementary(g.formulas[name])
        ours = ours.xreplace(ours_stops)
        assert not ours.has(sympy.Derivative), f"d/d{name}: unevaluated {ours}"
        f_exp = sympy.lambdify(order, expected, LAMBDIFY_MODULES)
        f_ours = sympy.lambdify(order, ours, LAMBDIFY_MODULES)
        for p in points:
            e, o = float(f_exp(*p)), float(f_ours(*p))
            assert np.isclose(o, e, rtol=1e-9, atol=1e-12, equal_nan=True), (
                f"d/d{name} at {dict(zip(shapes, p))}: symgrad {o} ({g.formulas[name]}), "
                f"sympy.diff {e} ({expected})")


# ----- all-scalar programs: constant and zero gradients (found while testing the rules) ----

def _linear(x, y):
    return x + 2 * y          # gradients are the constants 1 and 2


def _unused(x, y):
    return sg.sin(x)          # the gradient w.r.t. y is a known zero


@pytest.mark.parametrize("f, expected", [(_linear, (1.0, 2.0)),
                                         (_unused, (np.cos(0.7), 0.0))],
                         ids=["constant_gradient", "zero_gradient"])
def test_scalar_program_constant_gradients(f, expected):
    g = sg.grad_fn(f)
    got = g.compile("numpy")(0.7, -1.3)
    np.testing.assert_allclose(np.asarray(got, dtype=float), expected, rtol=1e-12)
