"""The virtual machine: runs an Executable's bytecode, calling its compiled kernels.

``vm = VirtualMachine(ex, irc.cpu()); y = vm["forward"](x, *params)``.

Each bytecode function is prepared once per VM into a list of Python closures (one per
instruction, with registers and kernel entry points resolved), so a call costs a Python
call per instruction plus the kernels. Arguments are checked against the function's
struct info before any native code runs: count, kind, dtype, rank and every dimension,
binding symbolic dimensions; mismatches raise ``RuntimeShapeError`` naming the function,
the parameter, and expected vs. received.

A function with static shapes and no control flow runs as one native call on the CPU
(:mod:`irc.vm.native_plan`): the kernels' addresses and the planned storage are baked
into a small compiled function, and only the arguments are checked per call.

A VM instance owns the statically planned storage of its functions, so one instance must
not run the same function from two threads at once (create one VM per thread).

On a GPU (an executable compiled for ``cuda``, ``VirtualMachine(ex, irc.cuda(0))``) every
tensor value is an :class:`irc.runtime.Tensor` on that GPU: constants are copied there
when the VM is made, arguments that are numpy arrays or tensors elsewhere are copied in,
planned storage blocks are device allocations, kernels are launched asynchronously on
the default stream and results come back as CUDA tensors (``.numpy()`` copies them).
Runtime functions called by name (``call_dps_packed``) receive CUDA tensors. A static
function's launches are captured into a CUDA graph on its second call and replayed with
one driver call from then on (:mod:`irc.vm.cuda_graph`; ``cuda_graphs=False`` turns this
off).
"""

from __future__ import annotations

import functools
import time
from operator import itemgetter
from typing import Any, Callable

import numpy as np

from ..core import dtype as dt
from ..core.diagnostics import (
    IRCError,
    RuntimeArgumentCountError,
    RuntimeArgumentError,
    RuntimeArgumentTypeError,
    RuntimeDeviceError,
    RuntimeDTypeError,
    RuntimeReadOnlyError,
    RuntimeShapeError,
    VMError,
)
from ..runtime import (
    Device,
    Tensor,
    aligned_empty,
    cpu,
    from_dlpack,
    get_global_func,
    time_evaluator,
)
from ..runtime import device as as_device
from ..runtime.cuda_backend import BorrowedMemory, DeviceMemory, keep_alive
from ..runtime.cuda_program import CUDAFunction, CUDAProgramModule
from ..runtime.ndarray import ALIGNMENT, data_pointer, host_array
from ..runtime.ndarray import empty as device_empty
from ..runtime.ndarray import tensor as device_tensor
from ..runtime.signature import KernelSignature
from .bytecode import ValueCheck, VMFunction, expr_to_python
from .cuda_graph import CapturePlan, GraphRunner, capturable_functions, plan_function
from .executable import Executable
from .native_plan import NativePlan, make_plan
from .param_writes import written_params
from .profiler import ProfileReport, Recorder

_Closure = Callable[[list, list], Any]
_MISSING = object()  # a parameter set_input has no value for yet


@functools.lru_cache(maxsize=None)
def cpu_numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of the CPU VM's arrays of ``dtype``: the one users get back
    (``dt.user_numpy``), so a bfloat16 value keeps its dtype through the VM's checks."""
    return dt.user_numpy(dtype)


def _to_value(arg: Any, device: Device) -> Any:
    """A user argument as the VM's internal value: on the CPU, tensors become 64-byte
    aligned, C-contiguous numpy arrays (copied when they are not); on a GPU, tensors on
    that GPU (arrays and tensors elsewhere are copied to it)."""
    if device.device_type == "cuda":
        return _to_device_value(arg, device)
    if isinstance(arg, Tensor):
        if arg._array is None:
            raise RuntimeDeviceError(f"tensor on {arg.device} passed to a VM on {device}; "
                                     "copy it with .copyto(irc.cpu())")
        if arg.dtype == "bfloat16":
            arg = arg._array.view(cpu_numpy_dtype("bfloat16"))
        else:
            arg = arg._array  # usually aligned; one wrapping foreign memory may not be
    if isinstance(arg, np.ndarray):
        # Kernels get data pointers without further checks (Function._vm_call).
        if data_pointer(arg) % ALIGNMENT or not arg.flags.c_contiguous:
            copy = aligned_empty(arg.shape, arg.dtype)
            np.copyto(copy, arg)
            # The copy of a read-only array stays read-only: the VM refuses it where a
            # kernel writes, as it does the array itself.
            copy.flags.writeable = arg.flags.writeable
            return copy
        return arg
    if isinstance(arg, (tuple, list)):
        return tuple(_to_value(a, device) for a in arg)
    if isinstance(arg, (bool, int, float, np.generic, str)):
        return arg
    if hasattr(arg, "__dlpack__"):
        return _to_value(host_array(arg), device)
    raise RuntimeArgumentTypeError(f"cannot pass a {type(arg).__name__} to a VM function; "
                                   "use irc.tensor(...) or a numpy array")


