"""The printed views agree with the compiled code, and the evaluator can tell when not.

* ``test_views_agree``: for every shape case of every spec in ``tests/rule_specs.py`` (the
  default run takes every other case of each op and its first case with symbolic dims,
  ``slow`` the rest), the
  gradient of ``sum(op(...) * w_out)`` computed by running ``g.text("numpy")`` with NumPy
  alone, evaluated from ``g.program()``, ``g.formulas`` and ``g.explicit(**dims)``
  (``tests/fuzz/views.py``) equals ``g.compile("numpy")`` on the same inputs;
* ``test_explicit_simplified``: the same for the simplified per-element forms (SymPy's
  ``factor``), on the cases small enough for that to be quick;
* the evaluator catches deliberately wrong views (dropped parentheses, a dropped
  broadcast, swapped arguments, a wrong shape note, a wrong program line or element) and
  reports names it cannot evaluate (a name NumPy lacks, an import of anything but NumPy
  and math) instead of skipping them;
* ``test_known_bug_*``: view bugs found by fuzzing, strict xfail until fixed.
"""
import inspect
import zlib

import numpy as np
import pytest
import sympy

import symgrad as sg
from symgrad.core import ops
from symgrad.core.build import symbol
from symgrad.core.graph import topo_order

from rule_specs import SPECS

from . import views
from .views import (UNEVALUABLE, compare_views, concrete_shape, evaluate_explicit,
                    evaluate_numpy_text, evaluate_program, explicit_too_big,
                    registry_printed_names, text_functions)

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

WEIGHT = "w_out"   # the weights of the scalar loss sum(op(...) * w_out)

# "op-case" -> reason: spec cases whose views are wrong (symgrad bugs), strict xfail.
KNOWN_BUGS = {}


# ----- gradients of the spec cases ------------------------------------------------------

def with_signature(fn, names, name):
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])
    fn.__name__ = name
    return fn


def spec_gradient(spec, case):
    """``sg.grad_fn`` of ``sum(op(...) * w_out)`` for a spec case (as tests/test_rules.py)."""
    build, kw = spec.build_for(case), case.params
    out = build(*[symbol(n, s) for n, s in case.shapes.items()], **kw)
    shapes = dict(case.shapes)
    shapes[WEIGHT] = out.shape

    def loss(*args):
        return sg.sum(build(*args[:-1], **kw) * args[-1])
    return sg.grad_fn(with_signature(loss, list(shapes), "loss"), shapes=shapes)


def spec_inputs(spec, case, g):
    """Inputs in each input's domain (the spec's samplers), seeded by the case id."""
    rng = np.random.default_rng(zlib.crc32(f"{spec.op}-{case.id}".encode()))
    out = []
    for x in g.inputs:
        shape = concrete_shape(x.shape, case.dims)
        sample = rng.standard_normal if x.name == WEIGHT else \
            (lambda s, sampler=spec.sampler(case, x.name): sampler(s, rng))
        out.append(np.asarray(sample(shape), dtype=np.float64))
    return out


def cases(select=lambda spec, case: True, thin=False):
    """The spec cases ``select`` takes; with ``thin``, only every other case of an op and
    its first case with symbolic dims are in the default run, the rest ``slow``."""
    out = []
    for spec in SPECS.values():
        symbolic = next((c for c in spec.cases if c.dims), None)
        for k, case in enumerate(spec.cases):
            if not select(spec, case):
                continue
            cid = f"{spec.op}-{case.id}"
            reason = KNOWN_BUGS.get(cid)
            marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
            if thin and k % 2 and case is not symbolic:
                marks.append(pytest.mark.slow)
            out.append(pytest.param(spec, case, id=cid, marks=marks))
    return out


@pytest.mark.parametrize("spec, case", cases(thin=True))
def test_views_agree(spec, case):
    g = spec_gradient(spec, case)
    args = spec_inputs(spec, case, g)
    problems = compare_views(g, args, case.dims)
    assert not problems, "\n".join(problems) + "\n\n" + g.text("numpy") + "\n\n" + g.program()


