"""Random well-typed symgrad programs, each with an independent torch reference.

Vocabulary. Every shape case of every spec in ``tests/rule_specs.py`` is a *template*: a
function of named inputs with template shapes (ints and dim names), written once with sg
ops (``build``) and once with torch only (``ref``), with a sampler giving each input's
valid domain. Choosing templates op by op covers the whole rule table.

Programs. A program is a list of steps; each applies one template to operands that are
fresh inputs or values computed before, so programs are DAGs: a value may feed several
steps, or both inputs of one step, and chains of steps nest. The loss is
``sum(out * w)`` for the last value plus ``sum(sin(v))`` for every value v nothing
consumed, so each step reaches the loss.

Shapes. A template's dim names are bound by unifying its input shapes with the operands'
shapes; a name left unbound becomes a program dim: symbolic (shared by name across
inputs) or a concrete size. An operand may be broadcast to the shape the template wants,
or reduced to a scalar by ``mean``.

Domains. Fresh inputs are drawn by the template's own sampler. A computed value feeding
an input with a restricted domain is mapped into it: an interval (log > 0, asin in
(-1, 1)) by ``lo + (hi - lo) * sigmoid(v)``, SPD matrices by ``tanh(v) tanh(v)ᵀ / 4 + I``,
well-conditioned ones by ``I + 0.15 tanh(v)`` (dims are at most 5), probability rows by
``softmax``; large values feeding an unrestricted input go through ``tanh``. The domains
are read off the samplers by probing them, not restated; inputs whose sampler draws class
indices only ever take fresh inputs.

Every program is generated from one integer seed, runs in two modes (``"sg"``: traced by
symgrad; ``"torch"``: the spec references, plain torch), and prints as readable code
(``Program.describe``) for a regression test.
"""
import functools
import inspect
import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import sympy
import torch

import symgrad as sg
from symgrad.core.graph import Tensor, topo_order
from symgrad.core.shapes import dim_symbol

import rule_specs
from rule_specs import SPECS

MAX_DIM = 4          # sizes of program dims are 2..MAX_DIM (near-identity adapter needs <= 5)
TAME = 4.0           # values larger than this feeding an unrestricted input go through tanh
HUGE = 1e6           # a step whose value exceeds this (at generation) is rejected
# Ops not differentiable where their value is 0 (std of equal elements, norm of 0, atan2
# and hypot at the origin): torch sets the gradient to 0 there (so does symgrad,
# tests/test_hardening.py) but its own second derivatives are nan, so there is no
# reference. A step of one of these whose value is 0 for any of SINGULAR_DRAWS fresh draws
# of the inputs (class indices are 0 a third of the time) is rejected like an input
# outside the domain (for atan2 that rejects more than the origin: a safe superset).
SINGULAR_AT_ZERO = {"std", "norm", "atan2", "hypot"}
SINGULAR_DRAWS = 16


# ----- domains of template inputs, read off their samplers ------------------------------

@dataclass(frozen=True)
class Domain:
    kind: str                 # real | interval | spd | near_identity | simplex | fresh
    lo: float = 0.0
    hi: float = 0.0

    def __str__(self):
        return f"interval({self.lo:.3g}, {self.hi:.3g})" if self.kind == "interval" \
            else self.kind


REAL = Domain("real")
FRESH = Domain("fresh")       # only fresh inputs drawn by the sampler (class indices)

# Samplers of structured values (matrices, distributions) cannot be probed elementwise.
STRUCTURED = {
    rule_specs.normal: REAL,
    rule_specs.distinct: REAL,
    rule_specs.spd: Domain("spd"),
    rule_specs.well_conditioned: Domain("near_identity"),
    rule_specs.negative_det: Domain("near_identity"),
    rule_specs.probabilities: Domain("simplex"),
}


