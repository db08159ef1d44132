"""The torch backend is device-agnostic: compiled code creates every tensor on the device
and in the dtype of its arguments (never a CPU constant behind the user's back), so it runs
on the ``meta`` device (shapes and dtypes only), and it traces whole under
``torch.compile(fullgraph=True)``."""
import numpy as np
import pytest

import symgrad as sg

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

TABLE = np.random.default_rng(0).standard_normal((3, 4))   # a captured constant array


def elementwise(x, y):
    return (torch.sigmoid(x) * torch.exp(-y * y) + torch.clamp(x, min=-0.5) ** 3).sum()


def matmul(x, w):
    return torch.tanh(x @ w + torch.from_numpy(TABLE).sum(0)).pow(2).mean()


def reductions(x, y):
    return x.amax(dim=1).sum() + torch.logsumexp(x, dim=0).sum() + (x.var(dim=1) * y).sum()


def softmax(x, w):
    return (F.log_softmax(x @ w, dim=-1) * F.softmax(x @ w, dim=0)).sum()


def conv(x, w):
    return F.conv2d(x, w, padding=1, stride=2).relu().sum() + F.avg_pool2d(x, 2).sum()


def conv_transpose(x, w):
    return (F.conv_transpose2d(x, w.transpose(0, 1), stride=2) ** 2).sum()


def indexing(x, y):
    return (x[1:, ::2] ** 2).sum() + (x[:, [0, 2, 2]] * y).sum() + x.diagonal().sum()


def embedding(table, ids):
    return (F.embedding(ids, table) ** 2).sum()


def cross_entropy(logits, target):
    return F.cross_entropy(logits, target)


def norm(x, w):
    return F.layer_norm(x, (4,), weight=w[0]).pow(2).sum()


PROGRAMS = {
    "elementwise": (elementwise, {"x": ("N", 3), "y": (3,)}, None),
    "matmul": (matmul, {"x": ("N", 3), "w": (3, 4)}, None),
    "reductions": (reductions, {"x": ("N", 3), "y": ("N",)}, None),
    "softmax": (softmax, {"x": ("N", 3), "w": (3, 4)}, None),
    "conv": (conv, {"x": (2, 3, 6, 6), "w": (4, 3, 3, 3)}, None),
    "conv_transpose": (conv_transpose, {"x": (2, 3, 4, 4), "w": (5, 3, 3, 3)}, None),
    "indexing": (indexing, {"x": (4, 3), "y": (4, 3)}, None),
    "embedding": (embedding, {"table": (6, 3), "ids": sg.TensorSpec((5,), dtype="int64")},
                  ["ids"]),
    "cross_entropy": (cross_entropy, {"logits": ("N", 5),
                                      "target": sg.TensorSpec(("N",), dtype="int64")},
                      ["target"]),
    "norm": (norm, {"x": ("N", 4), "w": (1, 4)}, None),
}


def _compiled(name):
    fn, shapes, ids = PROGRAMS[name]
    g = sg.grad_fn(fn, shapes=shapes, wrt=[n for n in shapes if n not in (ids or ())])
    return g, g.compile("torch")


def _arguments(g, dtype, device, n=5):
    gen = torch.Generator().manual_seed(0)
    args = []
    for x in g.inputs:
        shape = tuple(n if not isinstance(d, int) else d for d in x.shape)
        if x.kind == "int":
            args.append(torch.randint(0, 3, shape, generator=gen).to(device))
        else:
            args.append(torch.randn(shape, generator=gen, dtype=dtype).to(device))
    return args


class TensorDevices(TorchDispatchMode):
    """Records the device of every tensor an aten op returns."""

    def __init__(self):
        super().__init__()
        self.created = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.dim():
                self.created.append((str(func), t.device.type))
        return out


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_runs_on_the_meta_device(name, dtype):
    g, f = _compiled(name)
    want = f(*_arguments(g, dtype, "cpu"))
    args = _arguments(g, dtype, "meta")
    with TensorDevices() as seen:
        got = f(*args)
    for w, o in zip(want, got):
        assert o.device.type == "meta"
        assert (tuple(o.shape), o.dtype) == (tuple(w.shape), w.dtype)
    on_cpu = sorted({op for op, device in seen.created if device != "meta"})
    assert not on_cpu, f"tensors created off the arguments' device by {on_cpu}"


@pytest.mark.parametrize("name", ["matmul", "softmax"])
def test_gradient_compiles_whole_under_torch_compile(name):
    """``fullgraph=True``: no graph break anywhere in the generated function. The
    ``aot_eager`` backend traces exactly what inductor would, without a C compile."""
    g, f = _compiled(name)
    args = _arguments(g, torch.float64, "cpu")
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for o, w in zip(compiled(*args), f(*args)):
        torch.testing.assert_close(o, w)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_program_compiles_whole_under_torch_compile(name):
    g, f = _compiled(name)
    args = _arguments(g, torch.float64, "cpu")
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for o, w in zip(compiled(*args), f(*args)):
        torch.testing.assert_close(o, w)


@pytest.mark.slow
def test_gradient_compiles_with_inductor():
    g, f = _compiled("matmul")
    args = _arguments(g, torch.float64, "cpu")
    compiled = torch.compile(f, fullgraph=True)
    for o, w in zip(compiled(*args), f(*args)):
        torch.testing.assert_close(o, w)
