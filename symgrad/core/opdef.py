"""The op registry: one ``OpDef`` per op, holding everything symgrad knows about it except
its derivative (which is data in ``rules/``).

An ``OpDef`` says what the op is: its operands and parameters, the shape and kind of its
result, its SymPy form, how each printer and backend spells it, how matrix notation and
per-element formulas read it, which torch callables map onto it, how it batches, and
whether it is differentiable. Everything else reads the registry: the rule loader
checks rules against it, printers and backends look spellings up in it, the views ask it
for forms, the torch front end maps torch names through it, and the coverage tests are
parametrised over it. None of them names an op, so adding one is one ``defop`` in its
family module (``core/ops/``) plus one entry in its rule file.

Spellings are small data (``Spelling``): a template such as ``"numpy.linalg.inv({x})"``
filled with the printed operands and parameters, or a function of them for the few ops
whose spelling depends on a parameter. Operands may ask to be parenthesised: ``{x:atom}``
(as an atom, for ``{x:atom}.T``), ``{x:mul}``, ``{x:pow}``, ``{x:add}`` (at that
operator's precedence).
"""
import re
import sys
from typing import Any, Callable, TypeVar

import sympy
from sympy.core.symbol import Str
from sympy.printing.precedence import PRECEDENCE as SYMPY_PRECEDENCE

from ..errors import ParameterError, RegistryError

TARGETS = ("text", "latex", "numpy", "torch", "math", "jax", "numpy_text")
# a target that may be missing, and the one it then falls back to
FALLBACKS = {"numpy_text": "numpy"}

OPS = {}         # op name -> OpDef
FUNCTIONS = {}   # public function name -> callable (sg.<name>), filled by the op families

# What ``defop`` and ``public`` decorate and give back unchanged (so it keeps its type).
FunctionT = TypeVar("FunctionT", bound=Callable[..., Any])

# SymPy's levels, and x @ y: Python's @ binds like * and groups left to right, so as a
# factor of a product (a*(W@x), printed at Mul's level, or at Add's when the product is
# negative) it needs parentheses, and as a term of a sum or a comparison it does not.
# An infix operator written at a product's level but not associative with it (x mod y,
# LaTeX's \bmod): a factor of a product or the base of a power needs parentheses, a term
# of a sum does not.
# A matrix product written by juxtaposition (LaTeX's A^{-1} b, x^{T} y): as a factor of a
# product it needs no parentheses (products associate), as a base of a power or a factor
# of a Hadamard product it does.
PRECEDENCE = dict(SYMPY_PRECEDENCE, MatMul=SYMPY_PRECEDENCE["Add"] - 1,
                  Mod=SYMPY_PRECEDENCE["Mul"] - 1, Product=SYMPY_PRECEDENCE["Mul"] + 1)


def _latex_tokens(text):
    """The top-level tokens of LaTeX ``text``: a {group}, a \\left...\\right pair, a
    command, a character (spaces skipped)."""
    tokens, i, n = [], 0, len(text)

    def command(j):                     # the end of the command starting at text[j] == "\\"
        k = j + 1
        while k < n and text[k].isalpha():
            k += 1
        return max(k, j + 2)

    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c == "{" or text.startswith("\\left", i) and not text[i + 5:i + 6].isalpha():
            j, depth = i, 0
            while j < n:
                if text[j] == "\\":
                    end = command(j)
                    word = text[j + 1:end]
                    depth += (word == "left") - (word == "right")
                    if word == "right" and depth == 0:
                        j = command(end) if text[end:end + 1] == "\\" else end + 1
                        break
                    j = end
                    continue
                if c == "{":
                    depth += (text[j] == "{") - (text[j] == "}")
                    if depth == 0:
                        j += 1
                        break
                j += 1
            tokens.append(text[i:j])
            i = j
        elif c == "\\":
            tokens.append(text[i:command(i)])
            i = command(i)
        else:
            tokens.append(c)
            i += 1
    return tokens


def ends_with_script(text, script="^_"):
    """Whether LaTeX ``text`` ends with a superscript or subscript (one of ``script``) at
    its top level (``A^{T}``, ``t_{1}``, ``e^{x}``; not ``\\left(A^{T}\\right)``): another
    script of the same kind on it would be a double superscript or subscript, which LaTeX,
    MathJax and KaTeX reject."""
    tokens = _latex_tokens(text)
    while len(tokens) >= 3 and tokens[-2] in ("^", "_"):
        if tokens[-2] in script:
            return True
        tokens = tokens[:-2]
    return False