@functools.lru_cache(maxsize=None)
def domain_of(sampler):
    """The domain an input drawn by ``sampler`` lives in, probed from 400 draws."""
    if sampler in STRUCTURED:
        return STRUCTURED[sampler]
    try:
        x = np.asarray(sampler((400,), np.random.default_rng(0)), dtype=float)
    except Exception:  # noqa: BLE001 - a sampler of fixed-shape values
        return FRESH
    if x.shape != (400,) or not np.isfinite(x).all():
        return FRESH
    if np.all(x == np.round(x)) and x.min() >= 0:
        return FRESH                              # class indices
    if len(np.unique(x)) <= 8:
        return REAL                               # ties on purpose: any real will do
    lo, hi = float(x.min()), float(x.max())
    if lo < -2.5 and hi > 2.5:
        return REAL
    mag = np.abs(x)
    if lo < 0 < hi and mag.min() >= 0.1:          # |x| in [a, b], either sign: use +
        return Domain("interval", float(mag.min()), hi)
    return Domain("interval", lo, hi)


# ----- glue: the same few functions in both modes ---------------------------------------

GLUE = {
    "sg": {"tanh": sg.tanh, "sigmoid": sg.sigmoid, "mean": sg.mean, "sum": sg.sum,
           "sin": sg.sin, "softmax": lambda v: sg.softmax(v, -1),
           "broadcast": sg.broadcast_to, "T": sg.transpose, "eye": sg.eye},
    "torch": {"tanh": torch.tanh, "sigmoid": torch.sigmoid, "mean": torch.mean,
              "sum": torch.sum, "sin": torch.sin, "softmax": lambda v: torch.softmax(v, -1),
              "broadcast": torch.broadcast_to, "T": lambda a: a.T,
              "eye": lambda n: torch.eye(n, dtype=torch.float64)},
}


def adapt(v, domain, fns, dim):
    """``v`` mapped into ``domain``; ``dim`` is the matrix size in this mode."""
    if domain.kind == "interval":
        return domain.lo + (domain.hi - domain.lo) * fns["sigmoid"](v)
    if domain.kind == "spd":
        a = fns["tanh"](v)
        return a @ fns["T"](a) * 0.25 + fns["eye"](dim)
    if domain.kind == "near_identity":
        return fns["eye"](dim) + 0.15 * fns["tanh"](v)
    if domain.kind == "simplex":
        return fns["softmax"](v)
    return v


# ----- programs ------------------------------------------------------------------------

@dataclass
class Input:
    name: str
    shape: tuple               # ints and dim names, as sg.grad_fn(shapes=...) takes them
    sampler: object
    origin: str                # "op.case.input" that asked for it, or "loss weight"


@dataclass
class Operand:
    value: int                          # index into Program.values
    reduce: bool = False                # mean over every axis first
    broadcast: Optional[tuple] = None   # then broadcast to this shape (ints and names)
    tame: bool = False                  # then tanh
    domain: Domain = REAL               # then map into the template input's domain

    def describe(self, names):
        s = names[self.value]
        if self.reduce:
            s = f"mean({s})"
        if self.broadcast is not None:
            s = f"broadcast_to({s}, {fmt(self.broadcast)})"
        if self.tame:
            s = f"tanh({s})"
        if self.domain.kind != "real":
            s = f"{self.domain}<-{s}"
        return s


@dataclass
class Step:
    op: str
    case: str
    operands: list

    @property
    def template(self):
        spec = SPECS[self.op]
        return spec, next(c for c in spec.cases if c.id == self.case)


