"""Recurrent layers through the torch front end: nn.RNN / nn.LSTM / nn.GRU and their cells
traced, differentiated and compiled (NumPy and torch), compared with the real modules
under torch.autograd in float64 (``sg.check``: gradients w.r.t. parameters, inputs and
initial states, and Hessian-vector products against torch's double backward)."""
import time

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence

import symgrad as sg
from symgrad.errors import ShapeError, UnsupportedOpError

D = torch.float64


def weights(shape):
    n = int(np.prod(shape)) if shape else 1
    return torch.linspace(-1.0, 2.0, n, dtype=D).reshape(tuple(shape)) if shape else 1.3


def scalar(out):
    """A weighted sum of every part of the output (so a transposed, permuted or swapped
    result cannot pass)."""
    if isinstance(out, (tuple, list)):
        return sum((k + 1) * scalar(part) for k, part in enumerate(out))
    return (out * weights(tuple(out.shape))).sum()


def any_batch(out):
    """A loss that needs no concrete batch size: weights along the last (feature) dim, a
    square so the values matter, and each part of a tuple weighted differently."""
    if isinstance(out, (tuple, list)):
        return sum((k + 1) * any_batch(part) for k, part in enumerate(out))
    return ((out * weights((out.shape[-1],))) ** 2 + out).sum()


class WithState(nn.Module):
    """A recurrent module called with its initial state as forward arguments (so the
    state is a symbol and gradients w.r.t. it are checked)."""

    def __init__(self, rnn):
        super().__init__()
        self.rnn = rnn

    def forward(self, x, h0, c0=None):
        return self.rnn(x, h0 if c0 is None else (h0, c0))


def make(kind, input_size=2, hidden=3, **options):
    torch.manual_seed(0)
    if kind == "lstm-proj":
        return nn.LSTM(input_size, hidden, proj_size=2, **options).double()
    cls = {"rnn-tanh": nn.RNN, "rnn-relu": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}[kind]
    if kind == "rnn-relu":
        options["nonlinearity"] = "relu"
    return cls(input_size, hidden, **options).double()


KINDS = ["rnn-tanh", "rnn-relu", "lstm", "lstm-proj", "gru"]

# (options, batched, state given)
OPTIONS = {
    "plain": ({}, True, False),
    "2-layers-bidirectional-batch-first": (
        {"num_layers": 2, "bidirectional": True, "batch_first": True}, True, False),
    "no-bias-state": ({"bias": False}, True, True),
    "2-layers-state-eval-dropout": ({"num_layers": 2, "dropout": 0.3}, True, True),
    "bidirectional-state": ({"bidirectional": True}, True, True),
    "unbatched": ({"num_layers": 2}, False, False),
    "unbatched-bidirectional-state": ({"bidirectional": True, "batch_first": True}, False,
                                      True),
}


def sequence_case(kind, options, batched, given, T=3, B=2, input_size=2):
    rnn = make(kind, input_size, **options)
    rnn.eval()
    directions = 2 if rnn.bidirectional else 1
    layers = rnn.num_layers * directions
    x = (T, B, input_size) if not rnn.batch_first else (B, T, input_size)
    if not batched:
        x = (T, input_size)
    lead = (layers, B) if batched else (layers,)
    out_size = rnn.proj_size or rnn.hidden_size
    if not given:
        return rnn, {"input": x}, None
    shapes = {"x": x, "h0": lead + (out_size,)}
    if isinstance(rnn, nn.LSTM):
        shapes["c0"] = lead + (rnn.hidden_size,)
    module = WithState(rnn)
    return module, shapes, tuple(shapes)


@pytest.mark.parametrize("option", sorted(OPTIONS))
@pytest.mark.parametrize("kind", KINDS)
def test_sequence_modules(kind, option):
    options, batched, given = OPTIONS[option]
    module, shapes, inputs = sequence_case(kind, options, batched, given)
    fn = sg.module_function(module, shapes=shapes, loss=scalar)
    wrt = fn.wrt + (inputs or ("input",))
    report = sg.check(fn, wrt=wrt, trials=2)
    assert report.ok and report.order == 2
    assert set(report.wrt) == set(wrt)


