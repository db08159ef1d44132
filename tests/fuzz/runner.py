"""Run generated programs through ``sg.check`` and the edge runs, and tally the outcomes.

One program is: generate it from its seed; rename its inputs and dims from the hostile
pool (every other program, ``names``); ``sg.check`` it with its torch reference at orders
1 and 2, NumPy and torch backends, on fresh draws from its inputs' samplers; run its
gradient on edge inputs (``edges``: dtype and shape, float32, integers, nan/inf, zero
sizes); evaluate its printed views (``views``); and check that ``grad_fn`` refuses it with
two names equal after NFKC. Outcomes are ``ok``, ``mismatch`` (symgrad disagrees with
torch.autograd, a view with the compiled code, or accepts look-alike names: a wrong
answer) or ``error`` (symgrad raised, or hung past the time limit, on a well-typed
program), errors grouped by kind: the exception type and the symgrad function it came
from. ``run_threaded`` runs several programs at once from threads.

Tolerated, and counted in the summary: the edge runs' classes (``edges.py``), order-2
values where torch's is nan (``singular``), and programs that compare values equal up to
rounding (``tie``: x against mean(broadcast(x)), ``Program.ties``), which symgrad decides
exactly on the simplified formula and torch by its rounding. Programs with a
logcumsumexp are checked at order 1 only (``torch_order2``): torch's backward of it works
in log space (log of the incoming gradient), and its double backward is wrong where that
gradient has zeros (amax(logcumsumexp(x)) gives a diagonal Hessian); symgrad's second
derivative of it is tested against differences of torch's first in tests/test_sorting.py.
"""
import signal
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

import symgrad as sg

from .edges import check_edges, compare, concrete, torch_gradients
from .names import look_alike, renamed
from .programs import GenerationFailure, generate, graph_ops

RTOL, ATOL = 1e-7, 1e-9


@dataclass
class Outcome:
    seed: int
    status: str                    # ok | mismatch | error
    kind: str = ""                 # for errors: "<stage>: <Exception> in <module>.<function>"
    detail: str = ""
    program: object = None
    ops: set = field(default_factory=set)
    seconds: float = 0.0
    notes: Counter = field(default_factory=Counter)

    def report(self):
        text = [f"seed {self.seed}: {self.status}" + (f" ({self.kind})" if self.kind else "")]
        if self.program is not None:
            text.append(self.program.describe())
        if self.detail:
            text.append(self.detail)
        text.append(f"reproduce: python -m tests.fuzz --seed {self.seed} --programs 1 -v")
        return "\n".join(text)


class Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds):
    """Raise Timeout after ``seconds`` (SIGALRM; a no-op where there is none)."""
    if not seconds or not hasattr(signal, "SIGALRM"):
        yield
        return

    def fire(signum, frame):
        raise Timeout(f"no result after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def error_kind(stage, e):
    """``stage: Type in module.function`` of the innermost symgrad frame."""
    where = ""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if "/symgrad/" in frame.filename.replace("\\", "/"):
            module = frame.filename.replace("\\", "/").rsplit("/", 1)[-1][:-3]
            where = f" in {module}.{frame.name}"
            break
    return f"{stage}: {type(e).__name__}{where}"


def refuses_look_alikes(program, rng):
    """Problems: ``grad_fn`` must refuse the program with two names equal after NFKC."""
    twin = look_alike(program, rng)
    if twin is None:
        return []
    try:
        sg.grad_fn(twin.function("sg"), shapes=twin.shapes)
    except sg.SymgradError:
        return []
    return ["look-alike names accepted:\n" + twin.describe()]


def singular_second_order(failures, notes):
    """``sg.check``'s failures less those at order 2 where torch's answer is nan: a
    second derivative taken at a point where the function is not twice differentiable
    (the std of a vector of zeros, reached when a relu zeroes all of its input), which
    torch computes as 0 * inf and symgrad, from the simplified formula, as a number
    (counted as ``singular``)."""
    kept = []
    for failure in failures:
        if failure.startswith("H·v ") and failure.endswith("torch gives np.float64(nan)"):
            notes["singular"] += 1
        else:
            kept.append(failure)
    return kept


def view_args(program, seed):
    """The arguments ``check_views`` evaluates the views at."""
    rng = np.random.default_rng(seed)
    return [np.asarray(program.sample(x.name, concrete(x.shape, program.dims), rng),
                       dtype=float) for x in program.inputs]


def check_views(program, seed, renamed=None):
    """Problems of the printed views of ``program``; with ``renamed`` (the program under
    hostile names) also of its NumPy text, which is code and must run under any names."""
    from .views import compare_views
    g = sg.grad_fn(program.function("sg"), shapes=program.shapes)
    problems = [f"view: {p}" for p in compare_views(g, view_args(program, seed), program.dims)]
    if renamed is not None:
        g = sg.grad_fn(renamed.function("sg"), shapes=renamed.shapes)
        problems += [f"view under hostile names: {p}" for p in compare_views(
            g, view_args(renamed, seed), renamed.dims, views=("text",))]
    return problems


def run_one(seed, max_steps=5, trials=2, timeout=120, first_op=None, names=True,
            edges=True, views=True, backends=("numpy", "torch")):
    """Generate the program of ``seed`` and check it against torch.autograd (see the
    module docstring for what ``names``, ``edges`` and ``views`` add), its gradients
    compiled for ``backends``."""
    start = time.perf_counter()
    program = None
    rng = np.random.default_rng([seed, 13])
    notes = Counter()
    stage = "generate"
    try:
        with time_limit(timeout):
            try:
                program = generate(seed, max_steps, first_op=first_op)
            except GenerationFailure as e:
                return Outcome(seed, "error", error_kind(e.stage, e.error),
                               f"{type(e.error).__name__}: {e.error}", e.program,
                               seconds=time.perf_counter() - start)
            ops = graph_ops(program)
            original = program       # views read back as symgrad's notation: the user's names
            if names and rng.random() < 0.5:
                program = renamed(program, rng)
            stage = "check"
            order = 2
            if "logcumsumexp" in ops:
                order = 1            # torch's double backward of it is wrong (see below)
                notes["torch_order2"] += 1
            # programs draw nan and inf on purpose (with_nans, overflow): they must
            # propagate as torch's do, so there nan agrees with nan
            report = sg.check(program.function("sg"), shapes=program.shapes,
                              dims=program.dims, order=order, sample=program.sample,
                              reference=program.function("torch"), trials=trials, seed=seed,
                              rtol=RTOL, atol=ATOL, raise_on_mismatch=False,
                              backends=backends, equal_nan=True)
            report.failures = singular_second_order(report.failures, notes)
            problems = [] if report.ok else [str(report)]
            if edges:
                stage = "edges"
                problems += check_edges(program, seed, notes=notes, backends=backends)
            if views:
                stage = "views"
                problems += check_views(original, seed,
                                        renamed=program if program is not original else None)
            if names:
                stage = "names"
                problems += refuses_look_alikes(program, rng)
    except Timeout as e:
        return Outcome(seed, "error", "timeout", str(e), program,
                       seconds=time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 - every failure is a finding, tallied by kind
        return Outcome(seed, "error", error_kind(stage, e), f"{type(e).__name__}: {e}",
                       program, seconds=time.perf_counter() - start)
    if problems and program is not None and program.ties(
            np.random.default_rng([seed, 17]), also=[view_args(original, seed)]):
        notes["tie"] += 1            # see Program.ties: a comparison of rounding-equal values
        problems = []
    status = "mismatch" if problems else "ok"
    return Outcome(seed, status, "", "\n".join(problems), program, ops,
                   time.perf_counter() - start, notes)


def run_threaded(seeds, threads=8, max_steps=5, backends=("numpy", "torch")):
    """Problems found running the programs of ``seeds`` at once, one per thread (up to
    ``threads``): each thread traces, differentiates, compiles (both backends) and calls
    its program; the results must equal torch.autograd's, computed beforehand."""
    import threading

    import torch

    jobs = []
    for seed in seeds:
        try:
            program = generate(seed, max_steps)
        except GenerationFailure:
            continue
        if program.ties(np.random.default_rng([seed, 17])):
            continue                 # rounding decides a comparison (Program.ties)
        rng = np.random.default_rng(seed)
        arrays = [np.asarray(program.sample(i.name, concrete(i.shape, program.dims), rng),
                             dtype=float) for i in program.inputs]
        jobs.append((seed, program, arrays, torch_gradients(program, arrays)))
    jobs = jobs[:threads]
    problems = []
    barrier = threading.Barrier(len(jobs))

    def work(seed, program, arrays, ref):
        try:
            barrier.wait()
            g = sg.grad_fn(program.function("sg"), shapes=program.shapes)
            for backend in backends:
                args = [torch.as_tensor(a) for a in arrays] if backend == "torch" else arrays
                got = g.compile(backend)(*args)
                for x, o, r, a in zip(g.inputs, got, ref, arrays):
                    problems.extend(f"seed {seed} (thread): {p}" for p in compare(
                        f"{backend} d/d{x.name}", o, r, np.shape(a), "float64", RTOL, ATOL))
        except Exception as e:  # noqa: BLE001 - a crash under threads is a finding
            problems.append(f"seed {seed} (thread): {type(e).__name__}: {e}")

    workers = [threading.Thread(target=work, args=job) for job in jobs]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    return problems


@dataclass
class Tally:
    programs: int = 0
    ok: int = 0
    mismatches: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    ops: Counter = field(default_factory=Counter)
    templates: Counter = field(default_factory=Counter)
    notes: Counter = field(default_factory=Counter)
    threaded_runs: int = 0
    threaded_problems: list = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0

    def add(self, o):
        self.programs += 1
        self.seconds += o.seconds
        if o.status == "ok":
            self.ok += 1
        elif o.status == "mismatch":
            self.mismatches.append(o)
        else:
            self.errors.append(o)
        self.ops.update(o.ops)
        self.notes.update(o.notes)
        if o.program is not None:
            self.steps += len(o.program.steps)
            self.templates.update(o.program.templates())

    def summary(self):
        rules = set(sg.rules.names())
        covered = rules & set(self.ops)
        kinds = Counter(o.kind for o in self.errors)
        lines = [
            f"programs: {self.programs}  (steps {self.steps}, "
            f"{self.seconds / max(self.programs, 1):.2f} s per program)",
            f"ok: {self.ok}",
            f"mismatches: {len(self.mismatches)}",
            f"errors: {len(self.errors)}",
        ]
        for kind, n in kinds.most_common():
            lines.append(f"  {n:6d}  {kind}")
        if self.threaded_runs:
            lines.append(f"threaded runs (8 programs at once): {self.threaded_runs}, "
                         f"problems: {len(self.threaded_problems)}")
        lines.append("tolerated at nan/inf/zero sizes and singular points (edges.py, runner.py): "
                     + (", ".join(f"{k} {v}" for k, v in sorted(self.notes.items()))
                        or "none"))
        lines.append(f"rule ops covered: {len(covered)}/{len(rules)}"
                     + (f"  (missing: {', '.join(sorted(rules - covered))})"
                        if rules - covered else ""))
        from rule_specs import SPECS
        total = sum(len(s.cases) for s in SPECS.values())
        lines.append(f"templates (op shape cases) used: {len(self.templates)}/{total}")
        return "\n".join(lines)
