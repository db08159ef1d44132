"""The algebra of formulas: SymPy matrix expressions built tidily (products flattened
with scalars in front, transposes pushed inwards and cancelled, like terms collected,
broadcasts written with 𝟙, diag scalings kept diagonal), so a formula reads as a person
writes it. Pure SymPy: it knows no graph and no op (``views.formulas`` reads the graph).
"""
import sympy
from sympy import Lambda, Piecewise
from sympy.matrices.expressions import (
    HadamardProduct, Identity, Inverse, MatAdd, MatMul, MatrixExpr, MatrixSymbol, OneMatrix,
    Trace, Transpose, ZeroMatrix)
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction
from sympy.matrices.expressions.diagonal import DiagMatrix, DiagonalOf
from sympy.matrices.expressions.hadamard import HadamardPower
from .arrays import array_symbol

from ..core.shapes import numel, shapes_equal
from .forms import Diag, Diagonal, HadamardPow, OpCall, Ones, matrix_shape


def is_matrix(e):
    return isinstance(e, MatrixExpr)


def scalar(e):
    """A 1×1 matrix expression as the scalar it stands for."""
    if isinstance(e, MatrixExpr) and e.shape == (1, 1):
        if isinstance(e, sympy.MatrixBase):
            return e[0, 0]
        if isinstance(e, (Identity, OneMatrix)):
            return sympy.S.One
        if isinstance(e, ZeroMatrix):
            return sympy.S.Zero
        if isinstance(e, MatMul):
            c, fs = e.as_coeff_matrices()
            if c != 1:
                return c * scalar(mat(*fs)) if fs else c
            if len(fs) == 2 and isinstance(fs[0], OneMatrix) and isinstance(fs[1], DiagonalOf):
                return Trace(fs[1].arg)     # 𝟙ᵀ diag(A) is tr(A)
        return Trace(e)
    return e


def mat(*factors):
    """A matrix product (scalars among the factors become its coefficient), flattened,
    with numeric coefficients folded and identities dropped, never evaluated."""
    if not any(isinstance(f, MatrixExpr) for f in factors):
        return sympy.Mul(*factors)
    coeff, out = sympy.S.One, []
    for f in factors:
        if isinstance(f, MatMul):
            c, fs = f.as_coeff_matrices()
            coeff *= c
            out += fs
        elif isinstance(f, MatrixExpr):
            if isinstance(f, ZeroMatrix):
                return ZeroMatrix(*_product_shape(factors))
            if not isinstance(f, Identity) and not (isinstance(f, OneMatrix)
                                                     and f.shape == (1, 1)):
                out.append(f)
        else:
            coeff *= f
    if coeff == 0:
        return ZeroMatrix(*_product_shape(factors))
    coeff = exact(coeff)
    out = _contract_diagonals(out)
    if coeff.is_number and coeff.is_negative:
        for k, f in enumerate(out):
            if isinstance(f, MatAdd) and sum(_coeff_and_rest(a)[0].is_negative for a in
                                             f.args) * 2 >= len(f.args):
                out[k] = add(*[neg(a) for a in f.args])
                coeff = -coeff
                break
    coeff = _opposite_pairs(out, coeff)
    if coeff != 1 and coeff.is_Number and len(out) == 1 and isinstance(out[0], MatAdd) and all(
            _coeff_and_rest(a)[0] not in (1, -1) for a in out[0].args):
        return add(*[mat(coeff, a) for a in out[0].args])     # 2 (4 A + 2 B) is 8 A + 4 B
    for k, f in enumerate(out):
        if isinstance(f, MatAdd) and any(isinstance(a, Identity) for a in f.args) \
                and len(out) > 1:
            left, right = out[:k], out[k + 1:]
            return mat(coeff, add(*[mat(*left, a, *right) for a in f.args]))
    if not out:
        rows, cols = _product_shape(factors)
        return MatMul(coeff, Identity(rows)) if coeff != 1 else Identity(rows)
    if coeff == 1 and len(out) == 1:
        return out[0]
    return MatMul(coeff, *out) if coeff != 1 else MatMul(*out)


