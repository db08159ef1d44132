"""torch's finite differences and quadrature on sampled values: ``diff``, ``gradient``,
``trapezoid`` (``trapz``), ``cumulative_trapezoid``, and ``linalg.vander`` (powers by
repeated products, so the gradient at 0 is torch's, not 0 * 0^-1). All are slices and
arithmetic of sg ops along one dim."""
from ..core import ops as sgo
from ..core.build import const
from ..core.graph import Tensor
from ..core.shapes import fmt_shape, normalize_axis
from ..errors import ShapeError
from .dispatch import rank_of, reject, shape_of, torch_op, unsupported
from .shape import _take


def _part(x, d, start, stop):
    return _take(x, d, start, stop)


def _size(name, x, d):
    n = shape_of(x)[d]
    if not isinstance(n, int):
        raise ShapeError(f"{name}: dim {d} has symbolic size {n}; it needs a concrete size")
    return n


@torch_op("torch.diff", "Tensor.diff")
def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    reject("torch.diff", out=out)
    if rank_of(input) == 0:
        raise ShapeError("diff: expects a tensor of rank >= 1, got a 0-d tensor")
    d = normalize_axis(dim, rank_of(input), "diff")
    if n == 0:
        return input
    parts = [p for p in (prepend, input, append) if p is not None]
    parts = [p if isinstance(p, Tensor) and rank_of(p) else _as_along(p, input, d)
             for p in parts]
    x = sgo.concatenate(parts, axis=d) if len(parts) > 1 else input
    for _ in range(n):
        size = _size("diff", x, d)
        if size == 0:
            break
        x = _part(x, d, 1, size) - _part(x, d, 0, size - 1)
    return x


def _as_along(value, like, d):
    """A scalar prepend/append as one slice of ``like`` along ``d`` (torch broadcasts it)."""
    s = list(shape_of(like))
    s[d] = 1
    return sgo.broadcast_to(sgo.reshape(value, ()) if isinstance(value, Tensor) else
                            _constant(value), tuple(s))


def _constant(value):
    return const(float(value))


def _spacing_per_dim(name, spacing, dims, input):
    """For each dim: ("uniform", h) or ("coords", a 1-d Tensor of coordinates)."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (int, float)):
        return [("uniform", spacing)] * len(dims)
    spacing = list(spacing)
    if len(spacing) == 1 and len(dims) > 1:
        spacing = spacing * len(dims)
    if len(spacing) != len(dims):
        raise ShapeError(f"{name}: {len(spacing)} spacings for {len(dims)} dims")
    out = []
    for h, d in zip(spacing, dims):
        if isinstance(h, Tensor) and rank_of(h) == 1:
            out.append(("coords", h))
        elif isinstance(h, Tensor) and rank_of(h) == 0:
            out.append(("uniform", h))
        elif isinstance(h, (int, float)):
            out.append(("uniform", h))
        else:
            raise unsupported(name, (input,), why=f"spacing {h!r} is not mapped")
    return out


def _gradient_1d(x, d, kind, h, edge_order):
    """numpy.gradient's second-order interior formula and first/second-order edges."""
    n = _size("gradient", x, d)
    if n < edge_order + 1:
        raise ShapeError(f"gradient: dim {d} of size {n} needs at least {edge_order + 1} "
                         "points for edge_order " + str(edge_order))

    def at(a, b):
        return _part(x, d, a, b)

    def line(v, a, b):
        """Coordinates a:b shaped to broadcast along ``d``."""
        return sgo.reshape(v[a:b], (1,) * d + (b - a,) + (1,) * (rank_of(x) - d - 1))

    if kind == "uniform":
        inner = (at(2, n) - at(0, n - 2)) / (2 * h) if n > 2 else None
        if edge_order == 1:
            first = (at(1, 2) - at(0, 1)) / h
            last = (at(n - 1, n) - at(n - 2, n - 1)) / h
        else:
            first = (-1.5 * at(0, 1) + 2 * at(1, 2) - 0.5 * at(2, 3)) / h
            last = (0.5 * at(n - 3, n - 2) - 2 * at(n - 2, n - 1) + 1.5 * at(n - 1, n)) / h
    else:
        c = h
        dx = line(c, 1, n) - line(c, 0, n - 1)
        if n > 2:
            h1, h2 = _part(dx, d, 0, n - 2), _part(dx, d, 1, n - 1)
            inner = (h1 * h1 * at(2, n) - h2 * h2 * at(0, n - 2) +
                     (h2 * h2 - h1 * h1) * at(1, n - 1)) / (h1 * h2 * (h1 + h2))
        else:
            inner = None
        if edge_order == 1:
            first = (at(1, 2) - at(0, 1)) / _part(dx, d, 0, 1)
            last = (at(n - 1, n) - at(n - 2, n - 1)) / _part(dx, d, n - 2, n - 1)
        else:
            a1, a2 = _part(dx, d, 0, 1), _part(dx, d, 1, 2)
            first = (-(2 * a1 + a2) / (a1 * (a1 + a2)) * at(0, 1) +
                     (a1 + a2) / (a1 * a2) * at(1, 2) - a1 / (a2 * (a1 + a2)) * at(2, 3))
            b1, b2 = _part(dx, d, n - 3, n - 2), _part(dx, d, n - 2, n - 1)
            last = (b2 / (b1 * (b1 + b2)) * at(n - 3, n - 2) -
                    (b1 + b2) / (b1 * b2) * at(n - 2, n - 1) +
                    (2 * b2 + b1) / (b2 * (b1 + b2)) * at(n - 1, n))
    parts = [first] + ([inner] if inner is not None else []) + [last]
    return sgo.concatenate(parts, axis=d)


