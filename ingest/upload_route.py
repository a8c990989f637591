"""The browser's upload route: `PUT /api/upload/<ticket>` streams a request body into an upload folder on disk as it
arrives (ingest.upload.Spooling), so an uploaded file never sits whole in the server's memory (Streamlit's own
file uploader holds every upload in memory until its session lets it go).

A ticket is issued to one upload box of one browser session once that session may write (the page checked the
upload token); the route takes bodies for live tickets only, and the box's session takes what arrived by the
upload id the route answered with. Routes and pages run in one server process, so both meet in this module.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import unquote

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ingest.streams import too_large
from ingest.upload import CHUNK_BYTES, Spooled, Spooling, most_raw_bytes
from perfledger.errors import FileTooLarge, PerfledgerError, SpoolFull
from perfledger.settings import foreign_page, load_settings

PATH = "/api/upload/"
NAME_HEADER = "X-Upload-Name"  # the file's name, percent-encoded (a header carries ASCII only)
EXPIRED = "This upload box has expired (the page was reloaded or the server restarted): choose the file again."
IDLE_S = 60.0  # an upload that sends nothing for this long is dropped and its folder removed


@dataclass
class Ticket:
    owner: str  # the browser session's id
    limit: int  # bytes, as PERFLEDGER_MAX_UPLOAD_MB counts them
    uploads: dict[str, Spooled] = field(default_factory=dict)


_tickets: dict[str, Ticket] = {}
_lock = threading.Lock()
_mounted = [False]


def routes() -> list[Route]:
    """The routes the server mounts beside Streamlit's (app.py); from then on, upload boxes use them."""
    _mounted[0] = True
    return [route()]


def route() -> Route:
    return Route(PATH + "{ticket}", receive, methods=["PUT"])


def mounted() -> bool:
    """Whether this process serves the route (a server started by `streamlit run app.py`; not a page test)."""
    return _mounted[0]


def issue(owner: str, limit: int) -> str:
    ticket = secrets.token_urlsafe(24)
    with _lock:
        _tickets[ticket] = Ticket(owner, limit)
    return ticket


def live(ticket: str) -> bool:
    with _lock:
        return ticket in _tickets


def take(ticket: str, upload_id: str) -> Spooled | None:
    """The file that arrived under `ticket` as `upload_id` (now the caller's to close), or None."""
    with _lock:
        held = _tickets.get(ticket)
        return None if held is None else held.uploads.pop(upload_id, None)


def revoke(alive: Callable[[str], bool]) -> None:
    """Forget the tickets of sessions that ended, removing what arrived under them and was never taken."""
    with _lock:
        gone = [t for t, held in _tickets.items() if not alive(held.owner)]
        dropped = [_tickets.pop(t) for t in gone]
    for held in dropped:
        for spooled in held.uploads.values():
            spooled.close()


def _arrived(ticket: str, spooled: Spooled) -> str | None:
    """Hold `spooled` under `ticket` (replacing what its box sent before and nobody took); None once revoked."""
    upload_id = secrets.token_hex(8)
    with _lock:
        held = _tickets.get(ticket)
        if held is not None:
            replaced, held.uploads = list(held.uploads.values()), {upload_id: spooled}
    if held is None:
        spooled.close()
        return None
    for old in replaced:
        old.close()
    return upload_id


def _refused(status: int, sentence: str) -> JSONResponse:
    return JSONResponse({"error": sentence}, status_code=status)


def _foreign(request: Request) -> str | None:
    """Why a request must not write, sent by a page opened by a name other than this machine's own (DNS rebinding,
    a proxy) to a server with no upload token; None when it may. Its ticket already says that its session may."""
    try:
        settings = load_settings()
    except PerfledgerError as exc:
        return str(exc)
    if settings.upload_token:
        return None
    return foreign_page(request.headers.get("host"), request.headers.get("origin"))


async def receive(request: Request) -> JSONResponse:
    """Write the body to disk in 1 MiB writes (off the event loop), then answer with the upload's id."""
    ticket = request.path_params["ticket"]
    with _lock:
        held = _tickets.get(ticket)
    if held is None:
        return _refused(403, EXPIRED)
    if (foreign := _foreign(request)) is not None:
        return _refused(403, foreign)
    name = unquote(request.headers.get(NAME_HEADER, "")).strip() or "upload"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most_raw_bytes(held.limit):
        return _refused(413, str(FileTooLarge(name, None, too_large(held.limit))))
    try:
        writer = await run_in_threadpool(Spooling, name, held.limit, held.owner)
    except PerfledgerError as exc:
        return _refused(507, str(exc))
    try:
        spooled = await _written(request, writer)
    except ClientDisconnect:
        return _refused(400, f"{name}: the upload was interrupted; nothing was kept.")
    except TimeoutError:
        return _refused(408, f"{name}: the upload sent nothing for {IDLE_S:g} s and was dropped; nothing was kept.")
    except SpoolFull as exc:
        return _refused(507, str(exc))
    except PerfledgerError as exc:
        return _refused(413, str(exc))
    upload_id = _arrived(ticket, spooled)
    if upload_id is None:
        return _refused(403, EXPIRED)
    return JSONResponse({"upload": upload_id, "name": name, "size": spooled.size})


async def _written(request: Request, writer: Spooling) -> Spooled:
    """The body on disk; TimeoutError (the folder removed) once no byte has come for IDLE_S: a connection that
    stops sending would otherwise hold its folder, and a slot of the server, for good."""
    buffer = bytearray()
    chunks = request.stream()
    try:
        while True:
            try:
                chunk = await asyncio.wait_for(anext(chunks), IDLE_S)
            except StopAsyncIteration:
                break
            buffer += chunk
            if len(buffer) >= CHUNK_BYTES:
                await run_in_threadpool(writer.write, bytes(buffer))
                buffer.clear()
        if buffer:
            await run_in_threadpool(writer.write, bytes(buffer))
        return await run_in_threadpool(writer.finish)
    except BaseException:
        writer.abort()
        raise
