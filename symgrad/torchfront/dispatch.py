"""PyTorch code on symbolic Tensors: the table from torch callables to sg code, and the
dispatch through it.

``sg.Tensor`` defines ``__torch_function__``, so a torch function that meets a symbolic
Tensor among its arguments (``torch.tanh(x)``, ``F.linear(x, W, b)``, a torch tensor on
the left of an operator: ``t @ x``) calls ``dispatch`` here instead of computing. The
table maps torch's dotted names to handlers written with sg ops under torch's own
parameter names (``input``, ``dim``, ``keepdim``), so the recorded graph holds only ops
with rules in ``rules/``. Two kinds of entries:

* every torch callable an OpDef names (``OpDef.torch_names``) maps onto that op through
  one generic handler, which reads torch's argument names (``input``, ``other``, ``dim``,
  ``keepdim``) as the op's; nothing here names those ops;
* torch callables with more to them (``torch.add``'s alpha, ``F.gelu``,
  ``F.layer_norm``, ...) have handlers of their own in the sibling modules, decorated
  ``@torch_op(...)``: compositions of sg ops.

Methods: ``x.view(...)`` on a symbolic Tensor finds no such method on ``sg.Tensor``, so it
asks ``tensor_attribute``, which binds the same table's ``torch.Tensor.<name>`` handler
(or a property such as ``mT``). Anything not in the table raises ``UnsupportedOpError``
naming the torch function. ``supported()`` lists the table.
"""
import inspect
import sys

from ..core import extensions, ops as sgo
from ..core.build import as_tensor
from ..core.graph import Tensor
from ..core.opdef import OPS
from ..core.shapes import fmt_shape
from ..errors import ParameterError, RegistryError, UnsupportedOpError

TORCH_FUNCTIONS = {}   # dotted torch name -> handler of its own (sg code, torch's signature)
TENSOR_PROPERTIES = {}  # torch.Tensor property name -> function of the Tensor
REFUSED = {}   # dotted torch name -> why it has no formula (said in its UnsupportedOpError)

_ALIAS_PREFIXES = {"F.": "torch.nn.functional.", "Tensor.": "torch.Tensor.",
                   "linalg.": "torch.linalg.", "special.": "torch.special."}


def torch_op(*names):
    """Register a handler for torch callables given by dotted name (``torch.add``,
    ``Tensor.add`` for the method, ``F.gelu`` for ``torch.nn.functional.gelu``)."""
    def register(handler):
        for name in names:
            for short, full in _ALIAS_PREFIXES.items():
                if name.startswith(short):
                    name = full + name[len(short):]
            if name in TORCH_FUNCTIONS:
                raise RegistryError(f"torch front end: {name} is mapped twice")
            TORCH_FUNCTIONS[name] = handler
        return handler
    return register


def refuse(why, *names):
    """Record torch callables that cannot be traced and why (``F.`` and ``Tensor.``
    prefixes as in ``torch_op``)."""
    for name in names:
        for short, full in _ALIAS_PREFIXES.items():
            if name.startswith(short):
                name = full + name[len(short):]
        REFUSED[name] = why


def tensor_property(*names):
    def register(fn):
        for name in names:
            TENSOR_PROPERTIES[name] = fn
        return fn
    return register


def supported():
    """The dotted names of every torch callable the front end maps, sorted."""
    return sorted(table())


def resolve(name):
    """The torch object a dotted name stands for, or None in this torch version."""
    import importlib
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = inspect.getattr_static(obj, attr, None) if isinstance(obj, type) \
                else getattr(obj, attr, None)
            if obj is None:
                return None
        return obj
    return None


_tables = {}   # views of the table, by the registry sizes they were built from


def table():
    """{dotted torch name: handler}: the handlers of their own, and the generic handler
    for every torch name an OpDef gives."""
    key = ("names", len(OPS), len(TORCH_FUNCTIONS))
    merged = _tables.get(key)
    if merged is None:
        merged = dict(TORCH_FUNCTIONS)
        for op in OPS.values():
            for name in op.torch_names:
                if name in merged:
                    raise RegistryError(f"torch front end: {name} is mapped twice (by a handler "
                                     f"and by the OpDef of {op.name})")
                merged[name] = op_handler(op, name)
        _tables[key] = merged
    return merged


