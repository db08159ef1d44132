"""Forward semantics of every op: parameters, result shape, dtype and local expression.

Each op is one ``OpDef``. Its derivative rules are data in ``rules/``; its printed code
comes from printing ``expr`` (``codegen``); its local simplifications live in
``simplify``. The public functions (``sg.sin``, ``sg.sum``, ...) are polymorphic: on
symbolic Tensors they record a node, on numbers, NumPy arrays and torch tensors they
compute, by running the same code the compiler would emit.
"""
import builtins
import math

import sympy
from sympy import S
from sympy.codegen.cfunctions import expm1 as sym_expm1, log1p as sym_log1p

from . import sympy_funcs as sf
from .errors import OperandError, ShapeError, SymgradError, UnsupportedOpError
from .graph import Tensor, const, leaf, make
from .shapes import (as_dim, as_shape, broadcast_shapes, dims_match, fmt_shape,
                     normalize_axes, normalize_axis, numel, shapes_equal)


class OpDef:
    """What an op computes: ``params`` normalises keyword arguments, ``shape`` infers the
    result shape, ``expr`` builds the SymPy expression from operand expressions."""

    def __init__(self, name, arity, expr, shape=None, params=None, dtype=None,
                 simplify=None, doc=""):
        self.name = name
        self.arity = arity
        self.expr_fn = expr
        self.shape_fn = shape or pointwise_shape
        self.params_fn = params or no_params
        self.dtype_fn = dtype or float_dtype
        self.simplify = simplify
        self.doc = doc

    def shape(self, shapes, attrs):
        return self.shape_fn(self.name, shapes, attrs)

    def dtype(self, inputs):
        return self.dtype_fn(self.name, inputs)

    def params(self, shapes, kwargs):
        return self.params_fn(self.name, shapes, **kwargs)

    def expr(self, node_or_attrs, operands):
        attrs = node_or_attrs.attrs if isinstance(node_or_attrs, Tensor) else node_or_attrs
        return self.expr_fn(attrs, *operands)


OPS = {}


def defop(name, arity, expr, **kw):
    OPS[name] = OpDef(name, arity, expr, **kw)
    return OPS[name]


# ----- shape, dtype and parameter helpers ---------------------------------------------

def pointwise_shape(op, shapes, attrs):
    return broadcast_shapes(*shapes, op=op)


def no_params(op, shapes, **kwargs):
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")
    return ()


def float_dtype(op, inputs):
    return "float"


def bool_dtype(op, inputs):
    return "bool"


def same_dtype(op, inputs):
    return inputs[0].kind


# ----- leaves --------------------------------------------------------------------------

def _symbol_expr(attrs):
    return sympy.Symbol(attrs["name"], real=True)


def _const_expr(attrs):
    value, shape = attrs["value"], attrs["shape"]
    if not shape:
        return value
    return sf.FillOp(sf.sym_tuple(shape), value)


defop("symbol", 0, _symbol_expr, shape=lambda op, s, a: a["shape"])
defop("const", 0, _const_expr, shape=lambda op, s, a: a["shape"],
      dtype=lambda op, i: "float")


# ----- pointwise -----------------------------------------------------------------------

# SymPy turns x/0, 0**-1 and log(0) into ComplexInfinity, which has no sign and no
# printed form; torch computes IEEE values (x/0 = x*inf, 0**-1 = inf, log(0) = -inf).
def _div_expr(x, y):
    return x * S.Infinity if sympy.sympify(y).is_zero else x / y


def _pow_expr(x, y):
    if sympy.sympify(x).is_zero and sympy.sympify(y).is_negative:
        return S.Infinity
    if isinstance(x, sympy.Number) and isinstance(y, sympy.Number):
        # Folding constants: SymPy would compute 3**(10**9) exactly (a hang), torch gives
        # inf. Keep SymPy's exact value only when it is a modest finite float.
        value = _float_pow(x, y)
        if not math.isfinite(value) or value == 0 or abs(y) > 64:
            return _ieee(value)
    return x ** y


