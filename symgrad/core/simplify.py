"""Local simplification, applied when a node is built.

Each function gets the inputs, the op's attributes and the result shape, and returns an
equivalent node (existing or simpler) or None to build the node as asked. Only local,
always-valid rewrites: identities (x*1, x+0, x-x), known zeros, constant folding,
double transpose and negation, reshapes of reshapes. Keeping gradient graphs small here
is what makes a gradient program cost a small multiple of its forward program.

Each family module picks its op's simplifier here (``simplify=...`` in its OpDef).
"""
import weakref

import sympy
from sympy import S

from .build import const, is_one, is_symmetric_leaf, is_zero, make
from .opdef import OPS
from .shapes import broadcast_shapes, dims_equal, numel, shapes_equal


def bcast(t, shape):
    """``t`` broadcast to ``shape`` (itself when the shape already matches)."""
    if shapes_equal(t.shape, shape):
        return t
    if t.is_const:
        return const(t.attrs["value"], shape)
    return make("broadcast_to", (t,), (("shape", shape),))


def fold(op, inputs, attrs, shape):
    """Constant folding: every input is a constant fill."""
    if not all(i.is_const for i in inputs):
        return None
    values = [i.attrs["value"] for i in inputs]
    value = OPS[op].expr(attrs, values)
    if isinstance(value, (sympy.core.relational.Relational,
                          sympy.logic.boolalg.BooleanFunction)):
        value = value.func(*value.args)     # comparisons are built unevaluated
    if isinstance(value, sympy.logic.boolalg.BooleanAtom):
        return const(bool(value), shape)
    if isinstance(value, sympy.Expr) and (value.is_extended_real or value is S.NaN) and (
            value.is_number or not value.has(sympy.Function)):
        return const(value, shape)
    if isinstance(value, sympy.Expr) and value.is_number and value.is_extended_real is False:
        return const(S.NaN, shape)   # log(-2), sqrt(-4): torch's nan, not SymPy's complex
    return None


def scalar_fills(op, inputs, attrs, shape):
    """A constant fill operand whose shape the other operands already give the result
    becomes a scalar constant: full((n,), 2) * x -> 2 * x."""
    if len(inputs) < 2:
        return None
    for k, t in enumerate(inputs):
        if t.is_const and t.shape:
            others = [i.shape for j, i in enumerate(inputs) if j != k]
            if shapes_equal(broadcast_shapes(*others), shape):
                new = inputs[:k] + (const(t.attrs["value"]),) + inputs[k + 1:]
                return make(op, new, tuple(attrs.items()))
    return None


def pointwise(op, rest=None):
    """The simplifier of an elementwise op: constant folding, scalar fills and implicit
    broadcasts, then the op's own rewrites ``rest``."""
    def simplify(inputs, attrs, shape):
        for i in inputs:
            if i.op == "const" or i.op == "broadcast_to":
                break
        else:
            return rest(inputs, attrs, shape) if rest else None
        folded = fold(op, inputs, attrs, shape)
        if folded is not None:
            return folded
        scalar = scalar_fills(op, inputs, attrs, shape)
        if scalar is not None:
            return scalar
        implicit = implicit_broadcasts(op, inputs, attrs, shape)
        if implicit is not None:
            return implicit
        return rest(inputs, attrs, shape) if rest else None
    return simplify


def implicit_broadcasts(op, inputs, attrs, shape):
    """An explicit broadcast_to operand that NumPy broadcasting would do anyway is
    dropped: broadcast_to(b, (m, n)) + X -> b + X."""
    if len(inputs) < 2:
        return None
    for k, t in enumerate(inputs):
        if t.op != "broadcast_to":
            continue
        inner = t.inputs[0]
        others = [i.shape for j, i in enumerate(inputs) if j != k]
        if shapes_equal(broadcast_shapes(inner.shape, *others), shape):
            new = inputs[:k] + (inner,) + inputs[k + 1:]
            return make(op, new, tuple(attrs.items()))
    return None


def _merge_wheres(op, x, y, shape):
    """where(c, a, b) op where(c, d, e) -> where(c, a op d, b op e): the shape of
    gradients of ``where`` (one branch a known zero), so they meet as one select."""
    if x.op == "where" and y.op == "where" and x.inputs[0] is y.inputs[0]:
        c = x.inputs[0]
        return bcast(make("where", (c, make(op, (x.inputs[1], y.inputs[1])),
                                    make(op, (x.inputs[2], y.inputs[2])))), shape)
    return None


def _scaled(t):
    """(c, x) for t = c*x with c a scalar constant, else None."""
    if t.op == "mul" and t.inputs[0].is_const and not t.inputs[0].shape:
        return t.inputs[0].attrs["value"], t.inputs[1]
    return None


