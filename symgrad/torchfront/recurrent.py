"""Recurrent layers on symbolic Tensors: nn.RNN, nn.LSTM, nn.GRU and their cells,
unrolled over the time steps while tracing.

nn.RNN / nn.LSTM / nn.GRU call ``torch.rnn_tanh``, ``torch.rnn_relu``, ``torch.lstm`` and
``torch.gru`` (the same objects as ``torch._VF.*``) with their weights as one flat list;
the cells call ``torch.rnn_tanh_cell``, ``rnn_relu_cell``, ``lstm_cell`` and ``gru_cell``.
All of them honour ``__torch_function__``, so they are mapped here onto sg ops: matmul,
sigmoid, tanh, relu, slices of the gate block, concatenation and stacking. No op of its
own: every step is ordinary algebra, so the gradient is backpropagation through time made
of existing rules, and the formulas read as torch documents the layers.

The modules' own forwards build the zero initial state with ``torch.zeros(..., batch,
...)``, which cannot take a symbolic batch; while a ``ModuleFunction`` traces, these
classes run ``*_module_forward`` below instead (registered with ``module.module_forward``),
which follows torch's forward step by step with sg zeros. The time length must be
concrete (the loop is unrolled); the batch may be symbolic.
"""
from ..core import ops as sgo
from ..core.constructors import zeros
from ..core.graph import Tensor
from ..core.shapes import fmt_shape
from ..errors import ShapeError, UnsupportedOpError
from .dispatch import constant_array, shape_of, torch_op
from .module import module_forward

GATES = {"rnn_tanh": 1, "rnn_relu": 1, "lstm": 4, "gru": 3}
MODES = {"RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu", "LSTM": "lstm", "GRU": "gru"}
PACKED_ADVICE = ("symgrad unrolls a fixed number of steps over a fixed batch, and a "
                 "PackedSequence's batch shrinks along the sequence. Pass the padded tensor "
                 "instead (the one you packed, or pad_packed_sequence's) and read each "
                 "sequence's output at its last real step (output[length - 1, b]) rather than "
                 "h_n; a bidirectional layer's reverse direction would read the padding "
                 "first, so there trace each length (or each sequence) separately")


# ----- one step ---------------------------------------------------------------------------

def _affine(x, w, b):
    out = sgo.matmul(x, sgo.transpose(w))
    return out if b is None else out + b


def _chunks(name, gates, n):
    """torch's ``gates.chunk(n, -1)``: the row blocks of the stacked weights."""
    size = shape_of(gates)[-1]
    if not isinstance(size, int) or size % n:
        raise ShapeError(f"{name}: the gate dim of the weights has size {size}, which must be "
                         f"a concrete multiple of {n}; give the weights concrete sizes")
    step, lead = size // n, (slice(None),) * (len(shape_of(gates)) - 1)
    return [gates[lead + (slice(k * step, (k + 1) * step),)] for k in range(n)]


