"""Command line: python -m k8s.devcluster.apiserver --state-dir DIR (--insecure | --tls-cert ...)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from .server import ApiServer, ServerOptions


def parse_args(argv: list[str]) -> ServerOptions:
    parser = argparse.ArgumentParser(prog="python -m k8s.devcluster.apiserver",
                                     description="A Kubernetes API server stand-in for the development cluster.")
    parser.add_argument("--state-dir", required=True, help="folder of the cluster's state (pod logs under logs/)")
    parser.add_argument("--bind", action="append", default=[], metavar="ADDRESS",
                        help="address to listen on; repeat for several (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=6443, help="port; 0 chooses a free one")
    parser.add_argument("--port-file", help="write the port listened on to this file")
    parser.add_argument("--insecure", action="store_true",
                        help="plain HTTP; requests without credentials act as a cluster admin (tests only)")
    parser.add_argument("--tls-cert", help="server certificate (PEM)")
    parser.add_argument("--tls-key", help="server private key (PEM)")
    parser.add_argument("--client-ca", help="CA whose client certificates authenticate (user = CN, groups = O)")
    parser.add_argument("--token-file", help="static tokens: CSV token,user,uid,\"group1,group2\"")
    parser.add_argument("--watch-history", type=int, default=2000,
                        help="events kept per resource for watches resuming from a resourceVersion")
    parser.add_argument("--bookmark-interval", type=float, default=5.0,
                        help="seconds between watch bookmarks")
    parser.add_argument("--service-cidr", default="10.96.0.0/16", help="range of Service cluster IPs")
    parser.add_argument("--log-requests", action="store_true", help="log every request on stderr")
    args = parser.parse_args(argv)
    if not args.insecure and not (args.tls_cert and args.tls_key):
        parser.error("either --insecure or both --tls-cert and --tls-key are required")
    if args.watch_history < 10:
        parser.error("--watch-history must be at least 10")
    if args.bookmark_interval <= 0:
        parser.error("--bookmark-interval must be positive")
    for path in (args.tls_cert, args.tls_key, args.client_ca, args.token_file):
        if path and not os.path.isfile(path):
            parser.error(f"no such file: {path}")
    return ServerOptions(state_dir=args.state_dir, binds=args.bind or ["127.0.0.1"], port=args.port,
                         port_file=args.port_file, insecure=args.insecure, tls_cert=args.tls_cert,
                         tls_key=args.tls_key, client_ca=args.client_ca, token_file=args.token_file,
                         watch_history=args.watch_history, bookmark_interval=args.bookmark_interval,
                         service_cidr=args.service_cidr, log_requests=args.log_requests)


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="apiserver: %(levelname)s %(message)s")
    options = parse_args(argv)
    try:
        server = ApiServer(options)
    except (OSError, ValueError) as err:
        print(f"apiserver: cannot start: {err}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    for url in server.urls():
        print(f"listening on {url}", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
