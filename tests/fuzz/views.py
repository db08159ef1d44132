"""An independent numerical evaluator of symgrad's printed views, for the differential
fuzzer: it reads what a user reads and checks that it computes what the compiled code
computes, so a printing bug (a dropped broadcast, a wrong precedence, swapped arguments,
missing parentheses, a name NumPy lacks) shows up as a numerical disagreement or an error.

Views checked:

* ``g.text("numpy")``: a block of NumPy code, run as it is (``evaluate_numpy_block``):
  parsed and executed by Python with builtins whose ``__import__`` gives NumPy and math
  only, in a namespace holding nothing but the input arrays, bound to the names its
  ``# inputs:`` comment gives, and the captured arrays its ``# C = g.constants[...]``
  comments name. Each result is the variable assigned on a line commented
  ``# <label>, shape <shape>``. No symgrad function is available to it: a name NumPy does
  not have is an error of the view.
* ``g.program()``: the straight-line program ``v0 = ...``, ``<f> = vK``, ``d<f>/d<x> = vJ``,
  in symgrad's own notation, evaluated line by line (below);
* ``g.formulas``: SymPy matrix expressions evaluated by SymPy alone;
* ``g.explicit(**dims)``: per-element SymPy forms, through ``sympy.lambdify``.

The program's right-hand sides are parsed with ``ast.parse(..., mode="eval")`` and
evaluated by ``eval`` with no builtins (only ``__import__``, which torch's C operators
need), on float64 torch tensors, in a namespace of the inputs, the dims, the temporaries
evaluated so far and a table of functions for every name the text printer emits; a name
outside the namespace is reported before evaluation. symgrad's code generation is never
asked to compile a printed formula as a whole (that is what is being checked): the table
calls one op at a time — an sg op on torch tensors computes eagerly, running that op's own
torch spelling — or a small hand-written torch function.

``explicit`` is evaluated in float64 (``sympy.lambdify`` with NumPy; symgrad's scalar
SymPy classes by their ops' sg functions); elements that overflow there (the textbook
softmax of logits near 800) are evaluated again with mpmath at 50 digits.

The function table of the program view (``text_functions()``):

* every public function of the op registry (``symgrad.core.opdef.FUNCTIONS``: ``sum``,
  ``softmax``, ``reshape``, ``inv``, ``concatenate``, ...), whose names are the names the
  text spellings print;
* the SymPy-printed names of the elementwise ops (``Max``, ``Min``, ``Abs``, ``Eq``, ``Ne``,
  ``exp``, ``atan2``, ``float`` (cast), ...), found by printing each parameterless
  elementwise op of the registry on placeholder operands with symgrad's formula printer
  and reading the called name off the parse tree; ``Max``/``Min`` may print with more than
  two arguments and are folded pairwise;
* hand-written (``HAND_WRITTEN``): the spellings that are not a call of a public function
  (``scatter``, ``ones``, ``full``, ``eye`` (``sg.eye`` builds a symbolic leaf)), SymPy's
  integer functions of dims (``ceiling``, ``floor``, ``Mod``) and constants (``E``, ``pi``,
  ``oo``, ``nan``).

Printed forms of the program that are not Python are rewritten before parsing: the index
of ``scatter(g, shape, [1:, :3])`` becomes ``_IX[1:, :3]``, captured constant arrays print
as list literals (wrapped into tensors) or, when large, as ``C₁``-style names (not
identifiers: renamed and bound to the array of that graph node).

``compare_views`` compares every view with ``g.compile("numpy")`` and returns problem
strings; a view that cannot be evaluated (an unknown name, a syntax error) is a problem,
never a silent skip. ``evaluate_explicit`` returns None (a documented skip) when the graph
is too large for SymPy's per-element forms to be cheap.
"""
import ast
import builtins
import functools
import io
import math
import re
import tokenize
import warnings

import numpy as np
import sympy
import torch

from symgrad.core.graph import topo_order   # (imports symgrad: every layer is loaded)
from symgrad.core.opdef import FUNCTIONS, OPS, OpBase
from symgrad.views.text import format_expr

from .edges import concrete as concrete_shape  # noqa: F401 (also for test_views)


class ViewError(Exception):
    """A view could not be evaluated (unknown name, unparsable text, bad line)."""


# Names the printers can emit that this evaluator deliberately does not evaluate, with the
# reason. Any other unknown name is reported as a problem.
UNEVALUABLE = {
    "zoo": "SymPy's complex infinity has no real value; NumPy/torch code computes a signed "
           "inf or nan there, so no value of it can be compared",
    "I": "the imaginary unit: symgrad's gradients are real, a formula printing it has no "
         "real value to compare",
}

# ``explicit`` builds per-element SymPy forms, which costs time superlinear in the graph:
# larger graphs are skipped (``evaluate_explicit`` returns None).
MAX_EXPLICIT_NODES = 80        # nodes of the gradient graphs
MAX_EXPLICIT_ELEMENTS = 64     # elements of all inputs together
MAX_EXPLICIT_MATRIX = 4        # largest n of an n x n inverse/solve/det of an input (of
                               # other matrices: 2); SymPy's cholesky of a 4x4 takes ~50 s:
MAX_EXPLICIT_CHOLESKY = 3
MAX_EXPLICIT_TREE = 60_000     # nodes of the per-element forms as trees
_MATRIX_OPS = {"inverse", "solve", "det", "logdet", "logabsdet", "cholesky"}
# the decompositions (core/ops/decomp.py): explicit writes their elements as opaque functions
_OPAQUE_OPS = {"solve_triangular", "eigh_values", "eigh_vectors", "svd_u", "svd_s", "svd_vh",
               "qr_q", "qr_r", "matrix_exp"}


# ----- values: everything the formulas compute on is a float64 (or bool) torch tensor ----

def _tensor(a):
    """An operand as a torch tensor: floats as float64, booleans as bool."""
    if isinstance(a, torch.Tensor):
        if a.is_floating_point() and a.dtype != torch.float64:
            return a.to(torch.float64)
        return a
    if isinstance(a, (bool, np.bool_)):
        return torch.tensor(bool(a))
    if isinstance(a, (int, float, np.integer, np.floating)):
        return torch.tensor(float(a), dtype=torch.float64)
    if isinstance(a, np.ndarray):
        return torch.from_numpy(np.array(a, dtype=bool if a.dtype == bool else np.float64))
    return a


def _result(out):
    if isinstance(out, tuple):
        return tuple(_result(o) for o in out)
    if isinstance(out, (torch.Tensor, np.ndarray, np.generic)):
        return _tensor(np.asarray(out) if not isinstance(out, torch.Tensor) else out)
    return out


def _is_number(a):
    return isinstance(a, (int, float)) and not isinstance(a, bool)


def op_caller(fn, arity, fold=False):
    """``fn`` (an sg function) called on torch tensors: its first ``arity`` positional
    arguments (the operands) become tensors, the rest (parameters) pass unchanged; with
    ``fold`` more operands than ``arity`` are folded pairwise (SymPy's ``Max(a, b, c)``)."""
    def call(*args, **kwargs):
        if fold and len(args) > arity:
            return functools.reduce(lambda a, b: call(a, b, **kwargs), args)
        n = 1 if arity is None else arity     # public functions: inv(x), concatenate((x, y))
        args = [_tensor(a) if i < n else a for i, a in enumerate(args)]
        return _result(fn(*args, **kwargs))
    call.__name__ = getattr(fn, "__name__", "op")
    return call


def _int_aware(sympy_name, python_fn, fn):
    """SymPy functions that also print in dim expressions (shapes, slice bounds):
    computed in Python when every argument is an int, elementwise otherwise."""
    def call(*args, **kwargs):
        if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return python_fn(*args)
        return fn(*args, **kwargs)
    call.__name__ = sympy_name
    return call


# ----- hand-written functions --------------------------------------------------------------

def _shape(shape):
    return tuple(int(d) for d in (shape if isinstance(shape, tuple) else (shape,)))


def _ones(shape):
    return torch.ones(_shape(shape), dtype=torch.float64)


def _zeros(shape):
    return torch.zeros(_shape(shape), dtype=torch.float64)


def _full(shape, value):
    return torch.full(_shape(shape), float(value), dtype=torch.float64)


def _eye(n):
    return torch.eye(int(n), dtype=torch.float64)


def _scatter(g, shape, index):
    """``scatter(g, shape, [index])``: zeros of ``shape`` with ``g`` written at ``index``."""
    out = torch.zeros(_shape(shape), dtype=torch.float64)
    out[index] = _tensor(g)
    return out


class _Index:
    """``_IX[1:, 2]`` is the key ``(slice(1, None), 2)``: scatter's printed index."""

    def __getitem__(self, key):
        return key


def _array(value):
    """A list literal: a small captured constant array."""
    arr = np.asarray(value)
    return _tensor(arr if arr.dtype == bool else arr.astype(np.float64))


def _elementwise_or_python(torch_fn, python_fn):
    def call(x):
        if _is_number(x):
            return python_fn(x)
        return torch_fn(_tensor(x))
    return call


def _mod(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return torch.remainder(_tensor(a), _tensor(b))


HAND_WRITTEN = {
    "scatter": _scatter,                  # index_scatter prints a NumPy-like index
    "ones": _ones,                        # const: a filled array prints zeros/ones/full
    "zeros": _zeros,
    "full": _full,
    "eye": _eye,                          # sg.eye builds a symbolic leaf, never a value
    "ceiling": _elementwise_or_python(torch.ceil, math.ceil),   # slice lengths of dims
    "floor": _elementwise_or_python(torch.floor, math.floor),
    "Mod": _mod,
    "_IX": _Index(),
    "_array": _array,
}

CONSTANTS = {"E": math.e, "pi": math.pi, "oo": math.inf, "nan": math.nan}


# ----- the function table, from the op registry ---------------------------------------------

def _placeholders(n):
    return [sympy.Symbol(f"sgview{i}") for i in range(n)]


def _printed_call(opdef):
    """``name`` when ``opdef`` prints as ``name(operand, ...)`` with its operands in
    order, read off the parse tree of its printed SymPy form; else None."""
    if not opdef.pointwise or not opdef.arity:
        return None
    try:
        params = opdef.params([()] * opdef.arity, {})
        expr = opdef.expr(dict(params), _placeholders(opdef.arity))
        tree = ast.parse(format_expr(expr), mode="eval").body
    except Exception:  # noqa: BLE001 - an op needing parameters (clamp) prints otherwise
        return None
    holes = [f"sgview{i}" for i in range(opdef.arity)]
    if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and not tree.keywords
            and [getattr(a, "id", None) for a in tree.args] == holes):
        return tree.func.id
    return None