def _common_factor(op, x, y, shape):
    """c*a + c*b -> c*(a + b) and c*a + (-c)*b -> c*(a - b): the 1/N of a mean meets
    every term of a gradient, and one scaling is cheaper than two."""
    sx, sy = _scaled(x), _scaled(y)
    if sx is None or sy is None:
        return None
    (cx, a), (cy, b) = sx, sy
    if op == "sub":
        cy = -cy
    if cx == cy:
        return bcast(make("mul", (const(cx), make("add", (a, b)))), shape)
    if cx == -cy:
        if cx.could_extract_minus_sign():
            return bcast(make("mul", (const(cy), make("sub", (b, a)))), shape)
        return bcast(make("mul", (const(cx), make("sub", (a, b)))), shape)
    return None


def add(inputs, attrs, shape):
    x, y = inputs
    if is_zero(x):
        return bcast(y, shape)
    if is_zero(y):
        return bcast(x, shape)
    if x is y:
        return make("mul", (const(2), x))
    merged = _merge_wheres("add", x, y, shape)
    if merged is None:
        merged = _common_factor("add", x, y, shape)
    if merged is not None:
        return merged
    if y.is_const and not x.is_const:
        return make("add", (y, x))
    if y.op == "neg":
        return make("sub", (x, y.inputs[0]))
    return None


def sub(inputs, attrs, shape):
    x, y = inputs
    if is_zero(y):
        return bcast(x, shape)
    if is_zero(x):
        return bcast(make("neg", (y,)), shape)
    if x is y:
        return const(S.Zero, shape)
    if y.op == "neg":
        return make("add", (x, y.inputs[0]))
    merged = _merge_wheres("sub", x, y, shape)
    return merged if merged is not None else _common_factor("sub", x, y, shape)


def mul(inputs, attrs, shape):
    x, y = inputs
    if is_zero(x) or is_zero(y):
        return const(S.Zero, shape)
    if is_one(x):
        return bcast(y, shape)
    if is_one(y):
        return bcast(x, shape)
    if y.is_const and not x.is_const:
        return make("mul", (y, x))
    if x.is_const and x.attrs["value"] == -1:
        return bcast(make("neg", (y,)), shape)
    if x.is_const and not x.shape and y.op == "mul" and y.inputs[0].is_const \
            and not y.inputs[0].shape:
        return make("mul", (const(x.attrs["value"] * y.inputs[0].attrs["value"]),
                            y.inputs[1]))
    if x.is_const and not x.shape and y.op == "neg":
        return make("mul", (const(-x.attrs["value"]), y.inputs[0]))
    if x.op == "neg" and y.op == "neg":
        return make("mul", (x.inputs[0], y.inputs[0]))
    return None


def div(inputs, attrs, shape):
    x, y = inputs
    if is_one(y):
        return bcast(x, shape)
    if is_zero(x):
        return const(S.Zero, shape)
    return None


def neg(inputs, attrs, shape):
    (x,) = inputs
    if x.op == "neg":
        return x.inputs[0]
    if x.op == "sub":
        return make("sub", (x.inputs[1], x.inputs[0]))
    scaled = _scaled(x)
    if scaled is not None:
        return make("mul", (const(-scaled[0]), scaled[1]))
    if x.op == "where" and (is_zero(x.inputs[1]) or is_zero(x.inputs[2])):
        c, a, b = x.inputs
        return make("where", (c, make("neg", (a,)), make("neg", (b,))))
    return None


def pow(inputs, attrs, shape):
    x, y = inputs
    if is_one(y):
        return bcast(x, shape)
    if is_zero(y) or is_one(x):
        return const(S.One, shape)
    if y.is_const and not y.shape and y.attrs["value"] == 2:
        return bcast(make("square", (x,)), shape)
    return None


def logical(absorbing):
    """x & False -> False, x & True -> x (and the same for | with True)."""
    def simplify(inputs, attrs, shape):
        for k, t in enumerate(inputs):
            if t.is_const:
                if bool(t.attrs["value"]) == absorbing:
                    return const(absorbing, shape)
                other = inputs[1 - k]
                if other.kind != "bool":   # x & True is the truth of x, not x
                    other = make("ne", (other, const(0)))
                return bcast(other, shape)
        return None
    return simplify


def same(inputs, attrs, shape):
    x, y = inputs
    return bcast(x, shape) if x is y else None


def relu_grad(inputs, attrs, shape):
    """relu_grad(0, x) is zeros. relu_grad(1, x) stays: the mask [x > 0] as a comparison
    would be 0 at a nan x, where torch's threshold_backward passes the gradient."""
    g, x = inputs
    if is_zero(g):
        return const(0, shape)
    return None


