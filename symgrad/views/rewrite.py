"""Print forms: a formula rewritten into the form a person writes, and into the numerically
stable form where a formula spells one out by hand (issue 16, Build 4 and 9). Every view
prints the result: ``g.formulas`` holds it, matrix notation and LaTeX print it.

``tidy(expr)`` walks a formula once (memoised, so a formula that shares subterms costs its
number of distinct subterms) and

- reads each maximal elementwise region (sums, Hadamard products and powers, elementwise
  functions, scalar multiples and 𝟙 of one shape) as a scalar expression over the region's
  operands (its *leaves*: inputs, matrix products, calls), lets SymPy cancel it, and keeps
  the result when it prints shorter: (((y − 𝟙) ⊘ (𝟙 − σ(u)) − y ⊘ σ(u)) ∘ σ(u) ∘ (𝟙 − σ(u))
  is σ(u) − y;
- writes the stable forms (``views.stable``): softplus, σ, logsumexp, softmax, ‖x‖;
- drops a zero guard that cannot matter: {0 if ‖x‖ = 0; c} x is c x when c is finite at
  ‖x‖ = 0 (x is 0 there), and a guard repeated inside its own other branch;
- writes float exponents that are halves as rationals (x^0.5 is √x) and float
  coefficients that are integers as integers (1.0 A is A);
- (``views.written``) writes a small formula of concrete shape that reads through index
  and scatter calls out element by element.

Everything here is SymPy algebra on SymPy objects: a rewrite is an equality, and the tests
evaluate the rewritten formulas against the compiled gradient.
"""
import sympy
from sympy import Piecewise
from sympy.matrices.expressions import (
    HadamardProduct, Inverse, MatAdd, MatMul, MatrixExpr, OneMatrix, Trace, Transpose,
    ZeroMatrix)
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction
from sympy.matrices.expressions.diagonal import DiagMatrix
from sympy.matrices.expressions.hadamard import HadamardPower

from .algebra import add, diag, elementwise, hadamard, mat, transpose
from .forms import HadamardPow, OpCall, Ones
from .stable import bottom_up, softmax_product, stable

MAX_REGION = 60     # operations: a larger elementwise region is left as it is


# ----- scalars --------------------------------------------------------------------------

def _exact_numbers(e):
    """Float exponents that are halves as rationals, integral floats as integers."""
    def step(t):
        if isinstance(t, sympy.Float) and float(t).is_integer():
            return sympy.Integer(int(t))
        if isinstance(t, sympy.Pow) and isinstance(t.exp, sympy.Float) and \
                float(t.exp * 2).is_integer():
            return t.base ** sympy.Rational(int(t.exp * 2), 2)
        return t
    return bottom_up(e, step)


def _unguarded(e, defs=None):
    """A guard repeated inside its own branches drops out there: {0 if c; 2 {1 if c;
    1/r} r} is {0 if c; 2}, {2 {x if c; 0} if c; 0} is {2 x if c; 0}; so does a named subterm defined by such a
    guard ({0 if c; y/t2} with t2 = {1 if c; t1} is {0 if c; y/t1})."""
    def step(t):
        if not isinstance(t, Piecewise) or len(t.args) != 2 or t.args[1].cond != sympy.true:
            return t
        (a, c), (b, _) = t.args
        held = bottom_up(a, lambda p: p.args[0].expr if isinstance(p, Piecewise)
                         and p.args[0].cond == c else p)
        inner = bottom_up(b, lambda p: _rest(p) if isinstance(p, Piecewise)
                          and p.args[0].cond == c else p)
        if defs:
            inner = inner.xreplace({s: _rest(defs[s]) for s in inner.free_symbols
                                    if isinstance(defs.get(s), Piecewise)
                                    and defs[s].args[0].cond == c})
        return Piecewise((held, c), (inner, True)) if inner != b or held != a else t
    return bottom_up(e, step)