@functools.lru_cache(maxsize=None)
def registry_printed_names():
    """{printed name: op name} of the elementwise ops whose printed form is a plain call
    (``Max`` -> maximum, ``Eq`` -> eq, ``float`` -> cast, ``exp`` -> exp)."""
    out = {}
    for name, opdef in OPS.items():
        printed = _printed_call(opdef)
        if printed is not None:
            if printed in out and out[printed] != name:
                raise AssertionError(f"{printed} prints for both {out[printed]} and {name}")
            out[printed] = name
    return out


@functools.lru_cache(maxsize=None)
def text_functions():
    """{name: callable} for every function name the text printer emits."""
    table = {}
    for name, fn in FUNCTIONS.items():
        opdef = getattr(fn, "opdef", None)
        table[name] = op_caller(fn, opdef.arity if opdef is not None else None)
    for printed, op in registry_printed_names().items():
        opdef = OPS[op]
        if printed in FUNCTIONS and FUNCTIONS[printed] is not opdef.function:
            raise AssertionError(f"{printed} prints op {op} but names sg.{printed}")
        caller = op_caller(opdef.function, opdef.arity, fold=opdef.arity == 2
                           and printed in ("Max", "Min"))
        if printed in ("Max", "Min", "Abs"):
            caller = _int_aware(printed, {"Max": max, "Min": min, "Abs": abs}[printed], caller)
        table[printed] = caller
    table.update(HAND_WRITTEN)
    return table


# ----- parsing and evaluating one formula -------------------------------------------------

_SUBSCRIPT_DIGITS = str.maketrans("₀₁₂₃₄₅₆₇₈₉", "0123456789")
_ARRAY_NAME = re.compile(r"C([₀₁₂₃₄₅₆₇₈₉]+)")
_SCATTER = re.compile(r"(?<![\w.])scatter\(")


def _rewrite_scatter(text):
    """``scatter(g, shape, [index])`` -> ``scatter(g, shape, _IX[index])`` (nested too)."""
    holes = []
    for m in _SCATTER.finditer(text):
        depth, commas = 0, 0
        for i in range(m.end(), len(text)):
            c = text[i]
            if c in "([{":
                if depth == 0 and commas == 2 and c == "[":
                    holes.append(i)
                    break
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                commas += 1
    for i in sorted(holes, reverse=True):
        text = text[:i] + "_IX" + text[i:]
    return text


class _Lists(ast.NodeTransformer):
    """List literals (small constant arrays) become ``_array([...])``."""

    def visit_List(self, node):
        self.generic_visit(node)
        return ast.copy_location(ast.Call(func=ast.Name("_array", ast.Load()),
                                          args=[node], keywords=[]), node)


def parse(text):
    """The parse tree of one printed right-hand side (rewritten into Python)."""
    src = _ARRAY_NAME.sub(lambda m: "_C" + m.group(1).translate(_SUBSCRIPT_DIGITS), text)
    src = _rewrite_scatter(src)
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise ViewError(f"cannot parse {text!r}: {e.msg}") from None
    tree = ast.fix_missing_locations(_Lists().visit(tree))
    return tree


def _check_names(tree, namespace, text):
    unknown = sorted({n.id for n in ast.walk(tree)
                      if isinstance(n, ast.Name) and n.id not in namespace})
    if unknown:
        why = [f"{n} ({UNEVALUABLE[n]})" for n in unknown if n in UNEVALUABLE]
        raise ViewError(f"unknown name(s) {', '.join(unknown)} in {text!r}"
                        + (f"; not evaluable: {'; '.join(why)}" if why else ""))
    attrs = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} - {"T"})
    if attrs:
        raise ViewError(f"unknown attribute(s) {', '.join(attrs)} in {text!r}")


# No builtins but ``__import__``: some of torch's C operators (``&`` of bool tensors)
# import torch through the calling frame's builtins. Printed text cannot reach it: every
# name in a formula must be in the namespace (``_check_names``).
_EVAL_BUILTINS = {"__import__": __import__}


def evaluate_formula(text, namespace):
    """The value of one printed formula in ``namespace``."""
    tree = parse(text)
    _check_names(tree, namespace, text)
    code = compile(tree, "<printed view>", "eval")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return eval(code, {"__builtins__": _EVAL_BUILTINS}, namespace)  # noqa: S307


def _is_literal(text):
    """The whole formula is a number (a known zero prints as ``0``, shape dropped)."""
    try:
        return isinstance(ast.literal_eval(text.strip()), (int, float))
    except (ValueError, SyntaxError):
        return False


# ----- namespaces ------------------------------------------------------------------------

def _graph(g):
    outs = [n for n in list(g.grads) + [getattr(g, "output", None)] if n is not None]
    return topo_order(outs)


def _array_constants(g):
    """{``_C<k>``: tensor} for the captured arrays printing as ``C<k>``, and {name:
    tensor} for those printing by the name of the variable that held them."""
    out = {}
    for node in _graph(g):
        if node.is_array:
            name = str(node.expr.name).translate(_SUBSCRIPT_DIGITS)
            value = _tensor(np.asarray(node.attrs["value"].array))
            if "name" in node.attrs:
                out[node.attrs["name"]] = value
            elif name.startswith("C"):
                out["_" + name] = value
    return out


