"""PyTorch code on symbolic Tensors: torch functions, Tensor methods and operators.

``sg.Tensor`` defines ``__torch_function__``, so a torch function that meets a symbolic
Tensor among its arguments (``torch.tanh(x)``, ``F.linear(x, W, b)``, a torch tensor on
the left of an operator: ``t @ x``) calls ``dispatch`` here instead of computing.
``dispatch`` looks the torch callable up in ``TORCH_FUNCTIONS``: a table from torch's
dotted names to handlers written with sg ops under torch's own parameter names
(``input``, ``dim``, ``keepdim``), so the recorded graph holds only ops with rules in
``rules/`` and every gradient comes from those rules. Functions without a rule of their
own (einsum, gelu, silu, layer_norm, scaled_dot_product_attention, ...) are compositions.
This module maps ``torch.*`` and ``torch.Tensor``; ``torch_nn`` maps
``torch.nn.functional``. Torch tensors among the arguments arrive as constant nodes.

Methods: ``x.view(...)`` on a symbolic Tensor finds no such method on ``sg.Tensor``, so
``Tensor.__getattr__`` asks ``tensor_attribute``, which binds the same table's
``torch.Tensor.<name>`` handler (or a property such as ``mT``). Methods ``sg.Tensor``
defines itself (``sum``, ``mean``, ``reshape``, ``softmax``, ...) take torch's ``dim`` and
``keepdim`` too (the few differences are listed in tests/test_torch_frontend.py).

Anything not in the table raises ``UnsupportedOpError`` naming the torch function and
saying how to add it. ``supported()`` lists the table.
"""
import builtins
import functools
import inspect
import math
import sys

from . import indexing, linalg, nn, reductions
from . import ops as sgo
from .errors import ShapeError, UnsupportedOpError
from .graph import Tensor, const
from .shapes import fmt_shape, normalize_axis, numel

TORCH_FUNCTIONS = {}   # dotted torch name -> handler (sg ops, torch's signature)
TENSOR_PROPERTIES = {}  # torch.Tensor property name -> function of the Tensor

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
                raise ValueError(f"torch front end: {name} is mapped twice")
            TORCH_FUNCTIONS[name] = handler
        _by_callable.cache_clear()   # a mapping added after the first dispatch counts
        return handler
    return register


def tensor_property(*names):
    def register(fn):
        for name in names:
            TENSOR_PROPERTIES[name] = fn
        return fn
    return register


def supported():
    """The dotted names of every torch callable the front end maps, sorted."""
    return sorted(TORCH_FUNCTIONS)


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


@functools.lru_cache(maxsize=None)
def _by_callable():
    table = {}
    for name, handler in TORCH_FUNCTIONS.items():
        obj = resolve(name)
        if obj is None or isinstance(obj, (property, type)) or not callable(obj):
            continue
        table.setdefault(obj, (name, handler))
        if isinstance(obj, (staticmethod, classmethod)):
            table.setdefault(obj.__func__, (name, handler))
    return table


def torch_name(func):
    """A readable dotted name for a torch callable (``torch.nn.functional.conv2d``)."""
    entry = _by_callable().get(func)
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
    if why is None and name.endswith("_") and not name.endswith("__"):
        why = (f"it works in place; write the out-of-place form ({name.rsplit('.', 1)[-1][:-1]}"
               "), since a traced formula cannot mutate its inputs")
    problem = f"cannot be traced as called: {why}" if why else "has no symgrad mapping"
    return UnsupportedOpError(
        f"{name} (applied to {_describe(args, kwargs)}) {problem}. To support it, map it "
        "onto sg ops in "
        f"symgrad/torch_frontend.py or torch_nn.py (a function decorated "
        f"@torch_op({name!r}) written with sg ops, whose gradient then comes from "
        "existing rules), or add a new op to "
        "symgrad/ops.py with its derivative rule under rules/*.yaml. "
        "sg.rules.names() lists the ops with rules; symgrad.torch_frontend.supported() "
        "the torch functions already mapped")


def dispatch(func, types, args=(), kwargs=None):
    """``__torch_function__`` of ``sg.Tensor``: run the mapped handler."""
    kwargs = kwargs or {}
    entry = _by_callable().get(func)
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
        return sgo.as_tensor(value)
    if type(value) in (list, tuple):
        return type(value)(_as_node(v) for v in value)
    return value


def constant_array(name, value, why):
    """The NumPy value of a constant operand (a constant node, array or number)."""
    import numpy
    if isinstance(value, Tensor):
        if value.op == "array":
            return value.attrs["value"].array
        if value.op == "const" and all(isinstance(d, int) for d in value.shape):
            return numpy.full(value.shape, float(value.attrs["value"]))
        raise unsupported(name, (value,), why=why)
    return numpy.asarray(value)


class UnsupportedAttributeError(UnsupportedOpError, AttributeError):
    """A torch.Tensor attribute with no mapping (an AttributeError too, so ``hasattr``
    stays a question)."""


