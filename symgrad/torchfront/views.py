"""torch's view functions beyond the basic ones in ``shape``: the ``*_copy`` forms (a traced
result is a fresh value either way), splits by sizes, sections or indices, ``atleast_*d``,
column/depth stacking, ``meshgrid`` and ``cartesian_prod``, cyclic shifts (``roll``,
``rot90``, ``fft.fftshift``) and ``channel_shuffle``, all on sg shape ops."""
import builtins

from ..core import ops as sgo
from ..core.ops import layout
from ..core.shapes import fmt_shape, normalize_axis, numel
from ..diff.helpers import sum_to
from ..errors import ShapeError
from . import shape as sh
from .dispatch import (constant_array, rank_of, reject, shape_of, sizes_arg, torch_op,
                       unsupported)


def _int(name, value):
    """An int argument that torch also takes as a 0-d integer tensor (a constant here)."""
    if isinstance(value, int):
        return value
    array = constant_array(name, value, "it must be a constant integer")
    if array.size != 1:
        raise unsupported(name, (value,), why=f"expects one integer, got an array of shape "
                          f"{array.shape}")
    return int(array.reshape(-1)[0])


def _ints(name, values):
    """A list of ints given as a list, a tuple or a constant 1-d tensor."""
    if isinstance(values, (list, tuple)):
        return [_int(name, v) for v in values]
    return [int(v) for v in constant_array(name, values, "it must be constant").reshape(-1)]


# ----- the *_copy forms ---------------------------------------------------------------

@torch_op("torch.view_copy")
def view_copy(input, size):
    if type(size).__name__ == "dtype":
        raise unsupported("torch.view_copy", (input,), why="view(dtype) reinterprets bits")
    return sh.reshape(input, size)


torch_op("torch.permute_copy")(sh.permute)
torch_op("torch.t_copy")(sh.t)
torch_op("torch.squeeze_copy")(sh.squeeze)
torch_op("torch.transpose_copy")(sh.swap_axes)
torch_op("torch.unbind_copy")(sh.unbind)
torch_op("torch.alias_copy")(lambda input: input)


@torch_op("torch.unsqueeze_copy")
def unsqueeze_copy(input, dim):
    return sgo.unsqueeze(input, dim)


@torch_op("torch.expand_copy")
def expand_copy(input, size, *, implicit=False):
    return sh.expand(input, *size)


@torch_op("torch.narrow_copy", "Tensor.narrow_copy")
def narrow_copy(input, dim, start, length):
    return sh.narrow(input, dim, start, length)


@torch_op("torch.ravel", "Tensor.ravel")
def ravel(input):
    return sgo.reshape(input, (numel(shape_of(input)),))


# ----- splits ---------------------------------------------------------------------------

@torch_op("torch.split_with_sizes", "Tensor.split_with_sizes", "torch.split_with_sizes_copy")
def split_with_sizes(input, split_sizes, dim=0):
    return sh.split(input, list(split_sizes), dim)


@torch_op("torch.unsafe_split", "Tensor.unsafe_split")
def unsafe_split(input, split_size, dim=0):
    return sh.split(input, split_size, dim)


@torch_op("torch.unsafe_chunk", "Tensor.unsafe_chunk")
def unsafe_chunk(input, chunks, dim=0):
    return sh.chunk(input, chunks, dim)


def _split_at(input, bounds, d):
    """The pieces of ``input`` between consecutive ``bounds`` along axis ``d`` (clipped to
    the size, as torch.tensor_split does)."""
    size = shape_of(input)[d]
    pieces, start = [], 0
    for stop in list(bounds) + [size]:
        stop = builtins.min(builtins.max(stop if stop >= 0 else stop + size, 0), size)
        lo = builtins.min(start, size)
        pieces.append(sh._take(input, d, lo, builtins.max(stop, lo)))
        start = stop
    return tuple(pieces)


def _concrete_size(name, input, d):
    size = shape_of(input)[d]
    if not isinstance(size, int):
        raise ShapeError(f"{name}: dim {d} has symbolic size {size}; give the split indices "
                         "as a list")
    return size