def _write_back(arg: Any, value: Any) -> None:
    """Copy ``value`` (what a kernel wrote) into the user's argument ``arg`` when the VM
    ran on a copy of it (an unaligned or strided array)."""
    if isinstance(arg, Tensor):
        arg = arg._array
    elif not isinstance(arg, (np.ndarray, tuple, list)) and hasattr(arg, "__dlpack__"):
        arg = host_array(arg)
    if isinstance(arg, np.ndarray) and isinstance(value, np.ndarray):
        if value is not arg and not np.shares_memory(value, arg):
            np.copyto(arg, value.view(arg.dtype) if value.dtype != arg.dtype else value)
    elif isinstance(arg, (tuple, list)) and isinstance(value, tuple):
        for a, v in zip(arg, value):
            _write_back(a, v)


def _to_device_value(arg: Any, device: Device) -> Any:
    if isinstance(arg, Tensor):
        if arg.device == device:
            return arg
        if arg.device.device_type == "cuda":
            raise RuntimeDeviceError(f"tensor on {arg.device} passed to a VM on {device}; "
                                     f"copy it with .copyto(irc.cuda({device.index}))")
        return arg.copyto(device)
    if isinstance(arg, np.ndarray):
        return device_tensor(arg, device)
    if isinstance(arg, (tuple, list)):
        return tuple(_to_device_value(a, device) for a in arg)
    if isinstance(arg, (bool, int, float, np.generic, str)):
        return arg
    if hasattr(arg, "__dlpack__"):
        return _to_device_value(from_dlpack(arg), device)
    raise RuntimeArgumentTypeError(f"cannot pass a {type(arg).__name__} to a VM function; "
                                   "use irc.tensor(...) or a numpy array")


def _to_user(value: Any, device: Device) -> Any:
    if isinstance(value, Tensor):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.name == "bfloat16":  # ml_dtypes' (cpu_numpy_dtype): a Tensor holds bits
            return Tensor(array=value.view(np.uint16), dtype="bfloat16", device=device)
        return Tensor(array=value, dtype=dt.from_numpy(value.dtype), device=device)
    if isinstance(value, tuple):
        return tuple(_to_user(v, device) for v in value)
    return value


def _writeable(value: Any) -> bool:
    """False when ``value`` (a VM value on the CPU) is or holds a read-only array."""
    if isinstance(value, np.ndarray):
        return bool(value.flags.writeable)
    if isinstance(value, tuple):
        return all(_writeable(v) for v in value)
    return True


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    if isinstance(value, Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype} on " \
               f"{value.device}"
    if isinstance(value, tuple):
        if all(isinstance(v, (int, np.integer)) for v in value):
            return f"the shape {list(map(int, value))}"
        return f"a tuple of {len(value)} values"
    return f"{type(value).__name__} {value!r}"