def namespace(g, args, dims):
    """Functions, constants, dims and inputs (float64 torch tensors); later entries win."""
    if len(args) != len(g.inputs):
        raise ViewError(f"{len(args)} arrays for {len(g.inputs)} inputs")
    ns = dict(text_functions())
    ns.update(CONSTANTS)
    ns.update(_array_constants(g))
    ns.update({k: int(v) for k, v in dims.items()})
    for x, a in zip(g.inputs, args):
        a = np.asarray(a, dtype=np.float64)
        want = concrete_shape(x.shape, dims)
        if a.shape != want:
            raise ViewError(f"input {x.name}: array of shape {a.shape}, expected {want}")
        ns[x.name] = torch.from_numpy(a.copy())
    return ns


def _to_numpy(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _output(value, text, shape, label):
    """A gradient's value as a float64 array of ``shape``: a printed number broadcasts
    (a known zero), anything else must have the right shape itself."""
    arr = _to_numpy(value)
    if arr.dtype == bool:
        raise ViewError(f"{label} is boolean: {text!r}")
    arr = arr.astype(np.float64)
    if arr.shape != shape:
        if arr.shape == () and _is_literal(text):
            return np.broadcast_to(arr, shape).copy()
        raise ViewError(f"{label} has shape {arr.shape}, expected {shape}: {text!r}")
    return arr


_LINE = re.compile(r"^(\S+) = (.*)$")


def _labels(g):
    """{printed label: input name} of the wrt inputs (``df/dx`` -> ``x``)."""
    return {f"d{g.name}/d{x.name}": x.name for x in g.wrt}


def _shapes(g, dims):
    return {x.name: concrete_shape(x.shape, dims) for x in g.wrt}


# ----- the NumPy text view -------------------------------------------------------------------

# The block imports what it uses; these are all it may import (a helper's optional import
# of anything else, such as SciPy, fails as if it were not installed).
ALLOWED_MODULES = ("numpy", "math")
_INPUTS = re.compile(r"^# inputs: ([A-Za-z_][\w, ]*?)(?: \(|$)")
_CONSTANT = re.compile(r"^# ([A-Za-z_]\w*) = g\.constants\[('(?:[^'\\]|\\.)*'|"
                       r"\"(?:[^\"\\]|\\.)*\")\]")
_RESULT = re.compile(r"^# (.*), shape (\(.*\))$")


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.partition(".")[0] not in ALLOWED_MODULES:
        raise ImportError(f"the NumPy text imports {name!r}; only {ALLOWED_MODULES} are "
                          "available to it")
    return __import__(name, globals, locals, fromlist, level)


def _comments(text):
    """{line number: comment text} of ``text`` (Python source), read by its tokenizer."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError) as e:
        raise ViewError(f"cannot tokenize the NumPy text: {e}") from None
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def _input_value(x, a):
    """An input as the NumPy text expects it: a float64 array (a NumPy float64 for a
    scalar), int64 or bool arrays for integer and boolean inputs."""
    dtype = {"int": np.int64, "bool": bool}.get(x.kind, np.float64)
    a = np.array(a, dtype=dtype)
    return a if a.ndim else a[()]


def run_numpy_block(text, args, constants=None):
    """Execute ``text`` (in the format of ``text("numpy")``) as a Python program with
    NumPy and math only: the arrays ``args`` are bound to the names of its ``# inputs:``
    comment, in that order, the arrays named by its ``# C = g.constants[key]`` comments to
    ``constants[key]``. Returns {label: (value, shape)} of the lines commented
    ``# <label>, shape <shape>`` (their variable after the block ran, and the shape note
    evaluated in the block's namespace)."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise ViewError(f"the NumPy text is not Python: {e.msg} at line {e.lineno}: "
                        f"{(e.text or '').strip()!r}") from None
    comments = _comments(text)
    constants = constants or {}
    ns = {"__builtins__": dict(vars(builtins), __import__=_import)}
    names = None
    for line in comments.values():
        m = _INPUTS.match(line)
        if m:
            names = [n.strip() for n in m.group(1).split(",")] if m.group(1) != "none" else []
        m = _CONSTANT.match(line)
        if m:
            key = ast.literal_eval(m.group(2))
            if key not in constants:
                raise ViewError(f"{line!r}: g.constants has no key {key!r} "
                                f"(keys {sorted(constants)})")
            ns[m.group(1)] = np.array(constants[key])
    if names is None:
        raise ViewError("no '# inputs: ...' comment naming the inputs")
    if len(names) != len(args):
        raise ViewError(f"'# inputs:' names {names}, for {len(args)} arrays")
    ns.update(zip(names, args))
    results = {}
    for node in tree.body:
        m = _RESULT.match(comments.get(node.end_lineno, ""))
        if m is None:
            continue
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            raise ViewError(f"line {node.lineno}: a result comment on a line that does not "
                            "assign one name")
        if m.group(1) in results:
            raise ViewError(f"two lines for {m.group(1)}")
        results[m.group(1)] = (node.targets[0].id, m.group(2))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        exec(compile(tree, "<g.text('numpy')>", "exec"), ns)  # noqa: S102 - the view under test
    out = {}
    for label, (var, note) in results.items():
        noted = eval(compile(ast.parse(note, mode="eval"), "<shape note>", "eval"), ns)  # noqa: S307
        out[label] = (ns[var], tuple(noted))
    return out


