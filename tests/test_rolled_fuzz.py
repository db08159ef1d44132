"""Fuzzing rolled loops (``core.loops``, ``diff.rolled``, ``codegen.rolled``): random looped
programs (``tests/rolled_programs.py``) compiled for NumPy and torch, with and without the
value, against ``torch.autograd.grad`` in float64 on the same function (sg ops compute on
torch tensors). A failing seed prints its program, ready to paste
(``python tests/rolled_programs.py SEED`` prints it too).

Only programs whose loop rolls are compiled here: one that does not roll compiles to the
straight-line code the rest of the suite tests. Also here: the results' types (torch
returns tensors, NumPy float64), the loop rolls where it must (a long regular loop, the
thresholds), float32, dims of size 0 and 1, names, standalone source, one test per bug
found in review (``test_regression_*``), and loops that once did not roll.
"""
import functools

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.api.grad import make_inputs, trace
from symgrad.core.graph import topo_order
from symgrad.core.loops import MIN_NODES, MIN_STEPS, find_loop

from rolled_programs import generate

ROLLED = "for _lk in range("
# seeds 666 and 748 (of the slow tier) catch the in-place accumulation into a head buffer
# (test_regression_the_tail_does_not_accumulate_into_a_head_buffer)
SEEDS = [*range(100), 666, 748]
SLOW_SEEDS = [s for s in range(100, 1000) if s not in SEEDS]


@functools.cache
def traced(seed):
    """(program, its GradFn or None, nodes in its trace): None when the trace has no
    loop to roll; its gradient then is the straight-line code the rest of the suite
    tests, and building it (one sweep over thousands of nodes) is most of the time."""
    prog = generate(seed)
    order = topo_order([trace(prog.fn, make_inputs(prog.fn, prog.shapes))])
    if find_loop(order) is None:
        return prog, None, len(order)
    return prog, sg.grad_fn(prog.fn, shapes=prog.shapes, wrt=prog.wrt), len(order)


def reference(prog, g, args):
    """torch.autograd of ``prog.fn`` at ``args``: (value, gradients per ``g.wrt``); a
    symmetric input enters as (X + Xᵀ)/2."""
    names = [x.name for x in g.inputs]
    wrt = [x.name for x in g.wrt]
    symmetric = {x.name for x in prog.inputs if x.symmetric}
    tensors = []
    for a, n in zip(args, names):
        if isinstance(a, np.ndarray) and a.dtype.kind in "ib":
            tensors.append(torch.tensor(a))
        else:
            tensors.append(torch.tensor(a, dtype=torch.float64, requires_grad=n in wrt))
    used = [(t + t.T) / 2 if n in symmetric else t for t, n in zip(tensors, names)]
    out = prog.fn(*used)
    sources = [t for t, n in zip(tensors, names) if n in wrt]
    if out.requires_grad:
        grads = torch.autograd.grad(out, sources, allow_unused=True, materialize_grads=True)
    else:
        grads = [torch.zeros_like(t) for t in sources]
    return out.detach().numpy(), [r.detach().numpy() for r in grads]


def as_backend(args, backend, dtype=torch.float64):
    if backend == "numpy":
        return args
    return [torch.tensor(a) if isinstance(a, np.ndarray) and a.dtype.kind in "ib"
            else torch.tensor(a, dtype=dtype) for a in args]


def check_types(results, shapes, backend, dtype=None):
    """Each result is what the backend returns for a float gradient: a torch tensor of
    the arguments' dtype, or a NumPy float64 array / Python or NumPy float."""
    for r, shape in zip(results, shapes):
        if backend == "torch":
            assert isinstance(r, torch.Tensor), f"torch backend returned {type(r).__name__}"
            assert r.dtype == (dtype or torch.float64), r.dtype
        elif shape:
            assert isinstance(r, np.ndarray), type(r).__name__
            assert r.dtype == (dtype or np.float64), r.dtype
        else:
            assert isinstance(r, (float, np.floating)), \
                f"numpy backend returned {type(r).__name__} for a scalar"
            if dtype is not None:
                assert np.asarray(r).dtype == dtype


def close(ours, ref, rtol=1e-9, atol=1e-11):
    assert len(ours) == len(ref)
    for k, (o, r) in enumerate(zip(ours, ref)):
        o = o.detach().numpy() if isinstance(o, torch.Tensor) else np.asarray(o)
        assert o.shape == np.shape(r), (k, o.shape, np.shape(r))
        scale = max(1.0, float(np.max(np.abs(r)))) if np.size(r) else 1.0
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol * scale, err_msg=f"output {k}")


