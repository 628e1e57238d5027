"""A share's security descriptor over srvsvc NetrShareGetInfo: the RPC encoding and the defensive
decoding, without a server (against a live Samba: tests/e2e/test_smb_share_security.py).

The real answers below were captured from Samba 4.17 (an AD DC) for its share ``docs`` without a
``sharesec`` ACL: Samba makes up ``D:(A;;FA;;;WD)``, Everyone: full control."""

from __future__ import annotations

import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from searchcrawl.agents.smb_share_security import (
    MAX_DESCRIPTOR,
    NDR_UUID,
    SRVSVC_UUID,
    ShareSecurityUnreadable,
    bind_request,
    call_share_info,
    parse_bind_ack,
    parse_rpc_response,
    parse_share_info_502,
    share_info_request,
    share_security_descriptor,
)

SAMBA_BIND_ACK = bytes.fromhex(
    "05000c03100000004400000001000000b810b81052d200000d005c706970655c73727673766300000100000000000000"
    "045d888aeb1cc9119fe808002b10486002000000"
)
SAMBA_RESPONSE = bytes.fromhex(
    "0500020310000000f400000002000000dc00000000000000f60100000400020008000200000000000c00020000000000"
    "ffffffff010000001000020014000200300000001800020005000000000000000500000064006f006300730000000000"
    "0100000000000000010000000000000018000000000000001800000043003a005c0074006d0070005c00730063007400"
    "720079005c00730068006100720065005c0064006f006300730000000100000000000000010000000000000030000000"
    "010004800000000000000000000000001400000002001c000100000000001400ff011f00010100000000000100000000"
    "00000000"
)
EVERYONE_FULL = bytes.fromhex("010004800000000000000000000000001400000002001c000100000000001400ff011f00010100000000000100000000")


# -- a test-side encoder, to build answers a hostile server could send ---------------------------


def pdu(
    ptype: int, body: bytes, *, call_id: int = 2, flags: int = 3, frag_length: int | None = None, auth_length: int = 0
) -> bytes:
    length = 16 + len(body) if frag_length is None else frag_length
    return struct.pack("<BBBB4sHHI", 5, 0, ptype, flags, b"\x10\0\0\0", length, auth_length, call_id) + body


def response(stub: bytes, *, call_id: int = 2, flags: int = 3) -> bytes:
    return pdu(2, struct.pack("<IHBB", len(stub), 0, 0, 0) + stub, call_id=call_id, flags=flags)


def fault(status: int, *, call_id: int = 2) -> bytes:
    return pdu(3, struct.pack("<IHBBI", 0, 0, 0, 0, status) + b"\0" * 4, call_id=call_id)


def ndr_string(text: str, *, max_count: int | None = None, actual: int | None = None) -> bytes:
    raw = (text + "\0").encode("utf-16-le")
    count = len(raw) // 2
    data = struct.pack("<III", count if max_count is None else max_count, 0, count if actual is None else actual) + raw
    return data + b"\0" * (-len(data) % 4)


def share_info_stub(
    descriptor: bytes | None = EVERYONE_FULL,
    *,
    status: int = 0,
    level: int = 502,
    size: int | None = None,
    count: int | None = None,
    info: bool = True,
) -> bytes:
    stub = struct.pack("<II", level, 0x20000 if info else 0)
    if info:
        sd_size = len(descriptor or b"") if size is None else size
        stub += struct.pack(
            "<10I", 0x20004, 0, 0x20008, 0, 0xFFFFFFFF, 1, 0x2000C, 0, sd_size, 0x20010 if descriptor is not None else 0
        )
        stub += ndr_string("docs") + ndr_string("") + ndr_string("C:\\docs")
        if descriptor is not None:
            array = struct.pack("<I", len(descriptor) if count is None else count) + descriptor
            stub += array + b"\0" * (-len(array) % 4)
    return stub + struct.pack("<I", status)


class FakePipe:
    """A named pipe answering with the given PDUs (or chunks of them), recording what was written."""

    def __init__(self, *answers: bytes) -> None:
        self.answers = list(answers)
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def read(self) -> bytes:
        return self.answers.pop(0) if self.answers else b""


def call(*answers: bytes) -> bytes | None:
    pipe = FakePipe(*answers)
    return call_share_info(pipe.write, pipe.read, "dc1", "docs")