def script_base(text, script="^_"):
    """LaTeX ``text`` ready for a script of a kind in ``script``: in parentheses when it
    already ends with one."""
    return rf"\left({text}\right)" if ends_with_script(text, script) else text


class Spelling:
    """How one printer or backend writes an op. ``form`` is a template (str) or a function
    of the named fields returning the text; ``helpers`` are definitions the text calls
    ({name: source}), emitted once before the generated function."""

    __slots__ = ("form", "helpers")

    def __init__(self, form, helpers=None):
        self.form = form
        self.helpers = dict(helpers or {})

    def render(self, fields):
        """(text, helpers): a function form may return (text, helpers) of its own."""
        if not callable(self.form):
            return self.form.format_map(fields), self.helpers
        out = self.form(**fields)
        if isinstance(out, tuple):
            return out[0], {**self.helpers, **out[1]}
        return out, self.helpers

    def __repr__(self):
        return f"Spelling({self.form!r})"


def spelling(value):
    """A Spelling from a template, a function, a (template, helpers) pair or a Spelling."""
    if value is None or isinstance(value, Spelling):
        return value
    if isinstance(value, tuple):
        return Spelling(*value)
    return Spelling(value)


def is_scalar_constant(e):
    """A number or an expression in dims (integer symbols): a Python scalar at run time,
    which code that needs a tensor (``torch.where``, an aten op) must first make one."""
    return e.is_number or bool(e.free_symbols) and all(s.is_integer for s in e.free_symbols)


def _operand_text(printer, expr, spec):
    """``expr`` as ``printer`` prints an operand, parenthesised at the precedence ``spec``
    names ("", "atom", "pow", "mul", "add"); a printer may override ``operand_text``."""
    own = getattr(printer, "operand_text", None)
    if own is not None:
        return own(expr, spec)
    level = PRECEDENCE_SPECS[spec]
    if level is None:
        return printer._print(expr)
    return printer.parenthesize(expr, PRECEDENCE[level], strict=level == "Atom")


def _param_text(printer, expr, spec):
    """A parameter as ``printer`` prints it: tuples as Python tuples, strings quoted
    (``{p:raw}``: as the printer prints the SymPy object); a printer may override
    ``param_text``."""
    own = getattr(printer, "param_text", None)
    if own is not None:
        return own(expr, spec)
    if spec == "raw":
        return printer._print(expr)
    if isinstance(expr, sympy.Tuple):
        items = [_param_text(printer, e, "") for e in expr]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if isinstance(expr, Str):
        return "None" if expr.name == "None" else repr(expr.name)
    if expr is sympy.true or expr is sympy.false:
        return str(bool(expr))
    return printer._print(expr)


PRECEDENCE_SPECS = {"": None, "atom": "Atom", "pow": "Pow", "mul": "Mul", "add": "Add"}


class Operand:
    """An operand in a spelling: formats as the printed operand, parenthesised at the
    precedence named by the format spec (``{x:atom}``, ``{x:mul}``, ...)."""

    __slots__ = ("printer", "expr")

    def __init__(self, printer, expr):
        self.printer = printer
        self.expr = expr

    def __format__(self, spec):
        return _operand_text(self.printer, self.expr, spec)

    def __str__(self):
        return _operand_text(self.printer, self.expr, "")

    @property
    def is_scalar(self):
        """A constant operand (a number, or dims), printed as a Python scalar."""
        return is_scalar_constant(self.expr)


class Param:
    """A parameter in a spelling: formats as the printer prints its SymPy form; ``value``
    is its Python value (a tuple, bool, int, str, ...)."""

    __slots__ = ("printer", "expr")

    def __init__(self, printer, expr):
        self.printer = printer
        self.expr = expr

    @property
    def value(self):
        return decode(self.expr)

    def __format__(self, spec):
        return _param_text(self.printer, self.expr, spec)

    def __str__(self):
        return _param_text(self.printer, self.expr, "")


def encode(value):
    """A parameter value as a SymPy object (the args of an op's SymPy form)."""
    if isinstance(value, sympy.Basic):
        return value
    if isinstance(value, bool):
        return sympy.true if value else sympy.false
    if isinstance(value, str):
        return Str(value)
    if isinstance(value, tuple):
        return sympy.Tuple(*[encode(v) for v in value])
    if value is None:
        return Str("None")
    return sympy.sympify(value)


