"""HTTP/1.1 over the stdlib's threading server: one thread per connection, keep-alive, optional TLS
with client certificates (the handshake happens in the connection's thread), chunked streams for
watches and logs."""

from __future__ import annotations

import json
import logging
import select
import socket
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .app import App, Response

_log = logging.getLogger(__name__)
_IDLE_TIMEOUT_S = 300
_HANDSHAKE_TIMEOUT_S = 10
_MAX_BODY = 64 * 1024 * 1024


def tls_context(cert: str, key: str, client_ca: str | None) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    if client_ca:
        context.load_verify_locations(client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    return context


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fibermpi-devcluster-apiserver"
    timeout = _IDLE_TIMEOUT_S
    server: "Server"

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(_HANDSHAKE_TIMEOUT_S)
            self.request.do_handshake()
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        if self.server.log_requests:
            sys.stderr.write("apiserver: %s %s\n" % (self.address_string(), format % args))

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _refuse(self, code: int, reason: str, message: str) -> None:
        """Answers a request whose body cannot be read, and ends the connection (the rest of the
        body, if any, is not read)."""
        self._send(Response(code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": message, "reason": reason, "code": code}))
        self.close_connection = True

    def _read_body(self) -> bytes | None:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._refuse(413, "RequestEntityTooLarge", f"Request entity too large: limit is {_MAX_BODY}")
            return None
        return self.rfile.read(length) if length else b""

    def _read_chunked_body(self) -> bytes | None:
        """A body in chunks (HTTP/1.1's chunked transfer coding), as `kubectl create --raw -f FILE`
        and other Go clients send one whose length they do not know up front."""
        body = bytearray()
        while True:
            size_line = self.rfile.readline(1024)
            size_text = size_line.split(b";", 1)[0].strip()  # chunk extensions are ignored
            if not size_text or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                self._refuse(400, "BadRequest", f"malformed chunked encoding: chunk size {size_line[:40]!r}")
                return None
            size = int(size_text, 16)
            if size == 0:
                break
            if len(body) + size > _MAX_BODY:
                self._refuse(413, "RequestEntityTooLarge", f"Request entity too large: limit is {_MAX_BODY}")
                return None
            chunk = self.rfile.read(size)
            if len(chunk) != size or self.rfile.readline(3) not in (b"\r\n", b"\n"):
                self._refuse(400, "BadRequest", "malformed chunked encoding: a chunk ends early")
                return None
            body += chunk
        while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
            pass  # trailer fields: none the server needs
        return bytes(body)

    def _serve(self, method: str) -> None:
        body = self._read_body()
        if body is None:
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        certificate = self.request.getpeercert() if isinstance(self.request, ssl.SSLSocket) else None
        response = self.server.app.handle(method, url.path, query, self.headers, body, certificate)
        self._send(response)

    def _send(self, response: Response) -> None:
        self.send_response(response.code)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for warning in response.warnings:
            escaped = warning.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", f'299 - "{escaped}"')
        if response.stream is not None:
            self._send_stream(response)
            return
        payload = response.raw if response.raw is not None else \
            json.dumps(response.body, separators=(",", ":")).encode()
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_stream(self, response: Response) -> None:
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        assert response.stream is not None

        def write(chunk: bytes) -> None:
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()

        def client_gone() -> bool:
            # a watching client sends nothing more: a readable socket means it closed
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable)

        try:
            response.stream(write, client_gone)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, socket.timeout, OSError):
            self.close_connection = True
        except Exception:          # headers are out: the only honest answer left is to end the stream
            _log.exception("%s failed while streaming", self.path)
            self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    # The listen backlog: socketserver's default of 5 overflowed with dozens of pods, nodes, watches and
    # the controller connecting at once on a loaded machine, and clients then waited for SYN retries
    # (connect timeouts of 10 s and more seen from pods).
    request_queue_size = 512

    def __init__(self, address: tuple[str, int], app: App, context: ssl.SSLContext | None, log_requests: bool):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.app = app
        self.context = context
        self.log_requests = log_requests
        super().__init__(address, Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # no 40 ms Nagle wait per answer
        if self.context is not None:
            sock = self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, (ssl.SSLError, ConnectionError, socket.timeout, TimeoutError)):
            return       # a client that went away or failed its handshake is not a server error
        super().handle_error(request, client_address)