def exact(c):
    """A float that is an integer as the integer (SymPy's 1.0 is not its 1)."""
    if isinstance(c, sympy.Float) and float(c).is_integer():
        return sympy.Integer(int(c))
    return c


def _contract_diagonals(fs):
    """diag(v) 𝟙 is v and 𝟙ᵀ diag(v) is vᵀ (a diag scaling of the ones vector); 𝟙ᵀ(a ∘ b)
    of columns is aᵀb."""
    out = []
    for f in fs:
        prev = out[-1] if out else None
        if isinstance(f, DiagMatrix) and isinstance(prev, DiagMatrix):
            out[-1] = diag(hadamard(prev.args[0], f.args[0]))
            continue
        if isinstance(prev, OneMatrix) and prev.shape[0] == 1 and isinstance(f, HadamardPow) \
                and f.exp == 2 and f.base.shape[1] == 1:
            out[-1] = transpose(f.base)
            out.append(f.base)
            continue
        if isinstance(prev, OneMatrix) and prev.shape[0] == 1 and isinstance(
                f, HadamardProduct) and f.shape[1] == 1:
            a, rest = f.args[0], f.args[1:]
            out[-1] = transpose(a)
            out.append(rest[0] if len(rest) == 1 else HadamardProduct(*rest))
            continue
        if isinstance(prev, OneMatrix) and prev.shape[0] != 1 and prev.shape[1] != 1 \
                and isinstance(f, DiagMatrix):            # 𝟙𝟙ᵀ diag(v) is 𝟙 vᵀ
            out[-1] = ones(prev.shape[0], 1)
            out.append(transpose(f.args[0]))
            continue
        if isinstance(f, OneMatrix) and f.shape[0] != 1 and f.shape[1] != 1 \
                and isinstance(prev, DiagMatrix):         # diag(v) 𝟙𝟙ᵀ is v 𝟙ᵀ
            out[-1] = prev.args[0]
            out.append(ones(1, f.shape[1]))
            continue
        if isinstance(f, OneMatrix) and f.shape[1] == 1 and isinstance(prev, DiagMatrix):
            out[-1] = prev.args[0]
            continue
        if isinstance(f, DiagMatrix) and isinstance(prev, OneMatrix) and prev.shape[0] == 1:
            out[-1] = transpose(f.args[0])
            continue
        out.append(f)
    return out


def _opposite_pairs(fs, coeff):
    """A sum factor that is the negative of another (up to a transpose) is written as it,
    the sign going to the coefficient: (x − μ) (μ − x)ᵀ is −(x − μ) (x − μ)ᵀ. Edits ``fs``
    in place; returns the coefficient."""
    cores = [f.arg if isinstance(f, Transpose) else f for f in fs]
    for k, core in enumerate(cores):
        if not isinstance(core, MatAdd):
            continue
        flipped = MatAdd(*[neg(a) for a in core.args])
        for j, other in enumerate(cores):
            if j != k and isinstance(other, MatAdd) and set(flipped.args) == set(other.args):
                fs[k] = transpose(other) if isinstance(fs[k], Transpose) else other
                cores[k] = other
                coeff = -coeff
                break
    return coeff


def _product_shape(factors):
    ms = [f for f in factors if isinstance(f, MatrixExpr)]
    return ms[0].shape[0], ms[-1].shape[1]


def add(*terms):
    """A sum of matrices (zeros dropped) or of scalars."""
    ms = [t for t in terms if isinstance(t, MatrixExpr)]
    if not ms:
        return sympy.Add(*terms)
    flat = []
    for t in terms:
        flat += list(t.args) if isinstance(t, MatAdd) else [t]
    kept = [t for t in flat if not isinstance(t, ZeroMatrix)]
    if not kept:
        return ms[0]
    kept = _diagonals_joined(_collected(kept))
    if not kept:
        return ZeroMatrix(*ms[0].shape)
    if len(kept) == 2:
        common = _common_right_factor(*kept)
        if common is not None:
            return common
    if len(kept) == 1:
        return kept[0]
    coeffs = [_coeff_and_rest(t)[0] for t in kept]
    c = abs(coeffs[0])
    if c != 1 and c.is_number and all(abs(k) == c for k in coeffs):
        return mat(c, MatAdd(*[mat(exact(k / c), _coeff_and_rest(t)[1])
                               for k, t in zip(coeffs, kept)]))
    return MatAdd(*kept)


