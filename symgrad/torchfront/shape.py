"""torch's shape functions (views, permutations, joins and splits, ``einsum``), dtype
and device conversions, creation functions (``*_like``, ``new_*``) and Tensor
properties, on symbolic Tensors."""
import builtins
import string

import numpy as np

from ..core import ops as sgo
from ..core.build import array_const, const
from ..core.graph import Tensor
from ..core.shapes import broadcast_shapes, fmt_shape, normalize_axis, numel
from ..errors import ParameterError, ShapeError
from .dispatch import (check_float_dtype, constant_array, rank_of, reject, shape_of,
                       sizes_arg, tensor_property, torch_op, unsupported)
from .pointwise import as_bool
from .special import to_dtype


@torch_op("torch.reshape", "Tensor.reshape", "Tensor.view")
def reshape(input, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (tuple, list, int)) and \
            type(shape[0]).__name__ == "dtype":
        raise unsupported("torch.Tensor.view", (input,), why="view(dtype) reinterprets bits")
    return sgo.reshape(input, sizes_arg(shape))


@torch_op("torch.flip", "Tensor.flip")
def flip(input, *dims, **kwargs):
    """torch.flip(x, dims) and x.flip(*dims)."""
    if "dims" in kwargs:
        dims = (kwargs.pop("dims"),)
    if kwargs:
        raise unsupported("torch.flip", (input,), kwargs, "arguments not understood")
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return sgo.flip(input, tuple(dims))


@torch_op("torch.fliplr")
def fliplr(input):
    return sgo.flip(input, 1)


@torch_op("torch.flipud")
def flipud(input):
    return sgo.flip(input, 0)


@torch_op("Tensor.view_as", "Tensor.reshape_as")
def view_as(input, other):
    return sgo.reshape(input, shape_of(other))


@torch_op("torch.flatten", "Tensor.flatten")
def flatten(input, start_dim=0, end_dim=-1):
    shape = shape_of(input)
    if not shape:
        return sgo.reshape(input, (1,))
    a = normalize_axis(start_dim, len(shape), "flatten")
    b = normalize_axis(end_dim, len(shape), "flatten")
    if a > b:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return sgo.reshape(input, shape[:a] + (numel(shape[a:b + 1]),) + shape[b + 1:])


@torch_op("torch.unflatten", "Tensor.unflatten")
def unflatten(input, dim, sizes):
    shape = shape_of(input)
    d = normalize_axis(dim, len(shape), "unflatten")
    return sgo.reshape(input, shape[:d] + tuple(sizes) + shape[d + 1:])


@torch_op("torch.squeeze", "Tensor.squeeze")
def squeeze(input, dim=None):
    """torch leaves a dim of size other than 1 alone (sg.squeeze would raise)."""
    shape = shape_of(input)
    if dim is None:
        return sgo.squeeze(input)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if not shape:
        normalize_axis(dims[0] if dims else 0, 1, "squeeze")
        return input
    keep = tuple(normalize_axis(d, len(shape), "squeeze") for d in dims)
    ones = tuple(d for d in keep if shape[d] == 1)
    return sgo.squeeze(input, ones) if ones else input


def swap_axes(input, dim0, dim1):
    return sgo.swapaxes(input, dim0, dim1)


torch_op("torch.transpose", "torch.swapaxes", "torch.swapdims", "Tensor.transpose",
         "Tensor.swapaxes", "Tensor.swapdims")(swap_axes)


@torch_op("torch.t", "Tensor.t")
def t(input):
    if rank_of(input) > 2:
        raise ShapeError(f"t: expects a tensor of rank <= 2, got shape "
                         f"{fmt_shape(shape_of(input))}; use transpose(dim0, dim1)")
    return sgo.transpose(input) if rank_of(input) == 2 else input


@torch_op("torch.adjoint", "Tensor.adjoint")
def adjoint(input):
    return swap_axes(input, -2, -1)


tensor_property("mT", "mH")(adjoint)
tensor_property("H")(t)


@torch_op("torch.permute", "Tensor.permute")
def permute(input, *dims):
    return sgo.transpose(input, tuple(int(d) for d in sizes_arg(dims)))


