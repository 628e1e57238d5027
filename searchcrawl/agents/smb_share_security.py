"""A Windows or Samba share's own permissions (its share-level security descriptor), read over SMB 2/3.

The share ACL is not on any file: the server keeps it with the share's definition, and a client
asks for it with the DCE/RPC call srvsvc ``NetrShareGetInfo`` (MS-SRVS 3.1.4.10, opnum 16) at
level 502, whose SHARE_INFO_502 (2.2.4.26) carries ``shi502_security_descriptor``: a
self-relative SECURITY_DESCRIPTOR. The call goes over the named pipe ``srvsvc`` of the server's
``IPC$`` share (smbprotocol opens it; signing or encryption of the SMB session protects it, so the
RPC itself carries no authentication of its own): a bind (MS-RPCE, PDU type 11) to the srvsvc
interface with the NDR transfer syntax, then the request (type 0), and its response (type 2,
possibly in several fragments) or a fault (type 3).

What servers answer, measured against Samba 4.17 as an AD DC (tests/e2e/test_smb_share_security.py):
Samba refuses level 502 to no authenticated account, but answers it from a worker process
(samba-dcerpcd's rpcd_classic) that opens its share database (share_info.tdb, root's) on first
need with the asking account's identity: a fresh worker answers every account but the one Samba
maps to root (the domain's Administrator; not other Domain Admins) with a NULL descriptor
(``None`` here), for every share, whether it has permissions of its own or not; once the
Administrator has asked through that worker, it answers everyone with the share's stored
descriptor, or, for a share that has none (never set, or deleted), the one Samba enforces then,
``D:(A;;0x1f01ff;;;WD)`` (Everyone: full control, no owner or group). The Administrator always
gets the descriptor. An unknown share is ERROR_INVALID_NAME (123); a server without its RPC helpers
has no srvsvc pipe (its opening is refused: STATUS_OBJECT_NAME_NOT_FOUND, or
STATUS_CONNECTION_REFUSED). Windows (not measured here; Microsoft's NetShareGetInfo page): at levels
2, 502 and 503 a remote caller must be in Administrators, Power Users, Print Operators or Server
Operators (others get ERROR_ACCESS_DENIED, here ShareSecurityUnreadable with status 5; levels 0
and 1 need no membership); NERR_NetNameNotFound (2310) for an unknown share; a new share's
default is Everyone: read, stored; a NULL descriptor for a share without one of its own, as the
administrative shares, which admit administrators only. So a None never means "everyone":
agents/smb.py fails the crawl on it, as on a refusal, and removes nothing.

Everything from the server is hostile: the NDR is read with every length checked against the
buffer and against a bound (the descriptor at most 64 KiB, each string at most 4 KiB characters,
the whole response at most 256 KiB in at most 256 fragments); anything malformed is
ShareSecurityUnreadable, never an IndexError or a MemoryError. The encoding and decoding are plain
functions (``bind_request``, ``share_info_request``, ``parse_rpc_response``, ``parse_share_info_502``)
testable without a server; ``call_share_info`` runs the exchange over any pipe (two callables),
``share_security_descriptor`` over a real SMB connection.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# MS-RPCE 2.2.2.13 / C706 12.6: the PDU types used here.
PTYPE_REQUEST = 0
PTYPE_RESPONSE = 2
PTYPE_FAULT = 3
PTYPE_BIND = 11
PTYPE_BIND_ACK = 12
PTYPE_BIND_NAK = 13
PFC_FIRST_FRAG = 0x01
PFC_LAST_FRAG = 0x02
# little-endian integers, ASCII characters, IEEE floats
DREP_LE = b"\x10\x00\x00\x00"
HEADER = struct.Struct("<BBBB4sHHI")  # rpc_vers, rpc_vers_minor, ptype, pfc_flags, drep, frag_length, auth_length, call_id

SRVSVC_UUID = uuid.UUID("4b324fc8-1670-01d3-1278-5a47bf6ee188")
SRVSVC_VERSION = 3  # 3.0: major in the low 16 bits, minor in the high
NDR_UUID = uuid.UUID("8a885d04-1ceb-11c9-9fe8-08002b104860")
NDR_VERSION = 2
OPNUM_NETR_SHARE_GET_INFO = 16
LEVEL_502 = 502

# The fragment size this client asks for (the classic 4280, which every server accepts) and what
# it accepts at most (a frag_length is 16 bits anyway).
MAX_FRAGMENT = 4280
MAX_DESCRIPTOR = 64 * 1024
MAX_STRING_CHARS = 4096
MAX_RESPONSE = 256 * 1024
MAX_FRAGMENTS = 256
MAX_SHARE_NAME = 256

# Win32 / NERR codes a NetrShareGetInfo may return, named in messages.
WIN32_ERRORS = {
    5: "access denied (ERROR_ACCESS_DENIED)",
    87: "invalid parameter (ERROR_INVALID_PARAMETER)",
    123: "no such share (ERROR_INVALID_NAME, Samba's answer)",
    124: "invalid level (ERROR_INVALID_LEVEL)",
    2310: "no such share (NERR_NetNameNotFound)",
}
# DCE / NT status codes of a fault PDU.
FAULT_STATUSES = {
    0x00000005: "access denied (nca_s_fault_access_denied)",
    0x000006F7: "bad stub data (RPC_X_BAD_STUB_DATA)",
    0x1C010002: "operation out of range (nca_s_op_rng_error)",
    0x1C010003: "unknown interface (nca_s_unk_if)",
    0xC0000022: "access denied (STATUS_ACCESS_DENIED)",
}
BIND_NAK_REASONS = {
    0: "reason not specified",
    1: "temporary congestion",
    2: "local limit exceeded",
    4: "protocol version not supported",
    8: "authentication type not recognized",
    9: "invalid checksum",
}


class ShareSecurityUnreadable(Exception):
    """The share's security descriptor could not be read: the server refused, or answered something malformed.

    ``status`` is the server's Win32, fault or NT status code when it gave one (5: access denied), else None.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RpcPdu:
    """One connection-oriented RPC PDU, its header checked: ``body`` is what follows the 16-byte header."""

    ptype: int
    flags: int
    call_id: int
    body: bytes


