"""Hostile names for a generated program's inputs and dims.

A user's names reach generated code, so the fuzzer renames programs with names that mean
something else there: keywords (dims only: a parameter cannot be one), builtins, the
modules the code imports, the generated code's own names (temporaries, helpers, the
argument tuple, error classes, placeholders), SymPy's singletons, and non-ASCII names,
some of them unchanged by NFKC normalisation and some not (``ｘ``, ``ﬁ``, ``ℌ``).

``renamed``: the program with every input and dim renamed from the pool, names distinct
after NFKC: its gradient must equal the original's. ``look_alike``: two inputs or dims (or
an input and a dim) renamed to spellings equal after NFKC: ``grad_fn`` must refuse it
with a SymgradError, since Python would read them as one identifier.
"""
import copy
import keyword
import unicodedata

BUILTIN = ["len", "sum", "max", "min", "abs", "print", "float", "int", "range", "type",
           "object", "list", "tuple", "str", "id", "input", "exec", "eval", "globals",
           "__import__", "__builtins__", "open", "super", "all", "any", "map", "zip"]
MODULES = ["numpy", "np", "torch", "math", "scipy", "sympy", "sg", "symgrad", "os", "sys"]
GENERATED = ["args", "_t0", "_t1", "_t12", "_c0", "_c0_", "_dt", "_dev", "_FLOAT64",
             "sgarg0", "sgarg1", "ArgumentError", "EvaluationError", "_error",
             "_real_array", "_real_tensor", "_in_dtype", "_scalar_dtype", "_promoted",
             "_fallback", "_FALLBACK", "_softmax", "_log_softmax", "_erf", "_expit",
             "gradient", "grad_program", "_u78", "__t0"]
SYMPY = ["E", "I", "N", "S", "Q", "O", "pi", "oo", "nan", "zoo", "beta", "gamma", "Sum",
         "Symbol", "x_0", "x_1", "w_0"]
UNICODE = ["λ", "Δt", "αβ", "ẋ", "x̄", "ℌ", "ｘ", "ﬁ", "ª", "ǅ", "xᵢ"]
KEYWORDS = ["lambda", "if", "None", "True", "class", "def", "return", "import", "yield",
            "not", "and", "in", "is", "async", "await", "match", "case", "type"]

INPUT_POOL = [n for n in BUILTIN + MODULES + GENERATED + SYMPY + UNICODE
              if n.isidentifier() and not keyword.iskeyword(n)]
DIM_POOL = INPUT_POOL + [k for k in KEYWORDS if k.isidentifier()]

# pairs of spellings equal after NFKC (Python reads both as the second)
LOOK_ALIKES = [("ｎ", "n"), ("ｘ1", "x1"), ("ﬁ", "fi"), ("ℌ", "H"), ("ª", "a"),
               ("𝐱", "x"), ("ᵢ", "i")]


def nfkc(name):
    return unicodedata.normalize("NFKC", name)


def _rename(program, inputs, dims):
    """A copy of ``program`` with inputs and dims renamed by the two dicts."""
    p = copy.deepcopy(program)
    for i in p.inputs:
        i.name = inputs.get(i.name, i.name)
        i.shape = tuple(dims.get(d, d) if isinstance(d, str) else d for d in i.shape)
    p.dims = {dims.get(k, k): v for k, v in p.dims.items()}
    for step in p.steps:
        for o in step.operands:
            if o.broadcast is not None:
                o.broadcast = tuple(dims.get(d, d) if isinstance(d, str) else d
                                    for d in o.broadcast)
    return p


def renamed(program, rng):
    """``program`` with hostile input and dim names, all distinct after NFKC."""
    taken = set()

    def draw(pool):
        for _ in range(100):
            name = pool[rng.integers(len(pool))]
            if nfkc(name) not in taken:
                taken.add(nfkc(name))
                return name
        raise AssertionError("the name pool is too small")

    inputs = {i.name: draw(INPUT_POOL) for i in program.inputs}
    dims = {d: draw(DIM_POOL) for d in program.dims}
    return _rename(program, inputs, dims)


def look_alike(program, rng):
    """``program`` with two names equal after NFKC (inputs, dims or one of each), or None
    when it has fewer than two names."""
    names = [("input", i.name) for i in program.inputs] + [("dim", d) for d in program.dims]
    if len(names) < 2:
        return None
    a, b = rng.choice(len(names), size=2, replace=False)
    first, second = LOOK_ALIKES[rng.integers(len(LOOK_ALIKES))]
    inputs, dims = {}, {}
    for (kind, old), new in ((names[a], first), (names[b], second)):
        (inputs if kind == "input" else dims)[old] = new
    for kind, old in names:       # the others keep names apart from the pair
        if old not in inputs and old not in dims and nfkc(old) == second:
            (inputs if kind == "input" else dims)[old] = old + "_"
    return _rename(program, inputs, dims)
