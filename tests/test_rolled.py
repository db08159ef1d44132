"""Rolled loops: a function whose trace repeats a body many times compiles to code that
runs the body and its VJP in loops (``core.loops``, ``diff.rolled``, ``codegen.rolled``;
Python loops for NumPy and torch, ``jax.lax.scan`` for JAX, C loops for the C backend's
programs of scalars).

Every case runs the same function on torch tensors (sg ops compute on them) and compares
``torch.autograd.grad`` in float64 with the compiled NumPy, torch, JAX and C gradients, and checks
that the compiled code did roll the loop (``for _lk in range(`` in its source) or, for the
cases that must not roll, that it did not.
"""
import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.core.graph import topo_order
from symgrad.core.loops import find_loop

ROLLED = "for _lk in range("


def chain(x, y):
    for _ in range(300):
        x = sg.sin(x) * x + sg.cos(y) * x
    return x


def coupled(x, y, a, b):
    for _ in range(80):
        x, y = x * sg.cos(y) + a, y * sg.sin(x) - b * 0.1
    return x * y + a ** 2


def swap(a, b, c):
    for _ in range(120):
        a, b = b, sg.tanh(a + c * b)
    return a - 2.0 * b


def recurrent(W, b, h):
    for _ in range(100):
        h = sg.tanh(W @ h + b)
    return sg.sum(h ** 2)


def gram_invariant(W, x):
    M = W.T @ W * 0.1
    for _ in range(80):
        x = sg.sin(M @ x) + x * 0.5
    return sg.sum(x)


def masks(x, a, b):
    for _ in range(100):
        x = sg.where(x > 0, x * a, x * b) + 0.1 * sg.tanh(x)
    return sg.sum(x ** 2)


def reduce_in_loop(v, x, alpha):
    s = 0.0 * alpha
    for _ in range(70):
        s = s + sg.sum(v * x)
        x = x * alpha + sg.exp(-x * x)
    return s + sg.sum(x)


def head_and_tail(x, y, z):
    w = sg.exp(y) * z
    for _ in range(100):
        x = sg.tanh(x * w + y)
    return x * z + y ** 2 * w


def mid_read(x, y):
    mid = None
    for k in range(200):
        x = sg.sin(x) * y + x * 0.9
        if k == 90:
            mid = x
    return x + 3.0 * mid


def one_odd_step(x, y):
    for k in range(200):
        x = sg.sin(x) * (2.0 if k == 77 else 1.5) + y * x * 0.1
    return x


def symmetric(A, x):
    for _ in range(80):
        x = sg.tanh(A @ x) + 0.5 * x
    return sg.sum(x * x)


def with_ids(w, x, ids):
    g = w[ids]
    for _ in range(80):
        x = sg.tanh(x * g) + 0.3 * x
    return sg.sum(x)


def dead_final(x, y):
    for _ in range(100):
        x = sg.sin(x) + 0.5 * x * y
    return sg.sum(sg.where(x > 0, y, -y))


CASES = {
    # name: (function, shapes, sizes of the symbolic dims, wrt)
    "chain": (chain, {}, {}, None),
    "coupled": (coupled, {}, {}, None),
    "swap": (swap, {}, {}, None),
    "recurrent": (recurrent, {"W": ("n", "n"), "b": ("n",), "h": ("n",)}, {"n": 5}, None),
    "gram_invariant": (gram_invariant, {"W": ("m", "n"), "x": ("n",)}, {"m": 4, "n": 3},
                       None),
    "masks": (masks, {"x": ("n",)}, {"n": 7}, None),
    "reduce_in_loop": (reduce_in_loop, {"v": ("n",), "x": ("n",)}, {"n": 6}, None),
    "head_and_tail": (head_and_tail, {}, {}, None),
    "wrt_subset": (head_and_tail, {}, {}, ["x", "z"]),
    "mid_read": (mid_read, {}, {}, None),
    "one_odd_step": (one_odd_step, {}, {}, None),
    "symmetric": (symmetric, {"A": sg.TensorSpec(("n", "n"), symmetric=True), "x": ("n",)},
                  {"n": 4}, None),
    "with_ids": (with_ids, {"w": ("v",), "x": ("n",), "ids": sg.TensorSpec(("n",),
                                                                            dtype="int64")},
                 {"v": 5, "n": 6}, None),
    "dead_final": (dead_final, {"x": ("n",)}, {"n": 4}, ["x", "y"]),
}


