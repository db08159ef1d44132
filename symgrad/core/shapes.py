"""Shapes whose dims are ints (concrete) or SymPy symbols (symbolic, shared by name).

Broadcasting follows NumPy: align on the right, a dim of 1 stretches. A symbolic
dim only matches itself or 1, since its value is unknown until call time.
"""
import ast
import operator
import threading
import unicodedata
from functools import lru_cache
from typing import Any

import sympy

from ..errors import ArgumentError, ShapeError


class DimValueError(ShapeError, TypeError):
    """A symbolic dim used where Python needs a number (``float(n)``, ``math.log(n)``,
    ``range(n)``, ``if n > 3``): its size is known only when the compiled function runs.
    A TypeError too, as Python's own error there is. ``dims`` names the dims concerned."""

    dims: list[str] = []


_KEEP_SYMBOLIC = ("keep it symbolic with sg ops, which take dims and their arithmetic "
                  "(sg.log(n), sg.sqrt(n), x / n; in torch code torch.log(torch.tensor(n))), "
                  "or give the input a concrete size (shapes={'x': (8, ...)}, on the "
                  "command line --shape x=8,...)")


def number_needed(dim, what):
    """The DimValueError for ``what`` (``float()``, ``int()``, ...) applied to ``dim`` (a
    dim, an expression of dims, or a description of one)."""
    if isinstance(dim, sympy.Symbol):
        subject = f"{dim} is a symbolic dim"
    elif isinstance(dim, sympy.Basic):
        subject = f"{dim} is an expression of symbolic dims"
    else:
        subject = f"it got {dim}" + ("" if "dims" in dim else ", an expression of symbolic dims")
    advice, need = _KEEP_SYMBOLIC, "a number"
    if what.startswith("range"):
        advice = ("write the loop with tensor ops (sum, cumsum, matmul, sg.take) so it stays "
                  "one formula for every size, or " + advice[advice.index("give"):])
    elif what.startswith("a comparison"):
        need = "a decided truth value"
        advice = ("branch with sg.where on values, or give the input a concrete size "
                  "(shapes={'x': (8, ...)}); comparisons a dim's sign decides (n > 0) work")
    error = DimValueError(f"{what} needs {need}, but {subject} (its size is known only "
                          f"when the compiled function runs); {advice}")
    error.dims = sorted(str(d) for d in getattr(dim, "free_symbols", ()))
    return error


_SYMPY_MESSAGES = {"Cannot convert expression to float":
                   "float() (or a math function such as math.log)",
                   "Cannot convert symbols to int": "int()",
                   "Cannot convert complex to int": "int()"}


def translate_number_error(exc):
    """The DimValueError for a TypeError that SymPy (or Python) raised because an
    expression of dims (``n - 1``, ``2 * n``) met ``float()``, ``int()``, ``range()`` or
    ``if``, or None for any other exception. ``Dim`` catches a bare dim itself; this
    catches expressions, at the boundary of a trace."""
    if not isinstance(exc, TypeError) or isinstance(exc, ShapeError):
        return None
    message = str(exc)
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    expr = frames[-1].f_locals.get("self") if frames else None
    if isinstance(expr, sympy.Basic) and expr.free_symbols and all(
            isinstance(d, Dim) for d in expr.free_symbols):
        if message in _SYMPY_MESSAGES:
            return number_needed(expr, _SYMPY_MESSAGES[message])
        if message.startswith("cannot determine truth value of Relational"):
            dims = sorted(expr.free_symbols, key=str)
            return number_needed(dims[0] if len(dims) == 1 else expr,
                                 f"a comparison ({expr}) used as a truth value")
    if message.startswith("loop of ufunc does not support argument") and "Symbol" in message \
            or "which has no callable" in message and expr is None:
        function = message.split("callable ")[-1].split(" method")[0]
        return number_needed("an expression of symbolic dims", f"numpy.{function}()")
    name = message.split("'")[1] if message.count("'") >= 2 else ""
    if message.endswith("object cannot be interpreted as an integer") and name in (
            "Add", "Mul", "Pow", "floor", "ceiling", "Max", "Min", "Mod"):
        return number_needed(f"a SymPy {name}", "range(), indexing or an int argument")
    return None