def _diagonals_joined(terms):
    """diag(u) − diag(v) is diag(u − v): the diagonal terms of a sum joined into one."""
    diagonals = [(k, _diagonal_of(t)) for k, t in enumerate(terms)]
    diagonals = [(k, d) for k, d in diagonals if d is not None]
    if len(diagonals) < 2:
        return terms
    joined = diag(add(*[mat(c, v) for _, (c, v) in diagonals]))
    first = diagonals[0][0]
    skip = {k for k, _ in diagonals}
    return [joined if k == first else t for k, t in enumerate(terms)
            if k == first or k not in skip]


def _coeff_and_rest(t):
    """(numeric coefficient, the rest) of a term: 2 A x is (2, A x)."""
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if c.is_number:
            return c, mat(*fs)
        num, rest = c.as_coeff_Mul()
        return num, mat(rest, *fs)
    return sympy.S.One, t


def _collected(terms):
    """Like terms added up: A + Aᵀ + A + Aᵀ is 2 A + 2 Aᵀ (in first-seen order)."""
    order, total = [], {}
    for t in terms:
        c, rest = _coeff_and_rest(t)
        if rest not in total:
            order.append(rest)
            total[rest] = sympy.S.Zero
        total[rest] += c
    return [mat(total[r], r) for r in order if total[r] != 0]


def _common_right_factor(a, b):
    """A x + B x as (A + B) x (and c A x + c B x as c (A + B) x), X A + X B as X (A + B)."""
    if not (isinstance(a, MatMul) and isinstance(b, MatMul)):
        return None
    ca, fa = a.as_coeff_matrices()
    cb, fb = b.as_coeff_matrices()
    if len(fa) < 2 or len(fb) < 2:
        return None
    if fa[-1] == fb[-1]:
        left_a, left_b = mat(ca, *fa[:-1]), mat(cb, *fb[:-1])
        return mat(add(left_a, left_b), fa[-1])
    if fa[0] == fb[0]:              # X A + X B as X (A + B)
        return mat(fa[0], add(mat(ca, *fa[1:]), mat(cb, *fb[1:])))
    return None


def _symmetric(t):
    """Whether ``t`` is its own transpose by its form (A + Aᵀ, X Xᵀ, diag(v), I)."""
    if isinstance(t, (Identity, DiagMatrix)):
        return True
    if isinstance(t, MatAdd):
        return all(_symmetric(a) for a in t.args) or \
            set(t.args) == {transpose(a) for a in t.args}
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        return list(fs) == [transpose(f) for f in reversed(fs)]
    return False


def scaled_ones(t):
    """c for c 𝟙 (an all-c array), else None."""
    if isinstance(t, OneMatrix):
        return sympy.S.One
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if len(fs) == 1 and isinstance(fs[0], OneMatrix):
            return c
    return None


def diagonal(t):
    """The diagonal of a square matrix as a column: of diag(v) it is v, of I it is 𝟙, of
    u vᵀ it is u ∘ v (of 𝟙 vᵀ, v), and it goes through sums and transposes."""
    if isinstance(t, DiagMatrix):
        return t.args[0]
    if isinstance(t, Identity):
        return ones(t.shape[0], 1)
    if isinstance(t, ZeroMatrix):
        return ZeroMatrix(t.shape[0], 1)
    if isinstance(t, Transpose):
        return diagonal(t.arg)
    if isinstance(t, MatAdd):
        return add(*[diagonal(a) for a in t.args])
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if len(fs) == 1:
            return mat(c, diagonal(fs[0]))
        if len(fs) == 2 and fs[0].shape[1] == 1:
            return mat(c, hadamard(fs[0], transpose(fs[1])))
    return Diagonal(t)


def diag(v):
    """diag(v) of a column v; diag(c 𝟙) is c I."""
    c = scaled_ones(v)
    if c is not None:
        return mat(c, Identity(v.shape[0]))
    return Diag(v)


