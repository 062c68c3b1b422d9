"""Graph-level IR and the shared IR core (nodes, dtypes, diagnostics, equality, modules).

Layering inside this package: the core modules (``diagnostics``, ``dtype``, ``node``,
``structural``, ``functor``, ``module``) depend on nothing else in irc; the loop IR
(``irc.tir``) builds on them; the graph IR (``struct_info``, ``expr``, ``op``, ...)
builds on both, since tensor shapes are loop-IR integer expressions.
"""

from . import dtype
from .diagnostics import (
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
from .functor import Mutator, Visitor, collect, post_order_visit
from .module import IRModule
from .node import Node
from .structural import (
    StructuralMismatchError,
    assert_structural_equal,
    structural_equal,
    structural_hash,
    structural_hash_hex,
)

# Graph IR (imports irc.tir.expr for symbolic shapes).
from .struct_info import (  # noqa: E402
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
from .expr import (  # noqa: E402
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
from .op import OpDef, get_op_def, list_ops, make_call, register_op  # noqa: E402