# Cases whose simplified explicit forms take SymPy too long for the normal suite.
SLOW_SIMPLIFY = {
    "norm-p4_symbolic": "sympy.factor of sums of |x_ij|**4 takes ~20 s",
    "logcumsumexp-vector": "simplifying the nested logs of exp sums takes minutes",
}


def _small(spec, case):
    if f"{spec.op}-{case.id}" in SLOW_SIMPLIFY:
        return False
    total = sum(int(np.prod(concrete_shape(s, case.dims))) for s in case.shapes.values())
    return total <= 6


@pytest.mark.parametrize("spec, case", cases(_small))
def test_explicit_simplified(spec, case):
    g = spec_gradient(spec, case)
    args = spec_inputs(spec, case, g)
    problems = compare_views(g, args, case.dims, views=("explicit",), explicit_simplify=True)
    assert not problems, "\n".join(problems)


def test_explicit_is_skipped_only_for_large_graphs():
    """Skips are bounded: most spec cases evaluate their explicit view."""
    skipped = []
    for spec in SPECS.values():
        for case in spec.cases:
            g = spec_gradient(spec, case)
            why = explicit_too_big(g, case.dims)
            if why:
                skipped.append(f"{spec.op}-{case.id}: {why}")
    total = sum(len(s.cases) for s in SPECS.values())
    bounded = [s for s in skipped if "opaque" not in s]   # decompositions: no closed form
    assert len(bounded) <= total // 20, "\n".join(bounded)


# ----- the function table ----------------------------------------------------------------

def test_registry_names_map_to_their_ops():
    names = registry_printed_names()
    expected = {"Max": "maximum", "Min": "minimum", "Abs": "abs", "Eq": "eq", "Ne": "ne",
                "float": "cast", "exp": "exp", "atan2": "atan2", "sign": "sign",
                "where": "where", "detach": "detach", "sigmoid": "sigmoid"}
    for printed, op in expected.items():
        assert names.get(printed) == op, (printed, names.get(printed))


def test_every_template_name_is_in_the_table():
    """Ops spelled by a template ``name(...)`` print a name the table evaluates."""
    import re
    from symgrad.core.opdef import OPS
    table = text_functions()
    missing = []
    for name, opdef in OPS.items():
        sp = opdef.spell.get("text")
        if sp is None or callable(sp.form):
            continue
        m = re.match(r"([A-Za-z_]\w*)\(", sp.form)
        if m and m.group(1) not in table:
            missing.append(f"{name}: {m.group(1)}")
    assert not missing, missing


def test_unevaluable_names_are_not_in_the_table():
    assert not set(UNEVALUABLE) & set(text_functions())


# ----- the evaluator catches wrong views --------------------------------------------------

RNG_SEED = 1234


def _gradient(f, shapes, dims=None):
    f.__name__ = "f"
    g = sg.grad_fn(f, shapes=shapes)
    rng = np.random.default_rng(RNG_SEED)
    args = [rng.uniform(0.5, 1.5, concrete_shape(x.shape, dims or {})) for x in g.inputs]
    return g, args


def _tampered(g, monkeypatch, old, new, view="text"):
    text = g.text("numpy") if view == "text" else g.program()
    assert old in text, text
    bad = text.replace(old, new, 1)
    if view == "text":
        monkeypatch.setattr(g, "text", lambda notation=None: bad)
    else:
        monkeypatch.setattr(g, "program", lambda: bad)
    return bad


def _matvec():
    return _gradient(lambda a, W, x: sg.sum(sg.sin(a * (W @ x))),
                     {"a": (3,), "W": (3, 4), "x": (4,)})


def test_the_untampered_views_agree():
    g, args = _matvec()
    assert compare_views(g, args, {}) == []


def test_catches_dropped_parentheses(monkeypatch):
    g, args = _matvec()
    _tampered(g, monkeypatch, "t1*(W @ x)", "t1*W @ x")   # (t1*W)@x: wrong shape here
    problems = compare_views(g, args, {})
    assert problems and all(p.startswith("text") for p in problems), problems


def test_catches_dropped_parentheses_same_shape(monkeypatch):
    g, args = _gradient(lambda a, W, x: sg.sum(sg.sin(a * (W @ x))),
                        {"a": (3,), "W": (3, 3), "x": (3,)})
    _tampered(g, monkeypatch, "t1*(W @ x)", "t1*W @ x")
    problems = compare_views(g, args, {})
    assert any("text: d/da" in p and "differ" in p for p in problems), problems