def test_module_gradients_equal_torch_autograd_on_the_real_module():
    """The compiled gradient with the module's own parameters, against loss.backward() on
    the module itself (not functional_call), on two batches without re-deriving."""
    lstm = make("lstm", 3, 4, num_layers=2, bidirectional=True)
    fn = sg.module_function(lstm, shapes={"input": (5, "N", 3)}, loss=any_batch)
    g = sg.grad_fn(fn)
    assert tuple(map(str, g.inputs[-1].shape)) == ("5", "N", "3")
    compiled = {b: g.compile(b) for b in ("numpy", "torch")}
    for seed, batch in ((1, 2), (2, 4)):
        x = torch.randn(5, batch, 3, dtype=D, generator=torch.Generator().manual_seed(seed))
        lstm.zero_grad()
        any_batch(lstm(x)).backward()
        expected = [p.grad for p in lstm.parameters()]
        for backend, f in compiled.items():
            ours = f(*fn.arguments(x, backend=backend))
            for a, b in zip(ours, expected):
                np.testing.assert_allclose(np.asarray(a), b.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_symbolic_batch(kind):
    rnn = make(kind, num_layers=2, bidirectional=True, batch_first=True)
    shapes = {"input": ("B", 3, 2)}
    g = sg.grad_fn(rnn, shapes=shapes, loss=any_batch)
    assert tuple(map(str, g.inputs[-1].shape)) == ("B", "3", "2")
    for n in (1, 3):
        assert sg.check(rnn, shapes=shapes, loss=any_batch, dims={"B": n}, order=1,
                        trials=1).ok


def test_outputs_have_torchs_shapes():
    x = sg.symbol("x", (4, "N", 2))
    for kind in KINDS:
        rnn = make(kind, num_layers=2, bidirectional=True)
        fn = sg.module_function(rnn, shapes={"input": (4, "N", 2)})
        params = [sg.symbol(n, s) for n, s in list(fn.shapes.items())[:-1]]
        out, hidden = fn._forward(params + [x])
        real_out, real_hidden = rnn(torch.zeros(4, 5, 2, dtype=D))
        assert out.shape[0] == 4 and out.shape[2] == real_out.shape[2]
        pairs = zip(hidden, real_hidden) if kind.startswith("lstm") else [(hidden, real_hidden)]
        for ours, theirs in pairs:
            assert (ours.shape[0], ours.shape[2]) == (theirs.shape[0], theirs.shape[2])
            assert str(ours.shape[1]) == "N"


# ----- cells -----------------------------------------------------------------------------

CELLS = {"rnn-tanh": lambda **o: nn.RNNCell(2, 3, **o),
         "rnn-relu": lambda **o: nn.RNNCell(2, 3, nonlinearity="relu", **o),
         "lstm": lambda **o: nn.LSTMCell(2, 3, **o),
         "gru": lambda **o: nn.GRUCell(2, 3, **o)}


class CellWithState(nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def forward(self, x, h, c=None):
        return self.cell(x, h if c is None else (h, c))


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("given", [False, True], ids=["zero-state", "state"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("kind", sorted(CELLS))
def test_cells(kind, bias, given, batched):
    torch.manual_seed(0)
    cell = CELLS[kind](bias=bias).double()
    lead = (4,) if batched else ()
    if given:
        module = CellWithState(cell)
        shapes = {"x": lead + (2,), "h": lead + (3,)}
        if kind == "lstm":
            shapes["c"] = lead + (3,)
    else:
        module, shapes = cell, {"input": lead + (2,)}
    fn = sg.module_function(module, shapes=shapes, loss=scalar)
    wrt = fn.wrt + tuple(shapes)
    assert sg.check(fn, wrt=wrt, trials=2).ok


def test_cells_with_symbolic_batch():
    for kind, make_cell in CELLS.items():
        torch.manual_seed(0)
        cell = make_cell().double()
        assert sg.check(cell, shapes={"input": ("N", 2)}, loss=any_batch, dims={"N": 3},
                        order=1, trials=1).ok


# ----- models ------------------------------------------------------------------------------

class LSTMRegressor(nn.Module):
    """A 2-layer LSTM over float inputs with a linear head on every step."""

    def __init__(self, features=3, hidden=5, out=2):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, out)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)


def test_two_layer_lstm_with_linear_head():
    torch.manual_seed(0)
    model = LSTMRegressor().double()
    shapes = {"x": ("B", 4, 3)}
    g = sg.grad_fn(model, shapes=shapes, loss=F.mse_loss)
    assert [x.name for x in g.inputs][-2:] == ["x", "target"]
    assert len(g.wrt) == 10
    assert sg.check(model, shapes=shapes, loss=F.mse_loss, dims={"B": 2}).ok
    assert sg.check(model, shapes=shapes, loss=F.mse_loss, dims={"B": 3}, order=1,
                    wrt=("x", "W_head", "weight_hh_l1_lstm")).ok


class GRUClassifier(nn.Module):
    """A bidirectional GRU reading a sequence; both directions' final states classify."""

    def __init__(self, features=3, hidden=4, classes=3):
        super().__init__()
        self.gru = nn.GRU(features, hidden, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        _, h = self.gru(x)
        return self.head(torch.cat([h[0], h[1]], dim=-1))


def test_bidirectional_gru_classifier():
    torch.manual_seed(0)
    model = GRUClassifier().double()
    labels = torch.tensor([0, 2, 1, 2])

    def loss(logits):
        return F.cross_entropy(logits, labels)

    shapes = {"x": (5, 4, 3)}
    assert sg.check(model, shapes=shapes, loss=loss).ok
    g = sg.grad_fn(model, shapes=shapes, loss=loss)
    text = g.text()
    assert "dL/dweight_ih_l0_reverse_gru = " in text and "dL/dW_head = " in text


class CellLoop(nn.Module):
    """An LSTMCell feeding an RNNCell, stepped by a Python loop over time."""

    def __init__(self, features=2, hidden=3):
        super().__init__()
        self.lstm = nn.LSTMCell(features, hidden)
        self.rnn = nn.RNNCell(hidden, hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = c = None
        g = None
        outs = []
        for x_t in x.unbind(0):
            h, c = self.lstm(x_t, None if h is None else (h, c))
            g = self.rnn(h, g)
            outs.append(self.head(g))
        return torch.stack(outs)


def test_lstm_cell_and_rnn_cell_python_loop():
    torch.manual_seed(0)
    model = CellLoop().double()
    shapes = {"x": (4, "N", 2)}
    assert sg.check(model, shapes=shapes, loss=any_batch, dims={"N": 3}).ok
    assert sg.check(model, shapes=shapes, loss=any_batch, dims={"N": 1}, order=1,
                    wrt=("x",)).ok


def test_formulas_print():
    torch.manual_seed(0)
    lstm = nn.LSTM(3, 4).double()
    g = sg.grad_fn(lstm, shapes={"input": (2, "N", 3)}, loss=lambda o: o[0].sum())
    text = g.text()
    assert "dL/dweight_ih_l0" in text and "σ(" in text and "tanh(" in text
    assert len(text) < 4000
    assert g.latex()
    gru = nn.GRU(2, 3, bidirectional=True).double()
    assert "tanh(" in sg.grad_fn(gru, shapes={"input": (2, 1, 2)}, loss=scalar).text()


def test_trace_and_compile_time_of_a_two_layer_lstm():
    """A 2-layer LSTM of hidden size 32 over 10 steps traces, differentiates and compiles
    in seconds (about 0.4 s in all when this test was written)."""
    torch.manual_seed(0)
    lstm = nn.LSTM(16, 32, num_layers=2).double()
    start = time.perf_counter()
    g = sg.grad_fn(lstm, shapes={"input": (10, "N", 16)}, loss=any_batch)
    g.compile("numpy")
    g.compile("torch")
    assert time.perf_counter() - start < 30


# ----- direct calls of the torch functions -------------------------------------------------

def test_torch_functions_called_directly():
    """torch.lstm / torch.gru / torch.rnn_tanh and the cells with the weights as
    arguments, as nn.Modules call them (the table's handlers)."""
    def f(x, h, c, W_ih, W_hh, b_ih, b_hh):
        out, h_n, c_n = torch.lstm(x, (h, c), [W_ih, W_hh, b_ih, b_hh], True, 1, 0.0, False,
                                   False, False)
        g_out, g_n = torch.gru(x, h, [W_ih[:9], W_hh[:9, :], b_ih[:9], b_hh[:9]], True, 1,
                               0.0, False, False, False)
        r_out, _ = torch.rnn_tanh(x, h, [W_ih[:3], W_hh[:3]], False, 1, 0.0, True, False,
                                  False)
        cell_h, cell_c = torch.lstm_cell(x[0], (h[0], c[0]), W_ih, W_hh, b_ih, b_hh)
        return (scalar((out, h_n, c_n, g_out, g_n, r_out, cell_h, cell_c))
                + scalar(torch.gru_cell(x[1], h[0], W_ih[:9], W_hh[:9], b_ih[:9], b_hh[:9]))
                + scalar(torch.rnn_relu_cell(x[2], h[0], W_ih[:3], W_hh[:3])))

    shapes = {"x": (3, 2, 2), "h": (1, 2, 3), "c": (1, 2, 3), "W_ih": (12, 2),
              "W_hh": (12, 3), "b_ih": (12,), "b_hh": (12,)}
    assert sg.check(f, shapes=shapes).ok


def test_module_called_in_a_plain_function():
    """Outside module_function the module's own forward runs and calls torch.lstm on a
    symbolic input; its parameters are constants there."""
    lstm = make("lstm", num_layers=2)
    assert sg.check(lambda x: scalar(lstm(x)), shapes={"x": (3, 2, 2)}).ok


def test_module_state_restored_and_hooks_run():
    rnn = make("gru")
    seen = []
    rnn.register_forward_hook(lambda module, args, out: seen.append(type(args[0]).__name__))
    sg.grad_fn(rnn, shapes={"input": (3, 2, 2)}, loss=scalar)
    assert seen and "forward" not in vars(rnn)
    out, _ = rnn(torch.zeros(3, 2, 2, dtype=D))
    assert isinstance(out, torch.Tensor)


class DoubledGRU(nn.GRU):
    def forward(self, input, hx=None):
        out, h = super().forward(2 * input, hx)
        return out, h


def test_subclass_overriding_forward_keeps_its_own():
    torch.manual_seed(0)
    rnn = DoubledGRU(2, 3).double()
    assert sg.check(rnn, shapes={"input": (3, 2, 2)}, loss=scalar, order=1).ok


# ----- refusals ----------------------------------------------------------------------------

def test_training_mode_dropout_refused():
    rnn = make("lstm", num_layers=2, dropout=0.5)
    rnn.train()
    with pytest.raises(UnsupportedOpError, match="dropout=0.5 .*training mode.*eval"):
        sg.grad_fn(rnn, shapes={"input": (3, 2, 2)}, loss=scalar)
    rnn.eval()
    assert sg.check(rnn, shapes={"input": (3, 2, 2)}, loss=scalar, order=1).ok
    one_layer = make("gru", dropout=0.0)   # dropout only acts between layers
    one_layer.train()
    assert sg.check(one_layer, shapes={"input": (3, 2, 2)}, loss=scalar, order=1).ok


class Packed(nn.Module):
    def __init__(self, rnn, enforce_sorted=True):
        super().__init__()
        self.rnn, self.enforce_sorted = rnn, enforce_sorted

    def forward(self, x):
        return self.rnn(pack_padded_sequence(x, [3, 2], enforce_sorted=self.enforce_sorted))[1]


@pytest.mark.parametrize("kind", ["rnn-tanh", "lstm", "gru"])
def test_packed_sequences_refused(kind):
    for sorted_ in (True, False):
        with pytest.raises(UnsupportedOpError, match="PackedSequence.*padded tensor"):
            sg.grad_fn(Packed(make(kind), sorted_), shapes={"x": (3, 2, 2)}, loss=scalar)
    with pytest.raises(UnsupportedOpError, match="PackedSequence"):
        x = sg.symbol("x", (5, 2))
        torch.lstm(x, torch.tensor([3, 2]), (x[:1], x[:1]), [x, x], False, 1, 0.0, False,
                   False)


def test_symbolic_sequence_length_refused():
    with pytest.raises(ShapeError, match="sequence length .* symbolic .*concrete"):
        sg.grad_fn(make("lstm"), shapes={"input": ("T", 2, 2)}, loss=scalar)


def test_shape_errors():
    with pytest.raises(ShapeError, match="input_size = 2"):
        sg.grad_fn(make("gru"), shapes={"input": (3, 2, 5)}, loss=scalar)
    with pytest.raises(ShapeError, match="1-D or 2-D"):
        sg.grad_fn(nn.GRUCell(2, 3), shapes={"input": (3, 2, 5)}, loss=scalar)
    with pytest.raises(ShapeError, match="2-D or 3-D"):
        sg.grad_fn(make("rnn-tanh"), shapes={"input": (2,)}, loss=scalar)
    with pytest.raises(ShapeError, match="h_0 has shape"):
        sg.grad_fn(WithState(make("lstm")), shapes={"x": (3, 2, 2), "h0": (1, 2, 4),
                                                    "c0": (1, 2, 3)}, loss=scalar)
    with pytest.raises(ShapeError, match="hx has shape"):
        sg.grad_fn(WithState(make("gru", num_layers=2)),
                   shapes={"x": (3, 2, 2), "h0": (1, 2, 3)}, loss=scalar)
