"""Per-element closed forms for concrete sizes (``GradFn.explicit``).

The DAG is evaluated on NumPy object arrays whose elements are SymPy scalars: an input
``x`` of shape (2, 2) becomes the symbols x_00, x_01, x_10, x_11; elementwise ops apply
their scalar SymPy expression element by element; sums, products and reshapes are
NumPy's own functions on object arrays.
"""
import numpy
import sympy

from .errors import ShapeError
from .graph import topo_order
from .ops import BINARY, COMPARISONS, LOGICAL, UNARY


def element_symbols(name, shape):
    arr = numpy.empty(shape, dtype=object)
    wide = any(d > 10 for d in shape)
    for idx in numpy.ndindex(*shape):
        suffix = "_".join(map(str, idx)) if wide else "".join(map(str, idx))
        arr[idx] = sympy.Symbol(f"{name}_{suffix}" if idx else name, real=True)
    return arr


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


def evaluate(outputs, dims):
    """Element arrays of ``outputs`` with the dims in ``dims`` ({Symbol: int})."""
    values = {}
    for node in topo_order([o for o in outputs if o is not None]):
        a = node.attrs
        ins = [values[id(i)] for i in node.inputs]
        op = node.op
        if op == "symbol":
            v = element_symbols(node.name, concrete(node.shape, dims))
        elif op == "const":
            v = numpy.full(concrete(node.shape, dims), a["value"].subs(dims), dtype=object)
        elif op == "array":
            v = a["value"].array.astype(object)
        elif op in UNARY or op in BINARY or op in COMPARISONS or op in LOGICAL or op in (
                "where", "clamp", "cast", "detach", "logical_not"):
            v = _elementwise(node, ins)
        elif op == "sum":
            v = numpy.sum(ins[0], axis=a["axis"], keepdims=a["keepdims"])
        elif op == "mean":
            x = ins[0]
            n = int(numpy.prod([x.shape[i] for i in a["axis"]]))
            v = numpy.sum(x, axis=a["axis"], keepdims=a["keepdims"]) * sympy.Rational(1, n)
        elif op == "matmul":
            v = numpy.matmul(ins[0], ins[1])
        elif op == "transpose":
            v = numpy.transpose(ins[0], a["axes"])
        elif op in ("reshape", "squeeze", "unsqueeze", "broadcast_to"):
            target = concrete(node.shape, dims)
            v = numpy.broadcast_to(ins[0], target) if op == "broadcast_to" \
                else numpy.reshape(ins[0], target)
        else:
            raise NotImplementedError(f"explicit: op {op} has no element-wise evaluation yet")
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
