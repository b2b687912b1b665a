"""Client: events from Python code to a perfscope server, off the caller's thread.

This file holds what callers use: the event helpers and the timers (Request, KernelTimer, Run).
The caller's side of every method is a few dict and deque operations: no I/O, no lock on the
common path, no exception for a slow or absent server. Delivery is the Sender's (sender.py):
one background thread per client validates events, batches them into POST /api/v1/events
through a Transport (transport.py: gzip past a size), retries what may pass later (connection
errors, 5xx, 503 with Retry-After) with exponential backoff, and drops what never will (an
event the server's rules refuse, named in ``stats().last_error``). The queue is bounded: past
``max_queue`` waiting events new ones are dropped and counted.

Thread-safety: every method may be called from any thread. A client is fork-aware: a child
process starts with an empty queue and its own sender thread.

The server and token default to PERFSCOPE_SERVER and PERFSCOPE_TOKEN, as the perfscope command
line reads them. What goes wrong is logged through the ``perfscope`` logger (``logging``): a
new kind of error at WARNING when it first happens, its repeats at DEBUG, so a server that is
away for an hour does not flood the application's log.
"""

from __future__ import annotations

import atexit
import os
import socket
import ssl
import sys
import time
import weakref
from typing import Any, Mapping, Optional, Sequence

from .events import Event
from .sender import Sender, Stats
from .transport import Transport

__all__ = ["Client", "Stats", "Request", "KernelTimer", "Run"]


