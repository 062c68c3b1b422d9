"""The model zoo: real networks with seeded random weights (no downloads), built with
``irc.frontend.nn``, each with a numpy reference forward written independently of irc's
operators.

>>> from irc.testing.models import get_model
>>> m = get_model("resnet18", image_size=64)
>>> ex = irc.compile(m.mod, "llvm", params=m.bound_params())
>>> x = m.random_input()
>>> y = irc.vm.VirtualMachine(ex)["forward"](irc.tensor(x)).numpy()
>>> np.abs(y - m.reference(x)).max() / np.abs(m.reference(x)).max() < 1e-4

Models: ``resnet18``/``34``/``50``/``101``/``152`` (keyword ``layout`` ``"NCHW"`` or
``"NHWC"``, ``image_size``, ``batch_size``, ``num_classes``), ``mobilenet_v2`` (same
keywords) and ``bert`` (``seq_len``, ``vocab_size``, ``hidden``, ``num_layers``,
``num_heads``, ``ffn``, ``batch_size``); every model takes ``seed``. Each module of the
package also has ``get_<model>(...) -> (mod, params, input_shape)`` and
``<model>_reference(state_dict, x, ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...core.diagnostics import IRCError
from ...core.module import IRModule
from ...frontend import nn
from . import bert, mobilenet, reference_ops, resnet


@dataclass
class ZooModel:
    """A zoo model: the ``nn.Module`` with its weights, its export (``mod`` with function
    ``func_name``, ``params`` as ``(name, nn.Parameter)``), the input's shape and dtype, and
    its numpy reference forward."""

    name: str
    module: nn.Module
    mod: IRModule
    params: list[tuple[str, nn.Parameter]]
    input_shape: tuple[int, ...]
    input_dtype: str
    reference_fn: Callable[[dict[str, np.ndarray], np.ndarray, str], np.ndarray]
    input_high: int = 0  # token ids are drawn from [0, input_high) when the input is int
    func_name: str = "forward"
    config: dict[str, Any] = field(default_factory=dict)

    def random_input(self, seed: int = 0) -> np.ndarray:
        """A seeded input: N(0, 1) images, or uniform token ids."""
        rng = np.random.default_rng(seed)
        if self.input_dtype.startswith("int"):
            return rng.integers(0, self.input_high, self.input_shape).astype(self.input_dtype)
        return rng.standard_normal(self.input_shape).astype(self.input_dtype)

    def state_dict(self) -> dict[str, np.ndarray]:
        """The weights by dotted path (what the reference forward reads)."""
        return self.module.state_dict()

    def param_arrays(self) -> list[np.ndarray]:
        """The weights in the order the exported function takes them after its input."""
        return [p.numpy() for _, p in self.params]

    def bound_params(self) -> dict[str, np.ndarray]:
        """The weights by exported name, for ``irc.compile(..., params=...)`` or
        ``passes.BindParams``."""
        return {name: p.numpy() for name, p in self.params}

    def reference(self, x: np.ndarray, dtype: str = "float64",
                  state: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The numpy forward of ``x``, computed in ``dtype`` (float64: the test oracle;
        float32: the timing peer). ``state`` defaults to :meth:`state_dict`; pass one
        prepared with ``reference_ops.as_compute`` to keep conversions out of timings."""
        if tuple(x.shape) != tuple(self.input_shape):
            raise IRCError(f"{self.name}: the reference expects an input of shape "
                           f"{self.input_shape}, got {tuple(x.shape)}")
        return self.reference_fn(self.state_dict() if state is None else state, x, dtype)


def _resnet(depth: int) -> Callable[..., ZooModel]:
    def make(batch_size: int = 1, image_size: int = 224, layout: str = "NCHW",
             num_classes: int = 1000, seed: int = 0) -> ZooModel:
        module = resnet.build_resnet(depth, layout, num_classes, seed)
        mod, params, shape = resnet.export_image_model(module, batch_size, image_size,
                                                       layout, f"resnet{depth}")

        def ref(state: dict, x: np.ndarray, dtype: str) -> np.ndarray:
            return resnet.resnet_reference(state, x.astype(dtype, copy=False), depth, layout)

        return ZooModel(f"resnet{depth}", module, mod, params, shape, "float32", ref,
                        config={"layout": layout, "image_size": image_size})

    return make


def _mobilenet_v2(batch_size: int = 1, image_size: int = 224, layout: str = "NCHW",
                  num_classes: int = 1000, seed: int = 0) -> ZooModel:
    module = mobilenet.build_mobilenet_v2(num_classes, layout, seed)
    mod, params, shape = resnet.export_image_model(module, batch_size, image_size, layout,
                                                   "mobilenet_v2")

    def ref(state: dict, x: np.ndarray, dtype: str) -> np.ndarray:
        return mobilenet.mobilenet_v2_reference(state, x.astype(dtype, copy=False), layout)

    return ZooModel("mobilenet_v2", module, mod, params, shape, "float32", ref,
                    config={"layout": layout, "image_size": image_size})


def _bert(batch_size: int = 1, seq_len: int = 128, vocab_size: int = 30522,
          hidden: int = 256, num_layers: int = 4, num_heads: int = 4, ffn: int = 1024,
          seed: int = 0) -> ZooModel:
    module = bert.build_bert(vocab_size, hidden, num_layers, num_heads, ffn, seed=seed)
    mod, params, shape = bert.export_bert(module, batch_size, seq_len)

    def ref(state: dict, x: np.ndarray, dtype: str) -> np.ndarray:
        return bert.bert_reference(state, x, num_heads, dtype)

    return ZooModel("bert", module, mod, params, shape, "int64", ref, input_high=vocab_size,
                    config={"seq_len": seq_len, "num_layers": num_layers, "hidden": hidden})


_MODELS: dict[str, Callable[..., ZooModel]] = {
    **{f"resnet{d}": _resnet(d) for d in (18, 34, 50, 101, 152)},
    "mobilenet_v2": _mobilenet_v2,
    "bert": _bert,
}


def list_models() -> list[str]:
    """The names :func:`get_model` accepts."""
    return sorted(_MODELS)


def get_model(name: str, **kw: Any) -> ZooModel:
    """The zoo model ``name`` (see :func:`list_models`) built with keywords ``kw``
    (sizes, ``layout``, ``seed``; see the module docstring)."""
    make = _MODELS.get(name)
    if make is None:
        raise IRCError(f"unknown zoo model {name!r}; available: {', '.join(list_models())}")
    try:
        return make(**kw)
    except TypeError as err:
        raise IRCError(f"get_model({name!r}): {err}; see irc.testing.models' docstring for "
                       "each model's keywords") from None


__all__ = ["ZooModel", "get_model", "list_models", "bert", "mobilenet", "resnet",
           "reference_ops"]