def decode(expr):
    """The Python value of an encoded parameter."""
    if expr is sympy.true or expr is sympy.false:
        return bool(expr)
    if isinstance(expr, Str):
        return None if expr.name == "None" else expr.name
    if isinstance(expr, sympy.Tuple):
        return tuple(decode(e) for e in expr)
    if isinstance(expr, sympy.Integer):
        return int(expr)
    if isinstance(expr, sympy.Float):
        return float(expr)
    return expr


class OpBase(sympy.Function):
    """Base of the SymPy classes of symgrad's ops (SymPy's printers dispatch on it
    because its name ends in "Base"). A subclass belongs to one OpDef
    (``opdef``); its first ``opdef.arity`` args are operands, the rest the op's encoded
    parameters named by ``opdef.sympy_params``. Every printer spells it from the OpDef."""

    opdef = None

    @property
    def operands(self):
        return self.args[:self.opdef.arity]

    @property
    def params(self):
        """{name: encoded value} of the parameters among the args."""
        return dict(zip(self.opdef.sympy_params or (), self.args[self.opdef.arity:]))

    @property
    def precedence(self):
        """How tightly its text and code spelling binds (SymPy's printers parenthesise
        by it): a call binds like a function, ``x @ y`` like a product."""
        return PRECEDENCE[self.opdef.precedence]

    def _eval_evalf(self, prec):
        """A number for an elementwise op of numbers, computed by the op itself (the
        code its NumPy spelling compiles to, in float64), so SymPy can evaluate any
        formula at a point."""
        opdef = self.opdef
        if not opdef.pointwise or opdef.function is None or \
                not all(a.is_number for a in self.operands):
            return None
        try:
            value = opdef.function(*[float(a.evalf(prec)) for a in self.operands],
                                   **{k: decode(v) for k, v in self.params.items()})
            return sympy.Float(float(value), prec)
        except Exception:  # noqa: BLE001 - no value here: SymPy keeps it unevaluated
            return None

    def _sympystr(self, printer):
        """``str()`` of a formula, by SymPy's printers too: the op's text spelling."""
        return render(self, printer, "text")

    @property
    def latex_precedence(self):
        """How tightly its LaTeX spelling binds (symgrad's LaTeX printers parenthesise by
        it): ``x \\bmod y`` below a product, ``A^{-1} b`` like one."""
        return PRECEDENCE[self.opdef.latex_precedence]

    def _latex(self, printer, exp=None):
        text = render(self, printer, "latex")
        if not exp:
            return text
        if PRECEDENCE[self.opdef.latex_precedence] < PRECEDENCE["Func"]:
            text = rf"\left({text}\right)"
        return f"{script_base(text, '^')}^{{{exp}}}"


class ArrayOp(OpBase):
    """The SymPy form of an array op: a symbol among its args stands for a whole array."""


def render(expr, printer, target):
    """``expr`` (an OpBase) spelled for ``target`` by ``printer``; the spelling's helpers
    go to the printer's ``preamble`` when it keeps one."""
    opdef = type(expr).opdef
    sp = opdef.spelling(target)
    if sp is None:
        raise RegistryError(f"op {opdef.name} has no {target} spelling; give its OpDef "
                            f"{target}=... in {opdef.module}")
    fields = {name: Operand(printer, e) for name, e in zip(opdef.inputs, expr.operands)}
    fields.update({name: Param(printer, e) for name, e in expr.params.items()})
    text, helpers = sp.render(fields)
    if helpers:
        preamble = getattr(printer, "preamble", None)
        if preamble is not None:
            preamble.update(helpers)
    return text


def camel(name):
    return "".join(part.capitalize() for part in name.split("_"))


