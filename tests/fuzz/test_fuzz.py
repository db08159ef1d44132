"""The fixed-seed fuzzing subset of the normal suite, and tests of the fuzzer itself.

Every program runs as ``runner.run_one`` does: orders 1 and 2 against torch.autograd,
every other one under hostile names, the edge runs (dtype and shape, float32, integers,
nan/inf, zero sizes), the printed views evaluated, look-alike names refused.

* ``test_program_starting_with``: one program per op in the rule table, the op as its
  first step (``-k tanh`` works), so every rule is fuzzed in every run;
* ``test_random_program``: RANDOM_PROGRAMS more programs over the whole table, fixed seeds;
* ``test_programs_from_eight_threads``: programs traced, compiled and run at once;
* the rest checks the fuzzer: that it catches a wrong rule (also one wrong only at nan),
  that generated programs have the structure the issue asks for (symbolic and concrete
  dims, broadcasting, nesting, reuse), and that every input's domain was read off its
  sampler.

A long campaign: ``python -m tests.fuzz --programs 10000``.
"""
import zlib

import numpy as np
import pytest

import symgrad as sg
from symgrad.diff.rules import RuleTable

from backend_support import require_backend
from rule_specs import SPECS
import rule_specs

from .edges import check_edges
from .names import DIM_POOL, INPUT_POOL, look_alike, nfkc, renamed
from .programs import REAL, Domain, domain_of, generate, graph_ops
from .runner import run_one, run_threaded

RANDOM_PROGRAMS = 350      # with one per op: over 500 programs in every test run

pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"),
              pytest.mark.filterwarnings("ignore:`torch.jit.script`:DeprecationWarning")]


def assert_agrees(outcome):
    assert outcome.status == "ok", "\n" + outcome.report()


# ----- the fixed-seed subset -------------------------------------------------------------

@pytest.mark.parametrize("op", sorted(SPECS))
def test_program_starting_with(op):
    outcome = run_one(zlib.crc32(op.encode()), max_steps=4, first_op=op)
    assert_agrees(outcome)
    assert outcome.program.steps[0].op == op


@pytest.mark.parametrize("seed", range(1_000_000, 1_000_000 + RANDOM_PROGRAMS))
def test_random_program(seed):
    assert_agrees(run_one(seed, max_steps=5))


# The same programs with the gradients compiled for the backends beyond NumPy and torch
# (a jit compile per program): FAST_EXTRA of them in every run, all under ``slow``.
EXTRA_BACKENDS = ("jax",)
FAST_EXTRA = 8


@pytest.mark.parametrize("backend", EXTRA_BACKENDS)
@pytest.mark.parametrize("seed", [
    pytest.param(s, marks=() if s < 1_000_000 + FAST_EXTRA else pytest.mark.slow)
    for s in range(1_000_000, 1_000_000 + RANDOM_PROGRAMS)])
def test_random_program_on(seed, backend):
    pytest.importorskip(backend)
    assert_agrees(run_one(seed, max_steps=5, backends=(backend,)))


@pytest.mark.slow
@pytest.mark.parametrize("backend", EXTRA_BACKENDS)
@pytest.mark.parametrize("op", sorted(SPECS))
def test_program_starting_with_on(op, backend):
    pytest.importorskip(backend)
    assert_agrees(run_one(zlib.crc32(op.encode()), max_steps=4, first_op=op,
                          backends=(backend,)))


def test_programs_from_eight_threads():
    problems = run_threaded(range(2_000_000, 2_000_012), threads=8)
    assert not problems, "\n".join(problems)


# ----- the native backends: the same programs, compiled for each ---------------------------
# One program per op and NATIVE_PROGRAMS random ones in the normal run (every op is also
# compiled natively by test_rules); all RANDOM_PROGRAMS under -m slow. Names, edges
# (float32 dtypes, integers, nan/inf, zero sizes) and threads as for NumPy and torch.

NATIVE_BACKENDS = ["c"]
NATIVE_PROGRAMS = 12


@pytest.mark.slow
@pytest.mark.parametrize("backend", NATIVE_BACKENDS)
@pytest.mark.parametrize("op", sorted(SPECS))
def test_native_program_starting_with(op, backend):
    require_backend(backend)
    outcome = run_one(zlib.crc32(op.encode()), max_steps=4, first_op=op, views=False,
                      backends=(backend,))
    assert_agrees(outcome)


@pytest.mark.parametrize("backend", NATIVE_BACKENDS)
@pytest.mark.parametrize("seed", [pytest.param(s, marks=[] if s < 1_000_000 + NATIVE_PROGRAMS
                                               else [pytest.mark.slow])
                                  for s in range(1_000_000, 1_000_000 + RANDOM_PROGRAMS)])
