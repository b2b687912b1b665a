"""The Python client against the real perfscope server (PERFSCOPE_BIN) on a loopback port:
batching, gzip, a server that is down then up, back-pressure, bad events refused with the
server's error, the request helper's figures, runs, fork and exit.

Run: PERFSCOPE_BIN=build/.../perfscope python3 -m unittest discover -s clients/python/tests
"""

from __future__ import annotations

import gzip
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import perfscope  # noqa: E402
from perfscope import sender as sender_module  # noqa: E402

BINARY = os.environ.get("PERFSCOPE_BIN")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A real `perfscope serve` on a loopback port, with its own data directory."""

    def __init__(self, port: Optional[int] = None, args: Optional[List[str]] = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="perfscope-py-")
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [BINARY, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", self.dir,
             "--enable-host-collector", "false", "--enable-gpu-collector", "false",
             "--db-commit-interval-ms", "20", *(args or [])],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()  # "listening on ..."
        if "listening on" not in line:
            raise RuntimeError(f"server did not start: {line!r}")

    def get(self, path: str, token: Optional[str] = None) -> Any:
        request = urllib.request.Request(self.url + path)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def inference_count(server: Server, model: str, query: str = "") -> int:
    models = server.get(f"/api/v1/inference?window=1h{query}")["models"]
    return sum(m["inferences"] for m in models if m["model"] == model)


@unittest.skipUnless(BINARY, "PERFSCOPE_BIN names the perfscope binary")
class AgainstTheServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Server()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_events_are_batched_and_all_stored(self) -> None:
        with perfscope.Client(self.server.url, batch_size=500) as client:
            for i in range(5_000):
                client.inference("batched", latency_ms=1.0 + i % 7, output_tokens=3)
            self.assertTrue(client.flush(timeout=30))
            stats = client.stats()
        self.assertEqual(stats.sent, 5_000)
        self.assertEqual((stats.dropped, stats.invalid, stats.rejected), (0, 0, 0))
        self.assertGreaterEqual(stats.batches, 10)  # at most batch_size per request
        self.assertLess(stats.batches, 5_000)
        self.assertEqual(inference_count(self.server, "batched"), 5_000)

    def test_gzip_bodies_are_stored(self) -> None:
        with perfscope.Client(self.server.url, gzip_over=0) as client:
            for i in range(300):
                client.kernel("gzipped_kernel", duration_ms=0.01 * (i + 1), variant="a")
            client.flush(timeout=30)
            self.assertEqual(client.stats().sent, 300)
        kernels = self.server.get("/api/v1/kernels?window=1h")["kernels"]
        row = next(k for k in kernels if k["name"] == "gzipped_kernel")
        self.assertEqual(row["count"], 300)

    def test_kernels_carry_their_work(self) -> None:
        with perfscope.Client(self.server.url) as client:
            client.kernel("worked_kernel", start_ns=time.time_ns() - 2_000_000, end_ns=time.time_ns() - 1_000_000,
                          flops=2e9, bytes=4e6, dtype="bf16")
            client.flush(timeout=30)
        kernels = self.server.get("/api/v1/kernels?window=1h")["kernels"]
        row = next(k for k in kernels if k["name"] == "worked_kernel")
        self.assertAlmostEqual(row["arithmetic_intensity"], 500.0)
        self.assertGreater(row["achieved_tflops"], 0)
        self.assertEqual(row["dtypes"], ["bf16"])
        with self.assertRaises(perfscope.EventError):
            perfscope.validate({"type": "kernel", "name": "k", "duration_ms": 1, "flops": -1})
        with self.assertRaises(perfscope.EventError) as bad:
            perfscope.validate({"type": "kernel", "name": "k", "duration_ms": 1, "flops": 1, "dtype": "fp4"})
        self.assertEqual(bad.exception.field, "dtype")

    def test_the_request_helper_reports_latency_ttft_tokens_and_errors(self) -> None:
        client = perfscope.Client(self.server.url)
        with client.request("helper", version="2", input_tokens=11) as r:
            time.sleep(0.02)
            r.started()
            time.sleep(0.03)
            r.first_token()
            for _ in range(4):
                r.token()
        with self.assertRaises(ZeroDivisionError):
            with client.request("helper", version="2"):
                1 / 0
        client.close()
        self.assertEqual(client.stats().sent, 2)
        rows = [m for m in self.server.get("/api/v1/inference?window=1h")["models"] if m["model"] == "helper"]
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["version"], rows[0]["inferences"], rows[0]["errors"]), ("2", 2, 1))
        self.assertEqual((rows[0]["input_tokens"], rows[0]["output_tokens"]), (11, 5))
        ttft = self.server.get("/api/v1/percentiles?model=helper&field=ttft_ms&window=1h")
        self.assertEqual(ttft["count"], 1)
        self.assertGreaterEqual(ttft["min"], 50.0)  # 20 ms queued + 30 ms computing, at least
        queue = self.server.get("/api/v1/percentiles?model=helper&field=queue_ms&window=1h")
        self.assertGreaterEqual(queue["min"], 20.0)
        self.assertLess(queue["min"], ttft["min"])

    def test_a_run_is_reported_and_tags_its_events(self) -> None:
        client = perfscope.Client(self.server.url)
        with client.run("py-run-1"):
            client.inference("in_run", latency_ms=5)
        client.inference("in_run", latency_ms=6)  # after the run: untagged
        client.close()
        runs = {r["name"]: r for r in self.server.get("/api/v1/runs")["runs"]}
        run = runs["py-run-1"]
        self.assertEqual(run["status"], "finished")
        self.assertEqual(run["pids"], [os.getpid()])
        self.assertIsNotNone(run["end_ns"])
        self.assertEqual(inference_count(self.server, "in_run"), 2)
        self.assertEqual(inference_count(self.server, "in_run", "&run=py-run-1"), 1)

    def test_an_invalid_event_is_dropped_alone_and_named(self) -> None:
        client = perfscope.Client(self.server.url)
        client.inference("partly_bad", latency_ms=1)
        client.inference("partly_bad", latency_ms=1, ttft_ms=5)  # TTFT after the end
        client.sample("bad metric name", 1.0)
        client.inference("partly_bad", latency_ms=2)
        client.close()
        stats = client.stats()
        self.assertEqual((stats.sent, stats.invalid), (2, 2))
        self.assertIn("metric", stats.last_error)
        self.assertEqual(inference_count(self.server, "partly_bad"), 2)

    def test_an_event_the_server_refuses_is_dropped_with_the_servers_error(self) -> None:
        # A client whose rules lag the server's: its events reach the server, which names the
        # field; the client drops that event and sends the rest of the batch again.
        original = sender_module.validate
        sender_module.validate = lambda event: None
        try:
            client = perfscope.Client(self.server.url)
            client.inference("server_refused", latency_ms=1)
            client.inference("server_refused", latency_ms=-1)
            client.inference("server_refused", latency_ms=3)
            client.close()
        finally:
            sender_module.validate = original
        stats = client.stats()
        self.assertEqual((stats.sent, stats.invalid, stats.rejected), (2, 1, 0))
        self.assertIn("latency_ms", stats.last_error)
        self.assertIn("event refused by the server", stats.last_error)
        self.assertEqual(inference_count(self.server, "server_refused"), 2)

    def test_the_server_and_token_come_from_the_environment_and_errors_are_logged(self) -> None:
        # PERFSCOPE_SERVER and PERFSCOPE_TOKEN, as the command line reads them; an invalid event
        # is logged at WARNING through the "perfscope" logger, its repeat at DEBUG only.
        saved = {k: os.environ.get(k) for k in ("PERFSCOPE_SERVER", "PERFSCOPE_TOKEN")}
        os.environ["PERFSCOPE_SERVER"] = self.server.url
        os.environ["PERFSCOPE_TOKEN"] = "from-the-environment"
        try:
            with self.assertLogs("perfscope", level="DEBUG") as logs:
                client = perfscope.Client()
                self.assertEqual(client._sender._transport._headers["Authorization"], "Bearer from-the-environment")
                client.sample("bad metric name", 1.0)
                client.flush(5)
                client.sample("bad metric name", 1.0)
                client.inference("from_env", latency_ms=1)
                client.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        self.assertEqual(client.stats().sent, 1)
        self.assertEqual(inference_count(self.server, "from_env"), 1)
        levels = [r.levelname for r in logs.records if "invalid event dropped" in r.getMessage()]
        self.assertEqual(levels, ["WARNING", "DEBUG"])

    def test_strict_mode_raises_in_the_caller_naming_the_field(self) -> None:
        client = perfscope.Client(self.server.url, strict=True)
        with self.assertRaises(perfscope.EventError) as raised:
            client.inference("strict", latency_ms=float("nan"))
        self.assertEqual(raised.exception.field, "latency_ms")
        client.close()

    def test_the_local_rules_agree_with_the_servers(self) -> None:
        now = time.time_ns()
        cases: List[Dict[str, Any]] = [
            {"type": "kernel", "name": "k", "start_ns": now, "end_ns": now + 5},
            {"type": "kernel", "name": "k", "start_ns": now, "end_ns": now - 5},
            {"type": "kernel", "name": "", "duration_ms": 1},
            {"type": "kernel", "name": "k"},
            {"type": "kernel", "name": "k", "duration_ms": 7e8},
            {"type": "kernel", "name": "k", "duration_ms": 1, "tags": {"bad-key": "v"}},
            {"type": "kernel", "name": "k", "duration_ms": 1, "tags": {f"t{i}": "v" for i in range(33)}},
            {"type": "kernel", "name": "x" * 1025, "duration_ms": 1},
            {"type": "memory", "op": "alloc", "address": "0x1", "size_bytes": 0},
            {"type": "memory", "op": "alloc", "address": "0x1", "size_bytes": 64, "kind": "unified"},
            {"type": "memory", "op": "free", "address": "0x1"},
            {"type": "memory", "op": "move", "address": "0x1"},
            {"type": "command_buffer", "id": "c", "queue": "q", "enqueue_ns": 1, "submit_ns": 2, "start_ns": 3, "end_ns": 4},
            {"type": "command_buffer", "id": "c", "queue": "q", "enqueue_ns": 5, "submit_ns": 2, "start_ns": 3, "end_ns": 4},
            {"type": "inference", "model": "m", "latency_ms": 3, "ttft_ms": 1, "batch_size": 4},
            {"type": "inference", "model": "m"},
            {"type": "inference", "model": "m", "latency_ms": 3, "batch_size": 0},
            {"type": "inference", "model": "m", "latency_ms": 3, "status": "failed"},
            {"type": "inference", "model": "m", "latency_ms": 3, "queue_ms": -1},
            {"type": "operator", "op_type": "MatMul", "name": "n", "provider": "CUDA", "duration_ms": 1, "input_shapes": [[1, 2]]},
            {"type": "operator", "op_type": "MatMul", "name": "n", "provider": "CUDA", "duration_ms": 1, "input_shapes": [[-1]]},
            {"type": "operator", "op_type": "MatMul", "name": "n", "duration_ms": 1},
            {"type": "sample", "metric": "queue:depth", "value": 3, "labels": {"pool": "a"}},
            {"type": "sample", "metric": "9lives", "value": 3},
            {"type": "sample", "metric": "m", "value": 3, "labels": {"0bad": "a"}},
            {"type": "sample", "metric": "m"},
            {"type": "run", "name": "rules", "pids": [1, 2], "command": ["a"]},
            {"type": "run", "name": "rules", "pids": [0]},
            {"type": "run", "name": "rules", "start_ns": 10, "end_ns": 5},
            {"type": "run", "name": "rules", "exit_status": 2**31},
            {"type": "gpu", "name": "x"},
        ]
        for event in cases:
            with self.subTest(event=json.dumps(event)[:120]):
                local: Optional[str] = None
                try:
                    perfscope.validate(event)
                except perfscope.EventError as e:
                    local = e.field
                request = urllib.request.Request(
                    self.server.url + "/api/v1/events", data=json.dumps({"events": [event]}).encode(),
                    headers={"Content-Type": "application/json"}, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=10):
                        remote = None
                except urllib.error.HTTPError as e:
                    self.assertEqual(e.code, 400)
                    remote = json.loads(e.read())["error"]["field"]
                self.assertEqual(local, remote)

    def test_a_child_process_sends_through_its_own_sender(self) -> None:
        if not hasattr(os, "fork"):
            self.skipTest("no fork here")
        client = perfscope.Client(self.server.url)
        client.inference("forked", latency_ms=1)
        client.flush(timeout=10)
        pid = os.fork()
        if pid == 0:  # the child: its queue and thread are its own
            code = 1
            try:
                client.inference("forked", latency_ms=2)
                code = 0 if client.flush(timeout=10) and client.stats().sent == 1 else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        client.close()
        self.assertEqual(inference_count(self.server, "forked"), 2)

    def test_events_are_flushed_when_the_program_exits(self) -> None:
        script = (f"import sys; sys.path.insert(0, {os.path.join(os.path.dirname(__file__), '..')!r})\n"
                  "import perfscope\n"
                  f"c = perfscope.Client({self.server.url!r})\n"
                  "for i in range(25): c.inference('at_exit', latency_ms=i)\n")
        subprocess.run([sys.executable, "-c", script], check=True, timeout=30)
        self.assertEqual(inference_count(self.server, "at_exit"), 25)


@unittest.skipUnless(BINARY, "PERFSCOPE_BIN names the perfscope binary")
class WhenTheServerIsAway(unittest.TestCase):
    def test_events_wait_while_the_server_is_down_and_arrive_when_it_is_up(self) -> None:
        port = free_port()
        client = perfscope.Client(f"http://127.0.0.1:{port}", max_retry_delay=0.2, flush_interval=0.05)
        for i in range(200):
            client.inference("down_then_up", latency_ms=i)
        self.assertFalse(client.flush(timeout=0.5))  # nobody listens yet
        self.assertIn("unreachable", client.stats().last_error)
        server = Server(port=port)
        try:
            self.assertTrue(client.flush(timeout=30))
            stats = client.stats()
            self.assertEqual((stats.sent, stats.dropped), (200, 0))
            self.assertGreater(stats.retries, 0)
            self.assertEqual(inference_count(server, "down_then_up"), 200)
        finally:
            client.close()
            server.stop()

    def test_a_full_queue_drops_and_counts_without_blocking_the_caller(self) -> None:
        client = perfscope.Client(f"http://127.0.0.1:{free_port()}", max_queue=100, batch_size=50,
                                  exit_timeout=0.2)
        for i in range(1_000):
            client.inference("overflow", latency_ms=i)
        stats = client.stats()
        # Nothing is lost silently: every event is queued, in flight or counted dropped.
        self.assertEqual(stats.queued + stats.dropped, 1_000)
        self.assertGreaterEqual(stats.dropped, 850)
        client.close()
        self.assertEqual(client.stats().dropped, 1_000)

    def test_a_token_is_sent_and_a_refusal_is_reported(self) -> None:
        directory = tempfile.mkdtemp()
        tokens = os.path.join(directory, "tokens")
        with open(tokens, "w") as f:
            f.write("write w-secret-token-1234567890\nread r-secret-token-1234567890\n")
        server = Server(args=["--token-file", tokens])
        try:
            good = perfscope.Client(server.url, token="w-secret-token-1234567890")
            good.inference("authorized", latency_ms=1)
            good.close()
            self.assertEqual(good.stats().sent, 1)
            bad = perfscope.Client(server.url)
            bad.inference("authorized", latency_ms=1)
            bad.close()
            self.assertEqual((bad.stats().sent, bad.stats().rejected), (0, 1))
            self.assertIn("401", bad.stats().last_error)
            models = server.get("/api/v1/inference?window=1h", token="r-secret-token-1234567890")["models"]
            self.assertEqual(sum(m["inferences"] for m in models), 1)
        finally:
            server.stop()
            shutil.rmtree(directory, ignore_errors=True)


class Headers(unittest.TestCase):
    """What goes over the wire, seen by a plain HTTP server (no perfscope needed)."""

    def test_large_bodies_are_gzipped_and_small_ones_not(self) -> None:
        seen: List[Dict[str, Any]] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                encoding = self.headers.get("Content-Encoding")
                events = json.loads(gzip.decompress(body) if encoding == "gzip" else body)["events"]
                seen.append({"encoding": encoding, "events": len(events), "auth": self.headers.get("Authorization")})
                answer = json.dumps({"accepted": len(events)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{httpd.server_address[1]}"
            client = perfscope.Client(url, token="t0k3n", gzip_over=4_096)
            client.inference("small", latency_ms=1)
            client.flush(timeout=10)
            for i in range(400):
                client.inference("large", latency_ms=i)
            client.close()
        finally:
            httpd.shutdown()
            httpd.server_close()
        self.assertEqual(seen[0], {"encoding": None, "events": 1, "auth": "Bearer t0k3n"})
        self.assertEqual(sum(s["events"] for s in seen[1:]), 400)
        self.assertTrue(all(s["encoding"] == "gzip" for s in seen[1:]))


if __name__ == "__main__":
    unittest.main()
