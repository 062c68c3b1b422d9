"""Default schedule rules for GPUs (``cuda`` targets), in the order seed 003 applies
them: ``Matmul`` (shared-memory tiling of large matmuls), ``GEMV`` (inner reductions),
``Reduction`` (reductions with contiguous outputs), ``GeneralReduction`` (softmax, layer
norm: several blocks sharing rows) and ``Fallback`` (one thread per output element).

There is no CUDA code generator yet; the scheduled loop IR runs on the CPU in the
reference interpreter (``irc.tir.interpreter.run``), which is how these rules are tested.
"""

from .fallback import Fallback
from .gemv import GEMV
from .general_reduction import GeneralReduction
from .matmul import Matmul
from .reduction import Reduction


def default_rules() -> list:
    """Fresh instances of the GPU rules in seed 003's order."""
    return [Matmul(), GEMV(), Reduction(), GeneralReduction(), Fallback()]


__all__ = ["GEMV", "Fallback", "GeneralReduction", "Matmul", "Reduction", "default_rules"]
