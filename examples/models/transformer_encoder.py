"""A Transformer encoder over token ids with a boolean padding mask: embedding plus
learned positions, nn.TransformerEncoder (eval mode: dropout off), mean over the tokens
that are not padding, and cross-entropy on integer labels. Ids, mask and labels are all
arguments of the compiled gradient.

    python examples/models/transformer_encoder.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, out_of_range_raises, verify_model

VOCAB, D, HEADS, STEPS, CLASSES = 9, 8, 2, 5, 3


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(STEPS, D) * 0.1)
        layer = nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=16, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1, enable_nested_tensor=False)
        self.head = nn.Linear(D, CLASSES)

    def forward(self, ids, padding):
        h = self.encoder(self.embed(ids) + self.pos, src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).to(h.dtype)
        return self.head((h * keep).sum(1) / keep.sum(1))


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


SHAPES = {"ids": sg.TensorSpec(("B", STEPS), dtype="int64"),
          "padding": sg.TensorSpec(("B", STEPS), dtype="bool"),
          "labels": sg.TensorSpec(("B",), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, STEPS + 1, size)
    return {"ids": rng.integers(0, VOCAB, (size, STEPS)),
            "padding": np.arange(STEPS)[None, :] >= lengths[:, None],
            "labels": rng.integers(0, CLASSES, size)}


def main():
    torch.manual_seed(0)
    model = Encoder().double().eval()
    ok = verify_model("Transformer encoder over token ids with a padding mask", model, SHAPES,
                      classification_loss, [batch(1, 3), batch(2, 4)], dims={"B": 2})
    bad = batch(3, 3)["ids"].copy()
    bad[1, 2] = VOCAB + 3
    ok &= out_of_range_raises(model, SHAPES, classification_loss, batch(3, 3), "ids", bad)
    return ok


if __name__ == "__main__":
    finish(main(), "Transformer encoder gradients equal torch.autograd")