def test_catches_wrong_precedence(monkeypatch):
    g, args = _gradient(lambda x, y: sg.sum(x / y ** 2), {"x": (4,), "y": (4,)})
    text = g.text("numpy")
    assert "/y**3" in text, text
    _tampered(g, monkeypatch, "/y**3", "/y*3")
    problems = compare_views(g, args, {})
    assert any("text: d/dy" in p for p in problems), problems


def test_catches_dropped_broadcast(monkeypatch):
    g, args = _gradient(lambda x, w: sg.sum(sg.mean(x, axis=1) * w), {"x": (2, 3), "w": (2,)})
    text = g.text("numpy")
    assert "np.broadcast_to(np.expand_dims(w, 1), (2, 3))" in text, text
    _tampered(g, monkeypatch, "np.broadcast_to(np.expand_dims(w, 1), (2, 3))",
              "np.expand_dims(w, 1)")
    problems = compare_views(g, args, {})
    assert any("text" in p and "shape (2, 1)" in p for p in problems), problems


def test_catches_swapped_arguments(monkeypatch):
    g, args = _gradient(lambda x, y: sg.sum(sg.atan2(x, y) * y), {"x": (3,), "y": (3,)})
    text = g.text("numpy")
    assert "np.arctan2(x, y)" in text, text
    _tampered(g, monkeypatch, "np.arctan2(x, y)", "np.arctan2(y, x)")
    problems = compare_views(g, args, {})
    assert any("text: d/dy" in p for p in problems), problems


def test_catches_wrong_shape_note(monkeypatch):
    g, args = _matvec()
    _tampered(g, monkeypatch, "# df/dx, shape (4,)", "# df/dx, shape (3,)")
    problems = compare_views(g, args, {})
    assert any("shape note" in p for p in problems), problems


def test_catches_wrong_program_line(monkeypatch):
    g, args = _matvec()
    program = g.program()
    line = next(ln for ln in program.splitlines() if "@" in ln and ln.startswith("v"))
    name, rhs = line.split(" = ")
    _tampered(g, monkeypatch, line, f"{name} = 2*{rhs}", view="program")
    problems = compare_views(g, args, {})
    assert problems and all(p.startswith("program") for p in problems), problems
    assert any("value f" in p for p in problems), problems


def test_catches_wrong_explicit_element(monkeypatch):
    g, args = _matvec()
    forms = g.explicit(simplify=False)
    bad = dict(forms)
    a = forms["a"]
    bad["a"] = sympy.ImmutableDenseNDimArray([a[1], a[0], a[2]], (3,))
    monkeypatch.setattr(g, "explicit", lambda simplify=True, **dims: bad)
    problems = compare_views(g, args, {})
    assert problems and all(p.startswith("explicit: d/da") for p in problems), problems


def test_unknown_names_are_problems(monkeypatch):
    """The NumPy text runs with NumPy and math only: a function NumPy lacks, a bare
    name, or an import of anything else fails its view, never is skipped."""
    for old, new, found in (("np.cos(", "np.cosine(", "has no attribute 'cosine'"),
                            ("np.cos(", "cos(", "name 'cos' is not defined"),
                            ("import numpy as np", "import numpy as np\nimport scipy",
                             "imports 'scipy'")):
        g, args = _matvec()
        with monkeypatch.context() as m:
            _tampered(g, m, old, new)
            problems = compare_views(g, args, {}, views=("text",))
        assert any(found in p for p in problems), problems


def test_the_program_view_reports_unknown_names(monkeypatch):
    g, args = _matvec()
    line = next(ln for ln in g.program().splitlines() if "cos(" in ln)
    _tampered(g, monkeypatch, line, line.replace("cos(", "cosine("), view="program")
    problems = compare_views(g, args, {}, views=("program",))
    assert any("unknown name(s) cosine" in p for p in problems), problems