def _header(ptype: int, flags: int, frag_length: int, call_id: int) -> bytes:
    return HEADER.pack(5, 0, ptype, flags, DREP_LE, frag_length, 0, call_id)


def _syntax(syntax_uuid: uuid.UUID, version: int) -> bytes:
    return syntax_uuid.bytes_le + struct.pack("<I", version)


def bind_request(call_id: int = 1) -> bytes:
    """The bind PDU (type 11): one presentation context, srvsvc 3.0 over NDR 2.0, no RPC authentication."""
    body = struct.pack("<HHI", MAX_FRAGMENT, MAX_FRAGMENT, 0)
    body += struct.pack("<BBH", 1, 0, 0)  # one context element
    body += struct.pack("<HBB", 0, 1, 0)  # context id 0, one transfer syntax
    body += _syntax(SRVSVC_UUID, SRVSVC_VERSION) + _syntax(NDR_UUID, NDR_VERSION)
    return _header(PTYPE_BIND, PFC_FIRST_FRAG | PFC_LAST_FRAG, HEADER.size + len(body), call_id) + body


def _pad4(data: bytes) -> bytes:
    return data + b"\x00" * (-len(data) % 4)


def _ndr_string(text: str) -> bytes:
    """A conformant varying string of UTF-16 units, NUL-terminated (``[string] wchar_t*``), padded to 4."""
    encoded = (text + "\x00").encode("utf-16-le")
    count = len(encoded) // 2
    return _pad4(struct.pack("<III", count, 0, count) + encoded)