def tensor_attribute(x, name):
    """``x.<name>`` for a name ``sg.Tensor`` does not define: a mapped torch method bound
    to ``x``, a mapped property, or an error naming ``torch.Tensor.<name>``."""
    if name.startswith("__") or name in ("_sympy_", "_fields"):
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")
    if name in TENSOR_PROPERTIES:
        return TENSOR_PROPERTIES[name](x)
    full = "torch.Tensor." + name
    handler = TORCH_FUNCTIONS.get(full)
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

def _shape(x):
    if isinstance(x, Tensor):
        return x.shape
    return tuple(getattr(x, "shape", ()))


def _rank(x):
    return len(_shape(x))


def _is_tensorlike(x):
    return isinstance(x, Tensor) or hasattr(x, "shape") and hasattr(x, "dtype")


def _dim(dim):
    """torch's dim argument (int, tuple, list, torch.Size or None) as an sg axis."""
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(int(d) for d in dim) or None
    return int(dim)


def _sizes(args):
    """torch's ``*size`` or ``size`` argument as one tuple."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (
            len(args) == 1 and type(args[0]).__name__ == "Size"):
        return tuple(args[0])
    return tuple(args)


_FLOAT_DTYPES = {"float16", "bfloat16", "float32", "float64", "float", "double", "half"}


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _float_dtype(name, dtype):
    if dtype is not None and _dtype_name(dtype) not in _FLOAT_DTYPES:
        raise unsupported(name, why=f"dtype {dtype}: symgrad traces real (floating-point) "
                          "values only")


def _reduction(name, reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        from torch.nn import _reduction
        return _reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    return reduction


def _reduce(loss, reduction, name):
    if reduction == "mean":
        return sgo.mean(loss)
    if reduction == "sum":
        return sgo.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _no(name, **options):
    for option, value in options.items():
        if value is not None and value is not False:
            raise unsupported(name, why=f"the argument {option}={value!r} is not mapped")


# ----- pointwise ----------------------------------------------------------------------

def _unary(names, fn):
    def handler(input, *, out=None):
        _no(names[0], out=out)
        return fn(input)
    handler.__name__ = names[0].rsplit(".", 1)[-1]
    torch_op(*names)(handler)


for _name, _fn in {
        "abs": sgo.abs, "absolute": sgo.abs, "neg": sgo.neg, "negative": sgo.neg,
        "exp": sgo.exp, "log": sgo.log, "log1p": sgo.log1p, "expm1": sgo.expm1,
        "sqrt": sgo.sqrt, "square": sgo.square, "sin": sgo.sin, "cos": sgo.cos,
        "tan": sgo.tan, "asin": sgo.asin, "arcsin": sgo.asin, "acos": sgo.acos,
        "arccos": sgo.acos, "atan": sgo.atan, "arctan": sgo.atan, "sinh": sgo.sinh,
        "cosh": sgo.cosh, "tanh": sgo.tanh, "sigmoid": sgo.sigmoid, "relu": sgo.relu,
        "erf": sgo.erf, "sign": sgo.sign, "sgn": sgo.sign,
        "rsqrt": lambda x: 1 / sgo.sqrt(x), "reciprocal": lambda x: 1 / x,
        "erfc": lambda x: 1 - sgo.erf(x), "log2": lambda x: sgo.log(x) / math.log(2),
        "log10": lambda x: sgo.log(x) / math.log(10), "exp2": lambda x: sgo.pow(2.0, x),
        "logical_not": sgo.logical_not}.items():
    _aliases = [f"torch.{_name}", f"Tensor.{_name}"]
    if _name in ("expm1", "log1p", "erf", "erfc", "exp2"):
        _aliases.append(f"special.{_name}")
    _unary(_aliases, _fn)
torch_op("special.expit")(lambda input, *, out=None: sgo.sigmoid(input))


@torch_op("torch.add", "Tensor.add")
def add(input, other, *, alpha=1, out=None):
    _no("torch.add", out=out)
    return input + (other if alpha == 1 else alpha * other)


@torch_op("torch.sub", "torch.subtract", "Tensor.sub", "Tensor.subtract")
def sub(input, other, *, alpha=1, out=None):
    _no("torch.sub", out=out)
    return input - (other if alpha == 1 else alpha * other)


@torch_op("torch.rsub", "Tensor.__rsub__")
def rsub(input, other, *, alpha=1):
    return other - (input if alpha == 1 else alpha * input)


@torch_op("torch.mul", "torch.multiply", "Tensor.mul", "Tensor.multiply")
def mul(input, other, *, out=None):
    _no("torch.mul", out=out)
    return input * other


@torch_op("torch.div", "torch.divide", "torch.true_divide", "Tensor.div", "Tensor.divide",
          "Tensor.true_divide")
def div(input, other, *, rounding_mode=None, out=None):
    _no("torch.div", rounding_mode=rounding_mode, out=out)
    return input / other


@torch_op("Tensor.__rdiv__", "Tensor.__rtruediv__")
def rdiv(input, other):
    return other / input


@torch_op("torch.pow", "torch.float_power", "Tensor.pow", "Tensor.float_power",
          "Tensor.__pow__")
def pow(input, exponent, *, out=None):
    _no("torch.pow", out=out)
    return sgo.pow(input, exponent)


@torch_op("Tensor.__rpow__")
def rpow(input, other):
    return sgo.pow(other, input)


@torch_op("torch.maximum", "torch.fmax", "Tensor.maximum", "Tensor.fmax")
def maximum(input, other, *, out=None):
    _no("torch.maximum", out=out)
    return sgo.maximum(input, other)


@torch_op("torch.minimum", "torch.fmin", "Tensor.minimum", "Tensor.fmin")
def minimum(input, other, *, out=None):
    _no("torch.minimum", out=out)
    return sgo.minimum(input, other)


@torch_op("torch.hypot", "Tensor.hypot")
def hypot(input, other, *, out=None):
    _no("torch.hypot", out=out)
    return sgo.sqrt(input * input + other * other)


@torch_op("torch.lerp", "Tensor.lerp")
def lerp(input, end, weight, *, out=None):
    _no("torch.lerp", out=out)
    return input + weight * (end - input)


@torch_op("torch.addcmul", "Tensor.addcmul")
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    _no("torch.addcmul", out=out)
    return input + value * tensor1 * tensor2


@torch_op("torch.addcdiv", "Tensor.addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    _no("torch.addcdiv", out=out)
    return input + value * tensor1 / tensor2


@torch_op("torch.logit", "special.logit", "Tensor.logit")
def logit(input, eps=None, *, out=None):
    _no("torch.logit", out=out)
    if eps is not None:
        input = clamp(input, eps, 1 - eps)
    return sgo.log(input / (1 - input))


@torch_op("torch.xlogy", "special.xlogy", "Tensor.xlogy")
def xlogy(input, other, *, out=None):
    """x log y, 0 where x == 0 (also when y == 0), as torch defines it."""
    _no("torch.xlogy", out=out)
    zero = sgo.eq(input, 0)
    safe = sgo.where(zero, 1.0, other)
    return sgo.where(zero, 0.0, input * sgo.log(safe))


@torch_op("torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip")
def clamp(input, min=None, max=None, *, out=None):
    _no("torch.clamp", out=out)
    numbers = all(b is None or isinstance(b, (int, float)) for b in (min, max))
    if numbers and isinstance(input, Tensor):
        return sgo.clamp(input, min, max)
    if min is not None:
        input = sgo.maximum(input, min)
    if max is not None:
        input = sgo.minimum(input, max)
    return input


@torch_op("torch.clamp_min", "Tensor.clamp_min")
def clamp_min(input, min):
    return clamp(input, min=min)


@torch_op("torch.clamp_max", "Tensor.clamp_max")
def clamp_max(input, max):
    return clamp(input, max=max)


@torch_op("torch.where")
def where(condition, input=None, other=None, *, out=None):
    _no("torch.where", out=out)
    if input is None or other is None:
        raise unsupported("torch.where", (condition,), why="torch.where(condition) returns "
                          "indices; use the three-argument form")
    return sgo.where(_as_bool(condition), input, other)


@torch_op("Tensor.where")
def where_method(input, condition, other):
    return sgo.where(_as_bool(condition), input, other)


def _as_bool(c):
    if isinstance(c, Tensor):
        return c if c.kind == "bool" else sgo.ne(c, 0)
    import torch
    if isinstance(c, torch.Tensor):
        return c.bool()
    return c


@torch_op("Tensor.masked_fill", "torch.masked_fill")
def masked_fill(input, mask, value):
    return sgo.where(_as_bool(mask), value, input)


def _binary_bool(names, fn):
    def handler(input, other, *, out=None):
        _no(names[0], out=out)
        return fn(input, other)
    handler.__name__ = names[0].rsplit(".", 1)[-1]
    torch_op(*names)(handler)


for _names, _fn in [
        (("eq",), sgo.eq), (("ne", "not_equal"), sgo.ne), (("gt", "greater"), sgo.gt),
        (("ge", "greater_equal"), sgo.ge), (("lt", "less"), sgo.lt),
        (("le", "less_equal"), sgo.le), (("logical_and",), sgo.logical_and),
        (("logical_or",), sgo.logical_or)]:
    _binary_bool([f"{p}.{n}" for n in _names for p in ("torch", "Tensor")], _fn)


@torch_op("torch.logical_xor", "Tensor.logical_xor")
def logical_xor(input, other, *, out=None):
    _no("torch.logical_xor", out=out)
    return sgo.ne(_as_bool(input), _as_bool(other))


# ----- linear algebra -----------------------------------------------------------------

@torch_op("torch.matmul", "Tensor.matmul")
def matmul(input, other, *, out=None):
    _no("torch.matmul", out=out)
    return sgo.matmul(input, other)


@torch_op("Tensor.__rmatmul__")
def rmatmul(input, other):
    return sgo.matmul(other, input)


def _checked_matmul(name, ranks):
    def handler(input, mat2, *, out=None):
        _no(name, out=out)
        if (_rank(input), _rank(mat2)) != ranks:
            raise ShapeError(f"{name}: expects operands of ranks {ranks}, got shapes "
                             f"{fmt_shape(_shape(input))} and {fmt_shape(_shape(mat2))}")
        return sgo.matmul(input, mat2)
    return handler


torch_op("torch.mm", "Tensor.mm")(_checked_matmul("torch.mm", (2, 2)))
torch_op("torch.mv", "Tensor.mv")(_checked_matmul("torch.mv", (2, 1)))
torch_op("torch.bmm", "Tensor.bmm")(_checked_matmul("torch.bmm", (3, 3)))


@torch_op("torch.dot", "torch.vdot", "Tensor.dot", "Tensor.vdot")
def dot(input, other, *, out=None):
    _no("torch.dot", out=out)
    if _rank(input) != 1 or _rank(other) != 1:
        raise ShapeError(f"torch.dot: 1D tensors expected, got shapes "
                         f"{fmt_shape(_shape(input))} and {fmt_shape(_shape(other))}; use "
                         "torch.inner or torch.matmul for higher ranks")
    return linalg.dot(input, other)


@torch_op("torch.inner", "Tensor.inner")
def inner(input, other, *, out=None):
    """Sum over the last axes of both: a scalar times a tensor for 0-d operands, else
    input @ otherᵀ with the last axes contracted (shape input[:-1] + other[:-1])."""
    _no("torch.inner", out=out)
    if not _rank(input) or not _rank(other):
        return input * other
    if _rank(other) == 1:
        return sgo.matmul(input, other)
    last = _rank(other) - 1
    moved = sgo.transpose(other, (last,) + tuple(range(last)))
    return sgo.reshape(sgo.matmul(sgo.reshape(input, (-1, _shape(input)[-1])),
                                  sgo.reshape(moved, (_shape(other)[-1], -1))),
                       tuple(_shape(input)[:-1]) + tuple(_shape(other)[:-1]))


@torch_op("torch.outer", "torch.ger", "Tensor.outer", "Tensor.ger")
def outer(input, vec2, *, out=None):
    _no("torch.outer", out=out)
    return linalg.outer(input, vec2)


def _addmm(name):
    def handler(input, mat1, mat2, *, beta=1, alpha=1, out=None):
        _no(name, out=out)
        product = sgo.matmul(mat1, mat2)
        return (input if beta == 1 else beta * input) + (
            product if alpha == 1 else alpha * product)
    return handler


torch_op("torch.addmm", "Tensor.addmm")(_addmm("torch.addmm"))
torch_op("torch.addmv", "Tensor.addmv")(_addmm("torch.addmv"))
torch_op("torch.baddbmm", "Tensor.baddbmm")(_addmm("torch.baddbmm"))


@torch_op("torch.trace", "Tensor.trace")
def trace(input):
    return linalg.trace(input)


@torch_op("torch.diag", "Tensor.diag")
def diag(input, diagonal=0, *, out=None):
    _no("torch.diag", out=out)
    if diagonal != 0:
        raise unsupported("torch.diag", (input,), why="only diagonal=0 is mapped")
    return linalg.diag(input)


@torch_op("torch.diagonal", "Tensor.diagonal", "linalg.diagonal")
def diagonal(input, offset=0, dim1=0, dim2=1):
    if offset != 0 or _rank(input) != 2:
        raise unsupported("torch.diagonal", (input,), why="only the main diagonal of a "
                          "matrix is mapped")
    return linalg.diagonal(input)


@torch_op("torch.det", "linalg.det", "Tensor.det")
def det(input, *, out=None):
    _no("torch.det", out=out)
    return linalg.det(input)


@torch_op("torch.logdet", "Tensor.logdet")
def logdet(input):
    return linalg.logdet(input)


@torch_op("torch.slogdet", "linalg.slogdet", "Tensor.slogdet")
def slogdet(input, *, out=None):
    import torch
    _no("torch.slogdet", out=out)
    return torch.return_types.slogdet(linalg.slogdet(input))


@torch_op("torch.inverse", "linalg.inv", "Tensor.inverse")
def inverse(input, *, out=None):
    _no("torch.inverse", out=out)
    return linalg.inverse(input)


@torch_op("linalg.solve")
def solve(A, B, *, left=True, out=None):
    _no("torch.linalg.solve", out=out, left=not left)
    return linalg.solve(A, B)


def _p_norm(input, p, dim, keepdim, name):
    if p in (2, 2.0, "fro", None):
        return linalg.norm(input, axis=_dim(dim), keepdims=keepdim)
    if p in (1, 1.0):
        return sgo.sum(sgo.abs(input), axis=_dim(dim), keepdims=keepdim)
    if p == math.inf:
        return reductions.amax(sgo.abs(input), axis=_dim(dim), keepdims=keepdim)
    if p == -math.inf:
        return reductions.amin(sgo.abs(input), axis=_dim(dim), keepdims=keepdim)
    if isinstance(p, (int, float)) and p > 0:
        total = sgo.sum(sgo.pow(sgo.abs(input), float(p)), axis=_dim(dim), keepdims=keepdim)
        return sgo.pow(total, 1.0 / p)
    raise unsupported(name, (input,), why=f"p={p!r} is not mapped")


@torch_op("torch.norm", "Tensor.norm")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    _no("torch.norm", out=out)
    _float_dtype("torch.norm", dtype)
    return _p_norm(input, p, dim, keepdim, "torch.norm")


@torch_op("linalg.vector_norm")
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    _no("torch.linalg.vector_norm", out=out)
    _float_dtype("torch.linalg.vector_norm", dtype)
    return _p_norm(x, ord, dim, keepdim, "torch.linalg.vector_norm")


@torch_op("linalg.norm")
def linalg_norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    _no("torch.linalg.norm", out=out)
    _float_dtype("torch.linalg.norm", dtype)
    if ord not in (None, "fro") and (dim is None and _rank(A) == 2 or
                                     isinstance(dim, (tuple, list)) and len(dim) == 2):
        raise unsupported("torch.linalg.norm", (A,), why=f"matrix norm ord={ord!r}")
    return _p_norm(A, ord, dim, keepdim, "torch.linalg.norm")


# ----- reductions ---------------------------------------------------------------------

def _reduction_op(names, fn):
    def handler(input, dim=None, keepdim=False, *, dtype=None, out=None):
        _no(names[0], out=out)
        _float_dtype(names[0], dtype)
        return fn(input, axis=_dim(dim), keepdims=keepdim)
    handler.__name__ = names[0].rsplit(".", 1)[-1]
    torch_op(*names)(handler)


_reduction_op(["torch.sum"], sgo.sum)
_reduction_op(["torch.mean"], sgo.mean)
_reduction_op(["torch.amax", "Tensor.amax"], reductions.amax)
_reduction_op(["torch.amin", "Tensor.amin"], reductions.amin)
_reduction_op(["torch.logsumexp", "special.logsumexp", "Tensor.logsumexp"], nn.logsumexp)


@torch_op("torch.prod", "Tensor.prod")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    _float_dtype("torch.prod", dtype)
    return reductions.prod(input, axis=_dim(dim), keepdims=keepdim)


def _extremum(name, reduce, pointwise):
    def handler(input, dim=None, keepdim=False, *, out=None):
        _no(name, out=out)
        if dim is None:
            return reduce(input)
        if _is_tensorlike(dim):
            return pointwise(input, dim)
        import torch
        values = reduce(input, axis=int(dim), keepdims=keepdim)
        return getattr(torch.return_types, name.rsplit(".", 1)[-1])(
            (values, Unavailable(f"the indices of {name}(x, dim)")))
    return handler


torch_op("torch.max", "Tensor.max")(_extremum("torch.max", reductions.max, sgo.maximum))
torch_op("torch.min", "Tensor.min")(_extremum("torch.min", reductions.min, sgo.minimum))


def _statistic(name, fn):
    def handler(input, dim=None, unbiased=None, keepdim=False, *, correction=None,
                out=None):
        _no(name, out=out)
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        if correction is None:
            correction = 1 if unbiased is None or unbiased else 0
        return fn(input, axis=_dim(dim), correction=correction, keepdims=keepdim)
    return handler


torch_op("torch.var", "Tensor.var")(_statistic("torch.var", reductions.var))
torch_op("torch.std", "Tensor.std")(_statistic("torch.std", reductions.std))


@torch_op("torch.cumsum", "Tensor.cumsum")
def cumsum(input, dim, *, dtype=None, out=None):
    _no("torch.cumsum", out=out)
    _float_dtype("torch.cumsum", dtype)
    return reductions.cumsum(input, int(dim))


# ----- shape --------------------------------------------------------------------------

@torch_op("torch.reshape", "Tensor.reshape", "Tensor.view")
def reshape(input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and \
            type(shape[0]).__name__ == "dtype":
        raise unsupported("torch.Tensor.view", (input,), why="view(dtype) reinterprets bits")
    return sgo.reshape(input, _sizes(shape))


@torch_op("Tensor.view_as", "Tensor.reshape_as")
def view_as(input, other):
    return sgo.reshape(input, _shape(other))


@torch_op("torch.flatten", "Tensor.flatten")
def flatten(input, start_dim=0, end_dim=-1):
    shape = _shape(input)
    if not shape:
        return sgo.reshape(input, (1,))
    a = normalize_axis(start_dim, len(shape), "flatten")
    b = normalize_axis(end_dim, len(shape), "flatten")
    if a > b:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return sgo.reshape(input, shape[:a] + (numel(shape[a:b + 1]),) + shape[b + 1:])


@torch_op("torch.unflatten", "Tensor.unflatten")
def unflatten(input, dim, sizes):
    shape = _shape(input)
    d = normalize_axis(dim, len(shape), "unflatten")
    return sgo.reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


@torch_op("torch.squeeze", "Tensor.squeeze")
def squeeze(input, dim=None):
    """torch leaves a dim of size other than 1 alone (sg.squeeze would raise)."""
    shape = _shape(input)
    if dim is None:
        return sgo.squeeze(input)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    keep = tuple(normalize_axis(d, len(shape), "squeeze") for d in dims)
    ones = tuple(d for d in keep if shape[d] == 1)
    return sgo.squeeze(input, ones) if ones else input


@torch_op("torch.unsqueeze", "Tensor.unsqueeze")
def unsqueeze(input, dim):
    return sgo.unsqueeze(input, int(dim))


def swap_axes(input, dim0, dim1):
    rank = _rank(input)
    if rank == 0:
        return input
    perm = list(range(rank))
    a, b = normalize_axis(dim0, rank, "transpose"), normalize_axis(dim1, rank, "transpose")
    perm[a], perm[b] = perm[b], perm[a]
    return sgo.transpose(input, tuple(perm))


torch_op("torch.transpose", "torch.swapaxes", "torch.swapdims", "Tensor.transpose",
         "Tensor.swapaxes", "Tensor.swapdims")(swap_axes)


@torch_op("torch.t", "Tensor.t")
def t(input):
    if _rank(input) > 2:
        raise ShapeError(f"t: expects a tensor of rank <= 2, got shape "
                         f"{fmt_shape(_shape(input))}; use transpose(dim0, dim1)")
    return sgo.transpose(input) if _rank(input) == 2 else input


@torch_op("torch.adjoint", "Tensor.adjoint")
def adjoint(input):
    return swap_axes(input, -2, -1)


tensor_property("mT", "mH")(adjoint)
tensor_property("H")(t)


@torch_op("torch.permute", "Tensor.permute")
def permute(input, *dims):
    return sgo.transpose(input, tuple(int(d) for d in _sizes(dims)))


@torch_op("torch.movedim", "torch.moveaxis", "Tensor.movedim", "Tensor.moveaxis")
def movedim(input, source, destination):
    rank = _rank(input)
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    src = [normalize_axis(s, rank, "movedim") for s in src]
    dst = [normalize_axis(d, rank, "movedim") for d in dst]
    order = [i for i in range(rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return sgo.transpose(input, tuple(order))


def _expanded(input, sizes):
    shape = _shape(input)
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise ShapeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                         f"rank of the tensor, shape {fmt_shape(shape)}")
    target = tuple(shape[i - lead] if s == -1 and i >= lead else s
                   for i, s in enumerate(sizes))
    return sgo.broadcast_to(input, target)


@torch_op("Tensor.expand")
def expand(input, *sizes):
    return _expanded(input, _sizes(sizes))


@torch_op("torch.broadcast_to", "Tensor.broadcast_to")
def broadcast_to(input, size):
    return _expanded(input, tuple(size))


@torch_op("Tensor.expand_as")
def expand_as(input, other):
    return sgo.broadcast_to(input, _shape(other))


@torch_op("torch.broadcast_tensors")
def broadcast_tensors(*tensors):
    from .shapes import broadcast_shapes
    shape = broadcast_shapes(*[_shape(t) for t in tensors], op="broadcast_tensors")
    return tuple(sgo.broadcast_to(t, shape) for t in tensors)


@torch_op("torch.cat", "torch.concat", "torch.concatenate")
def cat(tensors, dim=0, *, axis=None, out=None):
    _no("torch.cat", out=out)
    tensors = [t for t in tensors if not (_shape(t) == (0,))]
    return indexing.concatenate(tensors, axis=dim if axis is None else axis)


@torch_op("torch.stack")
def stack(tensors, dim=0, *, out=None):
    _no("torch.stack", out=out)
    return indexing.stack(list(tensors), axis=dim)


@torch_op("torch.hstack")
def hstack(tensors, *, out=None):
    _no("torch.hstack", out=out)
    tensors = list(tensors)
    return indexing.concatenate(tensors, axis=0 if _rank(tensors[0]) == 1 else 1)


@torch_op("torch.vstack", "torch.row_stack")
def vstack(tensors, *, out=None):
    _no("torch.vstack", out=out)
    tensors = [t if _rank(t) >= 2 else sgo.reshape(t, (1,) + _shape(t)) for t in tensors]
    return indexing.concatenate(tensors, axis=0)


def _take(input, dim, start, stop):
    index = (slice(None),) * dim + (slice(start, stop),)
    return input[index]


@torch_op("torch.narrow", "Tensor.narrow")
def narrow(input, dim, start, length):
    d = normalize_axis(dim, _rank(input), "narrow")
    return _take(input, d, start, start + length)


@torch_op("torch.select", "Tensor.select")
def select(input, dim, index):
    d = normalize_axis(dim, _rank(input), "select")
    return input[(slice(None),) * d + (index,)]


@torch_op("torch.split", "Tensor.split")
def split(tensor, split_size_or_sections, dim=0):
    shape = _shape(tensor)
    d = normalize_axis(dim, len(shape), "split")
    size = shape[d]
    if isinstance(split_size_or_sections, int):
        if not isinstance(size, int):
            raise ShapeError(f"split: dim {d} has symbolic size {size}; give the section "
                             "sizes as a list")
        step = split_size_or_sections
        sections = [builtins.min(step, size - s) for s in range(0, size, step)]
    else:
        sections = list(split_size_or_sections)
    out, start = [], 0
    for s in sections:
        out.append(_take(tensor, d, start, start + s))
        start += s
    return tuple(out)


@torch_op("torch.chunk", "Tensor.chunk")
def chunk(input, chunks, dim=0):
    size = _shape(input)[normalize_axis(dim, _rank(input), "chunk")]
    if not isinstance(size, int):
        raise ShapeError(f"chunk: dim {dim} has symbolic size {size}; use split with sizes")
    return split(input, -(-size // chunks), dim)


@torch_op("torch.unbind", "Tensor.unbind")
def unbind(input, dim=0):
    d = normalize_axis(dim, _rank(input), "unbind")
    size = _shape(input)[d]
    if not isinstance(size, int):
        raise ShapeError(f"unbind: dim {d} has symbolic size {size}")
    return tuple(select(input, d, i) for i in range(size))


@torch_op("torch.tile", "Tensor.tile", "Tensor.repeat")
def repeat(input, *sizes):
    """Tiling as a broadcast: (r0, d0, r1, d1, ...) reshaped to (r0*d0, r1*d1, ...)."""
    reps = _sizes(sizes)
    shape = _shape(input)
    if len(reps) < len(shape):
        reps = (1,) * (len(shape) - len(reps)) + tuple(reps)
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    inter = tuple(x for d in shape for x in (1, d))
    wide = tuple(x for r, d in zip(reps, shape) for x in (r, d))
    tiled = sgo.broadcast_to(sgo.reshape(input, inter), wide)
    return sgo.reshape(tiled, tuple(r * d for r, d in zip(reps, shape)))


@torch_op("torch.index_select", "Tensor.index_select")
def index_select(input, dim, index, *, out=None):
    """Entries at constant indices along ``dim``, as a product with one-hot rows (so the
    gradient scatters back into the picked entries)."""
    _no("torch.index_select", out=out)
    d = normalize_axis(dim, _rank(input), "index_select")
    idx = constant_array("torch.index_select", index, "the indices must be constant "
                         "integers (a torch tensor), not symbolic").astype(int).reshape(-1)
    size = _shape(input)[d]
    if not isinstance(size, int):
        raise ShapeError(f"index_select: dim {d} has symbolic size {size}; its size must be "
                         "concrete to pick entries by index")
    import numpy
    picks = (numpy.arange(size)[:, None] == idx % size).astype(float)  # (size, k)
    return movedim(sgo.matmul(movedim(input, d, -1), picks), -1, d)


def _einsum_terms(equation, operands):
    """(operands, input letter strings, output letters) with ``...`` spelled out as
    letters and a matrix's diagonal (``ii``) taken first."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(f"einsum: {equation!r} names {len(terms)} operands, got "
                         f"{len(operands)}")
    spare = [chr(c) for c in range(ord("A"), ord("Z") + 1) if chr(c) not in eq]
    widest = builtins.max([_rank(t) - len(term.replace("...", ""))
                           for t, term in zip(operands, terms) if "..." in term] or [0])
    ell = "".join(spare[:widest])
    spelled, operands = [], list(operands)
    for i, (t, term) in enumerate(zip(operands, terms)):
        if "..." in term:
            k = _rank(t) - len(term.replace("...", ""))
            term = term.replace("...", ell[widest - k:])
        if len(term) == 2 == _rank(t) and term[0] == term[1]:
            operands[i], term = linalg.diagonal(t), term[0]
        if len(term) != _rank(operands[i]) or len(set(term)) != len(term):
            raise unsupported("torch.einsum", (t,), why=f"term {term!r} for an operand of "
                              f"shape {fmt_shape(_shape(t))} (repeated indices are not mapped)")
        spelled.append(term)
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = "".join(terms).replace("...", "")
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    return operands, spelled, out


