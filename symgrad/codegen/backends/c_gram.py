"""Symmetric weighted Gram products in the C backend: ``H = Xᵀ diag(w) X`` computed by one
native kernel (``c_gram_src``) that reads X and w where they are, instead of NumPy's
weighted copy of X and BLAS's general product.

Second derivatives are full of these: the logistic Hessian ``Xᵀ diag(σ(1−σ)/N) X``, the
Gauss–Newton ``Jᵀ J``, a weighted least-squares normal matrix. The forms recognised in a
program (``find``), X a 2-D float array (N, d) and w a float vector of N elements:

* ``Yᵀ @ Y`` for any 2-D Y (weights 1), and with ``Y = X * col(u)`` the weights ``u²``,
  X and u read directly, no Y materialised; when ``u = sqrt(w)`` with w known
  nonnegative (what ``reassociate._gram`` writes) the weights are w itself, so the
  square root is not computed at all;
* ``(Xᵀ * w) @ X`` and ``Xᵀ @ (X * col(w))``, w of either sign (no square root);
* any of these negated (``−(Xᵀ * w) @ X``: the Hessian of a concave term).

Statements that only fed the product (the transpose, the scaled copy, the column) are
dropped from the program. Batched (3-D) products, integer or boolean operands and other
products stay NumPy code. The kernel computes in double like every C kernel (float32
arguments give float32 results through the function's own dtype handling), takes X with
any strides (a copy only when a stride is not a whole number of doubles) and returns an
exactly symmetric C-contiguous (d, d) array; N or d of 0 give zeros.
"""
import threading

from ...core.shapes import shapes_equal
from ...core.structure import bounds
from .c_build import CBuildError, load
from .c_gram_src import CDEF, ISA_LEVELS, KC, source

_runtime = {}
_lock = threading.Lock()


class Gram:
    """One recognised product: the statement ``name`` is ``Xᵀ diag(±w) X`` with X the value
    named ``x``, w the one named ``w`` (None: ones), squared first when ``square``, negated
    when ``negate``."""

    def __init__(self, name, x, w, square, negate):
        self.name, self.x, self.w, self.square, self.negate = name, x, w, square, negate

    @property
    def operands(self):
        return [self.x] + ([self.w] if self.w is not None else [])

    def line(self):
        return (f"{self.name} = _gram({self.x}, {self.w or 'None'}, {self.square}, "
                f"{self.negate})")


def _matrix(node):
    return node.kind == "float" and len(node.shape) == 2


def _transposed(node):
    return node.op == "transpose" and _matrix(node) and \
        tuple(node.attrs.get("axes") or (1, 0)) == (1, 0)


def _column(node, n):
    """(vector, via) when ``node`` is a float (n, 1) column: the vector of its n elements
    (the unsqueezed one when it is ``unsqueeze(u, 1)``, else the column itself, read
    flat) and the statements it took to get there; None otherwise."""
    if node.kind != "float" or not shapes_equal(node.shape, (n, 1)):
        return None
    if node.op == "unsqueeze" and node.attrs.get("axis") in (1, -1) \
            and shapes_equal(node.inputs[0].shape, (n,)):
        return node.inputs[0], [node]
    return node, []


def _row(node, n):
    """``node`` when it is n weights broadcast along the rows of an (·, n) array."""
    if node.kind == "float" and (shapes_equal(node.shape, (n,)) or
                                 shapes_equal(node.shape, (1, n))):
        return node
    return None


def _scaled(y):
    """(X, u, via) when ``y = X * col(u)`` (either order), else None."""
    if y.op != "mul" or not _matrix(y):
        return None
    for x, c in (y.inputs, y.inputs[::-1]):
        if _matrix(x) and shapes_equal(x.shape, y.shape):
            col = _column(c, x.shape[0])
            if col is not None:
                return x, col[0], [y] + col[1]
    return None


def _match(node):
    """(X, w, square, negate, via) for a Gram product ``node`` (a 2-D matmul), else None;
    ``via``: the nodes between the product and its operands, which may become dead."""
    if node.op != "matmul" or not _matrix(node) or len(node.inputs) != 2:
        return None
    left, right = node.inputs
    if not (_matrix(left) and _matrix(right)):
        return None
    for k, side in enumerate((left, right)):
        if side.op == "neg":
            found = _product(*((side.inputs[0], right) if k == 0 else (left, side.inputs[0])))
            return None if found is None else found[:3] + (True, [side] + found[3])
    found = _product(left, right)
    return None if found is None else found[:3] + (False, found[3])