def evaluate_numpy_block(text, g, args, dims):
    """{input name: array} computed by running ``text`` (in the format of
    ``g.text("numpy")``) with ``run_numpy_block``: one result line per derivative, its
    shape note and its value of the input's shape."""
    labels, shapes = _labels(g), _shapes(g, dims)
    results = run_numpy_block(text, [_input_value(x, a) for x, a in zip(g.inputs, args)],
                              g.constants)
    unexpected = sorted(set(results) - set(labels))
    if unexpected:
        raise ViewError(f"unexpected label(s) {unexpected} (expected {sorted(labels)})")
    missing = sorted(set(labels) - set(results))
    if missing:
        raise ViewError(f"no line for {', '.join(missing)}")
    got = {}
    for label, (value, noted) in results.items():
        key = labels[label]
        shape = shapes[key]
        if noted != shape:
            raise ViewError(f"{label}: the shape note of its comment, {noted}, is not the "
                            f"input's shape {shape}")
        value = np.asarray(value)
        if value.dtype == bool:
            raise ViewError(f"{label} is boolean")
        if value.shape != shape:
            raise ViewError(f"{label} has shape {value.shape}, expected {shape}")
        got[key] = value.astype(np.float64)
    return got


def evaluate_numpy_text(g, args, dims):
    """{input name: NumPy array} computed by running ``g.text("numpy")`` with NumPy."""
    return evaluate_numpy_block(g.text("numpy"), g, args, dims)


# ----- the program view ----------------------------------------------------------------------

def evaluate_program_text(text, g, args, dims):
    """({input name: array}, value) computed from ``text`` in the format of
    ``g.program()``."""
    ns = namespace(g, args, dims)
    labels, shapes = _labels(g), _shapes(g, dims)
    got, value = {}, None
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            raise ViewError(f"cannot read line {line!r}")
        name, rhs = m.groups()
        if re.fullmatch(r"v\d+", name):
            ns[name] = evaluate_formula(rhs, ns)
        elif name == g.name:
            value = _output(evaluate_formula(rhs, ns), rhs, (), name)
        elif name in labels:
            key = labels[name]
            got[key] = _output(evaluate_formula(rhs, ns), rhs, shapes[key], name)
        else:
            raise ViewError(f"unexpected label {name!r} in {line!r}")
    missing = sorted(set(labels.values()) - set(got))
    if missing:
        raise ViewError(f"no line for the gradient w.r.t. {', '.join(missing)}")
    if value is None and getattr(g, "output", None) is not None:
        raise ViewError(f"no line for the value {g.name}")
    return got, value


def evaluate_program(g, args, dims):
    """{input name: NumPy array} evaluated from ``g.program()``."""
    return evaluate_program_text(g.program(), g, args, dims)[0]


# ----- the explicit view ---------------------------------------------------------------------

def _element_names(name, shape):
    """The names ``explicit`` may give the elements of input ``name`` (symgrad's
    ``views.explicit.element_names``): ``x`` (a scalar), ``x_01`` (all dims < 11),
    ``x_1_12`` (a dim > 10), or ``x[0, 1]`` when those are taken."""
    wide = any(d > 10 for d in shape)
    out = []
    for idx in np.ndindex(*shape):
        if not idx:
            out.append((idx, [name]))
            continue
        under = f"{name}_{'_'.join(map(str, idx)) if wide else ''.join(map(str, idx))}"
        out.append((idx, [under, f"{name}[{', '.join(map(str, idx))}]"]))
    return out


def _element_values(g, args, dims):
    """{element symbol name: value}; a name two inputs could both mean maps to None."""
    exact, loose = {}, {}
    for x, a in zip(g.inputs, args):
        a = np.asarray(a, dtype=np.float64)
        for idx, names in _element_names(x.name, concrete_shape(x.shape, dims)):
            v = np.float64(a[idx])
            if not idx:
                exact[x.name] = v
                continue
            loose[names[1]] = v                         # bracketed: always unique
            under = names[0]
            loose[under] = None if under in loose else v      # two inputs, one name
    for k, v in loose.items():
        if k not in exact:
            exact[k] = v
    return exact


def _elements(form):
    """(shape, [elements in row-major order]) of an explicit form."""
    if isinstance(form, sympy.MatrixBase):
        return tuple(form.shape), list(form)
    if isinstance(form, sympy.NDimArray):
        shape = tuple(form.shape)
        return shape, [form[idx] for idx in np.ndindex(*shape)]
    return (), [sympy.sympify(form)]


def _clamp(x, lo, hi):
    return np.clip(x, lo, hi)


@functools.lru_cache(maxsize=None)
def explicit_functions():
    """{name: NumPy callable} for lambdify: symgrad's scalar SymPy classes (``Where``,
    ``Sigmoid``, ``AsFloat``, ...; lambdify prints them by class name) each computed by
    its op's sg function on NumPy scalars; ``Clamp`` (whose bounds are SymPy numbers, not
    operands) by hand."""
    from symgrad.core.ops.rounding import PRECISIONS
    out = {"Clamp": _clamp}
    out.update({name: name for name in PRECISIONS})   # to_precision's dtype, printed bare
    for opdef in OPS.values():
        cls = opdef.sympy_class
        if (opdef.pointwise and cls is not None and issubclass(cls, OpBase)
                and cls.__name__ not in out):
            out[cls.__name__] = (_with_params(opdef) if opdef.sympy_params
                                 else opdef.function)
    return out