def hadamard(a, b):
    """a ∘ b, with an all-c operand read as the scalar c ((c 𝟙) ∘ x = c x), powers of
    one base combined (x∘⁻¹ ∘ x∘⁻¹ = x∘⁻²) and a diagonal matrix scaled by a broadcast
    vector kept diagonal (diag(v) ∘ (𝟙 wᵀ) = diag(v ∘ w))."""
    for p, q in ((a, b), (b, a)):
        c = scaled_ones(p)
        if c is not None:
            return mat(c, q)
    for p, q in ((a, b), (b, a)):
        if isinstance(p, MatMul):
            c, fs = p.as_coeff_matrices()
            if c != 1 and len(fs) == 1:
                return mat(c, hadamard(fs[0], q))
    base_a, exp_a = _power_of(a)
    base_b, exp_b = _power_of(b)
    if base_a == base_b:
        return HadamardPow(base_a, exp_a + exp_b) if exp_a + exp_b != 1 else base_a
    for p, q in ((a, b), (b, a)):       # (u 𝟙ᵀ) ∘ (𝟙 vᵀ) is the outer product u vᵀ
        cu, u = _column_broadcast(p)
        cv, v = _row_broadcast(q)
        if u is not None and v is not None:
            return mat(cu * cv, u, v)
    for p, q in ((a, b), (b, a)):
        d = _diagonal_of(p)
        if d is not None:
            c, v = d
            w = _broadcast_vector(q)
            if w is not None:
                return mat(c, diag(hadamard(v, w)))
    parts = [f for t in (a, b) for f in (t.args if isinstance(t, HadamardProduct) else (t,))]
    return HadamardProduct(*sorted(parts, key=lambda f: isinstance(f, MatAdd)))


def _column_broadcast(t):
    """(c, u) for c u 𝟙ᵀ (a column repeated along the rows), else (None, None)."""
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if len(fs) == 2 and isinstance(fs[1], OneMatrix) and fs[1].shape[0] == 1 \
                and fs[0].shape[1] == 1:
            return c, fs[0]
    return None, None


def _row_broadcast(t):
    """(c, vᵀ) for c 𝟙 vᵀ (a row repeated down the columns), else (None, None)."""
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if len(fs) == 2 and isinstance(fs[0], OneMatrix) and fs[0].shape[1] == 1 \
                and fs[1].shape[0] == 1:
            return c, fs[1]
    return None, None


def _power_of(t):
    if isinstance(t, HadamardPower):
        return t.base, t.exp
    return t, sympy.S.One


def _diagonal_of(t):
    """(c, v) for c diag(v), else None."""
    if isinstance(t, DiagMatrix):
        return sympy.S.One, t.args[0]
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        if len(fs) == 1 and isinstance(fs[0], DiagMatrix):
            return c, fs[0].args[0]
    return None


def _broadcast_vector(t):
    """The column w of 𝟙 wᵀ or w 𝟙ᵀ (or of their elementwise powers), else None."""
    if isinstance(t, HadamardPower):
        w = _broadcast_vector(t.base)
        return HadamardPow(w, t.exp) if w is not None else None
    if isinstance(t, MatMul) and len(t.args) == 2:
        p, q = t.args
        if isinstance(p, OneMatrix) and p.shape[1] == 1:
            return transpose(q)
        if isinstance(q, OneMatrix) and q.shape[0] == 1:
            return p
    return None


def neg(t):
    return mat(-1, t) if is_matrix(t) else -t


def transpose(t):
    """Tᵀ with transposes cancelled and pushed into products: (Aᵀ)ᵀ = A, (AB)ᵀ = BᵀAᵀ."""
    if not is_matrix(t):
        return t
    if isinstance(t, Transpose):
        return t.arg
    if isinstance(t, Inverse):
        inner = transpose(t.arg)
        return Inverse(inner) if inner == t.arg or not isinstance(inner, Transpose) \
            else Transpose(t)
    if isinstance(t, (Identity, ZeroMatrix, OneMatrix, DiagMatrix)):
        return t.T
    if isinstance(t, MatMul):
        c, fs = t.as_coeff_matrices()
        return mat(c, *[transpose(f) for f in reversed(fs)])
    if isinstance(t, MatAdd):
        if _symmetric(t):
            return t
        terms = [transpose(a) for a in t.args]
        if all(isinstance(a, (Transpose, MatrixSymbol)) or _symmetric(a)
               or scaled_ones(a) is not None for a in t.args) or any(
                isinstance(a, Transpose) for a in t.args) and all(
                _plain_transpose(a, u) for a, u in zip(t.args, terms)):
            return MatAdd(*terms)
    if t.shape[0] == 1 and t.shape[1] == 1:
        return t
    return Transpose(t)