class OpDef:
    """One op's whole identity (see the module docstring). Built by ``defop``.

    name          the op's name in graphs, rules and errors
    inputs        operand names, as the rule file's signature names them
    params        normaliser: (op, operand shapes, **kwargs) -> ((name, value), ...)
    shape, kind   result shape and kind ("float" or "bool") rules
    sympy         (attrs, *operand exprs) -> SymPy expression; default: this op's OpBase
                  class (``sympy_class``) over the operands and ``sympy_params``
    spell         {target: Spelling} for "text", "latex", "numpy", "torch", "math", "jax",
                  "numpy_text" (JAX defaults to the NumPy spelling read as jax.numpy;
                  ``jax="host"`` runs the NumPy code on the host inside jit:
                  codegen.backends.jax; "numpy_text", the NumPy a person reads in
                  ``text("numpy")``, a shorter pure-NumPy form where the compiled code's
                  differs, defaults to the NumPy spelling: ``FALLBACKS``)
    precedence    how its text and code spelling binds, as ``PRECEDENCE`` names it: "Func"
                  for a call (the default), "MatMul" for ``x @ y``, "Atom" for ``x.T``
    latex_precedence  the same for its LaTeX spelling ("Pow" for ``x^{T}``)
    matrix        matrix notation: (m, node, *terms) -> SymPy formula (``views.formulas``' reader m)
    elements      per-element form for ``explicit``: (attrs, *arrays, dims) -> object array
    batch         batching rule for Jacobians: (node, inputs, size) -> batched node
    torch         torch callables that map onto the op, by dotted name
    differentiable  False: no rule is expected and no gradient flows through
    node_rule     each node carries its own rule in ``attrs["rule"]`` (``sg.Function``)
    pointwise     elementwise with NumPy broadcasting (printed inline, batched by
                  broadcasting, evaluated element by element)
    fresh         its code returns a new array (never a view of an operand)
    scatter       zeros(params["shape"]) with the operand written at params["index"]
    readonly      its code returns a read-only view (outputs are copied)
    view          its code may return a view of its operand (basic indexing, reshape,
                  transpose): an output that views an argument is copied
    bool_inputs   boolean operands stay boolean (others are cast to 0.0/1.0 first)
    augmented     its in-place form (``"+="``): code may accumulate into a fresh buffer
    exact_operands  operand positions whose integer constants code keeps as integers (an
                  exponent), where other integers are written as floats
    wrapper       its printed form merely wraps its operand (a transpose, a reshape, a sign,
                  a cast, a comparison): views inline it rather than name it
    simplify      (inputs, attrs, shape) -> an equivalent node or None, at construction
    bounds        (attrs, *operand intervals) -> (lo, hi), an interval holding every
                  finite element of the result (``core.structure.bounds``: code that
                  exploits a sign, a Gram matrix of nonnegative weights); None: unknown
    requires      (attrs, operand shapes) -> ((dim expression, what it says), ...): what
                  the op assumed of symbolic dims, each expression >= 0 for sizes it is
                  right at (x[3] of an (n,) array: n - 4 >= 0); code checks them on entry
    """

    def __init__(self, name, inputs, *, sympy=None, sympy_class=None, sympy_params=None,
                 params=None, shape=None, kind=None, simplify=None,
                 text=None, latex=None, numpy=None, torch=None, math=None, jax=None,
                 numpy_text=None, matrix=None,
                 elements=None, batch=None, torch_names=(), differentiable=True,
                 pointwise=False, fresh=False, scatter=False, readonly=False, view=False,
                 bool_inputs=False, wrapper=False, augmented=None, exact_operands=(),
                 node_rule=False, precedence="Func", latex_precedence=None, key_params=None,
                 bounds=None, requires=None, module=None, doc=""):
        self.name = name
        self.inputs = tuple(inputs) if inputs is not None else None
        self.nargs = len(self.inputs) if self.inputs is not None else None
        self.params_fn = params or no_params
        self.shape_fn = shape
        self.kind_fn = kind or float_kind
        self.sympy_fn = sympy
        self.sympy_params = sympy_params
        self.simplify = simplify
        self.spell = {t: spelling(s) for t, s in
                      zip(TARGETS, (text, latex, numpy, torch, math, jax, numpy_text))
                      if s is not None}
        self.matrix = matrix
        self.elements = elements
        self.batch = batch
        self.torch_names = tuple(torch_names)
        self.differentiable = differentiable
        self.pointwise = pointwise
        self.fresh = fresh
        self.scatter = scatter
        self.readonly = readonly
        self.view = view
        self.bool_inputs = bool_inputs
        self.wrapper = wrapper
        self.augmented = augmented
        self.exact_operands = tuple(exact_operands)
        self.node_rule = node_rule
        self.precedence = precedence
        self.latex_precedence = latex_precedence or precedence
        self.key_params = key_params
        self.bounds = bounds
        self.requires = requires
        self.module = module or "symgrad.core.ops"
        self.doc = doc
        self.function = None
        if isinstance(sympy, type) and issubclass(sympy, OpBase):
            sympy_class, self.sympy_fn = sympy, None
        if sympy_class is None and self.sympy_fn is None:
            body = {"opdef": self, "__module__": self.module,
                    "__doc__": doc or f"The SymPy form of the op {name}."}
            sympy_class = type(f"{camel(name)}Op", (ArrayOp,), body)
            module_globals = vars(sys.modules.get(self.module, sys.modules[__name__]))
            module_globals.setdefault(sympy_class.__name__, sympy_class)   # for pickle
        self.sympy_class = sympy_class
        if sympy_class is not None:
            sympy_class.opdef = self

    def spelling(self, target):
        """The Spelling for ``target``, or for the target it falls back to
        (``FALLBACKS``); None when there is neither."""
        sp = self.spell.get(target)
        while sp is None and target in FALLBACKS:
            target = FALLBACKS[target]
            sp = self.spell.get(target)
        return sp

    @property
    def arity(self):
        return len(self.inputs) if self.inputs is not None else None

    def shape(self, shapes, attrs):
        return self.shape_fn(self.name, shapes, attrs)

    def kind(self, inputs):
        return self.kind_fn(self.name, inputs)

    def params(self, shapes, kwargs):
        return self.params_fn(self.name, shapes, **kwargs)

    def expr(self, attrs, operands, shape=()):
        """This op applied to ``operands`` (SymPy expressions) with parameters ``attrs``;
        an array of ``shape`` whose form SymPy reduced to a number (x*y - x*y) stays an
        array of that number, so a printed formula keeps its shape."""
        if self.sympy_fn is not None:
            e = self.sympy_fn(attrs, *operands)
        else:
            if self.sympy_params is None:   # every parameter, in the normaliser's order
                self.sympy_params = tuple(attrs)
            e = self.sympy_class(*operands, *[encode(attrs[n]) for n in self.sympy_params])
        if shape and isinstance(e, sympy.Expr) and e.is_number and not e.has(OpBase):
            return OPS["const"].expr({"value": e, "shape": tuple(shape)}, ())
        return e

    def template_key(self, params):
        """The part of the parameters that decides how the op prints."""
        if self.key_params is None:
            return params
        return tuple((k, v) for k, v in params if k in self.key_params)

    def __repr__(self):
        return f"<OpDef {self.name}({', '.join(self.inputs or ('...',))})>"


