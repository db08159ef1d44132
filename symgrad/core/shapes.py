"""Shapes whose dims are ints (concrete) or SymPy symbols (symbolic, shared by name).

Broadcasting follows NumPy: align on the right, a dim of 1 stretches. A symbolic
dim only matches itself or 1, since its value is unknown until call time.
"""
import threading
from functools import lru_cache

import sympy

from ..errors import ShapeError


@lru_cache(maxsize=None)
def dim_symbol(name):
    """The SymPy symbol for a named dim; one object per name, so dims compare by identity."""
    return sympy.Symbol(name, integer=True, positive=True)


def as_dim(d):
    if isinstance(d, bool):
        raise ShapeError(f"a dim must be an int or a name, got {d!r}")
    if isinstance(d, int):
        if d < 0:
            raise ShapeError(f"a dim must be non-negative, got {d}")
        return d
    if isinstance(d, str):
        name = d.strip()
        if not name.isidentifier():
            raise ShapeError(f"a symbolic dim must be an identifier, got {d!r}")
        return dim_symbol(name)
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


class TensorSpec:
    """What a parameter of a traced function is, beyond its name: its shape (the
    annotation ``sg.Tensor["m", "n"]`` builds one)."""

    def __init__(self, dims):
        self.shape = as_shape(dims if isinstance(dims, tuple) else (dims,))

    def __repr__(self):
        return f"Tensor[{', '.join(map(str, self.shape))}]"
