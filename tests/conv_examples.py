"""Examples of the convolution family's torch mappings for test_torch_frontend's
``test_mapping`` (each traced, differentiated to order 2 and compared with torch.autograd
in float64): ``examples(Ex, C)`` with that module's example class and constant maker."""
import torch


def examples(Ex, C):
    x1, x2, x3 = {"x": (2, 4, 7), "w": (6, 2, 3)}, {"x": (2, 3, 6, 5), "w": (4, 3, 3, 2)}, \
        {"x": (1, 2, 4, 5, 4), "w": (2, 2, 2, 3, 2)}
    t1, t2, t3 = {"x": (2, 4, 5), "w": (4, 3, 3)}, {"x": (2, 3, 4, 3), "w": (3, 2, 3, 2)}, \
        {"x": (1, 2, 3, 3, 2), "w": (2, 2, 2, 2, 2)}
    return {
        "torch.nn.functional.conv1d": Ex(
            lambda op, x, w: (op(x, w, groups=2), op(x, w, C(6), stride=2, padding=1, groups=2),
                              op(x, w, None, 1, "same", 2, 2),
                              op(x[0], w, padding="valid", groups=2)), x1),
        "torch.nn.functional.conv2d": Ex(
            lambda op, x, w: (op(x, w, C(4), stride=(2, 1), padding=1),
                              op(x, w, padding="same", dilation=(1, 2)),
                              op(x[1], w, None, 2, (0, 1))), x2),
        "torch.nn.functional.conv3d": Ex(
            lambda op, x, w: (op(x, w, C(2), stride=2, padding=1), op(x, w, padding="same")),
            x3),
        "torch.nn.functional.conv_transpose1d": Ex(
            lambda op, x, w: (op(x, w), op(x, w, C(6), stride=2, padding=1, output_padding=1,
                                           groups=2),
                              op(x[0], w, None, 1, 0, 0, 1, 2)), t1),
        "torch.nn.functional.conv_transpose2d": Ex(
            lambda op, x, w: (op(x, w, C(2), stride=2, padding=(1, 0), output_padding=(1, 0)),
                              op(x[0], w, dilation=2)), t2),
        "torch.nn.functional.conv_transpose3d": Ex(
            lambda op, x, w: (op(x, w, C(2), stride=2, padding=1, output_padding=1),), t3),
        "torch.convolution": Ex(
            lambda op, x, w: (op(x, w, C(4), (2, 1), (1, 0), (1, 1), False, (0, 0), 1),
                              op(x, w[:, :, :2], None, (1, 2), (0, 1), (1, 1), True, (0, 1),
                                 1)[:, :3]), {"x": (2, 4, 5, 4), "w": (4, 4, 3, 3)}),
        "torch.nn.functional.unfold": Ex(
            lambda op, x: (op(x, 2), op(x, (2, 3), dilation=(2, 1), padding=1, stride=2),
                           op(x[0], 3, padding=1)), {"x": (2, 3, 6, 5)}),
        "torch.nn.functional.fold": Ex(
            lambda op, x: (op(x, (4, 5), 2), op(x[0], (4, 5), 2),
                           op(x, (6, 4), (2, 3), dilation=(2, 1), padding=1, stride=(1, 2))[:, :2]),
            {"x": (2, 12, 12)}),
        "torch.nn.functional.pixel_shuffle": Ex(
            lambda op, x: (op(x, 2), op(x[0], 2), op(x[:, :4], 1)), {"x": (2, 8, 3, 2)}),
        "torch.nn.functional.pixel_unshuffle": Ex(
            lambda op, x: (op(x, 2), op(x[0], 3)[:1], op(x[None], 2)), {"x": (2, 3, 6, 6)}),
        "torch.nn.functional.pad": Ex(
            lambda op, x: (op(x, (1, 2)), op(x, (1, 0, 2, 1), value=0.5),
                           op(x, (-1, 2, 0, -1)),
                           op(x, (2, 1, 1, 2), mode="reflect"),
                           op(x, (2, 3, 1, 0), mode="replicate"),
                           op(x, (1, 2, 2, 1), mode="circular"),
                           op(x, (1, 1, 1, 1, 1, 1), mode="circular"),
                           op(x[0], (2, 1), mode="reflect")), {"x": (2, 3, 4, 5)}),
    }