def _float_pow(x, y):
    import numpy
    try:
        with numpy.errstate(all="ignore"):
            return float(numpy.float64(float(x)) ** numpy.float64(float(y)))
    except OverflowError:                     # float() of an integer beyond 1e308
        return math.inf if abs(x) > 1 else 0.0


def _ieee(value):
    if math.isnan(value):
        return S.NaN
    if math.isinf(value):
        return S.Infinity if value > 0 else S.NegativeInfinity
    return sympy.Float(value) if value != int(value) else sympy.Integer(int(value))


def _log_expr(x):
    return S.NegativeInfinity if sympy.sympify(x).is_zero else sympy.log(x)


def _log1p_expr(x):
    return S.NegativeInfinity if (sympy.sympify(x) + 1).is_zero else sym_log1p(x)


UNARY = {
    "neg": lambda x: -x,
    "exp": sympy.exp,
    "log": _log_expr,
    "log1p": _log1p_expr,
    "expm1": sym_expm1,
    "sqrt": sympy.sqrt,
    "square": lambda x: x ** 2,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "asin": sympy.asin,
    "acos": sympy.acos,
    "atan": sympy.atan,
    "sinh": sympy.sinh,
    "cosh": sympy.cosh,
    "tanh": sympy.tanh,
    "sigmoid": sf.sigmoid,
    "relu": sf.relu,
    "softplus": sf.softplus,
    "abs": sympy.Abs,
    "erf": sympy.erf,
    "sign": sympy.sign,
}

BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": _div_expr,
    "pow": _pow_expr,
    "maximum": sympy.Max,
    "minimum": sympy.Min,
}

COMPARISONS = {
    "gt": sympy.StrictGreaterThan,
    "ge": sympy.GreaterThan,
    "lt": sympy.StrictLessThan,
    "le": sympy.LessThan,
    "eq": sympy.Eq,
    "ne": sympy.Ne,
}

LOGICAL = {"logical_and": sympy.And, "logical_or": sympy.Or}

for _name, _f in UNARY.items():
    defop(_name, 1, (lambda f: lambda attrs, x: f(x))(_f))
for _name, _f in BINARY.items():
    defop(_name, 2, (lambda f: lambda attrs, x, y: f(x, y))(_f))
for _name, _f in {**COMPARISONS, **LOGICAL}.items():
    defop(_name, 2, (lambda f: lambda attrs, x, y: f(x, y, evaluate=False))(_f),
          dtype=bool_dtype)
defop("logical_not", 1, lambda attrs, x: sympy.Not(x), dtype=bool_dtype)
defop("cast", 1, lambda attrs, x: sf.AsFloat(x))
defop("where", 3, lambda attrs, c, x, y: sf.Where(c, x, y))
defop("detach", 1, lambda attrs, x: sf.StopGradient(x), dtype=same_dtype)


def _clamp_params(op, shapes, min=None, max=None):
    if min is None and max is None:
        raise ValueError("clamp: give at least one of min and max")
    for bound in (min, max):
        if bound is not None and not isinstance(bound, (int, float)):
            raise TypeError(f"clamp: bounds must be numbers, got {bound!r}; "
                            "use sg.maximum / sg.minimum for tensor bounds")
    return (("min", None if min is None else float(min)),
            ("max", None if max is None else float(max)))


def _clamp_expr(attrs, x):
    lo, hi = attrs["min"], attrs["max"]
    return sf.Clamp(x, S.NegativeInfinity if lo is None else sympy.Float(lo),
                    S.Infinity if hi is None else sympy.Float(hi))


defop("clamp", 1, _clamp_expr, params=_clamp_params)


# ----- reductions ----------------------------------------------------------------------

def _reduce_params(op, shapes, axis=None, keepdims=False):
    rank = len(shapes[0])
    axes = normalize_axes(axis, rank, op)
    return (("axis", axes), ("keepdims", bool(keepdims)), ("full", len(axes) == rank))


def _reduce_shape(op, shapes, attrs):
    axes, keep = attrs["axis"], attrs["keepdims"]
    return tuple(1 if i in axes else d for i, d in enumerate(shapes[0])
                 if keep or i not in axes)