def share_info_request(call_id: int, server: str, share: str) -> bytes:
    """The request PDU (type 0) of NetrShareGetInfo(ServerName, NetName, 502), one fragment."""
    if not share or len(share) > MAX_SHARE_NAME or "\x00" in share or "\x00" in server or len(server) > MAX_SHARE_NAME:
        raise ValueError(f"not a share name to ask a server about: {share[:MAX_SHARE_NAME]!r}")
    # ServerName: [unique, string] (a referent id, then the string); NetName: [ref, string]; Level.
    stub = struct.pack("<I", 0x00020000) + _ndr_string("\\\\" + server) + _ndr_string(share) + struct.pack("<I", LEVEL_502)
    body = struct.pack("<IHH", len(stub), 0, OPNUM_NETR_SHARE_GET_INFO) + stub
    return _header(PTYPE_REQUEST, PFC_FIRST_FRAG | PFC_LAST_FRAG, HEADER.size + len(body), call_id) + body


def parse_pdu(pdu: bytes) -> RpcPdu:
    """One whole PDU (exactly ``frag_length`` bytes), its header checked: version 5.0, little-endian NDR, no auth."""
    if len(pdu) < HEADER.size:
        raise ShareSecurityUnreadable(f"RPC PDU truncated: {len(pdu)} bytes, less than a header")
    vers, minor, ptype, flags, drep, frag_length, auth_length, call_id = HEADER.unpack_from(pdu)
    if vers != 5 or minor not in (0, 1):
        raise ShareSecurityUnreadable(f"not a DCE/RPC 5.x PDU (version {vers}.{minor})")
    if drep[0] & 0xF0 != 0x10:
        raise ShareSecurityUnreadable("RPC PDU in big-endian data representation, not supported")
    if frag_length != len(pdu):
        raise ShareSecurityUnreadable(f"RPC PDU length {frag_length} does not match the {len(pdu)} bytes received")
    if auth_length:
        raise ShareSecurityUnreadable("RPC PDU carries authentication data none was asked for")
    return RpcPdu(ptype, flags, call_id, pdu[HEADER.size :])


def _fault_reason(status: int) -> str:
    return FAULT_STATUSES.get(status, "server fault")


def parse_bind_ack(pdu: bytes, call_id: int = 1) -> int:
    """Check the answer to the bind: a bind_ack accepting srvsvc over NDR. Return the server's max fragment size."""
    parsed = parse_pdu(pdu)
    body = parsed.body
    if parsed.ptype == PTYPE_BIND_NAK:
        reason = struct.unpack_from("<H", body)[0] if len(body) >= 2 else -1
        raise ShareSecurityUnreadable(
            f"the server refused the srvsvc bind (bind_nak: {BIND_NAK_REASONS.get(reason, f'reason {reason}')})"
        )
    if parsed.ptype == PTYPE_FAULT:
        status = struct.unpack_from("<I", body, 8)[0] if len(body) >= 12 else 0
        raise ShareSecurityUnreadable(
            f"the server refused the srvsvc bind: fault 0x{status:08x} ({_fault_reason(status)})", status=status
        )
    if parsed.ptype != PTYPE_BIND_ACK:
        raise ShareSecurityUnreadable(f"RPC PDU type {parsed.ptype} where a bind_ack was expected")
    if parsed.call_id != call_id:
        raise ShareSecurityUnreadable(f"bind_ack for call {parsed.call_id}, not {call_id}")
    if len(body) < 10:
        raise ShareSecurityUnreadable("bind_ack truncated")
    max_xmit, _max_recv, _group, addr_length = struct.unpack_from("<HHIH", body)
    offset = 10 + addr_length
    offset += -(offset + HEADER.size) % 4  # the result list is 4-aligned in the PDU
    if offset + 4 + 24 > len(body):
        raise ShareSecurityUnreadable("bind_ack truncated")
    n_results = body[offset]
    if n_results < 1:
        raise ShareSecurityUnreadable("bind_ack without a result")
    result, reason = struct.unpack_from("<HH", body, offset + 4)
    transfer = body[offset + 8 : offset + 28]
    if result != 0:
        raise ShareSecurityUnreadable(f"the server rejected the srvsvc presentation context (result {result}, reason {reason})")
    if transfer != _syntax(NDR_UUID, NDR_VERSION):
        raise ShareSecurityUnreadable("the server accepted srvsvc with another transfer syntax than NDR 2.0")
    if max_xmit < HEADER.size + 8:
        raise ShareSecurityUnreadable(f"bind_ack with an impossible fragment size {max_xmit}")
    return int(max_xmit)


