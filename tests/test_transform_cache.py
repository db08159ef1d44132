"""sg.hessian(f, x) and the other transforms at concrete primals keep their traced and
compiled program per input signature (symgrad/api/cache.py): a second call with the same
signature does not trace ``f`` again, other shapes, dtypes, kinds, closure values and
globals do, and dropped functions release their entries."""
import gc
import math

import numpy as np
import pytest
import torch

import symgrad as sg
from symgrad.api import cache

SCALE = 2.0


def counted(body):
    """f that counts how often it is traced. The count is kept by a function f calls (the
    cache guards a function by identity); f capturing the list itself would be traced every
    call, as any mutable object it reads is."""
    calls = []

    def note():
        calls.append(1)

    def f(x, y):
        note()
        return body(x, y)
    return f, calls


def quartic(x, y):
    return sg.sum(sg.tanh(x) * x ** 2) * sg.sum(y * y) + sg.sum(x * y)


def quartic_ref(x, y):
    return torch.sum(torch.tanh(x) * x ** 2) * torch.sum(y * y) + torch.sum(x * y)


TRANSFORMS = {
    "hessian": lambda f, x, y: sg.hessian(f, x, y, argnums=(0, 1)),
    "jacobian": lambda f, x, y: sg.jacobian(f, x, y, argnums=(0, 1)),
    "hvp": lambda f, x, y: sg.hvp(f, (x, y), (y, x)),
    "vjp": lambda f, x, y: sg.vjp(f, x, y)[1](1.5),
    "jvp": lambda f, x, y: sg.jvp(f, (x, y), (y, x)),
}

REFS = {
    "hessian": lambda x, y: torch.func.hessian(quartic_ref, argnums=(0, 1))(x, y),
    "jacobian": lambda x, y: torch.func.jacrev(quartic_ref, argnums=(0, 1))(x, y),
    "hvp": lambda x, y: torch.autograd.functional.hvp(quartic_ref, (x, y), (y, x)),
    "vjp": lambda x, y: torch.func.vjp(quartic_ref, x, y)[1](torch.tensor(1.5, dtype=x.dtype)),
    "jvp": lambda x, y: torch.func.jvp(quartic_ref, (x, y), (y, x)),
}


