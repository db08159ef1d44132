"""A 2-layer LSTM language model over token ids: embedding, LSTM, linear head, and
cross-entropy against the next tokens. Token ids and targets are integer inputs of the
compiled gradient (sg.TensorSpec(..., dtype="int64")): one derivation serves every batch.

    python examples/models/lstm_lm.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, out_of_range_raises, verify_model

VOCAB, EMBED, HIDDEN, STEPS = 11, 6, 8, 5


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, HIDDEN, num_layers=2, batch_first=True)
        self.head = nn.Linear(HIDDEN, VOCAB)

    def forward(self, ids):
        out, _ = self.lstm(self.embed(ids))
        return self.head(out)


def next_token_loss(logits, targets):
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


SHAPES = {"ids": sg.TensorSpec(("B", STEPS), dtype="int64"),
          "targets": sg.TensorSpec(("B", STEPS), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"ids": rng.integers(0, VOCAB, (size, STEPS)),
            "targets": rng.integers(0, VOCAB, (size, STEPS))}


def main():
    torch.manual_seed(0)
    model = LanguageModel().double()
    ok = verify_model("2-layer LSTM language model over token ids", model, SHAPES,
                      next_token_loss, [batch(1, 3), batch(2, 4)], dims={"B": 2})
    bad = batch(3, 3)["ids"].copy()
    bad[0, 0] = VOCAB
    ok &= out_of_range_raises(model, SHAPES, next_token_loss, batch(3, 3), "ids", bad)
    return ok


if __name__ == "__main__":
    finish(main(), "LSTM language model gradients equal torch.autograd")