def refusal(function: Callable[[], object]) -> str:
    with pytest.raises(ShareSecurityUnreadable) as caught:
        function()
    return str(caught.value)


# -- the encoding -----------------------------------------------------------------------------


def test_bind_request_asks_for_srvsvc_3_over_ndr_2():
    bind = bind_request()
    assert bind[:4] == b"\x05\x00\x0b\x03"  # version 5.0, bind, first and last fragment
    assert struct.unpack_from("<HHI", bind, 8) == (len(bind), 0, 1)
    assert struct.unpack_from("<HH", bind, 16) == (4280, 4280)
    assert bind[32:48] == SRVSVC_UUID.bytes_le and struct.unpack_from("<I", bind, 48) == (3,)
    assert bind[52:68] == NDR_UUID.bytes_le and struct.unpack_from("<I", bind, 68) == (2,)
    assert len(bind) == 72


def test_share_info_request_is_opnum_16_at_level_502():
    request = share_info_request(7, "10.231.0.2", "docs")
    assert request[2] == 0 and struct.unpack_from("<HHI", request, 8) == (len(request), 0, 7)
    alloc_hint, context, opnum = struct.unpack_from("<IHH", request, 16)
    assert (context, opnum) == (0, 16) and alloc_hint == len(request) - 24
    stub = request[24:]
    assert struct.unpack_from("<I", stub) != (0,)  # the server name's referent
    assert stub[4:] == ndr_string("\\\\10.231.0.2") + ndr_string("docs") + struct.pack("<I", 502)
    assert len(request) % 4 == 0


@pytest.mark.parametrize("share", ["", "x" * 257, "do\0cs"])
def test_share_info_request_refuses_no_share_name(share):
    with pytest.raises(ValueError):
        share_info_request(2, "dc1", share)


# -- Samba's real answers ------------------------------------------------------------------------


def test_samba_answer_gives_the_descriptor():
    pipe = FakePipe(SAMBA_BIND_ACK, SAMBA_RESPONSE)
    assert call_share_info(pipe.write, pipe.read, "10.231.0.2", "docs") == EVERYONE_FULL
    assert pipe.written == [bind_request(1), share_info_request(2, "10.231.0.2", "docs")]


def test_answers_split_across_reads_or_joined_in_one():
    whole = SAMBA_BIND_ACK + SAMBA_RESPONSE
    assert call(whole) == EVERYONE_FULL
    assert call(*(whole[i : i + 7] for i in range(0, len(whole), 7))) == EVERYONE_FULL


def test_response_in_fragments_is_reassembled():
    stub = share_info_stub()
    pieces = [stub[:20], stub[20:61], stub[61:]]
    fragments = [response(pieces[0], flags=1), response(pieces[1], flags=0), response(pieces[2], flags=2)]
    assert call(SAMBA_BIND_ACK, *fragments) == EVERYONE_FULL


def test_parse_rpc_response_gives_stub_and_last_flag():
    assert parse_rpc_response(response(b"abcd", flags=1), 2) == (b"abcd", False)
    assert parse_rpc_response(SAMBA_RESPONSE, 2)[1] is True


def test_parse_bind_ack_gives_the_fragment_size():
    assert parse_bind_ack(SAMBA_BIND_ACK) == 4280


# -- no descriptor, empty descriptor ------------------------------------------------------------


def test_null_descriptor_pointer_is_none():
    assert parse_share_info_502(share_info_stub(None)) is None


def test_zero_length_descriptor_is_none():
    assert parse_share_info_502(share_info_stub(b"")) is None


def test_empty_dacl_is_a_descriptor_not_none():
    # sharesec --setsddl='D:' (nobody may use the share): Samba's answer
    empty_dacl = bytes.fromhex("01000480000000000000000000000000140000000400080000000000")
    assert parse_share_info_502(share_info_stub(empty_dacl)) == empty_dacl


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "reason"),
    [(5, "access denied"), (123, "no such share"), (2310, "no such share"), (124, "invalid level"), (9999, "error 9999")],
)
def test_error_status_is_unreadable_naming_it(status, reason):
    with pytest.raises(ShareSecurityUnreadable, match=reason) as caught:
        parse_share_info_502(share_info_stub(None, info=False, status=status))
    assert caught.value.status == status


def test_error_status_after_share_information_still_refuses():
    with pytest.raises(ShareSecurityUnreadable, match="access denied"):
        parse_share_info_502(share_info_stub(status=5))