@torch_op("torch.movedim", "torch.moveaxis", "Tensor.movedim", "Tensor.moveaxis")
def movedim(input, source, destination):
    rank = rank_of(input)
    src = source if isinstance(source, (tuple, list)) else (source,)
    dst = destination if isinstance(destination, (tuple, list)) else (destination,)
    src = [normalize_axis(s, rank, "movedim") for s in src]
    dst = [normalize_axis(d, rank, "movedim") for d in dst]
    order = [i for i in range(rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return sgo.transpose(input, tuple(order))


def _expanded(input, sizes):
    shape = shape_of(input)
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise ShapeError(f"expand: the number of sizes ({len(sizes)}) must be at least the "
                         f"rank of the tensor, shape {fmt_shape(shape)}")
    target = tuple(shape[i - lead] if s == -1 and i >= lead else s
                   for i, s in enumerate(sizes))
    return sgo.broadcast_to(input, target)


@torch_op("Tensor.expand")
def expand(input, *sizes):
    return _expanded(input, sizes_arg(sizes))


@torch_op("torch.broadcast_to", "Tensor.broadcast_to")
def broadcast_to(input, size):
    return _expanded(input, tuple(size))


@torch_op("Tensor.expand_as")
def expand_as(input, other):
    return sgo.broadcast_to(input, shape_of(other))


@torch_op("torch.broadcast_tensors")
def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*[shape_of(t) for t in tensors], op="broadcast_tensors")
    return tuple(sgo.broadcast_to(t, shape) for t in tensors)


@torch_op("torch.cat", "torch.concat", "torch.concatenate")
def cat(tensors, dim=0, *, axis=None, out=None):
    reject("torch.cat", out=out)
    tensors = list(tensors)
    tensors = [t for t in tensors if not (shape_of(t) == (0,))] or tensors
    return sgo.concatenate(tensors, axis=dim if axis is None else axis)


@torch_op("torch.stack")
def stack(tensors, dim=0, *, out=None):
    reject("torch.stack", out=out)
    return sgo.stack(list(tensors), axis=dim)


@torch_op("torch.hstack")
def hstack(tensors, *, out=None):
    reject("torch.hstack", out=out)
    tensors = list(tensors)
    return sgo.concatenate(tensors, axis=0 if rank_of(tensors[0]) == 1 else 1)


@torch_op("torch.vstack", "torch.row_stack")
def vstack(tensors, *, out=None):
    reject("torch.vstack", out=out)
    tensors = [t if rank_of(t) >= 2 else sgo.reshape(t, (1,) + shape_of(t)) for t in tensors]
    return sgo.concatenate(tensors, axis=0)


def _take(input, dim, start, stop):
    index = (slice(None),) * dim + (slice(start, stop),)
    return input[index]


@torch_op("torch.narrow", "Tensor.narrow")
def narrow(input, dim, start, length):
    """``start`` may be a 0-d integer tensor, as in torch (a constant here)."""
    d = normalize_axis(dim, rank_of(input), "narrow")
    if isinstance(start, Tensor):
        start = int(constant_array("torch.narrow", start, "start must be a constant"))
    if isinstance(start, int) and start < 0:
        start += shape_of(input)[d]
    return _take(input, d, start, start + length)


@torch_op("torch.select", "Tensor.select")
def select(input, dim, index):
    d = normalize_axis(dim, rank_of(input), "select")
    return input[(slice(None),) * d + (index,)]


@torch_op("torch.split", "Tensor.split")
def split(tensor, split_size_or_sections, dim=0):
    shape = shape_of(tensor)
    d = normalize_axis(dim, len(shape), "split")
    size = shape[d]
    if isinstance(split_size_or_sections, int):
        if not isinstance(size, int):
            raise ShapeError(f"split: dim {d} has symbolic size {size}; give the section "
                             "sizes as a list")
        step = split_size_or_sections
        sections = [builtins.min(step, size - s) for s in range(0, size, step)]
    else:
        sections = list(split_size_or_sections)
    out, start = [], 0
    for s in sections:
        out.append(_take(tensor, d, start, start + s))
        start += s
    return tuple(out)


@torch_op("torch.chunk", "Tensor.chunk")
def chunk(input, chunks, dim=0):
    size = shape_of(input)[normalize_axis(dim, rank_of(input), "chunk")]
    if not isinstance(size, int):
        raise ShapeError(f"chunk: dim {dim} has symbolic size {size}; use split with sizes")
    return split(input, -(-size // chunks), dim)


@torch_op("torch.unbind", "Tensor.unbind")
def unbind(input, dim=0):
    d = normalize_axis(dim, rank_of(input), "unbind")
    size = shape_of(input)[d]
    if not isinstance(size, int):
        raise ShapeError(f"unbind: dim {d} has symbolic size {size}")
    return tuple(select(input, d, i) for i in range(size))


@torch_op("torch.tile", "Tensor.tile", "Tensor.repeat")
def repeat(input, *sizes):
    """Tiling as a broadcast: (r0, d0, r1, d1, ...) reshaped to (r0*d0, r1*d1, ...)."""
    reps = sizes_arg(sizes)
    shape = shape_of(input)
    if len(reps) < len(shape):
        reps = (1,) * (len(shape) - len(reps)) + tuple(reps)
    shape = (1,) * (len(reps) - len(shape)) + tuple(shape)
    inter = tuple(x for d in shape for x in (1, d))
    wide = tuple(x for r, d in zip(reps, shape) for x in (r, d))
    tiled = sgo.broadcast_to(sgo.reshape(input, inter), wide)
    return sgo.reshape(tiled, tuple(r * d for r, d in zip(reps, shape)))


def _einsum_terms(equation, operands):
    """(operands, input letter strings, output letters) with ``...`` spelled out as
    letters and a matrix's diagonal (``ii``) taken first."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(f"einsum: {equation!r} names {len(terms)} operands, got "
                         f"{len(operands)}")
    spare = [chr(c) for c in range(ord("A"), ord("Z") + 1) if chr(c) not in eq]
    widest = builtins.max([rank_of(t) - len(term.replace("...", ""))
                           for t, term in zip(operands, terms) if "..." in term] or [0])
    ell = "".join(spare[:widest])
    spelled, operands = [], list(operands)
    for i, (t, term) in enumerate(zip(operands, terms)):
        if "..." in term:
            k = rank_of(t) - len(term.replace("...", ""))
            term = term.replace("...", ell[widest - k:])
        if len(term) == 2 == rank_of(t) and term[0] == term[1]:
            operands[i], term = sgo.diagonal(t), term[0]
        if len(term) != rank_of(operands[i]):
            raise ShapeError(f"einsum: term {term!r} names {len(term)} dims of an operand of "
                             f"shape {fmt_shape(shape_of(t))}")
        if len(set(term)) != len(term):
            operands[i], term = _einsum_diagonal(operands[i], term)
        spelled.append(term)
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = "".join(terms).replace("...", "")
        out = ell + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
    return operands, spelled, out


def _einsum_diagonal(t, term):
    """The generalised diagonal of ``t`` for a term with repeated letters (``iji``): t
    times the constant mask that is 1 where the repeated indices agree, summed over every
    later occurrence of a letter. Needs concrete sizes for the repeated dims."""
    shape = shape_of(t)
    first = {c: term.index(c) for c in term}
    later = tuple(k for k, c in enumerate(term) if first[c] != k)
    if not all(isinstance(shape[k], int) for k in range(len(term)) if term[k] in
               {term[j] for j in later}):
        raise unsupported("torch.einsum", (t,), why=f"term {term!r}: the repeated letters "
                          f"need concrete sizes, got shape {fmt_shape(shape)}")
    mask = np.ones([d if term[k] in {term[j] for j in later} else 1
                    for k, d in enumerate(shape)], dtype=float)
    grids = np.indices(mask.shape, sparse=True)
    for k in later:
        mask = mask * (grids[k] == grids[first[term[k]]])
    kept = "".join(c for k, c in enumerate(term) if k not in later)
    return sgo.sum(t * array_const(mask), axis=later), kept


@torch_op("torch.einsum")
def einsum(equation, *operands):
    """Contractions as sums and batched matrix products, pair by pair from the left."""
    if not isinstance(equation, str):      # torch's sublist form: x, [0, 1], y, [1, 2], [0, 2]
        equation, operands = _sublist_equation((equation,) + operands)
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands, terms, out = _einsum_terms(equation, operands)
    items = list(zip(operands, terms))

    def needed(k):
        return set(out) | {c for _, term in items[k + 1:] for c in term}

    t, letters = items[0]
    for k in range(len(items)):
        if k:
            u, other = items[k]
            t, letters = _contract(t, letters, u, other, needed(k))
        drop = [c for c in letters if c not in needed(k)]
        if drop:
            t = sgo.sum(t, axis=tuple(letters.index(c) for c in drop))
            letters = "".join(c for c in letters if c not in drop)
    if letters != out:
        t = sgo.transpose(t, tuple(letters.index(c) for c in out))
    return t


def _contract(a, la, b, lb, keep):
    """a ⋅ b over the letters they share and no later term needs, as one batched matmul."""
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    sa, sb = dict(zip(la, shape_of(a))), dict(zip(lb, shape_of(b)))
    a = sgo.transpose(a, tuple(la.index(c) for c in batch + free_a + contr))
    b = sgo.transpose(b, tuple(lb.index(c) for c in batch + contr + free_b))
    a = sgo.reshape(a, tuple(sa[c] for c in batch) + (numel([sa[c] for c in free_a]),
                                                      numel([sa[c] for c in contr])))
    b = sgo.reshape(b, tuple(sb[c] for c in batch) + (numel([sb[c] for c in contr]),
                                                      numel([sb[c] for c in free_b])))
    product = sgo.matmul(a, b)
    batch_shape = shape_of(product)[:len(batch)]
    shape = tuple(batch_shape) + tuple(sa[c] for c in free_a) + tuple(sb[c] for c in free_b)
    return sgo.reshape(product, shape), "".join(batch + free_a + free_b)


# ----- conversions and creation -------------------------------------------------------

def _identity(input, *args, **kwargs):
    return input


torch_op("Tensor.contiguous", "Tensor.clone", "torch.clone", "Tensor.cpu",
         "Tensor.requires_grad_")(_identity)
tensor_property("data")(sgo.detach)


def _to_float(input):
    if isinstance(input, Tensor) and input.kind == "bool":
        return sgo.cast(input)
    return input


@torch_op("Tensor.float", "Tensor.double")
def to_float(input, memory_format=None):
    return _to_float(input)


@torch_op("Tensor.to")
def to(input, *args, **kwargs):
    """Devices are ignored; floating dtypes keep the value (a bool Tensor becomes 0/1)."""
    for a in list(args) + [kwargs.get("dtype")]:
        if a is not None and type(a).__name__ == "dtype":
            check_float_dtype("torch.Tensor.to", a)
            return to_dtype(_to_float(input), a)
    return input


@torch_op("Tensor.type_as")
def type_as(input, other):
    return _to_float(input)


@torch_op("Tensor.bool")
def to_bool(input, memory_format=None):
    return as_bool(input)


def _const_like(value):
    def handler(input, *, dtype=None, layout=None, device=None, requires_grad=False,
                memory_format=None):
        check_float_dtype("torch.*_like", dtype)
        return const(value, shape_of(input))
    return handler


torch_op("torch.zeros_like", "torch.empty_like")(_const_like(0))
torch_op("torch.ones_like")(_const_like(1))


@torch_op("torch.full_like")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None):
    check_float_dtype("torch.full_like", dtype)
    if isinstance(fill_value, Tensor):
        return sgo.broadcast_to(fill_value, shape_of(input))
    return const(float(fill_value), shape_of(input))


def _new(value):
    def handler(input, *size, dtype=None, device=None, requires_grad=False, layout=None,
                pin_memory=False):
        check_float_dtype("torch.Tensor.new_*", dtype)
        return const(value, tuple(sizes_arg(size)))
    return handler


torch_op("Tensor.new_zeros", "Tensor.new_empty")(_new(0))
torch_op("Tensor.new_ones")(_new(1))


@torch_op("Tensor.new_full")
def new_full(input, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False):
    return const(float(fill_value), tuple(size))


@torch_op("Tensor.dim", "Tensor.ndimension")
def dim(input):
    return rank_of(input)


@torch_op("Tensor.numel", "Tensor.nelement", "torch.numel")
def count(input):
    return numel(shape_of(input))


@torch_op("Tensor.is_floating_point", "torch.is_floating_point")
def is_floating_point(input):
    return not (isinstance(input, Tensor) and input.kind == "bool")


@torch_op("Tensor.is_complex", "torch.is_complex")
def is_complex(input):
    return False


@tensor_property("device")
def device(x):
    import torch
    return torch.device("cpu")


tensor_property("is_cuda", "is_sparse", "is_quantized", "is_meta", "is_nested",
                "is_mkldnn")(lambda x: False)
tensor_property("grad")(lambda x: None)


def _sublist_equation(args):
    """(equation, operands) of einsum's sublist form: operands each followed by a list of
    ints naming its dims (Ellipsis for ...), then optionally the output's list."""
    def letters(sub):
        if not isinstance(sub, (list, tuple)) or not all(
                s is Ellipsis or (isinstance(s, int) and 0 <= s < 52) for s in sub):
            raise ParameterError(f"torch.einsum: a sublist must list dims as ints in [0, 52) "
                                 f"or ..., got {sub!r}")
        return "".join("..." if s is Ellipsis else string.ascii_letters[s] for s in sub)
    operands, terms = [], []
    items = list(args)
    while len(items) >= 2:
        operands.append(items.pop(0))
        terms.append(letters(items.pop(0)))
    equation = ",".join(terms) + ("->" + letters(items[0]) if items else "")
    return equation, tuple(operands)