def _merged_guards(e):
    """Guards on one condition multiplied together are one guard:
    {0 if c; a} {0 if c; b} is {0 if c; a b}, {1 if c; 0} {0 if c; b} is 0."""
    def step(t):
        if not isinstance(t, sympy.Mul):
            return t
        groups = {}
        for f in t.args:
            if isinstance(f, Piecewise) and len(f.args) == 2 and f.args[1].cond == sympy.true:
                groups.setdefault(f.args[0].cond, []).append(f)
        merged = {c: fs for c, fs in groups.items() if len(fs) > 1}
        if not merged:
            return t
        gone = {f for fs in merged.values() for f in fs}
        rest = [f for f in t.args if f not in gone]
        for c, fs in merged.items():
            rest.append(Piecewise((sympy.Mul(*[f.args[0].expr for f in fs]), c),
                                  (sympy.Mul(*[f.args[1].expr for f in fs]), True)))
        return sympy.Mul(*rest)
    return bottom_up(e, step)


def _absorbed(e, defs=None):
    """A zero guard takes in the factors beside it when they are finite where it holds:
    {0 if ‖x‖ = 0; 1}/t₁³ with t₁ = {1 if ‖x‖ = 0; ‖x‖} is {0 if ‖x‖ = 0; 1/t₁³}."""
    def step(t):
        if not isinstance(t, sympy.Mul):
            return t
        for f in t.args:
            if isinstance(f, Piecewise) and len(f.args) == 2 and f.args[0].expr == 0 \
                    and f.args[1].cond == sympy.true:
                c = f.args[0].cond
                rest = sympy.Mul(*[g for g in t.args if g is not f])
                if _finite_where(rest, c, defs):
                    return Piecewise((0, c), (f.args[1].expr * rest, True))
        return t
    return bottom_up(e, step)


def _finite_where(e, c, defs):
    """Whether ``e`` is finite where ``c`` (an equation a = b) holds."""
    if not isinstance(c, sympy.Eq):
        return False
    at = {s: d.args[0].expr for s, d in (defs or {}).items()
          if isinstance(d, Piecewise) and d.args[0].cond == c}
    at[c.lhs] = c.rhs
    return bool(e.xreplace(at).is_finite)


def _rest(p):
    rest = p.args[1:]
    if len(rest) == 1 and rest[0].cond == sympy.true:
        return rest[0].expr
    return Piecewise(*[(q.expr, q.cond) for q in rest])


def tidy_scalar(e, inner=None, defs=None):
    """A scalar formula in its print form (``inner`` tidies the matrices inside; ``defs``:
    the definitions of the named subterms in it)."""
    if isinstance(e, sympy.Float) and float(e).is_integer():
        return sympy.Integer(int(e))
    if not isinstance(e, sympy.Basic) or not e.args:
        return e
    if inner is not None:
        e = _map_matrices(e, inner)
    e = _exact_numbers(e)
    e = _unguarded(_absorbed(_merged_guards(e), defs), defs)
    return stable(e, defs)


def _map_matrices(e, fn):
    """``e`` with ``fn`` applied to the outermost matrix expressions inside it."""
    memo = {}

    def walk(t):
        if isinstance(t, MatrixExpr):
            return fn(t)
        if not isinstance(t, sympy.Basic) or not t.args or isinstance(t, sympy.Lambda):
            return t
        out = memo.get(t)
        if out is None:
            if isinstance(t, OpCall):
                out = _with_operands(t, [walk(o) for o in t.operands])
            else:
                args = [walk(a) for a in t.args]
                out = t.func(*args) if any(a is not b for a, b in zip(args, t.args)) else t
            memo[t] = out
        return out
    return walk(e)


def _with_operands(call, operands):
    if all(a is b for a, b in zip(operands, call.operands)):
        return call
    return call.func(call.args[0], sympy.Tuple(*operands), *call.args[2:])


# ----- matrices -------------------------------------------------------------------------

