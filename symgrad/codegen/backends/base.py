"""The Backend object: what generated code needs from a target, apart from the spellings
of ops (which its printer reads from the OpDefs).

A backend knows how to import its module, check and convert the arguments of a
generated function, bind symbolic dims from their shapes, allocate zeros, copy an
output, and hold the constant arrays a function captured. ``codegen.emit`` assembles a
function from these and the printed statements; it never compares backend names.
"""
from ...core.program import TemplateCache


class Backend:
    """One code target. Subclasses fill in the class attributes and the methods below."""

    name = None
    modules = ()            # module names the code refers to (import lines / namespace)
    argument_helper = ""    # source of the helper converting arguments that need it
    scatter_in_place = True  # gradient slices are written into a zeros buffer in place
    arrays_on_entry = False  # captured arrays are converted when the function starts
    converts_first = False   # every argument is converted before any is checked
    blas_threads = False     # runs NumPy arrays and BLAS: compiling applies ``codegen.threads``
    #                          and ``codegen.heap``
    rolls_loops = False      # a repeated body runs as a Python loop (``codegen.rolled``)

    def __init__(self):
        self._templates = None

    def rolls(self, plan):
        """Whether this backend compiles the rolled gradient ``plan`` (``codegen.rolled``)
        rather than the straight-line program."""
        return self.rolls_loops

    def printer(self):
        """A new printer of this backend (its class imports lazily what it needs)."""
        raise NotImplementedError

    @property
    def templates(self):
        """The statement templates of this backend's printer (numbers printed as floats)."""
        if self._templates is None:
            self._templates = TemplateCache(self.printer(), float_constants=True)
        return self._templates

    def namespace(self):
        """{module name: module} for compiling generated code."""
        raise NotImplementedError

    def checks_shape(self, arg):
        """Whether the code checks the argument's rank and shape after converting it."""
        return True

    def entry_lines(self, args):
        """Lines before any argument is converted."""
        return []

    def argument_lines(self, arg):
        """Lines converting an argument (``emit.Argument``: its ``code`` name, ``label``
        for messages, ``shape``) when it is not already what the code computes with."""
        return []

    index_helpers = {}   # helper definitions ``index_argument_lines`` calls

    def index_argument_lines(self, arg):
        """Lines checking an integer or boolean argument's dtype (its shape is checked
        like any argument's)."""
        raise ArgumentError_unsupported(self.name, arg)

    def ndim(self, name):
        return f"{name}.ndim"

    def prologue(self, names, arrays, args=()):
        """Lines after the arguments are unpacked and converted (``arrays``: the names of
        the captured constant arrays the code uses)."""
        return []

    def ready_lines(self, args):
        """For arguments that are all float arrays: (a condition true when they are
        already what the code computes with, the lines that replace conversions and
        prologue then), or None. The common call skips converting argument by argument."""
        return None

    def zeros(self, shape):
        raise NotImplementedError

    def copy(self, name):
        """A fresh array with the value of ``name`` (an output must not alias an input
        or a read-only view)."""
        raise NotImplementedError

    def scalar_output(self, value, printer):
        """The returned expression of a constant scalar output."""
        return printer.doprint(value)

    def scalar_result(self, name):
        """The returned expression of a computed scalar output named ``name``."""
        return name

    def as_float(self, name, shape):
        """The returned expression of an output computed as ints or bools: floats (a
        fresh array), as the gradient of a float input is."""
        raise NotImplementedError

    def array_constant(self, array):
        """A captured array as the compiled code's namespace holds it."""
        return array

    def standalone_lines(self):
        """Definitions standalone source needs beyond its imports (names the compiled
        function gets from ``namespace``)."""
        return []

    def array_literal(self, array):
        """A captured array as standalone source writes it."""
        raise NotImplementedError

    def body_prefix(self, args):
        """Lines before the statements (after the argument checks)."""
        return []

    def result(self, expr, args):
        """The returned expression of the tuple ``expr``: its arrays in the dtype the
        arguments give (``_dt``), see ``dtype_policy`` in the README."""
        return expr

    def wrap_lines(self, func_name, args):
        """Lines after the function's definition (the JAX backend wraps it in ``jax.jit``)."""
        return []

    def __repr__(self):
        return f"<symgrad backend {self.name}>"



def ArgumentError_unsupported(backend, arg):
    from ...errors import UnsupportedOpError
    return UnsupportedOpError(f"the {backend} backend takes float arguments only; "
                              f"{arg.node.name} is an {arg.node.kind} input; compile for "
                              "numpy or torch")
