"""Names vulture cannot see used, each with the reason (read by vulture, never imported).

vulture (run by .ci/run, configured in pyproject.toml) reports code nothing uses. These
are used, but by name or by another library, where no tool can follow.
"""
# ruff: noqa
_ = object()

# lark's Transformer calls a method per grammar rule (irc/script_parser/syntax.py), and
# its postlexer protocol reads `always_accept` and calls `process`.
_.suite, _.ann_assign, _.ann_decl, _.aug_assign, _.return_stmt, _.pass_stmt
_.assert_stmt, _.import_stmt, _.import_names, _.import_name, _.decorated, _.funcdef
_.classdef, _.if_stmt, _.elif_, _.for_stmt, _.while_stmt, _.with_item, _.or_chain
_.and_chain, _.not_, _.compare, _.binary_chain, _.kwarg, _.getitem, _.subscriptlist
_.paren_expr, _.list_expr, _.dict_expr, _.dict_item, _.exprlist, _.int_number
_.float_number, _.strings, _.process
always_accept

# llvmlite's pipeline options are set as attributes (irc/codegen/llvm_compile.py).
_.loop_vectorization, _.slp_vectorization, _.loop_unrolling

# The handler cache a visitor class keeps (irc/core/functor.py reads it with __dict__).
_._irc_handler_cache

# Public intrinsics of irc.tir (the user-facing T.asinh(x), ...).
asinh, acosh, atanh

# Fields of records and options that describe data for their readers.
NO_ERROR  # irc.tune.record.MeasureErrorKind: the error kind of a success ("")
warp_size  # irc.tune.space.analysis.TargetInfo: a GPU target's warp size
seconds  # irc.tune.tuner.SearchSpeed

# Called in a worker process by module and function name (irc/tune/runner.py,
# tests/tune/tune_workloads.py through LocalBuilder(postproc="module:function")).
run_candidate
replace_with_add_two

# Methods of nn.Module test models exported by name (export_ir({"convolve": ...})), and
# attributes a test sets to check they are ignored.
_.convolve, _.returns_int, _.softmax_of_ints, _.two_args, _.star_args, _.reuse
_.a_b, _.unused

# Unpacked with the other outputs in the example, as seed 004 shows it.
output_shape
