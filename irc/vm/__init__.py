"""The bytecode virtual machine: compiler, Executable and VirtualMachine."""

from . import builtins  # registers the runtime functions the bytecode calls by name
from .build import compile, link
from .bytecode import AllocSpec, ValueCheck, VMFunction
from .executable import Executable, load_executable
from .vm import VirtualMachine

__all__ = ["AllocSpec", "Executable", "VMFunction", "ValueCheck", "VirtualMachine", "compile",
           "link", "load_executable"]
