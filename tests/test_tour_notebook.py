"""examples/tour.ipynb runs from top to bottom on a real Jupyter kernel (nbclient and
ipykernel, as a reader would run it), every cell without error, and it shows LaTeX."""
import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "tour.ipynb"


def test_tour_notebook_runs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    # the kernel is this interpreter, importing this checkout's symgrad
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env_path) if p)
    try:
        client = nbclient.NotebookClient(
            nb, timeout=300, kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
        client.kernel_manager_class = _kernel_manager()
        client.execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    latex = [o for c in code for o in c.outputs
             if o.output_type in ("execute_result", "display_data") and "text/latex" in o.data]
    assert latex, "no cell displayed LaTeX"
    text = "".join(o.get("text", "") for c in code for o in c.outputs)
    assert "dloss/dW" in text and "match torch.autograd" in text


def _kernel_manager():
    """A kernel manager that starts this interpreter's ipykernel, whatever kernelspecs
    the machine has installed."""
    from jupyter_client.manager import KernelManager

    class ThisPython(KernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return [sys.executable, "-m", "ipykernel_launcher", "-f", self.connection_file]
    return ThisPython
