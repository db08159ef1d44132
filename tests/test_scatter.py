"""Writes at a constant index or mask and grouped reductions (torchfront/writes.py,
scatter.py, segment.py): values and gradients against torch (float64, orders 1 and 2),
torch's conventions at collisions, ties and zeros, and the refusals."""
import numpy as np
import pytest
import torch

import symgrad as sg

T = torch.tensor
D = torch.float64


def fixed(values):
    """A sampler handing sg.check these arrays (ties and zeros drawn on purpose)."""
    return lambda name, shape, rng: np.asarray(values[name], dtype=float)


def value_of(f, shapes, *args):
    g = sg.grad_fn(f, shapes=shapes)
    return g.compile("numpy", with_value=True)(*args)[0]


def test_the_last_write_wins_and_every_write_gets_its_gradient():
    idx = T([[1, 1, 1, 0]])

    def f(x, y):
        return (torch.scatter(x, 1, idx, y) * T([1.0, 2.0, 3.0])).sum()
    x, y = np.random.default_rng(0).standard_normal((2, 1, 4))
    assert np.isclose(value_of(f, {"x": (1, 3), "y": (1, 4)}, x[:, :3], y),
                      float(f(T(x[:, :3]), T(y))))
    assert sg.check(f, shapes={"x": (1, 3), "y": (1, 4)}).ok

    def g(x, y):
        return (x.index_put((T([2, 0, 2]),), y) * T([1.0, 2.0, 3.0])).sum() + \
            (x.put(T([1, -2, 1]), y * 2) ** 2).sum() + \
            (x.index_copy(0, T([0, 0, 2]), y) ** 2).sum()
    assert sg.check(g, shapes={"x": (3,), "y": (3,)}).ok


def test_legacy_scatter_reduce_argument():
    idx = T([[0, 2, 2], [1, 1, 0]])

    def f(x, y):
        return (x.scatter(1, idx, y, reduce="add") ** 2).sum() + \
            (x.scatter(1, idx, y, reduce="multiply") * 3).sum()

    def ref(x, y):
        return (x.scatter_add(1, idx, y) ** 2).sum() + \
            (x.scatter_reduce(1, idx, y, "prod") * 3).sum()
    assert sg.check(f, shapes={"x": (2, 3), "y": (2, 3)}, reference=ref).ok


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_ties_share_the_gradient_evenly_self_included(reduce, include_self):
    idx = T([[0, 0, 1, 1, 2]])

    def f(x, y):
        return (torch.scatter_reduce(x, 1, idx, y, reduce, include_self=include_self)
                * T([1.0, 2.0, 3.0])).sum()
    values = {"x": [[0.5, -1.0, 2.0]], "y": [[0.5, 0.5, -1.0, 0.25, 2.0]]}
    assert sg.check(f, shapes={"x": (1, 3), "y": (1, 5)}, order=1, trials=1,
                    sample=fixed(values)).ok


@pytest.mark.parametrize("y", [[0.0, 2.0, 3.0, -1.5], [0.0, 0.0, 3.0, -1.5],
                               [1.5, 2.0, 3.0, -1.5]])
def test_products_are_exact_at_zeros(y):
    idx = T([0, 0, 1, 0])

    def f(x, y):
        return (torch.index_reduce(x, 0, idx, y, "prod") * T([1.0, -2.0])).sum()
    assert sg.check(f, shapes={"x": (2,), "y": (4,)}, order=1, trials=1,
                    sample=fixed({"x": [0.5, -2.0], "y": y})).ok


def test_segment_reduce_to_second_order_against_slices():
    # torch's segment_reduce has no second derivative, so the reference is written in slices
    lengths = T([1, 0, 3])

    def f(x):
        return sum((torch.segment_reduce(x, r, lengths=lengths, initial=0.5) * w).sum()
                   for r, w in (("sum", 1.0), ("mean", -2.0), ("max", 3.0), ("prod", 0.5)))

    def ref(x):
        out = 0
        for r, w in (("sum", 1.0), ("mean", -2.0), ("max", 3.0), ("prod", 0.5)):
            first, last = x[:1], x[1:4]
            red = {"sum": lambda s: 0.5 + s.sum(0), "mean": lambda s: (0.5 + s.sum(0)) / len(s),
                   "max": lambda s: torch.clamp(s.amax(0), min=0.5),
                   "prod": lambda s: 0.5 * s.prod(0)}[r]
            out = out + w * (red(first) + 0.5 + red(last)).sum()
        return out
    assert sg.check(f, shapes={"x": (4, 2)}, reference=ref,
                    sample=lambda n, s, rng: rng.uniform(1.0, 2.0, s)).ok