def check_program(prog, g, plain=("numpy", "torch")):
    """Compare ``g``'s compiled gradients (with the value, for both backends; without it
    for the ``plain`` ones) with torch.autograd."""
    args = prog.arguments()
    value, ref = reference(prog, g, args)
    shapes = [prog.shape_of(next(x for x in prog.inputs if x.name == w.name))
              for w in g.wrt]
    for backend in ("numpy", "torch"):
        bargs = as_backend(args, backend)
        got_value, grads = g.compile(backend, with_value=True)(*bargs)
        check_types([got_value] + list(grads), [()] + shapes, backend)
        close([got_value], [value])
        close(grads, ref)
        if backend in plain:
            grads = g.compile(backend)(*bargs)
            check_types(grads, shapes, backend)
            close(grads, ref)


def rolled(g):
    """Whether ``g`` compiles its loop rolled; ``g.source`` says so too (cheap then: the
    source of a straight-line program of thousands of ops is not)."""
    plan = g._rolled_plan is not None
    if plan:
        assert ROLLED in g.source("numpy")
    return plan


def must_roll(prog, nodes):
    """Whether the loop must roll: one loop of identical steps with one carry (see the
    limitation tests at the end for loops of more carries), long enough by a margin
    (the first copy and the last are left out, and a phase may cost one more)."""
    if not prog.regular or prog.steps < MIN_STEPS + 4 or prog.carries > 1:
        return False
    per_step = nodes / prog.steps       # an over-estimate: the head and tail count
    return (prog.steps - 4) * per_step * 0.7 >= MIN_NODES


def describe(prog):
    return (f"seed {prog.seed} ({', '.join(prog.features)}), shapes={prog.shapes}, "
            f"wrt={prog.wrt}, dims={prog.dims}\n{prog.source}")


def run_seed(seed, plain):
    prog, g, nodes = traced(seed)
    try:
        if g is not None:
            loop = find_loop(topo_order([g.output]))
            assert loop.steps >= MIN_STEPS and loop.steps * loop.period >= MIN_NODES
            assert loop.end <= len(loop.order) and len(loop.body) == loop.period
        if g is not None and rolled(g):
            check_program(prog, g, plain)
        elif must_roll(prog, nodes):
            raise AssertionError("a long regular loop did not roll")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{describe(prog)}") from None


@pytest.mark.parametrize("seed", SEEDS)
def test_random_loop_matches_autograd(seed):
    run_seed(seed, plain=("numpy", "torch")[seed % 2])


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_random_loop_matches_autograd_long(seed):
    run_seed(seed, plain=("numpy", "torch"))


# -- dtypes and sizes, on the programs that roll --------------------------------------

def _rolled_programs(seeds, want=lambda prog: True, limit=12):
    """Up to ``limit`` programs of ``seeds`` that roll (and that ``want``), with their
    GradFns."""
    out = []
    for seed in seeds:
        if len(out) < limit:
            prog, g, _ = traced(seed)
            if g is not None and want(prog) and rolled(g):
                out.append((prog, g))
    return out


@pytest.fixture(scope="module")
def rolled_sample():
    return _rolled_programs(range(40))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_float32_arguments_give_float32_gradients(rolled_sample, backend):
    """float32 arguments: float32 results, close to the float64 ones."""
    assert len(rolled_sample) >= 10
    for prog, g in rolled_sample:
        args = prog.arguments()
        ref_value, ref = g.compile(backend, with_value=True)(*as_backend(args, backend))
        if backend == "numpy":
            args32 = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                      else np.float32(a) if isinstance(a, float) else a for a in args]
            dtype = np.float32
        else:
            args32 = as_backend(args, backend, torch.float32)
            dtype = torch.float32
        value, grads = g.compile(backend, with_value=True)(*args32)
        shapes = [prog.shape_of(next(x for x in prog.inputs if x.name == w.name))
                  for w in g.wrt]
        try:
            check_types([value] + list(grads), [()] + shapes, backend, dtype)
            close([value] + list(grads), [np.asarray(r) if backend == "numpy" else r.numpy()
                                         for r in [ref_value] + list(ref)],
                  rtol=2e-3, atol=2e-4)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{describe(prog)}") from None