class Dim(sympy.Symbol):
    """A named dim: a positive integer SymPy symbol that works in Python arithmetic and in
    comparisons its sign decides (``n * 2``, ``n - 1``, ``n > 0``), and raises a
    ``DimValueError`` naming itself where Python needs a number (``float(n)``,
    ``math.log(n)``, ``int(n)``, ``range(n)``) or a truth value (``if n > 3``).

    To SymPy it is the Symbol it always was: its class is *named* ``Symbol`` (SymPy
    hashes, orders and prints by class name) and it equals ``sympy.Symbol(name,
    integer=True, positive=True)``, so formulas, their order and ``srepr`` are unchanged
    and user code comparing with such a Symbol keeps working."""

    def __eq__(self, other):
        if self is other:
            return True
        if type(other) is sympy.Symbol:
            return self._hashable_content() == other._hashable_content()
        return super().__eq__(other)

    def __ne__(self, other):
        return not self == other

    __hash__ = sympy.Symbol.__hash__

    def _eval_subs(self, old, new):
        """``f.subs({n: 3})`` with a plain ``Symbol("n", integer=True, positive=True)``
        reaches the dim (SymPy's own test for the symbol to replace compares types)."""
        if old == self:
            return new
        return None

    def __float__(self):
        raise number_needed(self, "float() (or a math function such as math.log)")

    def __int__(self):
        raise number_needed(self, "int()")

    def __index__(self):
        raise number_needed(self, "range(), indexing or an int argument")

    def __complex__(self):
        raise number_needed(self, "complex()")

    # NumPy's math functions on an object (numpy.sqrt(n)) call its method of that name:
    # a dim gives the expression of dims, which sg ops take as a constant.
    def sqrt(self):
        return sympy.sqrt(self)

    def log(self):
        return sympy.log(self)

    def exp(self):
        return sympy.exp(self)

    def _compare(self, other, method):
        result = getattr(super(), method)(other)
        if isinstance(result, sympy.core.relational.Relational):
            return _UNDECIDED[type(result)](*result.args)
        return result

    def __lt__(self, other):
        return self._compare(other, "__lt__")

    def __le__(self, other):
        return self._compare(other, "__le__")

    def __gt__(self, other):
        return self._compare(other, "__gt__")

    def __ge__(self, other):
        return self._compare(other, "__ge__")


def _undecided(base):
    """``base`` (a SymPy inequality) whose truth value raises a DimValueError."""
    def __bool__(self):
        dims = sorted(map(str, self.free_symbols))
        raise number_needed(dim_symbol(dims[0]) if len(dims) == 1 else self,
                            f"a comparison ({self}) used as a truth value")
    name = "Undecided" + base.__name__
    cls = type(name, (base,), {"__bool__": __bool__, "__module__": __name__,
                               "__qualname__": name})
    globals()[name] = cls
    return cls


_UNDECIDED = {cls: _undecided(cls) for cls in (
    sympy.StrictLessThan, sympy.LessThan, sympy.StrictGreaterThan, sympy.GreaterThan)}


Dim.__name__ = "Symbol"


@lru_cache(maxsize=4096)   # bounded: a process that makes fresh dim names must not grow
def dim_symbol(name):
    """The SymPy symbol for a named dim; one object per name, so dims compare by identity."""
    return Dim(name, integer=True, positive=True)


def as_dim(d):
    if isinstance(d, bool):
        raise ShapeError(f"a dim must be an int or a name, got {d!r}")
    if isinstance(d, int):
        if d < 0:
            raise ShapeError(f"a dim must be non-negative, got {d}")
        return d
    if isinstance(d, str):
        name = d.strip()
        if name.isidentifier():
            return dim_symbol(name)
        return parse_dim(d)
    if isinstance(d, sympy.Integer):
        return int(d)
    if isinstance(d, sympy.Expr):
        check_dim_expression(d, "a symbolic dim")
        return d
    try:
        import numpy
        if isinstance(d, numpy.integer):
            return int(d)
    except ImportError:  # pragma: no cover
        pass
    raise ShapeError(f"a dim must be an int or a name, got {d!r} ({type(d).__name__})")