POINTS = {chain: [1.0, 1.2]}   # the chain's basin of a fixed point: finite for any K


def _arguments(f, shapes, dims, seed=0):
    import inspect
    if f in POINTS:
        return list(POINTS[f])
    rng = np.random.default_rng(seed)
    out = []
    for name in inspect.signature(f).parameters:
        spec = shapes.get(name, ())
        shape = tuple(d if isinstance(d, int) else dims[str(d)]
                      for d in getattr(spec, "shape", spec))
        if getattr(spec, "dtype", None) == "int64":
            out.append(rng.integers(0, dims["v"], shape))
            continue
        value = rng.standard_normal(shape) * 0.5 if shape else float(rng.standard_normal()) * 0.5
        if getattr(spec, "symmetric", False):
            value = (value + value.T) / 2
        out.append(value)
    return out


def _reference(f, args, wrt_names, names, symmetric=()):
    """torch.autograd of ``f``; an input declared symmetric enters as (X + Xᵀ)/2, whose
    gradient is the symmetric one symgrad gives (README, "symmetric matrix input")."""
    tensors = [torch.tensor(a, dtype=torch.float64, requires_grad=n in wrt_names)
               if not (isinstance(a, np.ndarray) and a.dtype.kind == "i")
               else torch.tensor(a) for a, n in zip(args, names)]
    used = [(t + t.T) / 2 if n in symmetric else t for t, n in zip(tensors, names)]
    out = f(*used)
    grads = torch.autograd.grad(out, [t for t, n in zip(tensors, names) if n in wrt_names],
                                allow_unused=True, materialize_grads=True)
    return out.detach().numpy(), [g.numpy() for g in grads]


def _close(ours, ref, rtol=1e-9, atol=1e-11):
    assert len(ours) == len(ref)
    for o, r in zip(ours, ref):
        o = o.detach().numpy() if isinstance(o, torch.Tensor) else np.asarray(o)
        assert o.shape == np.shape(r)
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)