def test_fault_pdu_is_unreadable():
    with pytest.raises(ShareSecurityUnreadable, match="fault 0x00000005") as caught:
        call(SAMBA_BIND_ACK, fault(5))
    assert caught.value.status == 5
    assert "operation out of range" in refusal(lambda: call(SAMBA_BIND_ACK, fault(0x1C010002)))


def test_bind_nak_is_unreadable():
    nak = pdu(13, struct.pack("<H", 4) + b"\0\0", call_id=1)
    assert "bind_nak: protocol version not supported" in refusal(lambda: call(nak))
    assert "bind_nak" in refusal(lambda: call(pdu(13, b"", call_id=1)))


def test_bind_fault_is_unreadable():
    assert "refused the srvsvc bind" in refusal(lambda: call(fault(0x1C010003, call_id=1)))


def test_rejected_presentation_context_is_unreadable():
    rejected = bytearray(SAMBA_BIND_ACK)
    rejected[44:46] = struct.pack("<H", 2)  # provider rejection
    assert "rejected the srvsvc presentation context" in refusal(lambda: call(bytes(rejected)))


# -- hostile answers -------------------------------------------------------------------------------


def test_huge_descriptor_length_is_unreadable():
    huge = share_info_stub(size=0xFFFFFFFF, count=0xFFFFFFFF)
    assert "truncated" in refusal(lambda: parse_share_info_502(huge)) or "more than" in refusal(
        lambda: parse_share_info_502(huge)
    )
    big = b"\x01\x00\x04\x80" + b"\0" * (MAX_DESCRIPTOR + 1 - 4)
    assert f"more than {MAX_DESCRIPTOR}" in refusal(lambda: parse_share_info_502(share_info_stub(big)))


def test_descriptor_count_disagreeing_with_its_size_is_unreadable():
    assert "says" in refusal(lambda: parse_share_info_502(share_info_stub(size=12)))


def test_descriptor_not_self_relative_is_unreadable():
    assert "self-relative" in refusal(lambda: parse_share_info_502(share_info_stub(b"\x02" + EVERYONE_FULL[1:])))
    outside = bytearray(EVERYONE_FULL)
    outside[16:20] = struct.pack("<I", 4000)
    assert "outside" in refusal(lambda: parse_share_info_502(share_info_stub(bytes(outside))))
    assert "shorter than its header" in refusal(lambda: parse_share_info_502(share_info_stub(b"\x01\x00\x04\x80")))


def test_huge_string_lengths_are_unreadable():
    stub = share_info_stub()
    hostile = stub.replace(ndr_string("docs"), ndr_string("docs", max_count=0x7FFFFFFF, actual=0x7FFFFFFF), 1)
    assert "impossible counts" in refusal(lambda: parse_share_info_502(hostile))
    bigger_than_max = stub.replace(ndr_string("docs"), ndr_string("docs", max_count=2, actual=5), 1)
    assert "impossible counts" in refusal(lambda: parse_share_info_502(bigger_than_max))


def test_wrong_level_is_unreadable():
    assert "level 2, not 502" in refusal(lambda: parse_share_info_502(share_info_stub(level=2)))


def test_success_without_information_is_unreadable():
    assert "without share information" in refusal(lambda: parse_share_info_502(share_info_stub(info=False)))


def test_data_after_the_status_is_unreadable():
    assert "after its status" in refusal(lambda: parse_share_info_502(share_info_stub() + b"\x01\0\0\0"))


@pytest.mark.parametrize("cut", [0, 3, 8, 40, 60, 100, len(share_info_stub()) - 1])
def test_truncated_stub_is_unreadable(cut):
    assert "truncated" in refusal(lambda: parse_share_info_502(share_info_stub()[:cut]))


