"""Repeated steps in a traced graph: a Python loop that ran K times leaves K copies of its
body in the trace, each reading the copy before it (its *carries*) and values computed
before the loop (its *invariants*). ``find_loop`` finds the longest such run, so that
differentiation can work on one copy (``diff.rolled``) and code generation can emit one
loop over it instead of K copies (``codegen.rolled``): time to a compiled gradient then
no longer grows with K beyond the trace itself.

The search is linear in the graph. In the order the trace made the nodes (a topological
order too) one iteration of the loop is one stretch of nodes, whatever chains it
updates, so the copies lie one after the other. Each node gets a signature (its op,
parameters, shape and kind, and its inputs' ops); a period p is a distance at which equal
signatures follow each other often (and twice it, for copies that read two back). For
each candidate p, a run of positions whose signature equals the one p before is then
checked exactly, copy against copy: the same op, parameters, shape and kind at each
position, and each input either the same node in every copy (an invariant, computed
before the run), the node at the same position of the same copy, or of the copy before
(a carry). Of the starting points, the one whose copies hand the fewest values to the
next (and read none from two copies back) is taken.

What is rolled is only the copies that nothing after the run reads: a value of copy j is
read by copy j or j + 1 alone. The last copy is left to the rest of the program (it is the
one the rest reads), so ``Loop.steps`` copies are rolled and the nodes of the copy after
them, at the carry positions, are the loop's results (``Loop.finals``).
"""
from collections import Counter

from .build import typed_key
from .shapes import shapes_equal

# A run shorter than this many copies, or with fewer nodes, stays straight-line code.
MIN_STEPS = 8
MIN_NODES = 200
CANDIDATES = 4


class Loop:
    """A run of ``steps`` identical copies of a body in a topological ``order``.

    ``body`` are the nodes of one copy, in order (copy 1 of the run, which reads copy 0);
    ``roles[k][i]`` says what input ``i`` of ``body[k]`` is: ``("step", o)`` the node at
    position o of the same copy, ``("carry", o)`` the node at position o of the copy
    before, ``("outside", node)`` a node computed before the run. ``carries`` are the
    positions (in a copy) of the values each copy hands to the next, ``inits`` the nodes
    copy 0 reads in their place, ``finals`` the nodes at those positions of the copy
    after the last rolled one: what the rest of the program reads of the loop."""

    __slots__ = ("order", "start", "period", "steps", "body", "roles", "carries", "inits",
                 "finals", "outside")

    def __init__(self, order, start, period, steps, roles, carries, inits):
        self.order = order
        self.start = start
        self.period = period
        self.steps = steps
        self.body = order[start + period:start + 2 * period]
        self.roles = roles
        self.carries = carries
        self.inits = inits
        last = start + (steps - 1) * period
        self.finals = [order[last + o] for o in carries]
        seen, outside = set(), []
        for row in roles:
            for kind, ref in row:
                if kind == "outside" and id(ref) not in seen:
                    seen.add(id(ref))
                    outside.append(ref)
        self.outside = outside     # the invariants, in order of first use

    @property
    def end(self):
        """Position in ``order`` just past the rolled copies."""
        return self.start + self.steps * self.period

    def __repr__(self):
        return (f"<Loop of {self.steps} steps x {self.period} ops at {self.start}, "
                f"{len(self.carries)} carries, {len(self.outside)} invariants>")


def _signature(node):
    return hash((node.op, node.params, node.shape, node.kind,
                 tuple([i.op for i in node.inputs])))


def _periods(sigs):
    """Candidate periods: the distances at which equal signatures most often follow."""
    last, counts = {}, {}
    for t, s in enumerate(sigs):
        prev = last.get(s)
        if prev is not None:
            d = t - prev
            counts[d] = counts.get(d, 0) + 1
        last[s] = t
    return [p for p, c in Counter(counts).most_common(CANDIDATES) if c >= MIN_STEPS]


def _runs(sigs, p):
    """Maximal ranges [s, e) of positions t whose signature equals the one at t - p."""
    runs, s = [], None
    for t in range(p, len(sigs)):
        if sigs[t] == sigs[t - p]:
            if s is None:
                s = t
        elif s is not None:
            runs.append((s, t))
            s = None
    if s is not None:
        runs.append((s, len(sigs)))
    return runs


def _same_node(a, b):
    return (a.op == b.op and len(a.inputs) == len(b.inputs) and a.kind == b.kind
            and (a.shape == b.shape or shapes_equal(a.shape, b.shape))
            and (a.params is b.params or typed_key(a.params) == typed_key(b.params)))


