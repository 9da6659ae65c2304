"""The API server's request dispatch, independent of the socket: authentication, authorization,
content negotiation (JSON, Table), then the verb on the resource."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import yaml

from . import subresources
from .api import Api, Context, resource_key
from .auth import Authenticator, User, unauthorized
from .errors import ApiError
from .listing import make_filter, parse_rv
from .paths import Target, parse_resource_path, verb_of
from .registry import Registry
from .resource_info import ResourceInfo
from .store import Store
from .watch import serve_watch

_log = logging.getLogger(__name__)
VERSION_INFO = {"major": "1", "minor": "30", "gitVersion": "v1.30.0-fibermpi-devcluster", "gitCommit": "",
                "gitTreeState": "clean", "buildDate": "2024-04-17T00:00:00Z", "goVersion": "python",
                "compiler": "python", "platform": "linux/amd64"}
_PUBLIC_PATHS = ("/healthz", "/livez", "/readyz", "/version")
_FIELD_VALIDATION = ("Ignore", "Warn", "Strict")

Writer = Callable[[bytes], None]


@dataclass
class Response:
    """A JSON body, raw bytes, or a stream written chunk by chunk."""
    code: int
    body: Any = None
    raw: bytes | None = None
    content_type: str = "application/json"
    stream: Callable[[Writer, Callable[[], bool]], None] | None = None   # (write, client_gone)
    warnings: list[str] = field(default_factory=list)


def _optional_module(name: str) -> Any:
    """A module of this package that may not be there yet; None then."""
    import importlib
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        return None


class App:
    def __init__(self, store: Store, registry: Registry, api: Api, authenticator: Authenticator,
                 state_dir: str, bookmark_interval: float, insecure_admin: bool):
        self.store = store
        self.registry = registry
        self.api = api
        self.authenticator = authenticator
        self.state_dir = state_dir
        self.bookmark_interval = bookmark_interval
        self.insecure_admin = insecure_admin

    # ---- entry -----------------------------------------------------------------------------------

    def handle(self, method: str, path: str, query: dict[str, str], headers: Any, body: bytes,
               certificate: dict[str, Any] | None) -> Response:
        try:
            user = self.authenticator.authenticate(headers.get("Authorization"), certificate)
            if user is None:
                if self.insecure_admin:
                    user = User("system:admin", "", ("system:masters", "system:authenticated"))
                elif path.rstrip("/") in _PUBLIC_PATHS:
                    user = User("system:anonymous", "", ("system:unauthenticated",))
                else:
                    raise unauthorized()
            target = parse_resource_path(path)
            if target is None:
                return self._non_resource(method, path, headers)
            return self._resource(method, target, query, headers, body, user)
        except ApiError as err:
            return Response(err.code, err.status())
        except Exception as err:      # a bug must answer 500, not drop the connection
            _log.exception("%s %s failed", method, path)
            return Response(500, ApiError(500, "InternalError", f"Internal error occurred: {err}").status())

    # ---- non-resource ----------------------------------------------------------------------------

    def _non_resource(self, method: str, path: str, headers: Any) -> Response:
        clean = "/" + path.strip("/")
        if clean in ("/healthz", "/livez", "/readyz") or clean.startswith(("/healthz/", "/livez/", "/readyz/")):
            return Response(200, raw=b"ok", content_type="text/plain; charset=utf-8")
        if method != "GET":
            return Response(405, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                  "message": "the server does not allow this method on the requested resource",
                                  "reason": "MethodNotAllowed", "code": 405})
        infos = self.registry.all()
        if clean == "/openapi/v2":
            module = _optional_module("openapi")
            answer = module.openapi_v2(clean, headers.get("Accept", "") or "") \
                if module is not None and hasattr(module, "openapi_v2") else None
            if answer is None:
                return Response(404, raw=b"404 page not found\n", content_type="text/plain; charset=utf-8")
            return Response(200, raw=answer[0], content_type=answer[1])
        if clean.startswith("/openapi/"):
            module = _optional_module("openapi")
            document = module.openapi_v3(clean, infos) if module is not None else None
        else:
            module = _optional_module("discovery")
            document = module.discovery_document(clean, infos, dict(VERSION_INFO)) if module is not None \
                else (dict(VERSION_INFO) if clean == "/version" else None)
        if document is None:
            return Response(404, raw=b"404 page not found\n", content_type="text/plain; charset=utf-8")
        return Response(200, document)

    # ---- resources -------------------------------------------------------------------------------

    def _resource(self, method: str, target: Target, query: dict[str, str], headers: Any, body: bytes,
                  user: User) -> Response:
        info = self.registry.lookup(target.group, target.version, target.resource)
        if info is None or (target.namespace is not None and not info.namespaced):
            raise _not_served()
        if target.subresource and target.subresource not in info.subresources:
            raise _not_served()
        watch = query.get("watch") in ("1", "true") or target.watch_prefix
        verb = verb_of(method, target, watch)
        if verb not in ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"):
            raise _method_not_allowed()
        namespace = target.namespace or ""
        if info.namespaced and target.namespace is None and (target.name or verb not in ("list", "watch")):
            raise _not_served()
        self._authorize(user, verb, info, target.subresource, namespace, target.name or _selected_name(verb, query))
        ctx = Context(user.name, user.groups, self._field_validation(query), query.get("dryRun") == "All")
        response = self._dispatch(method, verb, info, target, namespace, query, headers, body, ctx, user)
        response.warnings += ctx.warnings
        return response

    def _field_validation(self, query: dict[str, str]) -> str:
        value = query.get("fieldValidation", "Warn") or "Warn"
        if value not in _FIELD_VALIDATION:
            raise ApiError(400, "BadRequest", f'fieldValidation: Invalid value: "{value}": fieldValidation must be '
                           'one of "Ignore", "Warn", or "Strict"')
        return value

    def authorize_attributes(self, user: User, verb: str, group: str, resource: str, subresource: str,
                             namespace: str, name: str) -> tuple[bool, str]:
        if "system:masters" in user.groups:
            return True, ""
        module = _optional_module("rbac")
        if module is None:
            return True, ""
        return module.authorize(user.name, list(user.groups), verb, group, resource, subresource, namespace,
                                name, self.api.stored_objects)

    def _authorize(self, user: User, verb: str, info: ResourceInfo, subresource: str, namespace: str,
                   name: str) -> None:
        allowed, reason = self.authorize_attributes(user, verb, info.group, info.plural, subresource, namespace,
                                                    name)
        if allowed:
            return
        module = _optional_module("rbac")
        if module is not None and hasattr(module, "forbidden_error"):
            raise module.forbidden_error(user.name, verb, info.group, info.plural, subresource, namespace, name,
                                         reason)
        resource = info.plural + (f"/{subresource}" if subresource else "")
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        head = f'{info.group_resource} "{name}"' if name else info.group_resource
        message = (f'{head} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" in API group '
                   f'"{info.group}" {scope}' + (f": {reason}" if reason else ""))
        raise ApiError(403, "Forbidden", message, {"name": name, "group": info.group, "kind": info.plural}
                       if name else {"group": info.group, "kind": info.plural})

    def _dispatch(self, method: str, verb: str, info: ResourceInfo, target: Target, namespace: str,
                  query: dict[str, str], headers: Any, body: bytes, ctx: Context, user: User) -> Response:
        sub, name = target.subresource, target.name
        accept = headers.get("Accept", "") or ""
        if verb == "list":
            return Response(200, self._as_requested(info, self.api.list(info, namespace, query), accept, query,
                                                    listed=True))
        if verb == "watch":
            return self._watch(info, namespace, query, accept)
        if verb == "get":
            if sub == "scale":
                return Response(200, subresources.get_scale(self.api, info, namespace, name))
            if sub == "log":
                return self._log(info, namespace, name, query)
            return Response(200, self._as_requested(info, self.api.get(info, namespace, name), accept, query))
        if verb == "create":
            return self._create(info, target, namespace, query, headers, body, ctx, user)
        if verb == "update":
            document = _decode(headers, body)
            if sub == "scale":
                return Response(200, subresources.update_scale(self.api, info, namespace, name, document, ctx))
            if sub == "finalize":
                obj, _ = self.api.update(info, namespace, name, document, ctx, None, body)
                return Response(200, obj)
            obj, created = self.api.update(info, namespace, name, document, ctx, sub or None, body)
            return Response(201 if created else 200, obj)
        if verb == "patch":
            content_type = _media_type(headers)
            if sub == "scale":
                return Response(200, subresources.patch_scale(self.api, info, namespace, name, content_type, body,
                                                              ctx))
            return Response(200, self.api.patch(info, namespace, name, content_type, body, ctx, sub or None))
        options = _delete_options(query, headers, body)
        ctx.dry_run = ctx.dry_run or options.get("dryRun") == ["All"]
        if verb == "delete":
            return Response(200, self.api.delete(info, namespace, name, options, ctx))
        return Response(200, self.api.delete_collection(info, namespace, query, options, ctx))

    def _create(self, info: ResourceInfo, target: Target, namespace: str, query: dict[str, str], headers: Any,
                body: bytes, ctx: Context, user: User) -> Response:
        document = _decode(headers, body)
        sub, name = target.subresource, target.name
        if info.plural == "bindings" or sub == "binding":
            pods = self.registry.lookup("", "v1", "pods")
            assert pods is not None
            pod_name = name or ((document or {}).get("metadata") or {}).get("name", "")
            return Response(201, subresources.bind_pod(self.api, pods, namespace, pod_name, document))
        if sub == "token":
            return Response(201, subresources.request_token(self.api, info, self.authenticator, namespace, name,
                                                            document))
        if info.plural == "selfsubjectaccessreviews":
            decide: Callable[..., tuple[bool, str]] = self.authorize_attributes
            return Response(201, subresources.self_subject_access_review(user, document, decide))
        if name:
            raise _method_not_allowed()
        return Response(201, self.api.create(info, namespace, document, ctx, body))

    def _log(self, info: ResourceInfo, namespace: str, name: str, query: dict[str, str]) -> Response:
        watcher: list[Callable[[], bool]] = [lambda: False]
        chunks: Iterator[bytes] = subresources.pod_log(self.api, info, self.state_dir, namespace, name, query,
                                                       lambda: watcher[0]())
        first = next(chunks, b"")          # errors (no container, not started) before the 200

        def stream(write: Writer, client_gone: Callable[[], bool]) -> None:
            watcher[0] = client_gone
            if first:
                write(first)
            for chunk in chunks:
                write(chunk)

        return Response(200, content_type="text/plain", stream=stream)

    def _watch(self, info: ResourceInfo, namespace: str, query: dict[str, str], accept: str) -> Response:
        if query.get("sendInitialEvents") in ("true", "1"):
            raise ApiError(422, "Invalid", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch "
                           "unless the WatchList feature gate is enabled")
        strategy = self.registry.strategy(info)
        selection = make_filter(namespace if info.namespaced else "", query, strategy.field_selectors)
        if query.get("resourceVersion", "") not in ("", "0"):
            parse_rv(query["resourceVersion"])          # refused with a 400 before the stream starts
        if query.get("timeoutSeconds"):
            parse_rv(query["timeoutSeconds"], "timeoutSeconds")
        transform = None
        table_module = _optional_module("tables") if _wants_table(accept) else None
        if table_module is not None:
            # refused with a 400 before the stream starts, as the real server checks TableOptions
            table_module.include_object_policy(query.get("includeObject", ""))
            first = [True]

            def as_table(obj: dict[str, Any]) -> dict[str, Any]:
                table = table_module.to_table(info, [self.api.output(info, obj)],
                                              include_object=query.get("includeObject", "Metadata"),
                                              list_metadata={})
                if not first[0]:
                    table["columnDefinitions"] = []
                first[0] = False
                return table
            transform = as_table
        elif info.crd is not None:
            def as_version(obj: dict[str, Any]) -> dict[str, Any]:
                return self.api.output(info, obj)
            transform = as_version if any(v["name"] != info.version for v in info.crd["spec"]["versions"]) \
                else None

        def stream(write: Writer, client_gone: Callable[[], bool]) -> None:
            serve_watch(self.store, resource_key(info), info, selection, query, write, client_gone,
                        self.bookmark_interval, transform)

        return Response(200, stream=stream)

    def _as_requested(self, info: ResourceInfo, obj: dict[str, Any], accept: str, query: dict[str, str],
                      listed: bool = False) -> dict[str, Any]:
        """JSON as stored, or a meta.k8s.io/v1 Table when the client asks for one first."""
        if not _wants_table(accept):
            return obj
        module = _optional_module("tables")
        if module is None:
            return obj
        items = obj["items"] if listed else [obj]
        return module.to_table(info, items, include_object=query.get("includeObject", "Metadata"),
                               list_metadata=obj["metadata"] if listed else {})


def _selected_name(verb: str, query: dict[str, str]) -> str:
    """A list or watch pinned to one name by `metadata.name=X` is authorized for that name, as on the
    real server (so resourceNames rules allow it)."""
    if verb not in ("list", "watch"):
        return ""
    for part in query.get("fieldSelector", "").split(","):
        key, _, value = part.partition("=")
        if key.strip() == "metadata.name" and not value.startswith("="):
            return value.strip()
        if key.strip() == "metadata.name" and value.startswith("="):
            return value[1:].strip()
    return ""


def _wants_table(accept: str) -> bool:
    for entry in accept.split(","):
        params = [p.strip() for p in entry.split(";")]
        if "as=Table" in params:
            return True
        if params[0] in ("application/json", "*/*", "application/*") and not any(p.startswith("as=") for p in params):
            return False
    return False


def _media_type(headers: Any) -> str:
    return (headers.get("Content-Type") or "").split(";")[0].strip().lower()


def _decode(headers: Any, body: bytes) -> Any:
    """A request body in JSON (or YAML, which the real server also takes)."""
    media = _media_type(headers)
    if not body:
        raise ApiError(400, "BadRequest", "the request body is empty: an object is required")
    try:
        if media in ("application/yaml", "application/x-yaml", "text/yaml"):
            return yaml.safe_load(body)
        if media not in ("", "application/json", "*/*"):
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                           "accepted media types include: application/json, application/yaml"
                           + (" (this API server does not decode protobuf bodies)" if "protobuf" in media else ""))
        return json.loads(body)
    except (ValueError, yaml.YAMLError) as err:
        raise ApiError(400, "BadRequest", f"the body of the request could not be decoded: {err}") from err


def _delete_options(query: dict[str, str], headers: Any, body: bytes) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if body.strip():
        decoded = _decode(headers, body)
        if not isinstance(decoded, dict):
            raise ApiError(400, "BadRequest", "the body of a DELETE must be a DeleteOptions object")
        options.update(decoded)
    if "gracePeriodSeconds" in query:
        try:
            options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
        except ValueError as err:
            raise ApiError(400, "BadRequest", f'gracePeriodSeconds: Invalid value: "{query["gracePeriodSeconds"]}"'
                           ) from err
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = query["orphanDependents"] in ("true", "1")
    grace = options.get("gracePeriodSeconds")
    if grace is not None and (not isinstance(grace, int) or isinstance(grace, bool)):
        raise ApiError(400, "BadRequest", "gracePeriodSeconds must be an integer")
    return options


def _not_served() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def _method_not_allowed() -> ApiError:
    return ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
