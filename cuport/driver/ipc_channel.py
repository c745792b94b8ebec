"""How another process gets what cuIpcGetMemHandle / cuIpcGetEventHandle exported: a
descriptor, passed over a Unix socket that the exporting process serves (SCM_RIGHTS).

The socket is in the abstract namespace (no file to plant or to clean up), named after the
user, the process and a random token that only the handles carry; it keeps message
boundaries (SOCK_SEQPACKET): one request, one answer. Both ends check who is at
the other (SO_PEERCRED): the server answers only processes of its own user, and the client
uses an answer only from the process the handle names, of its own user. So a descriptor
never comes from, or goes to, another user's process. The server is a thread started by the
first export; an export is offered until it is withdrawn (the memory freed, the event gone).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import struct
import threading

from cuport.driver.errors import CudaError, E

_REQUEST = struct.Struct("<8sQ")  # kind, id
_REPLY = struct.Struct("<I")  # 0: the descriptor and its description follow; 1: not offered
_CRED = struct.Struct("<iII")  # struct ucred: pid, uid, gid
TIMEOUT_S = 10.0  # an exporter that accepted but does not answer (its process is stopped, ...)
_MAX_DESCRIPTION = 1024


def _address(pid: int, token: int) -> str:
    return f"\0cuport-ipc-{os.getuid()}-{pid}-{token:016x}"


def _peer(sock: socket.socket) -> tuple[int, int]:
    pid, uid, _ = _CRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CRED.size))
    return pid, uid


class Server:
    """This process's offers, served to its user's other processes."""

    def __init__(self) -> None:
        self._offers: dict[tuple[bytes, int], tuple[int, bytes]] = {}  # -> (descriptor, description)
        self._lock = threading.Lock()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # (close-on-exec)
        for _ in range(4):
            self.token = secrets.randbits(64)
            try:
                self.sock.bind(_address(os.getpid(), self.token))
                break
            except OSError:  # (the name is taken: another token)
                continue
        else:
            raise CudaError(E.OPERATING_SYSTEM, "no abstract Unix socket could be bound for IPC")
        self.sock.listen(64)
        threading.Thread(target=self._serve, daemon=True, name="cuport-ipc").start()

    def offer(self, kind: bytes, ident: int, fd: int, description: bytes) -> None:
        """Hand `fd` (a copy of it: the caller keeps its own) and `description` to whoever of
        this user asks for (kind, ident)."""
        copy = os.dup(fd)
        os.set_inheritable(copy, False)
        with self._lock:
            old = self._offers.pop((kind, ident), None)
            self._offers[(kind, ident)] = (copy, description)
        if old is not None:
            os.close(old[0])

    def withdraw(self, kind: bytes, ident: int) -> None:
        with self._lock:
            old = self._offers.pop((kind, ident), None)
        if old is not None:
            os.close(old[0])

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # (closed)
            with conn:
                try:
                    self._answer(conn)
                except OSError:
                    pass  # (the peer went away, or sent nonsense, or was too slow)

    def _answer(self, conn: socket.socket) -> None:
        conn.settimeout(TIMEOUT_S)
        _, uid = _peer(conn)
        if uid != os.getuid():
            return  # another user's process: no answer at all
        request = conn.recv(_REQUEST.size)
        if len(request) != _REQUEST.size:
            return
        kind, ident = _REQUEST.unpack(request)
        kind = kind.rstrip(b"\0")  # (struct pads it)
        with self._lock:  # (held while sending: a withdrawn descriptor is closed only after)
            offer = self._offers.get((kind, ident))
            if offer is None:
                conn.sendall(_REPLY.pack(1))
                return
            fd, description = offer
            socket.send_fds(conn, [_REPLY.pack(0) + description], [fd])


_server: Server | None = None
_server_lock = threading.Lock()


def server() -> Server:
    """This process's server, started on first use."""
    global _server
    with _server_lock:
        if _server is None:
            _server = Server()
        return _server


def _forget_in_child() -> None:
    """A child forked by Python (os.fork) does not serve its parent's offers: its copy of the
    socket is closed, so the name disappears when the parent's does."""
    global _server
    if _server is not None:
        with contextlib.suppress(OSError):
            _server.sock.close()
        _server = None


os.register_at_fork(after_in_child=_forget_in_child)


def withdraw(kind: bytes, ident: int) -> None:
    """No longer offer (kind, ident), if this process serves it."""
    if _server is not None:
        _server.withdraw(kind, ident)


def fetch(pid: int, token: int, kind: bytes, ident: int, what: str) -> tuple[int, bytes]:
    """The descriptor and description process `pid` offers as (kind, ident): a descriptor of
    this process's, which the caller owns. CUDA_ERROR_INVALID_VALUE when the process no
    longer serves it (exited), offers it no longer (freed), or is not of this user."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(TIMEOUT_S)
    with sock:
        try:
            sock.connect(_address(pid, token))
        except (FileNotFoundError, ConnectionRefusedError):
            raise CudaError(E.INVALID_VALUE, f"the process {pid} that made the {what} handle has "
                                             "exited") from None
        except OSError as e:
            raise CudaError(E.INVALID_VALUE, f"cannot reach process {pid}, which made the {what} "
                                             f"handle: {e.strerror or e}") from None
        peer_pid, peer_uid = _peer(sock)
        if peer_uid != os.getuid() or peer_pid != pid:
            raise CudaError(E.INVALID_VALUE, f"the socket named in the {what} handle is served by "
                                             f"process {peer_pid} of user {peer_uid}, not by "
                                             f"process {pid} of this user: not used")
        try:
            sock.sendall(_REQUEST.pack(kind, ident))
            data, fds, _, _ = socket.recv_fds(sock, _REPLY.size + _MAX_DESCRIPTION, 1,
                                              socket.MSG_CMSG_CLOEXEC)
        except OSError as e:
            raise CudaError(E.INVALID_VALUE, f"process {pid}, which made the {what} handle, did "
                                             f"not answer: {e.strerror or e}") from None
    if len(data) < _REPLY.size or _REPLY.unpack_from(data)[0] != 0 or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise CudaError(E.INVALID_VALUE, f"process {pid} no longer offers the {what} (freed or "
                                         "destroyed since the handle was made)")
    return fds[0], data[_REPLY.size:]