def _plain_transpose(a, u):
    """Whether ``u``, the transpose of ``a``, reads as plainly as ``a``: it is no
    transpose of a compound (Aᵀ, S⁻ᵀ and B Aᵀ are plain; (A B + C)ᵀ is not)."""
    if not isinstance(u, Transpose):
        return True
    return isinstance(u.arg, (MatrixSymbol, Inverse, OneMatrix)) or isinstance(a, Transpose)


def ones(rows, cols):
    return Ones(rows, cols)


_ELEMENT = sympy.Dummy("d", real=True, dummy_index=0)


def _dummy():
    """The variable of an elementwise function (one for all, so equal formulas compare
    equal)."""
    return _ELEMENT


def elementwise(fn, t):
    """``fn`` (scalar → scalar) applied to every element of ``t``."""
    if not is_matrix(t):
        return fn(t)
    d = _dummy()
    return ElementwiseApplyFunction(Lambda(d, fn(d)), t)


def excluding(e, cond):
    """``e`` where ``cond`` is known false: a Piecewise branch on the same condition
    (the guard torch's rules repeat) drops out."""
    if isinstance(e, Piecewise) and e.args[0].cond == cond:
        rest = e.args[1:]
        if len(rest) == 1 and rest[0].cond == sympy.true:
            return rest[0].expr
        return Piecewise(*[(p.expr, p.cond) for p in rest])
    return e


def symbol(name, shape, expr=None):
    """An input (or a named subterm) as a SymPy symbol of its shape."""
    if not shape:
        return expr if expr is not None else sympy.Symbol(name, real=True)
    if len(shape) <= 2:
        return MatrixSymbol(name, *matrix_shape(shape))
    return array_symbol()(name, tuple(sympy.sympify(d) for d in shape))


def filled(value, shape):
    """``value`` in every element of ``shape``: 0, c 𝟙, c 𝟙𝟙ᵀ, ..."""
    value = sympy.sympify(value)
    if not shape:
        return value
    if len(shape) > 2:
        return OpCall.of("const", [], {"value": value, "shape": tuple(shape)}, [], shape)
    if value == 0:
        return ZeroMatrix(*matrix_shape(shape))
    return filled_with(value, shape)


def filled_with(s, shape):
    """The scalar ``s`` broadcast to ``shape`` (at most two axes): s 𝟙, s 𝟙𝟙ᵀ."""
    rows, cols = matrix_shape(shape)
    if s == 0:
        return ZeroMatrix(rows, cols)
    return mat(s, ones(rows, cols)) if s != 1 else ones(rows, cols)


def broadcast(t, s, shape):
    """The formula ``t`` of graph shape ``s`` broadcast to ``shape``."""
    if shapes_equal(s, shape) or len(shape) == 0:
        return t
    if len(s) == 0 or numel(s) == 1 and all(d == 1 for d in s):
        return filled_with(scalar(t), shape)
    if len(shape) > 2:
        return OpCall.of("broadcast_to", [t], {"shape": tuple(shape)}, [s], shape)
    rows, cols = matrix_shape(shape)
    if len(shape) == 2:
        if len(s) == 1:
            return mat(ones(rows, 1), transpose(t))
        if s[0] == 1:
            return mat(ones(rows, 1), t)
        if s[1] == 1:
            return mat(t, ones(1, cols))
    return t


def fit(e, shape):
    """A reading as the kind of object ``shape`` asks for: a scalar for (), a column for
    (n,), the matrix for (r, c)."""
    if not shape:
        return scalar(e)
    if not is_matrix(e):
        return filled_with(e, shape)
    want = matrix_shape(shape)
    if e.shape != want and (e.shape[1], e.shape[0]) == want:
        return transpose(e)
    return e
