"""The upload route on a real server (uvicorn, as `streamlit run app.py` serves it): a body written to disk as it
arrives, for live tickets only, refused past the limit as `python -m ingest` refuses it, and on a full disk said as
such; nothing refused or abandoned is left on disk."""

from __future__ import annotations

import gzip
import hashlib
import http.client
import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import uvicorn
from starlette.applications import Starlette

from ingest import upload_route
from ingest.upload import FOLDER_PREFIX
from tests.browser.conftest import free_port
from tests.faults import volume
from tests.ingest.test_upload import MEGATRON

MIB = 1 << 20


@pytest.fixture(scope="module")
def base() -> Iterator[tuple[str, int]]:
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=[upload_route.route()]), host="127.0.0.1",
                                           port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield "127.0.0.1", server.config.port
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the route's upload folders go
    return tmp_path


def put(where: tuple[str, int], ticket: str, name: str, body: bytes | Iterator[bytes],
        length: int | None = None, **sent: str) -> tuple[int, dict[str, Any]]:
    """PUT `body` as a browser's upload box sends it; chunked when it is an iterator and no length is given; `sent`:
    further headers (Host, Origin)."""
    conn = http.client.HTTPConnection(*where, timeout=60)
    headers = {upload_route.NAME_HEADER: quote(name), **sent}
    if length is not None:
        headers["Content-Length"] = str(length)
    try:
        conn.request("PUT", upload_route.PATH + ticket, body=body, headers=headers,
                     encode_chunked=length is None and not isinstance(body, bytes))
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read() or b"{}")
    except (BrokenPipeError, ConnectionResetError):  # refused before the whole body was sent
        return 0, {}
    finally:
        conn.close()


def folders(where: Path) -> list[Path]:
    return sorted(where.glob(f"{FOLDER_PREFIX}*"))


def test_a_file_put_under_a_live_ticket_arrives_on_disk_whole_and_is_taken_once(base: tuple[str, int],
                                                                                 temp: Path) -> None:
    raw = MEGATRON.read_bytes() * 20  # several 1 MiB writes
    ticket = upload_route.issue("session-a", 64 * MIB)
    status, answer = put(base, ticket, "nächte log.out", iter([raw[i:i + 65536] for i in range(0, len(raw), 65536)]))
    assert status == 200 and answer["name"] == "nächte log.out" and answer["size"] == len(raw)
    spooled = upload_route.take(ticket, answer["upload"])
    assert spooled is not None and spooled.path.read_bytes() == raw
    assert spooled.content_sha256 == hashlib.sha256(raw).hexdigest() and spooled.folder.parent == temp
    assert "session-a" in spooled.folder.name  # swept by its session's end
    assert upload_route.take(ticket, answer["upload"]) is None
    spooled.close()


def test_an_unknown_ticket_is_refused_with_a_sentence_and_nothing_is_written(base: tuple[str, int],
                                                                             temp: Path) -> None:
    status, answer = put(base, "no-such-ticket", "x.log", b"iteration 1\n" * 1000)
    assert status == 403 and answer["error"] == upload_route.EXPIRED
    assert folders(temp) == []


def test_a_body_past_the_limit_is_refused_as_the_cli_refuses_it_and_its_folder_removed(base: tuple[str, int],
                                                                                        temp: Path) -> None:
    ticket = upload_route.issue("session-b", MIB)
    said = "big.log: larger than the 1 MiB limit once decompressed; nothing was stored"
    status, answer = put(base, ticket, "big.log", iter([b"#" * 65536] * 17))  # 1 MiB + 64 KiB, no length said
    assert (status, answer["error"]) == (413, said)
    status, answer = put(base, ticket, "big.log", b"#" * (MIB + 1))  # one byte over: refused once it arrives
    assert (status, answer["error"]) == (413, said)
    assert put(base, ticket, "big.log", b"#" * MIB)[0] == 200  # the limit itself passes
    assert len(folders(temp)) == 1


def test_a_declared_length_far_past_the_limit_is_refused_before_the_body_is_read(base: tuple[str, int],
                                                                                 temp: Path) -> None:
    ticket = upload_route.issue("session-c", MIB)
    status, answer = put(base, ticket, "huge.log", b"#" * (3 * MIB), length=3 * MIB)
    assert status in (0, 413) and (status == 0 or "larger than the 1 MiB limit" in answer["error"])
    assert folders(temp) == []


def test_a_gzip_whose_content_passes_the_limit_is_refused_though_its_bytes_fit(base: tuple[str, int],
                                                                               temp: Path) -> None:
    ticket = upload_route.issue("session-d", MIB)
    status, answer = put(base, ticket, "zeros.log.gz", gzip.compress(b"0" * (2 * MIB)))
    assert (status, answer["error"]) == (413, ("zeros.log.gz: larger than the 1 MiB limit once decompressed; "
                                              "nothing was stored"))
    assert folders(temp) == []


