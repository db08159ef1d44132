"""A rolled gradient of scalars as one native function (``codegen.rolled``'s ``RolledBody``
for the C and Numba backends): the head, a loop over the body saving the values its VJP
reads in one block of ``steps`` rows, the tail and its VJP, a loop over the body's VJP in
reverse, the head's VJP. The statements are the backend's element templates; the
function's text is as long as one copy of the body whatever the number of steps, and so
is the compiler's work (a straight-line gradient of a 1000-step chain is 12 000
statements: seconds for a C compiler, a minute for Numba).

``Syntax`` says how the target writes a declaration, a loop, a store; ``function_lines``
writes the function, and ``wrapper_source`` the Python function around it: Python
floats go straight to the native function, anything else through the NumPy backend's
argument checks first.
"""
from sympy.printing.codeprinter import PrintMethodNotImplementedError

from ...core.graph import topo_order
from ...core.opdef import OPS
from ...core.program import Program
from ...errors import RegistryError
from ..names import code_name


def plan_nodes(plan):
    """Every node of the rolled gradient's graphs (head, body, tail, their VJPs)."""
    pieces = (list(plan.inits) + list(plan.invariants) + list(plan.carry_out)
              + list(plan.residuals) + list(plan.cot_finals) + list(plan.tail_grads)
              + [plan.value] + list(plan.cot_in) + list(plan.cot_contributions)
              + list(plan.grads))
    return topo_order([n for n in pieces if n is not None])


def native(plan, templates, kinds=("float", "bool")):
    """Whether the rolled gradient is of float scalars only (no captured arrays) and every
    statement is a pointwise op on values of ``kinds`` with a template in ``templates``."""
    if any(x.shape or x.kind != "float" for x in plan.inputs):
        return False
    nodes = plan_nodes(plan)
    if any(n.shape or n.op == "array" for n in nodes):
        return False
    prog = Program([n for n in nodes if n.inputs], plan.inputs,
                   input_name=lambda x: code_name(x.name))
    for _, node, operands in prog.statements:
        if not OPS[node.op].pointwise or node.kind not in kinds or any(
                i.kind not in kinds for i in node.inputs):
            return False
        try:
            templates.template(node, operands)
        except (PrintMethodNotImplementedError, RegistryError, KeyError, TypeError,
                ValueError, AttributeError):
            return False
    return True


class CSyntax:
    indent = "    "

    def header(self, n_in, n_out):
        params = [f"double a{j}" for j in range(n_in)] + ["double *restrict out"]
        return [f"int sg_r({', '.join(params)}) {{"]

    def const(self, name, text):
        return f"const double {name} = {text};"

    def var(self, name, text):
        return f"double {name} = {text};"

    def allocate(self, rows, width):
        return [f"double *ls = (double *)malloc(sizeof(double) * {rows * width});",
                "if (!ls) return 1;"]

    def free(self):
        return ["free(ls);"]

    def loop(self, steps, reverse):
        if reverse:
            return f"for (long k = {steps - 1}; k >= 0; k--) {{"
        return f"for (long k = 0; k < {steps}; k++) {{"

    end = "}"

    def store(self, width, j, name):
        return f"ls[k * {width} + {j}] = {name};"

    def load(self, width, j, name):
        return f"const double {name} = ls[k * {width} + {j}];"

    def assign(self, targets, values):
        news = [f"n{j}" for j in range(len(targets))]
        return (["{"] + [f"    const double {n} = {v};" for n, v in zip(news, values)]
                + [f"    {t} = {n};" for t, n in zip(targets, news)] + ["}"])

    def finish(self, results):
        return [f"out[{j}] = {r};" for j, r in enumerate(results)] + ["return 0;", "}"]


class PythonSyntax:
    """Python as Numba compiles it (``@numba.njit``): the saved values in a NumPy array."""

    indent = "    "

    def header(self, n_in, n_out):
        return [f"def sg_r({', '.join(f'a{j}' for j in range(n_in))}):"]

    def const(self, name, text):
        return f"{name} = {text}"

    var = const

    def allocate(self, rows, width):
        return [f"ls = numpy.empty(({rows}, {width}))"]

    def free(self):
        return []

    def loop(self, steps, reverse):
        return f"for k in range({steps - 1}, -1, -1):" if reverse else f"for k in range({steps}):"

    end = None

    def store(self, width, j, name):
        return f"ls[k, {j}] = {name}"

    def load(self, width, j, name):
        return f"{name} = ls[k, {j}]"

    def assign(self, targets, values):
        return [", ".join(targets) + ", = " + ", ".join(values) + ","]

    def finish(self, results):
        return ["return (" + ", ".join(results) + ("," if len(results) == 1 else "") + ")"]


class _Names:
    """Native names for the Python names of a ``RolledBody``: ``a<j>`` for the arguments,
    ``v<k>`` for every other value (user names never reach the native code)."""

    def __init__(self, inputs):
        self.names = {code_name(x.name): f"a{j}" for j, x in enumerate(inputs)}
        self.count = 0

    def __call__(self, name):
        found = self.names.get(name)
        if found is None:
            found = self.names[name] = f"v{self.count}"
            self.count += 1
        return found