def _product(left, right):
    """(X, w, square, via) when ``left @ right`` is a Gram product, else None."""
    if not (_matrix(left) and _matrix(right)):
        return None
    if _transposed(left) and left.inputs[0] is right:
        scaled = _scaled(right)
        if scaled is None:
            return right, None, False, [left]
        x, u, via = scaled
        if u.op == "sqrt" and bounds(u.inputs[0])[0] >= 0:   # reassociate._gram's form
            return x, u.inputs[0], False, [left] + via + [u]
        return x, u, True, [left] + via
    if left.op == "mul":
        n = right.shape[0]
        for t, w in (left.inputs, left.inputs[::-1]):
            if _transposed(t) and t.inputs[0] is right and _row(w, n) is not None:
                return right, w, False, [left, t]
    if _transposed(left):
        x = left.inputs[0]
        scaled = _scaled(right)
        if scaled is not None and scaled[0] is x:
            return x, scaled[1], False, [left] + scaled[2]
    return None


def find(prog, statements):
    """({statement name: Gram}, names of statements that only fed them) in ``statements``
    (the program's, in order)."""
    readers = {}
    for name, _, operands in statements:
        for n in operands:
            if n is not None:
                readers.setdefault(n, set()).add(name)
    results = {prog.name_of(o) for o in prog.outputs if o is not None}
    grams, dropped = {}, set()
    for name, node, _ in statements:
        found = _match(node)
        if found is None:
            continue
        x, w, square, negate, via = found
        xn = prog.name_of(x)
        wn = None if w is None else prog.name_of(w)
        if xn is None or (w is not None and wn is None):
            continue
        grams[name] = Gram(name, xn, wn, square, negate)
        for v in via:
            vn = prog.name_of(v)
            if vn is not None and vn not in results and vn not in (xn, wn) \
                    and readers.get(vn, set()) <= dropped | {name}:
                dropped.add(vn)
    return grams, dropped


def runtime():
    """The ``_gram(x, w, square, negate)`` the generated code calls: the kernel for the
    widest instruction set of this CPU when it has AVX2 or AVX-512, else NumPy's products
    (BLAS beats the portable C path: about 3x on this project's VM)."""
    lib, _ = _library()
    return kernel() if lib.sg_gram_isa() >= ISA_LEVELS["avx2"] else _numpy_gram


def kernel(isa=None):
    """``_gram`` calling the kernel's path for ``isa`` (a name of ``c_gram_src.ISAS``;
    default, and for a set the CPU lacks, the widest it has)."""
    level = ISA_LEVELS[isa] if isa is not None else max(ISA_LEVELS.values())
    lib, ffi = _library()
    with _lock:
        fn = _runtime.get(level)
        if fn is None:
            fn = _runtime[level] = _bind(lib, ffi, level)
    return fn


def _library():
    """The built module; a toolchain that cannot build the AVX2/AVX-512 functions (an
    assembler older than AVX-512) gets the portable one, and ``runtime`` then NumPy."""
    with _lock:
        if "lib" not in _runtime:
            try:
                built = load(CDEF, source())
            except CBuildError:
                built = load(CDEF, source(portable=True))
            _runtime["lib"], _runtime["ffi"] = built
        return _runtime["lib"], _runtime["ffi"]


def _numpy_gram(x, w, square, negate):
    """The product as the NumPy backend computes it, in float64, its upper triangle
    mirrored (BLAS gives an exactly symmetric result only through ``syrk``, which NumPy
    calls for one contiguous array and its transpose)."""
    import numpy
    x = numpy.asarray(x, dtype=numpy.float64)
    if w is None:
        h = x.T @ x
    else:
        y = x * numpy.asarray(w, dtype=numpy.float64).reshape(-1, 1)
        h = y.T @ y if square else x.T @ y
    h = numpy.triu(h) + numpy.triu(h, 1).T
    return -h if negate else h


def _bind(lib, ffi, level):
    import numpy
    f64 = numpy.dtype(numpy.float64)
    empty, zeros, ones = numpy.empty, numpy.zeros, numpy.ones
    contiguous = numpy.ascontiguousarray
    from_buffer, cast, null, call = ffi.from_buffer, ffi.cast, ffi.NULL, lib.sg_gram

    def gram(x, w, square, negate):
        """Xᵀ diag(±w) X (w None: ones; ``square``: w², ``negate``: −) as a new float64
        array."""
        if x.dtype != f64:
            x = x.astype(f64)
        n, d = x.shape
        if not n or not d:
            return zeros((d, d))
        if x.flags.c_contiguous:
            px, rs, cs = from_buffer("double[]", x), d, 1
        elif x.strides[0] % 8 or x.strides[1] % 8:
            x = contiguous(x)
            px, rs, cs = from_buffer("double[]", x), d, 1
        else:
            px, rs, cs = cast("double *", x.ctypes.data), x.strides[0] // 8, x.strides[1] // 8
        if w is None:
            pw = from_buffer("double[]", -ones(n)) if negate else null
        else:
            w = contiguous(w, dtype=f64).reshape(n)
            if square:
                w = w * w
            pw = from_buffer("double[]", -w if negate else w)
        h = empty((d, d))
        if call(px, rs, cs, pw, n, d, from_buffer("double[]", h), KC, level):
            raise MemoryError(f"the Gram kernel could not allocate its buffers for X of "
                              f"shape ({n}, {d})")
        return h
    return gram
