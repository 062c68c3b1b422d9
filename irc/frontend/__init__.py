"""Frontends: ways to get a model into an IRModule.

``irc.frontend.nn`` builds models in Python and exports them (``Module.export_ir``).
Importers of other formats live in submodules imported on demand (the ONNX importer,
``irc.frontend.onnx``, needs the optional ``onnx`` package).
"""

from . import nn

__all__ = ["nn"]