def tidy(expr, defs=None):
    """``expr`` (a formula: a matrix expression or a scalar) in its print form; ``defs``
    ({symbol: formula}) are the named subterms in it, which the scalar rules see through."""
    return _Tidy(defs).walk(expr)


class _Tidy:
    def __init__(self, defs=None):
        self.memo = {}
        self.defs = defs

    def walk(self, e):
        if not isinstance(e, sympy.Basic):
            return e
        out = self.memo.get(e)
        if out is None:
            out = self._walk(e)
            self.memo[e] = out
        return out

    def _walk(self, e):
        if not isinstance(e, MatrixExpr):
            return tidy_scalar(e, self.walk, self.defs) if isinstance(e, sympy.Expr) else e
        if _elementwise(e):
            return self.region(e)
        if isinstance(e, OpCall):
            return _with_operands(e, [self.walk(o) for o in e.operands])
        if not e.args or isinstance(e, (sympy.MatrixBase, ElementwiseApplyFunction)):
            return e
        args = [self.walk(a) for a in e.args]
        if isinstance(e, MatMul):
            return _product(mat(*args))
        if isinstance(e, DiagMatrix):
            return diag(args[0])
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if isinstance(e, Transpose):
            return transpose(args[0])
        return e.func(*args)

    def region(self, e):
        """An elementwise region: as written (its leaves tidied) or as SymPy cancels its
        scalar reading, whichever prints shorter."""
        r = _Region(e.shape, self.walk)
        if not _worth_reading(e):
            return _product(r.rebuild(e))
        s = r.scalar(e)
        asis = r.rebuild(e)
        if r.size > MAX_REGION:
            return asis
        s = _exact_numbers(s)
        rewritten = stable(_unguarded(s))
        # (candidate, the share of the length as written it must stay under); SymPy's own
        # reading is tried only when it folded operands or numbers away (2 (2 u)⁻¹ is 1/u)
        candidates = [(rewritten, 1.0)] if rewritten != s else \
            [(s, 1.0)] if _weight(s, set(r.back)) < r.weight(e) else []
        if any(p.exp.is_negative and r.holds(p.base) for p in s.atoms(sympy.Pow)):
            # a division by an array to cancel (not by a dim: 2/(n − 1) stays)
            try:
                cancelled = sympy.cancel(s)
                candidates += [(stable(cancelled), 1.0), (stable(sympy.factor(cancelled)), 1.0)]
            except (sympy.PolynomialError, TypeError, ValueError):
                pass
        best, length = asis, None
        for c, share in candidates:
            m = r.matrix(c)
            if m is None:
                continue
            length = _length(best) if length is None else length
            if _length(m) < share * length:
                best, length = m, _length(m)
        return _product(best)


def _power(base, k):
    """base∘ᵏ, with a power of an elementwise power folded: (√x)∘⁻¹ is x∘^(−1/2)."""
    if isinstance(base, ElementwiseApplyFunction):
        (d,), body = base.function.variables, base.function.expr
        if isinstance(body, sympy.Pow) and body.base == d and body.exp.is_Number:
            return HadamardPow(base.expr, body.exp * k)
    return HadamardPow(base, k)


def _worth_reading(e):
    """Whether an elementwise region may read shorter as a scalar: it divides, takes an
    exp or a log, has a zero guard, or multiplies numbers (no SymPy object is built)."""
    numbers, stack, seen = 0, [e], set()
    while stack:
        t = stack.pop()
        if t in seen:
            continue
        seen.add(t)
        if isinstance(t, HadamardPower):
            if not (t.exp.is_Number and t.exp > 0):
                return True
            stack.append(t.base)
        elif isinstance(t, ElementwiseApplyFunction):
            if t.function.expr.has(sympy.exp, sympy.log, Piecewise, sympy.Pow):
                return True
            stack.append(t.expr)
        elif isinstance(t, (MatAdd, HadamardProduct)):
            stack.extend(t.args)
        elif isinstance(t, MatMul):
            c, fs = t.as_coeff_matrices()
            if c.has(Piecewise, sympy.exp, sympy.log):
                return True
            numbers += c.is_Number and abs(c) != 1 or c.is_Mul and c.args[0].is_Number
            if len(fs) == 1 and fs[0].shape == t.shape:
                stack.append(fs[0])
    return numbers >= 2


