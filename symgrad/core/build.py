"""Building graph nodes: ``apply`` (record or compute an op), ``make`` (intern and
simplify a node), and the leaves: symbols, constants and captured arrays.

Nodes are interned: building the same op on the same inputs with the same parameters
returns the existing node, so the graph is a DAG with no duplicate subterms. Before a
node is made, the op's ``simplify`` may return an equivalent existing node instead
(x*1 -> x, constant folding). ``apply`` is what every public op function calls: on
symbolic Tensors it records a node, on SymPy expressions it builds the op's SymPy form,
and on numbers, arrays and torch tensors it computes (``extensions.evaluate``).
"""
import atexit
import contextlib
import functools
import gc
import itertools
import math
import sys
import threading
import weakref
from typing import Any, Callable, TypeVar

import sympy

from ..errors import ArgumentError, OperandError, ParameterError
from . import extensions, grad_mode
from .graph import Tensor
from .opdef import ArrayOp, OPS, defop, no_params, public
from .shapes import (
    KIND_DTYPES, as_shape, check_dim_expression, check_symmetric, dtype_kind, fmt_shape)
from .types import ShapeLike, TensorLike

_F = TypeVar("_F", bound=Callable[..., Any])


_gc_lock = threading.Lock()
_gc_pauses = [0, False]   # calls inside gc_paused (all threads), collector on before them


