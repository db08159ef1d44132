"""Ops on concrete values (numbers, NumPy arrays, torch tensors).

A symgrad op called on concrete values runs the very code the compiler emits for it:
the op's spelling for the backend, compiled once per (op, parameters). So the forward
semantics exist once, in the OpDefs' spellings, and a function written with ``sg`` ops
runs unchanged under ``torch.autograd``, which is how ``check`` gets its reference.
"""
import threading

import numpy

from ..core import extensions
from ..core.build import torch_module
from ..core.opdef import OPS
from ..core.program import placeholder
from ..errors import ArgumentError
from .backends import backend

_compiled = {}
_lock = threading.Lock()


def _shape_of(x):
    torch = torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        return tuple(x.shape)
    return numpy.shape(x)


def _function(op, params, target, n):
    """The compiled ``op(operands..., _dt, _dev)`` for ``target``."""
    key = (op, params, target.name)
    fn = _compiled.get(key)
    if fn is not None:
        return fn
    with _lock:
        printer = target.printer()
        operands = [placeholder(i) for i in range(n)]
        body = printer.doprint(OPS[op].expr(dict(params), operands))
        names = ", ".join(str(p) for p in operands)
        src = f"def _op({names}{', ' if names else ''}_dt, _dev):\n    return {body}\n"
        namespace = target.namespace()
        namespace["ArgumentError"] = ArgumentError
        for line in printer.preamble.values():
            exec(line, namespace)  # noqa: S102 - helper definitions of our spellings
        exec(compile(src, f"<symgrad-op-{op}>", "exec"), namespace)  # noqa: S102
        fn = _compiled[key] = namespace["_op"]
    return fn


@extensions.evaluate.provide
def evaluate(op, args, kwargs):
    """``op`` applied to concrete ``args``: torch code if any is a torch tensor."""
    torch = torch_module()
    on_torch = torch is not None and any(isinstance(a, torch.Tensor) for a in args)
    target = backend("torch" if on_torch else "numpy")
    params = OPS[op].params([_shape_of(a) for a in args], kwargs)
    fn = _function(op, params, target, len(args))
    if on_torch:
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        ref = next((a for a in tensors if a.is_floating_point()), tensors[0])
        dt = ref.dtype if ref.is_floating_point() else torch.get_default_dtype()
        args = [a if isinstance(a, torch.Tensor) else torch.as_tensor(a, dtype=dt, device=ref.device)
                for a in args]
        return fn(*args, dt, ref.device)
    out = fn(*args, numpy.float64, None)
    if isinstance(out, numpy.ndarray) and out.ndim == 0:
        return out[()]
    return out
