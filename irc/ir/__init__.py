"""The graph-level IR (Relax style): struct info, expressions, the operator registry
with shape and dtype inference, the BlockBuilder, well-formedness and the printer.

It builds on the IR core (``irc.core``) and the loop IR (``irc.tir``): tensor shapes are
loop-IR integer expressions. The core's names users reach through ``irc.ir`` (the
exceptions, ``IRModule``, ``structural_equal``, ``Visitor``/``Mutator``, ``dtype``) are
re-exported here.
"""

import sys as _sys

from ..core import dtype
from ..core.diagnostics import (
    BuildError,
    CodegenError,
    IRCError,
    IRParseError,
    IRTypeError,
    IRWellFormedError,
    LegalizeError,
    LoweringError,
    MissingDependencyError,
    RuntimeShapeError,
    ScheduleError,
    SourceFile,
    Span,
    TuningError,
    UnsupportedOperatorError,
    VMError,
)
from ..core.functor import Mutator, Visitor, collect, post_order_visit
from ..core.module import IRModule
from ..core.node import Node
from ..core.structural import (
    StructuralMismatchError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
    structural_hash_hex,
)
from . import ops as ops
from .block_builder import BlockBuilder as BlockBuilder
from .block_builder import InferContext as InferContext
from .block_builder import normalize as normalize
from .expr import (
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    DataTypeImm,
    Expr,
    ExternFunc,
    Function,
    GlobalVar,
    If,
    MatchCast,
    Op,
    PrimValue,
    SeqExpr,
    ShapeExpr,
    StringImm,
    Tuple,
    TupleGetItem,
    Var,
    VarBinding,
    const,
)
from .op import OpDef, get_op_def, list_ops, make_call, register_op

# Graph IR (imports irc.tir.expr for symbolic shapes).
from .struct_info import (
    FuncStructInfo,
    ObjectStructInfo,
    PrimStructInfo,
    ShapeStructInfo,
    StructInfo,
    TensorStructInfo,
    TupleStructInfo,
    shape_of,
    tensor_sinfo,
)
from .struct_info_analysis import erase_to_well_defined as erase_to_well_defined
from .struct_info_analysis import get_shape_vars as get_shape_vars
from .struct_info_analysis import is_base_of as is_base_of
from .struct_info_analysis import static_shape as static_shape
from .struct_info_analysis import struct_info_lca as struct_info_lca
from .well_formed import WellFormedInstrument as WellFormedInstrument
from .well_formed import is_well_formed as is_well_formed
from .well_formed import well_formed as well_formed

# The core modules lived here before irc.core existed; their old paths
# (``from irc.ir.diagnostics import IRParseError``, ``irc.ir.dtype.to_numpy``) stay valid.
for _name in ("diagnostics", "dtype", "functor", "module", "node", "structural"):
    _sys.modules[f"{__name__}.{_name}"] = _sys.modules[f"irc.core.{_name}"]
