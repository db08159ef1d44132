"""torch's matrix and tensor products and inverses written with sg ops: ``linalg.solve``
(torch's vector/matrix right-hand side and ``left``), the ``_ex`` variants, cross,
vecdot, multi_dot, matrix_power, addr, addbmm, kron, tensordot, tensorinv and
tensorsolve. Each is a composition, so its gradient reads as the ops it is made of."""
import sympy

from ..core import ops as sgo
from ..core.ops.indexing import Slice
from ..core.shapes import broadcast_shapes, fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import Unavailable, rank_of, reject, shape_of, torch_op


def _mT(x):
    n = rank_of(x)
    return sgo.swapaxes(x, n - 2, n - 1)


def _vector_rhs(A, B):
    """torch.linalg.solve's rule: B is a (batch of) vector(s) when it is 1-D or has A's
    shape without the last dim."""
    return rank_of(B) == 1 or (rank_of(B) == rank_of(A) - 1 and
                               tuple(shape_of(B)) == tuple(shape_of(A))[:-1])


def solve(A, B, left=True):
    """X with A X = B (X A = B when not ``left``), torch's shapes."""
    if not left:
        if rank_of(B) < 2:
            raise ShapeError(f"torch.linalg.solve(left=False): B must be a matrix, got shape "
                             f"{fmt_shape(shape_of(B))}")
        return _mT(solve(_mT(A), _mT(B)))
    if rank_of(B) > 1 and _vector_rhs(A, B):
        return sgo.squeeze(sgo.solve(A, sgo.unsqueeze(B, -1)), -1)
    return sgo.solve(A, B)


def _info(name, A):
    """torch's error codes: zeros, as the compiled code raises on a singular matrix
    rather than returning a code; not traceable when the batch dims are symbolic."""
    import torch
    batch = tuple(shape_of(A))[:-2]
    if all(isinstance(d, int) or getattr(d, "is_Integer", False) for d in batch):
        return torch.zeros(tuple(int(d) for d in batch), dtype=torch.int32)
    return Unavailable(f"the info (error code) of {name} for symbolic batch dims")


@torch_op("linalg.solve")
def linalg_solve(A, B, *, left=True, out=None):
    reject("torch.linalg.solve", out=out)
    return solve(A, B, left)


@torch_op("linalg.solve_ex")
def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    import torch
    reject("torch.linalg.solve_ex", out=out)
    return torch.return_types.linalg_solve_ex((solve(A, B, left),
                                               _info("torch.linalg.solve_ex", A)))


@torch_op("linalg.inv_ex")
def inv_ex(A, *, check_errors=False, out=None):
    import torch
    reject("torch.linalg.inv_ex", out=out)
    return torch.return_types.linalg_inv_ex((sgo.inverse(A), _info("torch.linalg.inv_ex", A)))


def _component(x, dim, i):
    key = [Slice(0, None, 1)] * rank_of(x)
    key[dim] = Slice(i, i + 1, 1)
    return sgo.index(x, tuple(key))


def cross(a, b, dim):
    """a × b along ``dim`` (size 3), operands broadcast."""
    shape = broadcast_shapes(tuple(shape_of(a)), tuple(shape_of(b)), op="cross")
    a, b = sgo.broadcast_to(a, shape), sgo.broadcast_to(b, shape)
    dim = dim % len(shape) if shape else 0
    if not shape or shape[dim] != 3:
        raise ShapeError(f"torch.cross: dim {dim} of the (broadcast) shape {fmt_shape(shape)} "
                         "must have size 3")
    x = [_component(a, dim, i) for i in range(3)]
    y = [_component(b, dim, i) for i in range(3)]
    return sgo.concatenate([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                            x[0] * y[1] - x[1] * y[0]], axis=dim)


@torch_op("linalg.cross")
def linalg_cross(input, other, *, dim=-1, out=None):
    reject("torch.linalg.cross", out=out)
    return cross(input, other, dim)


@torch_op("torch.cross", "Tensor.cross")
def torch_cross(input, other, dim=None, *, out=None):
    reject("torch.cross", out=out)
    if dim is None:
        shape = broadcast_shapes(tuple(shape_of(input)), tuple(shape_of(other)), op="cross")
        dim = next((k for k, d in enumerate(shape) if d == 3), -1)
    return cross(input, other, dim)


@torch_op("linalg.vecdot")
def vecdot(x, y, *, dim=-1, out=None):
    reject("torch.linalg.vecdot", out=out)
    return sgo.sum(x * y, axis=int(dim))


@torch_op("linalg.multi_dot")
def multi_dot(tensors, *, out=None):
    reject("torch.linalg.multi_dot", out=out)
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ShapeError("torch.linalg.multi_dot: expects at least two tensors")
    result = tensors[0]
    for t in tensors[1:]:
        result = sgo.matmul(result, t)
    return result


@torch_op("linalg.matrix_power", "torch.matrix_power", "Tensor.matrix_power")
def matrix_power(A, n, *, out=None):
    """A^n by repeated squaring; the inverse's power for n < 0; the identity for 0."""
    reject("torch.linalg.matrix_power", out=out)
    shape = tuple(shape_of(A))
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ShapeError(f"torch.linalg.matrix_power: expects square matrices, got shape "
                         f"{fmt_shape(shape)}")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ParameterError(f"torch.linalg.matrix_power: n must be an int, got {n!r}")
    if n == 0:
        return sgo.broadcast_to(sgo.eye(shape[-1]), shape)
    base = sgo.inverse(A) if n < 0 else A
    n, result = abs(n), None
    while n:
        if n & 1:
            result = base if result is None else sgo.matmul(result, base)
        n >>= 1
        if n:
            base = sgo.matmul(base, base)
    return result


