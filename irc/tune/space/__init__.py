"""The template-free search space (seed 001): sketch rules (:class:`SketchRule`) that
analyse each block's loops and accesses and produce sketches, postprocessors
(:class:`Postproc`) that make sampled candidates concrete and valid, and trace mutators
(:class:`TraceMutator`) that change their decisions.

:class:`SpaceGenerator` ties them together for a target: ``generate(func)`` gives the
sketches, ``sample(func, sketch, rng)`` a candidate with fresh decisions,
``mutate(func, candidate, rng)`` a candidate with one decision changed, and
``replay(func, trace)`` the candidate of a stored trace.
"""

from .analysis import TargetInfo
from .mutators import (
    MutateComputeLocation,
    MutateParallel,
    MutateTileSize,
    MutateUnroll,
    Mutation,
    TraceMutator,
    default_mutators,
)
from .postproc import (
    Postproc,
    RewriteCooperativeFetch,
    RewriteLayout,
    RewriteParallelVectorizeUnroll,
    RewriteReductionBlock,
    RewriteUnboundBlock,
    VerifyGPUCode,
    VerifyLoopBounds,
    default_postprocs,
)
from .rules import (
    AddRFactor,
    AutoInline,
    CrossThreadReduction,
    ParallelizeVectorizeUnroll,
    RandomComputeLocation,
    SketchRule,
)
from .sketch import Candidate, Sketch, SpaceGenerator, default_rules
from .tiling import MultiLevelTiling, ReuseConfig

__all__ = [
    "AddRFactor", "AutoInline", "Candidate", "CrossThreadReduction", "MultiLevelTiling",
    "MutateComputeLocation", "MutateParallel", "MutateTileSize", "MutateUnroll", "Mutation",
    "ParallelizeVectorizeUnroll", "Postproc", "RandomComputeLocation", "ReuseConfig",
    "RewriteCooperativeFetch", "RewriteLayout", "RewriteParallelVectorizeUnroll",
    "RewriteReductionBlock", "RewriteUnboundBlock", "Sketch", "SketchRule",
    "SpaceGenerator", "TargetInfo", "TraceMutator", "VerifyGPUCode", "VerifyLoopBounds",
    "default_mutators", "default_postprocs", "default_rules",
]
