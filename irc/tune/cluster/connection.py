"""Connecting to a Ray cluster: importing Ray (the ``cluster`` extra), joining or
starting a cluster, checking an address before Ray would retry it for minutes, and the
first useful line of Ray's errors for messages.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from ...core.diagnostics import TuningError

#: Seconds to wait for the head node's port to answer.
PROBE_TIMEOUT = 5.0


def import_ray() -> Any:
    """The ``ray`` module, or a TuningError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise TuningError("tuning on a cluster needs Ray, which is not installed",
                          hint="pip install 'irc[cluster]'") from None
    return ray


def connect(address: str | None = None, **init_options: Any) -> Any:
    """Connect this process to Ray (once; later calls reuse the connection) and return
    the ``ray`` module. ``address``: None or ``"local"`` starts a Ray instance on this
    machine (``init_options`` such as ``num_cpus`` or ``resources`` size it), ``"auto"``
    joins the cluster this machine belongs to (``ray start`` ran here), ``"host:port"``
    its head node, ``"ray://host:port"`` a head through Ray Client."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    options: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
    if address in (None, "", "local"):
        options["address"] = "local"
        options["include_dashboard"] = False
    else:
        options["address"] = address
        probe_address(address)
    options.update(init_options)
    try:
        ray.init(**options)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as err:
        where = "a local Ray instance" if options["address"] == "local" else \
            f"the Ray cluster at {address}"
        raise TuningError(f"cannot connect to {where}: {err}",
                          hint="start the head node with 'ray start --head' and pass its "
                               "address, or 'local' for a Ray instance on this machine"
                          ) from None
    return ray


def probe_address(address: str) -> None:
    """A TuningError when nothing answers at a ``host:port`` or ``ray://host:port``
    address (Ray itself would retry for minutes); other addresses pass."""
    rest = address.split("://", 1)[1] if "://" in address else address
    if rest == "auto" or ":" not in rest:
        return
    host, _, port = rest.rpartition(":")
    try:
        port_no = int(port)
    except ValueError:
        raise TuningError(f"the cluster address {address!r} has no port number",
                          hint="auto, local, host:port or ray://host:port") from None
    try:
        with socket.create_connection((host, port_no), timeout=PROBE_TIMEOUT):
            pass
    except OSError as err:
        raise TuningError(f"nothing answers at the cluster address {address}: "
                          f"{err.strerror or err}",
                          hint="start the head node with 'ray start --head' (its address is "
                               "printed there) or pass 'local'") from None


def ray_error_text(err: BaseException) -> str:
    """The first useful line of a Ray exception."""
    text = str(err).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "Error" in ln or "died" in ln or "killed" in ln:
            return ln.strip()[:300]
    return (lines[0] if lines else type(err).__name__)[:300]


__all__ = ["PROBE_TIMEOUT", "connect", "import_ray", "probe_address", "ray_error_text"]
