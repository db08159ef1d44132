"""The ``symgrad`` command: derivatives of a function or an nn.Module, from the shell.

    symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m
    symgrad examples.cli_net:Net --shape x=B,3 --loss mse --check

TARGET is ``FILE.py:NAME`` (the file is run with ``runpy``, its ``__main__`` block
skipped) or ``package.module:NAME`` (imported, from the current folder as ``python -m``
does). NAME is a function, an nn.Module class (built with no arguments), an nn.Module
instance, or a function of no arguments returning one. No text given on the command line
is ever ``eval``-ed: shapes and dims are read by small parsers.

Errors are one line on stderr, ``symgrad: error: ...``, exit status 2: argparse's usage
errors, symgrad's own errors (their message) and exceptions raised by the user's code
(type, message and the line it came from); ``--traceback`` shows the full traceback
instead. A failed ``--check`` prints ``symgrad: check failed: ...`` and exits with 1.
"""
import argparse
import importlib
import inspect
import os
import runpy
import sys
import traceback

from .errors import CheckError, SymgradError
from .torchfront.named_losses import CLASS_LOSSES, LOSSES, TARGET_LOSSES, named_loss

USAGE_EXIT = 2
CHECK_FAILED_EXIT = 1
INTERRUPTED_EXIT = 130

EXAMPLES = """\
examples (from the repository's root):
  symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m
      the gradient as formulas: dloss/dW = ..., dloss/dx = ..., dloss/db = ...
  symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m --wrt W --latex
      LaTeX of dloss/dW only
  symgrad examples/mlp_cli.py:scalar --hessian
      the Hessian blocks d²f/dx², d²f/dxdy, ... (--jacobian for a non-scalar function)
  symgrad examples/mlp_cli.py:scalar --order 3 --wrt x
      the third derivative d³f/dx³ (one block per multiset of --wrt inputs)
  symgrad examples/mlp_cli.py:annotated --program
      the straight-line program (shapes from the annotations sg.Tensor["m", "n"])
  symgrad examples/mlp_cli.py:annotated --emit numpy > grad.py
      standalone NumPy source of the compiled gradient (--emit torch for torch)
  symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m --check --dims m=3,n=2
      compare with torch.autograd at orders 1 and 2 (--order 1 --check: first only)
  symgrad examples/mlp_cli.py:loss --shape W=n,n --shape x=n --shape b=n --symmetric W
      W is a symmetric matrix: its gradient is the symmetric one, (G + Gᵀ)/2
  symgrad examples.cli_net:Net --shape x=B,3 --loss mse
      an nn.Module: gradient of mse_loss(Net()(x), target) w.r.t. its parameters
  symgrad examples.cli_net:Classifier --shape x=B,4 --loss cross_entropy --check
      integer class targets (shape B, values in [0, classes)) are made up for you
  symgrad examples.cli_net:Net --shape x=3 --jacobian --wrt x
      the Jacobian of the module's output w.r.t. its input

exit status: 0 ok, 1 --check found a mismatch, 2 any error (one line on stderr).
"""


class UsageError(SymgradError):
    """A bad TARGET, a missing file or name, or inconsistent options."""


class UserCodeError(Exception):
    """An exception raised by the user's own code (importing the target or running it)."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``symgrad: error: <message>``, exit status 2."""

    def error(self, message):
        self.exit(USAGE_EXIT, f"{self.prog}: error: {message}\n")


# ----- argument parsers -------------------------------------------------------------------

def _dim(text):
    text = text.strip()
    if text.lstrip("-").isdigit():
        value = int(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"dim {text} is negative")
        return value
    if not text.isidentifier():
        raise argparse.ArgumentTypeError(
            f"dim {text!r} is neither an integer nor a name (use e.g. n or 3)")
    return text


DTYPES = {"float": "float64", "float64": "float64", "int": "int64", "int64": "int64",
          "long": "int64", "bool": "bool"}


