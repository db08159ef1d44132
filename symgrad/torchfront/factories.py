"""torch's factory functions with symbolic sizes: ``torch.zeros(n)``, ``torch.ones(B, 4*H)``,
``torch.full``, ``torch.empty``, ``torch.eye(n)`` and ``torch.arange(n)`` where ``n`` is a
dim of a traced input (``x.shape[0]``).

A factory call holds no tensor, so torch parses its sizes (and refuses a SymPy dim)
before any ``__torch_function__`` could see them. While a function is traced,
``symbolic_sizes()`` puts thin wrappers in front of these functions on the torch module:
a call with a symbolic size builds the sg value, any other call goes to torch unchanged
(also from other threads, which see the wrappers while a trace runs). Nested and
concurrent traces share one installation, removed when the last ends. The same
mechanism gives ``F._canonical_mask`` (the boolean-to-additive mask conversion of
attention and the Transformer layers, an in-place write) an out-of-place form.
"""
import contextlib
import sys
import threading

import sympy

from ..core import ops as sgo
from ..core.build import const
from ..core.graph import Tensor
from ..core.ops.indexing import positions, stack
from ..core.ops.linalg import eye as sg_eye
from ..core.shapes import as_dim, translate_number_error
from ..errors import ParameterError

_lock = threading.Lock()
_active = 0
_originals = {}


def _is_symbolic(v):
    return isinstance(v, Tensor) or isinstance(v, sympy.Basic) and not v.is_Integer


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(size)


def _symbolic(values):
    return any(_is_symbolic(v) for v in values)


def _dims(name, sizes):
    out = []
    for d in sizes:
        if isinstance(d, Tensor):
            raise ParameterError(f"torch.{name}: a size must be a dim (x.shape[0]), not a "
                                 "traced Tensor's value")
        out.append(as_dim(sympy.sympify(d)))
    return tuple(out)


def _check_dtype(name, dtype):
    if dtype is not None and "float" not in str(dtype) and "double" not in str(dtype):
        raise ParameterError(f"torch.{name}(..., dtype={dtype}) with a symbolic size: symgrad "
                             "builds float arrays here; leave dtype out")


def _filled(name, value):
    def factory(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False, memory_format=None, names=None):
        sizes = _sizes(size)
        if not _symbolic(sizes):
            return _originals[name](*size, out=out, dtype=dtype, layout=layout, device=device,
                                    requires_grad=requires_grad, pin_memory=pin_memory,
                                    **({"memory_format": memory_format}
                                       if memory_format is not None else {}))
        _check_dtype(name, dtype)
        return sgo.broadcast_to(const(float(value)), _dims(name, sizes))
    return factory


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, names=None):
    sizes = tuple(size)
    if not _symbolic(sizes):
        return _originals["full"](size, fill_value, out=out, dtype=dtype, layout=layout,
                                  device=device, requires_grad=requires_grad,
                                  pin_memory=pin_memory)
    _check_dtype("full", dtype)
    return sgo.broadcast_to(fill_value if isinstance(fill_value, Tensor)
                            else const(float(fill_value)), _dims("full", sizes))


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    if not _symbolic((n, m)):
        args = (n,) if m is None else (n, m)
        return _originals["eye"](*args, out=out, dtype=dtype, layout=layout, device=device,
                                 requires_grad=requires_grad, pin_memory=pin_memory)
    _check_dtype("eye", dtype)
    (rows,) = _dims("eye", (n,))
    if m is not None and sympy.simplify(sympy.sympify(m) - rows) != 0:
        raise ParameterError(f"torch.eye({n}, {m}): a rectangular identity with symbolic "
                             "sizes is not supported; use torch.eye(n)")
    return sg_eye(rows)