def defop(name: str, inputs: Any, **kw: Any) -> Callable[[FunctionT], FunctionT]:
    """Register an OpDef; returns a decorator that records the op's public function
    (``sg.<name>``), so ``@defop(...)`` sits on the function that applies the op."""
    kw.setdefault("module", sys._getframe(1).f_globals.get("__name__"))
    if name in OPS:
        raise RegistryError(f"op {name} is defined twice ({OPS[name].module} and "
                            f"{kw['module']})")
    op = OPS[name] = OpDef(name, inputs, **kw)

    def record(fn: FunctionT) -> FunctionT:
        op.function = fn
        fn.opdef = op
        FUNCTIONS[name] = fn
        return fn
    return record


def public(fn: FunctionT) -> FunctionT:
    """Record a public function that is not an op of its own (``sg.stack``, ``sg.inv``)."""
    FUNCTIONS[fn.__name__] = fn
    return fn


# ----- default rules ---------------------------------------------------------------------

def no_params(op, shapes, **kwargs):
    if kwargs:
        raise ParameterError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")
    return ()


def same_bounds(attrs, a):
    """The bounds of an op that moves its operand's elements around (a reshape, a
    transpose, a broadcast): its operand's."""
    return a


def float_kind(op, inputs):
    return "float"


def bool_kind(op, inputs):
    return "bool"


def same_kind(op, inputs):
    return inputs[0].kind


def integer_kind(op, inputs):
    """"int" when every operand holds integers (an integer input, an integer constant):
    sums, products, slices and reshapes of ids stay ids; "float" otherwise."""
    for t in inputs:
        if t.kind == "int":
            break
    else:
        return "float"
    def integral(t):
        if t.kind == "int":
            return True
        value = t.attrs.get("value") if t.is_const else None
        return isinstance(value, sympy.Integer)
    ints = [integral(t) for t in inputs]
    return "int" if all(ints) and any(t.kind == "int" for t in inputs) else "float"