def _reduce_expr(cls):
    def expr(attrs, x):
        return cls(x, sf.sym_tuple(attrs["axis"]), sf.sym_bool(attrs["keepdims"]),
                   sf.sym_bool(attrs["full"]))
    return expr


defop("sum", 1, _reduce_expr(sf.SumOp), shape=_reduce_shape, params=_reduce_params)
defop("mean", 1, _reduce_expr(sf.MeanOp), shape=_reduce_shape, params=_reduce_params)


# ----- linear algebra and shape ---------------------------------------------------------

def _matmul_shape(op, shapes, attrs):
    a, b = shapes
    if not a or not b:
        raise ShapeError(f"matmul: both operands need at least one dim, got shapes "
                         f"{fmt_shape(a)} and {fmt_shape(b)}; use * for scalars")
    k_a = a[-1]
    k_b = b[0] if len(b) == 1 else b[-2]
    if not dims_match(k_a, k_b):
        raise ShapeError(
            f"matmul: inner dims differ: shapes {fmt_shape(a)} @ {fmt_shape(b)} "
            f"({k_a} vs {k_b}); transpose one operand or fix the shapes")
    if len(a) <= 2 and len(b) <= 2:
        return a[:-1] + b[1:] if len(b) == 2 else a[:-1]
    batch = broadcast_shapes(a[:-2], b[:-2], op=op)
    rows = (a[-2],) if len(a) >= 2 else ()
    cols = (b[-1],) if len(b) >= 2 else ()
    return batch + rows + cols


defop("matmul", 2, lambda attrs, x, y: sf.MatmulOp(x, y), shape=_matmul_shape)


def _transpose_params(op, shapes, axes=None):
    rank = len(shapes[0])
    if axes is None:
        return (("axes", tuple(reversed(range(rank)))),)
    axes = tuple(normalize_axis(a, rank, op) for a in axes)
    if sorted(axes) != list(range(rank)):
        raise ShapeError(f"transpose: axes {axes} are not a permutation of {tuple(range(rank))}")
    return (("axes", axes),)


defop("transpose", 1, lambda attrs, x: sf.TransposeOp(x, sf.sym_tuple(attrs["axes"])),
      shape=lambda op, s, a: tuple(s[0][i] for i in a["axes"]), params=_transpose_params)


def _reshape_params(op, shapes, shape):
    src = shapes[0]
    if isinstance(shape, (int, str)):
        shape = (shape,)
    dims = [d if d == -1 else as_dim(d) for d in shape]
    if dims.count(-1) > 1:
        raise ShapeError(f"reshape: only one dim can be -1, got {tuple(shape)}")
    total = numel(src)
    if -1 in dims:
        rest = numel([d for d in dims if d != -1])
        inferred = sympy.simplify(sympy.sympify(total) / rest)
        if not (inferred.is_integer or inferred.is_Symbol):
            raise ShapeError(f"reshape: cannot infer -1 from {fmt_shape(src)} -> {tuple(shape)}")
        dims[dims.index(-1)] = int(inferred) if inferred.is_Integer else inferred
    if not dims_match(numel(dims), total):
        raise ShapeError(f"reshape: cannot reshape {fmt_shape(src)} ({total} elements) "
                         f"into {fmt_shape(tuple(dims))} ({numel(dims)} elements)")
    return (("shape", tuple(dims)),)


defop("reshape", 1, lambda attrs, x: sf.ReshapeOp(x, sf.sym_tuple(attrs["shape"])),
      shape=lambda op, s, a: a["shape"], params=_reshape_params)


def _squeeze_params(op, shapes, axis=None):
    src = shapes[0]
    if axis is None:
        axes = tuple(i for i, d in enumerate(src) if d == 1)
    else:
        axes = normalize_axes(axis, len(src), op)
        for a in axes:
            if src[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {fmt_shape(src)} has size "
                                 f"{src[a]}, not 1")
    return (("axis", axes),)


defop("squeeze", 1, lambda attrs, x: sf.SqueezeOp(x, sf.sym_tuple(attrs["axis"])),
      shape=lambda op, s, a: tuple(d for i, d in enumerate(s[0]) if i not in a["axis"]),
      params=_squeeze_params)