def _is_name(name):
    """An identifier, or a module's qualified parameter name (``0.weight``, ``out.bias``)."""
    if name.isidentifier():
        return True
    parts = name.split(".")
    return len(parts) > 1 and all(p.isidentifier() or p.isdigit() for p in parts) \
        and parts[-1].isidentifier()


def shape_spec(text):
    """``NAME=d1,d2,...[:dtype]`` -> (NAME, shape); ``NAME=`` is a scalar; a dtype of
    ``int`` or ``bool`` gives a ``TensorSpec`` (class labels, masks)."""
    name, sep, dims = text.partition("=")
    name = name.strip()
    if not sep or not _is_name(name):
        raise argparse.ArgumentTypeError(
            f"invalid shape {text!r}: expected NAME=d1,d2,... (e.g. W=m,n or x=3; "
            "NAME= for a scalar; y=B:int for integer labels)")
    dims, colon, dtype = dims.partition(":")
    dtype = dtype.strip()
    if colon and dtype not in DTYPES:
        raise argparse.ArgumentTypeError(
            f"invalid shape {text!r}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    try:
        shape = tuple(_dim(d) for d in dims.split(",")) if dims.strip() else ()
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"invalid shape {text!r}: {e}") from None
    if colon and DTYPES[dtype] != "float64":
        from .core.shapes import TensorSpec
        return name, TensorSpec(shape, DTYPES[dtype])
    return name, shape


def dims_spec(text):
    """``m=3,n=2`` -> {"m": 3, "n": 2}."""
    out = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier() or not value.isdigit():
            raise argparse.ArgumentTypeError(
                f"invalid dims {text!r}: expected NAME=INT,... (e.g. m=3,n=2)")
        out[name] = int(value)
    return out


def order_spec(text):
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid order {text!r}: a positive integer "
                                         "(1 gradient, 2 Hessian, 3 ...)")
    return int(text)


