"""``benchmarks/fixed_answer_server.py``, the machine's floor of ``benchmarks/api_load.py``: one answer per request."""

import importlib.util
import socket
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_benchmark(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


def read_answers(sock: socket.socket, count: int) -> bytes:
    """Read until ``count`` whole fixed answers arrived (the server sends nothing else)."""
    answer_size = len(load_benchmark("fixed_answer_server").ANSWER)
    received = b""
    while len(received) < count * answer_size:
        chunk = sock.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_a_post_with_its_body_and_a_get_pipelined_get_two_answers():
    api_load = load_benchmark("api_load")
    port = api_load.free_port()
    server = api_load.start_fixed_server(port)
    try:
        body = b'{"job_id": "1", "note": "\\r\\n\\r\\nGET / HTTP/1.1\\r\\n\\r\\n"}'
        post = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        post += b"Content-Length: %d\r\n\r\n" % len(body) + body
        get = b"GET /v1/recommendation?app=a&user=u HTTP/1.1\r\nHost: x\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(post + get)
            received = read_answers(sock, 2)
            sock.sendall(get)
            received += read_answers(sock, 1)
        assert received.count(b"HTTP/1.1 200 OK\r\n") == 3
        assert received.endswith(b'{"status":"ok"}')
    finally:
        api_load.stop_server(server)