def _weight(s, leaves, memo=None):
    """The operands (``leaves``) and numbers other than ±1 in the scalar ``s``, counted as
    printed (a repeated subterm each time)."""
    if not isinstance(s, sympy.Basic):
        return 0
    if s in leaves or s.is_Number:
        return int(s in leaves or abs(s) != 1)
    if isinstance(s, OpCall):
        return 1
    memo = {} if memo is None else memo
    if s not in memo:
        memo[s] = sum(_weight(a, leaves, memo) for a in s.args)
    return memo[s]


def _length(e):
    from .matrix_print import matrix_text
    return len(matrix_text(e))


def _elementwise(e):
    """Whether ``e`` is an elementwise combination of operands of its shape."""
    if isinstance(e, (MatAdd, HadamardProduct, HadamardPower)):
        return True
    if isinstance(e, ElementwiseApplyFunction):
        return e.expr.shape == e.shape
    if isinstance(e, MatMul):
        c, fs = e.as_coeff_matrices()
        return len(fs) == 1 and fs[0].shape == e.shape and _elementwise(fs[0])
    return False


class _Region:
    """An elementwise region read as a scalar expression: each leaf (a matrix operand, or a
    scalar holding matrices, such as 𝟙ᵀx) stands as a real Dummy."""

    def __init__(self, shape, walk):
        self.shape, self.walk = shape, walk
        self.leaves, self.back, self.matrices = {}, {}, set()
        self.memo, self.rebuilt = {}, {}
        self.size = 0

    def leaf(self, t):
        d = self.leaves.get(t)
        if d is None:
            d = sympy.Dummy(f"u{len(self.leaves)}", real=True)
            self.leaves[t] = d
            self.back[d] = self.walk(t)
            if isinstance(t, MatrixExpr):
                self.matrices.add(d)
        return d

    def scalar(self, e):
        """The region ``e`` (a matrix of the region's shape) as a scalar expression."""
        out = self.memo.get(e)
        if out is None:
            self.size += 1
            out = self.memo[e] = self._scalar(e)
        return out

    def _scalar(self, e):
        if isinstance(e, ZeroMatrix):
            return sympy.S.Zero
        if isinstance(e, OneMatrix) and e.shape == self.shape:
            return sympy.S.One
        if isinstance(e, MatAdd):
            return sympy.Add(*[self.scalar(a) for a in e.args])
        if isinstance(e, HadamardProduct):
            return sympy.Mul(*[self.scalar(a) for a in e.args])
        if isinstance(e, HadamardPower):
            return sympy.Pow(self.scalar(e.base), self.coefficient(e.exp))
        if isinstance(e, ElementwiseApplyFunction) and e.expr.shape == e.shape:
            (d,), body = e.function.variables, e.function.expr
            return self.coefficient(body).xreplace({d: self.scalar(e.expr)})
        if isinstance(e, MatMul):
            c, fs = e.as_coeff_matrices()
            if len(fs) == 1 and fs[0].shape == e.shape:
                return self.coefficient(c) * self.scalar(fs[0])
        return self.leaf(e)

    def weight(self, e, memo=None):
        """How many operands and numbers (other than ±1) the region shows as written:
        SymPy's scalar reading is worth trying only when it folded some away."""
        memo = {} if memo is None else memo
        if e in memo:
            return memo[e]
        if e in self.leaves:
            out = 1
        elif isinstance(e, (MatAdd, HadamardProduct)):
            out = sum(self.weight(a, memo) for a in e.args)
        elif isinstance(e, HadamardPower):
            out = self.weight(e.base, memo) + _weight(e.exp, ())
        elif isinstance(e, ElementwiseApplyFunction):
            out = self.weight(e.expr, memo) + _weight(e.function.expr, ())
        elif isinstance(e, MatMul):
            c, fs = e.as_coeff_matrices()
            out = _weight(c, ()) + sum(self.weight(f, memo) for f in fs)
        else:
            out = 0
        memo[e] = out
        return out

    def rebuild(self, e):
        """The region as written, with its leaves tidied."""
        out = self.rebuilt.get(e)
        if out is not None:
            return out
        if e in self.leaves:
            out = self.back[self.leaves[e]]
        elif isinstance(e, MatAdd):
            out = add(*[self.rebuild(a) for a in e.args])
        elif isinstance(e, HadamardProduct):
            out = self.rebuild(e.args[0])
            for a in e.args[1:]:
                out = hadamard(out, self.rebuild(a))
        elif isinstance(e, HadamardPower):
            base, k = self.rebuild(e.base), self.walk(e.exp)
            c, fs = base.as_coeff_matrices() if isinstance(base, MatMul) else (1, [base])
            out = mat(c ** k, _power(fs[0], k)) if len(fs) == 1 else HadamardPow(base, k)
        elif isinstance(e, ElementwiseApplyFunction):
            inner = self.rebuild(e.expr)
            out = e if inner is e.expr else ElementwiseApplyFunction(e.function, inner)
        elif isinstance(e, MatMul) and len(e.as_coeff_matrices()[1]) == 1 and \
                e.as_coeff_matrices()[1][0].shape == e.shape:
            c, (f,) = e.as_coeff_matrices()
            out = _product(mat(self.walk(c), self.rebuild(f)))
        elif isinstance(e, (OneMatrix, ZeroMatrix)):
            out = e
        else:
            out = self.walk(e)
        self.rebuilt[e] = out
        return out

    def coefficient(self, c):
        """A scalar (a coefficient, an exponent, a function body) with the parts that hold
        matrices as leaves."""
        if not isinstance(c, sympy.Basic) or not c.has(MatrixExpr):
            return c
        if isinstance(c, (Trace, OpCall)) or not c.args or isinstance(c, MatrixExpr):
            return self.leaf(c)
        if isinstance(c, sympy.Expr) and not isinstance(c, (
                sympy.Add, sympy.Mul, sympy.Pow, Piecewise, sympy.Function)):
            return self.leaf(c)
        return c.func(*[self.coefficient(a) for a in c.args])

    def restore(self, s):
        return s.xreplace(self.back) if self.back else s

    def holds(self, s):
        return self.matrices & s.free_symbols

    def matrix(self, s):
        """The scalar expression ``s`` back as a matrix formula (None if it has no
        elementwise reading)."""
        held = self.holds(s)
        if not held:
            value = self.walk(self.restore(s))
            if value == 0:
                return ZeroMatrix(*self.shape)
            return mat(value, Ones(*self.shape))
        if s in self.matrices:
            return self.back[s]
        if isinstance(s, sympy.Add):
            terms = [self.matrix(a) for a in s.args]
            return None if None in terms else add(*terms)
        if isinstance(s, sympy.Mul):
            const = [a for a in s.args if not self.holds(a)]
            parts = [self.matrix(a) for a in s.args if self.holds(a)]
            if None in parts:
                return None
            parts.sort(key=lambda p: isinstance(p, MatAdd))     # σ(x) ∘ (𝟙 − σ(x))
            out = parts[0]
            for p in parts[1:]:
                out = hadamard(out, p)
            return mat(self.walk(self.restore(sympy.Mul(*const))), out)
        if isinstance(s, sympy.Pow) and not self.holds(s.exp):
            base = self.matrix(s.base)
            return None if base is None else HadamardPow(base, self.restore(s.exp))
        holding = [k for k, a in enumerate(s.args) if self.holds(a)]
        if isinstance(s, sympy.Function) and len(holding) == 1:
            k = holding[0]
            inner = self.matrix(s.args[k])
            if inner is None:
                return None
            args = [self.restore(a) if j != k else a for j, a in enumerate(s.args)]
            return elementwise(lambda d: s.func(*args[:k], d, *args[k + 1:]), inner)
        if len(held) == 1:
            (u,) = held
            return elementwise(lambda d: self.restore(s.xreplace({u: d})), self.back[u])
        return None