def parse_rpc_response(pdu: bytes, call_id: int) -> tuple[bytes, bool]:
    """One response fragment: its stub data, and whether it is the last. A fault PDU raises ShareSecurityUnreadable."""
    parsed = parse_pdu(pdu)
    if parsed.ptype == PTYPE_FAULT:
        status = struct.unpack_from("<I", parsed.body, 8)[0] if len(parsed.body) >= 12 else 0
        raise ShareSecurityUnreadable(
            f"the server answered NetrShareGetInfo with a fault 0x{status:08x} ({_fault_reason(status)})", status=status
        )
    if parsed.ptype != PTYPE_RESPONSE:
        raise ShareSecurityUnreadable(f"RPC PDU type {parsed.ptype} where a response was expected")
    if parsed.call_id != call_id:
        raise ShareSecurityUnreadable(f"RPC response for call {parsed.call_id}, not {call_id}")
    if len(parsed.body) < 8:
        raise ShareSecurityUnreadable("RPC response truncated")
    return parsed.body[8:], bool(parsed.flags & PFC_LAST_FRAG)


class _Reader:
    """NDR (little-endian, 4-byte aligned) reading with every length checked against the buffer."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def align(self, boundary: int = 4) -> None:
        self.offset += -self.offset % boundary

    def take(self, size: int) -> bytes:
        if size < 0 or self.offset + size > len(self.data):
            raise ShareSecurityUnreadable(f"NDR data truncated: {size} bytes wanted at offset {self.offset} of {len(self.data)}")
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk

    def uint32(self) -> int:
        self.align()
        value: int = struct.unpack("<I", self.take(4))[0]
        return value

    def string(self) -> str:
        """A conformant varying ``[string] wchar_t*`` pointee."""
        max_count, offset, actual = self.uint32(), self.uint32(), self.uint32()
        if offset != 0 or actual > max_count or actual > MAX_STRING_CHARS:
            raise ShareSecurityUnreadable(
                f"NDR string with impossible counts (max {max_count}, offset {offset}, actual {actual})"
            )
        raw = self.take(2 * actual)
        return raw.decode("utf-16-le", errors="replace").rstrip("\x00")


def parse_share_info_502(stub: bytes) -> bytes | None:
    """The security descriptor of NetrShareGetInfo's response stub at level 502 (None: the share has none).

    The stub is the union's discriminant, a unique pointer to SHARE_INFO_502_I, its deferred
    strings and descriptor, then the NET_API_STATUS. A status other than 0 raises
    ShareSecurityUnreadable naming it (5: access denied, 2310: no such share).
    """
    if len(stub) > MAX_RESPONSE:
        raise ShareSecurityUnreadable(f"NetrShareGetInfo response of {len(stub)} bytes, more than {MAX_RESPONSE}")
    reader = _Reader(stub)
    level, info_pointer = reader.uint32(), reader.uint32()
    descriptor: bytes | None = None
    if info_pointer:
        if level != LEVEL_502:
            raise ShareSecurityUnreadable(f"NetrShareGetInfo answered level {level}, not {LEVEL_502}")
        descriptor = _share_info_502_body(reader)
    status = reader.uint32()
    if status:
        reason = WIN32_ERRORS.get(status, f"error {status}")
        raise ShareSecurityUnreadable(f"the server answered NetrShareGetInfo: {reason}", status=status)
    if not info_pointer:
        raise ShareSecurityUnreadable("NetrShareGetInfo succeeded without share information")
    if reader.offset != len(stub) and any(stub[reader.offset :]):
        raise ShareSecurityUnreadable("NetrShareGetInfo response with data after its status")
    return descriptor


def _share_info_502_body(reader: _Reader) -> bytes | None:
    # netname, type, remark, permissions, max_uses, current_uses, path, passwd, reserved (the
    # descriptor's size), security_descriptor: pointers are referent ids, their pointees follow.
    fields = [reader.uint32() for _ in range(10)]
    netname, remark, path, passwd = fields[0], fields[2], fields[6], fields[7]
    size, descriptor_pointer = fields[8], fields[9]
    for pointer in (netname, remark, path, passwd):
        if pointer:
            reader.string()
    if not descriptor_pointer:
        return None
    count = reader.uint32()
    if count != size:
        raise ShareSecurityUnreadable(f"security descriptor of {count} bytes where the share information says {size}")
    if count > MAX_DESCRIPTOR:
        raise ShareSecurityUnreadable(f"security descriptor of {count} bytes, more than {MAX_DESCRIPTOR}")
    descriptor = reader.take(count)
    if count == 0:
        return None
    _check_self_relative(descriptor)
    return descriptor


def _check_self_relative(descriptor: bytes) -> None:
    """A SECURITY_DESCRIPTOR's header: revision 1, self-relative, its four offsets inside it."""
    if len(descriptor) < 20:
        raise ShareSecurityUnreadable(f"security descriptor of {len(descriptor)} bytes, shorter than its header")
    revision, _sbz1, control, *offsets = struct.unpack_from("<BBHIIII", descriptor)
    if revision != 1 or not control & 0x8000:
        raise ShareSecurityUnreadable("not a self-relative security descriptor (revision or control flags)")
    for offset in offsets:
        if offset and not 20 <= offset < len(descriptor):
            raise ShareSecurityUnreadable(f"security descriptor with an offset {offset} outside its {len(descriptor)} bytes")