def flat(v):
    if isinstance(v, (tuple, list)):
        return [a for item in v for a in flat(item)]
    return [np.asarray(v.detach() if isinstance(v, torch.Tensor) else v, dtype=float)]


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_second_call_reuses_the_trace_and_matches_torch_at_new_values(name):
    f, calls = counted(quartic)
    rng = np.random.default_rng(0)
    for k in range(3):
        x, y = rng.normal(size=3), rng.normal(size=3)
        got = TRANSFORMS[name](f, x, y)
        ref = REFS[name](torch.tensor(x), torch.tensor(y))
        for a, b in zip(flat(got), flat(ref)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert len(calls) == 1


def test_other_shapes_dtypes_and_kinds_trace_again():
    f, calls = counted(quartic)
    x = np.ones(3)
    sg.hessian(f, x, x)
    sg.hessian(f, x, x)
    assert len(calls) == 1
    sg.hessian(f, np.ones(4), np.ones(4))
    assert len(calls) == 2
    h32 = sg.hessian(f, x.astype(np.float32), x.astype(np.float32))
    assert len(calls) == 3 and h32.shape == (3, 3)
    t = sg.hessian(f, torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    assert len(calls) == 4 and isinstance(t, torch.Tensor)
    sg.hessian(f, x, x, argnums=1)
    assert len(calls) == 5


def test_scalars_keep_their_python_kind():
    f, calls = counted(lambda x, y: sg.sin(x) * y)
    assert isinstance(sg.hessian(f, 0.3, 0.4), float)
    h = sg.hessian(f, 0.5, 0.4)
    assert isinstance(h, float) and h == pytest.approx(-np.sin(0.5) * 0.4)
    assert len(calls) == 1
    assert sg.hessian(f, np.float64(0.5), 0.4) == pytest.approx(h)
    assert len(calls) == 2


def make_scaled(c):
    return lambda x: sg.sum(c * x ** 3)


def test_closures_capturing_different_values_are_different_functions():
    x = np.array([1.0, 2.0])
    assert np.allclose(sg.hessian(make_scaled(2.0), x), np.diag(12 * x))
    assert np.allclose(sg.hessian(make_scaled(3.0), x), np.diag(18 * x))


def test_a_changed_closure_cell_or_global_is_a_new_entry():
    global SCALE
    c = 2.0

    def f(x):
        return sg.sum(c * SCALE * x ** 3)
    x = np.array([1.0, 2.0])
    assert np.allclose(sg.hessian(f, x), np.diag(24 * x))
    c = 3.0
    assert np.allclose(sg.hessian(f, x), np.diag(36 * x))
    try:
        SCALE = 1.0
        assert np.allclose(sg.hessian(f, x), np.diag(18 * x))
    finally:
        SCALE = 2.0


def test_a_new_large_array_at_a_freed_arrays_address_is_a_new_entry():
    """The trace keeps only W.T @ W, so the captured W can die and a new array take its
    id: identity guards hold weak references, not ids."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=20)
    holder = {}

    def f(x):
        A = holder["W"].T @ holder["W"]
        return sg.sum(sg.tanh(A @ x))

    seen = set()
    reused = 0
    for _ in range(30):
        new = rng.normal(size=(20, 20))
        holder["W"] = None                 # the old W dies here ...
        holder["W"] = new.copy()           # ... and its address is usually taken again
        del new
        reused += id(holder["W"]) in seen
        seen.add(id(holder["W"]))
        A = torch.tensor(holder["W"].T @ holder["W"])
        want = torch.func.hessian(lambda x: torch.tanh(A @ x).sum())(torch.tensor(x))
        np.testing.assert_allclose(sg.hessian(f, x), want.numpy(), rtol=1e-10, atol=1e-12)
    assert reused, "no address was reused: the case did not happen"


def test_changed_items_of_a_captured_dict_are_a_new_entry():
    params = {"scale": 1.0}

    def f(x):
        return sg.sum(params["scale"] * x ** 3)
    x = np.array([1.0, 2.0])
    assert np.allclose(sg.hessian(f, x), np.diag(6 * x))
    params["scale"] = 5.0
    assert np.allclose(sg.hessian(f, x), np.diag(30 * x))


def test_in_place_changes_of_captured_small_arrays_and_tensors_are_seen():
    a = np.array([1.0, 2.0])
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)

    def f(x):
        return sg.sum(a * x ** 2) + sg.sum(t * x ** 2)
    x = np.ones(2)
    assert np.allclose(sg.hessian(f, x), np.diag(2 * (a + t.numpy())))
    a *= 3
    assert np.allclose(sg.hessian(f, x), np.diag(2 * (a + t.numpy())))
    t.mul_(5)
    assert np.allclose(sg.hessian(f, x), np.diag(2 * (a + t.numpy())))


def test_dropped_functions_release_their_entries():
    gc.collect()
    before = cache.size()
    for k in range(10):
        sg.hessian(lambda x: sg.sum(x ** 4) * k, np.ones(2))
    gc.collect()
    assert cache.size() == before


def test_the_cache_is_bounded():
    keep = [make_scaled(float(k)) for k in range(cache.MAX_ENTRIES + 20)]
    for f in keep:
        sg.jacobian(f, np.ones(2))
    assert cache.size() <= cache.MAX_ENTRIES


def test_has_aux_and_symbolic_primals_trace_every_call():
    calls = []

    def note():
        calls.append(1)
        return len(calls)

    def f(x):
        return sg.sum(x ** 3), {"n": note()}
    x = np.ones(2)
    assert sg.jacobian(f, x, has_aux=True)[1] == {"n": 1}
    assert sg.jacobian(f, x, has_aux=True)[1] == {"n": 2}
    g, gcalls = counted(quartic)
    s = sg.symbol("s", (3,))
    sg.hessian(g, s, s)
    sg.hessian(g, s, s)
    assert len(gcalls) == 2


def test_errors_at_cached_signatures_are_still_raised():
    f, _ = counted(quartic)
    x = np.ones(3)
    sg.hvp(f, (x, x), (x, x))
    with pytest.raises(sg.ShapeError, match=r"primals\[1\] \(y\)"):
        sg.hvp(f, (x, x), (x, np.ones(4)))
    _, vjp_fn = sg.vjp(f, x, x)
    with pytest.raises(sg.ShapeError):
        vjp_fn(np.ones(2))


def test_functions_with_nested_code_are_cached():
    """Lambdas, nested functions and comprehensions in f's body (their code objects are
    among f's constants) once made every transform fail with a TypeError."""
    def f(x):
        square = lambda z: z ** 2  # noqa: E731
        return sg.sum(square(x)) + sum(sg.sum(sg.sin(x) * k) for k in (1.0, 2.0))
    x = np.array([0.3, -1.2])
    t = torch.tensor(x, requires_grad=True)
    want = torch.func.hessian(lambda t: (t ** 2).sum() + 3 * torch.sin(t).sum())(t)
    for _ in range(2):
        np.testing.assert_allclose(sg.hessian(f, x), want.detach().numpy(), rtol=1e-12)


def test_a_captured_module_or_object_is_read_afresh_each_call():
    """An nn.Module updated in place by an optimiser step, or an object whose attribute is
    reassigned, keeps its identity: a function that reads one is traced every call."""
    torch.manual_seed(0)
    net = torch.nn.Linear(2, 1).double()

    def f(x):
        return net(x).sum()
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    for _ in range(3):
        want = torch.func.jacrev(f)(x).detach()
        torch.testing.assert_close(sg.jacobian(f, x), want)
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        opt.step()

    class Config:
        scale = 1.0
    cfg = Config()

    def g(x):
        return sg.sum(cfg.scale * x ** 2)
    assert np.allclose(sg.jacobian(g, np.array([1.0, 2.0])), [2.0, 4.0])
    cfg.scale = 10.0
    assert np.allclose(sg.jacobian(g, np.array([1.0, 2.0])), [20.0, 40.0])


def test_small_tensors_changed_without_a_version_bump_and_signed_zeros_are_seen():
    c = torch.ones(2, dtype=torch.float64)
    view = c.numpy()

    def h(x):
        return sg.sum(c * x ** 2)
    x = np.array([1.0, 2.0])
    assert np.allclose(sg.jacobian(h, x), [2.0, 4.0])
    c.data.mul_(3)
    assert np.allclose(sg.jacobian(h, x), [6.0, 12.0])
    view *= 2
    assert np.allclose(sg.jacobian(h, x), [12.0, 24.0])
    s = 0.0

    def k(x):
        return x * math.copysign(1.0, s)
    assert np.allclose(sg.jacobian(k, x), np.eye(2))
    s = -0.0
    assert np.allclose(sg.jacobian(k, x), -np.eye(2))
