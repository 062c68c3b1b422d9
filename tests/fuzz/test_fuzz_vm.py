"""Fuzzing the VM's edges: calls with random arguments (tensors of any dtype, rank and
shape, views, scalars, tuples, None, strings; too many or too few) and loading
executables whose bytes were truncated, flipped or padded. Each input either works (and
then gives the right answer) or raises an irc error that renders; anything else (another
exception, a crash of the process) fails. The ``slow`` versions are the long runs of the
fuzz campaign (``python -m pytest -m slow tests/fuzz --hypothesis-show-statistics``)."""

from __future__ import annotations

import numpy as np
import pytest
from fuzz_settings import LONG, QUICK
from hypothesis import given, settings
from hypothesis import strategies as st

import irc

SOURCE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"),
             y: R.Tensor((4,), "float32")) -> R.Tensor(("n", 4), "float32"):
        n = T.int64()
        with R.dataflow():
            z = R.add(x, y)
            w = R.nn.relu(z)
            R.output(w)
        return w

    @R.function
    def pair(t: R.Tuple(R.Tensor((2, 3), "int32"),
                        R.Tensor((3,), "float64"))) -> R.Tensor((2, 3), "float64"):
        with R.dataflow():
            a = t[0]
            b = R.astype(a, "float64")
            c = R.multiply(b, t[1])
            R.output(c)
        return c
'''

DTYPES = ["float32", "float64", "float16", "int32", "int64", "int8", "uint8", "bool",
          "complex64"]


@pytest.fixture(scope="module")
def vm():
    ex = irc.compile(irc.parse(SOURCE), "llvm")
    return ex, irc.vm.VirtualMachine(ex)


def _expected(name, args):
    """The right answer when the arguments are valid (None when they are not)."""
    if name == "main" and len(args) == 2:
        x, y = args
        if all(isinstance(a, np.ndarray) for a in (x, y)) and x.dtype == np.float32 \
                and y.dtype == np.float32 and x.ndim == 2 and x.shape[1] == 4 \
                and y.shape == (4,):
            return np.maximum(x + y, 0)
    return None


@st.composite
def arrays(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = tuple(draw(st.lists(st.integers(0, 5), max_size=3)))
    arr = np.random.default_rng(draw(st.integers(0, 9))).uniform(-2, 2, shape).astype(dtype)
    view = draw(st.sampled_from(["plain", "transposed", "strided", "readonly"]))
    if view == "transposed" and arr.ndim >= 2:
        arr = arr.T
    elif view == "strided" and arr.ndim >= 1 and arr.shape[0] > 1:
        arr = arr[::2]
    elif view == "readonly":
        arr.flags.writeable = False
    return arr


def _valid_main(draw):
    n = draw(st.integers(0, 4))
    return [np.random.rand(n, 4).astype("float32"), np.random.rand(4).astype("float32")]


arguments = st.one_of(
    arrays(),
    st.just(None), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=3),
    st.lists(arrays(), max_size=3).map(tuple), st.lists(arrays(), max_size=2),
    st.sampled_from([(), [], {}, object(), b"x", np.float32(1.0), np.array(3)]),
)


def _call(vm, data):
    _, machine = vm
    name = data.draw(st.sampled_from(["main", "pair"]))
    if data.draw(st.booleans()) and name == "main":
        args = _valid_main(data.draw)
        if data.draw(st.booleans()):
            k = data.draw(st.integers(0, 1))
            args[k] = data.draw(arguments)
    else:
        args = data.draw(st.lists(arguments, max_size=4))
    as_tensors = data.draw(st.booleans())
    if as_tensors:
        try:
            args = [irc.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        except irc.IRCError as err:
            assert str(err)
            return
    try:
        out = machine[name](*args)
    except irc.IRCError as err:
        assert str(err)
        return
    plain = [a.numpy() if isinstance(a, irc.runtime.Tensor) else a for a in args]
    want = _expected(name, plain)
    if want is not None:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)


@settings(QUICK, max_examples=150)
@given(st.data())
def test_vm_calls_with_random_arguments_give_irc_errors_or_results(vm, data):
    _call(vm, data)


@pytest.mark.slow
@settings(LONG, max_examples=5000)
@given(st.data())
def test_vm_calls_with_random_arguments_long(vm, data):
    _call(vm, data)


# ---------------------------------------------------------------------------------------
# Executable files
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def saved(vm, tmp_path_factory):
    path = tmp_path_factory.mktemp("ex") / "model.ircx"
    vm[0].save(str(path))
    return path.read_bytes()


mutations = st.lists(st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 16)),
), min_size=1, max_size=4)


def _mutate(data: bytes, steps) -> bytes:
    buf = bytearray(data)
    for step in steps:
        at = int(step[1] * max(0, len(buf) - 1))
        if step[0] == "cut":
            del buf[at:]
        elif step[0] == "flip" and buf:
            buf[at] ^= step[2]
        elif step[0] == "insert":
            buf[at:at] = step[2]
        elif step[0] == "delete":
            del buf[at:at + step[2]]
    return bytes(buf)


def _load_and_run(tmp_path, blob):
    path = tmp_path / "bad.ircx"
    path.write_bytes(blob)
    try:
        ex = irc.vm.Executable.load(str(path))
    except irc.IRCError as err:
        assert str(err)
        return
    # It loaded: what changed was not checked content (zip metadata); it must still
    # compute the right thing.
    x = np.random.rand(3, 4).astype("float32")
    y = np.random.rand(4).astype("float32")
    try:
        out = irc.vm.VirtualMachine(ex)["main"](x, y)
    except irc.IRCError as err:
        assert str(err)
        return
    np.testing.assert_allclose(out.numpy(), np.maximum(x + y, 0), rtol=1e-6)


@settings(QUICK, max_examples=120)
@given(mutations)
def test_corrupted_executables_give_irc_errors(saved, tmp_path, steps):
    _load_and_run(tmp_path, _mutate(saved, steps))


@pytest.mark.slow
@settings(LONG, max_examples=4000)
@given(mutations)
def test_corrupted_executables_long(saved, tmp_path, steps):
    _load_and_run(tmp_path, _mutate(saved, steps))