@torch_op("torch.tensor_split", "Tensor.tensor_split")
def tensor_split(input, indices_or_sections, dim=0):
    d = normalize_axis(dim, rank_of(input), "tensor_split")
    if isinstance(indices_or_sections, int) or (
            not isinstance(indices_or_sections, (list, tuple))
            and not shape_of(indices_or_sections)):
        sections = _int("torch.tensor_split", indices_or_sections)
        if sections <= 0:
            raise ShapeError(f"tensor_split: the number of sections must be positive, got "
                             f"{sections}")
        size = _concrete_size("tensor_split", input, d)
        q, r = divmod(size, sections)
        bounds, at = [], 0
        for k in range(sections - 1):
            at += q + (1 if k < r else 0)
            bounds.append(at)
        return _split_at(input, bounds, d)
    return _split_at(input, _ints("torch.tensor_split", indices_or_sections), d)


def _directional_split(name, dim_of):
    def handler(input, indices_or_sections):
        rank = rank_of(input)
        d = dim_of(rank)
        if d is None:
            raise ShapeError(f"{name}: needs a tensor of higher rank, got shape "
                             f"{fmt_shape(shape_of(input))}")
        if isinstance(indices_or_sections, int):
            size = _concrete_size(name, input, d)
            if indices_or_sections <= 0 or size % indices_or_sections:
                raise ShapeError(f"{name}: dim {d} of size {size} does not divide into "
                                 f"{indices_or_sections} equal sections")
        return tensor_split(input, indices_or_sections, d)
    return handler


torch_op("torch.hsplit", "Tensor.hsplit")(
    _directional_split("hsplit", lambda r: None if r < 1 else (0 if r == 1 else 1)))
torch_op("torch.vsplit", "Tensor.vsplit")(
    _directional_split("vsplit", lambda r: None if r < 2 else 0))
torch_op("torch.dsplit", "Tensor.dsplit")(
    _directional_split("dsplit", lambda r: None if r < 3 else 2))


# ----- atleast_*d, stacking, grids ----------------------------------------------------------

