"""CUDA C to cubin with NVRTC: cubins, headers, the disk cache, diagnostics.

NVRTC needs no GPU or driver, so these run everywhere the ``cuda`` extra is installed
(the ``test`` extra installs it).
"""

import logging
import pickle
import struct
import sys

import pytest

from irc.codegen import nvrtc
from irc.core.diagnostics import CodegenError, MissingDependencyError

pytest.importorskip("cuda.bindings.nvrtc", reason="needs NVIDIA's cuda-bindings (irc[cuda])")

VADD = """\
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

HALF = """\
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void scale(__half* x, __nv_bfloat16* y, __half s, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = __hmul(x[i], s);
    y[i] = __float2bfloat16(__bfloat162float(y[i]) * __half2float(s));
  }
}
"""

EM_CUDA = 190  # the ELF machine number of NVIDIA GPU code


@pytest.fixture
def cache(tmp_path, monkeypatch, irc_settings):
    """A fresh cache directory and an empty in-memory cache; counts NVRTC runs."""
    irc_settings(cache_dir=tmp_path)
    nvrtc.clear_memory_cache()
    runs = []
    real = nvrtc._compile_with_nvrtc

    def counting(*args, **kwargs):
        runs.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(nvrtc, "_compile_with_nvrtc", counting)
    yield runs
    nvrtc.clear_memory_cache()


def test_compiles_a_kernel_to_a_cubin(cache):
    cubin = nvrtc.compile_cuda(VADD, arch="sm_80")
    assert cubin[:4] == b"\x7fELF"
    (machine,) = struct.unpack_from("<H", cubin, 18)
    assert machine == EM_CUDA
    assert b"vadd" in cubin  # the kernel's symbol, unmangled (extern "C")
    assert nvrtc.nvrtc_version() >= (12, 0)
    assert "sm_90" in " ".join(nvrtc.default_options("sm_90"))
    assert "--use_fast_math" not in nvrtc.default_options("sm_90")


def test_nvrtc_output_never_lands_in_shared_bytes_objects(cache):
    # A kernel without warnings has a log of one byte (its NUL): NVRTC once wrote it into
    # the interpreter's b" " singleton, after which every " " encoded to bytes was NUL.
    space = bytes([32])
    nvrtc.compile_cuda(VADD.replace("vadd", "vadd_log"), arch="sm_90")
    assert len(cache) == 1
    assert b" " == space and " ".encode() == space and bytes((32,)) * 1 == space


def test_fp16_and_bf16_headers_compile(cache):
    cubin = nvrtc.compile_cuda(HALF)
    assert cubin[:4] == b"\x7fELF" and b"scale" in cubin
    assert any(o.startswith("-I") for o in nvrtc.include_options())


def test_cache_hits_in_memory_and_on_disk(cache, tmp_path):
    first = nvrtc.compile_cuda(VADD)
    assert len(cache) == 1
    entries = list((tmp_path / "cuda").glob("*.cubin"))
    assert len(entries) == 1
    assert nvrtc.compile_cuda(VADD) == first and len(cache) == 1  # in memory
    nvrtc.clear_memory_cache()
    assert nvrtc.compile_cuda(VADD) == first and len(cache) == 1  # from disk
    nvrtc.compile_cuda(VADD, arch="sm_80")  # the key holds the architecture,
    nvrtc.compile_cuda(VADD, options=["-lineinfo"])  # the options,
    nvrtc.compile_cuda(VADD + "\n")  # and the source
    assert len(cache) == 4
    assert len(list((tmp_path / "cuda").glob("*.cubin"))) == 4


@pytest.mark.parametrize("damage", [b"garbage", b"", None])
def test_corrupt_cache_entry_is_rebuilt(cache, tmp_path, damage):
    good = nvrtc.compile_cuda(VADD)
    (entry,) = (tmp_path / "cuda").glob("*.cubin")
    data = entry.read_bytes()
    entry.write_bytes(data[:-100] if damage is None else damage)  # None: truncated
    nvrtc.clear_memory_cache()
    assert nvrtc.compile_cuda(VADD) == good
    assert len(cache) == 2
    assert entry.read_bytes() == data  # rewritten


def test_unwritable_cache_directory_warns_once_and_compiles(tmp_path, irc_settings, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    irc_settings(cache_dir=blocker)
    nvrtc.clear_memory_cache()
    with caplog.at_level(logging.WARNING, logger="irc.cache"):
        assert nvrtc.compile_cuda(VADD)[:4] == b"\x7fELF"
        assert nvrtc.compile_cuda(VADD.replace("vadd", "vadd2"))[:4] == b"\x7fELF"
    warnings = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warnings) == 1 and "IRC_CACHE_DIR" in warnings[0].getMessage()
    nvrtc.clear_memory_cache()


def test_syntax_error_names_the_line_and_shows_it(cache):
    source = ('extern "C" __global__ void broken(float* a) {\n'
              "  int i = threadIdx.x;\n"
              "  foo[i] = 1;\n"
              "  bar = 2;\n"
              "}\n")
    with pytest.raises(nvrtc.CUDACompileError) as info:
        nvrtc.compile_cuda(source)
    err = info.value
    assert isinstance(err, CodegenError)
    text = str(err)
    assert text.startswith("irc_kernels.cu:3:3: CUDA compilation failed")
    assert 'identifier "foo" is undefined' in text
    assert "\n      foo[i] = 1;\n      ^" in text  # the line, and a caret under foo
    assert "1 more error" in text
    assert 'identifier "bar" is undefined' in err.log and err.source == source
    copy = pickle.loads(pickle.dumps(err))  # as a build worker sends it back
    assert str(copy) == text and copy.log == err.log and copy.source == source
    assert len(cache) == 1
    with pytest.raises(nvrtc.CUDACompileError):  # failures are not cached
        nvrtc.compile_cuda(source)
    assert len(cache) == 2


def test_file_name_shows_in_errors(cache):
    with pytest.raises(CodegenError, match=r"^fused_add\.cu:1:\d+: CUDA compilation failed"):
        nvrtc.compile_cuda("this is not C", name="fused_add.cu")


def test_bad_architectures_are_named(cache):
    with pytest.raises(CodegenError, match="invalid CUDA architecture 'sm90'"):
        nvrtc.compile_cuda(VADD, arch="sm90")
    with pytest.raises(CodegenError, match="invalid CUDA architecture 'compute_90'"):
        nvrtc.compile_cuda(VADD, arch="compute_90")  # PTX only: never loaded
    with pytest.raises(CodegenError, match=r"cannot compile for sm_35; it supports sm_75"):
        nvrtc.compile_cuda(VADD, arch="sm_35")
    assert not cache


def test_options_are_passed_and_bad_ones_named(cache):
    source = 'extern "C" __global__ void k(int* a) { a[0] = VALUE; }\n'
    assert nvrtc.compile_cuda(source, options=["-DVALUE=3"])[:4] == b"\x7fELF"
    with pytest.raises(nvrtc.CUDACompileError, match="rejected the options.*--no-such-option"):
        nvrtc.compile_cuda(source, options=["-DVALUE=3", "--no-such-option"])


def test_ptx_for_reading(cache):
    ptx = nvrtc.ptx_of(VADD, arch="sm_80")
    assert ".target sm_80" in ptx and ".entry vadd" in ptx


def test_missing_bindings_name_the_extra(monkeypatch):
    for name in ("cuda.bindings.nvrtc", "cuda.nvrtc"):
        monkeypatch.setitem(sys.modules, name, None)  # makes the import fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'irc\[cuda\]'"):
        nvrtc.compile_cuda(VADD)


def test_toolkit_headers_when_nvrtc_bundles_none(cache, monkeypatch):
    # NVRTC before 13.3 has no bundled headers: a toolkit's include directory is used.
    monkeypatch.setattr(nvrtc, "_install_bundled_headers", lambda bindings: None)
    monkeypatch.setattr(nvrtc, "_include_options", None)
    root = nvrtc._toolkit_include_dir()
    if root is None:
        pytest.skip("no CUDA toolkit headers on this machine")
    assert nvrtc.include_options()[0] == f"-I{root}"
    assert nvrtc.compile_cuda(HALF)[:4] == b"\x7fELF"