def test_unevaluable_names_are_problems_with_their_reason(monkeypatch):
    g, args = _matvec()
    line = next(ln for ln in g.program().splitlines() if "cos(" in ln)
    _tampered(g, monkeypatch, line, line.replace("cos(", "zoo*cos("), view="program")
    problems = compare_views(g, args, {}, views=("program",))
    assert any("zoo" in p and "complex infinity" in p for p in problems), problems


def test_boolean_gradient_is_a_problem(monkeypatch):
    g, args = _matvec()
    text = g.text("numpy")
    line = next(ln for ln in text.splitlines() if ln.endswith("# df/da, shape (3,)"))
    _tampered(g, monkeypatch, line, "df_da = a > 0  # df/da, shape (3,)")
    problems = compare_views(g, args, {})
    assert any("boolean" in p for p in problems), problems


def test_a_result_line_per_derivative_is_required(monkeypatch):
    g, args = _matvec()
    _tampered(g, monkeypatch, "  # df/da, shape (3,)", "")
    problems = compare_views(g, args, {}, views=("text",))
    assert any("no line for df/da" in p for p in problems), problems


def test_a_wrong_constant_reference_is_a_problem(monkeypatch):
    big = np.arange(16.0).reshape(4, 4) / 7
    g, args = _gradient(lambda x: sg.sum(sg.sin(x * big)), {"x": (4, 4)})
    _tampered(g, monkeypatch, "g.constants['big']", "g.constants['small']")
    problems = compare_views(g, args, {}, views=("text",))
    assert any("no key 'small'" in p for p in problems), problems


# ----- printed forms that are not plain Python ----------------------------------------------

def test_scatter_index_and_captured_arrays():
    big = np.arange(16.0).reshape(4, 4) / 7        # prints by its variable's name

    def f(x):
        return (sg.sum(sg.sin(x * big) + x * np.array([1.0, 2.0, 3.0, 4.0]))
                + sg.sum(sg.cos(x[1:, ::2])) + sg.sum(x * (np.arange(16.0).reshape(4, 4) / 3)))
    g, args = _gradient(f, {"x": (4, 4)})
    program = g.program()
    assert "scatter(" in program and "[1.0, 2.0, 3.0, 4.0]" in program and "big" in program
    text = g.text("numpy")             # small arrays written out, the others by name
    assert "np.array([1.0, 2.0, 3.0, 4.0])" in text, text
    assert "# big = g.constants['big']" in text and "g.constants['C" in text, text
    assert "[0.0, " not in text, text
    assert set(g.constants) >= {"big"}
    assert compare_views(g, args, {}) == []


def test_symbolic_slice_lengths_print_with_ceiling():
    def f(x, w):
        return sg.sum(sg.sin(sg.reshape(x[::2], (1, -1))) * w)
    g, args = _gradient(f, {"x": ("n",), "w": ()}, {"n": 7})
    assert "ceiling(n/2)" in g.program()
    assert "(n + 1) // 2" in g.text("numpy")        # integer code: a shape needs an int
    want = sg.grad_fn(f, shapes={"x": (7,), "w": ()}).compile("numpy")(*args)
    for got in (evaluate_numpy_text(g, args, {"n": 7}), evaluate_program(g, args, {"n": 7}),
                evaluate_explicit(g, args, {"n": 7})):
        np.testing.assert_allclose(got["x"], want[0], rtol=1e-12)
        np.testing.assert_allclose(got["w"], want[1], rtol=1e-12)


def test_explicit_names_elements_with_brackets_when_taken():
    g, args = _gradient(lambda x, x_0: sg.sum(sg.sin(x * x_0)), {"x": (2,), "x_0": ()})
    assert "x[0]" in str(g.explicit()["x"])
    assert compare_views(g, args, {}) == []


def test_explicit_overflow_is_evaluated_in_high_precision():
    spec = SPECS["softmax"]
    case = next(c for c in spec.cases if c.id == "large_logits")
    g = spec_gradient(spec, case)
    args = spec_inputs(spec, case, g)
    got = evaluate_explicit(g, args, {})
    assert got is not None and all(np.isfinite(v).all() for v in got.values())


