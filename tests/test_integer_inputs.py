"""Integer and boolean inputs (``sg.TensorSpec(dims, dtype=...)``), the integer-index ops
through the torch front end, dim expressions (``"4*H"``) and torch factories with
symbolic sizes. Every gradient is compared with torch.autograd (float64)."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg

D = torch.float64


def ints(*dims):
    return sg.TensorSpec(dims, dtype="int64")


def bools(*dims):
    return sg.TensorSpec(dims, dtype="bool")


def torch_grads(f, args, wrt):
    targs = [torch.tensor(a, dtype=D, requires_grad=i in wrt) if np.asarray(a).dtype.kind == "f"
             else torch.as_tensor(a) for i, a in enumerate(args)]
    out = f(*targs)
    return [g.numpy() for g in torch.autograd.grad(out, [targs[i] for i in wrt])]


def assert_both_backends(g, args, ref):
    ours = g.compile("numpy")(*args)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o, r, rtol=1e-10, atol=1e-12)
    targs = [torch.as_tensor(a) for a in args]
    ours = g.compile("torch")(*targs)
    for o, r in zip(ours, ref):
        np.testing.assert_allclose(o.numpy(), r, rtol=1e-10, atol=1e-12)


# ----- TensorSpec and the compiled function's arguments -------------------------------------

def test_tensor_spec_is_a_shape_with_a_dtype():
    spec = sg.TensorSpec(("N", 3), dtype="int64")
    assert tuple(spec) == spec.shape and len(spec) == 2 and spec.dtype == "int64"
    assert repr(spec) == "TensorSpec((N, 3), dtype='int64')"
    assert sg.TensorSpec("N", dtype=torch.bool).dtype == "bool"
    assert repr(sg.TensorSpec(("m", 3))) == "Tensor[m, 3]"
    with pytest.raises(sg.ShapeError, match="complex64"):
        sg.TensorSpec((3,), dtype="complex64")


def cross_entropy_with_mask(x, y, m):
    return F.cross_entropy(x, y) + torch.where(m, x, 0.0).sum()


SHAPES = {"x": ("N", "C"), "y": ints("N"), "m": bools("N", "C")}


def test_integer_and_boolean_inputs_are_arguments_without_gradients():
    g = sg.grad_fn(cross_entropy_with_mask, shapes=SHAPES)
    assert [x.name for x in g.inputs] == ["x", "y", "m"]
    assert [x.name for x in g.wrt] == ["x"]
    assert [x.dtype for x in g.inputs[1:]] == [torch.int64, torch.bool]
    rng = np.random.default_rng(0)
    for n, c in [(3, 4), (5, 2)]:          # two batches, no re-derivation
        args = [rng.standard_normal((n, c)), rng.integers(0, c, n), rng.random((n, c)) < 0.5]
        assert_both_backends(g, args, torch_grads(cross_entropy_with_mask, args, [0]))


def test_wrt_an_integer_input_is_refused():
    with pytest.raises(sg.SymgradError, match="integer and boolean inputs have no gradient"):
        sg.grad_fn(cross_entropy_with_mask, shapes=SHAPES, wrt="y")


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_arguments_are_checked_for_dtype_shape_and_range(backend):
    g = sg.grad_fn(cross_entropy_with_mask, shapes=SHAPES).compile(backend)
    conv = (lambda a: a) if backend == "numpy" else torch.as_tensor
    x, y, m = np.zeros((3, 4)), np.array([0, 1, 3]), np.ones((3, 4), bool)
    g(conv(x), conv(y), conv(m))
    bad = [((x, y.astype(float), m), "must be integers"),
           ((x, y, m.astype(np.int64)), "must be booleans"),
           ((x, y[:2], m), "N = 3"),
           ((x, np.array([0, 4, 1]), m), r"\[0, 4\)|out of range"),
           ((x, np.array([0, -1, 1]), m), "out of range|-1")]
    for args, words in bad:
        with pytest.raises(sg.ArgumentError, match=words):
            g(*[conv(a) for a in args])


def test_check_draws_valid_ids():
    assert sg.check(cross_entropy_with_mask, shapes=SHAPES, order=2).ok


# ----- index ops through the torch front end -------------------------------------------------

class Bag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, padding_idx=0)
        self.lin = nn.Linear(4, 3)

    def forward(self, ids):
        return self.lin(torch.tanh(self.emb(ids)).mean(1))


def test_embedding_model_over_token_ids_and_labels():
    torch.manual_seed(0)
    model = Bag().double()

    def loss(out, y):
        return F.cross_entropy(out, y, label_smoothing=0.1)
    shapes = {"ids": ints("B", "T"), "y": ints("B")}
    g = sg.grad_fn(model, shapes=shapes, loss=loss)
    assert [x.name for x in g.wrt] == ["W_emb", "W_lin", "b_lin"]
    params = [p.detach().numpy() for p in model.parameters()]
    for seed in range(2):
        rng = np.random.default_rng(seed)
        ids, y = rng.integers(0, 10, (5, 7)), rng.integers(0, 3, 5)
        ids[0, 0] = 0                                     # the padding row gets no gradient
        model.zero_grad()
        loss(model(torch.as_tensor(ids)), torch.as_tensor(y)).backward()
        ref = [p.grad.numpy() for p in model.parameters()]
        assert_both_backends(g, params + [ids, y], ref)
    with pytest.raises(sg.ArgumentError, match="out of range"):
        g.compile("numpy")(*params, ids + 5, y)
    assert sg.check(model, shapes=shapes, loss=loss, dims={"B": 3, "T": 4}).ok
    assert "take_add" in g.text()


@pytest.mark.parametrize("kw", [{}, {"ignore_index": 1}, {"reduction": "sum"},
                                {"weight": True}, {"weight": True, "label_smoothing": 0.2}])
def test_cross_entropy_and_nll_loss_with_integer_labels(kw):
    weight = torch.linspace(0.5, 1.5, 5, dtype=D) if kw.pop("weight", False) else None

    def ce(x, y):
        return F.cross_entropy(x, y, weight=weight, **kw)

    def nll(x, y):
        kw2 = {k: v for k, v in kw.items() if k != "label_smoothing"}
        return F.nll_loss(F.log_softmax(x, 1), y, weight=weight, **kw2)

    def sample(name, shape, rng):
        return rng.integers(0, 5, shape) if name == "y" else rng.standard_normal(shape)
    for f in (ce, nll):
        assert sg.check(f, shapes={"x": ("N", 5), "y": ints("N")}, dims={"N": 6},
                        sample=sample).ok


def test_labels_of_a_spatial_cross_entropy():
    def f(x, y):
        return F.cross_entropy(x, y)
    assert sg.check(f, shapes={"x": ("N", 4, 3), "y": ints("N", 3)}, dims={"N": 2}).ok


def test_gather_scatter_index_add_and_subscripts_with_traced_ids():
    table = torch.linspace(-1, 1, 24, dtype=D).reshape(6, 4)

    def f(x, ids, j):
        return ((x[ids] ** 2).sum() + (x[:, ids[:2]] ** 3).sum() + (table[ids] * x[ids]).sum()
                + (x[ids + 1] ** 2).sum() + (torch.gather(x, 1, j) ** 2).sum()
                + torch.scatter_add(x, 1, j, torch.sin(x[:, :2])).pow(2).sum()
                + torch.index_add(x, 0, ids, x[:4] * 2).pow(2).sum()
                + torch.index_select(x, 0, ids).pow(3).sum())
    assert sg.check(f, shapes={"x": (6, 4), "ids": ints(4), "j": ints(6, 2)}).ok


def test_value_dependent_shapes_are_refused_with_an_alternative():
    with pytest.raises(sg.UnsupportedOpError, match="torch.where"):
        sg.grad_fn(lambda x: torch.masked_select(x, x > 0).sum(), shapes={"x": (3,)})
    with pytest.raises(sg.UnsupportedOpError, match="where"):
        sg.grad_fn(lambda x, m: x[m].sum(), shapes={"x": (3,), "m": bools(3)})
    with pytest.raises(sg.UnsupportedOpError, match="scatter_add"):
        sg.grad_fn(lambda x, i: x.scatter(0, i, x).sum(), shapes={"x": (3,), "i": ints(3)})


# ----- dim expressions and symbolic sizes ----------------------------------------------------

def test_dim_expressions_bind_at_call_time():
    def f(x, h):
        return (x.reshape(x.shape[0], 4, -1).sum(1) * h).sum()
    g = sg.grad_fn(f, shapes={"x": ("B", "4*H"), "h": ("H",)})
    x, h = np.arange(16.0).reshape(2, 8), np.array([1.0, -2.0])
    assert_both_backends(g, [x, h], torch_grads(f, [x, h], [0, 1]))
    with pytest.raises(sg.ArgumentError, match=r"\(B, 4\*H\)"):
        g.compile("numpy")(np.ones((2, 9)), h)
    with pytest.raises(sg.ArgumentError, match="H = 2"):
        g.compile("numpy")(x, np.ones(3))


@pytest.mark.parametrize("text", ["__import__('os')", "n**2", "n/2", "x.y", "f(n)", "2n"])
def test_dim_text_is_parsed_never_evaluated(text):
    with pytest.raises(sg.ShapeError, match="a dim must be"):
        sg.grad_fn(lambda x: x.sum(), shapes={"x": (text,)})


def test_torch_factories_and_slices_with_symbolic_sizes():
    def f(x):
        n = x.shape[0]
        return ((x * torch.ones(n)).sum() + (torch.eye(n, dtype=D) @ x).sum()
                + (x * torch.arange(n)).sum() + x[:n - 1].sum() + torch.zeros(n, 2).sum()
                + (x * torch.full((n,), 2.0)).sum() + (x[1:] * torch.arange(1, n)).sum()
                + x[n - 1] ** 2 + x[n // 2] ** 3 + x.view(-1).sum())
    assert sg.check(f, shapes={"x": ("n",)}, dims={"n": 5}).ok
    assert torch.zeros(2).shape == (2,)            # torch's own factories are restored


def test_advanced_indexing_with_several_id_arrays():
    def nll(x, y):
        logp = F.log_softmax(x, 1)
        return -logp[torch.arange(x.shape[0]), y].mean()
    for shape in [(4, 3), ("N", 3)]:
        shapes = {"x": shape, "y": ints(shape[0])}
        assert sg.check(nll, shapes=shapes, dims={"N": 5}).ok
    assert "take_along" in sg.grad_fn(nll, shapes={"x": ("N", 3), "y": ints("N")}).text() \
        or "put_along_add" in sg.grad_fn(nll, shapes={"x": ("N", 3), "y": ints("N")}).text()

    def picks(x, i, j):
        return ((x[i, j] ** 2).sum() + (x[:, i, j] ** 3).sum() + x[i, 0].sum()
                + (x[torch.tensor([-1, 0]), torch.tensor([1, 4])] ** 2).sum())
    assert sg.check(picks, shapes={"x": (4, 5, 5), "i": ints(3), "j": ints(3)}).ok


@pytest.mark.parametrize("backend", ["numpy", "torch", "c", "jax", "numba"])
def test_negative_ids_of_a_subscript_count_from_the_end_as_torchs(backend):
    """x[ids] and x[:, ids] take ids in [-n, n) as torch does; ids outside are an
    ArgumentError naming the id, and embedding keeps refusing negative ids, as torch's."""
    from backend_support import require_backend
    require_backend(backend)

    def f(x, i):
        return (x[i] ** 2).sum() + (x[:, i] ** 3).sum() + (x[i, i] * 2).sum()
    g = sg.grad_fn(f, shapes={"x": ("n", "n"), "i": ints("k")}).compile(backend)
    conv = torch.as_tensor if backend == "torch" else np.asarray
    x = np.arange(9.0).reshape(3, 3) / 4 - 1
    for i in ([-1, 0, -3, 2], [-2]):
        (got,) = g(conv(x), conv(np.array(i)))
        ref = torch_grads(f, [x, np.array(i)], [0])[0]
        np.testing.assert_allclose(np.asarray(got), ref)
    for bad in (-4, 3):
        with pytest.raises(sg.ArgumentError, match=f"index {bad} is out of range"):
            g(conv(x), conv(np.array([0, bad])))
    e = sg.grad_fn(lambda W, i: F.embedding(i, W).sum(),
                   shapes={"W": (3, 2), "i": ints(2)}).compile(backend)
    with pytest.raises(sg.ArgumentError, match="index -1 is out of range"):
        e(conv(np.ones((3, 2))), conv(np.array([-1, 0])))


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_ids_out_of_range_or_fractional_raise(backend):
    g = sg.grad_fn(lambda x, i, j: (x[i, j] ** 2).sum(),
                   shapes={"x": (3, 4), "i": ints(2), "j": ints(2)}).compile(backend)
    conv = (lambda a: a) if backend == "numpy" else torch.as_tensor
    with pytest.raises(sg.ArgumentError, match="out of range"):
        g(conv(np.zeros((3, 4))), conv(np.array([0, 1])), conv(np.array([0, 4])))
    f = sg.grad_fn(lambda x: x[torch.arange(x.shape[0]) * 0.5].sum(), shapes={"x": ("n",)})
    with pytest.raises(sg.ArgumentError, match="integers"):
        f.compile(backend)(conv(np.ones(3)))


def test_zero_d_inputs_of_the_index_functions_like_torch():
    """OpInfo's 0-d samples: index_select / index_add of a 0-d input read it as one
    element; torch.take of a 0-d input by a 0-d id (the constant gradient 2 is a number
    in the generated code)."""
    idx1, idx0 = torch.tensor([0]), torch.tensor(0)

    def f(x, s):
        return (torch.index_select(x, 0, idx1) * 3 + torch.take(x, idx0) * 2
                + torch.index_add(x, 0, idx1, s, alpha=2) ** 2)
    assert sg.check(f, shapes={"x": (), "s": ()}).ok