def where(inputs, attrs, shape):
    c, x, y = inputs
    if c.is_const:
        return bcast(x if c.attrs["value"] else y, shape)
    if x is y:
        return bcast(x, shape)
    scalar = scalar_fills("where", inputs, attrs, shape)
    if scalar is not None:
        return scalar
    if is_one(x) and is_zero(y) and not x.shape and not y.shape:
        return bcast(make("cast", (c,)), shape)
    if is_zero(x) and is_one(y) and not x.shape and not y.shape:
        return bcast(make("cast", (make("logical_not", (c,)),)), shape)
    return None


def cast(inputs, attrs, shape):
    (c,) = inputs
    if c.is_const:
        return const(S.One if c.attrs["value"] else S.Zero, shape)
    return None


def detach(inputs, attrs, shape):
    (x,) = inputs
    if x.op in ("const", "array", "detach"):
        return x
    return None


def reduction(kind):
    """sum and mean: over no axis the input itself, of a constant a constant."""
    def simplify(inputs, attrs, shape):
        (x,) = inputs
        if not attrs["axis"]:
            return x
        if x.is_const:
            value = x.attrs["value"]
            if kind == "sum":
                value = value * numel([x.shape[a] for a in attrs["axis"]])
            return const(value, shape)
        return None
    return simplify


def over_no_axes(op):
    """Reductions (extrema, products, log-sum-exp) over no axes are their input;
    ``op`` (such as abs) is applied first when given."""
    def simplify(inputs, attrs, shape):
        if attrs["axis"]:
            return None
        x = inputs[0]
        return make(op, (x,)) if op else x
    return simplify


def transpose(inputs, attrs, shape):
    (x,) = inputs
    axes = attrs["axes"]
    if axes == tuple(range(len(axes))):
        return x
    if x.is_const:
        return const(x.attrs["value"], shape)
    if x.op == "transpose":
        inner = x.attrs["axes"]
        composed = tuple(inner[a] for a in axes)
        return make("transpose", x.inputs, (("axes", composed),)) \
            if composed != tuple(range(len(composed))) else x.inputs[0]
    if axes == _last_two_swapped(len(axes)) and is_symmetric(x):
        return x
    return None


def reshape_like(inputs, attrs, shape):
    (x,) = inputs
    if shapes_equal(x.shape, shape):
        return x
    if x.is_const:
        return const(x.attrs["value"], shape)
    if x.op in ("reshape", "squeeze", "unsqueeze"):
        inner = x.inputs[0]
        if shapes_equal(inner.shape, shape):
            return inner
        return make("reshape", (inner,), (("shape", shape),))
    return None


def broadcast(inputs, attrs, shape):
    (x,) = inputs
    if shapes_equal(x.shape, shape):
        return x
    if x.is_const:
        return const(x.attrs["value"], shape)
    if x.op == "broadcast_to":
        return make("broadcast_to", x.inputs, (("shape", shape),))
    if x.op == "unsqueeze" and x.attrs["axis"] == 0:
        return make("broadcast_to", x.inputs, (("shape", shape),))
    return None


def matmul(inputs, attrs, shape):
    if any(is_zero(i) for i in inputs):
        return const(S.Zero, shape)
    x, y = inputs
    if x.op == "eye" and shapes_equal(y.shape, shape):
        return y
    if y.op == "eye" and shapes_equal(x.shape, shape):
        return x
    if len(x.shape) == 1 and len(y.shape) >= 2 and is_symmetric(y):
        return make("matmul", (y, x))   # xᵀS = (S x)ᵀ: one spelling, so S x + xᵀS is 2 S x
    return None


# ----- symmetry by construction ---------------------------------------------------------------
#
# A node is symmetric (in its last two axes) by construction when it is an input declared
# symmetric, a constant, the identity, or an op that keeps symmetry applied to symmetric
# operands: elementwise ops, inverses and matrix exponentials of symmetric matrices, A Aᵀ,
# Aᵀ A, R S Rᵀ, x xᵀ, G + Gᵀ, ... Its transpose is then itself (``transpose`` above), which
# is what makes (A + Aᵀ)/2 collapse to A, X⁻ᵀ read X⁻¹ and the symmetrisation of an already
# symmetric gradient vanish. Each node's answer is kept (weakly) once found, so asking is
# amortised constant time and never recursive.

_symmetric_memo: dict[int, tuple[weakref.ref, bool]] = {}


def _forget(ref, key):
    entry = _symmetric_memo.get(key)
    if entry is not None and entry[0] is ref:
        del _symmetric_memo[key]


def _last_two_swapped(rank):
    return tuple(range(rank - 2)) + (rank - 1, rank - 2) if rank >= 2 else None


def _swap_of(t, x):
    """Whether ``t`` is ``x`` with its last two axes exchanged."""
    return t.op == "transpose" and t.inputs[0] is x and \
        t.attrs["axes"] == _last_two_swapped(len(t.shape))


def _flat(t):
    """Whether ``t``, broadcast against a matrix, is constant along its last two axes."""
    return all(d == 1 for d in t.shape[-2:])


