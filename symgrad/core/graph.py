"""The traced graph: ``Tensor`` nodes and their topological order.

A ``Tensor`` is one op applied to input Tensors with some hashable parameters (built by
``build.make``, which interns them: the same op on the same inputs is one node, so the
graph is a DAG with no duplicate subterms). SymPy expressions are built lazily:
``local_expr`` is the op applied to symbols standing for its operands (what printers and
code generation use), and ``expr`` composes those along the DAG into a closed form,
iteratively, so deep graphs never recurse.

Operators and methods record ops through the registry's public functions
(``opdef.FUNCTIONS``); what core cannot do itself (printing, ``grad_fn``, torch's methods
and functions) goes through ``extensions``.
"""
import functools
import inspect
import itertools
import sys
from typing import Any, Sequence, Union

from numpy.typing import ArrayLike

from ..errors import ControlFlowError, OperandError, ShapeError, UnsupportedOpError
from . import extensions
from .deep import deep
from .forms import node_form
from .opdef import FUNCTIONS, OPS
from .shapes import TensorSpec, fmt_shape

# As core.types spells them; that module refers to Tensor, so importing it here would
# make a cycle.
Axis = Union[int, Sequence[int], None]
ShapeLike = Sequence[Any]
TensorLike = Union["Tensor", ArrayLike]

_NUMPY_OPERATORS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div",
    "divide": "div", "power": "pow", "matmul": "matmul", "negative": "neg",
    "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "equal": "eq", "not_equal": "ne",
}
# NumPy's spellings of elementwise functions whose sg name differs.
_NUMPY_NAMES = {
    "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2",
}


_serials = itertools.count()


def _call(name, *args, **kwargs):
    return FUNCTIONS[name](*args, **kwargs)