def _symbolic(prog):
    return any(isinstance(d, str) for x in prog.inputs for d in x.shape)


@pytest.mark.parametrize("size", [0, 1])
def test_symbolic_dims_of_size_zero_and_one(size):
    """The same compiled function at n (and m, l) = 0 or 1: as torch.autograd there, or
    an EvaluationError where torch cannot compute it either (a max over nothing)."""
    checked = 0
    for prog, g in _rolled_programs(range(40, 100), _symbolic, limit=10):
        dims = {d: size for d in prog.dims}
        if "l" in dims:
            dims["l"] = max(size, 1)         # ids index a table: it holds a value
        args = prog.arguments(dims)
        try:
            g.compile("numpy")(*args)
        except sg.ArgumentError as e:      # x[1:], x[:1] need n >= 1: refused by design
            assert "give arguments with larger dims" in str(e)
            continue
        except sg.EvaluationError:
            pass
        try:
            value, ref = reference(prog, g, args)
        except (RuntimeError, IndexError):
            with pytest.raises(sg.EvaluationError):
                g.compile("numpy")(*args)
            continue
        try:
            for backend in ("numpy", "torch"):
                got_value, grads = g.compile(backend, with_value=True)(*as_backend(args, backend))
                close([got_value], [value])
                close(grads, ref)
        except AssertionError as e:
            raise AssertionError(f"{e}\ndims={dims}\n{describe(prog)}") from None
        checked += 1
    assert checked >= (1 if size == 0 else 5)


# -- regressions: one test per bug found in review -----------------------------------

def _autograd(f, args, shapes=None):
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in args]
    out = f(*tensors)
    return out.detach().numpy(), [g.numpy() for g in torch.autograd.grad(out, tensors)]


def _check_both(f, args, shapes=None):
    g = sg.grad_fn(f, shapes=shapes)
    assert rolled(g)
    value, ref = _autograd(f, args)
    arg_shapes = [np.shape(a) for a in args]
    for backend in ("numpy", "torch"):
        got_value, grads = g.compile(backend, with_value=True)(*as_backend(args, backend))
        check_types([got_value] + list(grads), [()] + arg_shapes, backend)
        close([got_value], [value])
        close(grads, ref)
        grads = g.compile(backend)(*as_backend(args, backend))
        check_types(grads, arg_shapes, backend)
        close(grads, ref)


def test_regression_a_gradient_equal_to_the_last_carry():
    """d/da of x·a in the last copy is the last carry itself, a bare symbol the head's VJP
    reads after the backward loop, which had unpacked each step's saved carry into the
    same variable _lc0: d/da came out from the first carry (0.2704 for 0.000877)."""
    def f(x, a):
        for _ in range(100):
            x = x * a + sg.sin(x) * 0.1
        return x
    _check_both(f, [0.3, 0.8])

    def g(x, a):                    # the same with arrays
        for _ in range(100):
            x = x * a + sg.sin(x) * 0.1
        return sg.sum(x)
    _check_both(g, [np.array([0.3, -0.5, 0.7]), np.array([0.8, 0.5, -0.6])],
                {"x": ("n",), "a": ("n",)})


def test_regression_an_accumulator_has_a_constant_cotangent():
    """s = s + term: the tail's cotangent of s is the constant 1 and the backward loop
    passes it on unchanged, so d/ds0 is that constant. It was printed as the Python int
    1: NumPy's return line then did ``1[()]`` (TypeError, for arrays on every call, for
    scalars in the fallback), torch returned an int, and torch functions given it
    (broadcast_to, reshape) raised TypeError."""
    def acc(x, s):
        for _ in range(60):
            x = sg.tanh(x) * 0.9 + 0.1
            s = s + sg.sum(sg.sin(x)) * 0.1
        return s
    _check_both(acc, [np.array([0.3, -0.2]), 0.5], {"x": ("n",)})

    def acc_scalar(x, s):
        for _ in range(60):
            x = sg.tanh(x) * 0.9 + 0.1
            s = s + sg.sin(x) * 0.1
        return s
    _check_both(acc_scalar, [0.3, 0.5])

    def acc_mean(x, s):
        for _ in range(60):
            x = sg.tanh(x) * 0.9 + 0.1
            s = s + sg.mean(sg.sin(x)) * 0.1
        return s
    _check_both(acc_mean, [np.array([[0.3, -0.2], [0.1, 0.4]]), 0.5], {"x": ("m", "n")})


