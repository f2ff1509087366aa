"""An Argo CD API server stand-in: the REST (grpc-gateway) endpoints the product uses.

``GET /api/v1/applications``, ``GET /api/v1/applications/{name}``,
``PUT /api/v1/applications/{name}/spec`` and ``PATCH /api/v1/applications/{name}``, with Bearer
token auth, per-token project access, errors shaped like grpc-gateway's
(``{"error", "code", "message"}``), and request bodies checked against the definitions of Argo
CD's own API description (unknown fields and wrong types are a 400 naming the field). The
Applications live in a :class:`KubeStore`, which may be shared with a :class:`KubeApiServer`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import fnmatch
import functools
import json
import re
import ssl
from collections.abc import Collection, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from argocd_image_updater_testing.kube import (
    JSON,
    KubeError,
    KubeStore,
    LabelSelector,
    ServedApp,
    json_patch,
    merge_patch,
)

# gRPC status codes and the HTTP status grpc-gateway maps them to
INVALID_ARGUMENT: Final = 3
NOT_FOUND: Final = 5
PERMISSION_DENIED: Final = 7
ABORTED: Final = 10
UNAUTHENTICATED: Final = 16
_HTTP_STATUS: Final = {
    2: 500,
    3: 400,
    4: 504,
    5: 404,
    6: 409,
    7: 403,
    8: 429,
    9: 400,
    10: 409,
    12: 501,
    13: 500,
    14: 503,
    16: 401,
}
_GRPC_CODE: Final = {http: code for code, http in reversed(_HTTP_STATUS.items())}
_KUBE_TO_GRPC: Final = {400: 3, 403: 7, 404: 5, 409: 10, 410: 9, 422: 3, 429: 8, 503: 14}
# definitions whose JSON form is not what the protobuf-derived description says
_ANY_JSON: Final = frozenset({"v1JSON", "runtimeRawExtension"})
_DATE_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")


class ArgoError(Exception):
    """A failed call, answered like grpc-gateway: ``{"error", "code", "message"}``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message

    def response(self) -> web.Response:
        body = {"error": self.message, "code": self.code, "message": self.message}
        return web.json_response(body, status=_HTTP_STATUS.get(self.code, 500))


@functools.cache
def swagger_definitions() -> Mapping[str, Any]:
    """The ``definitions`` of Argo CD's REST API description (shipped in ``data/``)."""
    text = resources.files("argocd_image_updater_testing.data").joinpath("argocd-api-swagger.json")
    definitions: Mapping[str, Any] = json.loads(text.read_text())["definitions"]
    return definitions


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {str: "string", float: "number", list: "array", dict: "object"}.get(type(value), "null")


def check_body(definition: str, value: Any, path: str = "", *, strict: bool = True) -> list[str]:
    """Problems of ``value`` as the JSON form of swagger ``definition``; each names its field.
    ``strict``: unknown fields are problems too."""
    problems: list[str] = []
    _check(
        swagger_definitions(),
        {"$ref": f"#/definitions/{definition}"},
        value,
        path,
        strict,
        problems,
    )
    return problems


def _check(
    defs: Mapping[str, Any], schema: Any, value: Any, path: str, strict: bool, out: list[str]
) -> None:
    if value is None:  # JSON null leaves a Go field at its zero value
        return
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name in _ANY_JSON:
            return
        if name == "intstrIntOrString":
            if _json_type(value) not in ("integer", "string"):
                out.append(f'field "{path}": expected integer or string, got {_json_type(value)}')
            return
        schema = defs[name]
    expected = schema.get("type", "object")
    actual = _json_type(value)
    if expected != actual and not (expected == "number" and actual == "integer"):
        out.append(f'field "{path or "body"}": expected {expected}, got {actual}')
        return
    prefix = f"{path}." if path else ""
    if isinstance(value, dict):
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if props else None
            sub = sub if sub is not None else extra if isinstance(extra, Mapping) else None
            if sub is not None:
                _check(defs, sub, item, f"{prefix}{key}", strict, out)
            elif props and strict:
                out.append(f'unknown field "{prefix}{key}"')
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check(defs, schema["items"], item, f"{path}[{i}]", strict, out)
    elif isinstance(value, str) and schema.get("format") == "byte":
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            out.append(f'field "{path}": not base64 data')
    elif (
        isinstance(value, str)
        and schema.get("format") == "date-time"
        and not _DATE_TIME.match(value)
    ):
        out.append(f'field "{path}": not an RFC 3339 time: {value!r}')


def _strip(app: JSON) -> JSON:
    """An Application as Argo CD returns it (from its informer: no apiVersion/kind)."""
    return {k: v for k, v in app.items() if k not in ("apiVersion", "kind")}