class Tensor:
    """A symbolic array: a node of the traced graph. Use ``sg.symbol`` to make leaves."""

    __slots__ = ("op", "inputs", "params", "attrs", "shape", "kind", "_expr",
                 "backward_view", "is_const", "serial", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, op: str, inputs: tuple["Tensor", ...], params: tuple[tuple[str, Any], ...],
                 shape: tuple[Any, ...], kind: str, attrs: dict[str, Any] | None = None) -> None:
        self.op = op
        self.inputs = inputs
        self.params = params
        self.attrs = dict(params) if attrs is None else attrs
        self.shape = shape
        self.kind = kind    # "float", "int" or "bool": what the value holds
        self._expr = None
        self.backward_view = None   # its grad_fn, cached by diff.backward_view
        self.is_const = op == "const"   # a constant filling its shape (a number or an
        #                                 expression of dims): read on every node built
        self.serial = next(_serials)    # the order nodes were made in (``core.loops``)

    # ----- introspection -------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def dtype(self) -> Any:
        """As the arrays it stands for: torch.float64 / torch.bool when torch is loaded (so
        torch code can pass ``x.dtype`` on), NumPy's dtype otherwise."""
        torch = sys.modules.get("torch")
        if torch is not None:
            return {"bool": torch.bool, "int": torch.int64}.get(self.kind, torch.float64)
        import numpy
        return numpy.dtype({"bool": bool, "int": numpy.int64}.get(self.kind, numpy.float64))

    def __class_getitem__(cls, dims):
        """``sg.Tensor["m", "n"]`` as an annotation: a parameter's shape."""
        return TensorSpec(dims)

    @property
    def name(self) -> str | None:
        return self.attrs.get("name")

    @property
    def is_leaf(self) -> bool:
        return not self.inputs

    @property
    def is_symbol(self) -> bool:
        """A named input (``sg.symbol``)."""
        return self.op == "symbol"

    @property
    def is_array(self) -> bool:
        """A constant array captured while tracing."""
        return self.op == "array"

    @property
    def grad_fn(self) -> Any:
        """The backward function that made this Tensor, as PyTorch shows it (``name()``,
        ``next_functions``, ``saved``); None for leaves and constants."""
        return extensions.grad_fn(self)

    @property
    def requires_grad(self) -> bool:
        """True when this value depends differentiably on a symbol (PyTorch's flag):
        False for constants, comparisons, detached values and values made in no_grad."""
        return extensions.requires_grad(self)

    @property
    def T(self) -> "Tensor":
        return _call("transpose", self)

    def size(self, axis: int | None = None) -> Any:
        return self.shape if axis is None else self.shape[axis]

    def __repr__(self):
        try:
            text = extensions.format_tensor(self) if count_nodes([self]) <= 200 \
                else f"<{self.op}>"
        except Exception:  # noqa: BLE001 - repr must never fail
            text = f"<{self.op}>"
        return f"Tensor({text}, shape={fmt_shape(self.shape)})"

    def __str__(self):
        return extensions.format_tensor(self)

    # ----- expressions ---------------------------------------------------------------
    @property
    def expr(self) -> Any:
        """Closed-form SymPy expression of this node in terms of the leaves (built along
        the graph without recursion; SymPy itself recurses, so deep graphs are built with
        room for it, see ``deep``)."""
        if self._expr is None:
            order = topo_order([self])

            def build():
                shapes: dict[Any, Any] = {}
                memo: dict[Any, Any] = {}
                for node in order:
                    if node._expr is None:
                        node._expr = node_form(node, [i._expr for i in node.inputs],
                                               shapes, memo)
                    if node.is_symbol:
                        shapes[node._expr] = node.shape
            deep(build, depth_of(order))
        return self._expr

    def local_expr(self, operands: Sequence[Any]) -> Any:
        """This op applied to ``operands`` (SymPy expressions standing for the inputs)."""
        return OPS[self.op].expr(self.attrs, operands)

    # ----- Python protocol -----------------------------------------------------------
    def __bool__(self):
        raise ControlFlowError(
            f"the truth value of a symbolic Tensor ({self.op}, shape {fmt_shape(self.shape)}) "
            "is unknown while tracing: Python `if`, `and`, `or`, `while` cannot branch on it. "
            "Use sg.where(condition, x, y) to select values elementwise.")

    def __float__(self):
        raise ControlFlowError(
            f"float() of a symbolic Tensor ({self.op}) has no value while tracing; "
            "keep the computation in sg ops, or use sg.where for branches")

    def __int__(self):
        raise ControlFlowError(
            f"int() of a symbolic Tensor ({self.op}) has no value while tracing; "
            "keep the computation in sg ops, or use sg.where for branches")

    __index__ = __int__

    def __round__(self, ndigits=None):
        raise ControlFlowError(
            f"round() of a symbolic Tensor ({self.op}) has no value while tracing; "
            "round values outside the traced function, or keep them symbolic")

    def __format__(self, spec):
        if spec:
            raise ControlFlowError(
                f"format spec {spec!r} applied to a symbolic Tensor ({self.op}) needs a "
                "value; print it without a spec (str(x)) or format numbers after compiling")
        return str(self)

    def __complex__(self):
        raise ControlFlowError(
            f"complex() of a symbolic Tensor ({self.op}) has no value while tracing")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """NumPy operators with an array on the left (``array + x``) and NumPy's
        elementwise functions that have an sg op (``numpy.sin(x)``, ``numpy.absolute``)
        trace as that op; other NumPy functions cannot see inside a symbolic Tensor."""
        name = _NUMPY_NAMES.get(ufunc.__name__, ufunc.__name__)
        op = _NUMPY_OPERATORS.get(name) or (name if name in FUNCTIONS else None)
        if method == "__call__" and op is not None and not kwargs:
            return _call(op, *inputs)
        shapes = ", ".join(fmt_shape(i.shape) if isinstance(i, Tensor) else type(i).__name__
                           for i in inputs)
        what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
        hint = f"sg.{op}" if op is not None and method == "__call__" else \
            "the sg ops (sg.sum, sg.cumsum, sg.amax, ... for reductions and scans)"
        raise UnsupportedOpError(
            f"{what} was called on a symbolic Tensor ({self.op}; operand shapes {shapes}); "
            f"this NumPy call cannot be traced. Use {hint} instead.")

    def __array_function__(self, func, types, args, kwargs):
        name = func.__name__
        hint = f"sg.{name}" if name in FUNCTIONS else "the sg ops"
        raise UnsupportedOpError(
            f"numpy.{name} was called on a symbolic Tensor ({self.op}, shape "
            f"{fmt_shape(self.shape)}); NumPy functions cannot be traced. Use {hint} instead.")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """torch functions meeting a symbolic Tensor trace as sg ops (the torch front end)."""
        return extensions.torch_function(func, types, args, kwargs)

    def __getattr__(self, name):
        """torch.Tensor methods and properties not defined here (``x.view``, ``x.mT``)."""
        if name.startswith("__") or extensions.torch_attribute.fn is None:
            raise AttributeError(f"'Tensor' object has no attribute {name!r}")
        return extensions.torch_attribute(self, name)

    def __len__(self):
        if not self.shape:
            raise OperandError("len() of a 0-d Tensor")
        d = self.shape[0]
        if not isinstance(d, int):
            raise ShapeError(f"len() of a Tensor whose first dim is symbolic ({d}); "
                             "use x.shape[0] in sg ops instead")
        return d

    def __getitem__(self, key):
        return _call("getitem", self, key)

    def __iter__(self):
        n = len(self)
        return (self[i] for i in range(n))

    __hash__ = object.__hash__

    # ----- operators -----------------------------------------------------------------
    def __add__(self, other: TensorLike) -> "Tensor": return _call("add", self, other)
    def __radd__(self, other: TensorLike) -> "Tensor": return _call("add", other, self)
    def __sub__(self, other: TensorLike) -> "Tensor": return _call("sub", self, other)
    def __rsub__(self, other: TensorLike) -> "Tensor": return _call("sub", other, self)
    def __mul__(self, other: TensorLike) -> "Tensor": return _call("mul", self, other)
    def __rmul__(self, other: TensorLike) -> "Tensor": return _call("mul", other, self)
    def __truediv__(self, other: TensorLike) -> "Tensor": return _call("div", self, other)
    def __rtruediv__(self, other: TensorLike) -> "Tensor": return _call("div", other, self)
    def __pow__(self, other: TensorLike) -> "Tensor": return _call("pow", self, other)
    def __rpow__(self, other: TensorLike) -> "Tensor": return _call("pow", other, self)
    def __mod__(self, other: TensorLike) -> "Tensor": return _call("remainder", self, other)
    def __rmod__(self, other: TensorLike) -> "Tensor": return _call("remainder", other, self)
    def __matmul__(self, other: TensorLike) -> "Tensor": return _call("matmul", self, other)
    def __rmatmul__(self, other: TensorLike) -> "Tensor": return _call("matmul", other, self)
    def __iadd__(self, other: TensorLike) -> "Tensor": return self._in_place("+=", "add", other)
    def __isub__(self, other: TensorLike) -> "Tensor": return self._in_place("-=", "sub", other)
    def __imul__(self, other: TensorLike) -> "Tensor": return self._in_place("*=", "mul", other)
    def __itruediv__(self, other: TensorLike) -> "Tensor":
        return self._in_place("/=", "div", other)
    def __ipow__(self, other: TensorLike) -> "Tensor": return self._in_place("**=", "pow", other)

    def _in_place(self, spelled, op, other):
        """``x += y`` rebinds x to a new value (Tensors are values). On a view (``y[0]``,
        ``y.T``, ``y.view(...)``) torch would write through to the viewed tensor, which a
        rebinding cannot: refused rather than computing another function."""
        if OPS[self.op].view and self.op != "detach":
            raise UnsupportedOpError(
                f"{spelled} on {self.op}(...) of shape {fmt_shape(self.shape)}: in torch it "
                "writes through to the tensor it views, which symgrad does not trace "
                "(its values are immutable); compute the new tensor out of place, e.g. "
                "y = torch.cat(...) or torch.where(mask, new, y), or y = y * scale")
        return _call(op, self, other)

    def __neg__(self) -> "Tensor": return _call("neg", self)
    def __pos__(self) -> "Tensor": return self
    def __abs__(self) -> "Tensor": return _call("abs", self)
    def __gt__(self, other: TensorLike) -> "Tensor": return _call("gt", self, other)
    def __ge__(self, other: TensorLike) -> "Tensor": return _call("ge", self, other)
    def __lt__(self, other: TensorLike) -> "Tensor": return _call("lt", self, other)
    def __le__(self, other: TensorLike) -> "Tensor": return _call("le", self, other)
    def __eq__(self, other: object) -> "Tensor":  # type: ignore[override]  # elementwise
        return _call("eq", self, other)
    def __ne__(self, other: object) -> "Tensor":  # type: ignore[override]  # elementwise
        return _call("ne", self, other)
    def __and__(self, other: TensorLike) -> "Tensor": return _call("logical_and", self, other)
    def __rand__(self, other: TensorLike) -> "Tensor": return _call("logical_and", other, self)
    def __or__(self, other: TensorLike) -> "Tensor": return _call("logical_or", self, other)
    def __ror__(self, other: TensorLike) -> "Tensor": return _call("logical_or", other, self)
    def __invert__(self) -> "Tensor": return _call("logical_not", self)

    # ----- methods mirroring torch / numpy -------------------------------------------
    def sum(self, axis: Axis = None, keepdims: bool = False, *, dim: Axis = None,
            keepdim: bool | None = None) -> "Tensor":
        return self._reduce("sum", axis, keepdims, dim, keepdim)

    def mean(self, axis: Axis = None, keepdims: bool = False, *, dim: Axis = None,
             keepdim: bool | None = None) -> "Tensor":
        return self._reduce("mean", axis, keepdims, dim, keepdim)

    def reshape(self, *shape: Any) -> "Tensor":
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _call("reshape", self, shape)

    def _torch_method(self, name, args, kwargs):
        """``torch.Tensor.<name>`` semantics, from the torch front end's table."""
        return extensions.torch_attribute(self, name)(*args, **kwargs)

    def squeeze(self, *args: Any, **kwargs: Any) -> "Tensor":
        """NumPy's ``squeeze(axis=...)`` (a size-1 axis only), else torch's (a dim whose
        size is not 1 is left alone)."""
        if "axis" in kwargs or not args and not kwargs:
            return _call("squeeze", self, kwargs.get("axis"))
        return self._torch_method("squeeze", args, kwargs)

    def unsqueeze(self, axis: int) -> "Tensor":
        return _call("unsqueeze", self, axis)

    def transpose(self, *axes: Any) -> "Tensor":
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):  # torch's (dim0, dim1)
            return _call("swapaxes", self, *axes)
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _call("transpose", self, axes or None)

    def t(self) -> "Tensor":
        return _call("transpose", self)

    def broadcast_to(self, shape: ShapeLike) -> "Tensor":
        return _call("broadcast_to", self, shape)

    def expand(self, *sizes: Any) -> "Tensor":
        """torch's ``expand(*sizes)`` (-1 keeps a dim); ``broadcast_to`` is NumPy's."""
        return self._torch_method("expand", sizes, {})

    def detach(self) -> "Tensor":
        return _call("detach", self)

    def exp(self) -> "Tensor": return _call("exp", self)
    def log(self) -> "Tensor": return _call("log", self)
    def sin(self) -> "Tensor": return _call("sin", self)
    def cos(self) -> "Tensor": return _call("cos", self)
    def tanh(self) -> "Tensor": return _call("tanh", self)
    def sigmoid(self) -> "Tensor": return _call("sigmoid", self)
    def relu(self) -> "Tensor": return _call("relu", self)
    def sqrt(self) -> "Tensor": return _call("sqrt", self)
    def abs(self) -> "Tensor": return _call("abs", self)
    def square(self) -> "Tensor": return _call("square", self)
    def clamp(self, min: TensorLike | None = None, max: TensorLike | None = None) -> "Tensor":
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return self._torch_method("clamp", (), {"min": min, "max": max})
        return _call("clamp", self, min, max)

    def _reduce(self, name, axis, keepdims, dim, keepdim, **kw):
        """NumPy's axis=() reduces nothing; torch's dim=() and dim=[] (a list is never
        NumPy's axis) reduce every dim."""
        if dim is not None and not isinstance(dim, int) and len(dim) == 0 or \
                isinstance(axis, list) and not axis:
            axis, dim = None, None
        return _call(name, self, axis=axis if dim is None else dim,
                     keepdims=keepdims if keepdim is None else keepdim, **kw)

    # Methods spelled alike in NumPy and torch but meaning different things follow NumPy
    # when called with NumPy's keywords (axis=, keepdims=), torch otherwise:
    # x.max(axis=1) is the values, x.max(1) is torch's (values, indices); x.norm(1) is
    # the 1-norm; x.var(0, unbiased=False) is torch's.
    def _numpy_style(self, args, kwargs):
        return not args and not (set(kwargs) - {"axis", "keepdims"})

    def max(self, *args: Any, **kwargs: Any) -> Any:
        if self._numpy_style(args, kwargs):
            return self._reduce("max", kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None)
        return self._torch_method("max", args, kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Any:
        if self._numpy_style(args, kwargs):
            return self._reduce("min", kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None)
        return self._torch_method("min", args, kwargs)

    def amax(self, axis: Axis = None, keepdims: bool = False, *, dim: Axis = None,
             keepdim: bool | None = None) -> "Tensor":
        return self._reduce("amax", axis, keepdims, dim, keepdim)

    def amin(self, axis: Axis = None, keepdims: bool = False, *, dim: Axis = None,
             keepdim: bool | None = None) -> "Tensor":
        return self._reduce("amin", axis, keepdims, dim, keepdim)

    def prod(self, axis: Axis = None, keepdims: bool = False, *, dim: Axis = None,
             keepdim: bool | None = None) -> "Tensor":
        return self._reduce("prod", axis, keepdims, dim, keepdim)

    def _statistic(self, name, args, kwargs):
        """NumPy's var/std (ddof=0 by default) with NumPy's keywords, torch's (Bessel's
        correction by default) otherwise."""
        numpy_keys = {"axis", "keepdims", "ddof"}
        if not args and kwargs and set(kwargs) <= numpy_keys:
            return self._reduce(name, kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None, correction=kwargs.get("ddof", 0))
        return self._torch_method(name, args, kwargs)

    def var(self, *args: Any, **kwargs: Any) -> "Tensor":
        return self._statistic("var", args, kwargs)

    def std(self, *args: Any, **kwargs: Any) -> "Tensor":
        return self._statistic("std", args, kwargs)

    def norm(self, *args: Any, **kwargs: Any) -> "Tensor":
        if self._numpy_style(args, kwargs):
            return _call("norm", self, axis=kwargs.get("axis"),
                         keepdims=kwargs.get("keepdims", False))
        return self._torch_method("norm", args, kwargs)

    def softmax(self, axis: int = -1, *, dim: int | None = None) -> "Tensor":
        return _call("softmax", self, axis if dim is None else dim)

    def log_softmax(self, axis: int = -1, *, dim: int | None = None) -> "Tensor":
        return _call("log_softmax", self, axis if dim is None else dim)

    def dot(self, other: TensorLike) -> "Tensor":
        return _call("dot", self, other)


def _or_torchs(name, method):
    """``method``, or ``torch.Tensor.<name>``'s semantics when torch's keywords or
    positions do not fit NumPy's signature (``x.sum(dtype=...)``, ``x.unsqueeze(dim=1)``,
    ``x.softmax(1, torch.float64)``): the call binds to one of the two."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def either(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except TypeError:
            try:
                signature.bind(self, *args, **kwargs)
            except TypeError:
                torch = sys.modules.get("torch")
                if torch is not None and hasattr(torch, name):   # torch.sum(x, dtype=...)
                    return getattr(torch, name)(self, *args, **kwargs)
                return self._torch_method(name, args, kwargs)
            raise
    return either


for _name in ("sum", "mean", "prod", "amax", "amin", "softmax", "log_softmax", "unsqueeze",
              "transpose", "reshape", "expand", "permute", "cumsum", "cumprod", "flatten",
              "repeat", "clip", "clamp", "std", "var", "view", "norm"):
    if _name in vars(Tensor):
        setattr(Tensor, _name, _or_torchs(_name, vars(Tensor)[_name]))


def topo_order(outputs, stop=None):
    """Nodes reachable from ``outputs``, each after its inputs (iterative DFS); the nodes
    whose ids are in ``stop`` are listed but not walked into."""
    order, seen = [], set()
    for out in outputs:
        if out is None or id(out) in seen:
            continue
        stack = [(out, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            if stop is not None and id(node) in stop:
                continue
            for inp in reversed(node.inputs):
                if id(inp) not in seen:
                    stack.append((inp, False))
    return order


def depth_of(order):
    """The number of nodes on the longest path through ``order`` (a topological order)."""
    level: dict[int, int] = {}
    for node in order:
        level[id(node)] = 1 + max((level[id(i)] for i in node.inputs), default=0)
    return max(level.values(), default=0)


def count_nodes(outputs):
    return sum(1 for n in topo_order(outputs) if not n.is_leaf)


