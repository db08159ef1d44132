"""``import symgrad`` is cheap: it does not import torch (nor jax, numba, cffi, yaml) and
takes under half a second, measured in fresh interpreters."""
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("torch", "jax", "numba", "cffi")

PROBE = """
import sys, time
cpu = time.thread_time()
import symgrad
cpu = time.thread_time() - cpu
print(cpu)
print(",".join(m for m in {heavy!r} if m in sys.modules))
"""


def fresh_import():
    """(CPU seconds spent importing symgrad, heavy modules it loaded) in a new process."""
    r = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY + ("yaml",))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cpu, loaded = r.stdout.splitlines()
    return float(cpu), [m for m in loaded.split(",") if m]


def test_import_symgrad_loads_no_torch_and_takes_under_half_a_second():
    # an installed package has its bytecode compiled (pip does it); a checkout run with
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every module on each import
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "symgrad")],
                   check=True, capture_output=True, timeout=300)
    runs = [fresh_import() for _ in range(7)]
    for _, loaded in runs:
        assert loaded == [], f"import symgrad imported {loaded}"
    # the importing thread's CPU time, not wall time (other processes on a shared machine)
    # nor the process's (NumPy's BLAS threads spin up at import): the median of seven
    # fresh processes. NumPy and SymPy take about 0.4 s of it here.
    median = statistics.median(cpu for cpu, _ in runs)
    assert median < 0.5, f"import symgrad took {median:.3f} s of CPU (median of 7)"


def test_rules_load_on_first_use():
    r = subprocess.run([sys.executable, "-c",
                        "import sys, symgrad as sg; assert 'yaml' not in sys.modules; "
                        "n = len(sg.rules); assert n > 100 and 'yaml' in sys.modules; "
                        "print(sg.grad_fn(lambda x: sg.sin(x)))"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "df/dx = cos(x)\n"
