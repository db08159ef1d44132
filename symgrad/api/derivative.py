"""What every derivative object shows: ``GradFn``, ``Jacobian`` and ``Hessian`` share
these views of their derivative graphs (closed-form formulas, text in matrix or NumPy
notation, LaTeX, the straight-line program, compiled functions and their source, and
per-element formulas)."""
from typing import Any, Callable

import numpy
import sympy

from ..codegen import compile_function, source
from ..codegen.rolled import compile_rolled, rolled_source
from ..core.build import is_symmetric_leaf
from ..core.constructors import zeros
from ..core.graph import Tensor
from ..core.program import Program
from ..core.shapes import dim_symbol, fmt_shape
from ..errors import ArgumentError
from ..views import explicit as _explicit
from ..views.latex import latex_expr
from ..views.numpy_text import numpy_block
from ..views.formulas import constants, filled, formulas, render
from ..views.verify import ViewReport, verify_views
from ..views.text import format_block, format_expr, program_lines, shape_note, shared_forms


class Block:
    """One result of a derivative view: its key in ``formulas``, its text and LaTeX
    labels, its graph node (None for a known zero) and its shape."""

    __slots__ = ("key", "label", "latex", "node", "shape")

    def __init__(self, key, label, latex, node, shape):
        self.key, self.label, self.latex, self.node, self.shape = key, label, latex, node, shape

    @property
    def filled(self):
        return self.node if self.node is not None else zeros(self.shape)