def _with_params(opdef):
    """An op with parameters (round's decimals, polygamma's n) as lambdify calls its class:
    the operands, then the parameters in ``sympy_params`` order."""
    def call(*args):
        k = opdef.arity
        params = {n: (a.name if hasattr(a, "name") else a)
                  for n, a in zip(opdef.sympy_params, args[k:])}
        return opdef.function(*args[:k], **params)
    return call


def explicit_too_big(g, dims):
    """Why ``explicit`` is skipped for ``g`` (a string), or None."""
    nodes = _graph(g)
    if len(nodes) > MAX_EXPLICIT_NODES:
        return f"{len(nodes)} graph nodes > {MAX_EXPLICIT_NODES}"
    elements = sum(int(np.prod(concrete_shape(x.shape, dims))) for x in g.inputs)
    if elements > MAX_EXPLICIT_ELEMENTS:
        return f"{elements} input elements > {MAX_EXPLICIT_ELEMENTS}"
    for n in nodes:
        if n.op in _OPAQUE_OPS:
            return f"{n.op}: its elements are opaque functions (no closed form)"
        if n.op in _MATRIX_OPS and len(n.inputs[0].shape) > 2:
            return f"{n.op} of a batch of matrices"
        if n.op in _MATRIX_OPS:
            size = concrete_shape(n.inputs[0].shape, dims)[0]
            if size > (MAX_EXPLICIT_CHOLESKY if n.op == "cholesky" else MAX_EXPLICIT_MATRIX):
                return f"{n.op} of a {size}x{size} matrix"
            if size > 2 and not n.inputs[0].is_symbol:
                return f"{n.op} of a {size}x{size} matrix of formulas"
    return None


