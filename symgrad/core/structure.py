"""Structure a node has by construction, which code can exploit: a matrix that is
triangular because an op made it so (a Cholesky factor, ``tril``/``triu``, the matrix
transpose of one of those). A solve against such a matrix is a triangular solve (O(n²) per
right-hand side after no factorisation) instead of a general LU solve; an outer product,
whose products stay rank one; and the interval a value lies in (``bounds``), so a Gram
matrix with nonnegative weights can be computed as a symmetric product."""
import math


def _swaps_last_two(node):
    """Whether ``node`` is a transpose exchanging the last two axes and nothing else."""
    if node.op != "transpose" or len(node.shape) < 2:
        return False
    axes = node.attrs.get("axes")
    n = len(node.shape)
    return tuple(axes) == tuple(range(n - 2)) + (n - 1, n - 2)


def triangle(node):
    """"lower" or "upper" when every matrix of ``node`` (..., n, n) is zero above or below
    its diagonal by construction, else None."""
    if len(node.shape) < 2:
        return None
    if node.op == "cholesky":
        return "lower"
    if node.op == "tril" and node.attrs["k"] <= 0:
        return "lower"
    if node.op == "triu" and node.attrs["k"] >= 0:
        return "upper"
    if _swaps_last_two(node):
        inner = triangle(node.inputs[0])
        return {"lower": "upper", "upper": "lower"}.get(inner)
    return None


def rank_one_factors(node):
    """(u, v) when ``node`` is the outer product u vᵀ of two vectors, else None: a product
    with it stays rank one (``ops.linalg``'s matmul), O(n²) where the matrix product is
    O(n³)."""
    return tuple(node.inputs) if node.op == "outer" else None


UNBOUNDED = (-math.inf, math.inf)


def bounds(node):
    """(lo, hi): an interval holding every finite element of ``node``, from the ``bounds``
    of the OpDefs below it (σ is in [0, 1], exp is nonnegative, sums and products combine
    intervals); (-inf, inf) where an op says nothing. Read iteratively, each node once."""
    from .graph import topo_order
    from .opdef import OPS
    known = {}
    for n in topo_order([node]):
        rule = OPS[n.op].bounds
        if rule is None or n.kind != "float" and n.op != "const":
            known[id(n)] = UNBOUNDED
            continue
        try:
            lo, hi = rule(n.attrs, *[known[id(i)] for i in n.inputs])
        except (TypeError, ValueError, ArithmeticError):
            lo, hi = UNBOUNDED
        known[id(n)] = (lo, hi) if lo == lo and hi == hi else UNBOUNDED   # nan: unknown
    return known[id(node)]