def build_parser():
    p = _Parser(
        prog="symgrad",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print derivatives of a Python function or a PyTorch nn.Module as\n"
                    "formulas, LaTeX, a straight-line program or NumPy/torch source, or\n"
                    "check them against torch.autograd.",
        epilog=EXAMPLES)
    from . import __version__
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}",
                   help="print the version and exit (e.g. symgrad --version)")
    p.add_argument("target", metavar="TARGET",
                   help="FILE.py:NAME or package.module:NAME, where NAME is a function, an "
                        "nn.Module class or instance, or a function returning a module "
                        "(e.g. examples/mlp_cli.py:loss, examples.cli_net:Net)")
    inputs = p.add_argument_group("inputs")
    inputs.add_argument(
        "--shape", metavar="NAME=d1,d2", type=shape_spec, action="append", default=[],
        help="shape of an input: dims are ints or names shared across inputs; NAME= is a "
             "scalar; :int or :bool after the dims makes integer or boolean input "
             "(e.g. --shape W=m,n --shape x=n --shape y=B:int). Function parameters not "
             "given are scalars or use their annotations; a module's parameters keep "
             "their sizes unless given (e.g. --shape 0.weight=h,3)")
    inputs.add_argument(
        "--symmetric", metavar="NAME", nargs="+", action="extend", default=[],
        help="these inputs are symmetric matrices (each needs --shape NAME=n,n, or a batch "
             "B,n,n): their transpose is themselves and their gradient the symmetric "
             "one, (G + Gᵀ)/2, as torch.autograd gives for f((A + Aᵀ)/2) "
             "(e.g. --shape A=n,n --symmetric A)")
    inputs.add_argument(
        "--wrt", metavar="NAME", nargs="+", action="extend",
        help="differentiate only w.r.t. these inputs, in this order (e.g. --wrt W b; "
             "a module's parameters by symbol or qualified name, --wrt out.bias); "
             "default: every parameter of a function, the trainable parameters of a "
             "module")
    inputs.add_argument(
        "--loss", choices=LOSSES,
        help="for a module: the loss of its output, F.<loss>(output, target) with a "
             "target input named 'target' shaped like the output (integer class indices "
             "for cross_entropy and nll); 'sum' and 'mean' reduce the output, 'none' "
             "keeps it (for --jacobian). Default: 'none' with --jacobian, else 'sum'. "
             "For a function only sum, mean and none apply. (e.g. --loss cross_entropy)")
    kind = p.add_argument_group("derivative (default: the gradient)").add_mutually_exclusive_group()
    kind.add_argument("--jacobian", action="store_true",
                      help="the Jacobian, for functions with non-scalar or several outputs "
                           "(e.g. symgrad examples/mlp_cli.py:vector_valued --shape W=m,n "
                           "--shape x=n --jacobian)")
    kind.add_argument("--hessian", action="store_true",
                      help="the Hessian blocks d²f/dxdy (e.g. symgrad "
                           "examples/mlp_cli.py:scalar --hessian)")
    kind.add_argument("--order", metavar="N", type=order_spec,
                      help="the N-th derivative: 1 gradient, 2 Hessian, 3 and more one "
                           "block per multiset of inputs, d³f/dx²dy (e.g. --order 3)")
    out = p.add_argument_group("output (default: formulas as text)").add_mutually_exclusive_group()
    out.add_argument("--latex", action="store_true",
                     help="LaTeX of the formulas, an aligned block (e.g. ... --latex)")
    out.add_argument("--program", action="store_true",
                     help="the straight-line program: forward ops, then derivative ops "
                          "(e.g. ... --hessian --program)")
    from .codegen.backends import BACKENDS
    out.add_argument("--emit", choices=sorted(BACKENDS),
                     help="standalone source of the compiled derivative for a backend, "
                          "importing only its library (e.g. --emit numpy > grad.py)")
    out.add_argument("--check", action="store_true",
                     help="compare the compiled gradient with torch.autograd at random "
                          "inputs, orders 1 and 2 (1 only with --order 1), and print the "
                          "report (e.g. --check --dims m=3,n=2)")
    p.add_argument("--dims", metavar="m=3,n=2", type=dims_spec, action="append",
                   help="sizes of symbolic dims for --check; others get small sizes "
                        "(e.g. --dims B=4)")
    p.add_argument("--traceback", action="store_true",
                   help="on an error, show the full Python traceback instead of one line "
                        "(e.g. symgrad model.py:f --traceback)")
    return p


# ----- loading the target -----------------------------------------------------------------

def _check_source(path):
    """A UsageError unless ``path`` holds text Python can read (not a binary file)."""
    import tokenize
    try:
        with tokenize.open(path) as fh:
            text = fh.read()
    except (UnicodeDecodeError, SyntaxError) as e:
        raise UsageError(f"{path} is not Python source ({e})") from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    if "\0" in text:
        raise UsageError(f"{path} is not Python source (it contains null bytes)")


def _is_path(text):
    return text.endswith(".py") or "/" in text or os.sep in text or os.path.exists(text)


def _user_call(fn, *args):
    """``fn(*args)`` with any exception the user's code raises marked as theirs."""
    try:
        return fn(*args)
    except SyntaxError:
        raise
    except Exception as e:
        raise UserCodeError() from e


