"""``python -m tests.fuzz --programs 10000``: a long differential fuzzing campaign.

Programs are seeds ``--seed``, ``--seed + 1``, ...; each is generated, derived by symgrad
and compared with torch.autograd at orders 1 and 2 (NumPy and torch backends), every
other one under hostile names, then run at the edges (float32, integers, nan/inf, zero
sizes, checking dtype and shape) with its printed views evaluated (``runner``). Every
``--threads-every`` programs, the last 8 also run at once from 8 threads. Prints the
counts (programs, ops covered, mismatches, errors by kind, what the edge runs tolerated)
and, for every failure, the program and the command that reproduces it. Exit status 1
when anything failed. Run it with ``nice``: it uses one core.
"""
import argparse
import sys
import time
import warnings

from .runner import Tally, run_one, run_threaded


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--programs", type=int, default=1000, help="how many programs (seeds)")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--max-steps", type=int, default=5, help="steps per program, at most")
    p.add_argument("--trials", type=int, default=2, help="random inputs per program")
    p.add_argument("--timeout", type=float, default=120, help="seconds per program")
    p.add_argument("--show", type=int, default=5, help="failures printed in full")
    p.add_argument("--threads-every", type=int, default=100,
                   help="run the last 8 programs from 8 threads every this many (0: never)")
    p.add_argument("--backends", default="numpy,torch",
                   help="compiled backends checked, comma-separated (e.g. numpy,torch,jax,c)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print every program and its outcome")
    args = p.parse_args(argv)
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())

    warnings.simplefilter("ignore")     # numpy's divide-by-zero warnings and the like
    tally = Tally()
    start = time.perf_counter()
    for seed in range(args.seed, args.seed + args.programs):
        outcome = run_one(seed, args.max_steps, args.trials, args.timeout,
                          backends=tuple(args.backends.split(",")))
        tally.add(outcome)
        if args.verbose:
            print(outcome.report() if outcome.program is not None else outcome.status,
                  end="\n\n", flush=True)
        elif outcome.status != "ok":
            print(f"seed {seed}: {outcome.status} {outcome.kind}".rstrip(), flush=True)
        if args.threads_every and tally.programs % args.threads_every == 0:
            threaded = run_threaded(range(seed - 7, seed + 1), backends=backends)
            tally.threaded_runs += 1
            tally.threaded_problems += threaded
            for problem in threaded:
                print(problem, flush=True)
        if tally.programs % 1000 == 0 and not args.verbose:
            print(f"... {tally.programs} programs, {len(tally.mismatches)} mismatches, "
                  f"{len(tally.errors)} errors, {time.perf_counter() - start:.0f} s",
                  flush=True)
    failures = tally.mismatches + tally.errors + tally.threaded_problems
    if not args.verbose:
        for o in (tally.mismatches + tally.errors)[:args.show]:
            print("\n" + o.report())
    print(f"\nseeds {args.seed}..{args.seed + args.programs - 1}, "
          f"{time.perf_counter() - start:.0f} s")
    print(tally.summary())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