def test_regression_an_accumulator_in_the_numpy_fallback():
    """The scalar program's NumPy fallback (math.sqrt(-1) raised) returned ``1[()]``; with
    the constant printed as the math backend's float (1.0), the fallback, translated
    from the math lines, kept the Python float and returned ``1.0[()]``."""
    def acc(x, s):
        for _ in range(60):
            x = sg.sqrt(x) * 0.9 + 0.1
            s = s + sg.sin(x) * 0.1
        return s
    g = sg.grad_fn(acc)
    assert rolled(g)
    with np.errstate(invalid="ignore"):
        dx, ds = g.compile("numpy")(-1.0, 0.5)
    assert np.isnan(dx) and ds == 1.0 and isinstance(ds, (float, np.floating))


def test_regression_the_tail_does_not_accumulate_into_a_head_buffer():
    """The tail's VJP sums h (a head value) and a gradient slice (z[0]): emit's
    scatter_accumulations, counting uses within one part only, chose h's buffer for
    ``_t0[0,] += 3`` though the head's VJP reads h after it (d/dx[0], d/dy[0] wrong
    without ``with_value``; with it, the tail's own forward reads h twice and nothing is
    written in place)."""
    def f(x, y, z, w):
        h = x * y
        c = h * h * 0.1
        k = sg.sin(w)
        for _ in range(60):
            c = c + 0.01 * sg.tanh(c * k)
        return sg.sum(c) + sg.sum(z * h) + z[0] * 3.0
    rng = np.random.default_rng(0)
    _check_both(f, [rng.standard_normal(3) * 0.5 for _ in range(4)],
                {n: ("n",) for n in "xyzw"})


def test_a_bool_carry_and_a_scalar_init_of_a_vector_carry():
    """A mask carried from step to step (no cotangent); a carry whose init broadcasts
    (the copy reading the scalar init is left to the head)."""
    def f(x, a, m):
        for _ in range(60):
            x = sg.where(m, sg.tanh(x * a), x * 0.9) + 0.1
            m = sg.logical_and(m, x > -0.5)
        return sg.sum(x)
    shapes = {"x": ("n",), "a": ("n",), "m": sg.TensorSpec(("n",), dtype="bool")}
    g = sg.grad_fn(f, shapes=shapes)
    assert rolled(g)
    X, A, M = np.array([0.3, -0.4, 0.8]), np.array([0.5, -0.9, 0.7]), np.array([1, 1, 0], bool)
    ts = [torch.tensor(X, requires_grad=True), torch.tensor(A, requires_grad=True)]
    ref = [r.numpy() for r in torch.autograd.grad(f(*ts, torch.tensor(M)), ts)]
    close(g.compile("numpy")(X, A, M), ref)
    close(g.compile("torch")(torch.tensor(X), torch.tensor(A), torch.tensor(M)), ref)

    def h(a, b):
        x = b[0] * 0.5
        for _ in range(60):
            x = sg.tanh(x * a + 0.1) * 0.9
        return sg.sum(x)
    _check_both(h, [np.array([0.5, -0.9, 0.7]), np.array([0.2, 0.4])],
                {"a": ("n",), "b": (2,)})


def test_standalone_source_runs():
    """``g.source(backend)`` is a module of its own (arrays as literals): run it, for the
    first programs that roll."""
    ran = 0
    for prog, g in _rolled_programs(range(40), limit=5):
        args = prog.arguments()
        for backend in ("numpy", "torch"):
            namespace = {}
            exec(compile(g.source(backend, with_value=True), "<standalone>", "exec"),
                 namespace)
            fn = namespace[next(k for k in namespace if k.startswith("grad_"))]
            expect = g.compile(backend, with_value=True)(*as_backend(args, backend))
            got = fn(*as_backend(args, backend))
            close([got[0]] + list(got[1]),
                  [np.asarray(e) if backend == "numpy" else e.numpy()
                   for e in [expect[0]] + list(expect[1])], rtol=0, atol=0)
        ran += 1
    assert ran == 5