def test_segment_reduce_empty_segments_without_initial():
    def f(x):
        out = [torch.segment_reduce(x, r, offsets=T([0, 2, 2, 3])) for r in
               ("sum", "prod", "max", "min", "mean")]
        return sum(torch.where(o.abs() < 1e300, o, 0.0).sum() for o in out)
    x = np.array([1.0, -2.0, 3.0])
    assert np.isclose(value_of(f, {"x": (3,)}, x), float(f(T(x))))


def test_embedding_bag_to_second_order_against_rows():
    ids, offsets = T([1, 4, 1, 0, 2]), T([0, 3, 3])

    def f(w, p):
        return (torch.nn.functional.embedding_bag(ids, w, offsets, mode="sum",
                                                  per_sample_weights=p) ** 2).sum()

    def ref(w, p):
        rows = w[ids] * p[:, None]
        out = torch.stack([rows[:3].sum(0), torch.zeros(3, dtype=D), rows[3:].sum(0)])
        return (out ** 2).sum()
    assert sg.check(f, shapes={"w": (5, 3), "p": (5,)}, reference=ref).ok


def test_masked_select_and_scatter_broadcast():
    mask = T([[True], [False], [True]])

    def f(x, s):
        return (torch.masked_select(x, mask) ** 2).sum() + \
            (torch.masked_scatter(x, mask, s) ** 3).sum()
    assert sg.check(f, shapes={"x": (4,), "s": (3, 4)}).ok


def test_take_counts_negative_ids_from_the_end():
    def f(x, i):
        return (torch.take(x, i) ** 2).sum() + (torch.take(x, T([-1, -12])) ** 3).sum()
    assert sg.check(f, shapes={"x": (3, 4), "i": sg.TensorSpec((2,), dtype="int64")}).ok


def test_take_along_dim_broadcasts_indices_and_input():
    def f(x):
        return (torch.take_along_dim(x, T([[2, 2], [0, 0], [-1, 1]]), 1) ** 2).sum()
    assert sg.check(f, shapes={"x": (1, 4)}).ok


def test_integer_input_index_is_refused_where_collisions_decide():
    ints = sg.TensorSpec((3,), dtype="int64")
    with pytest.raises(sg.UnsupportedOpError, match="torch.scatter_reduce.*constant"):
        sg.grad_fn(lambda x, i: torch.scatter_reduce(x, 0, i, x, "amax").sum(),
                   shapes={"x": (3,), "i": ints})
    with pytest.raises(sg.UnsupportedOpError, match="torch.index_put.*constant"):
        sg.grad_fn(lambda x, i: x.index_put((i,), x).sum(), shapes={"x": (3,), "i": ints})
    # sum and mean read an integer input at call time
    g = sg.grad_fn(lambda x, i: torch.scatter_reduce(x, 0, i, x, "mean").sum(),
                   shapes={"x": (3,), "i": ints})
    dx = g.compile("numpy")(np.arange(3.0), np.array([0, 0, 2]))
    x = torch.arange(3.0, dtype=D, requires_grad=True)
    torch.scatter_reduce(x, 0, T([0, 0, 2]), x, "mean").sum().backward()
    assert np.allclose(np.ravel(dx), x.grad.numpy())


def test_symbolic_dims_and_bad_arguments_are_clear_errors():
    with pytest.raises(sg.ShapeError, match="concrete dims"):
        sg.grad_fn(lambda x: torch.put(x, T([0]), x[:1]).sum(), shapes={"x": ("N",)})
    with pytest.raises(sg.ArgumentError, match="out of range"):
        sg.grad_fn(lambda x: torch.scatter(x, 0, T([5]), x[:1]).sum(), shapes={"x": (3,)})
    with pytest.raises(sg.ShapeError, match="source of shape"):
        sg.grad_fn(lambda x: torch.index_copy(x, 0, T([0, 1]), x).sum(), shapes={"x": (3,)})
    with pytest.raises(sg.UnsupportedOpError, match="reduce='median'"):
        sg.grad_fn(lambda x: torch.scatter_reduce(x, 0, T([0]), x, "median").sum(),
                   shapes={"x": (3,)})