class _PreparedFunction:
    """One bytecode function bound to a VM: closures, kernels and storage."""

    def __init__(self, vm: VirtualMachine, fn: VMFunction, recorder: Recorder | None = None):
        self.vm = vm
        self.fn = fn
        # When profiling, kernel and runtime-function calls are timed into the recorder.
        self.recorder = recorder
        self.exprs = [eval(f"lambda h: {expr_to_python(e)}") for e in fn.exprs]  # noqa: S307
        self.storage = [vm._storage(n) for n in fn.storage_sizes]
        self.code: list[_Closure] = [self._prepare(ins) for ins in fn.code]
        # Parameters some kernel writes (usually none): a read-only array is refused there.
        self.written = frozenset() if vm.on_gpu else vm._params_written(fn.name)
        # Straight-line static functions on the CPU run as one native call (a profile
        # runs the timed copy of the plan, made on first use).
        self.plan = None
        if not vm.on_gpu and recorder is None:
            self.plan = make_plan(fn, vm.exe.lib, vm.constants, self.storage,
                                  cpu_numpy_dtype)
        self._timed_plan: NativePlan | None = None
        # On a GPU, a function whose every call is fixed by its parameters' shapes and
        # addresses replays CUDA graphs (irc.vm.cuda_graph).
        self.graphs: GraphRunner | None = None
        if vm.on_gpu and vm.cuda_graphs and recorder is None and \
                plan_function(fn, vm._capturable).captured:
            self.graphs = GraphRunner(fn, vm.device, vm.constants,
                                      vm._params_written(fn.name))

    def timed_plan(self) -> NativePlan | None:
        """The plan with a clock read around every kernel (made on first use; None
        where the function has no plan or the platform no clock to read)."""
        if self._timed_plan is None and self.plan is not None:
            self._timed_plan = make_plan(self.fn, self.vm.exe.lib, self.vm.constants,
                                         self.storage, cpu_numpy_dtype, timed=True)
        return self._timed_plan

    # -- argument checking ----------------------------------------------------------------
    def check(self, value: Any, chk: ValueCheck, heap: list, label: str) -> None:
        kind = chk.kind
        if kind == "tensor":
            if isinstance(value, np.ndarray):
                dtype = dt.from_numpy(value.dtype)
            elif isinstance(value, Tensor):  # on a GPU
                dtype = value.dtype
            else:
                raise self._mismatch(label, chk, value, error=RuntimeArgumentTypeError)
            if chk.dtype and dtype != chk.dtype:
                raise self._mismatch(label, chk, value, error=RuntimeDTypeError)
            if chk.ndim >= 0 and len(value.shape) != chk.ndim:
                raise self._mismatch(label, chk, value)
            if chk.dims is not None:
                self._check_dims(value.shape, chk, heap, label, value)
        elif kind == "tuple":
            if not isinstance(value, tuple) or len(value) != len(chk.fields):
                raise self._mismatch(label, chk, value, error=RuntimeArgumentTypeError)
            for i, (v, c) in enumerate(zip(value, chk.fields)):
                self.check(v, c, heap, f"{label}[{i}]")
        elif kind == "shape":
            if not isinstance(value, tuple) or not all(isinstance(v, int) for v in value):
                raise self._mismatch(label, chk, value, error=RuntimeArgumentTypeError)
            if chk.ndim >= 0 and len(value) != chk.ndim:
                raise self._mismatch(label, chk, value)
            if chk.dims is not None:
                self._check_dims(value, chk, heap, label, value)
        elif kind == "prim":
            if isinstance(value, (np.ndarray, Tensor)) and len(value.shape) == 0:
                return
            if not isinstance(value, (bool, int, float, np.generic)):
                raise self._mismatch(label, chk, value, error=RuntimeArgumentTypeError)

    def _check_dims(self, shape: tuple, chk: ValueCheck, heap: list, label: str,
                    value: Any) -> None:
        for i, d in enumerate(chk.dims):
            got = shape[i]
            if type(d) is int:
                if got != d:
                    raise self._mismatch(label, chk, value, heap, dim=i)
            elif d[0] == "bind":
                heap[d[1]] = got
            else:
                want = self.exprs[d[1]](heap)
                if got != want:
                    raise self._mismatch(label, chk, value, heap, dim=i)

    def _mismatch(self, label: str, chk: ValueCheck, value: Any, heap: list | None = None,
                  dim: int | None = None, error: type[RuntimeArgumentError] = RuntimeShapeError
                  ) -> RuntimeArgumentError:
        expected = chk.describe(self.fn.slot_names, self.fn.exprs)
        extra = ""
        if dim is not None and heap is not None:
            bound = {n: heap[i] for i, n in enumerate(self.fn.slot_names)
                     if heap[i] is not None}
            extra = f" (dimension {dim} differs"
            extra += f"; bound so far: {bound})" if bound else ")"
        return error(f"{self.fn.name}: {label} expects {expected}, got "
                     f"{_describe(value)}{extra}")

    # -- instructions ------------------------------------------------------------------------
    def _prepare(self, ins: tuple) -> _Closure:
        op = ins[0]
        return getattr(self, "_op_" + op)(*ins[1:])

    def _op_const(self, dst: int, index: int) -> _Closure:
        value = self.vm.constants[index]

        def run(regs, heap):
            regs[dst] = value
        return run

    def _op_alloc(self, dst: int, index: int) -> _Closure:
        spec = self.fn.allocs[index]
        if self.vm.on_gpu:
            return self._device_alloc(dst, spec)
        np_dtype = cpu_numpy_dtype(spec.dtype)
        if spec.static and spec.storage >= 0:
            nbytes = int(np.prod(spec.shape, dtype=np.int64)) * np_dtype.itemsize
            view = self.storage[spec.storage][:nbytes].view(np_dtype).reshape(spec.shape)

            def run(regs, heap):
                regs[dst] = view
            return run
        if spec.static:
            shape = tuple(spec.shape)

            def run(regs, heap):
                regs[dst] = aligned_empty(shape, np_dtype)
            return run
        dims = [self.exprs[i] for i in spec.shape]

        def run(regs, heap):
            shape = tuple(d(heap) for d in dims)
            for s in shape:
                if s < 0:
                    raise RuntimeShapeError(f"{self.fn.name}: computed a negative output "
                                            f"dimension {shape}")
            regs[dst] = aligned_empty(shape, np_dtype)
        return run

    def _device_alloc(self, dst: int, spec: Any) -> _Closure:
        device = self.vm.device
        dtype = spec.dtype
        if spec.static and spec.storage >= 0:
            block = self.storage[spec.storage]
            shape = tuple(spec.shape)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize(dtype)
            view = Tensor(mem=BorrowedMemory(block.ptr, nbytes, device.index, owner=block),
                          shape=shape, dtype=dtype, device=device)

            def run(regs, heap):
                regs[dst] = view
            return run
        dims = [(lambda h, d=d: d) if spec.static else self.exprs[d] for d in spec.shape]
        fname = self.fn.name

        def run(regs, heap):
            shape = tuple(d(heap) for d in dims)
            if any(x < 0 for x in shape):
                raise RuntimeShapeError(f"{fname}: computed a negative output dimension "
                                        f"{shape}")
            t = device_empty(shape, dtype, device)
            keep_alive(t)  # a CUDA graph captured from this call keeps writing it
            regs[dst] = t
        return run

    def _op_kernel(self, name: str, args: list[int]) -> _Closure:
        kernel = self.vm.exe.lib.get_function(name)
        # Every array the VM holds is aligned and C-contiguous (_to_value, aligned_empty,
        # planned storage), which the kernel's array entry point relies on. A call with
        # the wrong number of arguments goes through the checked call, which says so.
        # (CUDA functions check their arguments on every call.)
        call = kernel._vm_call if not self.vm.on_gpu and len(args) == kernel.num_args \
            else kernel
        if self.recorder is not None:
            call = self.recorder.timed(name, "kernel", call)
        if len(args) == 1:
            (only,) = args

            def run(regs, heap):
                call(regs[only])
            return run
        operands = itemgetter(*args)

        def run(regs, heap):
            call(*operands(regs))
        return run

    def _op_packed(self, name: str, args: list[int], dst: int) -> _Closure:
        func = self.vm.external_functions.get(name) or get_global_func(name)
        if self.recorder is not None:
            func = self.recorder.timed(name, "packed", func)
        fname = self.fn.name

        def run(regs, heap):
            try:
                result = func(*[regs[a] for a in args])
            except VMError:
                raise
            except Exception as err:
                raise VMError(f"{fname}: runtime function {name} failed: "
                              f"{type(err).__name__}: {err}") from err
            if dst >= 0:
                regs[dst] = _to_value(result, self.vm.device) if result is not None else None
        return run

    def _op_call(self, func: str, args: list[int], dst: int) -> _Closure:
        vm = self.vm
        recorder = self.recorder

        def run(regs, heap):
            regs[dst] = vm._function(func, recorder).invoke([regs[a] for a in args])
        return run

    def _op_tuple(self, dst: int, srcs: list[int]) -> _Closure:
        def run(regs, heap):
            regs[dst] = tuple(regs[s] for s in srcs)
        return run

    def _op_getitem(self, dst: int, src: int, index: int) -> _Closure:
        def run(regs, heap):
            regs[dst] = regs[src][index]
        return run

    def _op_shape(self, dst: int, exprs: list[int]) -> _Closure:
        fs = [self.exprs[i] for i in exprs]

        def run(regs, heap):
            regs[dst] = tuple(f(heap) for f in fs)
        return run

    def _op_prim(self, dst: int, expr: int) -> _Closure:
        f = self.exprs[expr]

        def run(regs, heap):
            regs[dst] = f(heap)
        return run

    def _op_match(self, src: int, check: int, label: str) -> _Closure:
        chk = self.fn.checks[check]

        def run(regs, heap):
            self.check(regs[src], chk, heap, f"match_cast {label}")
        return run

    def _op_if(self, cond: int, else_pc: int) -> _Closure:
        def run(regs, heap):
            c = regs[cond]
            if isinstance(c, Tensor):
                c = c.numpy()
            if isinstance(c, np.ndarray):
                if c.size != 1:
                    raise VMError(f"{self.fn.name}: the condition of an if must be a scalar, "
                                  f"got shape {c.shape}")
                c = c.reshape(())[()]
            return None if c else else_pc
        return run

    def _op_goto(self, pc: int) -> _Closure:
        def run(regs, heap):
            return pc
        return run

    def _op_move(self, dst: int, src: int) -> _Closure:
        def run(regs, heap):
            regs[dst] = regs[src]
        return run

    def _op_ret(self, src: int) -> _Closure:
        def run(regs, heap):
            regs.append(regs[src])
            return -1
        return run

    # -- execution ---------------------------------------------------------------------------
    def invoke(self, args: list, plan: NativePlan | None = None) -> Any:
        """Run the function on ``args`` (after checking them), by ``plan`` when given,
        else by the function's own plan or its instructions."""
        fn = self.fn
        if len(args) != len(fn.params):
            raise RuntimeArgumentCountError(
                f"{fn.name} takes {len(fn.params)} arguments ({', '.join(fn.params)}), got "
                f"{len(args)}")
        heap: list = [None] * len(fn.slot_names)
        for i, (value, chk) in enumerate(zip(args, fn.param_checks)):
            self.check(value, chk, heap, f"parameter {fn.params[i]} (#{i})")
        for i in self.written:
            if not _writeable(args[i]):
                raise RuntimeReadOnlyError(
                    f"{fn.name}: parameter {fn.params[i]} (#{i}) is not writeable (a "
                    "read-only array, such as np.load(..., mmap_mode='r') or one with "
                    "flags.writeable False), but a kernel of this function writes it",
                    hint="pass a writeable array for it, e.g. np.array(x); an executable "
                         "saved without the record of which buffers its kernels write "
                         "counts every buffer as written (compile it again to record them)")
        plan = plan or self.plan
        if plan is not None:
            return plan.run(args)
        if self.graphs is not None:
            return self.graphs.run(args, heap, self.run_code)
        return self.run_code(args, heap)

    def run_code(self, args: list, heap: list) -> Any:
        """Run the instructions on checked ``args`` with the shape ``heap`` they bound."""
        fn = self.fn
        regs: list = [None] * fn.num_regs
        regs[:len(args)] = args
        code = self.code
        pc = 0
        n = len(code)
        while pc < n:
            nxt = code[pc](regs, heap)
            if nxt is None:
                pc += 1
            elif nxt < 0:
                return regs[-1]
            else:
                pc = nxt
        raise VMError(f"{fn.name}: fell off the end of the bytecode")  # pragma: no cover


