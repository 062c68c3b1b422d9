"""Layers the zoo's models share beyond ``irc.frontend.nn``: batch norm over either
layout's channel axis, ReLU6 as ``R.clip``, and seeded non-trivial batch-norm statistics."""

from __future__ import annotations

import numpy as np

from ...frontend import nn
from ...frontend.nn.core import current_frame
from ...ir import ops


class BatchNorm(nn.BatchNorm2D):
    """``nn.BatchNorm2D`` normalizing the channel axis of ``layout`` (``"NCHW"``: axis 1,
    ``"NHWC"``: axis 3); the same parameters, so state dicts are layout independent."""

    def __init__(self, num_features: int, layout: str = "NCHW", eps: float = 1e-5):
        super().__init__(num_features, eps=eps)
        if layout not in ("NCHW", "NHWC"):
            raise nn.NNError(f"BatchNorm: layout must be 'NCHW' or 'NHWC', got {layout!r}")
        self.layout = layout

    def forward(self, x: nn.Tensor) -> nn.Tensor:
        """Inference batch norm along the layout's channel axis."""
        if self.layout == "NCHW":
            return super().forward(x)
        return nn.op.batch_norm(x, self.weight, self.bias, self.running_mean,
                                self.running_var, axis=3, eps=self.eps)


def relu6(x: nn.Tensor, name: str = "relu6") -> nn.Tensor:
    """``min(max(x, 0), 6)``, emitted as one ``R.clip``."""
    frame = current_frame("relu6")
    return frame.emit(ops.clip(x.expr_in(frame), 0.0, 6.0), name)


def randomize_batch_norms(model: nn.Module, seed: int) -> nn.Module:
    """Give every ``nn.BatchNorm2D`` of ``model`` seeded statistics and affine
    parameters away from the identity (mean ~ N(0, 0.1), var ~ U(0.5, 1.5), gamma ~
    U(0.5, 1.5), beta ~ N(0, 0.1)), so that folding batch norm into the convolutions is
    exercised. Returns the model."""
    rng = np.random.default_rng(seed)
    for _, m in model.named_modules():
        if not isinstance(m, nn.BatchNorm2D):
            continue
        c = m.num_features
        m.running_mean.data = rng.normal(0.0, 0.1, c).astype("float32")
        m.running_var.data = rng.uniform(0.5, 1.5, c).astype("float32")
        if m.weight is not None:
            m.weight.data = rng.uniform(0.5, 1.5, c).astype("float32")
            m.bias.data = rng.normal(0.0, 0.1, c).astype("float32")
    return model