@pytest.fixture(scope="module", params=list(CASES))
def case(request):
    f, shapes, dims, wrt = CASES[request.param]
    g = sg.grad_fn(f, shapes=shapes, wrt=wrt)
    return request.param, f, shapes, dims, g


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax", "c"])
def test_rolled_gradient_matches_autograd(case, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    if backend == "c":
        pytest.importorskip("cffi")
    name, f, shapes, dims, g = case
    args = _arguments(f, shapes, dims)
    names = [x.name for x in g.inputs]
    symmetric = [n for n, spec in shapes.items() if getattr(spec, "symmetric", False)]
    value, ref = _reference(f, args, [x.name for x in g.wrt], names, symmetric)
    if backend == "torch":
        args = [torch.tensor(a, dtype=torch.float64) if np.asarray(a).dtype.kind == "f"
                else torch.tensor(a) for a in args]
    compiled = g.compile(backend)
    _close(compiled(*args), ref)
    got_value, grads = g.compile(backend, with_value=True)(*args)
    _close([got_value], [value])
    _close(grads, ref)


def test_the_loop_is_rolled(case):
    name, f, shapes, dims, g = case
    assert ROLLED in g.source("numpy"), name


def test_views_see_the_whole_gradient(case):
    """Views differentiate the whole trace: op counts, the program, the formulas' graph."""
    name, f, shapes, dims, g = case
    fwd, total = g.op_counts()
    assert total > fwd > 200
    assert len(g.grads) == len(g.wrt)


def test_float32_arguments_give_float32_gradients():
    g = sg.grad_fn(recurrent, shapes=CASES["recurrent"][1])
    args = [a.astype(np.float32) for a in _arguments(recurrent, CASES["recurrent"][1], {"n": 5})]
    out = g.compile("numpy")(*args)
    assert all(o.dtype == np.float32 for o in out)
    ref = g.compile("numpy")(*[a.astype(np.float64) for a in args])
    _close(out, [r for r in ref], rtol=1e-4, atol=1e-5)


def test_symbolic_dims_take_any_size_including_zero():
    g = sg.grad_fn(recurrent, shapes=CASES["recurrent"][1])
    fn = g.compile("numpy")
    for n in (0, 1, 3, 8):
        args = _arguments(recurrent, CASES["recurrent"][1], {"n": n}, seed=n)
        _, ref = _reference(recurrent, args, ["W", "b", "h"], ["W", "b", "h"])
        _close(fn(*args), ref)


def test_scalar_loops_fall_back_to_numpy_where_math_raises():
    """math.sqrt(-1) raises; the NumPy code then gives nan as torch does."""
    def f(x, y):
        for _ in range(100):
            x = sg.sqrt(x) * y + 0.5 * x
        return x
    g = sg.grad_fn(f)
    assert ROLLED in g.source("numpy")
    with np.errstate(invalid="ignore"):
        got = g.compile("numpy")(-1.0, 0.5)
    tx = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(f(tx, ty), [tx, ty])
    np.testing.assert_equal(np.isnan(got), [bool(torch.isnan(r)) for r in ref])


def test_short_loops_stay_straight_line():
    def f(x, y):
        for _ in range(5):
            x = sg.sin(x) * x + sg.cos(y) * x
        return x
    g = sg.grad_fn(f)
    assert ROLLED not in g.source("numpy")
    assert find_loop(topo_order([g.output])) is None


def test_the_loop_found_in_a_chain():
    """The chain's copies: one carry (x), one invariant (cos y); the first user step
    (which computes cos y) and the last copy (which the rest reads) are not rolled."""
    g = sg.grad_fn(chain)
    loop = find_loop(topo_order([g.output]))
    assert loop.period == 4
    assert len(loop.carries) == 1
    assert [n.op for n in loop.outside] == ["cos"]
    assert 295 <= loop.steps <= 298


def test_a_custom_function_in_the_body():
    class Cube(sg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    def f(x, y):
        for _ in range(100):
            x = sg.tanh(Cube.apply(x) * y) + 0.5 * x
        return x

    g = sg.grad_fn(f)   # each application has its own rule: the copies differ, no roll
    tx = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(0.8, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(f(tx, ty), [tx, ty])
    _close(g.compile("numpy")(0.3, 0.8), [r.numpy() for r in ref])


def test_non_differentiable_ops_in_the_body():
    def f(x):
        for _ in range(100):
            x = sg.sign(x) * 0.1 + sg.sin(x)
        return x
    g = sg.grad_fn(f)
    assert ROLLED in g.source("numpy")
    tx = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    (ref,) = torch.autograd.grad(f(tx), [tx])
    _close(g.compile("numpy")(0.7), [ref.numpy()])


def test_an_op_without_a_rule_is_refused_by_grad_fn():
    from symgrad.diff import rules as rule_table
    def f(x):
        for _ in range(100):
            x = sg.sin(x) * 0.5 + x
        return x
    original = rule_table.rules.get
    try:
        rule_table.rules.get = lambda op: None if op == "sin" else original(op)
        with pytest.raises(sg.UnsupportedOpError, match="no derivative rule for op 'sin'"):
            sg.grad_fn(f)
    finally:
        rule_table.rules.get = original


def test_scalar_loops_are_one_c_function_with_loops():
    pytest.importorskip("cffi")
    g = sg.grad_fn(chain)
    fn = g.compile("c")
    assert "for (long k = 0; k <" in fn.__symgrad_c_source__
    assert fn.__symgrad_c_source__.count("sin(") < 10
    tx = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(1.2, dtype=torch.float64, requires_grad=True)
    ref = torch.autograd.grad(chain(tx, ty), [tx, ty])
    _close(fn(1.0, 1.2), [r.numpy() for r in ref])
    _close(fn(np.float64(1.0), np.float64(1.2)), [r.numpy() for r in ref])   # checked path
    out = fn(np.float32(1.0), np.float32(1.2))
    assert all(isinstance(o, np.float32) for o in out)
    with pytest.raises(sg.ArgumentError, match="takes 2 arguments"):
        fn(1.0)
    with pytest.raises(sg.ArgumentError, match="native code"):
        g.source("c")


SCALAR_CASES = [name for name, (f, shapes, dims, wrt) in CASES.items() if not shapes]


@pytest.mark.parametrize("name", SCALAR_CASES)
def test_scalar_loops_in_numba(name):
    """Numba's rolled code is one jitted function with loops (its straight-line code for
    a long loop took a minute to compile)."""
    pytest.importorskip("numba")
    f, shapes, dims, wrt = CASES[name]
    g = sg.grad_fn(f, shapes=shapes, wrt=wrt)
    args = _arguments(f, shapes, dims)
    names = [x.name for x in g.inputs]
    value, ref = _reference(f, args, [x.name for x in g.wrt], names)
    _close(g.compile("numba")(*args), ref)
    got_value, grads = g.compile("numba", with_value=True)(*args)
    _close([got_value], [value])
    _close(grads, ref)
