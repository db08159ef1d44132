"""SymPy classes for the ops that have none of their own (softmax, convolutions, gathers,
where, ...), so that every formula is a SymPy object SymPy can substitute into, print and
evaluate.

A formula is built from SymPy's matrix classes (``MatrixSymbol``, ``MatMul``, ``MatAdd``,
``Transpose``, ``HadamardProduct``, ``OneMatrix``, ...) wherever the op has one; an op
without one is an ``OpCall``: ``MatrixOpCall`` when its result is a vector (an n×1 column)
or a matrix, ``ScalarOpCall`` for a scalar, ``ArrayOpCall`` for three or more axes. Its
args are the op's name, its operands (formulas), its parameters (encoded as SymPy
objects) and the shapes of operands and result in the graph's dims, so ``subs`` reaches the
dims and ``xreplace`` the operands. At concrete sizes ``doit()`` computes it with the
op's per-element form (``OpDef.elements``, the same one ``explicit`` uses) and returns
SymPy's explicit objects (``ImmutableMatrix``, a scalar, ``ImmutableDenseNDimArray``).
"""
import functools
import re
import warnings

import numpy
import sympy
from sympy.printing.precedence import PRECEDENCE, precedence, precedence_traditional
from sympy.core.symbol import Str
from sympy.utilities.exceptions import SymPyDeprecationWarning
from sympy.matrices.expressions import HadamardPower, MatrixExpr, MatrixSymbol, OneMatrix
from .arrays import array_symbol
from sympy.matrices.expressions.diagonal import DiagMatrix, DiagonalOf

from ..core.opdef import PRECEDENCE as OP_PRECEDENCE
from ..core.opdef import OPS, OpBase, Operand, Param, decode, encode, script_base
from ..core.ops.elements import ElementContext


def float_text(value):
    """A float as a person writes it: 0.01, not the 0.010000000000000002 of its rounding
    (the shortest of 15 significant digits, which is what a float64 holds reliably)."""
    return repr(float(f"{float(value):.15g}"))


def matrix_shape(shape):
    """The matrix shape of a graph shape: a vector (n,) is an n×1 column."""
    if len(shape) == 1:
        return (sympy.sympify(shape[0]), sympy.S.One)
    return tuple(sympy.sympify(d) for d in shape)


def _encode_attrs(attrs):
    pairs = []
    for k, v in attrs.items():
        raw = isinstance(v, sympy.Basic)
        try:
            e = v if raw else encode(v)
            if not raw and (not isinstance(e, sympy.Basic) or not _same(decode(e), v)):
                raise TypeError
        except Exception:  # noqa: BLE001 - any value SymPy cannot hold stays opaque
            e = _Opaque.hold(v)
        dims = sorted(_free_symbols(v), key=str) if isinstance(e, _Opaque) else []
        pairs.append(sympy.Tuple(Str(k), e, sympy.Integer(int(raw)), sympy.Tuple(*dims)))
    return sympy.Tuple(*pairs)


def _free_symbols(v):
    if isinstance(v, sympy.Basic):
        return v.free_symbols
    if isinstance(v, (tuple, list)):
        return set().union(*[_free_symbols(t) for t in v]) if v else set()
    return set()


