"""Examples of the pooling, interpolation and normalisation mappings for test_torch_frontend's
table test (``call(op, *symbols)``, shapes, input domain), one per torch name."""
import torch

X1 = {"x": (2, 3, 9)}
X2 = {"x": (2, 3, 7, 6)}
X3 = {"x": (1, 2, 4, 5, 4)}


def _values(out):
    return out[0] if isinstance(out, tuple) else out


EXAMPLES = {
    "torch.nn.functional.max_pool1d": ((lambda op, x: (op(x, 3), op(x, 3, 2, 1, 2, True),
                                                      op(x[0], 2))), X1, "real"),
    "torch.nn.functional.max_pool2d": ((lambda op, x: (op(x, 3, 2, 1, ceil_mode=True),
                                                      op(x, (2, 3), dilation=(2, 1)),
                                                      op(x[0], 2, padding=1))), X2, "real"),
    "torch.nn.functional.max_pool3d": ((lambda op, x: (op(x, 2), op(x, (2, 1, 2), 1, (1, 0, 1)))),
                                       X3, "real"),
    "torch.nn.functional.max_pool1d_with_indices": ((lambda op, x: op(x, 3)[0]), X1, "real"),
    "torch.nn.functional.max_pool2d_with_indices": ((lambda op, x: op(x, 2, 1)[0]), X2,
                                                    "real"),
    "torch.nn.functional.max_pool3d_with_indices": ((lambda op, x: op(x, 2)[0]), X3, "real"),
    "torch.nn.functional.avg_pool1d": ((lambda op, x: (op(x, 3), op(x, 3, 2, 1, True, False),
                                                      op(x[0], 2))), X1, "real"),
    "torch.nn.functional.avg_pool2d": ((lambda op, x: (op(x, 3, 2, 1, True, False),
                                                      op(x, 2, divisor_override=3),
                                                      op(x[0], (2, 3), padding=(1, 0)))),
                                       X2, "real"),
    "torch.nn.functional.avg_pool3d": ((lambda op, x: (op(x, 2), op(x, 2, 1, 1, False, False))),
                                       X3, "real"),
    "torch.nn.functional.adaptive_avg_pool1d": ((lambda op, x: (op(x, 4), op(x[0], 1))), X1,
                                                "real"),
    "torch.nn.functional.adaptive_avg_pool2d": ((lambda op, x: (op(x, (3, 4)), op(x, (None, 4)),
                                                               op(x[0], 1))), X2, "real"),
    "torch.nn.functional.adaptive_avg_pool3d": ((lambda op, x: op(x, (2, 3, 3))), X3, "real"),
    "torch.nn.functional.adaptive_max_pool1d": ((lambda op, x: (op(x, 4), _values(
        op(x[0], 2, return_indices=True)))), X1, "real"),
    "torch.nn.functional.adaptive_max_pool2d": ((lambda op, x: (op(x, (3, 4)),
                                                               op(x, (None, 4)))), X2, "real"),
    "torch.nn.functional.adaptive_max_pool3d": ((lambda op, x: op(x, (2, 3, 3))), X3, "real"),
    "torch.nn.functional.adaptive_max_pool1d_with_indices": ((lambda op, x: op(x, 4)[0]), X1,
                                                             "real"),
    "torch.nn.functional.adaptive_max_pool2d_with_indices": ((lambda op, x: op(x, 3)[0]), X2,
                                                             "real"),
    "torch.nn.functional.adaptive_max_pool3d_with_indices": ((lambda op, x: op(x, 2)[0]), X3,
                                                             "real"),
    "torch.nn.functional.lp_pool1d": ((lambda op, x: (op(x, 2, 3), op(x, 3.0, 2, 1))), X1,
                                      "pos"),
    "torch.nn.functional.lp_pool2d": ((lambda op, x: (op(x, 2, 2), op(x, 1.5, (2, 3), 1,
                                                                      ceil_mode=True))), X2,
                                      "pos"),
    "torch.nn.functional.lp_pool3d": ((lambda op, x: op(x, 2, 2)), X3, "pos"),
    "torch.nn.functional.interpolate": ((lambda op, x: (
        op(x, scale_factor=1.5), op(x, size=(5, 9), mode="bilinear"),
        op(x, scale_factor=(1.3, 0.7), mode="bicubic", align_corners=True),
        op(x, size=(4, 4), mode="area"), op(x, scale_factor=2.2, mode="nearest-exact",
                                            recompute_scale_factor=True),
        op(x[:, :, 0], size=5, mode="linear"))), X2, "real"),
}

# normalisations (torchfront/norm.py) new to the table
_RM = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
_RV = torch.tensor([0.7, 1.3, 0.9], dtype=torch.float64)
EXAMPLES.update({
    "torch.nn.functional.instance_norm": ((lambda op, x, w, b: (
        op(x, weight=w, bias=b), op(x, eps=1e-3), op(x, _RM, _RV, use_input_stats=False),
        op(x[:, :, :2], _RM.clone(), _RV.clone(), w, None))),
        {"x": (2, 3, 4), "w": (3,), "b": (3,)}, "real"),
    "torch.nn.functional.local_response_norm": ((lambda op, x: (
        op(x, 2), op(x, 3, alpha=0.5, beta=0.6, k=1.5), op(x[:, :, 0, :, None], 4))),
        {"x": (2, 5, 3, 2)}, "real"),
})
