"""Exporting a model: ``Module.export_ir(spec)`` runs each method named in ``spec`` on
symbolic tensors and records what it computes as a graph function.

For a method ``m`` with spec ``{"x": nn.spec.Tensor(...)}`` the function ``@m`` takes
the user inputs (in the method's signature order), then every model parameter (in
:meth:`Module.named_parameters` order, under its exported name, e.g. ``fc1_weight``),
whether or not ``m`` uses it, so that one parameter list serves every function. Its
attributes are ``num_input`` (the number of user inputs) and ``global_symbol``. The
body is one dataflow block: a binding per operation, named after the operation
(``matmul``, ``matmul1``, ...), and the result bound to ``gv`` as the block's output.
"""

from __future__ import annotations

import inspect
from typing import Any, Mapping

from ...core.module import IRModule
from ...ir.block_builder import BlockBuilder
from ...ir.expr import Var
from ...ir.struct_info import TensorStructInfo
from ...tir.expr import IntImm
from .core import ExportFrame, NNError, Parameter, Tensor, output_expr
from .module import Module, ModuleList, graph_name
from .spec import SymbolTable, check_spec_item


def export_params(module: Module) -> list[tuple[str, Parameter]]:
    """The parameters of ``module`` under their exported names, in export order; two
    paths giving the same name raise."""
    out: list[tuple[str, Parameter]] = []
    owner: dict[str, str] = {}
    for path, p in module.named_parameters():
        name = graph_name(path)
        if name in owner:
            raise NNError(f"parameters {owner[name]} and {path} would both be exported as "
                          f"{name!r}; rename one of the attributes")
        owner[name] = path
        out.append((name, p))
    return out


def _bind_spec(module: Module, method_name: str, method_spec: Any) -> tuple[Any, list]:
    """The bound method and its spec as ``[(arg name, spec item, kind)]`` in signature
    order; a spec that does not match the signature raises."""
    cls = type(module).__name__
    method = getattr(module, method_name, None)
    if not callable(method) or isinstance(method, Module):
        raise NNError(f"export spec names method '{method_name}', which {cls} does not have "
                      "(the spec maps method names to {argument name: nn.spec...})")
    if getattr(method, "__func__", None) in (Module.forward, ModuleList.forward):
        method()  # the base class's forward raises the error that says what to define
    if not isinstance(method_spec, Mapping):
        raise NNError(f"spec of '{method_name}' must be a dict of argument name to "
                      f"nn.spec.Tensor/nn.spec.Int, got {type(method_spec).__name__}")
    sig = inspect.signature(method)
    shown = f"{cls}.{method_name}{sig}"
    args: list[tuple[str, Any, Any]] = []
    required: list[str] = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise NNError(f"{shown}: exported methods need named arguments, not "
                          f"{'*' if p.kind is p.VAR_POSITIONAL else '**'}{p.name}")
        if p.name in method_spec:
            args.append((p.name, check_spec_item(method_spec[p.name], method_name, p.name),
                         p.kind))
        elif p.default is p.empty:
            required.append(p.name)
    unknown = [k for k in method_spec if k not in sig.parameters]
    if unknown or required:
        parts = []
        if required:
            parts.append(f"it lacks {', '.join(repr(r) for r in required)}")
        if unknown:
            parts.append(f"{', '.join(repr(str(u)) for u in unknown)} "
                         f"{'is' if len(unknown) == 1 else 'are'} not an argument")
        raise NNError(f"the spec of '{method_name}' does not match {shown}: {'; '.join(parts)}",
                      hint=f"give one nn.spec entry per argument: "
                           f"{{{', '.join(repr(n) + ': ...' for n in sig.parameters)}}}")
    return method, args


def _export_method(bb: BlockBuilder, module: Module, method_name: str, method_spec: Any,
                   params: list[tuple[str, Parameter]], module_paths: dict[int, str],
                   debug: bool) -> None:
    method, args = _bind_spec(module, method_name, method_spec)
    symbols = SymbolTable()
    inputs = [item.make_var(name, symbols) for name, item, _ in args]
    param_names = {name for name, _ in params}
    for name, _, _ in args:
        if name in param_names:
            raise NNError(f"argument {name!r} of '{method_name}' has the name of a parameter "
                          "of the model; rename the argument")
    param_vars = [Var(name_hint=name, struct_info=TensorStructInfo(
        shape=tuple(IntImm(dtype="int64", value=d) for d in p.shape), dtype=p.dtype))
        for name, p in params]
    attrs = {"num_input": len(inputs), "global_symbol": method_name}
    frame = ExportFrame(bb, method_name, {id(p): v for (_, p), v in zip(params, param_vars)},
                        module_paths, debug)
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    for (name, item, kind), var in zip(args, inputs):
        value = Tensor(_expr=var, _frame=frame) if isinstance(var.sinfo, TensorStructInfo) \
            else var.sinfo.value  # nn.spec.Int: the method gets the int64 variable
        if kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(value)
        else:
            keywords[name] = value
    with bb.function(method_name, inputs + param_vars, attrs=attrs), frame.activate():
        with bb.dataflow():
            with frame.layer(module, root=True):
                result = method(*positional, **keywords)
            gv = bb.emit_output(output_expr(result, frame, method_name))
        bb.emit_func_output(gv)


def export_module(module: Module, spec: Any, debug: bool = False) -> \
        tuple[IRModule, list[tuple[str, Parameter]]]:
    """``Module.export_ir``: one graph function per method in ``spec``; returns the module
    and the ``(name, Parameter)`` list every function takes after its inputs."""
    if not isinstance(module, Module):
        raise NNError(f"export_ir needs an nn.Module, got {type(module).__name__}")
    if not isinstance(spec, Mapping) or not spec:
        raise NNError("export_ir needs a spec such as {\"forward\": {\"x\": "
                      f"nn.spec.Tensor((1, 784), \"float32\")}}, got {spec!r}")
    params = export_params(module)
    module_paths = {id(m): path for path, m in module.named_modules()}
    bb = BlockBuilder()
    for method_name, method_spec in spec.items():
        if not isinstance(method_name, str) or not method_name.isidentifier():
            raise NNError(f"export spec keys must be method names, got {method_name!r}")
        _export_method(bb, module, method_name, method_spec, params, module_paths, debug)
    mod = bb.get()
    if debug:
        from ...ir.well_formed import well_formed

        well_formed(mod)
    return mod, params


__all__ = ["export_module", "export_params"]