def _same(a, b):
    """Equal and of the same types all the way down (SymPy's Tuple equals a tuple)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


class _Opaque(Str):
    """A parameter SymPy cannot hold as an object of its own (a NumPy index array): a
    name for it, valid as long as a formula holding it is alive."""

    _values = {}

    @classmethod
    def hold(cls, value):
        key = f"<{type(value).__name__} #{id(value):x}>"
        cls._values[key] = value
        return cls(key)

    @property
    def value(self):
        return self._values[self.name]


def _decode_attrs(pairs):
    out = {}
    for k, v, raw, _ in pairs:
        out[k.name] = v.value if isinstance(v, _Opaque) else v if raw else decode(v)
    return out


def _attr_dims(pairs):
    """{dim symbol: its value now} for the dims inside opaque parameters, which ``subs``
    reaches through the symbols stored beside them."""
    out = {}
    for k, v, raw, now in pairs:
        if isinstance(v, _Opaque):
            out.update(zip(sorted(_free_symbols(v.value), key=str), now))
    return {d: n for d, n in out.items() if d != n}


class OpCall:
    """What the three OpCall classes share (see the module docstring)."""

    @classmethod
    def of(cls, op, operands, attrs, in_shapes, shape, display=""):
        """The call of ``op`` on ``operands`` as the class its result's rank asks for;
        ``display``: a name matrix notation writes it with, without parameters
        (``softmax(x)`` of a vector), or "" for the op's own spelling."""
        kind = ScalarOpCall if len(shape) == 0 else \
            MatrixOpCall if len(shape) <= 2 else ArrayOpCall
        return kind(Str(op), sympy.Tuple(*operands), _encode_attrs(attrs),
                    sympy.Tuple(*[sympy.Tuple(*s) for s in in_shapes]), sympy.Tuple(*shape),
                    Str(display or "_"))

    @property
    def display(self):
        name = self.args[5].name
        return "" if name == "_" else name

    @property
    def op(self):
        return self.args[0].name

    @property
    def operands(self):
        return tuple(self.args[1])

    @property
    def attrs(self):
        return _decode_attrs(self.args[2])

    @property
    def operand_shapes(self):
        return tuple(tuple(s) for s in self.args[3])

    @property
    def graph_shape(self):
        return tuple(self.args[4])

    def doit(self, **hints):
        operands = [o.doit(**hints) if hints.get("deep", True) and isinstance(o, sympy.Basic)
                    else o for o in self.operands]
        shape = self.graph_shape
        concrete = all(sympy.sympify(d).is_Integer for d in shape) and all(
            sympy.sympify(d).is_Integer for s in self.operand_shapes for d in s)
        if not concrete or not all(_explicit_ok(o) for o in operands):
            return self.func(self.args[0], sympy.Tuple(*operands), *self.args[2:])
        arrays = [_as_array(o, s) for o, s in zip(operands, self.operand_shapes)]
        out = compute_elements(self.op, self.attrs, tuple(int(d) for d in shape), arrays,
                               _attr_dims(self.args[2]))
        return from_array(numpy.asarray(out, dtype=object), shape)

    @property
    def precedence(self):
        """How tightly its text binds (SymPy's printers parenthesise by it)."""
        return _call_precedence(*self._precedence_key, "text")

    @property
    def latex_precedence(self):
        """How tightly its LaTeX binds (``views.latex.LatexPrecedence``)."""
        return _call_precedence(*self._precedence_key, "latex")

    @property
    def _precedence_key(self):
        return self.args[0], self.args[2], self.args[5], len(self.args[1])

    def _sympystr(self, printer):
        return spelled(self, printer, "text")

    def _latex(self, printer, exp=None):
        text = spelled(self, printer, "latex")
        return text if not exp else rf"\left({text}\right)^{{{exp}}}"


class MatrixOpCall(OpCall, MatrixExpr):
    """An op without a SymPy class whose result is a vector (n×1) or a matrix."""

    @property
    def shape(self):
        return matrix_shape(self.graph_shape)

    def _entry(self, i, j, **kwargs):
        from sympy.matrices.expressions.matexpr import MatrixElement
        return MatrixElement(self, i, j)

    def _eval_transpose(self):
        return None


class ScalarOpCall(OpCall, sympy.Expr):
    """An op without a SymPy class whose result is a scalar."""

    is_commutative = True


class ArrayOpCall(OpCall, sympy.Basic):
    """An op without a SymPy class whose result has three or more axes."""

    @property
    def shape(self):
        return self.graph_shape


@functools.lru_cache(maxsize=1024)
def _call_precedence(op, attrs, display, arity, target):
    """The precedence of an OpCall's spelling for ``target``: a call by name an atom,
    else its op's (``OpDef.precedence``, ``latex_precedence``), else that of the scalar
    form it is printed as (``_spelled_as_scalars``: x*y a product)."""
    call = PRECEDENCE["Func"] if target == "latex" else PRECEDENCE["Atom"]   # f(x)[0]
    if display.name != "_":
        return call
    opdef = OPS[op.name]
    if opdef.spell.get(target) is not None or opdef.spell.get("text") is not None:
        level = OP_PRECEDENCE[opdef.latex_precedence if target == "latex"
                              and opdef.spell.get(target) is not None else opdef.precedence]
        return call if level == PRECEDENCE["Func"] else level
    form = _scalar_form(op.name, _decode_attrs(attrs), arity)
    if form is None or isinstance(form, sympy.Function):
        return call
    return precedence_traditional(form) if target == "latex" else precedence(form)