class VirtualMachine:
    """Runs an :class:`Executable` on ``device``: ``vm["forward"](x, *params)``, or with
    TVM's stateful calls :meth:`set_input`, :meth:`invoke_stateful` and
    :meth:`get_outputs`. On a GPU, functions whose runs are fixed by their parameters'
    shapes replay CUDA graphs (:mod:`irc.vm.cuda_graph`) unless ``cuda_graphs=False``."""

    def __init__(self, exe: Executable, device: Device | str | None = None, *,
                 cuda_graphs: bool = True):
        if not isinstance(exe, Executable):
            raise VMError(f"VirtualMachine expects an irc.vm.Executable, got "
                          f"{type(exe).__name__}; build one with irc.compile(mod, target)")
        self.exe = exe
        # Functions of the executable's library modules (dispatched subgraphs) by name;
        # packed calls look here before the global registry.
        self.external_functions = {name: m.get_function(name) for m in exe.external
                                   for name in m.function_names}
        self._capturable = capturable_functions(exe).__contains__
        # The kernels decide; a GPU graph whose every operation went to a library (cuBLAS)
        # has none, and then the target does.
        gpu_code = isinstance(exe.lib, CUDAProgramModule) or (
            not exe.lib.function_names and exe.target.split()[0] == "cuda")
        if device is None:
            device = "cuda" if gpu_code else cpu()
        self.device = as_device(device)
        self.on_gpu = self.device.device_type == "cuda"
        # On a GPU, static functions replay CUDA graphs unless turned off here.
        self.cuda_graphs = bool(cuda_graphs)
        if gpu_code != self.on_gpu:
            want = "irc.cuda(0)" if gpu_code else "irc.cpu()"
            raise VMError(f"this executable was compiled for {exe.target}; it runs on "
                          f"{'a CUDA GPU' if gpu_code else 'the CPU'}, not on {self.device}",
                          hint=f"irc.vm.VirtualMachine(ex, {want}), or compile for the "
                               f"device with irc.compile(mod, target=...)")
        # Weights and other constants go to the device once, here.
        self.constants = [self._load_constant(c) for c in exe.constants]
        self._prepared: dict[str, _PreparedFunction] = {}
        # Profiled copies of functions, per recorder, while vm.profile runs.
        self._profiled: dict[int, dict[str, _PreparedFunction]] = {}
        self._written: dict[str, frozenset[int]] = {}
        # The stateful calls (set_input / invoke_stateful / get_outputs), per function:
        # the arguments as given and as VM values, and the result of the last call.
        self._inputs: dict[str, tuple[tuple, list]] = {}
        self._outputs: dict[str, Any] = {}

    def _load_constant(self, c: Any) -> Any:
        if isinstance(c, np.ndarray):
            if self.on_gpu:
                return device_tensor(c, self.device)
            out = aligned_empty(c.shape, c.dtype)
            np.copyto(out, c)
            return out
        return c

    def _storage(self, nbytes: int) -> Any:
        """One block of statically planned storage on the VM's device."""
        if self.on_gpu:
            return DeviceMemory(nbytes, self.device.index)
        return aligned_empty((nbytes,), np.uint8)

    def _params_written(self, name: str) -> frozenset[int]:
        """The parameters of VM function ``name`` that its kernels may write (see
        :mod:`irc.vm.param_writes`)."""
        got = self._written.get(name)
        if got is None:
            fn = self.exe.functions.get(name)
            if fn is None:
                return frozenset()  # calling it raises the error that names it
            # A recursive call finds every parameter counted as written (conservative).
            self._written[name] = frozenset(range(len(fn.params)))
            got = written_params(fn, self._kernel_writes, self._params_written)
            self._written[name] = got
        return got

    def _kernel_writes(self, name: str) -> list[bool] | None:
        """Per argument of kernel ``name``, whether it writes it (None when unknown)."""
        try:
            kernel = self.exe.lib.get_function(name)
        except IRCError:
            return None
        if isinstance(kernel, CUDAFunction):
            return kernel.argument_writes
        sig = getattr(kernel, "signature", None)
        if not isinstance(sig, KernelSignature):
            return None
        return [kind == "buffer" and sig.buffers[i].written for kind, i in sig.order]

    def _function(self, name: str, recorder: Recorder | None = None) -> _PreparedFunction:
        cache = self._prepared if recorder is None else self._profiled.setdefault(
            id(recorder), {})
        p = cache.get(name)
        if p is None:
            fn = self.exe.functions.get(name)
            if fn is None:
                raise VMError(f"the executable has no function {name!r}; it has "
                              f"{', '.join(self.exe.functions) or 'none'}")
            p = _PreparedFunction(self, fn, recorder)
            cache[name] = p
        return p

    def __getitem__(self, name: str) -> Callable[..., Any]:
        prepared = self._function(name)
        device = self.device

        def call(*args: Any) -> Any:
            values = [_to_value(a, device) for a in args]
            result = prepared.invoke(values)
            for i in prepared.written:  # kernels that update a parameter in place
                _write_back(args[i], values[i])
            return _to_user(result, device)

        call.__name__ = name
        call.__doc__ = f"Run VM function {name}({', '.join(prepared.fn.params)})."
        return call

    def invoke(self, name: str, *args: Any) -> Any:
        """Call function ``name`` with ``args``."""
        return self[name](*args)

    # -- the stateful calls (TVM's set_input / invoke_stateful / get_outputs) ---------------
    def set_input(self, func_name: str, *args: Any, **kwargs: Any) -> None:
        """Set the arguments of function ``func_name`` for :meth:`invoke_stateful`:
        positionally, by parameter name, or both (the positional ones fill the
        parameters not named, in order). They are checked here, against the function's
        parameters, and replace any set before.

        >>> vm.set_input("main", x, w=weights)
        >>> vm.invoke_stateful("main")
        >>> y = vm.get_outputs("main")
        """
        prepared = self._function(func_name)
        fn = prepared.fn
        params = list(fn.params)
        ordered: list[Any] = [_MISSING] * len(params)
        for key, value in kwargs.items():
            if key not in params:
                raise RuntimeArgumentError(
                    f"set_input({func_name!r}): {func_name} has no parameter {key!r}; its "
                    f"parameters are {', '.join(params) or 'none'}")
            ordered[params.index(key)] = value
        free = [i for i, v in enumerate(ordered) if v is _MISSING]
        if len(args) != len(free):
            named = f" ({len(kwargs)} by name)" if kwargs else ""
            raise RuntimeArgumentCountError(
                f"set_input({func_name!r}): {func_name} takes {len(params)} arguments "
                f"({', '.join(params)}), got {len(args) + len(kwargs)}{named}")
        for i, value in zip(free, args):
            ordered[i] = value
        values = [_to_value(a, self.device) for a in ordered]
        heap: list = [None] * len(fn.slot_names)
        for i, (value, chk) in enumerate(zip(values, fn.param_checks)):
            prepared.check(value, chk, heap, f"parameter {params[i]} (#{i})")
        self._inputs[func_name] = (tuple(ordered), values)

    def invoke_stateful(self, func_name: str) -> None:
        """Run function ``func_name`` on the arguments given to :meth:`set_input`; the
        result is kept for :meth:`get_outputs`. Time it as TVM does with
        ``vm.time_evaluator("invoke_stateful", dev)(func_name)``."""
        prepared = self._function(func_name)
        stored = self._inputs.get(func_name)
        if stored is None:
            raise VMError(f"invoke_stateful({func_name!r}): no inputs are set for "
                          f"{func_name}",
                          hint=f"call vm.set_input({func_name!r}, ...) first (even for a "
                               "function without parameters)")
        args, values = stored
        result = prepared.invoke(values)
        for i in prepared.written:  # kernels that update a parameter in place
            _write_back(args[i], values[i])
        self._outputs[func_name] = result

    def get_outputs(self, func_name: str) -> Any:
        """The result of the last :meth:`invoke_stateful` of ``func_name``: a tensor, or a
        tuple of results for a function returning a tuple (as ``vm[func_name]`` returns)."""
        self._function(func_name)
        if func_name not in self._outputs:
            raise VMError(f"get_outputs({func_name!r}): no output is saved for {func_name}",
                          hint=f"call vm.invoke_stateful({func_name!r}) first (after "
                               f"vm.set_input({func_name!r}, ...))")
        return _to_user(self._outputs[func_name], self.device)

    def time_evaluator(self, name: str, dev: Device | None = None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0,
                       cooldown_interval_ms: float = 0,
                       repeats_to_cooldown: int = 1) -> Callable[..., Any]:
        """Time function ``name`` as ``Module.time_evaluator`` does (seconds per call).
        ``name`` may be ``"invoke_stateful"``: the timer then takes a function name and
        runs it on the arguments given to :meth:`set_input`,
        ``vm.time_evaluator("invoke_stateful", dev, repeat=3)("main")`` (unless the
        executable has a function of that name)."""
        if name == "invoke_stateful" and name not in self.exe.functions:
            func: Callable[..., Any] = self._checked_stateful
        else:
            func = self[name]
        return time_evaluator(func, dev or self.device, number=number, repeat=repeat,
                              min_repeat_ms=min_repeat_ms,
                              cooldown_interval_ms=cooldown_interval_ms,
                              repeats_to_cooldown=repeats_to_cooldown)

    def _checked_stateful(self, *args: Any) -> None:
        """``invoke_stateful`` as the timer calls it: with one function name."""
        if len(args) != 1 or not isinstance(args[0], str):
            raise RuntimeArgumentCountError(
                "time_evaluator('invoke_stateful', ...) times a function run on the inputs "
                "given to vm.set_input: call the timer with that function's name, e.g. "
                f"timer('main'), not with {len(args)} argument(s)")
        self.invoke_stateful(args[0])

    def profile(self, name: str, *args: Any, repeat: int = 10, warmup: int = 1
                ) -> ProfileReport:
        """Run function ``name`` on ``args`` ``warmup`` times, then ``repeat`` times with
        every kernel and runtime-function call timed, and return a
        :class:`irc.vm.profiler.ProfileReport`: per kernel, its calls and time, largest
        first, next to the VM's own time.

        Where ``vm[name]`` runs a native plan (:mod:`irc.vm.native_plan`: static
        straight-line functions on the CPU), the profiled runs are that plan with the
        clock read between kernels, so the kernels run back to back as in an ordinary
        call. Other functions run instruction by instruction with each call timed from
        Python (the device synchronized after each on a GPU); there a parallel CPU kernel
        also pays for waking the worker threads, which the gaps between calls let sleep.
        """
        if repeat < 1 or warmup < 0:
            raise VMError(f"profile: repeat must be at least 1 and warmup at least 0, got "
                          f"repeat={repeat}, warmup={warmup}")
        call = self[name]  # checks the name
        for _ in range(warmup):
            call(*args)
        plain = self._function(name)
        timed = plain.timed_plan()  # None on a GPU (no native plan there)
        recorder = Recorder(self.device.sync if self.on_gpu else None)
        device = self.device
        runs = []
        if timed is not None:
            stats = [recorder.stat(k.name, "kernel") for k in timed.kernels]
            for _ in range(repeat):
                values = [_to_value(a, device) for a in args]
                t0 = time.perf_counter()
                plain.invoke(values, plan=timed)
                runs.append(time.perf_counter() - t0)
                for stat, ns in zip(stats, np.diff(timed.stamps).tolist()):
                    stat.seconds += ns * 1e-9
                    stat.calls += 1
        else:
            try:
                prepared = self._function(name, recorder)
                for _ in range(repeat):
                    values = [_to_value(a, device) for a in args]
                    t0 = time.perf_counter()
                    prepared.invoke(values)
                    if self.on_gpu:
                        device.sync()
                    runs.append(time.perf_counter() - t0)
            finally:
                self._profiled.pop(id(recorder), None)
        kernels = sorted(recorder.stats.values(), key=lambda k: -k.seconds)
        flops = self.exe.kernel_flops
        for k in kernels:
            if k.kind == "kernel":
                k.flops = flops.get(k.name)
        return ProfileReport(name, repeat, runs, [k for k in kernels if k.calls])

    def cuda_graph_stats(self, name: str) -> dict[str, Any]:
        """How function ``name`` runs on the GPU (:mod:`irc.vm.cuda_graph`): ``plan``
        (the :class:`~irc.vm.cuda_graph.CapturePlan`: captured or why not), ``enabled``
        (graphs are on for this VM and device), and once it has run, ``captures``,
        ``replays``, ``graphs`` held and ``eager`` (why some bindings run without one)."""
        prepared = self._function(name)
        plan: CapturePlan = plan_function(prepared.fn, self._capturable)
        stats: dict[str, Any] = {"plan": plan, "enabled": self.on_gpu and self.cuda_graphs}
        if prepared.graphs is not None:
            stats.update(prepared.graphs.stats())
        return stats

    def memory_stats(self, name: str) -> dict[str, int]:
        """Planned storage of function ``name``: ``planned_bytes`` (what is allocated
        once) vs ``intermediate_bytes`` (the sum of all planned intermediate tensors)."""
        fn = self._function(name).fn
        return {"planned_bytes": int(sum(fn.storage_sizes)),
                "intermediate_bytes": int(fn.intermediate_bytes),
                "storage_blocks": len(fn.storage_sizes)}