class Client:
    """Sends events to the perfscope server at ``url`` (its /api/v1/events).

    ``url`` defaults to the PERFSCOPE_SERVER environment variable, else http://127.0.0.1:8080.
    ``token``: a write token when the server requires one (default: PERFSCOPE_TOKEN, if set). ``run``: a run name tagged on
    every event (as ``client.run(name)`` does for a stretch). ``tags``: tags added to every
    event that carries tags. ``strict``: validate in the caller's thread and raise
    EventError there (for development; by default an invalid event is counted and dropped by
    the sender, never raised where the caller serves requests).
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, *,
                 run: Optional[str] = None, tags: Optional[Mapping[str, str]] = None,
                 max_queue: int = 100_000, batch_size: int = 2_000, flush_interval: float = 0.25,
                 gzip_over: int = 16_384, timeout: float = 5.0, max_retry_delay: float = 30.0,
                 exit_timeout: float = 5.0, strict: bool = False,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        if url is None:
            url = os.environ.get("PERFSCOPE_SERVER") or "http://127.0.0.1:8080"
        if token is None:
            token = os.environ.get("PERFSCOPE_TOKEN") or None
        transport = Transport(url, token, timeout=timeout, gzip_over=gzip_over, ssl_context=ssl_context)
        if max_queue < 1 or batch_size < 1:
            raise ValueError("max_queue and batch_size must be at least 1")
        self._sender = Sender(transport, tags={str(k): str(v) for k, v in (tags or {}).items()},
                              max_queue=max_queue, batch_size=batch_size, flush_interval=flush_interval,
                              max_retry_delay=max_retry_delay, join_timeout=timeout + 1, strict=strict)
        self._run = run  # the run events given now belong to (Run sets it for its stretch)
        self._exit_timeout = exit_timeout
        # A weak reference: an exit hook or a fork hook must not keep a dropped client alive.
        ref = weakref.ref(self)
        def close_at_exit() -> None:
            client = ref()
            if client is not None:
                client.close(timeout=client._exit_timeout)

        def reset_in_child() -> None:
            client = ref()
            if client is not None:
                client._sender.reset_after_fork()

        self._exit_hook = close_at_exit
        atexit.register(self._exit_hook)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=reset_in_child)

    def _put(self, event: Event) -> None:
        """The caller's side: queue one event, or count it dropped. Never blocks, never raises
        (but in strict mode, for an invalid event)."""
        self._sender.put(event, self._run)

    def _add_timer(self, start: Any, end: Any, event: Event) -> None:
        self._sender.add_timer(start, end, event, self._run)

    # -- the event helpers ------------------------------------------------------------------

    def inference(self, model: str, latency_ms: float, *, version: Optional[str] = None,
                  ts_ns: Optional[int] = None, queue_ms: Optional[float] = None,
                  compute_ms: Optional[float] = None, batch_size: Optional[int] = None,
                  status: str = "ok", ttft_ms: Optional[float] = None,
                  input_tokens: Optional[int] = None, output_tokens: Optional[int] = None,
                  tags: Optional[Mapping[str, str]] = None) -> None:
        """One finished inference request; ``ts_ns`` (its completion) defaults to now."""
        e: Event = {"type": "inference", "model": model, "latency_ms": latency_ms,
                    "ts_ns": time.time_ns() if ts_ns is None else ts_ns, "status": status}
        if version is not None: e["version"] = version
        if queue_ms is not None: e["queue_ms"] = queue_ms
        if compute_ms is not None: e["compute_ms"] = compute_ms
        if batch_size is not None: e["batch_size"] = batch_size
        if ttft_ms is not None: e["ttft_ms"] = ttft_ms
        if input_tokens is not None: e["input_tokens"] = input_tokens
        if output_tokens is not None: e["output_tokens"] = output_tokens
        if tags: e["tags"] = dict(tags)
        self._put(e)

    def request(self, model: str, version: Optional[str] = None, *, batch_size: Optional[int] = None,
                input_tokens: Optional[int] = None, tags: Optional[Mapping[str, str]] = None) -> "Request":
        """A request timed from ``with`` (or ``start()``) to its end: latency, TTFT at the first
        token, output tokens counted, queue and compute split at ``started()``, status error
        when the block raises."""
        return Request(self, model, version, batch_size, input_tokens, tags)

    def sample(self, metric: str, value: float, labels: Optional[Mapping[str, str]] = None,
               ts_ns: Optional[int] = None) -> None:
        """One value of a custom series (``metric`` with ``labels``)."""
        e: Event = {"type": "sample", "metric": metric, "value": value,
                    "ts_ns": time.time_ns() if ts_ns is None else ts_ns}
        if labels: e["labels"] = dict(labels)
        self._put(e)

    def operator(self, op_type: str, name: str, provider: str, duration_ms: float, *,
                 model: Optional[str] = None, ts_ns: Optional[int] = None,
                 input_shapes: Optional[Sequence[Sequence[int]]] = None,
                 tags: Optional[Mapping[str, str]] = None) -> None:
        """One operator of a graph (ONNX Runtime style: op type, node name, execution provider)."""
        e: Event = {"type": "operator", "op_type": op_type, "name": name, "provider": provider,
                    "duration_ms": duration_ms, "ts_ns": time.time_ns() if ts_ns is None else ts_ns}
        if model is not None: e["model"] = model
        if input_shapes is not None: e["input_shapes"] = [list(s) for s in input_shapes]
        if tags: e["tags"] = dict(tags)
        self._put(e)

    def kernel(self, name: str, *, start_ns: Optional[int] = None, end_ns: Optional[int] = None,
               duration_ms: Optional[float] = None, variant: Optional[str] = None,
               stream: Optional[str] = None, device: Optional[str] = None,
               flops: Optional[float] = None, bytes: Optional[float] = None,
               dtype: Optional[str] = None, tags: Optional[Mapping[str, str]] = None) -> None:
        """One kernel execution timed by the caller: start and end (ns since the epoch), or a
        duration (ending now, or at ``end_ns``, or starting at ``start_ns``). ``flops`` and
        ``bytes``: its work where known (a GEMM's 2·M·N·K, the bytes it reads and writes), for
        the kernel's achieved TFLOP/s and GB/s; ``dtype`` ("bf16", "fp8", …): the data type the
        FLOPs are counted in, which places the kernel on the GPU's roofline."""
        e: Event = {"type": "kernel", "name": name}
        if flops is not None: e["flops"] = flops
        if bytes is not None: e["bytes"] = bytes
        if dtype is not None: e["dtype"] = dtype
        if start_ns is not None: e["start_ns"] = start_ns
        if end_ns is not None: e["end_ns"] = end_ns
        if duration_ms is not None:
            e["duration_ms"] = duration_ms
            if start_ns is None and end_ns is None:
                e["end_ns"] = time.time_ns()
        if variant is not None: e["variant"] = variant
        if stream is not None: e["stream"] = stream
        if device is not None: e["device"] = device
        if tags: e["tags"] = dict(tags)
        self._put(e)

    def memory(self, op: str, address: str, size_bytes: Optional[int] = None, *, kind: str = "device",
               tag: Optional[str] = None, device: Optional[str] = None, ts_ns: Optional[int] = None,
               tags: Optional[Mapping[str, str]] = None) -> None:
        """An allocation (``op="alloc"`` with its size) or a free of ``address``."""
        e: Event = {"type": "memory", "op": op, "address": address, "kind": kind,
                    "ts_ns": time.time_ns() if ts_ns is None else ts_ns}
        if size_bytes is not None: e["size_bytes"] = size_bytes
        if tag is not None: e["tag"] = tag
        if device is not None: e["device"] = device
        if tags: e["tags"] = dict(tags)
        self._put(e)

    def kernel_timer(self, name: str, *, variant: Optional[str] = None, stream: Optional[str] = None,
                     device: Optional[str] = None, flops: Optional[float] = None, bytes: Optional[float] = None,
                     dtype: Optional[str] = None, tags: Optional[Mapping[str, str]] = None) -> "KernelTimer":
        """Times the CUDA work queued inside ``with`` on the current stream with a pair of
        ``torch.cuda.Event``s. Nothing waits for the GPU: the sender reads the elapsed time
        once the end event has completed. The reported start is when the start event was
        queued (host clock); the duration is the GPU's, from event to event: for work shorter
        than its own launch that includes the wait for the launch (trace such work with
        `perfscope run`). ``flops``, ``bytes`` and ``dtype``: the work inside, as for ``kernel``."""
        work = {key: value for key, value in (("flops", flops), ("bytes", bytes), ("dtype", dtype)) if value is not None}
        return KernelTimer(self, name, variant, stream, device, tags, work)

    def run(self, name: str, *, tags: Optional[Mapping[str, str]] = None) -> "Run":
        """A named stretch of work (GET /api/v1/runs): reported when it starts and ends, and
        tagged ``run=NAME`` on every event given meanwhile."""
        return Run(self, name, tags)

    def send(self, event: Mapping[str, Any]) -> None:
        """Any event of the server's model, as a dict (``{"type": "kernel", ...}``)."""
        self._put(dict(event))

    # -- reading and stopping ---------------------------------------------------------------

    def stats(self) -> Stats:
        return self._sender.stats()

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Waits until every event given so far is sent or dropped (kernel timers whose GPU
        work is still running excepted); False if ``timeout`` seconds passed first."""
        return self._sender.flush(timeout)

    def close(self, timeout: Optional[float] = None) -> None:
        """Flushes (for at most ``timeout`` seconds, default ``exit_timeout``) and stops the
        sender; what could not be sent by then is counted dropped. Called at exit."""
        if self._sender.closed:
            return
        self._sender.close(self._exit_timeout if timeout is None else timeout)
        atexit.unregister(self._exit_hook)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Request:
    """One inference request being timed (see Client.request)."""

    __slots__ = ("_client", "model", "version", "batch_size", "input_tokens", "output_tokens", "tags",
                 "status", "_start", "_started", "_first", "_done")

    def __init__(self, client: Client, model: str, version: Optional[str], batch_size: Optional[int],
                 input_tokens: Optional[int], tags: Optional[Mapping[str, str]]) -> None:
        self._client = client
        self.model = model
        self.version = version
        self.batch_size = batch_size
        self.input_tokens = input_tokens
        self.output_tokens = 0
        self.tags = dict(tags) if tags else None
        self.status = "ok"
        self._start = 0
        self._started: Optional[int] = None
        self._first: Optional[int] = None
        self._done = False

    def start(self) -> "Request":
        self._start = time.perf_counter_ns()
        return self

    def started(self) -> None:
        """The request left its queue: queue_ms ends and compute_ms begins here."""
        self._started = time.perf_counter_ns()

    def first_token(self) -> None:
        """The first output token: TTFT, and one token counted."""
        self.token(1)

    def token(self, n: int = 1) -> None:
        """``n`` more output tokens; the first of the request also marks TTFT."""
        if self._first is None:
            self._first = time.perf_counter_ns()
        self.output_tokens += n

    def end(self, error: bool = False) -> None:
        """Ends the request (``with`` does): reports it once."""
        if self._done:
            return
        self._done = True
        now = time.perf_counter_ns()
        latency = (now - self._start) / 1e6
        self._client.inference(
            self.model, latency, version=self.version, batch_size=self.batch_size,
            status="error" if error else self.status,
            queue_ms=None if self._started is None else (self._started - self._start) / 1e6,
            compute_ms=None if self._started is None else (now - self._started) / 1e6,
            ttft_ms=None if self._first is None else (self._first - self._start) / 1e6,
            input_tokens=self.input_tokens, output_tokens=self.output_tokens or None, tags=self.tags)

    def __enter__(self) -> "Request":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.end(error=exc_type is not None)


class KernelTimer:
    """CUDA work timed with a pair of torch.cuda.Event (see Client.kernel_timer)."""

    __slots__ = ("_client", "_event", "_start", "_start_ns")

    def __init__(self, client: Client, name: str, variant: Optional[str], stream: Optional[str],
                 device: Optional[str], tags: Optional[Mapping[str, str]], work: Mapping[str, Any]) -> None:
        self._client = client
        self._event: Event = {"type": "kernel", "name": name, **work}
        if variant is not None: self._event["variant"] = variant
        if stream is not None: self._event["stream"] = stream
        if device is not None: self._event["device"] = device
        if tags: self._event["tags"] = dict(tags)
        self._start: Any = None
        self._start_ns = 0

    def __enter__(self) -> "KernelTimer":
        cuda = _torch_cuda()
        self._start = cuda.Event(enable_timing=True)
        self._start_ns = time.time_ns()
        self._start.record()
        return self

    def __exit__(self, *exc: object) -> None:
        end = _torch_cuda().Event(enable_timing=True)
        end.record()
        self._event["start_ns"] = self._start_ns
        self._client._add_timer(self._start, end, self._event)


def _torch_cuda() -> Any:
    try:
        import torch  # type: ignore[import]  # on first use: the client itself needs only the standard library
    except ImportError:
        raise RuntimeError("kernel_timer needs PyTorch with CUDA (import torch failed)") from None
    return torch.cuda


class Run:
    """A named stretch of work (see Client.run)."""

    def __init__(self, client: Client, name: str, tags: Optional[Mapping[str, str]]) -> None:
        self._client = client
        self._name = name
        self._tags = dict(tags) if tags else None
        self._start_ns = 0
        self._previous: Optional[str] = None

    def _report(self, **fields: Any) -> None:
        e: Event = {"type": "run", "name": self._name, "start_ns": self._start_ns}
        if self._tags: e["tags"] = self._tags
        e.update(fields)
        self._client._put(e)

    def __enter__(self) -> "Run":
        self._start_ns = time.time_ns()
        self._report(command=[a[:1024] for a in sys.argv[:256]], host=socket.gethostname()[:1024],
                     pids=[os.getpid()])
        self._previous = self._client._run
        self._client._run = self._name
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self._client._run = self._previous
        self._report(end_ns=max(time.time_ns(), self._start_ns), exit_status=0 if exc_type is None else 1)
