#!/usr/bin/env python3
"""A stand-in kubelet: the PodResources v1 API on a unix socket, served by a real gRPC server
(grpcio), so perfscope's client meets real HTTP/2, header compression, flow control and
trailers. The answer is read from a JSON file at every call, so a test can move pods between
calls:

    {"pods": [{"name": "llm-0", "namespace": "serving",
               "containers": [{"name": "vllm",
                               "devices": [{"resource_name": "nvidia.com/gpu", "device_ids": ["GPU-a"]}]}]}],
     "status": 0, "message": ""}

A non-zero "status" answers that gRPC status instead (e.g. 12, UNIMPLEMENTED). The messages are
encoded by hand from the Go definitions (k8s.io/kubelet/pkg/apis/podresources/v1/api.proto),
with fields of kinds perfscope does not read (cpu_ids, memory, topology) in them on purpose.

Usage: kubelet_standin.py SOCKET ANSWER.json   (prints "ready" once it serves)
"""
import json
import signal
import sys
import threading
from concurrent import futures

import grpc


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def text(field, value):
    return length_delimited(field, value.encode())


def packed_int64(field, values):
    return length_delimited(field, b"".join(varint(v) for v in values))


def topology(numa_ids):
    # TopologyInfo { repeated NUMANode nodes = 1; }  NUMANode { int64 ID = 1; }
    return b"".join(length_delimited(1, varint(1 << 3 | 0) + varint(n)) for n in numa_ids)


def container_devices(d):
    out = text(1, d["resource_name"])
    for i in d["device_ids"]:
        out += text(2, i)
    return out + length_delimited(3, topology([0]))


def container(c):
    out = b""
    # The devices before the name, as no encoder is obliged to order them
    for d in c.get("devices", []):
        out += length_delimited(2, container_devices(d))
    out += text(1, c["name"])
    out += packed_int64(3, c.get("cpu_ids", [2, 3]))
    # ContainerMemory { string memory_type = 1; uint64 size = 2; TopologyInfo topology = 3; }
    out += length_delimited(4, text(1, "memory") + varint(2 << 3 | 0) + varint(1 << 30))
    return out


def pod(p):
    out = text(1, p["name"]) + text(2, p["namespace"])
    for c in p.get("containers", []):
        out += length_delimited(3, container(c))
    return out


def answer(path):
    with open(path) as f:
        spec = json.load(f)
    return spec, b"".join(length_delimited(1, pod(p)) for p in spec.get("pods", []))


class PodResourcesLister(grpc.GenericRpcHandler):
    def __init__(self, path):
        self.path = path
        self.calls = 0

    def service(self, details):
        if details.method != "/v1.PodResourcesLister/List":
            return None  # grpc answers UNIMPLEMENTED

        def list_pods(request, context):
            self.calls += 1
            spec, body = answer(self.path)
            if spec.get("status"):
                code = next(c for c in grpc.StatusCode if c.value[0] == spec["status"])
                context.abort(code, spec.get("message", ""))
            return body

        return grpc.unary_unary_rpc_method_handler(
            list_pods, request_deserializer=lambda b: b, response_serializer=lambda b: b)


def main():
    socket_path, answer_path = sys.argv[1], sys.argv[2]
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((PodResourcesLister(answer_path),))
    server.add_insecure_port("unix:" + socket_path)
    server.start()
    print("ready", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(0)


if __name__ == "__main__":
    main()