def _atleast(rank, place):
    def one(t):
        s = shape_of(t)
        return t if len(s) >= rank else sgo.reshape(t, place(s))

    def handler(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(one(t) for t in tensors[0])
        if len(tensors) == 1:
            return one(tensors[0])
        return tuple(one(t) for t in tensors)
    return handler


def _as_3d(s):
    return {0: (1, 1, 1), 1: (1,) + tuple(s) + (1,), 2: tuple(s) + (1,)}[len(s)]


atleast_1d = torch_op("torch.atleast_1d", "torch._C._VariableFunctions.atleast_1d")(_atleast(1, lambda s: (1,)))
atleast_2d = torch_op("torch.atleast_2d", "torch._C._VariableFunctions.atleast_2d")(_atleast(2, lambda s: (1,) * (2 - len(s)) + tuple(s)))
atleast_3d = torch_op("torch.atleast_3d", "torch._C._VariableFunctions.atleast_3d")(_atleast(3, _as_3d))


@torch_op("torch.column_stack")
def column_stack(tensors, *, out=None):
    reject("torch.column_stack", out=out)
    cols = [t if rank_of(t) >= 2 else sgo.reshape(t, (numel(shape_of(t)), 1))
            for t in tensors]
    return sh.cat(cols, 1)


@torch_op("torch.dstack")
def dstack(tensors, *, out=None):
    reject("torch.dstack", out=out)
    return sh.cat([atleast_3d(t) for t in tensors], 2)


@torch_op("torch.meshgrid", "torch._C._VariableFunctions.meshgrid")
def meshgrid(*tensors, indexing=None):
    """Grids as broadcasts of the 1-d inputs (a 0-d input counts as one element)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    indexing = indexing or "ij"
    if indexing not in ("ij", "xy"):
        raise ShapeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if rank_of(t) > 1:
            raise ShapeError(f"meshgrid: expects 0-d or 1-d tensors, got shape "
                             f"{fmt_shape(shape_of(t))}")
    sizes = [numel(shape_of(t)) for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    full = tuple(sizes[order[k]] for k in range(len(tensors)))
    out = []
    for k, t in enumerate(tensors):
        place = order.index(k)
        line = tuple(sizes[k] if j == place else 1 for j in range(len(full)))
        out.append(sgo.broadcast_to(sgo.reshape(t, line), full))
    return tuple(out)


@torch_op("torch.cartesian_prod")
def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return sgo.stack([sgo.reshape(g, (numel(shape_of(g)),)) for g in grids], axis=1)


# ----- cyclic shifts and shuffles -------------------------------------------------------------

@torch_op("torch.roll", "Tensor.roll")
def roll(input, shifts, dims=None):
    shifts = [shifts] if isinstance(shifts, int) else _ints("torch.roll", shifts)
    if dims is None or dims == () or dims == []:
        if len(shifts) != 1:
            raise ShapeError(f"roll: {len(shifts)} shifts without dims; give one shift to "
                             "roll the flattened tensor, or dims")
        s = shape_of(input)
        flat = sgo.reshape(input, (numel(s),))
        return sgo.reshape(layout.roll(flat, shifts[0], 0), s)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not shape_of(input):
        return input
    return layout.roll(input, tuple(shifts), tuple(dims))


@torch_op("torch.rot90", "Tensor.rot90")
def rot90(input, k=1, dims=(0, 1)):
    rank = rank_of(input)
    dims = list(dims)
    if len(dims) != 2 or rank < 2:
        raise ShapeError(f"rot90: needs two dims of a tensor of rank >= 2, got dims {dims} "
                         f"for shape {fmt_shape(shape_of(input))}")
    a, b = (normalize_axis(d, rank, "rot90") for d in dims)
    if a == b:
        raise ShapeError(f"rot90: the two dims must differ, got {dims}")
    k %= 4
    if k == 0:
        return input
    if k == 2:
        return sgo.flip(input, (a, b))
    return sgo.swapaxes(sgo.flip(input, b if k == 1 else a), a, b)


def _fftshift(name, sign):
    def handler(input, dim=None):
        rank = rank_of(input)
        if rank == 0:
            return input
        dims = range(rank) if dim is None else ([dim] if isinstance(dim, int) else dim)
        dims = [normalize_axis(d, rank, name) for d in dims]
        sizes = [shape_of(input)[d] for d in dims]
        if not all(isinstance(n, int) for n in sizes):
            raise ShapeError(f"{name}: needs concrete sizes along the shifted dims, got "
                             f"{fmt_shape(shape_of(input))}")
        return layout.roll(input, tuple(sign * (n // 2) for n in sizes), tuple(dims))
    return handler


torch_op("torch.fft.fftshift")(_fftshift("fftshift", 1))
torch_op("torch.fft.ifftshift")(_fftshift("ifftshift", -1))


@torch_op("F.channel_shuffle", "torch.channel_shuffle")
def channel_shuffle(input, groups):
    s = shape_of(input)
    if len(s) < 3:
        raise ShapeError(f"channel_shuffle: expects (N, C, *), got {fmt_shape(s)}")
    c = s[1]
    if isinstance(c, int) and (groups <= 0 or c % groups):
        raise ShapeError(f"channel_shuffle: {c} channels do not divide into {groups} groups")
    split = sgo.reshape(input, (s[0], groups, c // groups) + tuple(s[2:]))
    return sgo.reshape(sgo.swapaxes(split, 1, 2), s)


@torch_op("Tensor.sum_to_size")
def sum_to_size(input, *size):
    target = tuple(sizes_arg(size))
    s = shape_of(input)
    lead = len(s) - len(target)
    if lead < 0 or any(t != 1 and t != d for t, d in zip(target, s[lead:])):
        raise ShapeError(f"sum_to_size: shape {fmt_shape(s)} does not sum to "
                         f"{fmt_shape(target)}")
    return sum_to(input, target)

