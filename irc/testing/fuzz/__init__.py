"""irc's differential fuzzer: random valid ONNX models, run through irc and compared with
ONNX Runtime and ONNX's reference implementation (the ``irc fuzz`` command).

- :mod:`.generator` (``generate_case``) grows a model operator by operator from the
  table of :mod:`.spec` (builders in :mod:`.ops_math`, :mod:`.ops_tensor`,
  :mod:`.ops_nn`, :mod:`.ops_control`), keeping the concrete value of every tensor
  (:mod:`.builder`) so that operands suit their operators (:mod:`.values`).
- :mod:`.builds` builds a model with irc along a user's paths (the default pipeline,
  library dispatch ``"auto"``, tuning records) and runs it in the VM;
  :mod:`.references` gives the expected outputs and their sensitivity to rounding, and
  the other opinions that settle a disagreement; :mod:`.compare` judges outputs with
  dtype-aware tolerances; :mod:`.evaluate` classifies a model: ok, wrong, crash,
  refused, invalid.
- :mod:`.runner` evaluates models in worker processes, a dead or hung worker counted as
  a crash; :mod:`.minimise` shrinks a failing model to the few nodes that keep its
  failure.
- :mod:`.campaign` runs many seeds, counts the outcomes and the operator and dtype
  coverage, and minimises and saves the failures.

Running needs onnx, onnxruntime and ml_dtypes (the ``onnx`` extra); hypothesis is not
used.
"""

from .builder import Case
from .generator import FuzzConfig, generate_case, select_ops

__all__ = ["Case", "FuzzConfig", "generate_case", "select_ops"]