class ArgoCDApiServer(ServedApp):
    """The Argo CD API fake.

    ``tokens`` maps each accepted Bearer token to the projects it may see and change (glob
    patterns; ``None``: all). ``namespace`` is the control plane's namespace (the default
    ``appNamespace``); ``app_namespaces`` are the other namespaces Applications may live in.
    ``certfile``/``keyfile`` serve HTTPS."""

    def __init__(
        self,
        store: KubeStore | None = None,
        *,
        tokens: Mapping[str, Collection[str] | None] | None = None,
        namespace: str = "argocd",
        app_namespaces: Iterable[str] = (),
        certfile: str | Path | None = None,
        keyfile: str | Path | None = None,
    ) -> None:
        context = None
        if certfile is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(certfile, keyfile)
        super().__init__(ssl_context=context)
        self.store = store or KubeStore(namespaces=[namespace, *app_namespaces])
        self.apps = self.store.resolve("applications")
        self.tokens = dict(tokens) if tokens is not None else {"argocd-token": None}
        self.namespace = namespace
        self.app_namespaces = frozenset([namespace, *app_namespaces])

    def build_app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors])
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/api/v1/applications", self._list)
        app.router.add_get("/api/v1/applications/{name}", self._get)
        app.router.add_patch("/api/v1/applications/{name}", self._patch)
        app.router.add_put("/api/v1/applications/{name}/spec", self._update_spec)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except ArgoError as exc:
            return exc.response()
        except web.HTTPMethodNotAllowed:
            return ArgoError(12, "Method Not Allowed").response()
        except web.HTTPNotFound:
            return ArgoError(NOT_FOUND, "Not Found").response()

    # -- access --

    async def _begin(
        self, request: web.Request, verb: str, resource: str
    ) -> Collection[str] | None:
        """Count, inject faults, authenticate; the projects the caller may access."""
        fault = await self._account(verb, resource)
        if fault is not None:
            code = _GRPC_CODE.get(fault.status, 2)
            raise ArgoError(code, fault.message or f"injected failure ({fault.status})")
        header = request.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else request.cookies.get("argocd.token")
        if not token:
            raise ArgoError(UNAUTHENTICATED, "no session information")
        if token not in self.tokens:
            raise ArgoError(UNAUTHENTICATED, "invalid session: token signature is invalid")
        return self.tokens[token]

    @staticmethod
    def _may(projects: Collection[str] | None, project: str) -> bool:
        return projects is None or any(fnmatch.fnmatchcase(project, p) for p in projects)

    def _app_namespace(self, given: str | None) -> str:
        namespace = given or self.namespace
        if namespace not in self.app_namespaces:
            raise ArgoError(
                PERMISSION_DENIED, f"namespace '{namespace}' is not permitted for applications"
            )
        return namespace

    def _rbac_name(self, app: JSON) -> str:
        meta, project = app["metadata"], app.get("spec", {}).get("project", "default")
        if meta.get("namespace") == self.namespace:
            return f"{project}/{meta['name']}"
        return f"{project}/{meta.get('namespace')}/{meta['name']}"

    def _load(
        self,
        projects: Collection[str] | None,
        action: str,
        name: str,
        namespace: str,
        project: str | None = None,
    ) -> JSON:
        try:
            app = self.store.get(self.apps, namespace, name)
        except KubeError as exc:
            if exc.code == 404 and projects is not None:  # do not tell what exists
                message = f"permission denied: applications, {action}, {namespace}/{name}"
                raise ArgoError(PERMISSION_DENIED, message) from None
            raise _from_kube(exc) from None
        app_project = app.get("spec", {}).get("project", "")
        if not self._may(projects, app_project) or (project and project != app_project):
            message = f"permission denied: applications, {action}, {self._rbac_name(app)}"
            raise ArgoError(PERMISSION_DENIED, message)
        return app

    # -- handlers --

    async def _version(self, request: web.Request) -> web.Response:
        await self._begin(request, "get", "version")
        return web.json_response({"Version": "v3.1.0+sandbox"})

    async def _list(self, request: web.Request) -> web.Response:
        projects = await self._begin(request, "list", "applications")
        query = request.query
        try:
            selector = LabelSelector.parse(query.get("selector"))
        except KubeError as exc:
            raise ArgoError(
                INVALID_ARGUMENT, f"error parsing the selector: {exc.message}"
            ) from None
        wanted_ns = (
            self._app_namespace(query["appNamespace"]) if query.get("appNamespace") else None
        )
        wanted_projects = set(query.getall("projects", [])) | set(query.getall("project", []))
        repo = query.get("repo", "").removesuffix(".git").rstrip("/")
        items, rv = self.store.query(self.apps, wanted_ns)
        apps = []
        for app in items:
            spec = app.get("spec", {})
            repos = [
                s.get("repoURL", "") for s in [spec.get("source") or {}, *spec.get("sources", [])]
            ]
            if (
                _namespace(app) in self.app_namespaces
                and self._may(projects, spec.get("project", ""))
                and selector.matches(app["metadata"].get("labels") or {})
                and (not wanted_projects or spec.get("project") in wanted_projects)
                and (not repo or repo in [r.removesuffix(".git").rstrip("/") for r in repos])
            ):
                apps.append(_strip(app))
        if name := query.get("name"):
            apps = [a for a in apps if a["metadata"]["name"] == name]
            if not apps:
                raise ArgoError(NOT_FOUND, f"application '{name}' not found")
        apps.sort(key=lambda a: str(a["metadata"]["name"]))
        return web.json_response({"metadata": {"resourceVersion": rv}, "items": apps})

    async def _get(self, request: web.Request) -> web.Response:
        projects = await self._begin(request, "get", "applications")
        query = request.query
        namespace = self._app_namespace(query.get("appNamespace"))
        name = request.match_info["name"]
        app = self._load(projects, "get", name, namespace, query.get("project"))
        return web.json_response(_strip(app))

    async def _update_spec(self, request: web.Request) -> web.Response:
        projects = await self._begin(request, "update", "applications/spec")
        spec = await _json_body(request)
        problems = check_body("v1alpha1ApplicationSpec", spec, "spec")
        if problems or not isinstance(spec, dict):
            raise ArgoError(INVALID_ARGUMENT, "invalid request body: " + "; ".join(problems))
        query = request.query
        namespace = self._app_namespace(query.get("appNamespace"))
        name = request.match_info["name"]
        if query.get("validate", "true").lower() != "false":
            _validate_spec(name, spec)
        app = self._save(
            projects, name, namespace, query.get("project"), lambda a: {**a, "spec": spec}
        )
        return web.json_response(app.get("spec", {}))

    async def _patch(self, request: web.Request) -> web.Response:
        projects = await self._begin(request, "patch", "applications")
        body = await _json_body(request)
        problems = check_body("applicationApplicationPatchRequest", body)
        if problems or not isinstance(body, dict):
            raise ArgoError(INVALID_ARGUMENT, "invalid request body: " + "; ".join(problems))
        namespace = self._app_namespace(
            body.get("appNamespace") or request.query.get("appNamespace")
        )
        name = request.match_info["name"]
        patch_type = body.get("patchType") or "json"
        if patch_type not in ("json", "merge"):
            raise ArgoError(INVALID_ARGUMENT, f"Patch type '{patch_type}' is not supported")
        try:
            patch = json.loads(body.get("patch") or "null")
        except ValueError as exc:
            raise ArgoError(INVALID_ARGUMENT, f"invalid patch: {exc}") from None

        def apply(app: JSON) -> JSON:
            try:
                patched = (
                    json_patch(app, patch) if patch_type == "json" else merge_patch(app, patch)
                )
            except KubeError as exc:
                raise ArgoError(
                    INVALID_ARGUMENT, f"error applying the patch: {exc.message}"
                ) from None
            spec = patched.get("spec") if isinstance(patched, dict) else None
            found = check_body("v1alpha1ApplicationSpec", spec, "spec")
            if found or not isinstance(spec, dict):
                raise ArgoError(
                    INVALID_ARGUMENT, "invalid patched application: " + "; ".join(found)
                )
            meta = dict(app["metadata"])
            for key in ("labels", "annotations", "finalizers"):
                meta.pop(key, None)
                if patched["metadata"].get(key):
                    meta[key] = patched["metadata"][key]
            return {**app, "metadata": meta, "spec": spec}

        app = self._save(projects, name, namespace, body.get("project"), apply)
        return web.json_response(_strip(app))

    def _save(
        self,
        projects: Collection[str] | None,
        name: str,
        namespace: str,
        project: str | None,
        change: Any,
    ) -> JSON:
        """Apply ``change`` to the current Application and store it; on a conflict, again on a
        fresh copy (as Argo CD's server does, up to 10 times)."""
        for _ in range(10):
            app = self._load(projects, "update", name, namespace, project)
            new = change(copy.deepcopy(app))
            new_project = new.get("spec", {}).get("project", "")
            if not self._may(projects, new_project):
                message = f"permission denied: applications, update, {new_project}/{name}"
                raise ArgoError(PERMISSION_DENIED, message)
            try:
                return self.store.replace(self.apps, namespace, name, new)
            except KubeError as exc:
                if exc.code != 409:
                    raise _from_kube(exc) from None
        raise ArgoError(ABORTED, f"error updating application '{name}': too many conflicts")


def _namespace(app: JSON) -> str:
    return str(app["metadata"].get("namespace", ""))


def _from_kube(exc: KubeError) -> ArgoError:
    return ArgoError(_KUBE_TO_GRPC.get(exc.code, 2), exc.message)


def _validate_spec(name: str, spec: JSON) -> None:
    """The part of Argo CD's spec validation that needs no repository or cluster access."""
    destination = spec.get("destination") or {}
    if not destination.get("server") and not destination.get("name"):
        message = f"application destination spec for {name} is invalid: "
        raise ArgoError(INVALID_ARGUMENT, message + "Destination server missing from app spec")
    if not spec.get("source") and not spec.get("sources") and not spec.get("sourceHydrator"):
        message = f"application spec for {name} is invalid: InvalidSpecError: "
        raise ArgoError(INVALID_ARGUMENT, message + "spec.source or spec.sources must be set")


async def _json_body(request: web.Request) -> Any:
    raw = await request.read()
    try:
        return json.loads(raw) if raw else None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArgoError(INVALID_ARGUMENT, f"invalid request body: {exc}") from None
