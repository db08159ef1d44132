"""Per-element closed forms for concrete sizes (``GradFn.explicit``).

The DAG is evaluated on NumPy object arrays whose elements are SymPy scalars: an input
``x`` of shape (2, 2) becomes the symbols x_00, x_01, x_10, x_11; elementwise ops apply
their scalar SymPy expression element by element; sums, products and reshapes are
NumPy's own functions on object arrays; inverses, determinants and solves are SymPy's
``Matrix`` methods; max/min are SymPy's ``Max``/``Min`` (so gradients of them print as
the ``Where`` masks the rules build).
"""
import numpy
import sympy

from . import sympy_funcs as sf
from .errors import ShapeError, UnsupportedOpError
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


def _along(arr, axes, fn, keepdims):
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


def _reduce(x, attrs, fn):
    return _along(x, attrs["axis"], fn, attrs["keepdims"])


def _matrix(arr):
    return sympy.Matrix(arr.shape[0], arr.shape[1], list(arr.ravel()))


def _array(matrix, shape):
    return numpy.array(list(matrix), dtype=object).reshape(shape)


def _softmax(x, axis):
    e = numpy.vectorize(sympy.exp, otypes=[object])(x)
    return e / numpy.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis):
    e = numpy.vectorize(sympy.exp, otypes=[object])(x)
    return x - numpy.vectorize(sympy.log, otypes=[object])(numpy.sum(e, axis=axis, keepdims=True))


def _loss(per_element, reduction):
    per_element = numpy.asarray(per_element, dtype=object)
    if reduction == "none":
        return per_element
    total = numpy.sum(per_element)
    return total * sympy.Rational(1, per_element.size) if reduction == "mean" else total


def _one_hot(t, classes):
    out = numpy.empty(t.shape + (classes,), dtype=object)
    for idx in numpy.ndindex(*out.shape):
        out[idx] = sf.AsFloat(sympy.Eq(t[idx[:-1]], idx[-1]))
    return out


def _index(index, dims):
    from .indexing import Slice
    out = []
    for e in index:
        if isinstance(e, Slice):
            start, stop, step = e
            out.append(slice(int(sympy.sympify(start).subs(dims)),
                             None if stop is None else int(sympy.sympify(stop).subs(dims)), step))
        else:
            out.append(int(sympy.sympify(e).subs(dims)))
    return tuple(out)


def _var(x, attrs):
    n = int(numpy.prod([x.shape[a] for a in attrs["axis"]]))
    mean = numpy.sum(x, axis=attrs["axis"], keepdims=True) * sympy.Rational(1, n)
    sq = numpy.sum((x - mean) ** 2, axis=attrs["axis"], keepdims=attrs["keepdims"])
    return sq / sympy.nsimplify(n - attrs["correction"])


def _cross_entropy(x, t, attrs):
    lsm = _log_softmax(x, -1)
    if attrs["probabilities"]:
        per = -numpy.sum(t * lsm, axis=-1)
    else:
        per = -numpy.sum(_one_hot(t, x.shape[-1]) * lsm, axis=-1)
    per = numpy.asarray(per, dtype=object)
    if attrs["reduction"] == "none":
        return per
    total = numpy.sum(per)
    return total * sympy.Rational(1, per.size) if attrs["reduction"] == "mean" else total


ELEMENTWISE = set(UNARY) | set(BINARY) | set(COMPARISONS) | set(LOGICAL) | {
    "where", "clamp", "cast", "detach", "logical_not"}


