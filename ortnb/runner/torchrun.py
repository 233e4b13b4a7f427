"""torchrun, bound where the run needs it and nowhere else.

torchrun's stores (the c10d rendezvous store and the agent store its ranks connect to) are TCPStore servers, and
a TCPStore server listens on every interface (``::``), whatever host it is given, without authentication: anyone
who reaches the machine could join or corrupt a run's rendezvous. torchrun has no option for the address, but
TCPStore takes an already listening socket (``master_listen_fd``). So ortnb starts torchrun through this module,
which hands every store server a socket bound to the host the store was named with:

- a run on one machine names 127.0.0.1 (``single_machine_args``), and its ranks' gloo pairs use the loopback
  interface (``environment``): nothing of the run is reachable from another machine;
- a run across nodes binds its stores to the address the user named (``--rdzv_endpoint``, ``--local_addr`` or
  the host's name), not to every interface.

    python -m ortnb.runner.torchrun [torchrun arguments] -m MODULE ARGS...
"""

from __future__ import annotations

import os
import socket
import sys

LOOPBACK = "127.0.0.1"


def single_machine_args() -> list[str]:
    """torchrun's node arguments for a run on this machine alone (what ``--standalone`` does, on loopback)."""
    return ["--nnodes=1", "--rdzv-backend=c10d", f"--rdzv-endpoint={LOOPBACK}:0", f"--local-addr={LOOPBACK}"]


def command(nproc: int, target: list[str], launcher_args: list[str] | None = None) -> list[str]:
    """The command line that starts ``target`` (``-m module args``) on ``nproc`` ranks; ``launcher_args``: the
    user's node arguments for a run across nodes, else this machine alone."""
    where = launcher_args or single_machine_args()
    return [sys.executable, "-m", "ortnb.runner.torchrun", *where, f"--nproc_per_node={nproc}", *target]


def environment(env: dict, single_machine: bool) -> dict:
    """``env`` with gloo's pairs on the loopback interface for a run on one machine (gloo otherwise binds to the
    address the host's name resolves to, which other machines may reach)."""
    if not single_machine:
        return env
    return {**env, "GLOO_SOCKET_IFNAME": loopback_interface()}


def loopback_interface() -> str:
    """The name of the interface that holds 127.0.0.1 ("lo" on Linux)."""
    import psutil

    for name, addresses in psutil.net_if_addrs().items():
        if any(address.family == socket.AF_INET and address.address == LOOPBACK for address in addresses):
            return name
    return "lo"


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host`` (a name or an address) and ``port`` (0: any free one)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _bound_store_class():
    import torch.distributed as dist

    class BoundTCPStore(dist.TCPStore):
        """A TCPStore whose server listens on its host only (see the module docstring)."""

        def __init__(self, host_name, port, world_size=None, is_master=False, *args, **kwargs):
            if is_master and kwargs.get("master_listen_fd") is None:
                try:
                    sock = listening_socket(host_name, port)
                except OSError as error:  # what TCPStore raises, so torchrun's fallbacks (not the host) still apply
                    raise RuntimeError(f"ortnb: could not listen on {host_name}:{port}: {error}") from error
                port = sock.getsockname()[1]
                kwargs["master_listen_fd"] = sock.detach()  # the store owns it from here
            super().__init__(host_name, port, world_size, is_master, *args, **kwargs)

    return BoundTCPStore


def bind_stores_to_their_host() -> None:
    """Make every TCPStore server torchrun creates listen only on the host it was given."""
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend, static_tcp_rendezvous

    bound = _bound_store_class()
    dist.TCPStore = bound  # dynamic_rendezvous and elastic.utils.distributed look it up here
    c10d_rendezvous_backend.TCPStore = bound  # these two imported the name itself
    static_tcp_rendezvous.TCPStore = bound


def main() -> None:
    bind_stores_to_their_host()
    from torch.distributed.run import main as torchrun

    sys.argv[0] = "torchrun"
    torchrun()  # raises when a rank failed: its traceback and exit status as torchrun's own
    # Every rank has exited: skip the interpreter's teardown of torch (0.5 s or more the supervisor would wait).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
