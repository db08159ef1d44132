"""Linear algebra and distances through the torch front end (issue 15): batches of
matrices (zero-size ones too), torch's solve conventions, the products, inverses,
norms and distances that are compositions of sg ops. Each is checked with ``sg.check``
(gradients and Hessian-vector products, NumPy and torch backends) against torch running
the same torch function."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import symgrad as sg

pytestmark = pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")


def well_conditioned(name, shape, rng):
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return np.eye(shape[-1]) + 0.3 * rng.standard_normal(shape)
    return rng.standard_normal(shape)


def away_from_ties(name, shape, rng):
    """Distinct magnitudes, so the max/min of norms and distances have no ties."""
    x = rng.standard_normal(shape)
    return x + 0.01 * np.arange(x.size).reshape(shape)


def _scalar(f):
    """sum(sin(f(...))): a scalar loss that is not linear in the result."""
    def loss(*xs):
        return torch.sum(torch.sin(f(*xs)))
    import inspect
    loss.__signature__ = inspect.signature(f)
    return loss


def _check(f, shapes, sample=well_conditioned, order=2, reference=None):
    report = sg.check(_scalar(f), shapes=shapes, order=order, sample=sample, trials=2,
                      reference=reference and _scalar(reference))
    assert report.ok


CASES = {
    "inv_batch": (lambda a: torch.linalg.inv(a), {"a": (2, 3, 3)}),
    "inv_empty_batch": (lambda a: torch.linalg.inv(a), {"a": (0, 3, 3)}),
    "inv_ex": (lambda a: torch.linalg.inv_ex(a)[0], {"a": (2, 2, 2)}),
    "det_batch": (lambda a: torch.linalg.det(a), {"a": (3, 2, 2)}),
    "det_empty_matrices": (lambda a: torch.linalg.det(a), {"a": (2, 0, 0)}),
    "slogdet_batch": (lambda a: torch.linalg.slogdet(a)[1] * torch.linalg.slogdet(a)[0],
                      {"a": (2, 3, 3)}),
    "solve_vector_batch": (lambda a, b: torch.linalg.solve(a, b), {"a": (2, 3, 3), "b": (2, 3)}),
    "solve_matrix_batch": (lambda a, b: torch.linalg.solve(a, b),
                           {"a": (2, 3, 3), "b": (2, 3, 2)}),
    "solve_broadcast": (lambda a, b: torch.linalg.solve(a, b), {"a": (3, 3), "b": (2, 3, 2)}),
    "solve_one_vector": (lambda a, b: torch.linalg.solve(a, b), {"a": (2, 3, 3), "b": (3,)}),
    "solve_right": (lambda a, b: torch.linalg.solve(a, b, left=False),
                    {"a": (2, 3, 3), "b": (2, 4, 3)}),
    "solve_ex_empty": (lambda a, b: torch.linalg.solve_ex(a, b)[0],
                       {"a": (0, 3, 3), "b": (0, 3)}),
    "trace_wide": (lambda a: torch.trace(a), {"a": (2, 4)}),
    "matrix_power_3": (lambda a: torch.linalg.matrix_power(a, 3), {"a": (2, 3, 3)}),
    "matrix_power_-2": (lambda a: torch.linalg.matrix_power(a, -2), {"a": (3, 3)}),
    "multi_dot": (lambda a, b, c: torch.linalg.multi_dot([a, b, c]),
                  {"a": (3,), "b": (3, 4), "c": (4, 2)}),
    "tensorinv": (lambda a: torch.linalg.tensorinv(a, ind=2), {"a": (2, 3, 6)}),
    "tensorsolve": (lambda a, b: torch.linalg.tensorsolve(a, b, dims=(0,)),
                    {"a": (6, 2, 3), "b": (2, 3)}),
    "cross": (lambda a, b: torch.linalg.cross(a, b, dim=0), {"a": (3, 2), "b": (3, 1)}),
    "cross_default_dim": (lambda a, b: torch.cross(a, b), {"a": (4, 3), "b": (4, 3)}),
    "vecdot": (lambda a, b: torch.linalg.vecdot(a, b, dim=0), {"a": (3, 2), "b": (3, 2)}),
    "addr": (lambda m, u, v: torch.addr(m, u, v, beta=0.5, alpha=2.0),
             {"m": (3, 2), "u": (3,), "v": (2,)}),
    "addr_beta0": (lambda m, u, v: torch.addr(m, u, v, beta=0),
                   {"m": (3, 2), "u": (3,), "v": (2,)}),
    "addbmm": (lambda m, a, b: torch.addbmm(m, a, b, alpha=0.3),
               {"m": (2, 4), "a": (3, 2, 5), "b": (3, 5, 4)}),
    "kron": (lambda a, b: torch.kron(a, b), {"a": (2, 3), "b": (3,)}),
    "tensordot": (lambda a, b: torch.tensordot(a, b, dims=([0, 2], [1, 0])),
                  {"a": (2, 3, 4), "b": (4, 2, 5)}),
    "tensordot_size1": (lambda a, b: torch.tensordot(a, b, dims=([0], [1])),
                        {"a": (1, 3), "b": (2, 2)}),
}

DISTANCES = {
    "dist": (lambda a, b: torch.dist(a, b, 3), {"a": (2, 3), "b": (3,)}),
    "cdist": (lambda a, b: torch.cdist(a, b), {"a": (2, 3, 4), "b": (2, 5, 4)}),
    "cdist_p1": (lambda a, b: torch.cdist(a, b, p=1.5), {"a": (3, 2), "b": (4, 2)}),
    "cdist_inf": (lambda a, b: torch.cdist(a, b, p=float("inf")), {"a": (3, 2), "b": (4, 2)}),
    "pdist": (lambda a: F.pdist(a), {"a": (4, 3)}),
    "renorm": (lambda a: torch.renorm(a, 2, 0, 1.0), {"a": (3, 4)}),
    "cov": (lambda a: torch.cov(a, correction=2), {"a": (2, 5)}),
    "cov_weights": (lambda a, w: torch.cov(a, aweights=w.exp()), {"a": (2, 5), "w": (5,)}),
    "corrcoef": (lambda a: torch.corrcoef(a), {"a": (3, 5)}),
    "norm_p0": (lambda a: torch.linalg.norm(a, 0) * a.sum(), {"a": (4,)}),
    "norm_negative": (lambda a: torch.norm(a, -1.5, dim=1), {"a": (3, 4)}),
    "matrix_norm_1": (lambda a: torch.linalg.norm(a, 1), {"a": (3, 4)}),
    "matrix_norm_-inf": (lambda a: torch.linalg.norm(a, -float("inf"), dim=(2, 0), keepdim=True),
                         {"a": (2, 3, 4)}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matrices(name):
    f, shapes = CASES[name]
    _check(f, shapes)


def _pairwise(a, b, p):
    return torch.linalg.vector_norm(a.unsqueeze(-2) - b.unsqueeze(-3), p, dim=-1)


def _pdist_reference(a):
    rows, cols = np.triu_indices(a.shape[0], 1)
    return torch.linalg.vector_norm(a[rows] - a[cols], dim=-1)


# torch has no second derivative of cdist and pdist: order 2 against the same distances
# written as norms of differences
SECOND_ORDER_REFERENCES = {
    "cdist": lambda a, b: _pairwise(a, b, 2), "cdist_p1": lambda a, b: _pairwise(a, b, 1.5),
    "cdist_inf": lambda a, b: _pairwise(a, b, float("inf")), "pdist": _pdist_reference,
}


@pytest.mark.parametrize("name", sorted(DISTANCES))
def test_distances(name):
    f, shapes = DISTANCES[name]
    if name in SECOND_ORDER_REFERENCES:
        _check(f, shapes, sample=away_from_ties, order=1)
        _check(f, shapes, sample=away_from_ties, reference=SECOND_ORDER_REFERENCES[name])
    else:
        _check(f, shapes, sample=away_from_ties)


def test_cdist_gradient_at_coincident_points_is_zero_like_torch():
    x = np.array([[0.0, 1.0], [2.0, 3.0]])
    g = sg.grad_fn(lambda a, b: torch.cdist(a, b).sum(), shapes={"a": (2, 2), "b": (2, 2)})
    ga, gb = g.compile("numpy")(x, x.copy())
    a, b = (torch.tensor(x, requires_grad=True) for _ in range(2))
    ra, rb = torch.autograd.grad(torch.cdist(a, b).sum(), (a, b))
    np.testing.assert_allclose(ga, ra.numpy(), atol=1e-12)
    np.testing.assert_allclose(gb, rb.numpy(), atol=1e-12)


def test_batched_gradient_reads_as_ops():
    g = sg.grad_fn(lambda a: sg.sum(sg.det(a)), shapes={"a": ("B", "n", "n")})
    text = str(g)
    assert "det(a)" in text and "inv(a)" in text


@pytest.mark.parametrize("f, shapes, match", [
    (lambda a: torch.linalg.norm(a, 3), {"a": (3, 3)}, "ord=3"),
    (lambda a: torch.cdist(a, a, p=-1.0), {"a": (3, 2)}, "p must be"),
    (lambda a: torch.cross(a, a, dim=0), {"a": (2, 3)}, "size 3"),
    (lambda a, b: torch.linalg.tensorinv(a, ind=1) + b, {"a": (2, 3), "b": ()}, "tensorinv"),
    (lambda a: torch.linalg.matrix_power(a, 2), {"a": (2, 3)}, "square"),
])
def test_refusals_name_the_op(f, shapes, match):
    with pytest.raises(sg.SymgradError, match=match):
        sg.grad_fn(_scalar(f), shapes=shapes)


_RNG = np.random.default_rng(7)
_A = np.eye(3) + 0.3 * _RNG.standard_normal((2, 3, 3))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("f, ref, args", [
    (sg.solve, lambda a, b: torch.linalg.solve(a, b.expand(2, 3)), (_A, _RNG.standard_normal(3))),
    (sg.solve, torch.linalg.solve, (_A, _RNG.standard_normal((2, 3, 2)))),
    (sg.solve, torch.linalg.solve, (_A[0], _RNG.standard_normal((2, 3, 2)))),
    (sg.det, torch.linalg.det, (_A,)),
    (sg.inverse, torch.linalg.inv, (_A,)),
    (sg.logabsdet, lambda a: torch.linalg.slogdet(a)[1], (_A,)),
    (sg.trace, torch.trace, (_A[0, :2],)),
], ids=["solve_vector", "solve_matrix", "solve_broadcast", "det", "inverse", "logabsdet",
        "trace_wide"])
def test_jacobians_of_batches(f, ref, args, mode):
    """Jacobians batch the ops (their ``batch`` rules, forward or reverse)."""
    got = sg.jacobian(f, *args, argnums=tuple(range(len(args))), mode=mode)
    want = torch.autograd.functional.jacobian(ref, tuple(torch.tensor(a) for a in args))
    for j, r in zip(got, want):
        np.testing.assert_allclose(np.asarray(j, dtype=float), r.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("shape, factor", [((3, 4), 0), ((4, 3), 2)])
def test_hessian_through_the_square_full_svd_factor(shape, factor):
    """torch.linalg.svd's default full_matrices=True: U of a wide matrix and Vh of a tall
    one are square, the reduced factors themselves; their forward derivative exists."""
    def f(A):
        return torch.sin(torch.linalg.svd(A)[factor] ** 2).sum()
    A = np.random.default_rng(0).standard_normal(shape)
    want = torch.func.hessian(f)(torch.tensor(A))
    got = sg.hessian(f, A)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-9, atol=1e-10)
