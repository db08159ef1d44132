"""Ops on concrete values (numbers, NumPy arrays, torch tensors).

A symgrad op called on concrete values runs the very code the compiler emits for it:
the op's template for the backend, compiled once per (op, parameters). So the forward
semantics exist once, in the printers, and a function written with ``sg`` ops runs
unchanged under ``torch.autograd``, which is how ``check`` gets its reference.
"""
import math

import numpy

from .code_printers import templates
from .ops import OPS, _torch
from .program import PLACEHOLDERS

_compiled = {}


def _shape_of(x):
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return tuple(x.shape)
    return numpy.shape(x)


def evaluate(op, args, kwargs):
    torch = _torch()
    backend = "torch" if torch is not None and any(isinstance(a, torch.Tensor) for a in args) \
        else "numpy"
    opdef = OPS[op]
    params = opdef.params([_shape_of(a) for a in args], kwargs)
    key = (op, params, backend)
    fn = _compiled.get(key)
    if fn is None:
        printer = templates(backend).printer
        expr = opdef.expr(dict(params), PLACEHOLDERS[:len(args)])
        body = printer.doprint(expr)
        names = ", ".join(str(p) for p in PLACEHOLDERS[:len(args)])
        src = f"def _op({names}{', ' if names else ''}_dt, _dev):\n    return {body}\n"
        namespace = {"numpy": numpy, "math": math, "torch": torch}
        for line in printer.preamble.values():
            exec(line, namespace)  # noqa: S102 - fixed import lines of our printers
        exec(compile(src, f"<symgrad-op-{op}>", "exec"), namespace)  # noqa: S102
        fn = _compiled[key] = namespace["_op"]
    if backend == "torch":
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