def _load_file(path):
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory; give a Python file (FILE.py:NAME)")
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    _check_source(path)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)       # let the file import its neighbours, as `python FILE` does
    try:
        namespace = _user_call(runpy.run_path, path, None, "__symgrad__")
    except SyntaxError as e:
        raise UsageError(f"{e.filename or path}:{e.lineno}: syntax error: {e.msg}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            del sys.path[0]
    return namespace, "__symgrad__"


def _load_module(dotted):
    if not all(part.isidentifier() for part in dotted.split(".")):
        raise UsageError(f"{dotted!r} is neither a Python file (FILE.py) nor a module name "
                         "(package.module)")
    sys.path.insert(0, os.getcwd())   # as `python -m` does
    try:
        module = importlib.import_module(dotted)
    except ModuleNotFoundError as e:
        if e.name and (dotted == e.name or dotted.startswith(e.name + ".")):
            raise UsageError(f"no module named {e.name!r} (run symgrad from the folder "
                             f"that holds it, or give its file: "
                             f"{dotted.replace('.', '/')}.py:NAME)") from None
        raise UserCodeError() from e
    except SyntaxError as e:
        raise UsageError(f"{e.filename}:{e.lineno}: syntax error: {e.msg}") from None
    except Exception as e:
        raise UserCodeError() from e
    finally:
        if sys.path and sys.path[0] == os.getcwd():
            del sys.path[0]
    return vars(module), module.__name__


def _is_module_class(obj):
    torch = sys.modules.get("torch")
    return (torch is not None and isinstance(obj, type)
            and issubclass(obj, torch.nn.Module))


def _required_parameters(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p.name for p in sig.parameters.values() if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def load_target(target):
    """The object ``NAME`` of ``FILE.py:NAME`` or ``package.module:NAME``, with an
    nn.Module class or a no-argument factory turned into a module instance."""
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name:
        raise UsageError(f"expected FILE.py:NAME or package.module:NAME (e.g. "
                         f"examples/mlp_cli.py:loss or examples.cli_net:Net), got {target!r}")
    namespace, own = _load_file(where) if _is_path(where) else _load_module(where)
    if name not in namespace:
        found = sorted(k for k, v in namespace.items()
                       if callable(v) and not k.startswith("_")
                       and getattr(v, "__module__", None) == own)
        hint = f" (functions and classes there: {', '.join(found)})" if found else ""
        raise UsageError(f"{where} has no function or module {name!r}{hint}")
    obj = namespace[name]
    from .torchfront.module import is_module
    if is_module(obj):
        return obj
    if _is_module_class(obj):
        required = _required_parameters(obj)
        if required:
            raise UsageError(f"{where}:{name}() needs arguments ({', '.join(required)}); "
                             "write a function of no arguments that builds the module, "
                             f"e.g. def make(): return {name}(...), and give {where}:make")
        _seed()
        return _user_call(obj)
    if isinstance(obj, type) or not callable(obj):
        raise UsageError(f"{where}:{name} is not a function or an nn.Module "
                         f"(got {type(obj).__name__})")
    if _required_parameters(obj) == [] and not inspect.signature(obj).parameters:
        _seed()
        made = _user_call(obj)
        if not is_module(made):
            raise UsageError(f"{where}:{name}() takes no arguments, so it has nothing to "
                             f"differentiate, and it returns a {type(made).__name__}, not an "
                             "nn.Module")
        return made
    return obj


def _seed():
    """Modules are built with torch's generator seeded, so two runs print the same."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


# ----- what to differentiate -------------------------------------------------------------

class Problem:
    """What to differentiate: ``f`` (a function, or a ModuleFunction), its ``shapes``, the
    ``wrt`` to pass on, and how --check should draw the inputs (``sample``)."""

    def __init__(self, f, shapes, wrt, sample=None):
        self.f, self.shapes, self.wrt, self.sample = f, shapes, wrt, sample


def _module_problem(module, shapes, wrt, loss_name, dims):
    from .api.grad import make_inputs, trace
    from .core.shapes import TensorSpec
    from .torchfront.module import module_function
    kind = type(module).__name__
    needed = [n for n in _required_parameters(module.forward) or () if n not in shapes]
    if needed:
        raise UsageError(f"{kind}.forward needs the shape of {', '.join(needed)}: give "
                         + " ".join(f"--shape {n}=..." for n in needed)
                         + f" (e.g. --shape {needed[0]}=B,3; {needed[0]}= for a scalar)")
    probe = module_function(module, {k: v for k, v in shapes.items()
                                     if not _is_target_key(k, module)},
                            loss=named_loss("none", None))
    target = next(n for n in ("target", "y", "labels", "target_") if n not in probe.names)
    given_target = next((k for k in shapes if k in ("target", "y", "labels", "target_")
                         and k not in probe.names), None)
    if given_target is not None:
        target = given_target
    if loss_name not in TARGET_LOSSES:
        if given_target is not None:
            raise UsageError(f"--shape {given_target}=...: --loss {loss_name} has no target")
        mf = module_function(module, shapes, loss=named_loss(loss_name, None))
        if loss_name == "none":
            mf.__name__ = mf.__qualname__ = type(module).__name__
        return Problem(mf, mf.shapes, mf.translate_wrt(wrt), None)
    out = trace(probe, make_inputs(probe, probe.shapes))
    if loss_name in CLASS_LOSSES:
        if not out.shape:
            raise UsageError(f"--loss {loss_name}: {type(module).__name__} returns a scalar; "
                             "class scores need a class dim (shape (C,) or (N, C, ...))")
        axis = 1 if len(out.shape) >= 2 else 0
        classes = out.shape[axis]
        default = TensorSpec(out.shape[:axis] + out.shape[axis + 1:], "int64")
    else:
        classes, default = None, out.shape
    full = dict(shapes)
    full.setdefault(target, default)
    mf = module_function(module, full, loss=named_loss(loss_name, target))
    target_spec = full[target]
    integer = getattr(target_spec, "kind", "float") == "int"

    def sample(name, shape, rng):
        if name == target and integer:
            n = classes if isinstance(classes, int) else dims.get(str(classes))
            if n is None:
                raise UsageError(f"--check: the class dim {classes} of "
                                 f"{type(module).__name__}'s output is symbolic; give its "
                                 f"size with --dims {classes}=...")
            return rng.integers(0, n, shape)
        if name == target and loss_name == "bce":
            return rng.uniform(0.05, 0.95, shape)
        return rng.standard_normal(shape) if shape else float(rng.standard_normal())
    return Problem(mf, mf.shapes, mf.translate_wrt(wrt), sample)


def _is_target_key(key, module):
    return key in ("target", "y", "labels", "target_") and key not in inspect.signature(
        module.forward).parameters


def make_problem(obj, shapes, wrt, loss_name, jacobian, dims):
    from .torchfront.module import _with_loss, is_module
    if is_module(obj):
        if loss_name is None:
            loss_name = "none" if jacobian else "sum"
        return _module_problem(obj, shapes, wrt, loss_name, dims)
    if loss_name in TARGET_LOSSES:
        raise UsageError(f"--loss {loss_name} is for nn.Module targets (it needs the "
                         "module's output and a target); a function computes its own loss "
                         "(--loss sum, mean or none apply to a function)")
    f = obj
    if loss_name in ("sum", "mean"):
        import symgrad as sg
        f = _with_loss(obj, sg.sum if loss_name == "sum" else sg.mean)
    return Problem(f, shapes, wrt)


# ----- running ----------------------------------------------------------------------------

def _derivative(args, problem):
    import symgrad as sg
    from .api.higher import Derivative
    order = 2 if args.hessian else (args.order or 1)
    if args.jacobian:
        return sg.jacobian(problem.f, wrt=problem.wrt, shapes=problem.shapes)
    if order == 1:
        return sg.grad_fn(problem.f, wrt=problem.wrt, shapes=problem.shapes)
    if order == 2:
        return sg.hessian(problem.f, wrt=problem.wrt, shapes=problem.shapes)
    return Derivative(problem.f, order, wrt=problem.wrt, shapes=problem.shapes)


def _check(args, problem, dims):
    import symgrad as sg
    if args.jacobian:
        raise UsageError("--check compares gradients of a scalar function (orders 1 and 2) "
                         "with torch.autograd; it does not apply to --jacobian")
    order = 2 if args.hessian or args.order is None else args.order
    if order > 2:
        raise UsageError(f"--check compares orders 1 and 2 with torch.autograd, not "
                         f"--order {order}; use --order 1 or 2 with --check")
    return str(sg.check(problem.f, shapes=problem.shapes, dims=dims, wrt=problem.wrt,
                        order=order, sample=problem.sample))


def run(args):
    """The text to print for parsed ``args``."""
    shapes = {}
    for name, shape in args.shape:
        if name in shapes:
            raise UsageError(f"--shape given twice for {name}")
        shapes[name] = shape
    _declare_symmetric(shapes, args.symmetric)
    wrt = None
    if args.wrt:
        wrt = tuple(int(w) if w.isdigit() else w for w in args.wrt)
    dims = {}
    for d in args.dims or ():
        dims.update(d)
    if dims and not args.check:
        raise UsageError("--dims is only used with --check")
    obj = load_target(args.target)
    problem = make_problem(obj, shapes, wrt, args.loss, args.jacobian, dims)
    if args.check:
        return _user_call(_check, args, problem, dims)
    d = _user_call(_derivative, args, problem)
    if args.latex:
        return d.latex()
    if args.program:
        return d.program()
    if args.emit:
        return d.source(args.emit).rstrip("\n")
    return str(d)


def _declare_symmetric(shapes, names):
    """``shapes`` with each input of ``names`` made a symmetric ``TensorSpec``."""
    from .core.shapes import TensorSpec
    for name in dict.fromkeys(names):
        if name not in shapes:
            raise UsageError(f"--symmetric {name} needs the shape of {name}: give "
                             f"--shape {name}=n,n (a square matrix, or B,n,n for a batch)")
        shape = shapes[name]
        try:
            shapes[name] = TensorSpec(tuple(shape), getattr(shape, "dtype", "float64"),
                                      symmetric=True)
        except SymgradError as e:
            raise UsageError(f"--symmetric {name} (--shape {name}="
                             f"{','.join(map(str, shape))}): {e}") from None


def _one_line(text):
    return " ".join(str(text).split())


def _user_error_line(exc):
    """``Type: message (at file:line in name)`` for an exception from the user's code,
    located at its innermost frame outside symgrad, torch and the standard library."""
    frames = traceback.extract_tb(exc.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__))
    lib = os.path.dirname(os.__file__)

    def theirs(fr):
        name = os.path.abspath(fr.filename)
        return not (name.startswith(here) or name.startswith(lib)
                    or "site-packages" in name or name.startswith("<"))
    frame = next((fr for fr in reversed(frames) if theirs(fr)), frames[-1] if frames else None)
    where = ""
    if frame:
        path = os.path.relpath(frame.filename)
        path = frame.filename if path.startswith("..") else path
        where = f" (at {path}:{frame.lineno} in {frame.name})"
    message = _one_line(exc)
    return f"{type(exc).__name__}{': ' + message if message else ''}{where}"


def main(argv=None):
    """Entry point of ``symgrad`` and ``python -m symgrad``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else USAGE_EXIT)
    try:
        text = run(args)
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print(f"{parser.prog}: interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT
    except CheckError as e:
        if args.traceback:
            raise
        print(f"{parser.prog}: check failed: {_one_line(e)}", file=sys.stderr)
        return CHECK_FAILED_EXIT
    except UserCodeError as e:
        cause = e.__cause__
        if isinstance(cause, (CheckError, SymgradError)):
            return _report(parser, args, cause)
        if args.traceback:
            raise cause from None
        print(f"{parser.prog}: error: {_user_error_line(cause)}; --traceback shows the "
              "full traceback", file=sys.stderr)
        return USAGE_EXIT
    except SymgradError as e:
        return _report(parser, args, e)
    try:
        print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader stopped early (symgrad ... | head): not an error, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _report(parser, args, e):
    if args.traceback:
        raise e
    from .errors import NonScalarOutputError
    if isinstance(e, NonScalarOutputError) and not args.jacobian:
        e = NonScalarOutputError(f"{_one_line(e)} (here: --jacobian for the Jacobian, or "
                                 "--loss sum)")
    if isinstance(e, CheckError):
        print(f"{parser.prog}: check failed: {_one_line(e)}", file=sys.stderr)
        return CHECK_FAILED_EXIT
    print(f"{parser.prog}: error: {_one_line(e)}", file=sys.stderr)
    return USAGE_EXIT
