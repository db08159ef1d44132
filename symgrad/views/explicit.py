"""Per-element closed forms for concrete sizes (``GradFn.explicit``).

The DAG is evaluated on NumPy object arrays whose elements are SymPy scalars: an input
``x`` of shape (2, 2) becomes the symbols x_00, x_01, x_10, x_11; elementwise ops apply
their scalar SymPy expression element by element; every other op computes on the arrays
with its OpDef's element form (sums and reshapes with NumPy's own functions on object
arrays, inverses and determinants with SymPy's ``Matrix``, max/min with SymPy's
``Max``/``Min``). An op without an element form is an error naming it.
"""
import numpy
import sympy

from ..core.deep import deep
from ..core.graph import depth_of, topo_order
from ..core.opdef import OPS
from ..core.ops.elements import ElementContext
from ..errors import ShapeError, UnsupportedOpError


def element_names(name, shape, taken=()):
    """Names of the elements of input ``name``: ``x_0``, ``x_01``, ``x_1_12`` (as a
    textbook writes x_ij), or ``x[0, 1]`` when one of those is ``taken`` by another name
    (an input called ``x_0``), which no identifier can equal."""
    wide = any(d > 10 for d in shape)
    idxs = list(numpy.ndindex(*shape))
    names = [f"{name}_{'_'.join(map(str, i)) if wide else ''.join(map(str, i))}" if i else name
             for i in idxs]
    if any(n in taken for n in names if n != name):
        names = [f"{name}[{', '.join(map(str, i))}]" if i else name for i in idxs]
    return names


def element_symbols(name, shape, taken=()):
    arr = numpy.empty(shape, dtype=object)
    for idx, n in zip(numpy.ndindex(*shape), element_names(name, shape, taken)):
        arr[idx] = sympy.Symbol(n, real=True)
    return arr


def input_elements(inputs, reserved=()):
    """{input name: its array of element symbols} for ``inputs`` [(name, concrete shape)],
    every input of the function whether or not a result uses it, named apart from every
    input, from ``reserved`` (the dims) and from each other whatever the inputs' order:
    an input whose textbook names (x_0, ...) another input's name or textbook names take
    is named x[0], ... (``explicit`` and ``verify`` both name elements here)."""
    textbook = {name: set(element_names(name, shape)) - {name} for name, shape in inputs}
    out = {}
    for name, shape in inputs:
        taken = set(reserved) | {n for n, _ in inputs if n != name}
        taken |= {e for other, names in textbook.items() if other != name for e in names}
        out[name] = element_symbols(name, shape, taken)
    return out


def concrete(shape, dims):
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
            continue
        v = sympy.sympify(d).subs(dims)
        if not v.is_Integer:
            missing = sorted(str(s) for s in sympy.sympify(d).free_symbols if s not in dims)
            raise ShapeError(f"explicit: give a size for dim(s) {', '.join(missing)}, "
                             f"e.g. explicit({missing[0]}=3)")
        out.append(int(v))
    return tuple(out)


def _elementwise(node, values):
    arrays = numpy.broadcast_arrays(*[numpy.asarray(v, dtype=object) for v in values])
    out = numpy.empty(arrays[0].shape, dtype=object)
    for idx in numpy.ndindex(*out.shape):
        out[idx] = node.local_expr([a[idx] for a in arrays])
    return out


def _apply(node, ins, dims):
    """The element array of ``node`` given its operands' element arrays."""
    opdef = OPS[node.op]
    if opdef.elements is not None:
        ctx = ElementContext(node.attrs, concrete(node.shape, dims), dims)
        return opdef.elements(ctx, *ins)
    if opdef.pointwise:
        return _elementwise(node, ins)
    raise UnsupportedOpError(f"explicit: op {node.op} has no per-element form; give its "
                             f"OpDef elements=... in {opdef.module}")


MAX_SIMPLIFY = 300   # graph nodes; SymPy's simplification of larger closed forms walks
                     # them as trees, which can take exponential time


def explicit(outputs, dims, simplify=True, inputs=None):
    """Per-element closed forms of ``outputs`` (SymPy expressions or arrays) with the dims
    in ``dims`` ({Symbol: int}); SymPy recurses as deep as the graph (``core.deep``).
    ``simplify`` applies to graphs of at most ``MAX_SIMPLIFY`` nodes. ``inputs``: the
    function's inputs (symbol nodes), whose names the elements' names keep apart from
    (default: the inputs the outputs use)."""
    order = topo_order([o for o in outputs if o is not None])
    simplify = simplify and len(order) <= MAX_SIMPLIFY
    return deep(lambda: [to_sympy(a, simplify)
                         for a in evaluate(outputs, dims, order, inputs)], depth_of(order))


def evaluate(outputs, dims, order=None, inputs=None):
    """Element arrays of ``outputs`` with the dims in ``dims`` ({Symbol: int}); the
    elements of the inputs (``inputs``, default those the outputs use) are named so that
    no two names in the result are equal (``input_elements``)."""
    values = {}
    order = order or topo_order([o for o in outputs if o is not None])
    symbols = list(inputs) if inputs is not None else [n for n in order if n.is_symbol]
    symbols += [n for n in order if n.is_symbol and n.name not in {s.name for s in symbols}]
    elements = input_elements([(n.name, concrete(n.shape, dims)) for n in symbols],
                              {str(d) for d in dims})
    for node in order:
        if node.is_symbol:
            v = elements[node.name]
        elif node.is_const:
            v = numpy.full(concrete(node.shape, dims), node.attrs["value"].subs(dims),
                           dtype=object)
        elif node.is_array:
            v = node.attrs["value"].array.astype(object)
        else:
            v = _apply(node, [values[id(i)] for i in node.inputs], dims)
        values[id(node)] = numpy.asarray(v, dtype=object)
    return [values[id(o)] if o is not None else None for o in outputs]


def to_sympy(arr, simplify=True):
    def clean(e):
        e = sympy.sympify(e)
        if not simplify:
            return e
        return sympy.factor(e) if sympy.count_ops(e) < 40 and not e.has(sympy.Piecewise) \
            else sympy.factor_terms(e)
    if arr.ndim == 0:
        return clean(arr[()])
    if arr.ndim == 2:
        return sympy.ImmutableMatrix(arr.shape[0], arr.shape[1],
                                     [clean(e) for e in arr.ravel()])
    return sympy.ImmutableDenseNDimArray([clean(e) for e in arr.ravel()], arr.shape)
