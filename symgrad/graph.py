"""The traced graph: ``Tensor`` nodes with structural hashing.

A ``Tensor`` is one op applied to input Tensors with some hashable parameters. Nodes are
interned: building the same op on the same inputs with the same parameters returns the
existing node, so the graph is a DAG with no duplicate subterms. Before a node is made,
``simplify`` may return an equivalent existing node instead (x*1 -> x, constant folding).

SymPy expressions are built lazily: ``local_expr`` is the op applied to symbols standing
for its operands (what the printers and code generator use), and ``expr`` composes those
along the DAG into a closed form, iteratively, so deep graphs never recurse.
"""
import atexit
import functools
import gc
import math
import sys
import weakref

import sympy

from . import grad_mode
from .errors import ControlFlowError, ShapeError
from .shapes import as_shape, fmt_shape

def gc_paused(fn):
    """Run ``fn`` with Python's cyclic garbage collector paused. Building a large graph
    allocates many small objects that form no cycles, and each collection walks every
    live node: with 10⁵ nodes the collector took more than half the time."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return wrapper


class InternTable:
    """key -> node, holding nodes weakly: a node lives as long as someone uses it. A plain
    dict of weak references with a removal callback (twice as fast as
    ``WeakValueDictionary`` on the hot path of tracing)."""

    __slots__ = ("refs", "_remove")

    def __init__(self):
        refs = self.refs = {}

        def remove(ref, pop=refs.pop):
            key = ref.key
            if refs.get(key) is ref:
                pop(key)
        self._remove = remove

    def get(self, key):
        ref = self.refs.get(key)
        return None if ref is None else ref()

    def __setitem__(self, key, node):
        ref = _KeyedRef(node, self._remove)
        ref.key = key
        self.refs[key] = ref

    def __len__(self):
        return len(self.refs)

    def clear(self):
        self.refs.clear()


class _KeyedRef(weakref.ref):
    __slots__ = ("key",)


_interned = InternTable()
# Keys hold SymPy numbers; clear them before interpreter teardown unloads mpmath.
atexit.register(_interned.clear)

_NUMPY_OPERATORS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "div",
    "divide": "div", "power": "pow", "matmul": "matmul", "negative": "neg",
    "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "equal": "eq", "not_equal": "ne",
}


class Tensor:
    """A symbolic array: a node of the traced graph. Use ``sg.symbol`` to make leaves."""

    __slots__ = ("op", "inputs", "params", "attrs", "shape", "kind", "_expr",
                 "_grad_fn", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, op, inputs, params, shape, dtype):
        self.op = op
        self.inputs = inputs
        self.params = params
        self.attrs = dict(params)
        self.shape = shape
        self.kind = dtype   # "float" or "bool": what the value holds
        self._expr = None
        self._grad_fn = None

    # ----- introspection -------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def dtype(self):
        """As the arrays it stands for: torch.float64 / torch.bool when torch is loaded (so
        torch code can pass ``x.dtype`` on), NumPy's dtype otherwise."""
        torch = sys.modules.get("torch")
        if torch is not None:
            return torch.bool if self.kind == "bool" else torch.float64
        import numpy
        return numpy.dtype(bool if self.kind == "bool" else numpy.float64)

    @property
    def name(self):
        return self.attrs.get("name")

    @property
    def is_leaf(self):
        return self.op in ("symbol", "const", "array", "eye")

    @property
    def grad_fn(self):
        """The backward function that made this Tensor, as PyTorch shows it (``name()``,
        ``next_functions``, ``saved``); None for leaves and constants. See graphview."""
        from .graphview import grad_fn
        return grad_fn(self)

    @property
    def requires_grad(self):
        """True when this value depends differentiably on a symbol (PyTorch's flag):
        False for constants, comparisons, detached values and values made in no_grad."""
        from .graphview import requires_grad
        return requires_grad(self)

    @property
    def is_const(self):
        return self.op == "const"

    @property
    def T(self):
        return _ops.transpose(self)

    def size(self, axis=None):
        return self.shape if axis is None else self.shape[axis]

    def __repr__(self):
        from .printing import format_expr
        try:
            text = format_expr(self.expr) if count_nodes([self]) <= 200 else f"<{self.op}>"
        except Exception:  # noqa: BLE001 - repr must never fail
            text = f"<{self.op}>"
        return f"Tensor({text}, shape={fmt_shape(self.shape)})"

    def __str__(self):
        from .printing import format_expr
        return format_expr(self.expr)

    # ----- expressions ---------------------------------------------------------------
    @property
    def expr(self):
        """Closed-form SymPy expression of this node in terms of the leaves."""
        if self._expr is None:
            for node in topo_order([self]):
                if node._expr is None:
                    node._expr = _ops.OPS[node.op].expr(
                        node, [i._expr for i in node.inputs])
        return self._expr

    def local_expr(self, operands):
        """This op applied to ``operands`` (SymPy expressions standing for the inputs)."""
        return _ops.OPS[self.op].expr(self, operands)

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
        """NumPy operators with an array on the left (``array + x``) trace as sg ops;
        other NumPy functions cannot see inside a symbolic Tensor."""
        op = _NUMPY_OPERATORS.get(ufunc.__name__)
        if method == "__call__" and op is not None and not kwargs:
            return getattr(_ops, op)(*inputs)
        from .errors import UnsupportedOpError
        hint = f"sg.{ufunc.__name__}" if hasattr(_ops, ufunc.__name__) else "the sg ops"
        raise UnsupportedOpError(
            f"numpy.{ufunc.__name__} was called on a symbolic Tensor ({self.op}, shape "
            f"{fmt_shape(self.shape)}); NumPy functions cannot be traced. Use {hint} "
            "instead, or add a rule for the op under rules/")

    def __array_function__(self, func, types, args, kwargs):
        from .errors import UnsupportedOpError
        name = func.__name__
        hint = f"sg.{name}" if hasattr(_ops, name) else "the sg ops"
        raise UnsupportedOpError(
            f"numpy.{name} was called on a symbolic Tensor; NumPy functions cannot be "
            f"traced. Use {hint} instead, or add a rule for the op under rules/")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """torch functions meeting a symbolic Tensor trace as sg ops (torch_frontend)."""
        from .torch_frontend import dispatch
        return dispatch(func, types, args, kwargs)

    def __getattr__(self, name):
        """torch.Tensor methods and properties not defined here (``x.view``, ``x.mT``)."""
        from .torch_frontend import tensor_attribute
        return tensor_attribute(self, name)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d Tensor")
        d = self.shape[0]
        if not isinstance(d, int):
            raise ShapeError(f"len() of a Tensor whose first dim is symbolic ({d}); "
                             "use x.shape[0] in sg ops instead")
        return d

    def __getitem__(self, key):
        from .indexing import getitem
        return getitem(self, key)

    def __iter__(self):
        n = len(self)
        return (self[i] for i in range(n))

    __hash__ = object.__hash__

    # ----- operators -----------------------------------------------------------------
    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(other, self)
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.sub(other, self)
    def __mul__(self, other): return _ops.mul(self, other)
    def __rmul__(self, other): return _ops.mul(other, self)
    def __truediv__(self, other): return _ops.div(self, other)
    def __rtruediv__(self, other): return _ops.div(other, self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(other, self)
    def __neg__(self): return _ops.neg(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __gt__(self, other): return _ops.gt(self, other)
    def __ge__(self, other): return _ops.ge(self, other)
    def __lt__(self, other): return _ops.lt(self, other)
    def __le__(self, other): return _ops.le(self, other)
    def __eq__(self, other): return _ops.eq(self, other)
    def __ne__(self, other): return _ops.ne(self, other)
    def __and__(self, other): return _ops.logical_and(self, other)
    def __rand__(self, other): return _ops.logical_and(other, self)
    def __or__(self, other): return _ops.logical_or(self, other)
    def __ror__(self, other): return _ops.logical_or(other, self)
    def __invert__(self): return _ops.logical_not(self)

    # ----- methods mirroring torch / numpy -------------------------------------------
    def sum(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _ops.sum(self, axis=axis if dim is None else dim,
                        keepdims=keepdims if keepdim is None else keepdim)

    def mean(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return _ops.mean(self, axis=axis if dim is None else dim,
                         keepdims=keepdims if keepdim is None else keepdim)

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return _ops.reshape(self, shape)

    def _torch_method(self, name, args, kwargs):
        """``torch.Tensor.<name>`` semantics, from the torch front end's table."""
        from .torch_frontend import tensor_attribute
        return tensor_attribute(self, name)(*args, **kwargs)

    def squeeze(self, *args, **kwargs):
        """NumPy's ``squeeze(axis=...)`` (a size-1 axis only), else torch's (a dim whose
        size is not 1 is left alone)."""
        if "axis" in kwargs or not args and not kwargs:
            return _ops.squeeze(self, kwargs.get("axis"))
        return self._torch_method("squeeze", args, kwargs)

    def unsqueeze(self, axis):
        return _ops.unsqueeze(self, axis)

    def transpose(self, *axes):
        if len(axes) == 2 and all(isinstance(a, int) for a in axes):  # torch's (dim0, dim1)
            from .torch_frontend import swap_axes
            return swap_axes(self, *axes)
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return _ops.transpose(self, axes or None)

    def t(self):
        return _ops.transpose(self)

    def broadcast_to(self, shape):
        return _ops.broadcast_to(self, shape)

    def expand(self, *sizes):
        """torch's ``expand(*sizes)`` (-1 keeps a dim); ``broadcast_to`` is NumPy's."""
        return self._torch_method("expand", sizes, {})

    def detach(self):
        return _ops.detach(self)

    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sin(self): return _ops.sin(self)
    def cos(self): return _ops.cos(self)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def relu(self): return _ops.relu(self)
    def sqrt(self): return _ops.sqrt(self)
    def abs(self): return _ops.abs(self)
    def square(self): return _ops.square(self)
    def clamp(self, min=None, max=None):
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return self._torch_method("clamp", (), {"min": min, "max": max})
        return _ops.clamp(self, min, max)

    def _reduce(self, name, axis, keepdims, dim, keepdim, **kw):
        from . import reductions
        return getattr(reductions, name)(self, axis=axis if dim is None else dim,
                                         keepdims=keepdims if keepdim is None else keepdim, **kw)

    # Methods spelled alike in NumPy and torch but meaning different things follow NumPy
    # when called with NumPy's keywords (axis=, keepdims=), torch otherwise:
    # x.max(axis=1) is the values, x.max(1) is torch's (values, indices); x.norm(1) is
    # the 1-norm; x.var(0, unbiased=False) is torch's.
    def _numpy_style(self, args, kwargs):
        return not args and not (set(kwargs) - {"axis", "keepdims"})

    def max(self, *args, **kwargs):
        if self._numpy_style(args, kwargs):
            return self._reduce("max", kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None)
        return self._torch_method("max", args, kwargs)

    def min(self, *args, **kwargs):
        if self._numpy_style(args, kwargs):
            return self._reduce("min", kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None)
        return self._torch_method("min", args, kwargs)

    def amax(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return self._reduce("amax", axis, keepdims, dim, keepdim)

    def amin(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return self._reduce("amin", axis, keepdims, dim, keepdim)

    def prod(self, axis=None, keepdims=False, *, dim=None, keepdim=None):
        return self._reduce("prod", axis, keepdims, dim, keepdim)

    def _statistic(self, name, args, kwargs):
        """NumPy's var/std (ddof=0 by default) with NumPy's keywords, torch's (Bessel's
        correction by default) otherwise."""
        numpy_keys = {"axis", "keepdims", "ddof"}
        if not args and kwargs and set(kwargs) <= numpy_keys:
            return self._reduce(name, kwargs.get("axis"), kwargs.get("keepdims", False),
                                None, None, correction=kwargs.get("ddof", 0))
        return self._torch_method(name, args, kwargs)

    def var(self, *args, **kwargs):
        return self._statistic("var", args, kwargs)

    def std(self, *args, **kwargs):
        return self._statistic("std", args, kwargs)

    def norm(self, *args, **kwargs):
        if self._numpy_style(args, kwargs):
            from .linalg import norm
            return norm(self, axis=kwargs.get("axis"), keepdims=kwargs.get("keepdims", False))
        return self._torch_method("norm", args, kwargs)

    def cumsum(self, axis=None, *, dim=None):
        from .reductions import cumsum
        return cumsum(self, axis if dim is None else dim)

    def softmax(self, axis=-1, *, dim=None):
        from .nn import softmax
        return softmax(self, axis if dim is None else dim)

    def log_softmax(self, axis=-1, *, dim=None):
        from .nn import log_softmax
        return log_softmax(self, axis if dim is None else dim)

    def dot(self, other):
        from .linalg import dot
        return dot(self, other)


def make(op, inputs, params=()):
    """The node for ``op(inputs; params)``: an existing equal node, a simpler
    equivalent one, or a new node."""
    if not grad_mode._state.enabled and op != "detach" and inputs:
        inputs = tuple(make("detach", (i,)) for i in inputs)  # inside sg.no_grad()
    key = (op, tuple(map(id, inputs)), params)
    node = _interned.get(key)
    if node is not None:
        return node
    opdef = _ops.OPS[op]
    attrs = dict(params)
    shape = opdef.shape([i.shape for i in inputs], attrs)
    dtype = opdef.dtype(inputs)
    simpler = opdef.simplify(inputs, attrs, shape) if opdef.simplify else None
    if simpler is not None:
        return simpler
    node = Tensor(op, inputs, params, shape, dtype)
    _interned[key] = node
    return node


def leaf(op, params, shape, dtype="float"):
    key = (op, (), params)
    node = _interned.get(key)
    if node is None:
        node = Tensor(op, (), params, shape, dtype)
        _interned[key] = node
    return node


def symbol(name, shape=()):
    """A named symbolic input, e.g. ``sg.symbol("W", shape=("m", "n"))``."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"symbol name must be a Python identifier, got {name!r}")
    shape = as_shape(shape)
    return leaf("symbol", (("name", name), ("shape", shape)), shape)


def const(value, shape=()):
    """A constant filling ``shape``; ``value`` is a number or a SymPy expression of dims."""
    if isinstance(value, bool) or value is sympy.true or value is sympy.false:
        return leaf("const", (("value", sympy.true if value else sympy.false), ("shape", shape)),
                    shape, "bool")
    return leaf("const", (("value", number(value)), ("shape", shape)), shape)


def number(value):
    """A constant as SymPy keeps it. Integral floats become Integers: SymPy's
    ``Float(1.0) == 1`` is False, and x*1.0, x + 0.0, 2.0*0.5 must simplify like x*1."""
    if isinstance(value, sympy.Basic):
        if not value.is_Float:
            return value
        value = float(value)
    elif isinstance(value, int) or getattr(value, "dtype", None) is not None \
            and value.dtype.kind in "iu":
        return sympy.Integer(int(value))
    elif isinstance(value, float) or getattr(value, "dtype", None) is not None \
            and value.dtype.kind == "f":
        value = float(value)
    else:
        raise TypeError(f"a constant must be a number or a SymPy expression, got "
                        f"{type(value).__name__}")
    if math.isfinite(value) and value == int(value) and abs(value) < 2 ** 53:
        return sympy.Integer(int(value))
    return sympy.Float(value)


def zeros(shape):
    return const(sympy.S.Zero, shape)


def ones(shape):
    return const(sympy.S.One, shape)


def is_zero(t):
    return t.op == "const" and t.attrs["value"] == 0


def is_one(t):
    return t.op == "const" and t.attrs["value"] == 1


def topo_order(outputs):
    """Nodes reachable from ``outputs``, each after its inputs (iterative DFS)."""
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
            for inp in reversed(node.inputs):
                if id(inp) not in seen:
                    stack.append((inp, False))
    return order


def count_nodes(outputs):
    return sum(1 for n in topo_order(outputs) if not n.is_leaf)


from . import ops as _ops  # noqa: E402  (ops builds on Tensor)