def _needs(node):
    """True or False when ``node``'s symmetry is decided by itself, else the list of nodes
    that must all be symmetric for it to be."""
    op, ins, shape = node.op, node.inputs, node.shape
    if len(shape) < 2 or not dims_equal(shape[-1], shape[-2]):
        return False
    if op == "symbol":
        return is_symmetric_leaf(node)
    if op in ("const", "eye", "diag"):
        return True
    if op == "outer":
        return ins[0] is ins[1] or _direction(ins[0]) == _direction(ins[1])
    if op in ("inverse", "matrix_exp"):
        return [ins[0]]
    if op == "matmul":
        return _product_needs(*ins)
    if op == "transpose":
        keeps = node.attrs["axes"][-2:]
        r = len(shape)
        return [ins[0]] if keeps in ((r - 2, r - 1), (r - 1, r - 2)) else False
    if op in ("sum", "mean"):
        r = len(ins[0].shape)
        return [ins[0]] if all(a < r - 2 for a in node.attrs["axis"]) else False
    if op == "broadcast_to" or OPS[op].pointwise:
        if op == "add" and (_swap_of(ins[1], ins[0]) or _swap_of(ins[0], ins[1])):
            return True     # G + Gᵀ
        need = []
        for t in ins:
            if _flat(t):
                continue
            if len(t.shape) < 2 or not dims_equal(t.shape[-1], shape[-1]) \
                    or not dims_equal(t.shape[-2], shape[-2]):
                return False
            need.append(t)
        return need
    return False


def _mirror(a, b):
    """True when a = bᵀ (or b = aᵀ), [a] when a is b (then a = bᵀ if a is symmetric),
    else False."""
    if _swap_of(b, a) or _swap_of(a, b):
        return True
    return [a] if a is b else False


def _product_needs(x, y):
    """Symmetric products: A Aᵀ, Aᵀ A, S S, and R M Rᵀ in either grouping (M symmetric)."""
    if len(x.shape) < 2 or len(y.shape) < 2:
        return False
    direct = _mirror(x, y)
    if direct is not False:
        return direct
    if x.op == "matmul" and len(x.inputs[0].shape) >= 2:        # (R M) Rᵀ
        outer_pair = _mirror(x.inputs[0], y)
        if outer_pair is not False:
            return [x.inputs[1]] + ([] if outer_pair is True else outer_pair)
    if y.op == "matmul" and len(y.inputs[1].shape) >= 2:        # R (M Rᵀ)
        outer_pair = _mirror(x, y.inputs[1])
        if outer_pair is not False:
            return [y.inputs[0]] + ([] if outer_pair is True else outer_pair)
    return False


def _direction(t):
    """A key equal for two vectors that are scalar multiples of one another by
    construction: c·u, −u, u − v against v − u, and the same linear map (solve(A, ·),
    A @ ·) applied to such vectors; so outer(a, b) is symmetric when the keys agree."""
    path = []
    while True:
        if t.op == "neg":
            t = t.inputs[0]
        elif t.op == "mul" and t.inputs[0].is_const and not t.inputs[0].shape:
            t = t.inputs[1]
        elif t.op == "mul" and t.inputs[1].is_const and not t.inputs[1].shape:
            t = t.inputs[0]
        elif t.op in ("solve", "matmul") and len(t.inputs[1].shape) == 1 \
                and len(t.inputs[0].shape) == 2:
            path.append((t.op, id(t.inputs[0])))
            t = t.inputs[1]
        elif t.op == "sub":
            return tuple(path) + (frozenset(map(id, t.inputs)),)
        else:
            return tuple(path) + (id(t),)


def is_symmetric(node):
    """Whether every matrix of ``node`` (..., n, n) equals its transpose by construction."""
    entry = _symmetric_memo.get(id(node))
    if entry is not None and entry[0]() is node:
        return entry[1]
    stack = [node]
    pending: dict[int, list] = {}
    while stack:
        t = stack[-1]
        entry = _symmetric_memo.get(id(t))
        if entry is not None and entry[0]() is t:
            stack.pop()
            continue
        need = pending.get(id(t))
        if need is None:
            need = _needs(t)
            if isinstance(need, bool):
                _remember(t, need)
                stack.pop()
                continue
            pending[id(t)] = need
        answer = True
        for n in need:
            known = _symmetric_memo.get(id(n))
            if known is None or known[0]() is not n:
                stack.append(n)
                answer = None
                break
            if not known[1]:
                answer = False
                break
        if answer is None:
            continue
        _remember(t, answer)
        stack.pop()
    return _symmetric_memo[id(node)][1]


def _remember(t, value):
    key = id(t)
    _symmetric_memo[key] = (weakref.ref(t, lambda ref, key=key: _forget(ref, key)), value)