def _scalar_form(op, attrs, arity):
    """The op's SymPy form over the marks OPERAND0MARK, ..., or None."""
    marks = [sympy.Symbol(f"OPERAND{k}MARK") for k in range(arity)]
    try:
        form = OPS[op].expr(attrs, marks)
    except Exception:  # noqa: BLE001 - no scalar form: a call of the op by name
        return None
    return form if isinstance(form, sympy.Basic) else None


def _explicit_ok(o):
    """Whether an operand is explicit enough to compute with element by element."""
    if isinstance(o, (sympy.MatrixBase, sympy.NDimArray)):
        return True
    if isinstance(o, MatrixExpr):
        return _concrete(o.shape) and not o.has(MatrixSymbol, array_symbol(), OpCall)
    if isinstance(o, (ArrayOpCall, array_symbol())):
        return False
    if not isinstance(o, sympy.Basic):
        return True
    from sympy.matrices.expressions.matexpr import MatrixElement
    elements = o.atoms(MatrixElement)       # q[0] of an input q: a scalar like any other
    if elements:
        o = o.xreplace({t: sympy.Dummy() for t in elements})
    return not o.has(MatrixExpr, OpCall)


def _as_array(o, shape):
    """An explicit operand as a NumPy object array of its graph ``shape``."""
    shape = tuple(int(d) for d in shape)
    if isinstance(o, MatrixExpr) and not isinstance(o, sympy.MatrixBase):
        o = o.as_explicit()
    if isinstance(o, sympy.MatrixBase):
        return numpy.array(list(o), dtype=object).reshape(shape)
    if isinstance(o, sympy.NDimArray):
        return numpy.array(flat(o), dtype=object).reshape(shape)
    return numpy.full(shape, o, dtype=object)


def _done(e):
    e = sympy.sympify(e)
    return e.doit() if isinstance(e, sympy.Basic) and not e.is_Atom else e


def flat(arr):
    """The elements of an explicit matrix or N-dim array, in row-major order."""
    if isinstance(arr, sympy.NDimArray):
        return list(numpy.array(arr.tolist(), dtype=object).ravel()) if arr.rank() else [arr[()]]
    return list(arr)


def from_array(arr, shape):
    """A NumPy object array as SymPy's explicit object of the graph ``shape`` (elements
    computed: a comparison of numbers is true or false). Boolean elements are kept (SymPy
    deprecates them in matrices, and says so in a warning this silences)."""
    elements = [_done(e) for e in arr.ravel()]
    if len(shape) == 0:
        return elements[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SymPyDeprecationWarning)
        if len(shape) <= 2:
            rows, cols = (int(d) for d in matrix_shape(shape))
            return sympy.ImmutableMatrix(rows, cols, elements)
        return sympy.ImmutableDenseNDimArray(elements, tuple(int(d) for d in shape))


def compute_elements(op, attrs, shape, arrays, dims=None):
    """``op`` on element arrays (NumPy object arrays of SymPy scalars), by its OpDef's
    element form, or element by element for a pointwise op."""
    opdef = OPS[op]
    if opdef.elements is not None:
        return opdef.elements(ElementContext(attrs, shape, dims or {}), *arrays)
    if opdef.pointwise:
        arrays = numpy.broadcast_arrays(*[numpy.asarray(a, dtype=object) for a in arrays])
        out = numpy.empty(arrays[0].shape if arrays else shape, dtype=object)
        for idx in numpy.ndindex(*out.shape):
            out[idx] = opdef.expr(attrs, [a[idx] for a in arrays])
        return out
    from ..errors import UnsupportedOpError
    raise UnsupportedOpError(f"op {op} has no per-element form, so its formula cannot be "
                             f"evaluated at concrete sizes; give its OpDef elements=... in "
                             f"{opdef.module}")


