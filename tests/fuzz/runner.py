"""Run generated programs through ``sg.check`` and tally the outcomes.

One program is: generate it from its seed, then ``sg.check`` with its torch reference at
orders 1 and 2, NumPy and torch backends, on fresh draws from its inputs' samplers.
Outcomes are ``ok``, ``mismatch`` (symgrad and torch.autograd disagree: a wrong answer)
or ``error`` (symgrad raised, or hung past the time limit, on a well-typed program),
errors grouped by kind: the exception type and the symgrad function it came from.
"""
import signal
import time
import traceback
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import symgrad as sg

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


def run_one(seed, max_steps=5, trials=2, timeout=120, first_op=None):
    """Generate the program of ``seed`` and check it against torch.autograd."""
    start = time.perf_counter()
    program = None
    try:
        with time_limit(timeout):
            try:
                program = generate(seed, max_steps, first_op=first_op)
            except GenerationFailure as e:
                return Outcome(seed, "error", error_kind(e.stage, e.error),
                               f"{type(e.error).__name__}: {e.error}", e.program,
                               seconds=time.perf_counter() - start)
            ops = graph_ops(program)
            report = sg.check(program.function("sg"), shapes=program.shapes,
                              dims=program.dims, order=2, sample=program.sample,
                              reference=program.function("torch"), trials=trials, seed=seed,
                              rtol=RTOL, atol=ATOL, raise_on_mismatch=False)
    except Timeout as e:
        return Outcome(seed, "error", "timeout", str(e), program,
                       seconds=time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 - every failure is a finding, tallied by kind
        return Outcome(seed, "error", error_kind("check", e), f"{type(e).__name__}: {e}",
                       program, seconds=time.perf_counter() - start)
    status = "ok" if report.ok else "mismatch"
    return Outcome(seed, status, "", "" if report.ok else str(report), program, ops,
                   time.perf_counter() - start)


@dataclass
class Tally:
    programs: int = 0
    ok: int = 0
    mismatches: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    ops: Counter = field(default_factory=Counter)
    templates: Counter = field(default_factory=Counter)
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
        lines.append(f"rule ops covered: {len(covered)}/{len(rules)}"
                     + (f"  (missing: {', '.join(sorted(rules - covered))})"
                        if rules - covered else ""))
        from rule_specs import SPECS
        total = sum(len(s.cases) for s in SPECS.values())
        lines.append(f"templates (op shape cases) used: {len(self.templates)}/{total}")
        return "\n".join(lines)