@pytest.mark.parametrize("extra", [3, 5])
def test_loops_around_the_thresholds(extra):
    """Bodies of 23 and 31 ops run 7 to 14 times. The first copy and the last are not
    rolled, so K steps roll K - 2 copies: with 23 ops the node threshold decides (9 x 23
    >= 200 > 8 x 23), with 31 the step threshold (8 copies); every one is right."""
    def make(k):
        def f(x, y):
            for _ in range(k):
                t = sg.tanh(x * y) * 0.5 + sg.sin(x) * 0.3 + sg.cos(y * x) * 0.1 + 0.05
                for j in range(extra):
                    t = t + sg.sin(t * (0.1 + 0.01 * j)) * 0.1
                x = t
            return x
        return f
    period = find_loop(topo_order([sg.grad_fn(make(14)).output])).period
    for k in range(7, 15):
        f = make(k)
        g = sg.grad_fn(f)
        expect = k - 2 >= MIN_STEPS and (k - 2) * period >= MIN_NODES
        assert rolled(g) == expect, (k, period)
        value, ref = _autograd(f, [0.4, 0.7])
        for backend in ("numpy", "torch"):
            got_value, grads = g.compile(backend, with_value=True)(
                *as_backend([0.4, 0.7], backend))
            close([got_value], [value])
            close(grads, ref)


def test_generated_names_do_not_clash_with_the_users():
    """Parameters and dims spelled like the rolled code's own names (_lc0, _lk, _ls, _lg0,
    _lr0, _lv0, _t0, _f0, _c0, _dt, _lfwd, _scan, args)."""
    def f(_lc0, _lk, _ls, _lg0, _lr0, _lv0, _t0, _f0, _c0, _dt, _lfwd, _scan, args):
        for _ in range(60):
            _lc0 = (sg.tanh(_lc0 * _lk + _ls) * 0.9 + _lg0 * _lr0 * 0.1
                    + sg.sin(_lv0 * _t0) * _f0 * 0.1 + _c0 * _dt * 0.01
                    + _lfwd * _scan * args * 0.01)
        return sg.sum(_lc0)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(3) * 0.5, rng.standard_normal(3) * 0.5] + [
        float(rng.standard_normal() * 0.5) for _ in range(11)]
    _check_both(f, args, {"_lc0": ("_r0",), "_lk": ("_r0",)})


@pytest.mark.slow
def test_jax_backend_rolls_too():
    """The JAX backend runs rolled loops with jax.lax.scan: a few fuzz programs."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    for prog, g in _rolled_programs(range(14), limit=6):
        args = prog.arguments()
        value, ref = reference(prog, g, args)
        got_value, grads = g.compile("jax", with_value=True)(*args)
        try:
            close([np.asarray(got_value)], [value])
            close([np.asarray(x) for x in grads], ref)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{describe(prog)}") from None


# -- loops that could roll and do not (no wrong result: time and code size only) -------

def _code_grows(make):
    """Whether the compiled source of ``make(K)`` grows with K: a loop not rolled, or
    rolled only in part (the module docstring of codegen.rolled: the code is as long as
    one copy of the body, whatever the number of steps)."""
    sizes = [len(sg.grad_fn(make(k)).source("numpy")) for k in (60, 120)]
    return sizes[1] > sizes[0] + 200


def test_the_code_does_not_grow_with_the_steps():
    def make(k):
        def f(x, y):
            for _ in range(k):
                x = sg.tanh(x * y) * 0.9 + 0.1
            return x
        return f
    assert not _code_grows(make)


def test_an_accumulator_read_last_rolls():
    """The copies are taken in the order the trace made them (one iteration together),
    so an accumulator whose sum reads it last (s = term + s) rolls with its chain."""
    def make(k):
        def f(x, s):
            for _ in range(k):
                x = sg.tanh(x) * 0.9 + 0.1
                s = sg.sin(x) * 0.1 + s
            return s
        return f
    assert not _code_grows(make)


def test_a_lag_two_recurrence_rolls():
    """x, xp = f(x, xp), x reads two steps back: the period is tried at twice its length."""
    def make(k):
        def f(x, y):
            xp = y
            for _ in range(k):
                x, xp = sg.tanh(xp * 0.3 + sg.sin(x) * 0.5), x
            return x
        return f
    assert not _code_grows(make)


def test_independent_chains_updated_by_one_loop_roll_together():
    def make(k):
        def f(x, y):
            for _ in range(k):
                x = sg.tanh(x) * 0.9 + 0.1
                y = sg.sin(y) * 0.9 + 0.1
            return x + y
        return f
    assert not _code_grows(make)
