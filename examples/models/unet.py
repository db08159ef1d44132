"""A small UNet: convolutions, max pooling, a transposed convolution and bilinear
upsampling back to full size, skip connections by concatenation, and a squared error.

    python examples/models/unet.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _zoo import finish, verify_model


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc1 = nn.Conv2d(1, 4, 3, padding=1)
        self.enc2 = nn.Conv2d(4, 8, 3, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.dec = nn.Conv2d(8, 4, 3, padding=1)
        self.out = nn.Conv2d(12, 1, 1)

    def forward(self, x):
        e1 = F.relu(self.enc1(x))
        e2 = F.relu(self.enc2(F.max_pool2d(e1, 2)))
        d = F.relu(self.dec(torch.cat([self.up(e2), e1], dim=1)))
        coarse = F.interpolate(e2, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(torch.cat([d, coarse], dim=1))


def squared_error(y, target):
    return ((y - target) ** 2).mean()


SHAPES = {"x": ("B", 1, 8, 8), "target": ("B", 1, 8, 8)}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((size, 1, 8, 8)),
            "target": rng.standard_normal((size, 1, 8, 8))}


def main():
    torch.manual_seed(0)
    return verify_model("Small UNet (max pool, ConvTranspose2d, bilinear upsampling, "
                        "concatenation)", UNet().double(), SHAPES, squared_error,
                        [batch(1, 2), batch(2, 3)], dims={"B": 2})


if __name__ == "__main__":
    finish(main(), "UNet gradients equal torch.autograd")