@torch_op("torch.einsum")
def einsum(equation, *operands):
    """Contractions as sums and batched matrix products, pair by pair from the left."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands, terms, out = _einsum_terms(equation, operands)
    items = list(zip(operands, terms))

    def needed(k):
        return set(out) | {c for _, term in items[k + 1:] for c in term}

    t, letters = items[0]
    for k in range(len(items)):
        if k:
            u, other = items[k]
            t, letters = _contract(t, letters, u, other, needed(k))
        drop = [c for c in letters if c not in needed(k)]
        if drop:
            t = sgo.sum(t, axis=tuple(letters.index(c) for c in drop))
            letters = "".join(c for c in letters if c not in drop)
    if letters != out:
        t = sgo.transpose(t, tuple(letters.index(c) for c in out))
    return t


def _contract(a, la, b, lb, keep):
    """a ⋅ b over the letters they share and no later term needs, as one batched matmul."""
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    sa, sb = dict(zip(la, _shape(a))), dict(zip(lb, _shape(b)))
    a = sgo.transpose(a, tuple(la.index(c) for c in batch + free_a + contr))
    b = sgo.transpose(b, tuple(lb.index(c) for c in batch + contr + free_b))
    a = sgo.reshape(a, tuple(sa[c] for c in batch) + (numel([sa[c] for c in free_a]),
                                                      numel([sa[c] for c in contr])))
    b = sgo.reshape(b, tuple(sb[c] for c in batch) + (numel([sb[c] for c in contr]),
                                                      numel([sb[c] for c in free_b])))
    product = sgo.matmul(a, b)
    batch_shape = _shape(product)[:len(batch)]
    shape = tuple(batch_shape) + tuple(sa[c] for c in free_a) + tuple(sb[c] for c in free_b)
    return sgo.reshape(product, shape), "".join(batch + free_a + free_b)


# ----- conversions and creation -------------------------------------------------------

def _identity(input, *args, **kwargs):
    return input


torch_op("Tensor.contiguous", "Tensor.clone", "torch.clone", "Tensor.cpu",
         "Tensor.requires_grad_")(_identity)
torch_op("torch.detach", "Tensor.detach")(lambda input: sgo.detach(input))
tensor_property("data")(sgo.detach)


def _to_float(input):
    if isinstance(input, Tensor) and input.kind == "bool":
        return sgo.cast(input)
    return input


@torch_op("Tensor.float", "Tensor.double", "Tensor.half", "Tensor.bfloat16")
def to_float(input, memory_format=None):
    return _to_float(input)


@torch_op("Tensor.to")
def to(input, *args, **kwargs):
    """Devices are ignored; floating dtypes keep the value (a bool Tensor becomes 0/1)."""
    for a in list(args) + [kwargs.get("dtype")]:
        if a is not None and type(a).__name__ == "dtype":
            _float_dtype("torch.Tensor.to", a)
            return _to_float(input)
    return input


@torch_op("Tensor.type_as")
def type_as(input, other):
    return _to_float(input)


@torch_op("Tensor.bool")
def to_bool(input, memory_format=None):
    return _as_bool(input)


def _const_like(value):
    def handler(input, *, dtype=None, layout=None, device=None, requires_grad=False,
                memory_format=None):
        _float_dtype("torch.*_like", dtype)
        return const(value, _shape(input))
    return handler


torch_op("torch.zeros_like", "torch.empty_like")(_const_like(0))
torch_op("torch.ones_like")(_const_like(1))


@torch_op("torch.full_like")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None):
    _float_dtype("torch.full_like", dtype)
    if isinstance(fill_value, Tensor):
        return sgo.broadcast_to(fill_value, _shape(input))
    return const(float(fill_value), _shape(input))


def _new(value):
    def handler(input, *size, dtype=None, device=None, requires_grad=False, layout=None,
                pin_memory=False):
        _float_dtype("torch.Tensor.new_*", dtype)
        return const(value, tuple(_sizes(size)))
    return handler


torch_op("Tensor.new_zeros", "Tensor.new_empty")(_new(0))
torch_op("Tensor.new_ones")(_new(1))


@torch_op("Tensor.new_full")
def new_full(input, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    return const(float(fill_value), tuple(size))


@torch_op("Tensor.dim", "Tensor.ndimension")
def dim(input):
    return _rank(input)


@torch_op("Tensor.numel", "Tensor.nelement", "torch.numel")
def count(input):
    return numel(_shape(input))


@torch_op("Tensor.is_floating_point", "torch.is_floating_point")
def is_floating_point(input):
    return not (isinstance(input, Tensor) and input.kind == "bool")


@torch_op("Tensor.is_complex", "torch.is_complex")
def is_complex(input):
    return False


@tensor_property("device")
def device(x):
    import torch
    return torch.device("cpu")


tensor_property("is_cuda", "is_sparse", "is_quantized", "is_meta", "is_nested",
                "is_mkldnn")(lambda x: False)
tensor_property("grad")(lambda x: None)


from . import torch_nn  # noqa: E402,F401  (registers torch.nn.functional)