def _product(e):
    """A product in its print form (the rules below)."""
    return _unguarded_product(softmax_product(_cancelled_inverses(e)))


def _unguarded_product(e):
    """c {0 if ‖x‖ = 0; s} x is c s x when s is finite at ‖x‖ = 0: x is 0 there, so the
    guard cannot change the product."""
    if not isinstance(e, MatMul):
        return e
    c, fs = e.as_coeff_matrices()
    changed = False
    factors = list(sympy.Mul.make_args(c))
    for k, f in enumerate(factors):
        if not (isinstance(f, Piecewise) and len(f.args) == 2 and f.args[0].expr == 0
                and f.args[1].cond == sympy.true):
            continue
        cond, other = f.args[0].cond, f.args[1].expr
        if not isinstance(cond, sympy.Eq) or cond.rhs != 0:
            continue
        norm = cond.lhs
        if not (isinstance(norm, OpCall) and norm.display == "‖‖" and norm.operands
                and norm.operands[0] in fs):
            continue
        at_zero = other.xreplace({norm: sympy.S.Zero})
        if at_zero.is_finite:
            factors[k] = other
            changed = True
    return mat(sympy.Mul(*factors), *fs) if changed else e


def _cancelled_inverses(e):
    """A product through the inverse of a product of square matrices, (P Q R)⁻¹ =
    R⁻¹ Q⁻¹ P⁻¹, when a factor then cancels against its neighbour: Aᵀ (Bᵀ Xᵀ Aᵀ)⁻¹ Bᵀ is
    X⁻ᵀ for square A, B, X (the inverse exists only if each factor is invertible)."""
    if not isinstance(e, MatMul):
        return e
    c, fs = e.as_coeff_matrices()
    out, expanded = [], False
    for f in fs:
        parts = _inverse_factors(f)
        if parts is None:
            out.append(f)
        else:
            out += parts
            expanded = True
    if not expanded:
        return e
    kept = []
    for f in out:
        if kept and (kept[-1] == _inverse(f) or f == _inverse(kept[-1])):
            kept.pop()
        else:
            kept.append(f)
    if len(kept) >= len(fs):
        return e
    return mat(c, *kept) if kept else mat(c, sympy.Identity(e.shape[0]))


def _inverse_factors(f):
    """[R⁻¹, Q⁻¹, P⁻¹] for (P Q R)⁻¹ (or its transpose) of square factors, else None."""
    t = isinstance(f, Transpose)
    inner = f.arg if t else f
    if not isinstance(inner, Inverse) or not isinstance(inner.arg, MatMul):
        return None
    c, fs = inner.arg.as_coeff_matrices()
    if c != 1 or not all(g.is_square for g in fs):
        return None
    parts = [_inverse(g) for g in reversed(fs)]
    return [transpose(p) for p in reversed(parts)] if t else parts


def _inverse(f):
    """f⁻¹ with (Aᵀ)⁻¹ written A⁻ᵀ and (A⁻¹)⁻¹ written A."""
    if isinstance(f, Inverse):
        return f.arg
    if isinstance(f, Transpose) and isinstance(f.arg, Inverse):
        return transpose(f.arg.arg)
    if isinstance(f, Transpose):
        return transpose(Inverse(f.arg))
    return Inverse(f)
