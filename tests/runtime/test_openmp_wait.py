"""libgomp's spinning is bounded when irc loads it, unless the user chose a wait policy
(``irc.runtime.engine.bounded_openmp_wait``). Each case runs in a fresh process: libgomp
reads its settings once, when it is loaded, and prints them with OMP_DISPLAY_ENV."""

import os
import re
import subprocess
import sys

import pytest

from irc.runtime.engine import OPENMP_SPIN_COUNT

_PROBE = (
    "import os\n"
    "from irc.runtime.engine import ensure_llvm, has_symbol\n"
    "ensure_llvm()\n"
    "print('gomp', has_symbol('GOMP_parallel'))\n"
    "print('left', os.environ.get('GOMP_SPINCOUNT'))\n"
)


def _probe(**env: str) -> tuple[str, str]:
    """(stdout, stderr) of loading irc's OpenMP runtime with ``env`` on top of a copy of
    this environment cleared of the OpenMP wait settings."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DISPLAY_ENV")}
    base.update(env, OMP_DISPLAY_ENV="verbose")
    done = subprocess.run([sys.executable, "-c", _PROBE], env=base, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    if "gomp True" not in done.stdout:
        pytest.skip("libgomp is not installed (parallel loops need it)")
    return done.stdout, done.stderr


def _spin_count(stderr: str) -> str:
    m = re.search(r"GOMP_SPINCOUNT = '(\w+)'", stderr)
    assert m, stderr
    return m.group(1)


def test_irc_bounds_the_spin_count_and_leaves_the_environment_alone():
    out, err = _probe()
    assert _spin_count(err) == str(OPENMP_SPIN_COUNT)
    assert "left None" in out  # set only while libgomp loads


@pytest.mark.parametrize("env, expected", [
    ({"OMP_WAIT_POLICY": "passive"}, "0"),
    ({"GOMP_SPINCOUNT": "5k"}, "5000"),
    ({"OMP_WAIT_POLICY": "active", "GOMP_SPINCOUNT": "123"}, "123"),
])
def test_a_users_wait_settings_stand(env, expected):
    out, err = _probe(**env)
    assert _spin_count(err) == expected
    assert f"left {env.get('GOMP_SPINCOUNT')}" in out