def arange(*args, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    if not _symbolic(args):
        return _originals["arange"](*args, out=out, dtype=dtype, layout=layout, device=device,
                                    requires_grad=requires_grad, pin_memory=pin_memory)
    start, end, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
    if _is_symbolic(step) or step == 0:
        raise ParameterError(f"torch.arange{tuple(args)}: the step must be a nonzero number")
    length = sympy.ceiling((sympy.sympify(end) - start) / sympy.nsimplify(step))
    (n,) = _dims("arange", (length,))
    counts = positions(n)
    return start + step * counts if (start, step) != (0, 1) else counts


def canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """torch.nn.functional._canonical_mask, which nn.MultiheadAttention and the
    Transformer layers call on their masks: it turns a boolean mask into an additive one
    with ``zeros_like(mask).masked_fill_(mask, -inf)``, an in-place write a trace cannot
    follow; here the same value out of place."""
    if isinstance(mask, Tensor) and mask.kind == "bool":
        return sgo.where(mask, const(float("-inf")), const(0.0))
    return _originals["nn.functional._canonical_mask"](
        mask, mask_name, other_type, other_name, target_type, check_other)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """``torch.tensor(n)`` of a dim (or a list of dims): the dim as a constant, so
    ``torch.log(torch.tensor(x.shape[0]))`` traces."""
    return _from_dims("tensor", data, dtype, lambda: _originals["tensor"](
        data, dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory))


def as_tensor(data, dtype=None, device=None):
    return _from_dims("as_tensor", data, dtype,
                      lambda: _originals["as_tensor"](data, dtype=dtype, device=device))


def _from_dims(name, data, dtype, original):
    if isinstance(data, Tensor):        # torch.as_tensor(x) of a traced x (in torch code)
        if dtype is None or data.kind == "float" and "float" in str(dtype) or \
                data.kind != "float" and "float" not in str(dtype):
            return data
        return sgo.cast(data) if data.kind == "bool" else original()
    items = data if type(data) in (list, tuple) else None
    if not (_is_symbolic(data) and not isinstance(data, Tensor)
            or items is not None and items and all(not isinstance(v, (list, tuple, Tensor))
                                                   for v in items) and _symbolic(items)):
        return original()
    _check_dtype(name, dtype)
    if items is None:
        return const(sympy.sympify(data))
    return stack([v if isinstance(v, Tensor) else const(sympy.sympify(v)) for v in items])


_WRAPPERS = {"zeros": _filled("zeros", 0.0), "ones": _filled("ones", 1.0),
             "empty": _filled("empty", 0.0), "full": full, "eye": eye, "arange": arange,
             "tensor": tensor, "as_tensor": as_tensor,
             "nn.functional._canonical_mask": canonical_mask}


def register(dotted, wrapper):
    """Put ``wrapper`` in front of ``torch.<dotted>`` while a trace runs (as the
    factories above are); for other families of the torch front end."""
    _WRAPPERS[dotted] = wrapper


def _owner(torch, dotted):
    *path, name = dotted.split(".")
    owner = torch
    for part in path:
        owner = getattr(owner, part)
    return owner, name


@contextlib.contextmanager
def _dim_errors():
    """A TypeError from an expression of dims where Python needs a number (``float(n -
    1)``, ``range(2 * n)``) as the DimValueError that says what to do instead."""
    try:
        yield
    except TypeError as e:
        translated = translate_number_error(e)
        if translated is None:
            raise
        raise translated from e


@contextlib.contextmanager
def symbolic_sizes():
    """While active, torch's factories accept symbolic sizes (see the module docstring)."""
    global _active
    torch = sys.modules.get("torch")
    if torch is None:
        with _dim_errors():
            yield
        return
    with _lock:
        if _active == 0:
            for name, wrapper in _WRAPPERS.items():
                owner, attr = _owner(torch, name)
                if hasattr(owner, attr):
                    _originals[name] = getattr(owner, attr)
                    setattr(owner, attr, wrapper)
        _active += 1
    try:
        with _dim_errors():
            yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                for name, original in _originals.items():
                    owner, attr = _owner(torch, name)
                    setattr(owner, attr, original)
