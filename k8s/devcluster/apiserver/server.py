"""Assembly of the stand-in: store, resources, authentication, the controllers (garbage collector,
ClusterRole aggregator, resource quotas), listeners, and the objects a fresh cluster starts with."""

from __future__ import annotations

import ipaddress
import os
import threading
from dataclasses import dataclass, field

from .api import SYSTEM_NAMESPACES, Api, Context
from .app import App
from .auth import Authenticator, read_token_file
from .bootstrap_policy import cluster_role_bindings, cluster_roles
from .clusterrole_aggregation import ClusterRoleAggregator
from .endpoint_slice import api_server_slice
from .gc import GarbageCollector
from .httpd import Server, tls_context
from .quota_controller import QuotaController
from .registry import Registry
from .store import Store
from .strategies import ServiceStrategy


@dataclass
class ServerOptions:
    state_dir: str
    binds: list[str] = field(default_factory=lambda: ["127.0.0.1"])
    port: int = 6443
    port_file: str | None = None
    insecure: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None
    token_file: str | None = None
    watch_history: int = 2000
    bookmark_interval: float = 5.0
    service_cidr: str = "10.96.0.0/16"
    log_requests: bool = False


class ApiServer:
    def __init__(self, options: ServerOptions):
        self.options = options
        os.makedirs(os.path.join(options.state_dir, "logs"), exist_ok=True)
        self.store = Store(options.watch_history)
        self.registry = Registry(options.service_cidr)
        self.api = Api(self.store, self.registry)
        tokens = read_token_file(options.token_file) if options.token_file else {}
        self.authenticator = Authenticator(tokens, self._account_uid)
        self.app = App(self.store, self.registry, self.api, self.authenticator, options.state_dir,
                       options.bookmark_interval, insecure_admin=options.insecure)
        self.collector = GarbageCollector(self.api)
        self.aggregator = ClusterRoleAggregator(self.api)
        self.quotas = QuotaController(self.api)
        self._bootstrap()
        context = None if options.insecure else tls_context(options.tls_cert or "", options.tls_key or "",
                                                             options.client_ca)
        self.servers: list[Server] = []
        port = options.port
        for address in options.binds:
            server = Server((address, port), self.app, context, options.log_requests)
            port = server.server_address[1]
            self.servers.append(server)
        self.port = port
        self.threads: list[threading.Thread] = []
        self._publish_endpoints()

    def _account_uid(self, namespace: str, name: str) -> str | None:
        account = self.store.get(("", "serviceaccounts"), namespace, name)
        return None if account is None else account["metadata"]["uid"]

    def _bootstrap(self) -> None:
        """What a fresh cluster has: its namespaces (each with its default service account), the
        bootstrap ClusterRoles (cluster-admin bound to system:masters; admin, edit, view, which the
        aggregator fills), and the `kubernetes` Service."""
        ctx = Context()
        namespaces = self.registry.lookup("", "v1", "namespaces")
        services = self.registry.lookup("", "v1", "services")
        roles = self.registry.lookup("rbac.authorization.k8s.io", "v1", "clusterroles")
        bindings = self.registry.lookup("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
        assert namespaces and services and roles and bindings
        for name in SYSTEM_NAMESPACES:
            self.api.create(namespaces, "", {"metadata": {"name": name}}, ctx)
        for role in cluster_roles():
            self.api.create(roles, "", role, ctx)
        for binding in cluster_role_bindings():
            self.api.create(bindings, "", binding, ctx)
        allocator = self.registry.strategy(services)
        assert isinstance(allocator, ServiceStrategy)
        first = str(next(allocator.network.hosts()))
        self.api.create(services, "default", {
            "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": first, "ports": [{"name": "https", "port": 443, "targetPort": 6443}]}}, ctx)

    def _publish_endpoints(self) -> None:
        """EndpointSlice default/kubernetes: where clients reach this server (its addresses other
        than loopback ones, where it has such)."""
        binds = []
        for address in self.options.binds:
            try:
                if not ipaddress.ip_address(address).is_unspecified:
                    binds.append(address)
            except ValueError:
                continue    # a host name: not an endpoint address
        outside = [address for address in binds if not ipaddress.ip_address(address).is_loopback]
        addresses = outside or binds or ["127.0.0.1"]
        slices = self.registry.lookup("discovery.k8s.io", "v1", "endpointslices")
        assert slices
        self.api.create(slices, "default", api_server_slice(addresses, self.port), Context())

    def urls(self) -> list[str]:
        scheme = "http" if self.options.insecure else "https"
        urls = []
        for server in self.servers:
            host = server.server_address[0]
            urls.append(f"{scheme}://[{host}]:{self.port}" if ":" in host else f"{scheme}://{host}:{self.port}")
        return urls

    def start(self) -> None:
        self.collector.start()
        self.aggregator.start()
        self.quotas.start()
        for server in self.servers:
            thread = threading.Thread(target=server.serve_forever, name=f"listener-{server.server_address[0]}",
                                      daemon=True)
            thread.start()
            self.threads.append(thread)
        if self.options.port_file:
            partial = self.options.port_file + ".partial"
            with open(partial, "w", encoding="utf-8") as handle:
                handle.write(f"{self.port}\n")
            os.replace(partial, self.options.port_file)

    def stop(self) -> None:
        self.collector.stop()
        self.aggregator.stop()
        self.quotas.stop()
        for server in self.servers:
            server.shutdown()
            server.server_close()
