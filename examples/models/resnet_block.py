"""A ResNet basic block with a depthwise convolution: conv, BatchNorm in training mode
(batch statistics), relu, a grouped 1×1 conv, the skip connection, adaptive average
pooling, a linear head and cross-entropy on integer labels.

    python examples/models/resnet_block.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, verify_model

CHANNELS, CLASSES = 4, 3


class BasicBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1, groups=CHANNELS, bias=False)
        self.bn1 = nn.BatchNorm2d(CHANNELS)
        self.conv2 = nn.Conv2d(CHANNELS, CHANNELS, 1, groups=2, bias=False)
        self.bn2 = nn.BatchNorm2d(CHANNELS)
        self.head = nn.Linear(CHANNELS, CLASSES)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)) + x)
        return self.head(F.adaptive_avg_pool2d(h, 1).flatten(1))


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


SHAPES = {"x": ("B", CHANNELS, 5, 5), "labels": sg.TensorSpec(("B",), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((size, CHANNELS, 5, 5)),
            "labels": rng.integers(0, CLASSES, size)}


def main():
    torch.manual_seed(0)
    model = BasicBlock().double().train()
    return verify_model("ResNet basic block (depthwise conv, BatchNorm in training mode, "
                        "skip, adaptive average pooling)", model, SHAPES, classification_loss,
                        [batch(1, 3), batch(2, 4)], order2=True, dims={"B": 3})


if __name__ == "__main__":
    finish(main(), "ResNet block gradients equal torch.autograd")