def function_lines(body, templates, syntax, with_value, preamble=None):
    """(the native function's lines, its number of statements, of results); the helpers
    its templates call go into ``preamble``."""
    p = body.plan
    printer = templates.printer
    head, forward, tail, backward, grads = body.programs
    c = _Names(p.inputs)
    counted = [0]

    def statements(prog):
        lines = []
        for name, node, operands in prog.statements:
            tpl = templates.template(node, operands)
            if preamble is not None:
                preamble.update(tpl.preamble)
            lines.append(syntax.const(c(name), tpl.fill(
                [c(n) if n is not None else None for n in operands])))
        counted[0] += len(prog.statements)
        return lines

    def value(prog, node):
        if node is None:
            return "0.0"
        if node.is_const and not node.shape:
            return printer.doprint(node.attrs["value"])
        return c(prog.names[id(node)])

    def loop(steps, reverse, lines):
        block = [syntax.loop(steps, reverse)] + [syntax.indent + line for line in lines]
        return block + ([syntax.end] if syntax.end else [])

    steps, saved = p.steps, [forward.names[id(r)] for r in p.residuals]
    width = len(saved)
    results = list(body.outputs) + ([with_value] if with_value is not None else [])
    lines = statements(head)
    carries = [c(f"_lc{j}") for j in range(len(p.carry_out))]
    lines += [syntax.var(t, value(head, n)) for t, n in zip(carries, p.inits)]
    if width:
        lines += syntax.allocate(steps, width)
    step = statements(forward) + [syntax.store(width, j, c(n)) for j, n in enumerate(saved)]
    step += syntax.assign(carries, [value(forward, n) for n in p.carry_out])
    lines += loop(steps, False, step)
    lines += statements(tail)
    floats = [j for j, s in enumerate(p.cot_out) if s is not None]
    cots = [c(f"_lg{j}") for j in floats]
    accs = [c(f"_lv{j}") for j in range(len(p.cot_targets))]
    lines += [syntax.var(t, value(tail, p.cot_finals[j])) for t, j in zip(cots, floats)]
    lines += [syntax.var(t, "0.0") for t in accs]
    if cots or accs:
        step = [syntax.load(width, j, c(n)) for j, n in enumerate(body.restored)]
        step += statements(backward)
        news = [value(backward, p.cot_in[j]) for j in floats]
        news += [t if n is None else f"{t} + {value(backward, n)}"
                 for t, n in zip(accs, p.cot_contributions)]
        step += syntax.assign(cots + accs, news)
        lines += loop(steps, True, step)
    if width:
        lines += syntax.free()
    lines += statements(grads)
    outs = [value(grads, n) if n is None or n.is_const else c(grads.names[id(n)])
            for n in results]
    lines += syntax.finish(outs)
    head_line = syntax.header(len(p.inputs), len(results))
    body_lines = [syntax.indent + line for line in lines[:-1]] + (
        [lines[-1]] if syntax.end else [syntax.indent + lines[-1]])
    return head_line + body_lines, counted[0], len(results)


def wrapper_source(emit, body, numpy_backend, name, call, with_value):
    """The Python function ``name`` around the native one: ``call`` are the lines that
    run it on the arguments (by their code names) and leave the results in ``_o``."""
    args = [emit.Argument(x) for x in body.plan.inputs]
    outputs = body.outputs
    parts = ["0.0" if o is None else f"_o[{j}]" for j, o in enumerate(outputs)]
    result = "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"
    if with_value is not None:
        result = f"(_o[{len(outputs)}], {result})"
    unpack = ", ".join(a.code for a in args) + ("," if len(args) == 1 else "") + " = args"
    names = ", ".join(x.name for x in body.plan.inputs)
    count = emit.say(f"{name}() takes {len(args)} arguments ({names}), got ",
                     emit.Code("len(args)"))
    preamble = {}
    checked = [f"if len(args) != {len(args)}:", f"    raise ArgumentError({count})"]
    if args:
        checked.append(unpack)
    checked += emit._arguments_code(args, numpy_backend, {}, preamble)
    checked += emit._translated_errors(call + [f"return {numpy_backend.result(result, args)}"],
                                       name)
    test = " and ".join(f"type({a.code}) is float" for a in args) or "True"
    fast = [f"if len(args) == {len(args)}:"] + (["    " + unpack] if args else [])
    fast += [f"    if {test}:"] + ["        " + line for line in call]
    fast += [f"        return {result}"]
    src = [numpy_backend.argument_helper] + list(preamble.values())
    src += ["", "def _checked(*args):"] + ["    " + line for line in checked]
    src += ["", f"def {name}(*args):"] + ["    " + line for line in fast]
    src += ["    return _checked(*args)"]
    return "\n".join(src) + "\n"
