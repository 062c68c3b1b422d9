"""``nn.Module``: the base class of models and layers, and the containers
``ModuleList`` and ``Sequential``.

A module's parameters and submodules are its attributes: assigning an
:class:`~.core.Parameter` or a :class:`Module` to ``self.<name>`` registers it, in
assignment order. A parameter's path is the chain of attribute names (``fc1.weight``);
in an exported function it is the graph parameter ``fc1_weight`` (dots become
underscores). A parameter or submodule reachable twice (weight tying) is counted once,
under its first path.

Exporting a model: ``Module.export_ir(spec)`` runs each method named in ``spec`` on
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
from typing import Any, Iterable, Iterator, Mapping

import numpy as np

from ...core import dtype as dt
from ...core.diagnostics import IRCError
from ...core.module import IRModule
from ...ir.block_builder import BlockBuilder
from ...ir.expr import Var
from ...ir.struct_info import TensorStructInfo
from ...ir.well_formed import well_formed
from ...tir.expr import IntImm
from .core import ExportFrame, NNError, Parameter, Tensor, current_frame, in_export, output_expr
from .spec import SymbolTable, check_spec_item


class Module:
    """Base class of models and layers: subclass it, create parameters and submodules in
    ``__init__`` and describe the computation in ``forward``.

    >>> class MLP(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = nn.Linear(784, 256)
    ...         self.fc2 = nn.Linear(256, 10)
    ...     def forward(self, x):
    ...         return self.fc2(nn.op.relu(self.fc1(x)))
    >>> mod, params = MLP().export_ir({"forward": {"x": nn.spec.Tensor((1, 784), "float32")}})
    """

    def __init__(self) -> None:
        # Registration needs no state (attributes are scanned in order); defined so that
        # subclasses may call super().__init__().
        pass

    # -- computation ----------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; subclasses define it."""
        raise NNError(f"{type(self).__name__} defines no forward method: define "
                      "forward(self, x) returning the output nn.Tensor")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not in_export():
            raise NNError(f"{type(self).__name__} was called outside an export: a Module runs "
                          "on symbolic nn.Tensors while model.export_ir(spec) builds the graph; "
                          "to compute numbers, export, compile (irc.compile) and run the result "
                          "on the VM")
        frame = current_frame(type(self).__name__)
        with frame.layer(self):
            return self.forward(*args, **kwargs)

    # -- structure ------------------------------------------------------------------
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules with their attribute names, in assignment order."""
        for name, value in vars(self).items():
            if isinstance(value, Module):
                yield name, value

    def children(self) -> Iterator[Module]:
        """Direct submodules."""
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (path ``prefix``, "" for the root) and every submodule below it,
        depth first, each once."""
        seen: set[int] = set()

        def walk(module: Module, path: str) -> Iterator[tuple[str, Module]]:
            if id(module) in seen:
                return
            seen.add(id(module))
            yield path, module
            for name, child in module.named_children():
                yield from walk(child, f"{path}.{name}" if path else name)

        yield from walk(self, prefix)

    def modules(self) -> Iterator[Module]:
        """This module and all submodules."""
        for _, m in self.named_modules():
            yield m

    def named_parameters(self, prefix: str = "") -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted path (``fc1.weight``), in attribute order
        (a submodule's parameters where the submodule was assigned), each once."""
        seen_params: set[int] = set()
        seen_modules: set[int] = set()

        def walk(module: Module, path: str) -> Iterator[tuple[str, Parameter]]:
            if id(module) in seen_modules:
                return
            seen_modules.add(id(module))
            for name, value in vars(module).items():
                full = f"{path}.{name}" if path else name
                if isinstance(value, Parameter):
                    if id(value) not in seen_params:
                        seen_params.add(id(value))
                        yield full, value
                elif isinstance(value, Module):
                    yield from walk(value, full)

        yield from walk(self, prefix)

    def parameters(self) -> Iterator[Parameter]:
        """Every parameter, in the order of :meth:`named_parameters`."""
        for _, p in self.named_parameters():
            yield p

    # -- values ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of every parameter's data, by dotted path; a parameter without data
        raises (initialize it first)."""
        out: dict[str, np.ndarray] = {}
        for name, p in self.named_parameters():
            if p.data is None:
                raise NNError(f"parameter {name} {p.shape} {p.dtype} has no data: call "
                              "model.init_random(seed) or model.load_state_dict(state), or set "
                              f"model.{name}.data = array")
            out[name] = p.data.copy()
        return out

    def load_state_dict(self, state: dict[str, Any], strict: bool = True) -> Module:
        """Set parameter data from numpy arrays keyed by dotted path (``fc1.weight``) or by
        exported name (``fc1_weight``). With ``strict``, every parameter must be given
        and no key may be unknown. Shapes must match; dtypes are converted."""
        by_name: dict[str, tuple[str, Parameter]] = {}
        for name, p in self.named_parameters():
            by_name[name] = (name, p)
            by_name.setdefault(graph_name(name), (name, p))
        unknown = [k for k in state if k not in by_name]
        given = {by_name[k][0] for k in state if k in by_name}
        missing = [n for n, _ in self.named_parameters() if n not in given]
        if strict and (unknown or missing):
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if unknown:
                parts.append(f"unexpected {', '.join(map(str, unknown))}")
            raise NNError(f"load_state_dict into {type(self).__name__}: {'; '.join(parts)} "
                          "(pass strict=False to load a subset)")
        for key, value in state.items():
            if key not in by_name:
                continue
            name, p = by_name[key]
            try:
                p.data = value
            except NNError as err:
                raise NNError(f"load_state_dict: parameter {name}: {err.message}") from None
        return self

    def init_random(self, seed: int = 0) -> Module:
        """Fill every parameter with seeded random data according to its ``init``
        (default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the product of all dimensions
        but the first). Returns the module."""
        rng = np.random.default_rng(seed)
        for _, p in self.named_parameters():
            if p.init == "zeros":
                value = np.zeros(p.shape)
            elif p.init == "ones":
                value = np.ones(p.shape)
            elif not dt.is_float(p.dtype):
                value = rng.integers(0, 2, size=p.shape)
            elif p.init == "normal":
                value = rng.standard_normal(p.shape)
            else:
                fan_in = int(np.prod(p.shape[1:])) if len(p.shape) > 1 else \
                    (p.shape[0] if p.shape else 1)
                bound = 1.0 / np.sqrt(max(fan_in, 1))
                value = rng.uniform(-bound, bound, size=p.shape)
            p.data = dt.storage(value, p.dtype)
        return self

    def to(self, dtype: str) -> Module:
        """Convert every floating-point parameter (and its data) to ``dtype``; returns the
        module. Integer parameters are left as they are."""
        try:
            dt.check(dtype)
        except IRCError:
            raise NNError(f"Module.to: {dtype!r} is not a dtype such as 'float16'") from None
        if not dt.is_float(dtype):
            raise NNError(f"Module.to converts floating-point parameters; {dtype!r} is not a "
                          "floating-point dtype")
        for p in self.parameters():
            if dt.is_float(p.dtype):
                p.to_dtype(dtype)
        return self

    # -- export ---------------------------------------------------------------------
    def export_ir(self, spec: dict[str, dict[str, Any]], debug: bool = False) -> tuple:
        """Export the methods named in ``spec`` (``{"forward": {"x": nn.spec.Tensor((1,
        784), "float32")}}``) as graph functions of one IRModule. Returns ``(mod,
        params)``: ``params`` lists ``(name, Parameter)`` in the order the functions take
        them after the user inputs (``num_input`` of each function). ``debug=True``
        records the model source line of every binding as its span and checks the module
        for well-formedness."""
        return export_module(self, spec, debug=debug)

    def export_tvm(self, spec: dict[str, dict[str, Any]], debug: bool = False) -> tuple:
        """Alias of :meth:`export_ir` (the spelling of Apache TVM's nn frontend)."""
        return self.export_ir(spec, debug=debug)

    # -- printing -------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The layer's configuration shown by ``repr``; layers override it."""
        return ""

    def __repr__(self) -> str:
        children = list(self.named_children())
        head = f"{type(self).__name__}({self.extra_repr()}"
        if not children:
            return head + ")"
        lines = [head]
        for name, child in children:
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


def graph_name(path: str) -> str:
    """The exported name of a parameter path: dots become underscores (``fc1.weight`` ->
    ``fc1_weight``); a path starting with a digit (a container's child) gets ``param_``
    in front so that the name is an identifier."""
    name = path.replace(".", "_")
    return name if not name[:1].isdigit() else f"param_{name}"


class ModuleList(Module):
    """A list of submodules, registered under their indices (``layers.0.weight``).
    It has no forward: iterate over it in the parent's forward."""

    def __init__(self, modules: Iterable[Module] = ()):
        super().__init__()
        self._length = 0
        for m in modules:
            self.append(m)

    def _check(self, module: Any) -> Module:
        if not isinstance(module, Module):
            raise NNError(f"{type(self).__name__} holds nn.Modules, got "
                          f"{type(module).__name__}")
        return module

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end."""
        setattr(self, str(self._length), self._check(module))
        self._length += 1
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add several modules at the end."""
        for m in modules:
            self.append(m)
        return self

    def _index(self, i: int) -> int:
        if not isinstance(i, int) or isinstance(i, bool):
            raise NNError(f"{type(self).__name__} indices must be ints, got {i!r}")
        j = i + self._length if i < 0 else i
        if not 0 <= j < self._length:
            raise NNError(f"{type(self).__name__} index {i} is out of range (length "
                          f"{self._length})")
        return j

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [getattr(self, str(k)) for k in range(self._length)[i]]
        return getattr(self, str(self._index(i)))

    def __setitem__(self, i: int, module: Module) -> None:
        setattr(self, str(self._index(i)), self._check(module))

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Module]:
        for k in range(self._length):
            yield getattr(self, str(k))

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """A ModuleList is not callable; iterate over it instead."""
        raise NNError(f"{type(self).__name__} has no forward: iterate over it in the "
                      "parent's forward (for layer in self.layers: x = layer(x)), or use "
                      "nn.Sequential")


class Sequential(ModuleList):
    """Submodules applied in order: ``Sequential(Linear(4, 8), ReLU())(x)``."""

    def __init__(self, *modules: Module):
        if len(modules) == 1 and isinstance(modules[0], (list, tuple)):
            modules = tuple(modules[0])
        super().__init__(modules)

    def forward(self, x: Any) -> Any:
        """Each submodule applied to the previous one's output."""
        for m in self:
            x = m(x)
        return x


__all__ = ["Module", "ModuleList", "Sequential", "graph_name"]


# ---------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------


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
    for (name, _, kind), var in zip(args, inputs):
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
        well_formed(mod)
    return mod, params


__all__ = ["export_module", "export_params"]