def test_a_new_file_in_the_same_box_replaces_the_one_never_taken(base: tuple[str, int], temp: Path) -> None:
    ticket = upload_route.issue("session-e", MIB)
    first = put(base, ticket, "a.log", b"a" * 1000)[1]["upload"]
    second = put(base, ticket, "b.log", b"b" * 1000)[1]["upload"]
    assert upload_route.take(ticket, first) is None and len(folders(temp)) == 1
    spooled = upload_route.take(ticket, second)
    assert spooled is not None and spooled.path.read_bytes() == b"b" * 1000


def test_a_session_gone_loses_its_ticket_and_what_arrived_under_it(base: tuple[str, int], temp: Path) -> None:
    ticket = upload_route.issue("session-gone", MIB)
    assert put(base, ticket, "a.log", b"a" * 1000)[0] == 200 and len(folders(temp)) == 1
    upload_route.revoke(lambda owner: owner != "session-gone")
    assert not upload_route.live(ticket) and folders(temp) == []
    assert put(base, ticket, "a.log", b"a" * 1000)[0] == 403


def test_an_upload_meeting_a_full_disk_says_the_disk_is_full_and_leaves_nothing(
        base: tuple[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with volume(tmp_path / "small", "2m") as small:
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        ticket = upload_route.issue("session-f", 64 * MIB)
        status, answer = put(base, ticket, "big.log", iter([b"#" * 65536] * 64))  # 4 MiB onto 2 MiB
        assert status == 507
        assert answer["error"].startswith(f"the temporary spool in {small} could not be written: the disk holding it "
                                          "is full")
        assert folders(small) == []


@pytest.mark.parametrize("sent", [{"Host": "evil.example:8621"}, {"Origin": "http://evil.example:8621"},
                                  {"Host": "127.0.0.1.nip.io:8501"}, {"Origin": "null"}],
                         ids=["rebound-host", "foreign-origin", "loopback-lookalike", "opaque-origin"])
def test_without_a_token_a_put_from_a_page_opened_by_another_name_is_refused_and_nothing_kept(
        base: tuple[str, int], temp: Path, monkeypatch: pytest.MonkeyPatch, sent: dict[str, str]) -> None:
    """DNS rebinding: a page of another site, its name pointed at 127.0.0.1, sends its own Host and Origin."""
    monkeypatch.delenv("PERFLEDGER_UPLOAD_TOKEN", raising=False)
    ticket = upload_route.issue("session-rebound", MIB)
    status, answer = put(base, ticket, "x.log", b"iteration 1\n" * 100, **sent)
    shown = next(iter(sent.values()))
    assert status == 403 and answer["error"].startswith(
        f"Writing from the browser is off for this page: it was opened as {shown} ({next(iter(sent))}), not as "
        "localhost or 127.0.0.1, and this dashboard has no upload token")
    assert folders(temp) == []


@pytest.mark.parametrize("sent", [{"Host": "localhost:8501", "Origin": "http://localhost:8501"},
                                  {"Host": "[::1]:8501", "Origin": "http://[::1]:8501"}, {}])
def test_without_a_token_a_put_from_a_page_opened_as_localhost_is_kept(base: tuple[str, int], temp: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       sent: dict[str, str]) -> None:
    monkeypatch.delenv("PERFLEDGER_UPLOAD_TOKEN", raising=False)
    ticket = upload_route.issue("session-local", MIB)
    assert put(base, ticket, "x.log", b"iteration 1\n", **sent)[0] == 200 and len(folders(temp)) == 1


def test_with_a_token_a_put_under_a_ticket_is_kept_whatever_name_the_page_was_opened_by(
        base: tuple[str, int], temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ticket is issued to a session that gave the token: a team server behind a proxy has a name of its own."""
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "s3cret-token")
    ticket = upload_route.issue("session-proxied", MIB)
    sent = {"Host": "ledger.team.example", "Origin": "https://ledger.team.example"}
    assert put(base, ticket, "x.log", b"iteration 1\n", **sent)[0] == 200 and len(folders(temp)) == 1


def test_an_upload_that_stops_sending_is_dropped_after_its_idle_time_and_its_folder_removed(
        base: tuple[str, int], temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upload_route, "IDLE_S", 1.0)
    ticket = upload_route.issue("session-idle", MIB)
    with socket.create_connection(base, timeout=15) as conn:
        conn.sendall(f"PUT {upload_route.PATH}{ticket} HTTP/1.1\r\nHost: 127.0.0.1\r\n{upload_route.NAME_HEADER}: "
                     "stalled.log\r\nContent-Length: 100000\r\n\r\n".encode() + b"iteration 1\n" * 100)
        deadline = time.monotonic() + 10
        while not folders(temp) and time.monotonic() < deadline:  # the first bytes arrived, then nothing more
            time.sleep(0.05)
        assert len(folders(temp)) == 1
        answer = b""  # the server's answer, before the client ever finishes, until it closes the connection
        while chunk := conn.recv(65536):
            answer += chunk
    answer = answer.decode()
    assert answer.startswith("HTTP/1.1 408")
    assert '"stalled.log: the upload sent nothing for 1 s and was dropped; nothing was kept."' in answer
    assert folders(temp) == []
