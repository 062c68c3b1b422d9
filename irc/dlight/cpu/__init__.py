"""Default schedule rules for CPUs (``llvm`` targets), tried in the order of
:data:`DEFAULT_RULES`: ``WinogradTransform`` (the transforms of Winograd convolutions,
recognized by their block annotations), ``Matmul`` (multiply-accumulate reductions:
matmul, dense, batch matmul, convolutions), ``Reduction`` (pooling, means, softmax,
layer norm), ``Elementwise`` (injective functions) and ``Fallback`` (anything else)."""

from .elementwise import Elementwise
from .fallback import Fallback
from .matmul import Matmul
from .reduction import Reduction
from .winograd import WinogradTransform


def default_rules() -> list:
    """Fresh instances of the CPU rules in the order the default pipeline tries them."""
    return [WinogradTransform(), Matmul(), Reduction(), Elementwise(), Fallback()]


__all__ = ["Elementwise", "Fallback", "Matmul", "Reduction", "WinogradTransform", "default_rules"]
