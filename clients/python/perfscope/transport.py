"""Transport: one batch of events as one POST /api/v1/events, over a kept-alive connection.

Used by the sender thread only (sender.py); not thread-safe. What may pass later (the server
unreachable, 408, 429, 5xx) raises Retry, with the server's Retry-After where it gave one;
any other answer is returned with its status for the sender to judge.
"""

from __future__ import annotations

import gzip
import http.client
import json
import ssl
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from .events import Event

__all__ = ["Retry", "Transport"]


class Retry(Exception):
    """A batch that may pass later; ``after``: the seconds the server asked to wait, if any."""

    def __init__(self, message: str, after: Optional[float] = None) -> None:
        super().__init__(message)
        self.after = after


class Transport:
    """POSTs batches to the perfscope server at ``url`` (its /api/v1/events)."""

    def __init__(self, url: str, token: Optional[str], *, timeout: float, gzip_over: int,
                 ssl_context: Optional[ssl.SSLContext]) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"url: expected http(s)://host[:port], got {url!r}")
        self.host = parts.hostname
        self._scheme = parts.scheme
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._path = parts.path.rstrip("/") + "/api/v1/events"
        self._ssl = ssl_context
        self._headers: Dict[str, str] = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        self._gzip_over = gzip_over
        self._connection: Optional[http.client.HTTPConnection] = None

    def close(self) -> None:
        """Closes the connection (a forked child closes its copy: the parent's stays open)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def post(self, batch: List[Event]) -> Tuple[int, Any]:
        """The server's status and its answer (parsed JSON, or {}); raises Retry."""
        body = json.dumps({"events": batch}, separators=(",", ":"), allow_nan=False).encode()
        headers = dict(self._headers)
        if len(body) > self._gzip_over:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        for attempt in (0, 1):  # a kept-alive connection the server closed: one fresh try
            try:
                if self._connection is None:
                    if self._scheme == "https":
                        self._connection = http.client.HTTPSConnection(
                            self.host, self._port, timeout=self._timeout, context=self._ssl)
                    else:
                        self._connection = http.client.HTTPConnection(self.host, self._port, timeout=self._timeout)
                self._connection.request("POST", self._path, body=body, headers=headers)
                response = self._connection.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
            except (OSError, http.client.HTTPException) as e:
                self.close()
                if attempt == 0 and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError,
                                                   ConnectionResetError)):
                    continue
                raise Retry(f"server unreachable: {e}") from None
            break
        status = response.status
        try:
            answer = json.loads(data) if data else {}
        except ValueError:
            answer = {}
        if status in (408, 429) or status >= 500:
            after = response.getheader("Retry-After")
            message = ((answer.get("error") or {}).get("message") if isinstance(answer, dict) else None) or ""
            raise Retry(f"server answered {status} {message}".strip(),
                        float(after) if after and after.isdigit() else None)
        return status, answer