@torch_op("torch.gradient")
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    rank = rank_of(input)
    if edge_order not in (1, 2):
        raise ShapeError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    if dim is None:
        dims = list(range(rank))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [normalize_axis(d, rank, "gradient") for d in dims]
    steps = _spacing_per_dim("torch.gradient", spacing, dims, input)
    return tuple(_gradient_1d(input, d, kind, h, edge_order) for d, (kind, h) in
                 zip(dims, steps))


def _widths(name, y, x, dx, d):
    """The interval widths along ``d``: x's differences, or the constant dx (default 1)."""
    n = _size(name, y, d)
    if x is None:
        return 1.0 if dx is None else dx
    if rank_of(x) == 1:
        if shape_of(x)[0] != n:
            raise ShapeError(f"{name}: x of shape {fmt_shape(shape_of(x))} does not match dim "
                             f"{d} of y, shape {fmt_shape(shape_of(y))}")
        w = x[1:n] - x[0:n - 1]
        return sgo.reshape(w, (n - 1,) + (1,) * (rank_of(y) - d - 1))
    dim_x = d - rank_of(y) + rank_of(x)
    m = _size(name, x, dim_x)
    return _part(x, dim_x, 1, m) - _part(x, dim_x, 0, m - 1)


def _trapezoids(name, y, x, dx, dim):
    d = normalize_axis(dim, rank_of(y), name)
    n = _size(name, y, d)
    widths = _widths(name, y, x, dx, d)
    if n == 0:
        return None, d
    return widths * (_part(y, d, 1, n) + _part(y, d, 0, n - 1)) / 2, d


@torch_op("torch.trapezoid")
def trapezoid(y, x=None, *, dx=None, dim=-1):
    areas, d = _trapezoids("trapezoid", y, x, dx, dim)
    if areas is None:
        return sgo.sum(y, axis=d)
    return sgo.sum(areas, axis=d)


@torch_op("torch.trapz")
def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


@torch_op("torch.cumulative_trapezoid")
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    areas, d = _trapezoids("cumulative_trapezoid", y, x, dx, dim)
    if areas is None:
        return y
    return sgo.cumsum(areas, axis=d)


@torch_op("linalg.vander")
def vander(x, *, N=None):
    """Columns x^0, x^1, ..., x^(N-1) along a new last dim."""
    if N is None and rank_of(x) == 0:
        raise ShapeError("linalg.vander: give N for a 0-d tensor")
    n = shape_of(x)[-1] if N is None else N
    if not isinstance(n, int) or n <= 0:
        raise ShapeError(f"linalg.vander: N must be a positive int, got {n}")
    cols, power = [const(1.0, shape_of(x))], x
    for _ in range(1, n):
        cols.append(power)
        power = power * x
    return sgo.stack(cols, axis=-1)