class PduReader:
    """Whole PDUs out of a pipe's reads: a read may hold part of a PDU or more than one; bounded in bytes and reads."""

    def __init__(self, read: Callable[[], bytes], *, max_bytes: int = MAX_RESPONSE + 64 * 1024) -> None:
        self._read = read
        self._buffer = b""
        self._left = max_bytes
        self._reads_left = MAX_FRAGMENTS * 4

    def next_pdu(self) -> bytes:
        while True:
            if len(self._buffer) >= HEADER.size:
                frag_length = struct.unpack_from("<H", self._buffer, 8)[0]
                if frag_length < HEADER.size:
                    raise ShareSecurityUnreadable(f"RPC PDU with an impossible length {frag_length}")
                if len(self._buffer) >= frag_length:
                    pdu, self._buffer = self._buffer[:frag_length], self._buffer[frag_length:]
                    return pdu
            if self._reads_left <= 0:
                raise ShareSecurityUnreadable("RPC answer in too many pieces")
            self._reads_left -= 1
            chunk = self._read()
            if not chunk:
                raise ShareSecurityUnreadable("the pipe closed in the middle of an RPC answer")
            if len(chunk) > self._left:
                raise ShareSecurityUnreadable(f"RPC answer larger than {MAX_RESPONSE + 64 * 1024} bytes")
            self._left -= len(chunk)
            self._buffer += chunk