class _Checker:
    """Exact comparison of copies at one start and period (see the module docstring)."""

    def __init__(self, order, pos, start, p):
        self.order, self.pos, self.start, self.p = order, pos, start, p

    def roles(self):
        """The roles of copy 1's inputs, from copy 1 against copy 0, and the inits copy 0
        reads for each carry; None when the two copies differ."""
        order, pos, a, p = self.order, self.pos, self.start, self.p
        roles, inits = [], {}
        for k in range(p):
            n, m = order[a + p + k], order[a + k]
            if not _same_node(n, m):
                return None
            row = []
            for u, v in zip(n.inputs, m.inputs):
                pu = pos[id(u)]
                if pu >= a + p:
                    if pos[id(v)] != pu - p:
                        return None
                    row.append(("step", pu - a - p))
                elif pu >= a:
                    o = pu - a
                    if pos[id(v)] >= a or inits.setdefault(o, v) is not v \
                            or v.kind != u.kind or not shapes_equal(v.shape, u.shape):
                        return None
                    row.append(("carry", o))
                elif u is v:
                    row.append(("outside", u))
                else:
                    return None
            roles.append(tuple(row))
        return roles

    def copies(self, roles, limit):
        """How many copies from the start match ``roles`` (copies 0 and 1 do), up to
        ``limit``."""
        order, pos, a, p = self.order, self.pos, self.start, self.p
        template = []
        for k in range(p):
            m = order[a + p + k]
            checks = tuple((i, ref, None) if kind == "outside" else
                           (i, None, ref - p if kind == "carry" else ref)
                           for i, (kind, ref) in enumerate(roles[k]))
            template.append((m, checks))
        for j in range(2, limit):
            base = a + j * p
            for k, (m, checks) in enumerate(template):
                n = order[base + k]
                if not _same_node(n, m):
                    return j
                inputs = n.inputs
                for i, ref, offset in checks:
                    if offset is None:
                        if inputs[i] is not ref:
                            return j
                    elif pos[id(inputs[i])] != base + offset:
                        return j
        return limit


def _cyclic_add(diff, lo, hi, p):
    """Add 1 over the cyclic range [lo, hi] of phases mod p (a difference array)."""
    lo, hi = lo % p, hi % p
    diff[lo] += 1
    diff[hi + 1] -= 1
    if lo > hi:
        diff[0] += 1
        diff[p] -= 1


def _best_phase(order, users_end, start, p, copies):
    """The start in [start, start + p) whose copies hand on the fewest values and read
    nothing from two copies back. A node at position t whose last reader inside the run
    is at e, d = e - t later, carries to the next copy when a copy boundary lies in
    (t, e]; two boundaries there (possible when p <= d < 2p) make that phase invalid."""
    if copies < 3:
        return start
    carries, bad = [0] * (p + 1), [0] * (p + 1)
    for t in range(start + p, start + 2 * p):
        d = users_end.get(id(order[t]), t) - t
        u = t - start
        if d >= 2 * p:
            return start
        if d >= p:
            _cyclic_add(carries, 0, p - 1, p)
            if d > p:
                _cyclic_add(bad, u + 1, u + d - p, p)
        elif d > 0:
            _cyclic_add(carries, u + 1, u + d, p)
    best, best_count, running, invalid = 0, None, 0, 0
    for phase in range(p):
        running += carries[phase]
        invalid += bad[phase]
        if not invalid and (best_count is None or running < best_count):
            best, best_count = phase, running
    return start + best


def find_loop(order):
    """The longest run of repeated copies in the topological ``order`` worth rolling
    (``MIN_STEPS`` copies and ``MIN_NODES`` nodes rolled), as a ``Loop``, or None.

    The nodes are taken in the order the trace created them (``Tensor.serial``, a
    topological order too), where one iteration of a Python loop is one stretch of
    nodes, whatever chains it updates; a period whose copies read two copies back (a, b
    = b, f(a, b)) is tried again at twice its length."""
    if len(order) < MIN_NODES:
        return None
    order = sorted(order, key=_created)
    sigs = [_signature(n) for n in order]
    periods = _periods(sigs)
    if not periods:
        return None
    pos = {id(n): t for t, n in enumerate(order)}
    last = list(range(len(order)))          # the position of each node's last reader
    for t, n in enumerate(order):
        for u in n.inputs:
            last[pos[id(u)]] = t
    best, tried = None, set()
    for p in periods:
        for period in (p, 2 * p):
            if period in tried:
                continue
            tried.add(period)
            found = _at_period(order, pos, last, sigs, period)
            if found is not None and (best is None or found.steps * found.period
                                      > best.steps * best.period):
                best = found
            if found is not None:
                break
    return best


def _created(node):
    return node.serial


def _at_period(order, pos, last, sigs, p):
    """The Loop rolling the most nodes at period p, or None."""
    best = None
    for s, e in _runs(sigs, p):
        if (e - s) // p + 1 < MIN_STEPS + 1 or (e - s + p) < MIN_NODES:
            continue
        found = _longest(order, pos, s - p, e, p)
        if found is None:
            continue
        loop = _rolled(order, last, *found)
        if loop is not None and (best is None or loop.steps > best.steps):
            best = loop
    return best


