"""torch.distributions with argument validation on (the default ``validate_args``).

A distribution checks its parameters in ``__init__`` and the value in ``log_prob`` with
``constraint.check(value)`` (elementwise comparisons, reduced with ``Tensor.all``) and then
``if not torch._is_all_true(valid): raise ValueError``: a Python branch on the values.
While tracing, the parameters are symbols with no values, so the branch cannot be
decided. Here the reductions trace as boolean ops (``all``, ``any``), and
``torch._is_all_true`` of a traced boolean is decided where it can be: a check whose
value depends on no symbolic input (constant parameters) is evaluated and fails as
torch's would; a check that depends on the inputs passes while tracing, since it is a
statement about values the trace does not have. The formulas then hold where torch's
checks pass (a Normal's ``scale > 0``); the compiled code does not re-check them, and
``sg.check`` runs torch itself, with validation, on every sample.
"""
from ..core import extensions, ops as sgo
from ..core.build import const
from ..core.graph import Tensor, topo_order
from ..core.shapes import dim_symbols, dims_equal, fmt_shape, shapes_equal
from . import factories
from .dispatch import constant_array, dim_arg, torch_op


def _as_bool(x):
    return x if x.kind == "bool" else sgo.ne(x, 0)


def _reduce(reduction, input, dim, keepdim):
    x = _as_bool(input)
    if not x.shape:
        return x
    reduced = reduction(sgo.cast(x), axis=dim_arg(dim), keepdims=keepdim)
    if x.is_const:      # a constant check (scale > 0 of a constant scale) stays constant
        value = 1.0 if x.attrs["value"] else 0.0
        reduced = const(value, reduced.shape)
    return sgo.gt(reduced, 0.5)


def _all(input, dim=None, keepdim=False, *, out=None):
    return _reduce(sgo.amin, input, dim, keepdim)


def _any(input, dim=None, keepdim=False, *, out=None):
    return _reduce(sgo.amax, input, dim, keepdim)


torch_op("torch.all", "Tensor.all")(_all)
torch_op("torch.any", "Tensor.any")(_any)


@torch_op("Tensor.long", "Tensor.int")
def to_integer(input, memory_format=None):
    """An integer Tensor stays itself (Categorical.log_prob calls ``value.long()`` on
    its integer value); a float one has no differentiable integer form."""
    if input.kind == "int":
        return input
    if input.kind == "bool":
        return sgo.where(input, 1, 0)
    from .dispatch import unsupported
    raise unsupported("torch.Tensor.long", (input,), why=(
        "a float Tensor rounded to integers has no gradient; declare integer inputs as "
        "such (sg.TensorSpec(shape, dtype='int64'), on the command line --shape k=B:int)"))


def _value(x):
    """The NumPy value of a Tensor that depends on no symbolic input and has no symbolic
    dims, computed op by op; None when it depends on inputs or cannot be computed."""
    import numpy
    order = topo_order([x])
    if any(node.op == "symbol" or dim_symbols(node.shape) for node in order):
        return None
    values = {}
    try:
        for node in order:
            if node.is_const and node.kind == "bool":
                values[id(node)] = numpy.full(node.shape, bool(node.attrs["value"]))
            elif not node.inputs:
                values[id(node)] = constant_array("validity check", node, "not a constant")
            else:
                values[id(node)] = extensions.evaluate(
                    node.op, [values[id(i)] for i in node.inputs], dict(node.params))
    except Exception:       # an op that cannot recompute here: the check stays undecided
        return None
    return values[id(x)]


def _decided(x):
    """The truth of a boolean Tensor that depends on no symbolic input, else None."""
    import numpy
    value = _value(x)
    return None if value is None else bool(numpy.all(value))


@torch_op("torch._is_all_true")
def is_all_true(input):
    """A validity check: decided when it depends on constants only, else True while
    tracing (see the module docstring)."""
    value = _decided(_all(input))
    return True if value is None else value


@torch_op("torch._is_any_true")
def is_any_true(input):
    value = _decided(_any(input))
    return True if value is None else value


_VALIDATE = "distributions.Distribution._validate_sample"


def validate_sample(self, value):
    """``Distribution._validate_sample`` (run by ``log_prob``, ``cdf``, ``icdf`` with
    validation on) for a traced value: torch's shape checks with symbolic dims, then the
    support check, decided as ``is_all_true`` decides. torch's own version refuses any
    value that is not a torch.Tensor; other values go to it unchanged."""
    if not isinstance(value, Tensor):
        return factories._originals[_VALIDATE](self, value)
    shape, event = tuple(value.shape), tuple(self._event_shape)
    start = len(shape) - len(event)
    if start < 0 or not shapes_equal(shape[start:], event):
        raise ValueError(f"The right-most size of value must match event_shape: "
                         f"{fmt_shape(shape)} vs {fmt_shape(event)}.")
    expected = tuple(self._batch_shape) + event
    for i, j in zip(reversed(shape), reversed(expected)):
        if i != 1 and j != 1 and not dims_equal(i, j):
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                             f"{fmt_shape(shape)} vs {fmt_shape(expected)}.")
    try:
        support = self.support
    except NotImplementedError:
        return
    concrete = _value(value)
    if concrete is None:
        return      # a statement about values the trace does not have (module docstring)
    import torch
    if not torch._is_all_true(support.check(torch.as_tensor(concrete))):
        raise ValueError(f"Expected value argument (Tensor of shape {fmt_shape(shape)}) to "
                         f"be within the support ({support!r}) of the distribution "
                         f"{type(self).__name__}, but found invalid values:\n{concrete}")


factories.register(_VALIDATE, validate_sample)