def test_native_random_program(seed, backend):
    require_backend(backend)
    assert_agrees(run_one(seed, max_steps=5, views=False, backends=(backend,)))


@pytest.mark.parametrize("backend", NATIVE_BACKENDS)
def test_native_programs_from_eight_threads(backend):
    require_backend(backend)
    problems = run_threaded(range(2_000_000, 2_000_012), threads=8, backends=(backend,))
    assert not problems, "\n".join(problems)


def test_suite_runs_over_500_programs():
    assert len(SPECS) + RANDOM_PROGRAMS >= 500


# ----- the fuzzer finds what it should -----------------------------------------------------

WRONG_SIN = "- op: sin(x)\n  x: grad * sin(x)\n  jvp: x_t * sin(x)\n"


def test_a_wrong_rule_is_a_mismatch(monkeypatch):
    (wrong,) = RuleTable().load_text(WRONG_SIN, "wrong.yaml")
    monkeypatch.setitem(sg.rules._rules, "sin", wrong)
    # one step: a longer program may pass sin through something that hides it (seed 1's
    # second step became mse_loss(mean(v0), mean(v0)), whose gradient is 0)
    outcome = run_one(1, max_steps=1, first_op="sin")
    assert outcome.status == "mismatch", outcome.report()
    assert "symgrad and torch.autograd disagree" in outcome.detail


def test_a_rule_that_raises_is_an_error_by_kind(monkeypatch):
    broken = RuleTable().load_text(
        "- op: sin(x)\n  x: grad * solve(x, x)\n  jvp: x_t\n", "broken.yaml")[0]
    monkeypatch.setitem(sg.rules._rules, "sin", broken)
    outcome = run_one(2, first_op="sin", max_steps=1)
    assert outcome.status == "error", outcome.report()
    assert outcome.kind.startswith("check: ShapeError in"), outcome.kind


RELU_WRONG_AT_NAN = "- op: relu(x)\n  x: where(x > 0, grad, 0)\n  jvp: where(x > 0, x_t, 0)\n"


def test_a_rule_wrong_only_at_nan_is_caught_by_the_edge_runs(monkeypatch):
    """where(x > 0, grad, 0) agrees with torch except at nan (torch passes the gradient)."""
    (wrong,) = RuleTable().load_text(RELU_WRONG_AT_NAN, "wrong.yaml")
    monkeypatch.setitem(sg.rules._rules, "relu", wrong)
    found = []
    for seed in range(40):
        program = generate(seed, first_op="relu", max_steps=1)
        found += check_edges(program, seed, modes=("nonfinite",) * 4)
    assert any("nonfinite" in p for p in found), found


def test_a_wrong_dtype_is_caught(monkeypatch):
    from symgrad.codegen.backends.numpy import NumpyBackend
    monkeypatch.setattr(NumpyBackend, "result",
                        lambda self, expr, args: f"_in_dtype(_FLOAT64, {expr})")
    problems = check_edges(generate(5, first_op="tanh", max_steps=1), 5, modes=("float32",))
    assert any("dtype float64, expected float32" in p for p in problems), problems


def test_hostile_names_are_drawn_apart_and_look_alikes_refused():
    rng = np.random.default_rng(0)
    for seed in range(30):
        p = renamed(generate(seed), rng)
        names = [i.name for i in p.inputs] + list(p.dims)
        assert len({nfkc(n) for n in names}) == len(names)
        assert all(n in INPUT_POOL for n in names[:len(p.inputs)])
        assert all(d in DIM_POOL for d in p.dims)
        twin = look_alike(p, rng)
        if twin is not None:
            with pytest.raises(sg.SymgradError, match="same name"):
                sg.grad_fn(twin.function("sg"), shapes=twin.shapes)


def test_a_hang_is_an_error(monkeypatch):
    import time
    monkeypatch.setattr(sg, "check", lambda *a, **k: time.sleep(5))
    outcome = run_one(3, timeout=0.2)
    assert (outcome.status, outcome.kind) == ("error", "timeout")


# ----- programs have the structure the issue asks for --------------------------------------

@pytest.fixture(scope="module")
def programs():
    return [generate(seed) for seed in range(150)]


def test_programs_cover_the_rule_table(programs):
    seen = set()
    for p in programs:
        seen |= graph_ops(p)
    assert len(seen) >= 0.9 * len(sg.rules.names()), sorted(set(sg.rules.names()) - seen)