@dataclass
class Program:
    seed: int
    inputs: list = field(default_factory=list)     # Input
    dims: dict = field(default_factory=dict)       # program dim name -> size
    steps: list = field(default_factory=list)      # Step
    values: list = field(default_factory=list)     # ("input", i) | ("step", j)
    loss: list = field(default_factory=list)       # (value index, weight input or None)

    # ----- what sg.check needs ------------------------------------------------------
    @property
    def names(self):
        return [i.name for i in self.inputs]

    @property
    def shapes(self):
        return {i.name: i.shape for i in self.inputs}

    def sample(self, name, shape, rng):
        inp = next(i for i in self.inputs if i.name == name)
        return np.asarray(inp.sampler(shape, rng), dtype=float)

    def function(self, mode):
        """The program as a plain function of its inputs, traced by symgrad (``"sg"``)
        or run by torch (``"torch"``), named parameters as ``grad_fn`` reads them."""
        def program(*args):
            return self.run(mode, args)[0]
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        program.__signature__ = inspect.Signature(
            [inspect.Parameter(n, kind) for n in self.names])
        program.__name__ = f"program_{self.seed}" if mode == "sg" else f"reference_{self.seed}"
        return program

    # ----- evaluation -----------------------------------------------------------------
    def dim(self, d, mode):
        """A program dim as the given mode sees it: a name for sg, a size for torch."""
        if isinstance(d, int):
            return d
        return d if mode == "sg" else self.dims[d]

    def apply(self, step, env, mode):
        spec, case = step.template
        fn = spec.build_for(case) if mode == "sg" else spec.ref_for(case)
        return fn(*self.arguments(step, env, mode), **case.params)

    def arguments(self, step, env, mode):
        """The values ``step``'s op receives."""
        fns = GLUE[mode]
        args = []
        for o in step.operands:
            v = env[o.value]
            if o.reduce:
                v = fns["mean"](v)
            if o.broadcast is not None:
                v = fns["broadcast"](v, tuple(self.dim(d, mode) for d in o.broadcast))
            if o.tame:
                v = fns["tanh"](v)
            if o.domain.kind != "real":
                v = adapt(v, o.domain, fns, v.shape[-1])
            args.append(v)
        return args

    def ties(self, rng, draws=20, also=()):
        """Whether a comparison step compares values equal up to rounding at some draw of
        the inputs (x against mean(broadcast(x))): symgrad decides such a comparison on
        the simplified formula, exactly, and torch by its rounding, so they may differ.
        A relation (lt, eq, ...) of exactly equal values counts too: a printed view
        evaluates the same comparison through another formula (mean(clamp(x)) < mean(x)
        at x = (0.5, 1, -0.5, -1, ...) and bounds ±0.5). ``also``: argument lists to try
        besides ``draws`` fresh draws."""
        relations = {"eq", "ne", "lt", "le", "gt", "ge"}
        comparisons = relations | {"maximum", "minimum", "max", "min", "amax", "amin", "clamp",
                                   "relu", "abs", "sign"}
        if not any(st.op in comparisons for st in self.steps):
            return False
        def draw():
            return [np.asarray(self.sample(i.name, tuple(
                self.dims.get(d, d) if not isinstance(d, int) else d for d in i.shape), rng),
                dtype=float) for i in self.inputs]
        for arrays in list(also) + [draw() for _ in range(draws)]:
            args = [torch.as_tensor(np.asarray(a, dtype=float)) for a in arrays]
            env = []
            for kind, k in self.values:
                if kind == "input":
                    env.append(args[k])
                    continue
                step = self.steps[k]
                if step.op in comparisons:
                    vals = [torch.as_tensor(v, dtype=torch.float64) for v in
                            self.arguments(step, env, "torch")]
                    if len(vals) >= 2:
                        a, b = torch.broadcast_tensors(vals[0], vals[1])
                        near = torch.isclose(a, b, rtol=1e-12, atol=1e-14)
                        if step.op not in relations:    # kinks at exact ties are
                            near &= a != b              # conventions torch defines
                        if bool(near.any()):
                            return True
                env.append(self.apply(step, env, "torch"))
        return False

    def run(self, mode, args):
        """(loss, values) of the program on ``args`` (one per input, in order)."""
        env = []
        for kind, k in self.values:
            env.append(args[k] if kind == "input" else self.apply(self.steps[k], env, mode))
        return self.loss_of(env, args, mode), env

    def loss_of(self, env, args, mode):
        fns = GLUE[mode]
        total = None
        for vi, w in self.loss:
            v = env[vi]
            term = fns["sum"](v * args[w]) if w is not None else fns["sum"](fns["sin"](v))
            total = term if total is None else total + term
        return total

    # ----- reading ----------------------------------------------------------------------
    def describe(self):
        """The program as readable pseudo-code (for failure messages and regressions)."""
        names = {}
        lines = [f"# program seed={self.seed}  dims={self.dims}"]
        for idx, (kind, k) in enumerate(self.values):
            if kind == "input":
                inp = self.inputs[k]
                names[idx] = inp.name
                lines.append(f"{inp.name}: input{fmt(inp.shape)} ~ "
                             f"{getattr(inp.sampler, '__qualname__', inp.sampler)}"
                             f"   # for {inp.origin}")
            else:
                step = self.steps[k]
                names[idx] = f"v{k}"
                ops = ", ".join(o.describe(names) for o in step.operands)
                lines.append(f"v{k} = {step.op}[{step.case}]({ops})")
        terms = [f"sum({names[vi]} * {self.inputs[w].name})" if w is not None
                 else f"sum(sin({names[vi]}))" for vi, w in self.loss]
        lines.append("loss = " + " + ".join(terms))
        return "\n".join(lines)

    def templates(self):
        return [(s.op, s.case) for s in self.steps]