def _scaled(beta, input, alpha, product):
    """beta·input + alpha·product; beta = 0 ignores input (nan and inf too), as torch."""
    term = product if alpha == 1 else alpha * product
    if beta == 0:
        return sgo.broadcast_to(term, broadcast_shapes(tuple(shape_of(input)),
                                                       tuple(shape_of(term))))
    return (input if beta == 1 else beta * input) + term


@torch_op("torch.addr", "Tensor.addr")
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    reject("torch.addr", out=out)
    return _scaled(beta, input, alpha, sgo.outer(vec1, vec2))


@torch_op("torch.addbmm", "Tensor.addbmm")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    reject("torch.addbmm", out=out)
    if rank_of(batch1) != 3 or rank_of(batch2) != 3:
        raise ShapeError(f"torch.addbmm: batch1 and batch2 must be 3-D, got shapes "
                         f"{fmt_shape(shape_of(batch1))} and {fmt_shape(shape_of(batch2))}")
    return _scaled(beta, input, alpha, sgo.sum(sgo.matmul(batch1, batch2), axis=0))


@torch_op("torch.kron", "Tensor.kron")
def kron(input, other, *, out=None):
    """Every product input[i]·other[j] at i·other.shape + j: the operands interleaved
    as (a0, 1, a1, 1, ...) and (1, b0, 1, b1, ...), multiplied and merged pairwise."""
    reject("torch.kron", out=out)
    a, b = tuple(shape_of(input)), tuple(shape_of(other))
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + a, (1,) * (rank - len(b)) + b
    left = sgo.reshape(input, tuple(d for k in a for d in (k, 1)))
    right = sgo.reshape(other, tuple(d for k in b for d in (1, k)))
    return sgo.reshape(left * right, tuple(p * q for p, q in zip(a, b)))


def _prod(dims):
    """The number of elements of dims (a SymPy product when some are symbolic)."""
    out = sympy.Integer(1)
    for d in dims:
        out *= sympy.sympify(d)
    return int(out) if out.is_Integer else out


def contract(a, b, dims_a, dims_b):
    """tensordot: a's axes ``dims_a`` against b's ``dims_b``, as one matrix product."""
    sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
    dims_a = [d % len(sa) for d in dims_a]
    dims_b = [d % len(sb) for d in dims_b]
    for p, q in zip(dims_a, dims_b):
        if sa[p] != sb[q] and 1 in (sa[p], sb[q]):   # torch sums the other operand's dim
            if sa[p] == 1:
                b = sgo.sum(b, axis=q, keepdims=True)
            else:
                a = sgo.sum(a, axis=p, keepdims=True)
            sa, sb = tuple(shape_of(a)), tuple(shape_of(b))
        elif sa[p] != sb[q]:
            raise ShapeError(f"torch.tensordot: contracted dims differ: {sa[p]} (dim {p} of "
                             f"{fmt_shape(sa)}) vs {sb[q]} (dim {q} of {fmt_shape(sb)})")
    free_a = [d for d in range(len(sa)) if d not in dims_a]
    free_b = [d for d in range(len(sb)) if d not in dims_b]
    k = _prod(sa[d] for d in dims_a)
    left = sgo.reshape(sgo.transpose(a, tuple(free_a + dims_a)),
                       (_prod(sa[d] for d in free_a), k))
    right = sgo.reshape(sgo.transpose(b, tuple(dims_b + free_b)),
                        (k, _prod(sb[d] for d in free_b)))
    return sgo.reshape(sgo.matmul(left, right),
                       tuple(sa[d] for d in free_a) + tuple(sb[d] for d in free_b))


@torch_op("torch.tensordot")
def tensordot(a, b, dims=2, out=None):
    reject("torch.tensordot", out=out)
    if isinstance(dims, int):
        n = rank_of(a)
        return contract(a, b, list(range(n - dims, n)), list(range(dims)))
    dims_a, dims_b = dims
    if isinstance(dims_a, int):
        dims_a, dims_b = [dims_a], [dims_b]
    return contract(a, b, [int(d) for d in dims_a], [int(d) for d in dims_b])


@torch_op("linalg.tensorinv")
def tensorinv(A, ind=2, *, out=None):
    """The inverse of A read as a matrix of shape (prod(shape[:ind]), prod(shape[ind:]))."""
    reject("torch.linalg.tensorinv", out=out)
    shape = tuple(shape_of(A))
    rows, cols = shape[:ind], shape[ind:]
    if _prod(rows) != _prod(cols):
        raise ShapeError(f"torch.linalg.tensorinv: shape {fmt_shape(shape)} with ind={ind} "
                         "is not a square matrix")
    return sgo.reshape(sgo.inverse(sgo.reshape(A, (_prod(rows), _prod(cols)))), cols + rows)


@torch_op("linalg.tensorsolve")
def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B: a matrix solve with A reshaped to
    (B.numel(), X.numel()); ``dims`` of A are first moved to the end."""
    reject("torch.linalg.tensorsolve", out=out)
    if dims is not None:
        n = rank_of(A)
        dims = [d % n for d in dims]
        A = sgo.transpose(A, tuple([d for d in range(n) if d not in dims] + dims))
    shape, rhs = tuple(shape_of(A)), tuple(shape_of(B))
    result = shape[len(rhs):]
    if _prod(rhs) != _prod(result) or len(shape) < len(rhs):
        raise ShapeError(f"torch.linalg.tensorsolve: A of shape {fmt_shape(shape)} does not "
                         f"match B of shape {fmt_shape(rhs)}")
    x = sgo.solve(sgo.reshape(A, (_prod(rhs), _prod(result))), sgo.reshape(B, (_prod(rhs),)))
    return sgo.reshape(x, result)
