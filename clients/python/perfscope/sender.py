"""Sender: the queue between the caller's threads and one background thread that delivers.

The caller's side (put, add_timer) is a few deque operations: no I/O, no lock on the common
path, never an exception (but in strict mode, for an invalid event). The thread validates and
tags events, batches them (Transport.post), retries what may pass later with exponential
backoff, drops what never will, and counts everything in Stats. Thread-safety: every public
method may be called from any thread; reset_after_fork in a forked child only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, List, Mapping, Optional, Tuple

from .events import Event, EventError, validate
from .transport import Retry, Transport

__all__ = ["Sender", "Stats"]

_log = logging.getLogger("perfscope")


@dataclass(frozen=True)
class Stats:
    """What became of the events given to a client so far."""

    queued: int  # waiting in the queue now (kernel timers not yet resolved included)
    sent: int  # acknowledged by the server (stored)
    dropped: int  # the queue was full, or the client closed before the server came back
    invalid: int  # refused by the server's rules (locally or by the server), dropped
    rejected: int  # refused by the server as a whole batch (auth, cardinality, size), dropped
    retries: int  # requests sent again after a connection error or a 5xx
    batches: int  # requests the server acknowledged
    folded: int  # events whose names the server folded into [other] at a cardinality cap
    last_error: Optional[str] = field(default=None)


class Sender:
    """Queues events and delivers them through ``transport`` on a thread of its own."""

    def __init__(self, transport: Transport, *, tags: Mapping[str, str], max_queue: int, batch_size: int,
                 flush_interval: float, max_retry_delay: float, join_timeout: float, strict: bool) -> None:
        self._transport = transport
        self._tags: Dict[str, str] = dict(tags)
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._flush_interval = flush_interval
        self._max_retry_delay = max_retry_delay
        self._join_timeout = join_timeout
        self._strict = strict
        self.closed = False
        self.reset_after_fork()

    def reset_after_fork(self) -> None:
        """Everything here is per process: the parent's queue and thread do not exist in a
        child, and its copy of the parent's connection is closed (the parent's stays open)."""
        self._transport.close()
        self._queue: Deque[Tuple[Event, Optional[str]]] = deque()
        self._timers: Deque[Tuple[Any, Any, Event, Optional[str]]] = deque()
        self._lock = threading.Lock()  # counters and the in-flight state, never held for I/O
        self._wake = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._sent = self._dropped = self._invalid = self._rejected = 0
        self._retries = self._batches = self._folded = 0
        self._last_error: Optional[str] = None
        self._stopping = False
        self._thread: Optional[threading.Thread] = None
        self._thread_lock = threading.Lock()

    # -- the caller's side ------------------------------------------------------------------

    def put(self, event: Event, run: Optional[str]) -> None:
        """Queues one event (tagged run=``run`` when it is sent), or counts it dropped."""
        if self._strict:
            validate(event)
        queue = self._queue
        if len(queue) >= self._max_queue or self.closed:
            with self._lock:
                self._dropped += 1
            return
        queue.append((event, run))
        if self._thread is None:
            self._start()
        if len(queue) == self._batch_size:
            self._wake.set()

    def add_timer(self, start: Any, end: Any, event: Event, run: Optional[str]) -> None:
        """A kernel event whose duration is the time between two CUDA events, read once ``end``
        has completed."""
        if len(self._timers) >= self._max_queue or self.closed:
            with self._lock:
                self._dropped += 1
            return
        self._timers.append((start, end, event, run))
        if self._thread is None:
            self._start()

    def stats(self) -> Stats:
        with self._lock:
            return Stats(queued=len(self._queue) + len(self._timers) + self._in_flight, sent=self._sent,
                         dropped=self._dropped, invalid=self._invalid, rejected=self._rejected,
                         retries=self._retries, batches=self._batches, folded=self._folded,
                         last_error=self._last_error)

    def flush(self, timeout: Optional[float]) -> bool:
        """Waits until every event given so far is sent or dropped (kernel timers whose GPU
        work is still running excepted); False if ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._idle:
            while self._queue or self._in_flight:
                if self._thread is None:
                    self._start()  # takes only _thread_lock, never _lock
                self._wake.set()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._idle.wait(0.05 if left is None else min(left, 0.05))
        return True

    def close(self, timeout: Optional[float]) -> None:
        """Flushes for at most ``timeout`` seconds and stops the thread; what could not be sent
        by then is counted dropped. Later events are dropped."""
        self.flush(timeout)
        self.closed = True
        with self._lock:
            self._stopping = True
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self._join_timeout)
        with self._lock:
            left = len(self._queue) + len(self._timers)
            self._queue.clear()
            self._timers.clear()
            self._dropped += left

    # -- the thread -------------------------------------------------------------------------

    def _start(self) -> None:
        with self._thread_lock:
            if self._thread is None and not self.closed:
                self._thread = threading.Thread(target=self._run, name="perfscope-client", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._flush_interval)
            self._wake.clear()
            self._resolve_timers()
            while True:
                batch = self._take()
                if not batch:
                    break
                self._deliver(batch)
            with self._lock:
                self._idle.notify_all()
                if self._stopping:
                    break
        self._transport.close()

    def _error(self, message: str) -> None:
        with self._lock:
            self._note_error(message)

    def _note_error(self, message: str) -> None:
        """Records the newest error (the lock held) and logs it: WARNING when it differs from
        the one before (a new condition), DEBUG when it repeats."""
        level = logging.DEBUG if message == self._last_error else logging.WARNING
        self._last_error = message
        _log.log(level, "perfscope client for %s: %s", self._transport.host, message)

    def _take(self) -> List[Event]:
        """Up to batch_size events off the queue, validated and tagged; counted in flight."""
        batch: List[Event] = []
        invalid = 0
        error = None
        queue = self._queue
        with self._lock:
            # Counted in flight before they leave the queue, so flush() never sees neither.
            n = min(len(queue), self._batch_size)
            self._in_flight += n
        for _ in range(n):
            event, run = queue.popleft()
            tags = self._tags
            # Samples carry labels (their series), runs name themselves: neither takes tags here.
            if (tags or run) and event.get("type") not in ("sample", "run"):
                merged = dict(tags)
                if run:
                    merged["run"] = run
                merged.update(event.get("tags") or {})
                event["tags"] = merged
            try:
                validate(event)
            except EventError as e:
                invalid += 1
                error = f"invalid event dropped: {e}"
                continue
            batch.append(event)
        with self._lock:
            self._in_flight -= invalid
            self._invalid += invalid
            if error:
                self._note_error(error)
        return batch

    def _finish(self, n: int, **counts: int) -> None:
        with self._lock:
            self._in_flight -= n
            for name, value in counts.items():
                setattr(self, "_" + name, getattr(self, "_" + name) + value)

    def _deliver(self, batch: List[Event]) -> None:
        """Sends one batch until it is stored or refused for good (or the client stops)."""
        delay = 0.1
        while batch:
            try:
                status, answer = self._transport.post(batch)
            except Retry as r:
                with self._lock:
                    self._note_error(str(r))
                    stopping = self._stopping
                if stopping:
                    self._finish(len(batch), dropped=len(batch))
                    return
                # Wait, but come back at once when close() gives up waiting.
                self._sleep(r.after if r.after is not None else delay)
                delay = min(delay * 2, self._max_retry_delay)
                with self._lock:
                    self._retries += 1
                continue
            if status == 200:
                self._finish(len(batch), sent=len(batch), batches=1, folded=int(answer.get("folded", 0)))
                return
            error = answer.get("error") if isinstance(answer, dict) else None
            message = (error or {}).get("message") or f"HTTP {status}"
            index = (error or {}).get("index")
            if status == 400 and isinstance(index, int) and 0 <= index < len(batch):
                # One event the server refused: drop it alone and send the rest again.
                batch.pop(index)
                self._finish(1, invalid=1)
                self._error(f"event refused by the server: {message}")
                continue
            if status == 413 and len(batch) > 1:
                half = len(batch) // 2
                self._deliver(batch[:half])
                batch = batch[half:]
                continue
            self._finish(len(batch), rejected=len(batch))
            self._error(f"batch of {len(batch)} refused by the server ({status}): {message}")
            return

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            with self._lock:
                if self._stopping or left <= 0:
                    return
            time.sleep(min(left, 0.05))

    def _resolve_timers(self) -> None:
        """Kernel timers whose end event completed become kernel events."""
        timers = self._timers
        for _ in range(len(timers)):
            start, end, event, run = timers.popleft()
            try:
                done = end.query()
            except Exception as e:  # a CUDA error: the timing is lost, the rest goes on
                self._finish(0, invalid=1)
                self._error(f"kernel timer {event.get('name')!r}: {e}")
                continue
            if not done:
                timers.append((start, end, event, run))
                continue
            event["duration_ms"] = float(start.elapsed_time(end))
            self._queue.append((event, run))