_DIM_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                  ast.FloorDiv: lambda a, b: sympy.floor(a / b)}


def parse_dim(text):
    """A dim written as arithmetic of names and ints (``"4*H"``, ``"n - 1"``,
    ``"(h + 1)//2"``): read by walking its syntax tree, never evaluated."""
    def fail(why):
        return ShapeError(f"a dim must be an int, a name (an identifier) or arithmetic of them "
                          f"(+, -, *, //), got {text!r}: {why}")
    if unicodedata.normalize("NFKC", text) != text:
        raise fail("Python reads some of its characters as others (NFKC: 'ｎ' is 'n'), so "
                   "it could name another dim; write its names as they read")
    if len(text) > 1000:
        raise fail("longer than 1000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        raise fail("not an expression") from None
    stack: list[tuple[Any, bool]] = [(tree, False)]
    values: list[Any] = []
    while stack:
        node, seen = stack.pop()
        if isinstance(node, ast.BinOp) and type(node.op) in _DIM_OPERATORS:
            if not seen:
                stack += [(node, True), (node.right, False), (node.left, False)]
                continue
            right, left = values.pop(), values.pop()
            if isinstance(node.op, ast.FloorDiv) and right == 0:
                raise fail("division by zero")
            values.append(_DIM_OPERATORS[type(node.op)](left, right))
        elif isinstance(node, ast.Name):
            values.append(dim_symbol(node.id))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            values.append(sympy.Integer(node.value))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(
                node.operand, ast.Constant) and type(node.operand.value) is int:
            values.append(sympy.Integer(-node.operand.value))
        else:
            raise fail(f"{ast.unparse(node)!r} is not allowed")
    return as_dim(sympy.sympify(values[0]))


def check_dim_expression(expr, what):
    """``expr`` must be a number or an expression of dims (integer symbols, as
    ``dim_symbol`` makes them): anything else would have no value in compiled code."""
    from sympy.core.function import AppliedUndef
    bad = sorted(str(s) for s in expr.free_symbols if not s.is_integer)
    if bad or expr.atoms(AppliedUndef):
        culprit = bad[0] if bad else str(sorted(map(str, expr.atoms(AppliedUndef)))[0])
        raise ShapeError(f"{what} may hold numbers and dims (integer symbols such as "
                         f"sg's named dims) only, got {expr!r} with {culprit!r}; give dims as "
                         "names (shapes={'x': ('n',)}) and values as inputs")


def as_shape(shape):
    if shape is None:
        return ()
    if isinstance(shape, TensorSpec):
        return shape
    if isinstance(shape, (int, str)):
        shape = (shape,)
    return tuple(as_dim(d) for d in shape)


def dims_equal(a, b):
    """Whether two dims are the same (a pure test: symbolic n and 2 differ)."""
    if a is b or a == b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    return sympy.expand(sympy.sympify(a) - b) == 0


def dims_match(a, b):
    """A shape constraint that an op raises on when it fails (matmul's inner dims, a
    broadcast): like ``dims_equal``, except that inside a ``Unifier`` a free symbolic dim
    meeting a concrete size is bound to it."""
    if dims_equal(a, b):
        return True
    unifier = getattr(_active, "unifier", None)
    return unifier is not None and unifier.bind(a, b)


class Unifier:
    """Inside ``with Unifier(dims) as u``, a symbolic dim of ``dims`` compared with a
    concrete size is bound to it (once, consistently) instead of being unequal; the
    bindings are in ``u.bindings``. Used to find what sizes a module with concrete
    parameters gives to dims the user named for its inputs."""

    def __init__(self, dims):
        self.free = set(dims)
        self.bindings = {}

    def bind(self, a, b):
        if isinstance(b, sympy.Symbol) and b in self.free:
            a, b = b, a
        if not (isinstance(a, sympy.Symbol) and a in self.free and isinstance(b, int)):
            return False
        return self.bindings.setdefault(a, b) == b

    def __enter__(self):
        self._outer = getattr(_active, "unifier", None)
        _active.unifier = self
        return self

    def __exit__(self, *exc):
        _active.unifier = self._outer


_active = threading.local()


def shapes_equal(a, b):
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def fmt_dim(d):
    return str(d)


def fmt_shape(shape):
    inner = ", ".join(fmt_dim(d) for d in shape)
    return f"({inner},)" if len(shape) == 1 else f"({inner})"


def broadcast_shapes(*shapes, op="broadcast"):
    """NumPy's broadcast of several shapes, or a ShapeError naming the op and every shape."""
    if len(shapes) == 1:
        return shapes[0]
    first = shapes[0]
    if all(s is first or s == first for s in shapes[1:]):
        return first
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dim = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim == 1:
                dim = d
            elif not dims_match(dim, d):
                listed = " and ".join(fmt_shape(s) for s in shapes)
                raise ShapeError(
                    f"{op}: shapes {listed} cannot be broadcast together "
                    f"(dim {i - rank} is {fmt_dim(dim)} in one and {fmt_dim(d)} in another); "
                    "make the dims agree, or insert a size-1 axis with unsqueeze")
        out.append(dim)
    return tuple(out)


def numel(shape):
    n = 1
    for d in shape:
        n = n * d
    return n


def normalize_axis(axis, rank, op):
    """``axis`` as a non-negative int; a 0-d input accepts 0 and -1, as in torch."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise ShapeError(f"{op}: axis must be an int, got {axis!r}")
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ShapeError(f"{op}: axis {axis} is out of range for an input of rank {rank}")
    return axis % rank if rank else 0


def normalize_axes(axis, rank, op):
    """A sorted tuple of non-negative axes; None means every axis. Reducing a 0-d input
    along its axis 0 (or -1) reduces nothing, as in torch."""
    if axis is None:
        return tuple(range(rank))
    if rank == 0:
        for a in axis if isinstance(axis, (tuple, list)) else (axis,):
            normalize_axis(a, 0, op)
        return ()
    if isinstance(axis, (tuple, list)):
        axes = tuple(sorted({normalize_axis(a, rank, op) for a in axis}))
        if len(axes) != len(axis):
            raise ShapeError(f"{op}: repeated axis in {tuple(axis)}")
        return axes
    return (normalize_axis(axis, rank, op),)


def dim_symbols(shape):
    out = []
    for d in shape:
        if isinstance(d, sympy.Expr):
            out.extend(sorted(d.free_symbols, key=str))
    return out


DTYPES = {"float64": "float", "float32": "float", "float": "float", "double": "float",
          "int64": "int", "int32": "int", "int16": "int", "int8": "int", "uint8": "int",
          "int": "int", "long": "int", "bool": "bool"}
KIND_DTYPES = {"float": "float64", "int": "int64", "bool": "bool"}


def dtype_kind(dtype):
    """"float", "int" or "bool" for a dtype given as a name, a NumPy or a torch dtype."""
    name = str(dtype).replace("torch.", "")
    if name not in DTYPES:
        known = ", ".join(sorted(DTYPES))
        raise ShapeError(f"dtype {dtype!r} is not one symgrad inputs take; use one of {known} "
                         "(integer and boolean inputs carry no gradient)")
    return DTYPES[name]


class TensorSpec(tuple):
    """What a parameter of a traced function is, beyond its name: its shape (a tuple of
    dims, which it is), its dtype and its structure. ``sg.TensorSpec(("N",),
    dtype="int64")`` declares integer input (class labels, token ids), ``dtype="bool"`` a
    mask: arguments of the compiled function like any other, checked at call time, with no
    gradient. The annotation ``sg.Tensor["m", "n"]`` builds a float one.

    ``symmetric=True`` declares a symmetric matrix (shape (n, n), or a batch (..., n, n)
    of them). The transpose of the input is the input (so ``X.T @ y`` and ``X + X.T``
    simplify), and its gradient is the *symmetric gradient*: with G the gradient that
    treats the n² entries as independent, the gradient is sym(G) = (G + Gᵀ)/2, the unique
    symmetric matrix whose inner product with every symmetric direction V is the
    directional derivative (⟨sym G, V⟩ = ⟨G, V⟩). It is what torch.autograd gives for
    f((X + Xᵀ)/2), and what torch's own backward of ``linalg.eigh`` and ``cholesky``
    returns. The Matrix Cookbook's (§2.8) G + Gᵀ − diag(G) is instead the derivative by
    the n(n+1)/2 free entries X[i, j], i ≤ j: from symgrad's, 2·sym(G) − diag(sym(G)).
    Tangents (``sg.jvp``, forward mode, Hessian directions) of a symmetric input are
    symmetric too: a direction V acts as (V + Vᵀ)/2. Compiled functions do not check that
    their argument is symmetric (an O(n²) test per call; torch does not check either):
    given a non-symmetric X they compute the formulas, which assume X = Xᵀ.

    Example:

    >>> import symgrad as sg
    >>> sg.TensorSpec(("B",), dtype="int64")
    TensorSpec((B,), dtype='int64')
    >>> spec = sg.TensorSpec(("n", "n"), symmetric=True)
    >>> spec, spec.shape, spec.symmetric
    (TensorSpec((n, n), symmetric=True), (n, n), True)
    >>> g = sg.grad_fn(lambda X, A: sg.trace(A @ X), wrt="X",
    ...                shapes={"X": spec, "A": ("n", "n")})
    >>> g.formulas["X"]
    (1/2)*(A + A.T)
    >>> print(sg.grad_fn(lambda X: sg.logdet(X), shapes={"X": spec}))
    df/dX = X⁻¹    [shape (n, n)]
    >>> print(sg.grad_fn(lambda x, X: x @ X @ x, wrt="X", shapes={"x": ("n",), "X": spec}))
    df/dX = x xᵀ    [shape (n, n)]
    """

    kind: str
    dtype: str
    symmetric: bool

    def __new__(cls, dims: Any = (), dtype: str = "float64",
                symmetric: bool = False) -> "TensorSpec":
        kind = dtype_kind(dtype)
        self = super().__new__(cls, as_shape(tuple(dims) if isinstance(dims, (tuple, list))
                                            else (dims,)))
        self.kind = kind
        self.dtype = KIND_DTYPES[kind]
        self.symmetric = check_symmetric(symmetric, tuple(self), kind,
                                         f"sg.TensorSpec({fmt_shape(self)}, symmetric=True)")
        return self

    @property
    def shape(self) -> tuple[Any, ...]:
        return tuple(self)

    def __reduce__(self):
        return TensorSpec, (tuple(self), self.dtype, self.symmetric)

    def __repr__(self):
        dims = ", ".join(map(str, self))
        if self.kind == "float" and not self.symmetric:
            return f"Tensor[{dims}]"
        extra = ", symmetric=True" if self.symmetric else f", dtype={self.dtype!r}"
        return f"TensorSpec(({dims}{',' if len(self) == 1 else ''}){extra})"


def check_symmetric(symmetric, shape, kind, what):
    """``symmetric`` as a bool, after checking that it can hold for ``shape`` and ``kind``:
    a float square matrix or batch of them (..., n, n). ``what`` names the input."""
    if not isinstance(symmetric, bool):
        raise ArgumentError(f"{what}: symmetric must be True or False, got {symmetric!r}")
    if not symmetric:
        return False
    if kind != "float":
        raise ShapeError(f"{what}: a symmetric input holds floats, but its dtype is "
                         f"{KIND_DTYPES[kind]}; leave dtype out (float64) or symmetric=False "
                         "(integer and boolean inputs carry no gradient)")
    if len(shape) < 2 or not dims_equal(shape[-1], shape[-2]):
        square = (tuple(shape[:-1]) + (shape[-2],)) if len(shape) >= 2 else None
        fix = (f"give its last two dims the same size, e.g. {fmt_shape(square)}"
               if square else "give it the shape (n, n) of a square matrix (or (..., n, n) "
               "for a batch of them)")
        raise ShapeError(f"{what}: a symmetric input is a square matrix (its last two dims "
                         f"equal), but its shape is {fmt_shape(shape)}; {fix}, or leave "
                         "symmetric out")
    return True


def with_dtype_of(spec, shape):
    """``shape`` with the dtype (and symmetry) of ``spec`` (a TensorSpec or a plain shape)."""
    if not isinstance(spec, TensorSpec):
        return shape
    return TensorSpec(shape, spec.dtype, spec.symmetric)
