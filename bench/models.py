"""Per-call time of symgrad's compiled gradient of real models against torch eager.

    python bench/models.py               # LeNet and the LSTM language model, about 1 min
    python bench/models.py --rounds 21   # more rounds on a noisy machine

Models (the definitions of examples/models/):

    LeNet      lenet.py: conv 5×5 (1→6), relu, max pool, conv 5×5 (6→16), relu, average
               pool, linear 256→120→84→10, cross-entropy on int64 labels; batch 32, 28×28
    LSTM LM    lstm_lm.py's architecture at vocabulary 100, embedding 32, hidden 64, 2 layers,
               20 steps, batch 16, cross-entropy against int64 next tokens

Contenders, float64, every library on one thread:

    torch eager     model forward + loss + torch.autograd.grad w.r.t. the parameters
    symgrad numpy   sg.grad_fn(model, ...).compile("numpy"), NumPy arrays in
    symgrad torch   sg.grad_fn(model, ...).compile("torch"), tensors in

Every gradient is checked against torch.autograd before timing (exit 1 on a mismatch). Each
round times every contender for about --block seconds in a rotating order; the table shows
the median per-call time over the rounds and the ratio to torch eager.
"""
import os

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_k] = "1"

import argparse            # noqa: E402
import statistics          # noqa: E402
import sys                 # noqa: E402
import time                # noqa: E402
from pathlib import Path   # noqa: E402

import numpy as np         # noqa: E402
import torch               # noqa: E402
import torch.nn as nn      # noqa: E402
import torch.nn.functional as F   # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "models"))
import symgrad as sg       # noqa: E402
from lenet import LeNet    # noqa: E402

torch.set_num_threads(1)


class LanguageModel(nn.Module):
    def __init__(self, vocab=100, embed=32, hidden=64):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


def next_token_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def problems():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    ints = lambda *d: sg.TensorSpec(d, dtype="int64")   # noqa: E731
    yield ("LeNet b32 28x28", LeNet().double(), classification_loss,
           {"images": ("B", 1, 28, 28), "labels": ints("B")},
           {"images": rng.standard_normal((32, 1, 28, 28)), "labels": rng.integers(0, 10, 32)})
    yield ("LSTM LM b16 T20 h64", LanguageModel().double(), next_token_loss,
           {"ids": ints("B", 20), "targets": ints("B", 20)},
           {"ids": rng.integers(0, 100, (16, 20)), "targets": rng.integers(0, 100, (16, 20))})


def contenders(model, loss, shapes, batch):
    start = time.perf_counter()
    g = sg.grad_fn(model, shapes=shapes, loss=loss)
    numpy_fn, torch_fn = g.compile("numpy"), g.compile("torch")
    derive = time.perf_counter() - start
    fn = sg.module_function(model, shapes=shapes, loss=loss)
    qualified = {s: q for q, s in fn.symbols.items()}
    params = dict(model.named_parameters())
    wrt = [params[qualified[w.name]] for w in g.wrt]
    args = [params[qualified[x.name]].detach().numpy() if x.name in qualified
            else batch[x.name] for x in g.inputs]
    targs = [torch.as_tensor(a) for a in args]
    inputs = [torch.as_tensor(v) for v in batch.values()]

    def eager():
        return torch.autograd.grad(loss(model(inputs[0]), *inputs[1:]), wrt)

    ref = [r.numpy() for r in eager()]
    for name, got in (("numpy", numpy_fn(*args)), ("torch", torch_fn(*targs))):
        for o, r in zip(got, ref):
            o = o.numpy() if isinstance(o, torch.Tensor) else o
            if not np.allclose(o, r, rtol=1e-8, atol=1e-10):
                sys.exit(f"symgrad {name} disagrees with torch.autograd")
    return derive, {"torch eager": eager, "symgrad numpy": lambda: numpy_fn(*args),
                    "symgrad torch": lambda: torch_fn(*targs)}


def per_call(fn, block):
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < block:
        fn()
        n += 1
    return (time.perf_counter() - start) / n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--block", type=float, default=0.5)
    a = parser.parse_args()
    print(f"symgrad {sg.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
          "float64, one thread")
    print(f"{'model':<22}{'derive s':>10}{'torch eager ms':>16}{'symgrad numpy ms':>18}"
          f"{'symgrad torch ms':>18}{'numpy/eager':>13}{'torch/eager':>13}")
    for title, model, loss, shapes, batch in problems():
        derive, fns = contenders(model, loss, shapes, batch)
        times = {k: [] for k in fns}
        names = list(fns)
        for r in range(a.rounds):
            for k in names[r % len(names):] + names[:r % len(names)]:
                times[k].append(per_call(fns[k], a.block))
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{title:<22}{derive:>10.2f}{med['torch eager']:>16.2f}"
              f"{med['symgrad numpy']:>18.2f}{med['symgrad torch']:>18.2f}"
              f"{med['symgrad numpy'] / med['torch eager']:>13.2f}"
              f"{med['symgrad torch'] / med['torch eager']:>13.2f}")


if __name__ == "__main__":
    main()