def call_share_info(write: Callable[[bytes], None], read: Callable[[], bytes], server: str, share: str) -> bytes | None:
    """Bind to srvsvc and call NetrShareGetInfo(share, 502) over a pipe given as two callables.

    ``write`` sends one PDU (one pipe message); ``read`` returns what the pipe holds next (one
    message or part of one). Returns the descriptor, or None when the share has none.
    """
    pdus = PduReader(read)
    write(bind_request(call_id=1))
    parse_bind_ack(pdus.next_pdu(), call_id=1)
    write(share_info_request(2, server, share))
    stub = b""
    for _ in range(MAX_FRAGMENTS):
        fragment, last = parse_rpc_response(pdus.next_pdu(), call_id=2)
        stub += fragment
        if len(stub) > MAX_RESPONSE:
            raise ShareSecurityUnreadable(f"NetrShareGetInfo response larger than {MAX_RESPONSE} bytes")
        if last:
            return parse_share_info_502(stub)
    raise ShareSecurityUnreadable(f"NetrShareGetInfo response in more than {MAX_FRAGMENTS} fragments")


def share_security_descriptor(
    server: str,
    share: str,
    *,
    username: str | None = None,
    password: str | None = None,
    port: int = 445,
    encrypt: bool | None = None,
    auth_protocol: str = "negotiate",
    connection_cache: dict[str, Any] | None = None,
    connection_timeout: int = 60,
) -> bytes | None:
    """The self-relative security descriptor of ``\\\\server\\share`` (None: the server gave none: see the module's docstring).

    Connects (or reuses the connection of ``connection_cache``, smbclient's pool) to the server's
    ``IPC$``, opens the ``srvsvc`` pipe and calls NetrShareGetInfo at level 502. Raises
    ShareSecurityUnreadable, naming the share and the reason, when the server refuses (access
    denied, no such share, the pipe cannot be opened) or answers something malformed; a failed
    connection or sign-in raises smbprotocol's own exception (the server, not the share, is the
    matter then). No message holds the password.
    """
    # Imported here: the plain functions above need no SMB library.
    from smbclient._pool import get_smb_tree
    from smbprotocol.exceptions import SMBException, SMBResponseException

    tree, _path = get_smb_tree(
        rf"\\{server}\IPC$",
        username=username,
        password=password,
        port=port,
        encrypt=encrypt,
        connection_timeout=connection_timeout,
        connection_cache=connection_cache,
        auth_protocol=auth_protocol,
    )
    where = f"share {share!r} on {server}"
    pipe = _open_srvsvc(tree, where)
    read_size = min(64 * 1024, int(tree.session.connection.max_read_size))
    try:
        return call_share_info(lambda pdu: pipe.write(pdu, 0), lambda: bytes(pipe.read(0, read_size)), server, share)
    except ShareSecurityUnreadable as err:
        raise ShareSecurityUnreadable(f"{where}: {err}", status=err.status) from None
    except SMBResponseException as err:
        raise ShareSecurityUnreadable(f"{where}: the srvsvc pipe failed: {err.message}", status=err.status) from None
    finally:
        try:
            pipe.close()
        except SMBException:
            pass  # the answer (or the first error) matters, not a failed close of a pipe


def _open_srvsvc(tree: Any, where: str) -> Any:
    """The ``srvsvc`` pipe opened on ``tree``, a connection's ``IPC$`` (smbprotocol's TreeConnect),
    to read and write; ShareSecurityUnreadable, naming ``where``, when the server refuses it."""
    from smbprotocol.exceptions import SMBResponseException
    from smbprotocol.open import (
        CreateDisposition,
        CreateOptions,
        FilePipePrinterAccessMask,
        ImpersonationLevel,
        Open,
        ShareAccess,
    )

    pipe = Open(tree, "srvsvc")
    try:
        pipe.create(
            ImpersonationLevel.Impersonation,
            FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.FILE_WRITE_DATA,
            0,
            ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
            CreateDisposition.FILE_OPEN,
            CreateOptions.FILE_NON_DIRECTORY_FILE,
        )
    except SMBResponseException as err:
        raise ShareSecurityUnreadable(
            f"{where}: the srvsvc pipe could not be opened (the server offers none, or not to this account): {err.message}",
            status=err.status,
        ) from None
    return pipe