def _unsqueeze_params(op, shapes, axis):
    rank = len(shapes[0]) + 1
    return (("axis", normalize_axis(axis, rank, op)),)


def _unsqueeze_shape(op, shapes, attrs):
    s = list(shapes[0])
    s.insert(attrs["axis"], 1)
    return tuple(s)


defop("unsqueeze", 1, lambda attrs, x: sf.UnsqueezeOp(x, sympy.Integer(attrs["axis"])),
      shape=_unsqueeze_shape, params=_unsqueeze_params)


def _broadcast_params(op, shapes, shape):
    target = as_shape(shape)
    got = broadcast_shapes(shapes[0], target, op=op)
    if not shapes_equal(got, target):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {fmt_shape(shapes[0])} "
                         f"to {fmt_shape(target)}")
    return (("shape", target),)


defop("broadcast_to", 1, lambda attrs, x: sf.BroadcastOp(x, sf.sym_tuple(attrs["shape"])),
      shape=lambda op, s, a: a["shape"], params=_broadcast_params, dtype=same_dtype)


# ----- conversion of operands ----------------------------------------------------------

def _torch():
    import sys
    return sys.modules.get("torch")


def is_numeric(x):
    """True for values ops compute on directly: numbers, NumPy arrays, torch tensors."""
    if isinstance(x, (int, float, bool)):
        return True
    t = type(x).__module__
    return t.startswith("numpy") or t.startswith("torch")