def _apply(node, ins, dims):
    """The element array of ``node`` given its operands' element arrays."""
    a, op = node.attrs, node.op
    x = ins[0] if ins else None
    if op in ELEMENTWISE:
        return _elementwise(node, ins)
    if op == "sum":
        return numpy.sum(x, axis=a["axis"], keepdims=a["keepdims"])
    if op == "mean":
        n = int(numpy.prod([x.shape[i] for i in a["axis"]]))
        return numpy.sum(x, axis=a["axis"], keepdims=a["keepdims"]) * sympy.Rational(1, n)
    if op == "matmul":
        return numpy.matmul(x, ins[1])
    if op == "transpose":
        return numpy.transpose(x, a["axes"])
    if op in ("reshape", "squeeze", "unsqueeze", "broadcast_to"):
        target = concrete(node.shape, dims)
        return numpy.broadcast_to(x, target) if op == "broadcast_to" \
            else numpy.reshape(x, target)
    if op in ("amax", "max"):
        return _reduce(x, a, lambda v: sympy.Max(*v))
    if op in ("amin", "min"):
        return _reduce(x, a, lambda v: sympy.Min(*v))
    if op == "prod":
        return _reduce(x, a, sympy.Mul.fromiter)
    if op == "norm":
        return _reduce(x, a, lambda v: sympy.sqrt(sympy.Add(*[e ** 2 for e in v])))
    if op == "logsumexp":
        return _reduce(x, a, lambda v: sympy.log(sympy.Add(*[sympy.exp(e) for e in v])))
    if op == "var":
        return _var(x, a)
    if op == "std":
        return numpy.vectorize(sympy.sqrt, otypes=[object])(_var(x, a))
    if op == "cumsum":
        return numpy.cumsum(x, axis=a["axis"])
    if op == "softmax":
        return _softmax(x, a["axis"])
    if op == "log_softmax":
        return _log_softmax(x, a["axis"])
    if op == "dot":
        return numpy.sum(x * ins[1])
    if op == "outer":
        return numpy.multiply.outer(x, ins[1])
    if op == "trace":
        return numpy.sum(numpy.diagonal(x))
    if op == "diagonal":
        return numpy.diagonal(x).copy()
    if op == "diag":
        out = numpy.full((len(x), len(x)), sympy.S.Zero, dtype=object)
        for i, v in enumerate(x):
            out[i, i] = v
        return out
    if op == "eye":
        n = concrete((a["n"],), dims)[0]
        out = numpy.full((n, n), sympy.S.Zero, dtype=object)
        for i in range(n):
            out[i, i] = sympy.S.One
        return out
    if op == "inverse":
        return _array(_matrix(x).inv(), x.shape)
    if op == "cholesky":
        # (A + Aᵀ)/2: torch's convention, the gradient of a symmetric argument
        sym = (_matrix(x) + _matrix(x).T) / 2
        return _array(sym.cholesky(hermitian=False), x.shape)
    if op in ("tril", "triu"):
        keep = numpy.tril if op == "tril" else numpy.triu
        mask = keep(numpy.ones(x.shape, dtype=bool), a["k"])
        return numpy.where(mask, x, sympy.S.Zero)
    if op == "det":
        return _matrix(x).det()
    if op == "logdet":
        return sympy.log(_matrix(x).det())
    if op == "logabsdet":
        return sympy.log(sympy.Abs(_matrix(x).det()))
    if op == "solve":
        b = ins[1]
        column = b.reshape(b.shape[0], -1)
        return _array(_matrix(x).LUsolve(_matrix(column)), b.shape)
    if op == "one_hot":
        return _one_hot(x, int(concrete((a["num_classes"],), dims)[0]))
    if op == "cross_entropy":
        return _cross_entropy(x, ins[1], a)
    if op == "mse_loss":
        return _loss((x - ins[1]) ** 2, a["reduction"])
    if op == "binary_cross_entropy_with_logits":
        y = ins[1]
        per = numpy.vectorize(sf.softplus, otypes=[object])(x) - x * y
        return _loss(numpy.asarray(per, dtype=object), a["reduction"])
    if op == "index":
        return numpy.asarray(x[_index(a["index"], dims)], dtype=object)
    if op == "index_scatter":
        out = numpy.full(concrete(node.shape, dims), sympy.S.Zero, dtype=object)
        out[_index(a["index"], dims)] = x if x.ndim else x[()]
        return out
    if op == "concat":
        return numpy.concatenate([x, ins[1]], axis=a["axis"])
    if op == "custom":
        return x
    raise UnsupportedOpError(f"explicit: op {op} has no element-wise evaluation; add a case "
                             "for it to symgrad/explicit.py")


def evaluate(outputs, dims):
    """Element arrays of ``outputs`` with the dims in ``dims`` ({Symbol: int})."""
    values = {}
    for node in topo_order([o for o in outputs if o is not None]):
        a = node.attrs
        op = node.op
        if op == "symbol":
            v = element_symbols(node.name, concrete(node.shape, dims))
        elif op == "const":
            v = numpy.full(concrete(node.shape, dims), a["value"].subs(dims), dtype=object)
        elif op == "array":
            v = a["value"].array.astype(object)
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