def spelled(call, printer, target):
    """An OpCall as ``printer`` writes it, from its op's spelling for ``target``; a
    pointwise op SymPy spells itself (x*y, Max(x, y)) prints as SymPy prints its scalar
    form, with the operands in place of scalars."""
    opdef = OPS[call.op]
    if call.display == "‖‖":
        inner = printer._print(call.operands[0])
        return rf"\left\lVert {inner} \right\rVert" if target == "latex" else f"‖{inner}‖"
    if call.display:
        args = ", ".join(printer._print(o) for o in call.operands)
        if target == "latex":
            name = call.display.replace("_", r"\_")
            return rf"\operatorname{{{name}}}\left({args}\right)"
        return f"{call.display}({args})"
    sp = opdef.spell.get(target) or opdef.spell.get("text")
    if sp is None:
        return _spelled_as_scalars(call, printer)
    fields = {name: Operand(printer, e) for name, e in zip(opdef.inputs or (), call.operands)}
    own = _own_params(call) if any(isinstance(v, _Opaque) for _, v, *_ in call.args[2]) \
        else {}
    fields.update({k.name: _OpaqueParam(printer, v, own.get(k.name))
                   if isinstance(v, _Opaque) else Param(printer, v)
                   for k, v, *_ in call.args[2]})
    return sp.render(fields)[0]


def _own_params(call):
    """The parameters as the op's own SymPy form encodes them ({name: SymPy object})."""
    marks = [sympy.Symbol(f"_operand{k}") for k in range(len(call.operands))]
    try:
        form = OPS[call.op].expr(call.attrs, marks)
    except Exception:  # noqa: BLE001 - no own form: parameters encoded generically
        return {}
    return dict(form.params) if isinstance(form, OpBase) else {}


class _OpaqueParam(Param):
    """A parameter held opaque (``_Opaque``) as a spelling reads it: ``value`` is the
    Python value, ``expr`` its SymPy encoding (as the op's own SymPy form holds it)."""

    __slots__ = ("_value",)

    def __init__(self, printer, opaque, expr=None):
        self._value = opaque.value
        if expr is None:
            try:
                expr = encode(self._value)
            except Exception:  # noqa: BLE001 - no SymPy form: printed as Python prints it
                expr = Str(str(self._value))
        super().__init__(printer, expr)

    @property
    def value(self):
        return self._value


def _spelled_as_scalars(call, printer):
    """The op as SymPy prints its scalar form with the operands in place of the scalars;
    in LaTeX, a product of arrays is written A \\circ B and a power A^{\\circ 2} (a
    juxtaposition A B is a matrix product), and a function of arrays \\exp(A)."""
    marks = [sympy.Symbol(f"OPERAND{k}MARK") for k in range(len(call.operands))]
    form = _scalar_form(call.op, call.attrs, len(call.operands))
    if form is None:
        return f"{call.op}({', '.join(printer._print(o) for o in call.operands)})"
    latex = getattr(printer, "printmethod", None) == "_latex"
    arrays = {m for m, s in zip(marks, call.operand_shapes) if len(s)}
    if latex and arrays:
        text = _hadamard_latex(form, dict(zip(marks, call.operands)), arrays, printer)
        if text is not None:
            return text
    elementwise = latex and bool(arrays) and hasattr(printer, "elementwise")
    if elementwise:
        printer.elementwise += 1
    try:
        text = printer._print(form)
    finally:
        if elementwise:
            printer.elementwise -= 1
    level = precedence_traditional(form) if latex else precedence(form)
    for k, (mark, operand) in enumerate(zip(marks, call.operands)):
        inner = printer._print(operand)
        own = _precedence_of(operand, latex)
        atomic = isinstance(form, sympy.Function) or own > level or \
            own == level and not form.has(-mark) or \
            isinstance(operand, sympy.Number) and operand >= 0
        if not atomic:
            inner = rf"\left({inner}\right)" if latex else f"({inner})"
        pattern = rf"(\\mathit{{)?OPERAND{k}MARK(}})?"
        text = re.sub(pattern + r"(?=\s*[\^_])", lambda _m: script_base(inner) if latex
                      else inner, text)
        text = re.sub(pattern, lambda _m: inner, text)
    return text


def _precedence_of(e, latex):
    own = getattr(e, "latex_precedence", None) if latex else None
    if isinstance(own, int):
        return own
    return precedence_traditional(e) if latex else precedence(e)


