"""Fetching over HTTP for a refresh: the :class:`Fetch` interface and its default, :class:`HttpFetcher`.

Politeness and safety limits live here: a connect and a read timeout, one overall deadline per
URL, size caps enforced while the body streams, and retries with exponential backoff that
honour ``Retry-After`` (RFC 9110 section 10.2.3, https://www.rfc-editor.org/rfc/rfc9110#name-retry-after).
``requests`` is imported only when the first request is made, so nothing but ``cudadoctor update``
ever loads it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from cudadoctor import __version__
from cudadoctor.pipconfig import redacted
from cudadoctor.update.errors import FetchError

__all__ = [
    "ACCEPT_INDEX",
    "ACCEPT_METADATA",
    "MAX_INDEX_BYTES",
    "MAX_METADATA_BYTES",
    "Fetch",
    "HttpFetcher",
    "size_text",
]


#: JSON (PEP 691) first; HTML (PEP 503) from mirrors that serve only that.
ACCEPT_INDEX = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
ACCEPT_METADATA = "*/*"
#: Response caps, enforced while streaming: torch's whole JSON page is ~0.4 MB, a METADATA file ~30 KB.
MAX_INDEX_BYTES = 32 << 20
MAX_METADATA_BYTES = 1 << 20
#: Wheels tried per release when a ``.metadata`` file answers 404 (seen on pypi.org for some wheels).


class Fetch(Protocol):
    """An HTTP GET: the body, or :class:`FetchError` (``status=404`` for a missing page). Called from worker threads."""

    def __call__(self, url: str, *, accept: str) -> bytes: ...


class HttpFetcher:
    """The default :class:`Fetch`: requests, with timeouts, a size cap while streaming, and retries.

    * a connect and a read timeout per socket operation, and one overall ``deadline`` per URL that
      covers connecting, the headers, the body and the retries (a server that trickles bytes cannot
      hold a refresh forever);
    * bodies are capped while they stream (index pages ``index_limit``, anything else
      ``metadata_limit``); a ``Content-Length`` above the cap fails before reading;
    * connection errors, timeouts, cut-off bodies, 5xx and 429 are retried ``retries`` times with
      exponential backoff (``Retry-After`` honoured up to ``max_backoff``); 404 and other 4xx are not;
    * every message masks credentials; TLS failures say so and are not retried.

    Use as a context manager (or call :meth:`close`) to close its connections.
    """

    def __init__(
        self,
        *,
        timeout: tuple[float, float] = (10.0, 60.0),
        deadline: float = 300.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        index_limit: int = MAX_INDEX_BYTES,
        metadata_limit: int = MAX_METADATA_BYTES,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.index_limit = index_limit
        self.metadata_limit = metadata_limit
        self.sleep = sleep
        self._local = threading.local()
        self._sessions: list[Any] = []
        self._lock = threading.Lock()

    def __enter__(self) -> HttpFetcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()

    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests  # imported here: only `update` uses the network

            session = requests.Session()
            session.headers["User-Agent"] = f"cudadoctor/{__version__} (+https://pypi.org/project/cudadoctor/)"
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def __call__(self, url: str, *, accept: str) -> bytes:
        limit = self.index_limit if accept == ACCEPT_INDEX else self.metadata_limit
        shown = redacted(url)
        deadline_at = time.monotonic() + self.deadline
        attempts = self.retries + 1
        reason = "no attempt made"
        tried = 0
        for attempt in range(attempts):
            wait_s = min(self.backoff * (2**attempt), self.max_backoff)
            tried += 1
            outcome = self._attempt_within(url, accept, limit, shown, deadline_at)
            if isinstance(outcome, bytes):
                return outcome
            reason, retry_after = outcome
            if retry_after is not None:
                wait_s = min(retry_after, self.max_backoff)
            if attempt + 1 < attempts:
                if time.monotonic() + wait_s >= deadline_at:
                    break  # no time left for another attempt
                self.sleep(wait_s)
        tries = f" (after {tried} attempts)" if tried > 1 else ""
        raise FetchError(f"cannot fetch {shown}: {reason}{tries}", url=url)

    def _attempt_within(
        self, url: str, accept: str, limit: int, shown: str, deadline_at: float
    ) -> bytes | tuple[str, float | None]:
        """One attempt, given up at ``deadline_at`` whatever it is doing (connecting, waiting for
        headers, reading a body that trickles in): it runs in a daemon thread, and the caller stops
        waiting at the deadline. The connect and read timeouts bound each socket operation only, so
        a server sending 20 bytes a second held a refresh forever before."""
        session = self._session()
        box: queue.Queue[bytes | tuple[str, float | None] | BaseException] = queue.Queue(maxsize=1)
        gave_up = threading.Event()

        def work() -> None:
            try:
                box.put(self._attempt(session, url, accept, limit, shown, gave_up))
            except BaseException as exc:  # handed to the caller, which raises it
                box.put(exc)

        threading.Thread(target=work, name="cudadoctor-fetch", daemon=True).start()
        try:
            result = box.get(timeout=max(deadline_at - time.monotonic(), 0.0))
        except queue.Empty:
            gave_up.set()
            raise FetchError(f"cannot fetch {shown}: no complete answer within {self.deadline:g} s", url=url) from None
        if isinstance(result, BaseException):
            raise result
        return result

    def _attempt(
        self, session: Any, url: str, accept: str, limit: int, shown: str, gave_up: threading.Event
    ) -> bytes | tuple[str, float | None]:
        """The body, or (why this attempt failed, Retry-After seconds) for a failure worth retrying."""
        import requests

        try:
            with session.get(
                url, headers={"Accept": accept}, timeout=self.timeout, stream=True, allow_redirects=True
            ) as response:
                status = response.status_code
                if status == 200:
                    return self._read(response, limit, shown, gave_up)
                if status == 429 or 500 <= status < 600:
                    retry_after = response.headers.get("Retry-After", "")
                    wait = float(retry_after) if retry_after.isdigit() and len(retry_after) < 10 else None
                    return f"HTTP {status}", wait
                hint = {401: " (the index wants credentials)", 403: " (access denied)"}.get(status, "")
                raise FetchError(f"cannot fetch {shown}: HTTP {status}{hint}", url=url, status=status)
        except requests.exceptions.SSLError:
            raise FetchError(
                f"cannot fetch {shown}: TLS certificate check failed (behind a proxy? set REQUESTS_CA_BUNDLE)",
                url=url,
            ) from None
        except requests.exceptions.Timeout:
            return "timed out", None
        except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
            return _connection_reason(exc), None
        except requests.exceptions.ContentDecodingError:
            return "the body could not be decoded", None
        except requests.exceptions.RequestException as exc:  # bad URL, too many redirects …
            raise FetchError(f"cannot fetch {shown}: {type(exc).__name__}", url=url) from None

    def _read(self, response: Any, limit: int, shown: str, gave_up: threading.Event) -> bytes:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and len(declared) < 20 and int(declared) > limit:
            raise FetchError(
                f"cannot fetch {shown}: {declared} bytes, more than the {size_text(limit)} allowed", url=shown
            )
        chunks, total = [], 0
        # Small chunks: once the caller has given up at its deadline, stop soon instead of reading on.
        for chunk in response.iter_content(chunk_size=1 << 12):
            total += len(chunk)
            if total > limit:
                raise FetchError(f"cannot fetch {shown}: larger than the {size_text(limit)} allowed", url=shown)
            if gave_up.is_set():
                raise FetchError(f"cannot fetch {shown}: given up at the deadline", url=shown)
            chunks.append(chunk)
        return b"".join(chunks)


def size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB" if n >= 1 << 10 else f"{n} bytes"


def _connection_reason(exc: BaseException) -> str:
    """A short cause without the exception text (which repeats the URL, credentials included)."""
    text = repr(exc)
    for needle, reason in (
        ("NameResolution", "host not found"),
        ("Name or service not known", "host not found"),
        ("Connection refused", "connection refused"),
        ("IncompleteRead", "the body was cut off"),
        ("ProtocolError", "the connection broke"),
        ("Read timed out", "timed out"),
        ("ConnectTimeout", "timed out"),
        ("ProxyError", "the proxy refused the connection"),
    ):
        if needle in text:
            return reason
    return "connection failed"
