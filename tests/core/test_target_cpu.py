"""``-mcpu`` is checked before LLVM sees it (LLVM would warn, then abort the process on
the code it made for a CPU it does not know); ``-mcpu=native`` is the host CPU."""

import subprocess
import sys
import textwrap

import pytest

import irc
from irc.core.target import TargetError, host_cpu_name, known_cpus

RELU = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y
'''


def test_native_is_the_host_cpu():
    assert irc.target.Target("llvm -mcpu=native").mcpu == host_cpu_name()
    assert irc.target.Target("llvm").mcpu == host_cpu_name()


def test_known_cpus_come_from_llvm():
    names = known_cpus()
    assert host_cpu_name() in names and "skylake-avx512" in names and "znver4" in names


@pytest.mark.parametrize("cpu, close", [("haswel", "haswell"), ("znver9", "znver4"),
                                        ("skylake-avx51", "skylake-avx512")])
def test_a_misspelled_cpu_is_an_irc_error_with_close_names(cpu, close):
    with pytest.raises(TargetError, match=f"LLVM does not know the CPU '{cpu}'") as err:
        irc.target.Target(f"llvm -mcpu={cpu}")
    assert close in err.value.hint


def test_native_and_misspelled_cpus_do_not_kill_the_process():
    """Before, both ended the process with LLVM's fatal error ("64-bit code requested on
    a subtarget that doesn't support it")."""
    script = textwrap.dedent(f'''
        import irc
        mod = irc.parse({RELU!r})
        irc.compile(mod, "llvm -mcpu=native")
        try:
            irc.compile(mod, "llvm -mcpu=nativ")
        except irc.IRCError as err:
            print("irc error:", err.message)
        ''')
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "irc error: target 'llvm -mcpu=nativ': LLVM does not know the CPU" in r.stdout
    assert "LLVM ERROR" not in r.stderr