def test_programs_mix_symbolic_and_concrete_dims(programs):
    symbolic = [p for p in programs if any(isinstance(d, str) for i in p.inputs
                                           for d in i.shape)]
    mixed = [p for p in symbolic if any(isinstance(d, int) for i in p.inputs for d in i.shape)]
    shared = [p for p in symbolic
              if any(sum(d == n for i in p.inputs for d in i.shape) >= 2 for n in p.dims)]
    assert len(symbolic) > 30 and len(mixed) > 20 and len(shared) > 20


def test_programs_are_dags_with_reuse_nesting_and_broadcasting(programs):
    def uses(p):
        count = {}
        for s in p.steps:
            for o in s.operands:
                count[o.value] = count.get(o.value, 0) + 1
        return count

    reused = [p for p in programs if any(n >= 2 for n in uses(p).values())]
    nested = [p for p in programs
              if any(p.values[o.value][0] == "step" for s in p.steps for o in s.operands)]
    deep = [p for p in programs if depth(p) >= 3]
    broadcast = [p for p in programs if any(o.broadcast for s in p.steps for o in s.operands)]
    adapted = [p for p in programs
               if any(o.domain.kind != "real" for s in p.steps for o in s.operands)]
    assert len(reused) > 30 and len(nested) > 60 and len(deep) > 10
    assert len(broadcast) > 20 and len(adapted) > 20


def depth(p):
    d = []
    for kind, k in p.values:
        d.append(0 if kind == "input" else
                 1 + max((d[o.value] for o in p.steps[k].operands), default=0))
    return max(d)


def test_a_program_prints_readably_and_runs_in_both_modes():
    p = generate(7)
    text = p.describe()
    assert text.startswith("# program seed=7") and "loss = " in text
    for step in p.steps:
        assert f"{step.op}[{step.case}]" in text
    rng = np.random.default_rng(0)
    import torch
    args = [p.sample(i.name, tuple(p.dims.get(d, d) for d in i.shape), rng) for i in p.inputs]
    value, _ = p.run("torch", [torch.tensor(a) for a in args])
    traced = p.function("sg")(*[sg.symbol(i.name, i.shape) for i in p.inputs])
    assert isinstance(traced, sg.Tensor) and traced.shape == ()
    assert value.shape == ()


# ----- domains, read off the samplers --------------------------------------------------------

def test_every_sampler_has_a_domain():
    for spec in SPECS.values():
        for case in spec.cases:
            for name in case.shapes:
                assert isinstance(domain_of(spec.sampler(case, name)), Domain)


@pytest.mark.parametrize("op, case, name, check", [
    ("log", "scalar", "x", lambda d: d.kind == "interval" and 0 < d.lo < d.hi),
    ("asin", "scalar", "x", lambda d: d.kind == "interval" and -1 < d.lo < d.hi < 1),
    ("div", "scalar", "y", lambda d: d.kind == "interval" and d.lo > 0),
    ("logdet", "matrix", "x", lambda d: d.kind == "spd"),
    ("inverse", "matrix", "x", lambda d: d.kind == "near_identity"),
    ("cross_entropy", "indices", "t", lambda d: d.kind == "fresh"),
    ("cross_entropy", "probabilities", "t", lambda d: d.kind == "simplex"),
    ("maximum", "ties", "x", lambda d: d == REAL),
    ("tanh", "scalar", "x", lambda d: d == REAL),
])
def test_domains(op, case, name, check):
    spec = SPECS[op]
    c = next(c for c in spec.cases if c.id == case)
    d = domain_of(spec.sampler(c, name))
    assert check(d), d


def test_adapted_values_stay_in_the_domain():
    """The adapters map any real input into the sampler's domain."""
    import torch
    from .programs import GLUE, adapt
    v = torch.tensor(np.random.default_rng(0).standard_normal((4, 4)) * 30)
    fns = GLUE["torch"]
    log_x = adapt(v, domain_of(rule_specs.POSITIVE), fns, 4)
    assert bool((log_x > 0).all())
    unit = adapt(v, domain_of(rule_specs.UNIT), fns, 4)
    assert bool((unit.abs() < 1).all())
    spd = adapt(v, domain_of(rule_specs.spd), fns, 4)
    assert torch.allclose(spd, spd.T) and bool((torch.linalg.eigvalsh(spd) >= 1).all())
    near = adapt(v, domain_of(rule_specs.well_conditioned), fns, 4)
    assert float(torch.linalg.svdvals(near).min()) > 0.3
    rows = adapt(v, domain_of(rule_specs.probabilities), fns, 4)
    assert torch.allclose(rows.sum(-1), torch.ones(4, dtype=rows.dtype))
