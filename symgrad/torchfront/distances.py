"""torch's distances and second moments written with sg ops: ``dist``, ``cdist``,
``F.pdist``, ``renorm``, ``cov`` and ``corrcoef``. The distances are p-norms of
differences, so their gradients at coincident points are the norm's at 0 (0, as
torch's)."""
import sympy

from ..core import ops as sgo
from ..core.graph import Tensor
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import rank_of, reject, shape_of, torch_op
from .linalg import p_norm


@torch_op("torch.dist", "Tensor.dist")
def dist(input, other, p=2):
    return p_norm(input - other, p, None, False, "torch.dist")


def _check_points(name, x1, x2):
    if rank_of(x1) < 2 or rank_of(x2) < 2 or shape_of(x1)[-1] != shape_of(x2)[-1]:
        raise ShapeError(f"{name}: expects point sets (..., P, M) and (..., R, M), got "
                         f"shapes {fmt_shape(shape_of(x1))} and {fmt_shape(shape_of(x2))}")


@torch_op("torch.cdist")
def cdist(x1, x2, p=2.0, compute_mode=None):
    """‖x1[..., i, :] - x2[..., j, :]‖_p for every pair (i, j), batch dims broadcast."""
    _check_points("torch.cdist", x1, x2)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p < 0:
        raise ParameterError(f"torch.cdist: p must be a number >= 0, got {p!r}")
    diff = sgo.unsqueeze(x1, -2) - sgo.unsqueeze(x2, -3)
    return p_norm(diff, p, -1, False, "torch.cdist")


@torch_op("F.pdist")
def pdist(input, p=2):
    """The distances of the rows i < j of an (N, M) input, in row-major order."""
    import numpy
    import torch
    if rank_of(input) != 2:
        raise ShapeError(f"torch.nn.functional.pdist: expects an (N, M) input, got shape "
                         f"{fmt_shape(shape_of(input))}")
    n = shape_of(input)[0]
    if not isinstance(n, int) and not getattr(n, "is_Integer", False):
        raise ShapeError(f"torch.nn.functional.pdist: the number of rows must be concrete, "
                         f"got {n}")
    rows, cols = numpy.triu_indices(int(n), 1)
    diff = input[torch.as_tensor(rows)] - input[torch.as_tensor(cols)]
    return p_norm(diff, p, -1, False, "torch.nn.functional.pdist")


@torch_op("torch.renorm", "Tensor.renorm")
def renorm(input, p, dim, maxnorm, *, out=None):
    """Each slice along ``dim`` whose p-norm exceeds maxnorm scaled to maxnorm (with
    torch's 1e-7 guard)."""
    reject("torch.renorm", out=out)
    n = rank_of(input)
    dim = dim % n
    others = tuple(d for d in range(n) if d != dim)
    norm = p_norm(input, p, others, True, "torch.renorm")
    factor = sgo.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)
    return input * factor


def _as_operand(w):
    """A weight vector as an sg operand: symbolic as is, a torch tensor as float."""
    if w is None or isinstance(w, Tensor):
        return w
    return w.double() if hasattr(w, "double") else w


@torch_op("torch.cov", "Tensor.cov")
def cov(input, *, correction=1, fweights=None, aweights=None):
    """torch.cov: rows are variables, columns observations, optionally weighted by
    frequency and by importance; the result squeezed like torch's."""
    if rank_of(input) > 2:
        raise ShapeError(f"torch.cov: expects at most 2 dims, got shape "
                         f"{fmt_shape(shape_of(input))}")
    x = sgo.reshape(input, (1, -1)) if rank_of(input) < 2 else input
    observations = shape_of(x)[1]
    fweights, aweights = _as_operand(fweights), _as_operand(aweights)
    w = fweights if aweights is None else (aweights if fweights is None
                                           else fweights * aweights)
    if w is None:
        avg = sgo.mean(x, axis=1)
        norm_factor = sympy.Max(0, sympy.sympify(observations) - correction)
    else:
        w_sum = sgo.sum(w)
        avg = sgo.sum(x * w, axis=1) / w_sum
        if correction != 0 and aweights is not None:
            norm_factor = w_sum - correction * sgo.sum(w * aweights) / w_sum
        else:
            norm_factor = w_sum - correction
        norm_factor = sgo.where(norm_factor <= 0, 0.0, norm_factor)
    centered = x - sgo.unsqueeze(avg, 1)
    weighted = centered if w is None else centered * w
    c = sgo.matmul(centered, sgo.transpose(weighted)) / norm_factor
    return sgo.squeeze(c) if 1 in tuple(shape_of(c)) else c


@torch_op("torch.corrcoef", "Tensor.corrcoef")
def corrcoef(input):
    """Pearson's correlation coefficients: cov over the outer product of the standard
    deviations, clipped to [-1, 1] as torch's."""
    c = cov(input)
    if not rank_of(c):
        return c / c
    stddev = sgo.sqrt(sgo.diagonal(c))
    c = c / sgo.unsqueeze(stddev, 1)
    c = c / sgo.unsqueeze(stddev, 0)
    return sgo.clamp(c, -1.0, 1.0)