def rnn_step(x, h, w_ih, w_hh, b_ih=None, b_hh=None, nonlinearity="tanh"):
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh) (relu for nonlinearity='relu')."""
    pre = _affine(x, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    return sgo.tanh(pre) if nonlinearity == "tanh" else sgo.relu(pre)


def lstm_step(x, h, c, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
    """Gates i, f, g, o (the row blocks of W_ih and W_hh, in that order):
    c' = f c + i g, h' = o tanh(c'), projected by W_hr when the LSTM has proj_size."""
    gates = _affine(x, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    i, f, g, o = _chunks("torch.lstm", gates, 4)
    c = sgo.sigmoid(f) * c + sgo.sigmoid(i) * sgo.tanh(g)
    h = sgo.sigmoid(o) * sgo.tanh(c)
    return (h if w_hr is None else _affine(h, w_hr, None)), c


def gru_step(x, h, w_ih, w_hh, b_ih=None, b_hh=None):
    """Gates r, z, n: n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h."""
    x_r, x_z, x_n = _chunks("torch.gru", _affine(x, w_ih, b_ih), 3)
    h_r, h_z, h_n = _chunks("torch.gru", _affine(h, w_hh, b_hh), 3)
    r = sgo.sigmoid(x_r + h_r)
    z = sgo.sigmoid(x_z + h_z)
    n = sgo.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h


# ----- the cells ----------------------------------------------------------------------------

@torch_op("torch.rnn_tanh_cell")
def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return rnn_step(input, hx, w_ih, w_hh, b_ih, b_hh, "tanh")


@torch_op("torch.rnn_relu_cell")
def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return rnn_step(input, hx, w_ih, w_hh, b_ih, b_hh, "relu")


@torch_op("torch.lstm_cell")
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = hx
    return lstm_step(input, h, c, w_ih, w_hh, b_ih, b_hh)


@torch_op("torch.gru_cell")
def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return gru_step(input, hx, w_ih, w_hh, b_ih, b_hh)


# ----- whole sequences ----------------------------------------------------------------------

def _is_zero_state(t):
    """A zero initial state (torch.zeros captured as a constant array, or sg zeros)."""
    if not isinstance(t, Tensor):
        return False
    if t.is_const:
        return t.attrs["value"] == 0
    return t.is_array and not t.attrs["value"].array.any()


def _state(hx, k):
    """The initial state of layer-direction ``k``: hx[k], kept a plain zero when it is."""
    if _is_zero_state(hx):
        return zeros(shape_of(hx)[1:])
    return hx[k]


def run(mode, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first):
    """torch's ``_VF.<mode>`` on a batched input of shape (T, B, in) ((B, T, in) when
    batch_first): every layer and direction unrolled over the T steps. ``hx`` is the
    initial state (num_layers * directions, B, hidden), a pair (h0, c0) for the LSTM.
    Returns (output, h_n) or (output, h_n, c_n) as torch does."""
    name = f"torch.{mode}"
    if train and dropout and num_layers > 1:
        raise UnsupportedOpError(
            f"{name}: dropout={dropout} between the {num_layers} layers in training mode is "
            "random; call module.eval() (or build it with dropout=0) before tracing")
    shape = shape_of(input)
    if len(shape) != 3:
        raise ShapeError(f"{name}: the input must be 3-D (time, batch, features) here, got "
                         f"shape {fmt_shape(shape)}")
    time_axis = 1 if batch_first else 0
    length = shape[time_axis]
    if not isinstance(length, int):
        raise ShapeError(
            f"{name}: the sequence length of the input of shape {fmt_shape(shape)} is "
            f"symbolic ({length}); symgrad unrolls the steps while tracing, so the length "
            "must be concrete (the batch and other dims may be symbolic): give it a number "
            "in shapes, and trace once per length you need")
    if length == 0:
        raise ShapeError(f"{name}: the input of shape {fmt_shape(shape)} has no time steps")
    directions = 2 if bidirectional else 1
    params = list(params)
    per = len(params) // (num_layers * directions) if num_layers * directions else 0
    base = 4 if has_biases else 2
    if per * num_layers * directions != len(params) or per not in (base, base + 1):
        raise ShapeError(f"{name}: {len(params)} weight tensors do not fit {num_layers} "
                         f"layer(s) x {directions} direction(s) with has_biases={has_biases}")
    if mode == "lstm":
        h0, c0 = hx
    else:
        h0, c0 = hx, None
    steps = [input[(slice(None),) * time_axis + (t,)] for t in range(length)]
    last_h, last_c = [], []
    for layer in range(num_layers):
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            w = params[k * per:(k + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[base] if per == base + 1 else None
            h = _state(h0, k)
            c = _state(c0, k) if mode == "lstm" else None
            out = [None] * length
            for t in (range(length) if direction == 0 else reversed(range(length))):
                if mode == "lstm":
                    h, c = lstm_step(steps[t], h, c, w_ih, w_hh, b_ih, b_hh, w_hr)
                elif mode == "gru":
                    h = gru_step(steps[t], h, w_ih, w_hh, b_ih, b_hh)
                else:
                    h = rnn_step(steps[t], h, w_ih, w_hh, b_ih, b_hh, mode[4:])
                out[t] = h
            outputs.append(out)
            last_h.append(h)
            last_c.append(c)
        steps = outputs[0] if directions == 1 else [
            sgo.concatenate(list(pair), axis=-1) for pair in zip(*outputs)]
    output = sgo.stack(steps, axis=time_axis)
    if mode == "lstm":
        return output, sgo.stack(last_h, axis=0), sgo.stack(last_c, axis=0)
    return output, sgo.stack(last_h, axis=0)


def _sequence_handler(mode):
    name = f"torch.{mode}"

    def handler(*args):
        if len(args) == 9 and isinstance(args[3], (tuple, list)):
            raise UnsupportedOpError(f"{name} of a PackedSequence (data, batch_sizes, ...) "
                                     f"cannot be traced: {PACKED_ADVICE}")
        if len(args) != 9:
            raise UnsupportedOpError(f"{name}: arguments not understood ({len(args)} given; "
                                     "expected input, hx, params, has_biases, num_layers, "
                                     "dropout, train, bidirectional, batch_first)")
        return run(mode, *args)
    handler.__name__ = mode
    handler.__doc__ = f"{name}(input, hx, params, has_biases, num_layers, dropout, train, " \
                      "bidirectional, batch_first), unrolled over time."
    torch_op(name)(handler)


for _mode in GATES:
    _sequence_handler(_mode)


@torch_op("torch._pack_padded_sequence")
def pack_padded_sequence(input, lengths, batch_first):
    """What ``nn.utils.rnn.pack_padded_sequence`` computes: the steps' rows of the
    sequences still running, one block per time step (so a PackedSequence of a symbolic
    Tensor can be made, and the recurrent layers refuse it with advice)."""
    import torch
    name = "torch.nn.utils.rnn.pack_padded_sequence"
    lengths = [int(n) for n in constant_array(name, lengths, "lengths must be constant "
                                              "integers (a list or CPU tensor)").ravel()]
    if batch_first:
        input = sgo.swapaxes(input, 0, 1)
    if not lengths or min(lengths) <= 0 or lengths != sorted(lengths, reverse=True):
        raise ShapeError(f"{name}: lengths {lengths} must be positive and sorted in "
                         "decreasing order (or pass enforce_sorted=False)")
    steps = shape_of(input)[0]
    if isinstance(steps, int) and lengths[0] > steps:
        raise ShapeError(f"{name}: a length {lengths[0]} exceeds the {shape_of(input)[0]} "
                         "time steps of the input")
    sizes = [sum(n > t for n in lengths) for t in range(lengths[0])]
    data = sgo.concatenate([input[t, :b] for t, b in enumerate(sizes)], axis=0)
    return data, torch.tensor(sizes, dtype=torch.int64)


# ----- the modules' forwards while tracing --------------------------------------------------

def _refuse_packed(module, input):
    from torch.nn.utils.rnn import PackedSequence
    if isinstance(input, PackedSequence):
        raise UnsupportedOpError(f"{type(module).__name__} given a PackedSequence cannot be "
                                 f"traced: {PACKED_ADVICE}")


def _check_dims(what, t, allowed):
    if not isinstance(t, Tensor) and not hasattr(t, "shape"):
        raise ShapeError(f"{what} must be a tensor, got {type(t).__name__}")
    if len(shape_of(t)) not in allowed:
        raise ShapeError(f"{what} must be {' or '.join(f'{d}-D' for d in allowed)}, got shape "
                         f"{fmt_shape(shape_of(t))}")


def _check_shape(what, t, expected):
    actual = shape_of(t)
    if len(actual) != len(expected) or any(
            a != e and isinstance(a, int) and isinstance(e, int) for a, e in zip(actual, expected)):
        raise ShapeError(f"{what} has shape {fmt_shape(actual)}, expected "
                         f"{fmt_shape(tuple(expected))}")


def _node(t):
    from .dispatch import _as_node
    return _as_node(t)


@module_forward("torch.nn.modules.rnn.RNN", "torch.nn.modules.rnn.LSTM",
                "torch.nn.modules.rnn.GRU")
def rnn_module_forward(module, input, hx=None):
    """nn.RNN / nn.LSTM / nn.GRU's forward on symbolic Tensors (torch's checks, zero
    initial states of a possibly symbolic batch, unbatched 2-D inputs)."""
    kind = type(module).__name__
    _refuse_packed(module, input)
    mode = MODES[module.mode]
    if mode == "rnn_tanh" and getattr(module, "nonlinearity", "tanh") == "relu":
        mode = "rnn_relu"
    input, hx = _node(input), _node(hx)
    _check_dims(f"{kind}: the input", input, (2, 3))
    batched = len(shape_of(input)) == 3
    batch_axis = 0 if module.batch_first else 1
    if not batched:
        input = sgo.unsqueeze(input, batch_axis)
    shape = shape_of(input)
    if isinstance(shape[-1], int) and shape[-1] != module.input_size:
        raise ShapeError(f"{kind}: the input of shape {fmt_shape(shape)} must have "
                         f"input_size = {module.input_size} features in its last dim")
    batch = shape[batch_axis]
    directions = 2 if module.bidirectional else 1
    out_size = module.proj_size if getattr(module, "proj_size", 0) > 0 else module.hidden_size
    h_shape = (module.num_layers * directions, batch, out_size)
    c_shape = (module.num_layers * directions, batch, module.hidden_size)
    if mode == "lstm":
        if hx is None:
            hx = (zeros(h_shape), zeros(c_shape))
        else:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise ShapeError(f"{kind}: hx must be a pair (h_0, c_0)")
            for part, t in zip(("h_0", "c_0"), hx):
                _check_dims(f"{kind}: {part}", t, (3,) if batched else (2,))
            if not batched:
                hx = tuple(sgo.unsqueeze(t, 1) for t in hx)
            _check_shape(f"{kind}: h_0", hx[0], h_shape)
            _check_shape(f"{kind}: c_0", hx[1], c_shape)
            hx = tuple(hx)
    elif hx is None:
        hx = zeros(h_shape)
    else:
        _check_dims(f"{kind}: hx", hx, (3,) if batched else (2,))
        if not batched:
            hx = sgo.unsqueeze(hx, 1)
        _check_shape(f"{kind}: hx", hx, h_shape)
    params = [_node(getattr(module, n)) for n in module._flat_weights_names]
    result = run(mode, input, hx, params, module.bias, module.num_layers, module.dropout,
                 module.training, module.bidirectional, module.batch_first)
    output, hidden = result[0], result[1:]
    if not batched:
        output = sgo.squeeze(output, batch_axis)
        hidden = tuple(sgo.squeeze(t, 1) for t in hidden)
    return output, (hidden if mode == "lstm" else hidden[0])


def _cell_forward(mode, module, input, hx):
    """A cell's forward on symbolic Tensors: torch's checks, zero states of a possibly
    symbolic batch, unbatched 1-D inputs."""
    kind = type(module).__name__
    input, hx = _node(input), _node(hx)
    _check_dims(f"{kind}: the input", input, (1, 2))
    batched = len(shape_of(input)) == 2
    if not batched:
        input = sgo.unsqueeze(input, 0)
    shape = (shape_of(input)[0], module.hidden_size)
    parts = ("h_0", "c_0") if mode == "lstm" else ("hx",)
    if hx is None:
        hx = tuple(zeros(shape) for _ in parts)
    else:
        if mode == "lstm" and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise ShapeError(f"{kind}: hx must be a pair (h_0, c_0)")
        hx = tuple(hx) if mode == "lstm" else (hx,)
        for part, t in zip(parts, hx):
            _check_dims(f"{kind}: {part}", t, (1, 2))
        if not batched:
            hx = tuple(sgo.unsqueeze(t, 0) for t in hx)
        for part, t in zip(parts, hx):
            _check_shape(f"{kind}: {part}", t, shape)
    weights = [_node(getattr(module, n)) for n in ("weight_ih", "weight_hh", "bias_ih",
                                                    "bias_hh")]
    if mode == "lstm":
        out = lstm_step(input, hx[0], hx[1], *weights)
        return out if batched else tuple(sgo.squeeze(t, 0) for t in out)
    if mode == "gru":
        out = gru_step(input, hx[0], *weights)
    else:
        if module.nonlinearity not in ("tanh", "relu"):
            raise UnsupportedOpError(f"{kind}: unknown nonlinearity {module.nonlinearity!r}")
        out = rnn_step(input, hx[0], *weights, module.nonlinearity)
    return out if batched else sgo.squeeze(out, 0)


@module_forward("torch.nn.modules.rnn.RNNCell")
def rnn_cell_module_forward(module, input, hx=None):
    return _cell_forward("rnn", module, input, hx)


@module_forward("torch.nn.modules.rnn.LSTMCell")
def lstm_cell_module_forward(module, input, hx=None):
    return _cell_forward("lstm", module, input, hx)


@module_forward("torch.nn.modules.rnn.GRUCell")
def gru_cell_module_forward(module, input, hx=None):
    return _cell_forward("gru", module, input, hx)