def by_callable():
    """{torch callable: (dotted name, handler)}, for ``dispatch``."""
    key = ("callables", len(OPS), len(TORCH_FUNCTIONS))
    found = _tables.get(key)
    if found is None:
        found = {}
        for name, handler in table().items():
            obj = resolve(name)
            if obj is None or isinstance(obj, (property, type)) or not callable(obj):
                continue
            found.setdefault(obj, (name, handler))
            if isinstance(obj, (staticmethod, classmethod)):
                found.setdefault(obj.__func__, (name, handler))
        _tables[key] = found
    return found


# torch's argument names, read as an op's: an operand by position, or a parameter
TORCH_ARGUMENTS = {"input": 0, "self": 0, "A": 0, "x": 0, "other": 1, "B": 1, "y": 1,
                   "exponent": 1, "vec2": 1, "dim": "axis", "keepdim": "keepdims",
                   "diagonal": "k"}


def op_handler(op, name):
    """The handler mapping the torch callable ``name`` onto ``op``: torch's argument names
    become the op's; ``out=None``, a floating ``dtype`` and ``inplace`` (a traced result
    is the returned value either way) are accepted, anything else is a clear error."""
    signature = inspect.signature(op.function)

    def handler(*args, **kwargs):
        args = list(args)
        reject(name, out=kwargs.pop("out", None))
        kwargs.pop("inplace", None)
        if "dtype" in kwargs:
            check_float_dtype(name, kwargs.pop("dtype"))
        operands = sorted((TORCH_ARGUMENTS[key], key) for key in kwargs
                          if isinstance(TORCH_ARGUMENTS.get(key), int)
                          and key not in signature.parameters)
        for position, key in operands:
            if position != len(args):
                raise unsupported(name, args, kwargs, f"operand {key}= given without the "
                                  "operands before it")
            args.append(kwargs.pop(key))
        for key in list(kwargs):
            if key in TORCH_ARGUMENTS and key not in signature.parameters:
                kwargs[TORCH_ARGUMENTS[key]] = kwargs.pop(key)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise unsupported(name, args, kwargs, f"arguments not understood: {e}") from None
        if "axis" in bound.arguments:
            bound.arguments["axis"] = dim_arg(bound.arguments["axis"])
        return op.function(*bound.args, **bound.kwargs)
    handler.__name__ = name.rsplit(".", 1)[-1]
    handler.__doc__ = f"{name} as the op {op.name}."
    handler.op = op
    return handler


def torch_name(func):
    """A readable dotted name for a torch callable (``torch.nn.functional.conv2d``)."""
    entry = by_callable().get(func)
    if entry is not None:
        return entry[0]
    name = getattr(func, "__name__", repr(func))
    qual = getattr(func, "__qualname__", name) or name
    if qual.startswith(("TensorBase.", "Tensor.")):
        return "torch.Tensor." + name
    for namespace in ("torch.nn.functional", "torch", "torch.linalg", "torch.fft",
                      "torch.special"):
        for attr, value in vars(resolve(namespace)).items():
            if value is func and not attr.startswith("_"):
                return f"{namespace}.{attr}"
    module = getattr(func, "__module__", None)
    return f"{module}.{qual}" if module else qual


def _describe(args, kwargs):
    flat = []
    for a in list(args) + list((kwargs or {}).values()):
        flat.extend(a if type(a) in (list, tuple) else [a])
    shapes = [fmt_shape(a.shape) for a in flat if isinstance(a, Tensor)]
    return ("symbolic Tensors of shapes " + ", ".join(shapes)) if shapes else "symbolic Tensors"


def unsupported(name, args=(), kwargs=None, why=None):
    why = why or REFUSED.get(name)
    if why is None and name.endswith("_") and not name.endswith("__"):
        why = (f"it works in place; write the out-of-place form ({name.rsplit('.', 1)[-1][:-1]}"
               "), since a traced formula cannot mutate its inputs")
    problem = f"cannot be traced as called: {why}" if why else "has no symgrad mapping"
    return UnsupportedOpError(
        f"{name} (applied to {_describe(args, kwargs)}) {problem}.")


def dispatch(func, types, args=(), kwargs=None):
    """``__torch_function__`` of ``sg.Tensor``: run the mapped handler."""
    kwargs = kwargs or {}
    entry = by_callable().get(func)
    if entry is None:
        raise unsupported(torch_name(func), args, kwargs)
    name, handler = entry
    return call(name, handler, args, kwargs)


def call(name, handler, args, kwargs):
    try:
        inspect.signature(handler).bind(*args, **kwargs)
    except TypeError as e:
        raise unsupported(name, args, kwargs, f"arguments not understood: {e}") from None
    args = [_as_node(a) for a in args]
    kwargs = {k: _as_node(v) for k, v in kwargs.items()}
    return handler(*args, **kwargs)


