"""Helpers for the per-element forms of ops (``OpDef.elements``, read by ``explicit``).

An element form computes an op on NumPy object arrays whose elements are SymPy scalars,
for concrete sizes: ``elements(ctx, *arrays)`` with ``ctx`` holding the op's parameters,
its concrete result shape and the dims' sizes.
"""
import numpy
import sympy


class ElementContext:
    """What an element form may read: ``attrs`` (the op's parameters), ``shape`` (the
    concrete result shape) and ``dims`` ({dim symbol: size})."""

    __slots__ = ("attrs", "shape", "dims")

    def __init__(self, attrs, shape, dims):
        self.attrs = attrs
        self.shape = shape
        self.dims = dims

    def size(self, expr):
        """An expression of dims as an int."""
        return int(sympy.sympify(expr).subs(self.dims))


def along(arr, axes, fn, keepdims):
    """``fn`` applied to the 1-D runs of ``arr`` over ``axes`` (reduced to one element)."""
    axes = tuple(axes)
    rest = [a for a in range(arr.ndim) if a not in axes]
    moved = numpy.transpose(arr, rest + list(axes))
    lead = moved.shape[:len(rest)]
    flat = moved.reshape(lead + (-1,))
    out = numpy.empty(lead, dtype=object)
    for idx in numpy.ndindex(*lead):
        out[idx] = fn(list(flat[idx]))
    if keepdims:
        out = numpy.expand_dims(out, axes)
    return out


def reduce(fn):
    """The element form of a reduction applying ``fn`` to each run over ``axis``."""
    def elements(ctx, x):
        return along(x, ctx.attrs["axis"], fn, ctx.attrs["keepdims"])
    return elements


def matrix(arr):
    return sympy.Matrix(arr.shape[0], arr.shape[1], list(arr.ravel()))


def array(mat, shape):
    return numpy.array(list(mat), dtype=object).reshape(shape)


def vectorize(fn):
    return numpy.vectorize(fn, otypes=[object])


def zeros(shape):
    return numpy.full(shape, sympy.S.Zero, dtype=object)