class DerivativeFn:
    """The views ``GradFn``, ``sg.jacobian`` and ``sg.hessian`` objects share: derivative
    graphs as closed-form formulas, text (matrix or NumPy notation), LaTeX, a
    straight-line program, compiled NumPy/torch functions and their source.

    A subclass sets ``name``, ``inputs`` (the traced parameters, in order), ``output``
    (the traced value, or None when there are several) and implements ``_blocks()``."""

    name: str
    inputs: list[Tensor]
    output: Tensor | None
    _compiled: dict[Any, Callable[..., Any]] | None = None

    def _blocks(self) -> list[Block]:
        raise NotImplementedError

    def _values(self):
        """[(label, node)] of the traced value(s) for ``program``."""
        return [(self.name, self.output)]

    # ----- formulas --------------------------------------------------------------------
    @property
    def formulas(self) -> dict[Any, sympy.Basic]:
        """{key: closed-form SymPy formula} (the key of a gradient is the input name).

        Formulas are SymPy's own objects: a vector input x of shape (n,) is
        ``MatrixSymbol("x", n, 1)``, a matrix one ``MatrixSymbol("A", m, n)``, a scalar a
        ``Symbol``; gradients are built from ``MatMul``, ``MatAdd``, ``Transpose``,
        ``HadamardProduct``, ``OneMatrix``, ``Inverse``, ... and, for ops SymPy has no
        class for, ``OpCall`` objects. ``f.subs({n: 3}).xreplace({x: ImmutableMatrix(...)})
        .doit()`` evaluates one with SymPy alone; a zero gradient is ``ZeroMatrix`` or 0."""
        blocks = self._blocks()
        forms = formulas([b.node for b in blocks])
        return {b.key: f if f is not None else filled(0, b.shape)
                for b, f in zip(blocks, forms)}

    @property
    def constants(self) -> dict[str, Any]:
        """{name: array} of the captured arrays the formulas show by name (a variable's
        name, ``Y``, or C₁, C₂, ... for a large unnamed one): what to substitute for them
        to evaluate a formula."""
        return constants([b.node for b in self._blocks()] + [v for _, v in self._values()])

    @property
    def value(self) -> Any:
        """Closed-form SymPy formula of the function itself (as ``formulas``)."""
        if self.output is None:
            raise ArgumentError(f"{self.name} has several outputs; each one's formula is in "
                                ".formulas")
        return formulas([self.output])[0]

    def _shared(self):
        reserved = {x.name for x in self.inputs}
        return shared_forms([b.filled for b in self._blocks()], reserved)

    def _matrix_view(self):
        """Matrix notation suits any derivative with an array in it; plain SymPy formulas
        (which SymPy simplifies) suit functions of scalars only."""
        return any(x.shape for x in self.inputs) or any(
            v is not None and v.shape for _, v in self._values())

    def _notation(self, notation):
        """"matrix", "numpy", or "sympy" (the default for functions of scalars: SymPy's
        formulas as SymPy prints them)."""
        if notation is None:
            return "matrix" if self._matrix_view() else "sympy"
        if notation not in ("matrix", "numpy"):
            raise ArgumentError(f"unknown notation {notation!r}; use 'matrix' or 'numpy'")
        return notation

    def _rendered(self, style):
        reserved = {x.name for x in self.inputs} | set(self.constants)
        return render([b.filled for b in self._blocks()], style, reserved)

    def __str__(self) -> str:
        return self.text()

    def text(self, notation: str | None = None) -> str:
        """The formulas as text: ``"matrix"`` (textbook: ᵀ, ∘, 𝟙, diag, with shared
        subterms named t₁, t₂, ...) or ``"numpy"``: one block of NumPy code to paste and
        run (``import numpy as np``, the dims bound from the inputs' shapes, shared
        subterms, then ``df_dx = ...`` per result; captured arrays by their names in
        ``constants``). By default matrix notation whenever arrays are involved, else
        SymPy's formulas as SymPy prints them."""
        blocks = self._blocks()
        style = self._notation(notation)
        if style == "numpy":
            return numpy_block([(b.label, b.node, b.shape) for b in blocks], self.inputs,
                               self.constants)
        if style == "matrix":
            outs, defs = self._rendered("text")
        else:
            exprs, named = self._shared()
            outs = [format_block(e) for e in exprs]
            defs = [(str(s), format_expr(e)) for s, e, _ in named]
        lines = [f"{b.label} = {o}{shape_note(b.shape)}" for b, o in zip(blocks, outs)]
        if defs:
            lines.append("  where")
            lines += [f"    {n} = {d}" for n, d in defs]
        return "\n".join(lines)

    def latex(self, notation: str | None = None) -> str:
        """LaTeX of all formulas (an ``aligned`` block): matrix notation (``"matrix"``,
        the default whenever arrays are involved) or SymPy's LaTeX of the closed forms
        (``"numpy"``, the default for functions of scalars)."""
        blocks = self._blocks()
        if self._notation(notation) == "matrix":
            outs, defs = self._rendered("latex")
        else:
            exprs, named = self._shared()
            outs = [latex_expr(e) for e in exprs]
            defs = [(latex_expr(s), latex_expr(e)) for s, e, _ in named]
        rows = [rf"{b.latex} &= {o}" for b, o in zip(blocks, outs)]
        rows += [rf"{n} &= {d}" for n, d in defs]
        return "\\begin{aligned}\n" + " \\\\\n".join(rows) + "\n\\end{aligned}"

    def _repr_latex_(self) -> str:
        return "$$" + self.latex() + "$$"

    def program(self) -> str:
        """The straight-line program: forward ops, then derivative ops, one per line."""
        outputs = self._values() + [(b.label, b.node) for b in self._blocks()]
        lines, _ = program_lines(outputs, self.inputs)
        head = "# inputs: " + ", ".join(
            f"{x.name}{fmt_shape(x.shape) if x.shape else ''}" for x in self.inputs)
        return "\n".join([head] + lines)

    def op_counts(self) -> tuple[int, int]:
        """(forward ops, forward+derivative ops) of the straight-line program."""
        values = [v for _, v in self._values()]
        fwd = len(Program(values, self.inputs).statements)
        total = len(Program(values + [b.node for b in self._blocks() if b.node is not None],
                            self.inputs).statements)
        return fwd, total

    # ----- code ------------------------------------------------------------------------
    def _func_name(self):
        base = self.name if self.name.isidentifier() else "f"
        return f"grad_{base}"

    def _with_value(self, with_value):
        if not with_value:
            return None
        if self.output is None:
            raise ArgumentError(f"{self.name} has several outputs; with_value=True needs one")
        return self.output

    def compile(self, backend: str = "numpy", with_value: bool = False) -> Callable[..., Any]:
        """A plain function of the same positional arguments as ``f`` returning the tuple
        of results (one per block, in order) or ``(value, results)``, running NumPy or
        torch code only."""
        if self._compiled is None:
            self._compiled = {}
        key = (backend, bool(with_value))
        fn = self._compiled.get(key)
        if fn is None:
            plan = self._rolled(backend)
            if plan is not None:
                fn = compile_rolled(plan, backend, self._func_name(),
                                    plan.value if with_value else None, self._zero_shapes())
            else:
                blocks = self._blocks()
                fn = compile_function(
                    [b.node for b in blocks], self.inputs, backend, self._func_name(),
                    with_value=self._with_value(with_value),
                    zero_shapes=[b.shape for b in blocks])
            self._compiled[key] = fn
        return fn

    def source(self, backend: str = "numpy", with_value: bool = False) -> str:
        """Standalone Python source of the compiled function (imports numpy/torch only)."""
        plan = self._rolled(backend)
        if plan is not None:
            self._with_value(with_value)
            src, _ = rolled_source(plan, backend, self._func_name(),
                                   plan.value if with_value else None, self._zero_shapes())
            return src
        blocks = self._blocks()
        return source([b.node for b in blocks], self.inputs, backend, self._func_name(),
                      with_value=self._with_value(with_value),
                      zero_shapes=[b.shape for b in blocks])

    def _rolled(self, backend):
        """The rolled gradient (``core.loops.RolledGradient``) that ``backend`` compiles
        instead of the straight-line program, or None."""
        return None

    def _zero_shapes(self):
        return [b.shape for b in self._blocks()]

    def _known_dims(self, given, what):
        """``given`` names only dims of the inputs (a misspelt one is an error)."""
        known = sorted({str(s) for x in self.inputs for d in x.shape
                        for s in getattr(sympy.sympify(d), "free_symbols", ())})
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ArgumentError(f"{what}: {', '.join(unknown)} is not a dim of {self.name}'s "
                                f"inputs (its dims: {', '.join(known) or 'none'})")

    def explicit(self, simplify: bool = True, **dims: int) -> dict[Any, Any]:
        """Per-element closed forms for concrete sizes: {key: SymPy array or expr}."""
        self._known_dims(dims, "explicit()")
        bound = {dim_symbol(k): int(v) for k, v in dims.items()}
        blocks = self._blocks()
        exprs = _explicit.explicit([b.filled for b in blocks], bound, simplify, self.inputs)
        return {b.key: e for b, e in zip(blocks, exprs)}

    def verify(self, seed: int = 0, rtol: float = 1e-7, atol: float = 1e-9,
               sample: Callable[[str, tuple[int, ...], Any], Any] | None = None,
               **sizes: int) -> ViewReport:
        """Evaluate the views a person reads against the compiled code, without torch:
        every formula (``formulas``, which text, matrix notation and LaTeX print) by SymPy
        alone and the per-element forms (``explicit``, when small), at random small sizes
        (2 to 4 per dim unless given, ``n=3``) and random inputs (standard normal, or
        ``sample(name, shape, rng)`` as in ``sg.check``, for a function with a domain such
        as a Cholesky factor's positive-definite matrices). Returns a report that is true
        when all agree and names each view that differs."""
        self._known_dims(sizes, "verify()")
        rng = numpy.random.default_rng(seed)
        dims: dict[Any, int] = {}
        for x in self.inputs:
            for d in x.shape:
                for s in getattr(sympy.sympify(d), "free_symbols", ()):
                    dims.setdefault(s, int(sizes.get(str(s), rng.integers(2, 5))))
        values: dict[Any, Any] = {}
        for x in self.inputs:
            shape = tuple(int(sympy.sympify(d).subs(dims)) for d in x.shape)
            if sample is not None:
                values[x.name] = numpy.asarray(sample(str(x.name), shape, rng))
            elif x.kind == "bool":
                values[x.name] = rng.random(shape) < 0.5
            elif x.kind == "int":
                values[x.name] = rng.integers(0, 2, shape)
            else:
                values[x.name] = rng.standard_normal(shape)
            if is_symmetric_leaf(x):
                values[x.name] = (values[x.name] + numpy.swapaxes(values[x.name], -1, -2)) / 2
        values.update(self.constants)
        blocks = self._blocks()
        compiled = _flattened(self.compile()(*[values[x.name] for x in self.inputs]))
        names = {str(d): v for d, v in dims.items()}
        rows = verify_views(blocks, self.inputs, [numpy.asarray(c) for c in compiled],
                            self.formulas, lambda: self.explicit(simplify=False, **names),
                            dims, values, rtol, atol)
        return ViewReport(rows, names)

    def explicit_value(self, simplify=True, **dims):
        bound = {dim_symbol(k): int(v) for k, v in dims.items()}
        (expr,) = _explicit.explicit([self.output], bound, simplify, self.inputs)
        return expr


def _flattened(results):
    """Compiled results as a flat list, in block order (a Hessian's come nested)."""
    if not isinstance(results, (tuple, list)):
        return [results]
    return [r for item in results for r in _flattened(item)]