def gc_paused(fn: _F) -> _F:
    """Run ``fn`` with Python's cyclic garbage collector paused. Building a large graph
    allocates many small objects that form no cycles, and each collection walks every
    live node: with 10⁵ nodes the collector took more than half the time. The collector
    is process-wide, so the pauses of all threads are counted: the first pauses it (if
    it was on), the last switches it back on."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _gc_lock:
            if _gc_pauses[0] == 0:
                _gc_pauses[1] = gc.isenabled()
                gc.disable()
            _gc_pauses[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _gc_lock:
                _gc_pauses[0] -= 1
                if _gc_pauses[0] == 0 and _gc_pauses[1]:
                    gc.enable()
    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature


class InternTable:
    """key -> node, holding nodes weakly: a node lives as long as someone uses it. A plain
    dict of weak references with a removal callback (twice as fast as
    ``WeakValueDictionary`` on the hot path of tracing)."""

    __slots__ = ("refs", "_remove")

    def __init__(self):
        refs: dict[Any, KeyedRef] = {}
        self.refs = refs

        def remove(ref, pop=refs.pop):
            key = ref.key
            if refs.get(key) is ref:
                pop(key, None)   # another thread may have removed it meanwhile
        self._remove = remove

    def get(self, key):
        ref = self.refs.get(key)
        return None if ref is None else ref()

    def __setitem__(self, key, node):
        ref = KeyedRef(node, self._remove)
        ref.key = key
        self.refs[key] = ref

    def __len__(self):
        return len(self.refs)

    def clear(self):
        self.refs.clear()


class KeyedRef(weakref.ref):
    __slots__ = ("key",)
    key: Any


interned = InternTable()
# Keys hold SymPy numbers; clear them before interpreter teardown unloads mpmath.
atexit.register(interned.clear)


def make(op, inputs, params=()):
    """The node for ``op(inputs; params)``: an existing equal node, a simpler
    equivalent one, or a new node."""
    if not grad_mode.is_grad_enabled() and op != "detach" and inputs:
        inputs = tuple(make("detach", (i,)) for i in inputs)  # inside sg.no_grad()
    key = (op, tuple(map(id, inputs)), typed_key(params) if params else params)
    node = interned.get(key)
    if node is not None:
        return node
    opdef = OPS[op]
    attrs = dict(params)
    shape = opdef.shape_fn(op, [i.shape for i in inputs], attrs)
    kind = opdef.kind_fn(op, inputs)
    simplify = opdef.simplify
    if simplify is not None:
        simpler = simplify(inputs, attrs, shape)
        if simpler is not None:
            return simpler
    node = Tensor(op, inputs, params, shape, kind, attrs)
    interned[key] = node
    return node


def typed_key(value):
    """``value`` (an op's parameters) as an intern key in which equal numbers of another
    type are other keys: 3.0 == 3 and True == 1 in Python, but a scale factor of 3.0 is not
    a size of 3, and -0.0 is not 0.0."""
    t = type(value)
    if t is tuple:
        return tuple([typed_key(v) for v in value])
    if t is float or t is bool:
        return (t, repr(value))
    return value


def leaf(op, params, shape, kind="float"):
    key = (op, (), typed_key(params))
    node = interned.get(key)
    if node is None:
        node = Tensor(op, (), params, shape, kind)
        interned[key] = node
    return node


def apply(op, *args, **kwargs):
    """Record ``op`` if any argument is symbolic, else compute it (numbers, arrays and
    torch tensors) or build its SymPy form (SymPy expressions)."""
    opdef = OPS[op]
    if len(args) != opdef.nargs:
        raise ArgumentError(f"{op}() takes {opdef.arity} tensor arguments, got {len(args)}")
    for a in args:
        if isinstance(a, Tensor):
            break
    else:
        a = None
    if a is not None:
        inputs = tuple([a if type(a) is Tensor else as_tensor(a, op) for a in args])
        if not opdef.bool_inputs:
            for i in inputs:
                if i.kind == "bool":
                    inputs = tuple([make("cast", (i,)) if i.kind == "bool" else i
                                    for i in inputs])
                    break
        if kwargs or opdef.params_fn is not no_params:
            params = opdef.params([i.shape for i in inputs], kwargs)
        else:
            params = ()
        return make(op, inputs, params)
    if any(isinstance(a, sympy.Basic) for a in args):
        params = opdef.params([() for _ in args], kwargs)
        return opdef.expr(dict(params), [sympy.sympify(a) for a in args])
    return extensions.evaluate(op, args, kwargs)


# ----- leaves ----------------------------------------------------------------------------

def _leaf_shape(op, shapes, attrs):
    return attrs["shape"]


def _symbol_expr(attrs):
    if attrs.get("dtype") == "int64":
        return sympy.Symbol(attrs["name"], integer=True)
    return sympy.Symbol(attrs["name"], real=True)


@defop("symbol", (), sympy=_symbol_expr, shape=_leaf_shape, differentiable=False,
       doc="a named input")
def symbol(name: str, shape: ShapeLike = (), dtype: str | None = None,
           symmetric: bool | None = None) -> Tensor:
    """A named symbolic input, e.g. ``sg.symbol("W", shape=("m", "n"))``; ``dtype``
    "int64" or "bool" (or a ``TensorSpec`` with one as ``shape``) makes an integer or
    boolean input, which carries no gradient. ``symmetric=True`` (or a ``TensorSpec``
    declaring it) makes a symmetric matrix (see ``sg.TensorSpec``): its transpose is
    itself and its gradient is the symmetric gradient (G + Gᵀ)/2.

    Example:

    >>> import symgrad as sg
    >>> W = sg.symbol("W", shape=("m", "n"))
    >>> W
    Tensor(W, shape=(m, n))
    >>> ids = sg.symbol("ids", shape=("B",), dtype="int64")
    >>> ids.kind
    'int'
    >>> S = sg.symbol("S", shape=("n", "n"), symmetric=True)
    >>> S.T is S
    True
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ParameterError(f"symbol name must be a Python identifier, got {name!r}")
    if dtype is None:
        dtype = getattr(shape, "dtype", "float64")
    if symmetric is None:
        symmetric = getattr(shape, "symmetric", False)
    kind = dtype_kind(dtype)
    shape = tuple(as_shape(shape))
    symmetric = check_symmetric(symmetric, shape, kind, f"input {name} (shape "
                                f"{fmt_shape(shape)}, dtype {KIND_DTYPES[kind]})")
    params: tuple[tuple[str, Any], ...] = (("name", name), ("shape", shape))
    if kind != "float":
        params += (("dtype", KIND_DTYPES[kind]),)
    if symmetric:
        params += (("symmetric", True),)
    return leaf("symbol", params, shape, kind)


def internal_symbol(name: str, shape: ShapeLike = (), kind: str = "float") -> Tensor:
    """A symbol symgrad makes for itself (a custom Function's placeholders, a rolled
    loop's carries): never the node of a user's symbol of the same name, which symbols of
    equal name and shape otherwise are. ``kind``: "float", "int" or "bool"."""
    shape = tuple(as_shape(shape))
    params: tuple[tuple[str, Any], ...] = (("name", name), ("shape", shape), ("internal", True))
    if kind != "float":
        params += (("dtype", KIND_DTYPES[kind]),)
    return leaf("symbol", params, shape, kind)


def is_symmetric_leaf(t):
    """Whether ``t`` is an input declared symmetric (``sg.TensorSpec(..., symmetric=True)``)."""
    return t.op == "symbol" and t.attrs.get("symmetric", False)


class Fill(ArrayOp):
    """full(shape, value): a constant array."""


def _const_expr(attrs):
    value, shape = attrs["value"], attrs["shape"]
    return Fill(*[sympy.Tuple(*shape), value]) if shape else value


def _fill_text(shape, value):
    if value.expr == 0:
        return f"zeros({shape})"
    if value.expr == 1:
        return f"ones({shape})"
    return f"full({shape}, {value})"


def _fill_latex(shape, value):
    dims = r"\times ".join(shape.printer._print(d) for d in shape.expr)
    if value.expr == 1:
        return rf"\mathbb{{1}}_{{{dims}}}"
    if value.expr == 0:
        return rf"\mathbb{{0}}_{{{dims}}}"
    return rf"{value} \mathbb{{1}}_{{{dims}}}"


def _filled_elements(shape, value):
    import numpy
    out = numpy.empty(shape, dtype=object)
    out.fill(value)
    return out


defop("const", (), sympy=_const_expr, sympy_class=Fill, sympy_params=("shape", "value"),
      shape=_leaf_shape, differentiable=False, text=_fill_text, latex=_fill_latex,
      numpy="numpy.full({shape}, {value}, dtype=numpy.float64)",
      torch="torch.full({shape}, {value}, dtype=_dt, device=_dev)",
      jax="jax.numpy.full({shape}, {value}, dtype=_dt)",
      elements=lambda ctx: _filled_elements(ctx.shape, ctx.attrs["value"]),
      bounds=lambda attrs: _const_bounds(attrs["value"]),
      doc="a constant filling its shape: a number or an expression of dims")


def _const_bounds(value):
    """A number is its own interval; an expression of dims (1/N) is known by its sign."""
    if value.is_number and value.is_real:
        return float(value), float(value)
    return (0.0 if value.is_nonnegative else -math.inf), (0.0 if value.is_nonpositive else math.inf)


_reference_run = threading.local()


class reference_constants:
    """While a reference function runs on torch tensors (``sg.check``), constants built
    with sg constructors (``sg.eye``, ``sg.zeros``, ``sg.full``, ``sg.const``) are torch
    tensors of the sizes ``dims`` gives their symbolic dims, so the function's own code
    runs unchanged as plain torch."""

    def __init__(self, torch, dims):
        self.torch, self.dims = torch, {str(k): int(v) for k, v in dims.items()}

    def __enter__(self):
        self.saved = getattr(_reference_run, "active", None)
        _reference_run.active = self
        # torch code that makes its own constants (torch.eye(n), torch.zeros(...)) makes
        # them in torch's default dtype: float64 here, as the reference runs in float64
        self.dtype = self.torch.get_default_dtype()
        self.torch.set_default_dtype(self.torch.float64)
        return self

    def __exit__(self, *exc):
        self.torch.set_default_dtype(self.dtype)
        _reference_run.active = self.saved

    def size(self, d):
        if isinstance(d, sympy.Expr):
            return int(d.subs({s: self.dims[s.name] for s in d.free_symbols
                               if s.name in self.dims}))
        if isinstance(d, str):
            return self.dims[d]
        return int(d)

    def full(self, shape, value):
        return self.torch.full(tuple(self.size(d) for d in shape), float(value),
                               dtype=self.torch.float64)


def reference_run():
    """The active ``reference_constants``, or None while tracing (the usual case)."""
    return getattr(_reference_run, "active", None)


def const(value: TensorLike | sympy.Expr, shape: ShapeLike = ()) -> Tensor:
    """A constant filling ``shape``; ``value`` is a number or a SymPy expression of dims
    (an array or tensor is a constant array of its own shape).

    Example:

    >>> import symgrad as sg
    >>> c = sg.const(2.5)
    >>> c
    Tensor(2.5, shape=())
    >>> sg.const(1, shape=("n",))
    Tensor(ones((n,)), shape=(n,))
    """
    ref = reference_run()
    if ref is not None and not getattr(value, "ndim", 0):
        return ref.full(shape if isinstance(shape, (tuple, list)) else (shape,),
                        ref.size(value) if isinstance(value, sympy.Expr) else value)
    if type(shape) is not tuple or not all(type(d) is int or isinstance(d, sympy.Expr)
                                           for d in shape):
        shape = as_shape(shape)
    if getattr(value, "ndim", 0) and not isinstance(value, Tensor):
        array = as_tensor(value, "const")
        if shape and tuple(array.shape) != shape:
            raise OperandError(f"const: an array of shape {tuple(array.shape)} cannot fill "
                               f"shape {shape}; leave shape out, or broadcast_to it")
        return array
    if isinstance(value, bool) or value is sympy.true or value is sympy.false:
        return leaf("const", (("value", sympy.true if value else sympy.false), ("shape", shape)),
                    shape, "bool")
    return leaf("const", (("value", number(value)), ("shape", shape)), shape)


def _library_class(cls):
    """Whether ``cls`` is a class SymPy or symgrad defines: found under its own name in its
    own module (a subclass elsewhere can claim any ``__module__``, not be that class)."""
    module = cls.__module__ or ""
    if not module.startswith(("sympy.", "symgrad.")) or module not in sys.modules:
        return False
    found: Any = sys.modules[module]
    for part in cls.__qualname__.split("."):
        found = getattr(found, part, None)
    return found is cls


def _sympy_constant(value):
    """A SymPy constant made of SymPy's own classes only (a subclass's printer hooks
    would be pasted into generated code), real (sympy.I and zoo are refused, as complex
    numbers are), with SymPy's less common named numbers (Catalan, EulerGamma) as their
    float values, which every printer spells."""
    for node in sympy.preorder_traversal(value):
        if not _library_class(type(node)):
            raise OperandError(f"a constant must be built from SymPy's own classes, got a "
                               f"{type(node).__name__} from {type(node).__module__}; pass "
                               "its value as a float")
    if value.is_number and value.is_extended_real is False:
        raise OperandError(f"a constant must be real, got {value!r}: symgrad differentiates "
                           "real functions; complex numbers are refused")
    named = value.atoms(sympy.NumberSymbol) - {sympy.pi, sympy.E}
    if named and value.is_number:
        return sympy.Float(float(value), 17)
    return value


def number(value):
    """A constant as SymPy keeps it. Integral floats become Integers: SymPy's
    ``Float(1.0) == 1`` is False, and x*1.0, x + 0.0, 2.0*0.5 must simplify like x*1."""
    if isinstance(value, sympy.Basic):
        if not isinstance(value, sympy.Expr):
            raise OperandError(f"a constant must be a number or an expression of dims, got "
                               f"{type(value).__name__} {value!r}")
        value = _sympy_constant(value)
        check_dim_expression(value, "a constant")
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
        raise OperandError(f"a constant must be a number or a SymPy expression of dims, got "
                           f"{type(value).__name__}; pass arrays and tensors to sg ops (they "
                           "become constant arrays) or make them inputs")
    if math.isfinite(value) and value == int(value) and abs(value) < 2 ** 53:
        return sympy.Integer(int(value))
    return sympy.Float(value)


def is_zero(t):
    return t.is_const and t.attrs["value"] == 0


def is_one(t):
    return t.is_const and t.attrs["value"] == 1


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


class ArraySymbol(sympy.Dummy):
    """A constant array inside a formula: it shows its values when it is small and a name
    otherwise (C₁, C₂, ...: unique per array for the life of the process, and no
    identifier, so never a user's name). It holds its array weakly (SymPy's caches may
    keep formulas longer than the graph). Code never prints it: programs name their
    arrays themselves."""

    def _sympystr(self, printer):
        value = self.value() if getattr(self, "value", None) is not None else None
        if value is not None and value.size <= 12 and not getattr(self, "named", False):
            return repr(value.tolist())
        return self.name

    def _latex(self, printer, exp=None):
        if getattr(self, "named", False):
            text = self.name if len(self.name) == 1 else \
                r"\mathit{" + self.name.replace("_", r"\_") + "}"
        else:
            text = rf"\mathrm{{C}}_{{{self.name[1:].translate(_DIGITS)}}}"
        return f"{text}^{{{exp}}}" if exp else text


_array_names = itertools.count(1)


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")


def _array_expr(attrs):
    name = attrs.get("name")
    sym = ArraySymbol(name or f"C{next(_array_names)}".translate(_SUBSCRIPTS))
    sym.value = weakref.ref(attrs["value"].array)
    sym.named = bool(name)
    return sym


defop("array", (), sympy=_array_expr, shape=_leaf_shape, differentiable=False,
      doc="a constant array captured while tracing")


def array_const(arr, name=None):
    value = ArrayValue(arr)
    kind = "bool" if value.array.dtype == bool else "float"
    params: tuple[tuple[str, Any], ...] = (("value", value), ("shape", value.array.shape))
    if name:
        params += (("name", name),)
    return leaf("array", params, value.array.shape, kind)


_captures = threading.local()


@contextlib.contextmanager
def naming_captures(fn):
    """While ``fn`` is traced, an array it captures (a closure variable or a global it
    names) becomes a constant named like that variable, so formulas read ``Y``, not C₁."""
    names: dict[int, str] = {}
    while getattr(fn, "__wrapped__", None) is not None:    # functools.wraps wrappers
        fn = fn.__wrapped__
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None:
        cells = getattr(getattr(fn, "__func__", fn), "__closure__", None) or ()
        found = list(zip(code.co_freevars, (c.cell_contents for c in cells
                                             if _cell_filled(c))))
        module_globals = getattr(getattr(fn, "__func__", fn), "__globals__", {})
        found += [(n, module_globals[n]) for n in code.co_names if n in module_globals]
        for n, v in found:
            if hasattr(v, "shape") and hasattr(v, "dtype") and n.isidentifier() \
                    and not n.startswith("_"):
                names.setdefault(id(v), n)
    previous = getattr(_captures, "names", None)
    _captures.names = {**(previous or {}), **names}
    try:
        yield
    finally:
        _captures.names = previous


def _cell_filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def captured_name(x):
    """The variable name of a captured array while its function is traced, or None."""
    names = getattr(_captures, "names", None)
    return names.get(id(x)) if names else None


def torch_module():
    """torch if the program has imported it (symgrad never imports it for that)."""
    return sys.modules.get("torch")


def is_numeric(x):
    """True for values ops compute on directly: numbers, NumPy arrays, torch tensors."""
    if isinstance(x, (int, float, bool)):
        return True
    t = type(x).__module__
    return t.startswith("numpy") or t.startswith("torch")


@public
def as_tensor(x, op="op"):
    """Wrap a constant operand met while tracing (number, array, tensor) as a node."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (bool, int, float)) or isinstance(x, sympy.Expr):
        return const(x)
    torch = torch_module()
    import numpy
    name = captured_name(x)
    if torch is not None and isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    if isinstance(x, (numpy.ndarray, numpy.generic)):
        arr = numpy.asarray(x)
        if arr.ndim == 0:
            return const(arr.item())
        return array_const(arr, name)
    hint = " (did the function return nothing?)" if x is None and op == "output" else ""
    raise OperandError(f"{op}: cannot use a {type(x).__name__} as an operand{hint}; "
                       "pass a number, an array or a symgrad Tensor")