def as_tensor(x, op="op"):
    """Wrap a constant operand met while tracing (number, array, tensor) as a node."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, bool):
        return const(x)
    if isinstance(x, (int, float)):
        return const(x)
    if isinstance(x, sympy.Expr):
        return const(x)
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    import numpy
    if isinstance(x, (numpy.ndarray, numpy.generic)):
        arr = numpy.asarray(x)
        if arr.ndim == 0:
            return const(arr.item())
        return array_const(arr)
    hint = " (did the function return nothing?)" if x is None and op == "output" else ""
    raise OperandError(f"{op}: cannot use a {type(x).__name__} as an operand{hint}; "
                       "pass a number, an array or a symgrad Tensor")


class ArrayValue:
    """A NumPy array made hashable by its bytes, for constant array nodes."""

    __slots__ = ("array", "_key")

    def __init__(self, array):
        import numpy
        self.array = numpy.array(array, dtype=float if array.dtype != bool else bool)
        self.array.setflags(write=False)
        self._key = (self.array.shape, self.array.dtype.str, self.array.tobytes())

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, ArrayValue) and self._key == other._key


class ArraySymbol(sympy.Symbol):
    """A constant array inside a formula; printed by name, bound to its value in code."""


def _array_expr(attrs):
    value = attrs["value"]
    name = "C%08x" % (hash(value) & 0xFFFFFFFF)
    sym = ArraySymbol(name)
    ARRAY_VALUES[name] = value.array
    return sym


ARRAY_VALUES = {}

defop("array", 0, _array_expr, shape=lambda op, s, a: a["shape"],
      dtype=lambda op, i: "float")


def array_const(arr):
    value = ArrayValue(arr)
    dtype = "bool" if value.array.dtype == bool else "float"
    return leaf("array", (("value", value), ("shape", value.array.shape)),
                value.array.shape, dtype)


# ----- applying ops --------------------------------------------------------------------

def apply(op, *args, **kwargs):
    """Record ``op`` if any argument is symbolic, else compute it numerically."""
    opdef = OPS[op]
    if len(args) != opdef.arity:
        raise TypeError(f"{op}() takes {opdef.arity} tensor arguments, got {len(args)}")
    if any(isinstance(a, Tensor) for a in args):
        inputs = tuple(as_tensor(a, op) for a in args)
        if op not in BOOL_INPUT_OPS:
            inputs = tuple(make("cast", (i,)) if i.kind == "bool" else i for i in inputs)
        if op == "where" and inputs[0].kind != "bool":
            raise TypeError(f"where: the condition must be a boolean Tensor (a comparison "
                            f"such as x > 0), got a float Tensor of shape "
                            f"{fmt_shape(inputs[0].shape)}")
        params = opdef.params([i.shape for i in inputs], kwargs)
        return make(op, inputs, params)
    if any(isinstance(a, sympy.Basic) for a in args):
        params = opdef.params([() for _ in args], kwargs)
        return opdef.expr(dict(params), [sympy.sympify(a) for a in args])
    from .numeric import evaluate
    return evaluate(op, args, kwargs)


BOOL_INPUT_OPS = {"where", "logical_and", "logical_or", "logical_not", "detach",
                  "broadcast_to", "eq", "ne", "cast"}


def _unary(name):
    def f(x):
        return apply(name, x)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}; records a node on symbolic Tensors, computes otherwise."
    return f


def _binary(name):
    def f(x, y):
        return apply(name, x, y)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} with NumPy broadcasting."
    return f


neg, exp, log, log1p, expm1, sqrt, square = map(
    _unary, ["neg", "exp", "log", "log1p", "expm1", "sqrt", "square"])
sin, cos, tan, asin, acos, atan, sinh, cosh, tanh = map(
    _unary, ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh"])
sigmoid, relu, softplus, abs, erf, sign = map(
    _unary, ["sigmoid", "relu", "softplus", "abs", "erf", "sign"])
add, sub, mul, div, pow, maximum, minimum = map(
    _binary, ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
_FLIPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "ne": "ne"}


def _is_constant(x):
    return not isinstance(x, Tensor) or x.op == "const"


def _comparison(name):
    def f(x, y):
        # A constant on the left moves to the right (0 < x is x > 0): torch.gt(0, x) is
        # not valid torch, and one order lets structural hashing share the node.
        if isinstance(y, Tensor) and _is_constant(x) and not _is_constant(y):
            return apply(_FLIPPED[name], y, x)
        return apply(name, x, y)
    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"Elementwise comparison {name} with NumPy broadcasting (a boolean Tensor)."
    return f


gt, ge, lt, le, eq, ne = map(_comparison, ["gt", "ge", "lt", "le", "eq", "ne"])
logical_and, logical_or = map(_binary, ["logical_and", "logical_or"])
logical_not = _unary("logical_not")
cast = _unary("cast")


def where(condition, x, y):
    """Elementwise choice: x where condition holds, else y. Use it instead of ``if``."""
    return apply("where", condition, x, y)


def clamp(x, min=None, max=None):
    return apply("clamp", x, min=min, max=max)


def sum(x, axis=None, keepdims=False):
    """Sum over all axes (axis=None), one axis or a tuple of axes."""
    return apply("sum", x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return apply("mean", x, axis=axis, keepdims=keepdims)


def matmul(x, y):
    """Matrix product with NumPy's rules for 1-D operands."""
    return apply("matmul", x, y)


def transpose(x, axes=None):
    """Permute axes (reverse them when ``axes`` is None, like ``x.T``)."""
    return apply("transpose", x, axes=axes)


def reshape(x, shape):
    return apply("reshape", x, shape=shape)


def squeeze(x, axis=None):
    return apply("squeeze", x, axis=axis)


def unsqueeze(x, axis):
    return apply("unsqueeze", x, axis=axis)


def broadcast_to(x, shape):
    return apply("broadcast_to", x, shape=shape)


def detach(x):
    """x as a constant for differentiation (``torch.Tensor.detach``, ``jax.lax.stop_gradient``)."""
    if isinstance(x, Tensor):
        return make("detach", (x,))
    torch = _torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach()
    return x


stop_gradient = detach


from . import simplify as _simplify  # noqa: E402,F401  (attaches simplifiers to OPS)
from . import indexing, linalg, nn, reductions  # noqa: E402,F401  (define more ops)

OP_MODULES = (__import__(__name__, fromlist=["_"]), linalg, reductions, nn, indexing)


def function_for(op):
    """The public function that applies ``op`` (``sg.<op>``), or None."""
    for module in OP_MODULES:
        fn = getattr(module, op, None)
        if callable(fn) and getattr(fn, "__module__", None) == module.__name__:
            return fn
    return None