def _longest(order, pos, a, b, p):
    """(start, period, copies, roles, inits) of the longest exactly repeated run in
    [a, b) at period p, starting at the phase whose copies hand on the fewest values
    (else at ``a``), or None."""
    window = _last_readers(order, pos, a + p, min(b, a + 3 * p))   # copy 1's readers
    phased = _best_phase(order, window, a, p, (b - a) // p)
    found = _scan(order, pos, phased, b, p)
    if phased != a and (found is None or found[2] < (b - phased) // p):
        other = _scan(order, pos, a, b, p)
        if other is not None and (found is None or other[2] > found[2]):
            found = other
    if found is None:
        return None
    start, _, copies, roles = found
    return start, p, copies, roles, _inits(order, start, p, roles)


def _scan(order, pos, a, b, p):
    """(start, period, copies, roles) of the longest run of copies that match exactly,
    scanning [a, b) copy by copy, or None."""
    best = None
    while a + 2 * p <= b:
        checker = _Checker(order, pos, a, p)
        roles = checker.roles()
        if roles is None:
            a += p
            continue
        copies = checker.copies(roles, (b - a) // p)
        if best is None or copies > best[2]:
            best = (a, p, copies, roles)
        a += copies * p
    return best


def _last_readers(order, pos, a, b):
    """{id(node): position of its last reader} for the nodes in [a, b) read inside it."""
    last = {}
    for t in range(a, b):
        for u in order[t].inputs:
            if pos[id(u)] >= a:
                last[id(u)] = t
    return last


def _inits(order, a, p, roles):
    """{carry position: the node copy 0 reads for it}."""
    inits = {}
    for k, row in enumerate(roles):
        for u, (kind, ref) in zip(order[a + k].inputs, row):
            if kind == "carry":
                inits.setdefault(ref, u)
    return inits


def _rolled(order, last, start, p, copies, roles, inits):
    """The Loop of the copies nothing outside the run reads (see the module docstring),
    or None when too few remain; ``last[t]``: where the node at t is read last."""
    end = start + copies * p
    steps = copies - 1                          # the last copy belongs to the rest
    read_after = next((t for t in range(start, end) if last[t] >= end), None)
    if read_after is not None:
        steps = min(steps, (read_after - start) // p)
    if steps < MIN_STEPS or steps * p < MIN_NODES:
        return None
    carries = sorted({ref for row in roles for kind, ref in row if kind == "carry"})
    return Loop(order, start, p, steps, roles, carries, [inits[o] for o in carries])


class RolledGradient:
    """The gradient of a function with a ``Loop``, as graphs of a few nodes each, for code
    that runs the loop's body and its VJP in two loops (built by ``diff.rolled``, emitted
    by ``codegen.rolled``). In the order the code computes them:

    head       ``inits`` (per carry) and ``invariants`` (the computed values the body
               reads), nodes of the traced graph before the loop;
    forward    ``steps`` times: the body on ``carry_in`` (symbols, per carry) and
               ``invariant_symbols`` (one per invariant) gives ``carry_out`` (per carry),
               and the ``residuals`` (body values the VJP reads) are saved;
    tail       the rest of the function on ``finals`` (symbols for the last carry
               values): ``value``, ``cot_finals`` (their cotangents, None if zero) and
               ``tail_grads`` (the gradient along paths that avoid the loop);
    backward   from ``cot_finals``, ``steps`` times in reverse: the VJP on ``cot_out``
               (symbols, per float carry, else None) and the saved residuals gives
               ``cot_in`` (per carry, None if zero) and, per entry of
               ``cot_sources``, a contribution to its cotangent (None if zero);
    head VJP   from ``cot_inits`` (per carry) and ``cot_outside`` (per entry of
               ``cot_sources``), symbols for what the backward loop leaves: ``grads``,
               the whole gradient (per ``wrt`` input, None if zero).

    ``cot_sources`` are the body's inputs outside the loop that carry a gradient: the
    invariant symbols and user inputs the body reads directly; ``cot_targets`` the head
    nodes they stand for."""

    def __init__(self, **fields):
        self.inputs = fields["inputs"]
        self.wrt = fields["wrt"]
        self.steps = fields["steps"]
        self.inits = fields["inits"]
        self.invariants = fields["invariants"]
        self.carry_in = fields["carry_in"]
        self.invariant_symbols = fields["invariant_symbols"]
        self.carry_out = fields["carry_out"]
        self.residuals = fields["residuals"]
        self.finals = fields["finals"]
        self.value = fields["value"]
        self.cot_finals = fields["cot_finals"]
        self.tail_grads = fields["tail_grads"]
        self.cot_out = fields["cot_out"]
        self.cot_in = fields["cot_in"]
        self.cot_sources = fields["cot_sources"]
        self.cot_targets = fields["cot_targets"]
        self.cot_contributions = fields["cot_contributions"]
        self.cot_inits = fields["cot_inits"]
        self.cot_outside = fields["cot_outside"]
        self.grads = fields["grads"]