def _hadamard_latex(form, operands, arrays, printer):
    """A product of arrays as A \\circ B (a scalar factor in front, c A), an array to a
    power as A^{\\circ e}; None for other forms."""
    def base(m):
        return printer.parenthesize(operands[m], PRECEDENCE["Pow"], strict=True)
    if isinstance(form, sympy.Pow) and form.base in arrays and form.exp not in arrays:
        exp = operands.get(form.exp, form.exp)
        return rf"{script_base(base(form.base), '^')}^{{\circ {printer._print(exp)}}}"
    if not isinstance(form, sympy.Mul):
        return None
    sign, factors = ("- ", (-form).args) if form.could_extract_minus_sign() else ("", form.args)
    if not set(factors) <= set(operands) or len(arrays & set(factors)) < 2:
        return None
    scalars = [printer.parenthesize(operands[m], PRECEDENCE["Mul"], strict=True)
               for m in factors if m not in arrays]
    return sign + " ".join(scalars + [r" \circ ".join(base(m) for m in factors
                                                        if m in arrays)])


def _concrete(shape):
    return all(sympy.sympify(d).is_Integer for d in shape)


class Ones(OneMatrix):
    """SymPy's all-ones matrix 𝟙, made explicit by ``doit()`` at concrete sizes (so a
    formula evaluates with SymPy alone once its dims and inputs are substituted)."""

    def doit(self, **hints):
        if _concrete(self.shape):
            return sympy.ImmutableMatrix.ones(*(int(d) for d in self.shape))
        return self

    def _eval_transpose(self):
        return Ones(self.cols, self.rows)


class HadamardPow(HadamardPower):
    """SymPy's elementwise power x∘ᵉ, computed by ``doit()`` when its base is explicit."""

    def doit(self, **hints):
        base = self.base.doit(**hints) if hints.get("deep", True) else self.base
        exp = self.exp.doit(**hints) if hints.get("deep", True) else self.exp
        if isinstance(base, MatrixExpr) and not isinstance(base, sympy.MatrixBase) \
                and _concrete(base.shape) and not base.free_symbols - set(base.shape):
            base = base.as_explicit()
        if isinstance(base, sympy.MatrixBase):
            return base.applyfunc(lambda e: e ** exp)
        return HadamardPow(base, exp)


class Diag(DiagMatrix):
    """SymPy's diag(v) of a column v, computed by ``doit()`` when v is explicit."""

    def doit(self, **hints):
        v = self.args[0].doit(**hints) if hints.get("deep", True) else self.args[0]
        if isinstance(v, MatrixExpr) and not isinstance(v, sympy.MatrixBase) \
                and _concrete(v.shape) and not v.free_symbols - set(v.shape):
            v = v.as_explicit()
        if isinstance(v, sympy.MatrixBase):
            return sympy.ImmutableMatrix(sympy.diag(*list(v)))
        return Diag(v)


class Diagonal(DiagonalOf):
    """The diagonal of a square matrix as a column (SymPy's ``DiagonalOf``), computed by
    ``doit()`` when the matrix is explicit."""

    @property
    def shape(self):
        return (self.arg.shape[0], sympy.S.One)

    def doit(self, **hints):
        a = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        if isinstance(a, MatrixExpr) and not isinstance(a, sympy.MatrixBase) \
                and _concrete(a.shape) and not a.free_symbols - set(a.shape):
            a = a.as_explicit()
        if isinstance(a, sympy.MatrixBase):
            return sympy.ImmutableMatrix([a[i, i] for i in range(a.rows)])
        return Diagonal(a)

    def _entry(self, i, j, **kwargs):
        return self.arg._entry(i, i, **kwargs)


class Bracket(MatrixExpr):
    """The Iverson bracket [c] of an elementwise condition c: 1 where it holds, else 0."""

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
        return self.arg.shape

    def doit(self, **hints):
        c = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        if isinstance(c, sympy.MatrixBase):
            return c.applyfunc(lambda e: sympy.S.One if e == sympy.true else sympy.S.Zero
                               if e == sympy.false else sympy.Piecewise((1, e), (0, True)))
        return Bracket(c)

    def _entry(self, i, j, **kwargs):
        from sympy.matrices.expressions.matexpr import MatrixElement
        return MatrixElement(self, i, j)

    def _sympystr(self, printer):
        return f"[{printer._print(self.arg)}]"

    def _latex(self, printer):
        return rf"\left[{printer._print(self.arg)}\right]"

