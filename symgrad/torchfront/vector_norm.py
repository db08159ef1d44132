"""The vector p-norm for every p torch accepts, for the functions that take one
(F.normalize, pairwise_distance): p > 0 and ±inf are the ``norm`` op (or amax/amin),
p = 0 counts the non-zero entries (a step: no gradient, as in torch) and a negative p
is (Σ|x|^p)^(1/p) written out, whose derivative is torch's norm backward
x |x|^(p-2) / ‖x‖^(p-1)."""
import math

from ..core import ops as sgo
from .dispatch import dim_arg, unsupported
from .linalg import p_norm


def vector_norm(input, p, dim, keepdim, name):
    if isinstance(p, bool) or not isinstance(p, (int, float)) or math.isnan(p):
        raise unsupported(name, (input,), why=f"p={p!r} is not mapped; give a number")
    if p > 0 or p == -math.inf:
        return p_norm(input, p, dim, keepdim, name)
    axis = dim_arg(dim)
    if p == 0:
        return sgo.sum(sgo.ne(input, 0) * 1.0, axis=axis, keepdims=keepdim)
    total = sgo.sum(sgo.pow(sgo.abs(input), float(p)), axis=axis, keepdims=keepdim)
    return sgo.pow(total, 1.0 / p)