def tree_size(exprs):
    """The number of nodes of ``exprs`` as trees (what printing them walks), counted
    over their DAG of shared subexpressions (linear in its size)."""
    memo = {}
    stack = list(exprs)
    while stack:
        e = stack[-1]
        if id(e) in memo:
            stack.pop()
            continue
        pending = [a for a in e.args if id(a) not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[id(e)] = 1 + sum(memo[id(a)] for a in e.args)
        stack.pop()
    return sum(memo[id(e)] for e in exprs)


def evaluate_formulas(g, args, dims):
    """{input name: NumPy array} from ``g.formulas`` (SymPy matrix expressions) evaluated
    by SymPy alone (``symgrad.views.verify.evaluate_formula``), or None when the graph is
    too big for SymPy's per-element arithmetic to be quick (``explicit_too_big``)."""
    from symgrad.views.verify import evaluate_formula
    if explicit_too_big(g, dims) is not None:
        return None
    kinds = {"bool": bool, "int": np.int64}
    values = {x.name: np.asarray(a).astype(kinds.get(x.kind, np.float64))
              for x, a in zip(g.inputs, args)}
    values.update(g.constants)
    from symgrad.core.shapes import dim_symbol
    sizes = {dim_symbol(k): v for k, v in dims.items()}
    shapes = _shapes(g, dims)
    forms = g.formulas
    out = {}
    for x in g.wrt:
        if x.name not in forms:
            raise ViewError(f"formulas has no key {x.name!r} (keys {sorted(forms)})")
        got = evaluate_formula(forms[x.name], values, sizes)
        if got.size != int(np.prod(shapes[x.name])):
            raise ViewError(f"formulas[{x.name!r}] has {got.size} elements, expected shape "
                            f"{shapes[x.name]}")
        out[x.name] = got.reshape(shapes[x.name])
    return out


def evaluate_explicit(g, args, dims, simplify=False, exact=True):
    """{input name: NumPy array} from ``g.explicit(**dims)`` through ``sympy.lambdify``,
    or None when the graph is too big (``explicit_too_big``) or the forms are (more than
    ``MAX_EXPLICIT_TREE`` nodes as trees: shared subterms repeat in every use)."""
    if explicit_too_big(g, dims) is not None:
        return None
    used = {str(s) for x in g.inputs for d in x.shape if isinstance(d, sympy.Basic)
            for s in d.free_symbols}
    forms = g.explicit(simplify=simplify, **{k: v for k, v in dims.items() if k in used})
    values = _element_values(g, args, dims)
    shapes = _shapes(g, dims)
    keys, exprs, layout = [], [], []
    for x in g.wrt:
        if x.name not in forms:
            raise ViewError(f"explicit has no key {x.name!r} (keys {sorted(forms)})")
        shape, elems = _elements(forms[x.name])
        if shape != shapes[x.name]:
            raise ViewError(f"explicit[{x.name!r}] has shape {shape}, expected "
                            f"{shapes[x.name]}")
        keys.append(x.name)
        layout.append((len(exprs), len(elems), shape))
        exprs.extend(elems)
    size = tree_size(exprs)
    if size > MAX_EXPLICIT_TREE:
        return None          # printing it for lambdify alone would take seconds
    symbols = sorted(set().union(*[e.free_symbols for e in exprs]), key=str) if exprs else []
    unknown = [str(s) for s in symbols if values.get(str(s)) is None]
    if unknown:
        raise ViewError(f"explicit: element symbol(s) {', '.join(unknown)} name no input "
                        "element (or more than one)")
    point = [values[str(s)] for s in symbols]
    flat = (_evaluate_elements(symbols, exprs, point) if exact
            else np.asarray(_float64(symbols, exprs, point)))
    return {key: flat[start:start + count].reshape(shape)
            for key, (start, count, shape) in zip(keys, layout)}


# The per-element forms are the textbook formulas (log_softmax as x - log(sum(exp(x)))),
# which overflow or underflow in float64 where the compiled code (max-shifted) does not,
# and a tanh or a comparison downstream can turn that into a finite wrong value. So the
# elements are evaluated with mpmath at 50 digits, whose exponent range is unbounded;
# an element mpmath cannot evaluate (a division by zero in a branch ``where`` discards, a
# complex intermediate, a class without an mpmath version below) is evaluated in float64
# with NumPy instead, where symgrad's classes compute through their ops' sg functions.
MP_DIGITS = 50


def _mp_functions():
    import mpmath
    zero, one = mpmath.mpf(0), mpmath.mpf(1)
    return {
        "Where": lambda c, a, b: a if c else b,
        "AsFloat": lambda c: one if c else zero,
        "StopGradient": lambda x: x,
        "Sigmoid": lambda x: one / (one + mpmath.exp(-x)),
        "Softplus": lambda x: mpmath.log(one + mpmath.exp(x)),
        "Relu": lambda x: x if x > 0 else zero,
        "ReluGrad": lambda g, x: zero if x <= 0 else g,
        "Clamp": lambda x, lo, hi: min(max(x, lo), hi),
        "LogAddExp": lambda x, y: mpmath.log(mpmath.exp(x) + mpmath.exp(y)),
        "Hypot": lambda x, y: mpmath.sqrt(x * x + y * y),
        "IsNan": lambda x: bool(mpmath.isnan(x)),
        # special and rounding ops (core/ops/special.py, rounding.py)
        "LgammaOp": lambda x: mpmath.log(abs(mpmath.gamma(x))),
        "PolygammaOp": lambda x, n: mpmath.psi(int(n), x),
        "ErfinvOp": mpmath.erfinv,
        "ErfcOp": mpmath.erfc,
        "ErfcxOp": lambda x: mpmath.exp(x * x) * mpmath.erfc(x),
        "LogNdtrOp": lambda x: mpmath.log(mpmath.ncdf(x)),
        "I0Op": lambda x: mpmath.besseli(0, x),
        "I1Op": lambda x: mpmath.besseli(1, x),
        "I0eOp": lambda x: mpmath.exp(-abs(x)) * mpmath.besseli(0, x),
        "I1eOp": lambda x: mpmath.exp(-abs(x)) * mpmath.besseli(1, x),
        "FloorOp": mpmath.floor,
        "CeilOp": mpmath.ceil,
        "TruncOp": lambda x: mpmath.floor(x) if x >= 0 else mpmath.ceil(x),
        "FmodOp": mpmath.fmod,
        "RemainderOp": lambda x, y: x - mpmath.floor(x / y) * y,
        "SignbitOp": lambda x: bool(x < 0),
        "RoundOp": lambda x, d: (mpmath.nint(x * mpmath.mpf(10) ** int(d))
                                 / mpmath.mpf(10) ** int(d)),
        "FrexpExponentOp": lambda x: mpmath.mpf(math.frexp(float(x))[1]),
        "NextafterOp": lambda x, y: mpmath.mpf(math.nextafter(float(x), float(y))),
        "ToPrecisionOp": lambda x, dtype: mpmath.mpf(float(
            OPS["to_precision"].function(float(x), str(dtype)))),
    }


_MP_ERRORS = (ZeroDivisionError, ValueError, TypeError, OverflowError, NameError)


def _float64(symbols, exprs, point):
    try:
        fn = sympy.lambdify(symbols, exprs, modules=[dict(explicit_functions()), "numpy"])
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = [np.asarray(v, dtype=np.float64) for v in fn(*point)]
    except NameError as e:
        raise ViewError(f"explicit: unknown name: {e}") from None
    for v in out:
        if v.shape != ():
            raise ViewError(f"explicit: an element evaluates to shape {v.shape}")
    return [float(v) for v in out]


def _decide_comparisons(symbols, exprs, point):
    """``exprs`` with every comparison of rational functions decided exactly at ``point``
    (replaced by its truth value). A float is a dyadic rational, so a tie that the compiled code
    computes exactly (a mean of halves equal to an element) is a tie here too, where 50
    digits of ``5/6`` would have decided it by a rounding error."""
    exact = {s: sympy.Rational(float(v)) for s, v in zip(symbols, point)
             if np.isfinite(float(v))}
    out = []
    for e in exprs:
        decided = {}
        for r in e.find(sympy.core.relational.Relational):
            if not (r.lhs - r.rhs).is_rational_function():
                continue          # x**y at exact rationals is an algebraic number: slow
            value = r.xreplace(exact)
            if value in (sympy.true, sympy.false):
                decided[r] = value
        try:
            out.append(e.xreplace(decided) if decided else e)
        except (TypeError, ValueError):    # SymPy re-evaluating Max/Min of what it
            out.append(e)                  # cannot order: leave the comparisons to mpmath
    return out


def _evaluate_elements(symbols, exprs, point):
    """The elements ``exprs`` at ``point`` (values of ``symbols``), as float64."""
    import mpmath
    mp_names = set(_mp_functions())
    no_mp = set(explicit_functions()) - mp_names
    out = np.full(len(exprs), np.nan)
    todo = []                      # indices to evaluate in float64
    exprs = _decide_comparisons(symbols, exprs, point)
    with mpmath.workdps(MP_DIGITS):
        args = [mpmath.mpf(float(v)) for v in point]
        mp_ok = [i for i, e in enumerate(exprs)
                 if not {type(f).__name__ for f in e.atoms(sympy.Function)} & no_mp]
        todo = [i for i in range(len(exprs)) if i not in set(mp_ok)]
        try:
            fn = sympy.lambdify(symbols, [exprs[i] for i in mp_ok],
                                modules=[_mp_functions(), "mpmath"])
            out[mp_ok] = [float(v) for v in fn(*args)]
        except _MP_ERRORS:
            for i in mp_ok:        # one at a time: only the failing ones go to float64
                try:
                    fn = sympy.lambdify(symbols, exprs[i], modules=[_mp_functions(), "mpmath"])
                    out[i] = float(fn(*args))
                except _MP_ERRORS:
                    todo.append(i)
    if todo:
        out[todo] = _float64(symbols, [exprs[i] for i in todo], point)
    return out


# ----- comparing every view with the compiled code -------------------------------------------

def _printed_line(text, label):
    for line in text.splitlines():
        if line.startswith(label + " = ") or f"  # {label}, shape (" in line:
            return line if len(line) <= 400 else line[:400] + " ..."
    return ""


def _mismatch(view, what, want, got, rtol, atol):
    """A problem string, or None when ``got`` agrees with ``want`` (NaN equals NaN)."""
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    if want.shape != got.shape:
        return f"{view}: {what}: shape {got.shape}, compiled code gives {want.shape}"
    close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    bad = np.argwhere(~close)
    idx = tuple(int(i) for i in bad[0])
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        err = np.nanmax(np.where(close, 0.0, np.abs(got - want)))
    return (f"{view}: {what}: {len(bad)} of {want.size} elements differ (max abs error "
            f"{err:.3g}); at index {idx}: view {float(got[idx])!r}, compiled "
            f"{float(want[idx])!r}")


def compare_views(g, args, dims, rtol=1e-7, atol=1e-9,
                  views=("text", "program", "explicit", "formulas"),
                  explicit_simplify=False):
    """Problems (strings) where a view of ``g`` disagrees with ``g.compile("numpy")`` on
    ``args`` (NumPy arrays, one per input in ``g.inputs`` order) with dims ``dims``
    ({name: int}); empty when all agree. A view that cannot be evaluated is a problem."""
    args = [np.asarray(a, dtype=np.float64) for a in args]
    call = [a if a.ndim else float(a) for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            value, results = g.compile("numpy", with_value=True)(*call)
    except Exception as e:  # noqa: BLE001 - no reference, nothing to compare with
        return [f"reference: g.compile('numpy') failed: {type(e).__name__}: {e}"]
    want = {x.name: r for x, r in zip(g.wrt, results)}
    problems = []
    labels = {v: k for k, v in _labels(g).items()}

    def run(view, fn):
        try:
            return fn()
        except ViewError as e:
            problems.append(f"{view}: cannot evaluate: {e}")
        except Exception as e:  # noqa: BLE001 - a view that fails to evaluate is a finding
            problems.append(f"{view}: evaluation failed: {type(e).__name__}: {e}")
        return None

    def compare(view, got, text=None):
        for key, w in want.items():
            if key not in got:
                problems.append(f"{view}: no gradient w.r.t. {key}")
                continue
            p = _mismatch(view, f"d/d{key}", w, got[key], rtol, atol)
            if p:
                if text is not None:
                    p += f"\n    printed: {_printed_line(text, labels[key])}"
                problems.append(p)

    if "text" in views:
        text = g.text("numpy")
        got = run("text", lambda: evaluate_numpy_block(text, g, args, dims))
        if got is not None:
            compare("text", got, text)
    if "program" in views:
        text = g.program()
        out = run("program", lambda: evaluate_program_text(text, g, args, dims))
        if out is not None:
            got, got_value = out
            compare("program", got)
            if got_value is not None:
                p = _mismatch("program", f"value {g.name}", value, got_value, rtol, atol)
                if p:
                    problems.append(p)
    if "formulas" in views:
        got = run("formulas", lambda: evaluate_formulas(g, args, dims))
        if got is not None:
            compare("formulas", got)
    if "explicit" in views:
        got = run("explicit", lambda: evaluate_explicit(g, args, dims, explicit_simplify))
        if got is not None:
            before = len(problems)
            compare("explicit", got)
            if len(problems) > before:
                # exact arithmetic can flip a comparison at a tie the compiled code's
                # float64 rounding decides the other way: float64 agreeing is agreement
                found, problems[before:] = problems[before:], []
                rounded = run("explicit", lambda: evaluate_explicit(
                    g, args, dims, explicit_simplify, exact=False))
                if rounded is not None:
                    compare("explicit", rounded)
                if len(problems) > before:
                    problems[before:] = found
    return problems