@pytest.mark.parametrize(
    ("answers", "reason"),
    [
        ((), "pipe closed"),
        ((SAMBA_BIND_ACK[:10],), "pipe closed"),
        ((SAMBA_BIND_ACK, SAMBA_RESPONSE[:100]), "pipe closed"),
        ((pdu(12, b"", call_id=1, frag_length=4),), "impossible length"),
        ((pdu(12, SAMBA_BIND_ACK[16:30], call_id=1),), "bind_ack truncated"),
        ((b"\x04" + SAMBA_BIND_ACK[1:],), "not a DCE/RPC 5.x PDU"),
        ((SAMBA_BIND_ACK[:4] + b"\x00" + SAMBA_BIND_ACK[5:],), "big-endian"),
        ((pdu(12, SAMBA_BIND_ACK[16:], call_id=1, auth_length=8),), "authentication data"),
        ((pdu(12, SAMBA_BIND_ACK[16:], call_id=9),), "bind_ack for call 9"),
        ((SAMBA_RESPONSE,), "where a bind_ack was expected"),
        ((SAMBA_BIND_ACK, SAMBA_BIND_ACK), "where a response was expected"),
        ((SAMBA_BIND_ACK, response(share_info_stub(), call_id=5)), "response for call 5"),
        ((SAMBA_BIND_ACK, pdu(2, b"\0\0")), "response truncated"),
    ],
)
def test_malformed_pdus_are_unreadable(answers, reason):
    assert reason in refusal(lambda: call(*answers))


def test_endless_fragments_are_bounded():
    endless = response(b"\0" * 1024, flags=0)
    pipe_answers = [SAMBA_BIND_ACK] + [endless] * 400
    assert "larger than" in refusal(lambda: call(*pipe_answers)) or "more than" in refusal(lambda: call(*pipe_answers))


def test_endless_tiny_fragments_are_bounded():
    assert "more than 256 fragments" in refusal(lambda: call(SAMBA_BIND_ACK, *[response(b"", flags=0)] * 300))


def test_endless_trickle_is_bounded():
    assert "too many pieces" in refusal(lambda: call(SAMBA_BIND_ACK[:1], *[b"\x05"] * 5000))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_stub_is_a_descriptor_or_unreadable(stub):
    try:
        parse_share_info_502(stub)
    except ShareSecurityUnreadable:
        pass


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(SAMBA_RESPONSE) - 1), st.integers(0, 255))
def test_any_corrupted_byte_is_a_descriptor_or_unreadable(position, value):
    corrupted = bytearray(SAMBA_RESPONSE)
    corrupted[position] = value
    try:
        call(SAMBA_BIND_ACK, bytes(corrupted))
    except ShareSecurityUnreadable:
        pass


# -- share_security_descriptor over a fake smbprotocol (no socket) ------------------------------


class FakeOpen:
    """smbprotocol's Open on the ``srvsvc`` pipe, answering with the given PDUs."""

    answers: list[bytes] = []
    closed = 0

    def __init__(self, tree: object, name: str) -> None:
        assert name == "srvsvc"

    def create(self, *args: object) -> None:
        pass

    def write(self, data: bytes, offset: int) -> int:
        return len(data)

    def read(self, offset: int, length: int) -> bytes:
        return FakeOpen.answers.pop(0) if FakeOpen.answers else b""

    def close(self) -> None:
        FakeOpen.closed += 1


@pytest.fixture
def fake_smb(monkeypatch):
    import smbclient._pool
    import smbprotocol.open

    class Tree:
        class session:
            class connection:
                max_read_size = 8 * 1024 * 1024

    trees = []

    def get_smb_tree(path, **kwargs):
        trees.append((path, kwargs))
        return Tree, ""

    monkeypatch.setattr(smbclient._pool, "get_smb_tree", get_smb_tree)
    monkeypatch.setattr(smbprotocol.open, "Open", FakeOpen)
    FakeOpen.closed = 0
    return trees


def test_share_security_descriptor_over_smb(fake_smb):
    FakeOpen.answers = [SAMBA_BIND_ACK, SAMBA_RESPONSE]
    descriptor = share_security_descriptor("dc1", "docs", username="SC\\svc", password="Secret-1x!", connection_cache={})
    assert descriptor == EVERYONE_FULL
    assert fake_smb[0][0] == r"\\dc1\IPC$" and fake_smb[0][1]["password"] == "Secret-1x!"
    assert FakeOpen.closed == 1


def test_refusal_names_the_share_and_server_never_the_password(fake_smb):
    FakeOpen.answers = [SAMBA_BIND_ACK, response(share_info_stub(None, info=False, status=5))]
    with pytest.raises(ShareSecurityUnreadable) as caught:
        share_security_descriptor("dc1", "docs", username="SC\\svc", password="Secret-1x!", connection_cache={})
    assert str(caught.value) == "share 'docs' on dc1: the server answered NetrShareGetInfo: access denied (ERROR_ACCESS_DENIED)"
    assert caught.value.status == 5
    assert FakeOpen.closed == 1