def test_explicit_underflow_is_evaluated_in_high_precision():
    """x - log(sum(exp(x))) at x near -900 underflows to +inf in float64, which a tanh
    turns into a finite wrong value: the elements are evaluated with mpmath."""
    def f(x, w):
        return sg.expm1(sg.tanh(sg.mean(sg.log_softmax(x, -1)))) * w
    g, _ = _gradient(f, {"x": (2, 4), "w": ()})
    rng = np.random.default_rng(0)
    args = [-900 + 5 * rng.standard_normal((2, 4)), np.array(0.7)]
    assert compare_views(g, args, {}, views=("explicit",)) == []


def test_explicit_skips_forms_too_large_to_print(monkeypatch):
    g, args = _matvec()
    assert evaluate_explicit(g, args, {}) is not None
    monkeypatch.setattr(views, "MAX_EXPLICIT_TREE", 10)
    assert evaluate_explicit(g, args, {}) is None


def test_known_zero_gradient_broadcasts():
    g, args = _gradient(lambda x, y: sg.sin(x) + 0 * sg.sum(y), {"x": (), "y": (3,)})
    assert "df_dy = np.zeros((3,))  # df/dy, shape (3,)" in g.text("numpy")
    assert compare_views(g, args, {}) == []


# ----- view bugs found by fuzzing (fixed; the one left is a strict xfail) ----------------

def test_a_negated_product_with_a_matmul_keeps_its_parentheses():
    g, args = _gradient(lambda a, W, x: sg.sum(sg.sin(-a * (W @ x))),
                        {"a": (3,), "W": (3, 3), "x": (3,)})
    problems = compare_views(g, args, {}, views=("text",))
    assert not problems, "\n".join(problems) + "\n" + g.text("numpy")


def test_a_zero_array_prints_with_its_shape():
    def f(x, y):
        return sg.sum(sg.logaddexp(sg.broadcast_to(y - y, (2, 3)), x))
    g, args = _gradient(f, {"x": (3,), "y": ()})
    problems = compare_views(g, args, {}, views=("text", "program"))
    assert not problems, "\n".join(problems) + "\n" + g.text("numpy") + "\n" + g.program()


@pytest.mark.xfail(strict=True, reason=(
    "text and explicit views: SymPy evaluates cos(atan2(x, y)) to y/sqrt(x**2 + y**2) in "
    "the closed forms, which is nan at x = y = 0, where the program and the compiled code "
    "compute cos(atan2(0, 0)) = 1: the printed gradient of sin(atan2(x, y)) is nan at the "
    "origin, the gradient is 0"))
def test_known_bug_formula_of_cos_atan2_at_the_origin():
    g = sg.grad_fn(lambda x, y: sg.sin(sg.atan2(x, y)), shapes={"x": (), "y": ()})
    problems = compare_views(g, [np.array(0.0), np.array(0.0)], {})
    assert not problems, "\n".join(problems) + "\n" + g.text("numpy")


def test_explicit_min_of_a_cast():
    def f(x, y, w):
        return sg.sum(sg.minimum(sg.mean(ops.cast(x > y) * x * y), sg.mean(x)) * w)
    g, args = _gradient(f, {"x": (2, 2), "y": (2, 2), "w": ()})
    problems = compare_views(g, args, {}, views=("explicit",))
    assert not problems, "\n".join(problems)


def test_explicit_det_of_a_cast():
    def f(x, y, w):
        v = ops.cast(x > y) * x * y
        return sg.sum(sg.logabsdet(sg.eye(2) + 0.15 * sg.tanh(sg.broadcast_to(v, (2, 2)))) * w)
    g, args = _gradient(f, {"x": (), "y": (2,), "w": ()})
    problems = compare_views(g, args, {}, views=("explicit",))
    assert not problems, "\n".join(problems)


def test_explicit_tanh_of_casts():
    def f(x, t):
        return sg.sum(sg.tanh(-ops.cast(t > 0) * x - ops.cast(t > 1) * x))
    g, args = _gradient(f, {"x": (), "t": ()})
    problems = compare_views(g, args, {}, views=("explicit",))
    assert not problems, "\n".join(problems)


def test_graph_helpers_see_the_whole_gradient():
    g, _ = _matvec()
    nodes = views._graph(g)
    assert {n.op for n in nodes} >= {"matmul", "sin", "cos", "mul"}
    assert len(nodes) == len(topo_order([n for n in list(g.grads) + [g.output]]))
