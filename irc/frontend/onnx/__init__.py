"""The ONNX importer: ``from_onnx(model, shape_dict=None, dtype_dict=None, opset=None,
keep_params_in_input=False)`` turns an ONNX model into a graph-level IRModule (see
:mod:`irc.frontend.onnx.importer`); ``supported_ops()`` lists the operator types irc
converts and the opsets their converters start at. An operator irc does not convert
raises :class:`irc.UnsupportedOperatorError` (``UnsupportedOpError`` is a deprecated
name of it). Needs the ``onnx`` package
(``pip install 'irc[onnx]'``), imported when the importer is first used.
"""

from ...core.diagnostics import UnsupportedOperatorError, deprecated_aliases
from . import (
    ops_attention,
    ops_control,
    ops_elementwise,
    ops_image,
    ops_index,
    ops_linalg,
    ops_ml,
    ops_nn,
    ops_optional,
    ops_quant,
    ops_rnn,
    ops_selection,
    ops_sequence,
    ops_signal,
    ops_tensor,
    ops_text,
)
from .importer import from_onnx
from .registry import supported_ops

__all__ = ["from_onnx", "supported_ops", "UnsupportedOperatorError"]


# UnsupportedOpError: a deprecated second name of UnsupportedOperatorError.
__getattr__ = deprecated_aliases("irc.frontend.onnx", {
    "UnsupportedOpError": ("irc.UnsupportedOperatorError", UnsupportedOperatorError)})