def _as_node(value):
    """torch tensors among the arguments as constant nodes: handlers then combine them with
    Python operators as sg ops, never dispatching back into torch."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        return as_tensor(value)
    if type(value) in (list, tuple):
        return type(value)(_as_node(v) for v in value)
    return value


def constant_array(name, value, why):
    """The NumPy value of a constant operand (a constant node, array or number)."""
    import numpy
    if isinstance(value, Tensor):
        if value.is_array:
            return value.attrs["value"].array
        if value.is_const and all(isinstance(d, int) for d in value.shape):
            return numpy.full(value.shape, float(value.attrs["value"]))
        raise unsupported(name, (value,), why=why)
    return numpy.asarray(value)


class UnsupportedAttributeError(UnsupportedOpError, AttributeError):
    """A torch.Tensor attribute with no mapping (an AttributeError too, so ``hasattr``
    stays a question)."""


def tensor_attribute(x, name):
    """``x.<name>`` for a name ``sg.Tensor`` does not define: a mapped torch method bound
    to ``x``, a mapped property, or an error naming ``torch.Tensor.<name>``."""
    if name == "_sympy_":
        from .sympy_guard import sympy_conversion
        return lambda: sympy_conversion(x)
    if name.startswith("__") or name == "_fields":
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")
    if name in TENSOR_PROPERTIES:
        return TENSOR_PROPERTIES[name](x)
    full = "torch.Tensor." + name
    handler = table().get(full)
    if handler is not None:
        def method(*args, **kwargs):
            return call(full, handler, (x,) + args, kwargs)
        method.__name__ = name
        return method
    torch = sys.modules.get("torch")   # a library probing an attribute must not import torch
    if torch is not None and hasattr(torch.Tensor, name):
        raise UnsupportedAttributeError(str(unsupported(full, (x,))))
    raise AttributeError(f"'Tensor' object has no attribute {name!r}")


class Unavailable:
    """A result symgrad cannot trace (the indices of ``torch.max(x, dim)``); it may be
    ignored, but any use raises."""

    def __init__(self, what):
        self._what = what

    def _fail(self, *args, **kwargs):
        raise UnsupportedOpError(
            f"{self._what} cannot be traced: symgrad formulas are real-valued and "
            "differentiable, and integer results such as indices have no formula. Use the "
            "values only, or compute the indices outside the traced function")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        first = next(a for a in list(args) + list((kwargs or {}).values())
                     if isinstance(a, Unavailable))
        first._fail()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self._fail()

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __getitem__ = __bool__ = __index__ = __int__ = __float__ = __eq__ = __lt__ = _fail
    __gt__ = __le__ = __ge__ = __ne__ = __matmul__ = __rmatmul__ = __neg__ = __iter__ = _fail
    __hash__ = object.__hash__

    def __repr__(self):
        return f"<{self._what}: not traceable>"


# ----- helpers --------------------------------------------------------------------------

def shape_of(x):
    if isinstance(x, Tensor):
        return x.shape
    return tuple(getattr(x, "shape", ()))


def rank_of(x):
    return len(shape_of(x))


def is_tensorlike(x):
    return isinstance(x, Tensor) or hasattr(x, "shape") and hasattr(x, "dtype")


def dim_arg(dim):
    """torch's dim argument (int, tuple, list, torch.Size or None) as an sg axis."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(int(d) for d in dim) or None
    return int(dim)


def sizes_arg(args):
    """torch's ``*size`` or ``size`` argument as one tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (
            len(args) == 1 and type(args[0]).__name__ == "Size"):
        return tuple(args[0])
    return tuple(args)


FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64", "float", "double", "half"}


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def check_float_dtype(name, dtype):
    if dtype is not None and dtype_name(dtype) not in FLOAT_DTYPES:
        raise unsupported(name, why=f"dtype {dtype}: symgrad traces real (floating-point) "
                          "values only")


def legacy_reduction(name, reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        from torch.nn import _reduction
        return _reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    return reduction


def reduce_loss(loss, reduction, name):
    if reduction == "mean":
        return sgo.mean(loss)
    if reduction == "sum":
        return sgo.sum(loss)
    if reduction == "none":
        return loss
    raise ParameterError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def reject(name, **options):
    for option, value in options.items():
        if value is not None and value is not False:
            raise unsupported(name, why=f"the argument {option}={value!r} is not mapped")


extensions.torch_function.provide(dispatch)
extensions.torch_attribute.provide(tensor_attribute)