def fmt(shape):
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


# ----- generation ----------------------------------------------------------------------

class GenerationFailure(Exception):
    """symgrad failed (or disagreed with torch on a shape) while tracing a step that
    torch's reference accepted: a finding, reported by the runner as an error."""

    def __init__(self, program, stage, error):
        super().__init__(f"{stage}: {type(error).__name__}: {error}")
        self.program = program
        self.stage = stage
        self.error = error


def all_templates(ops=None):
    """{op: [case id, ...]} for every spec (or only ``ops``)."""
    return {op: [c.id for c in spec.cases] for op, spec in SPECS.items()
            if ops is None or op in ops}


def _simple(d):
    """A dim a fresh input can carry: a size >= 2 or a plain symbol."""
    return (isinstance(d, int) and d >= 2) or isinstance(d, sympy.Symbol)


def _as_spec_dim(d):
    return d if isinstance(d, int) else str(d)


class Generator:
    """Builds one program step by step, tracing each step in both modes as it goes:
    symbolic shapes from the sg trace, magnitudes from the torch values."""

    def __init__(self, seed, max_steps=5, ops=None, first_op=None):
        self.rng = random.Random(seed)
        self.nrng = np.random.default_rng(seed)
        self.program = Program(seed)
        self.max_steps = max_steps
        self.templates = all_templates(ops)
        self.first_op = first_op
        self.sg_vals = []         # symbolic Tensors, one per program value
        self.t_vals = []          # torch tensors drawn at generation time
        self.consumed = set()
        self.rejected = 0

    # ----- dims -------------------------------------------------------------------------
    def new_dim(self, fresh=True):
        """A dim for an unbound template name: an existing program dim, a new one (only
        for fresh inputs: a dim no input carries could not be bound at call time), or a
        concrete size."""
        r = self.rng.random()
        if r < 0.35 and self.program.dims:
            return dim_symbol(self.rng.choice(sorted(self.program.dims)))
        if r < 0.7 and fresh:
            name = f"n{len(self.program.dims) + 1}"
            self.program.dims[name] = self.rng.randint(2, MAX_DIM)
            return dim_symbol(name)
        return self.rng.randint(2, MAX_DIM)

    def instantiate(self, tshape, binding, fresh=True):
        out = []
        for t in tshape:
            if isinstance(t, int):
                out.append(t)
            else:
                if t not in binding:
                    binding[t] = self.new_dim(fresh)
                out.append(binding[t])
        return tuple(out)

    def concrete(self, shape):
        return tuple(d if isinstance(d, int) else
                     int(sympy.sympify(d).subs({dim_symbol(k): v
                                                for k, v in self.program.dims.items()}))
                     for d in shape)

    # ----- operands ---------------------------------------------------------------------
    @staticmethod
    def unify(tshape, vshape, binding):
        if len(tshape) != len(vshape):
            return None
        b = dict(binding)
        for t, d in zip(tshape, vshape):
            if isinstance(t, int):
                if not (isinstance(d, int) and d == t):
                    return None
            elif not _simple(d) or (t in b and b[t] != d):
                return None
            else:
                b[t] = d
        return b

    @staticmethod
    def unify_broadcast(tshape, vshape, binding):
        """Binding under which ``vshape`` broadcasts to the template shape."""
        if len(vshape) > len(tshape):
            return None
        b = dict(binding)
        off = len(tshape) - len(vshape)
        for i, d in enumerate(vshape):
            t = tshape[off + i]
            if d == 1:
                continue
            if isinstance(t, int):
                if not (isinstance(d, int) and d == t):
                    return None
            elif not _simple(d) or (t in b and b[t] != d):
                return None
            else:
                b[t] = d
        return b

    def magnitude(self, vi):
        t = self.t_vals[vi]
        return float(t.abs().max()) if t.numel() else 0.0

    def bind(self, vi, tshape, binding, domain, sampler):
        """An Operand feeding value ``vi`` to an input of template shape ``tshape``, or
        None. Updates ``binding`` on success."""
        kind, k = self.program.values[vi]
        same = kind == "input" and self.program.inputs[k].sampler is sampler
        if domain.kind == "fresh" and not same:
            return None
        vshape = self.sg_vals[vi].shape
        dom = REAL if same else domain
        b = self.unify(tshape, vshape, binding)
        op = None
        if b is not None:
            op = Operand(vi, domain=dom)
        elif not same:
            if tshape == () and vshape and self.rng.random() < 0.7:
                b, op = dict(binding), Operand(vi, reduce=True, domain=dom)
            elif self.rng.random() < 0.7:
                b = self.unify_broadcast(tshape, vshape, binding)
                if b is not None:
                    target = self.instantiate(tshape, b, fresh=False)
                    if target != tuple(vshape):
                        op = Operand(vi, broadcast=tuple(_as_spec_dim(d) for d in target),
                                     domain=dom)
        if op is None:
            return None
        op.tame = (dom.kind == "real" and not same and self.magnitude(vi) > TAME)
        binding.clear()
        binding.update(b)
        return op

    def fresh(self, tshape, binding, sampler, origin):
        shape = self.instantiate(tshape, binding)
        name = f"x{len(self.program.inputs) + 1}"
        return self.add_input(name, tuple(_as_spec_dim(d) for d in shape), sampler, origin)

    def add_input(self, name, shape, sampler, origin):
        p = self.program
        p.inputs.append(Input(name, shape, sampler, origin))
        p.values.append(("input", len(p.inputs) - 1))
        self.sg_vals.append(sg.symbol(name, shape))
        a = np.asarray(sampler(self.concrete(self.sg_vals[-1].shape), self.nrng), dtype=float)
        self.t_vals.append(torch.tensor(a, dtype=torch.float64))
        return Operand(len(p.values) - 1)

    def candidates(self):
        """Values to try as operands: recent step outputs first, then the rest shuffled."""
        steps = [i for i, (kind, _) in enumerate(self.program.values) if kind == "step"]
        rest = [i for i in range(len(self.program.values)) if i not in steps[-1:]]
        self.rng.shuffle(rest)
        return steps[-1:] + rest if self.rng.random() < 0.7 else rest + steps[-1:]

    # ----- steps ------------------------------------------------------------------------
    def pick(self):
        if self.first_op is not None and not self.program.steps:
            op = self.first_op
        else:
            op = self.rng.choice(sorted(self.templates))
        return op, self.rng.choice(self.templates[op])

    def try_step(self, op, case_id):
        p = self.program
        spec = SPECS[op]
        case = next(c for c in spec.cases if c.id == case_id)
        mark = (len(p.inputs), len(p.values), dict(p.dims))
        binding, operands = {}, []
        for name, tshape in case.shapes.items():
            tshape = tuple(tshape)
            sampler = spec.sampler(case, name)
            domain = domain_of(sampler)
            op_ = None
            if p.values and self.rng.random() < 0.75:
                for vi in self.candidates()[:8]:
                    op_ = self.bind(vi, tshape, binding, domain, sampler)
                    if op_ is not None:
                        break
            if op_ is None:
                op_ = self.fresh(tshape, binding, sampler, f"{op}[{case_id}].{name}")
            operands.append(op_)
        step = Step(op, case_id, operands)
        try:
            with torch.no_grad():
                t_out = p.apply(step, self.t_vals, "torch")
            ok = (isinstance(t_out, torch.Tensor) and t_out.is_floating_point()
                  and bool(torch.isfinite(t_out).all())
                  and (t_out.numel() == 0 or float(t_out.abs().max()) < HUGE)
                  and not (op in SINGULAR_AT_ZERO and bool((t_out.abs() < 1e-6).any())))
        except Exception:  # noqa: BLE001 - the template does not apply here
            ok = False
        p.steps.append(step)
        p.values.append(("step", len(p.steps) - 1))
        if ok and op in SINGULAR_AT_ZERO:
            ok = not self.ever_zero()
        if not ok:
            del p.steps[-1]
            self.rollback(mark)
            return False
        try:
            s_out = p.apply(step, self.sg_vals, "sg")
        except Exception as e:  # noqa: BLE001 - torch accepted it, symgrad did not
            raise GenerationFailure(p, "trace", e) from e
        if not isinstance(s_out, Tensor):
            raise GenerationFailure(p, "trace", TypeError(
                f"{op}[{case_id}] traced to a {type(s_out).__name__}, not a Tensor"))
        try:
            shape = self.concrete(s_out.shape)
        except Exception as e:  # noqa: BLE001
            raise GenerationFailure(p, "shape", e) from e
        if shape != tuple(t_out.shape):
            raise GenerationFailure(p, "shape", AssertionError(
                f"{op}[{case_id}]: symgrad's shape {s_out.shape} is {shape} at dims "
                f"{p.dims}, torch's is {tuple(t_out.shape)}"))
        self.sg_vals.append(s_out)
        self.t_vals.append(t_out)
        for o in operands:
            self.consumed.add(o.value)
        return True

    def ever_zero(self):
        """Whether the last value is 0 anywhere for some fresh draw of the inputs."""
        p = self.program
        rng = np.random.default_rng(p.seed + 1)
        for _ in range(SINGULAR_DRAWS):
            args = [torch.tensor(p.sample(i.name, self.concrete(self.sg_vals[k].shape), rng))
                    for k, i in zip((k for k, (kind, _) in enumerate(p.values)
                                     if kind == "input"), p.inputs)]
            with torch.no_grad():
                _, env = p.run("torch", args)
            if bool((env[-1].abs() < 1e-6).any()):
                return True
        return False

    def rollback(self, mark):
        p = self.program
        n_inputs, n_values, dims = mark
        del p.inputs[n_inputs:], p.values[n_values:]
        del self.sg_vals[n_values:], self.t_vals[n_values:]
        p.dims.clear()
        p.dims.update(dims)
        self.rejected += 1

    def finish(self):
        p = self.program
        last = len(p.values) - 1
        out = self.sg_vals[last]
        if all(_simple(d) or d == 1 for d in out.shape):
            self.add_input("w", tuple(_as_spec_dim(d) for d in out.shape),
                           rule_specs.normal, "loss weight")
            p.loss.append((last, len(p.inputs) - 1))
        else:
            p.loss.append((last, None))
        for vi, (kind, _) in enumerate(p.values[:last]):
            if kind == "step" and vi not in self.consumed and self.magnitude(vi) < 1e4:
                p.loss.append((vi, None))
        return p

    def generate(self):
        n = self.rng.randint(1, self.max_steps)
        tries = 0
        while len(self.program.steps) < n and tries < 40:
            tries += 1
            self.try_step(*self.pick())
        if not self.program.steps:
            raise RuntimeError(f"seed {self.program.seed}: no template applied")
        return self.finish()


def generate(seed, max_steps=5, ops=None, first_op=None):
    """The program of ``seed``. Raises GenerationFailure when symgrad fails to trace
    (or mis-shapes) a step torch's reference accepts."""
    return Generator(seed, max_steps, ops, first_op).generate()


def graph_ops(program):
    """Rule ops in the traced forward graph of ``program`` (after simplification)."""
    f = program.function("sg")
    out = f(*[sg.symbol(i.name, i.shape) for i in program.inputs])
    return {n.op for n in topo_order([out]) if n.op in sg.rules}
