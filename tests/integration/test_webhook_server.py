"""The webhook server over real HTTP(S): TLS, every type end to end, refusals, limits, coalescing."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import io
import json
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from argocd_image_updater.observe.log import ROOT, TextFormatter
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.webhook import RegistryEvent, sign_generic
from argocd_image_updater.webhook.dispatch import EventDispatcher
from argocd_image_updater.webhook.ratelimit import TokenBucket, WebhookRateLimiter, retry_after
from argocd_image_updater.webhook.server import WebhookServer
from argocd_image_updater.webhook.tls import (
    TLSConfigError,
    parse_tls_ciphers,
    parse_tls_version,
    self_signed_pem,
    server_ssl_context,
)

NOW = 1_700_000_000
SECRETS = {
    name: f"configured-secret-for-{name}"
    for name in (
        "acr",
        "aliyun-acr",
        "cloudevents",
        "docker.io",
        "generic",
        "ghcr.io",
        "harbor",
        "quay.io",
    )
}
NO_HANDLERS = (
    "no webhook handlers are registered; configure at least one *-webhook-secret "
    "or set --webhook-require-secret=false"
)
ECR_DIGEST = "sha256:" + "ab" * 32

PAYLOADS: dict[str, Any] = {
    "docker.io": {
        "push_data": {"tag": "v1.0.0"},
        "repository": {"repo_name": "myuser/myapp", "name": "myapp", "namespace": "myuser"},
    },
    "ghcr.io": {
        "action": "published",
        "package": {
            "name": "MyApp",
            "package_type": "CONTAINER",
            "owner": {"login": "MyUser"},
            "package_version": {"container_metadata": {"tag": {"name": "v1.0.0"}}},
        },
    },
    "quay.io": {
        "repository": "mynamespace/repository",
        "docker_url": "quay.io/mynamespace/repository",
        "updated_tags": ["latest"],
    },
    "harbor": {
        "type": "PUSH_ARTIFACT",
        "event_data": {
            "resources": [
                {
                    "digest": "sha256:abc123",
                    "tag": "v1.0.0",
                    "resource_url": "https://harbor.example.com/library/myapp:v1.0.0",
                }
            ],
            "repository": {"repo_full_name": "library/myapp"},
        },
    },
    "acr": {
        "action": "push",
        "target": {"repository": "hello-world", "tag": "test-v1", "digest": "sha256:c766"},
        "request": {"host": "mojrodevops.azurecr.io"},
    },
    "aliyun-acr": {
        "push_data": {"digest": "sha256:457f", "tag": "latest"},
        "repository": {"repo_full_name": "namespace/repoTest", "region": "cn-hangzhou"},
    },
    "cloudevents": {
        "specversion": "1.0",
        "id": "1",
        "source": "urn:aws:ecr:us-east-1:123456789012:repository/my-repo",
        "type": "com.amazon.ecr.image.push",
        "data": {"repositoryName": "my-repo", "imageTag": "v1.0.0", "imageDigest": ECR_DIGEST},
    },
    "generic": {
        "registry": "registry.example.com",
        "repository": "team/api",
        "tag": "2.4.1",
        "digest": "sha256:0123abcd",
    },
}
EXPECTED = {
    "docker.io": RegistryEvent("docker.io", "myuser/myapp", "v1.0.0", "", "docker.io"),
    "ghcr.io": RegistryEvent("ghcr.io", "myuser/myapp", "v1.0.0", "", "ghcr.io"),
    "quay.io": RegistryEvent("quay.io", "mynamespace/repository", "latest", "", "quay.io"),
    "harbor": RegistryEvent(
        "harbor.example.com", "library/myapp", "v1.0.0", "sha256:abc123", "harbor"
    ),
    "acr": RegistryEvent("mojrodevops.azurecr.io", "hello-world", "test-v1", "sha256:c766", "acr"),
    "aliyun-acr": RegistryEvent(
        "registry.cn-hangzhou.aliyuncs.com",
        "namespace/repoTest",
        "latest",
        "sha256:457f",
        "aliyun-acr",
    ),
    "cloudevents": RegistryEvent(
        "123456789012.dkr.ecr.us-east-1.amazonaws.com",
        "my-repo",
        "v1.0.0",
        ECR_DIGEST,
        "cloudevents",
    ),
    "generic": RegistryEvent(
        "registry.example.com", "team/api", "2.4.1", "sha256:0123abcd", "generic"
    ),
}


def signed_call(
    type_name: str, payload: Any, secret: str | None = None
) -> tuple[dict[str, str], dict[str, str], bytes]:
    """``(query, headers, body)`` of an authentic call of ``type_name`` carrying ``secret``."""
    secret = SECRETS[type_name] if secret is None else secret
    body = json.dumps(payload).encode()
    query = {"type": type_name}
    headers = {"Content-Type": "application/json"}
    if type_name in ("docker.io", "quay.io", "aliyun-acr", "cloudevents"):
        query["secret"] = secret
    elif type_name in ("harbor", "acr"):
        headers["Authorization"] = secret
    elif type_name == "ghcr.io":
        digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
        headers |= {"X-GitHub-Event": "package", "X-Hub-Signature-256": f"sha256={digest}"}
    elif type_name == "generic":
        headers |= {"X-Timestamp": str(NOW), "X-Signature-256": sign_generic(secret, NOW, body)}
    return query, headers, body


def docker_push(repository: str, tag: str = "v1") -> bytes:
    return json.dumps({"repository": {"repo_name": repository}, "push_data": {"tag": tag}}).encode()


# --------------------------------------------------------------------------- harness


@dataclass
class Recorder:
    """The dispatcher's handler: records events; ``gate`` (when set) holds calls until opened."""

    events: list[RegistryEvent] = field(default_factory=list)
    gate: asyncio.Event | None = None
    active: int = 0
    most_active: int = 0
    fail_first: bool = False

    async def __call__(self, event: RegistryEvent) -> None:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            self.events.append(event)
            if self.fail_first and len(self.events) == 1:
                raise RuntimeError("handler failure")
        finally:
            self.active -= 1


@dataclass
class Running:
    server: WebhookServer
    dispatcher: EventDispatcher
    recorder: Recorder
    client: httpx.AsyncClient
    url: str

    async def post(
        self,
        body: bytes,
        query: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        return await self.client.post(
            f"{self.url}/webhook",
            params=query or {},
            headers={"Content-Type": "application/json", **(headers or {})},
            content=body,
        )

    async def push(self, repository: str, tag: str = "v1") -> httpx.Response:
        secret = SECRETS["docker.io"]
        return await self.post(
            docker_push(repository, tag), {"type": "docker.io", "secret": secret}
        )


async def served_certificate(port: int) -> str:
    """The PEM certificate the server presents (read without verifying it)."""
    probe = ssl.create_default_context()
    probe.check_hostname = False
    probe.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=probe)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        assert writer.get_extra_info("ssl_object").version() == "TLSv1.3"
    finally:
        writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()
    return ssl.DER_cert_to_PEM_cert(der)


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path,
    *,
    tls: bool = False,
    secrets: dict[str, str] | None = None,
    require_secret: bool = True,
    rate_limit_per_hour: int = 0,
    per_source_per_minute: int = 0,
    coalesce_window: float = 30.0,
    max_pending: int = 1000,
    is_leader: Callable[[], bool] = lambda: True,
    recorder: Recorder | None = None,
    verify: ssl.SSLContext | None = None,
) -> AsyncIterator[Running]:
    recorder = recorder or Recorder()
    dispatcher = EventDispatcher(
        recorder, coalesce_window=coalesce_window, max_pending=max_pending, max_concurrency=4
    )
    server = WebhookServer(
        port=0,
        host="127.0.0.1",
        secrets=SECRETS if secrets is None else secrets,
        require_secret=require_secret,
        ssl_context=server_ssl_context(tmp_path / "tls") if tls else None,
        rate_limit_per_hour=rate_limit_per_hour,
        per_source_per_minute=per_source_per_minute,
        dispatcher=dispatcher,
        is_leader=is_leader,
        clock=lambda: float(NOW),
    )
    port = await server.start()
    try:
        if tls and verify is None:
            verify = ssl.create_default_context(cadata=await served_certificate(port))
        scheme = "https" if tls else "http"
        async with httpx.AsyncClient(verify=verify or True, timeout=10) as client:
            yield Running(server, dispatcher, recorder, client, f"{scheme}://127.0.0.1:{port}")
    finally:
        await server.stop()
        dispatcher.close()
        await dispatcher.drain()


@contextlib.contextmanager
def captured_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter())
    logger = logging.getLogger(ROOT)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def until(condition: Callable[[], bool], within: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


# --------------------------------------------------------------------------- TLS


async def test_tls_by_default_with_a_self_signed_certificate_for_localhost(tmp_path: Path) -> None:
    async with serving(tmp_path, tls=True) as running:
        assert running.url.startswith("https://")
        response = await running.client.get(f"{running.url}/healthz")
        assert (response.status_code, response.text) == (200, "OK")
        # The same certificate also verifies for the name localhost and the IPv4 address.
        host_check = ssl.create_default_context(
            cadata=await served_certificate(running.server.port)
        )
        _, writer = await asyncio.open_connection(
            "127.0.0.1", running.server.port, ssl=host_check, server_hostname="localhost"
        )
        assert writer.get_extra_info("ssl_object").selected_alpn_protocol() in (None, "http/1.1")
        writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()
        # Plain HTTP against the TLS port does not get an answer.
        async with httpx.AsyncClient(timeout=5) as plain:
            with pytest.raises(httpx.HTTPError):
                await plain.get(f"http://127.0.0.1:{running.server.port}/healthz")
        # An unconfigured client refuses the self-signed certificate.
        async with httpx.AsyncClient(timeout=5) as strict:
            with pytest.raises(httpx.ConnectError):
                await strict.get(f"{running.url}/healthz")


async def test_certificate_and_key_from_the_tls_directory(tmp_path: Path) -> None:
    ca = trustme.CA()
    issued = ca.issue_cert("localhost", "127.0.0.1")
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    issued.cert_chain_pems[0].write_to_path(str(tls_dir / "tls.crt"))
    issued.private_key_pem.write_to_path(str(tls_dir / "tls.key"))
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    async with serving(tmp_path, tls=True, verify=trusting) as running:
        response = await running.push("team/app")
        assert (response.status_code, response.text) == (200, "Webhook received and processing")


def _write_identity(tls_dir: Path, now: datetime, validity: timedelta) -> None:
    cert, key = self_signed_pem(now, validity)
    tls_dir.mkdir(exist_ok=True)
    (tls_dir / "tls.crt").write_bytes(cert)
    (tls_dir / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def test_unusable_certificate_files_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    tls_dir = tmp_path / "tls"
    _write_identity(tls_dir, datetime(2020, 1, 1, tzinfo=UTC), timedelta(days=1))
    with pytest.raises(TLSConfigError, match=r"tls\.crt: certificate expired on 2020-01-02"):
        server_ssl_context(tls_dir)
    _write_identity(tls_dir, datetime.now(UTC) + timedelta(days=30), timedelta(days=1))
    with pytest.raises(TLSConfigError, match="not valid before"):
        server_ssl_context(tls_dir)
    (tls_dir / "tls.crt").write_text("not a certificate")
    with pytest.raises(TLSConfigError, match="not a PEM certificate"):
        server_ssl_context(tls_dir)
    cert, _ = self_signed_pem()
    (tls_dir / "tls.crt").write_bytes(cert)  # valid, but the key belongs to another certificate
    with pytest.raises(TLSConfigError, match="matching the certificate"):
        server_ssl_context(tls_dir)
    (tls_dir / "tls.crt").write_bytes(b"")  # empty: falls back to a generated certificate
    assert server_ssl_context(tls_dir).minimum_version == ssl.TLSVersion.TLSv1_3


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("1.1", ssl.TLSVersion.TLSv1_1),
        ("1.2", ssl.TLSVersion.TLSv1_2),
        ("TLS1.2", ssl.TLSVersion.TLSv1_2),
        ("tls1.3", ssl.TLSVersion.TLSv1_3),
        (" 1.2 ", ssl.TLSVersion.TLSv1_2),
    ],
)
def test_tls_versions(text: str, expected: ssl.TLSVersion | None) -> None:
    assert parse_tls_version(text) == expected


@pytest.mark.parametrize("text", ["1.0", "1.4", "foo"])
def test_invalid_tls_versions_name_the_flag(text: str) -> None:
    with pytest.raises(TLSConfigError, match="--tlsmaxversion"):
        parse_tls_version(text, "--tlsmaxversion")


def test_tls_version_range_and_ciphers(tmp_path: Path) -> None:
    assert parse_tls_ciphers("") == []
    assert parse_tls_ciphers("TLS_AES_128_GCM_SHA256") == ["TLS_AES_128_GCM_SHA256"]
    two = " TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 : TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384:"
    assert len(parse_tls_ciphers(two)) == 2
    with pytest.raises(TLSConfigError, match=r"--tlsciphers.*NOT_A_REAL_CIPHER"):
        parse_tls_ciphers("NOT_A_REAL_CIPHER")
    with pytest.raises(TLSConfigError, match="cannot be higher than"):
        server_ssl_context(tmp_path, "1.3", "1.2")
    context = server_ssl_context(tmp_path, "1.2", "1.3", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    tls12 = [c["name"] for c in context.get_ciphers() if c["protocol"] == "TLSv1.2"]
    assert tls12 == ["ECDHE-ECDSA-AES256-GCM-SHA384"]
    with captured_logs() as logs:
        ignored = server_ssl_context(tmp_path, "1.3", "1.3", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA")
    assert "ignored when the minimum TLS version is 1.3" in logs.getvalue()
    assert "ECDHE-RSA-AES128-SHA" not in [c["name"] for c in ignored.get_ciphers()]


# --------------------------------------------------------------------------- every type


@pytest.mark.parametrize("type_name", sorted(PAYLOADS))
async def test_every_type_end_to_end_reaches_the_handler(tmp_path: Path, type_name: str) -> None:
    query, headers, body = signed_call(type_name, PAYLOADS[type_name])
    async with serving(tmp_path, tls=True) as running:
        response = await running.post(body, query, headers)
        assert (response.status_code, response.text) == (200, "Webhook received and processing")
        await running.dispatcher.drain()
        assert running.recorder.events == [EXPECTED[type_name]]


async def test_type_from_the_x_registry_type_header(tmp_path: Path) -> None:
    async with serving(tmp_path) as running:
        secret = SECRETS["docker.io"]
        headers = {"X-Registry-Type": "docker.io"}
        response = await running.post(docker_push("a/b", "v2"), {"secret": secret}, headers)
        assert response.status_code == 200
        await running.dispatcher.drain()
        assert [(e.repository, e.tag) for e in running.recorder.events] == [("a/b", "v2")]


@pytest.mark.parametrize("type_name", sorted(PAYLOADS))
async def test_a_bad_secret_is_refused_never_echoed_and_never_dispatched(
    tmp_path: Path, type_name: str
) -> None:
    guessed = "guessed-secret-value"
    query, headers, body = signed_call(type_name, PAYLOADS[type_name], secret=guessed)
    with captured_logs() as logs:
        async with serving(tmp_path) as running:
            response = await running.post(body, query, headers)
            await running.dispatcher.drain()
            assert running.recorder.events == []
    assert response.status_code == 400
    assert response.text in ("invalid webhook secret", "invalid webhook signature")
    text = logs.getvalue()
    assert "webhook_remote=127.0.0.1:" in text
    for secret in (guessed, SECRETS[type_name]):
        assert secret not in response.text and secret not in text


async def test_refusals_with_the_original_texts(tmp_path: Path) -> None:
    async with serving(tmp_path, secrets={}) as running:
        response = await running.push("a/b")
        assert (response.status_code, response.text) == (400, NO_HANDLERS)
    async with serving(tmp_path, secrets={}, require_secret=False) as running:
        response = await running.post(b"{}", {"type": "notarealregistry"})
        assert response.status_code == 400
        assert response.text.startswith("invalid registry type: notarealregistry.")
        response = await running.post(b"{}")
        assert response.text.startswith("missing registry type parameter. Supported types: acr")
        response = await running.post(b'{"invalid":"payload"}', {"type": "docker.io"})
        assert response.status_code == 400
        await running.dispatcher.drain()
        assert running.recorder.events == []
        assert metric(
            "argocd_image_updater_webhook_rejections_total",
            type="unknown",
            reason="unsupported-type",
        )


async def test_paths_methods_and_health(tmp_path: Path) -> None:
    async with serving(tmp_path) as running:
        health = await running.client.get(f"{running.url}/healthz")
        assert (health.status_code, health.text) == (200, "OK")
        assert (await running.client.get(f"{running.url}/webhook")).status_code == 405
        assert (await running.client.put(f"{running.url}/webhook")).status_code == 405
        assert (await running.client.post(f"{running.url}/elsewhere")).status_code == 404


async def test_an_oversized_body_is_refused_with_413(tmp_path: Path) -> None:
    limit = 1 << 20
    query = {"type": "docker.io", "secret": SECRETS["docker.io"]}

    async def chunked() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b" " * (limit // 4)

    async with serving(tmp_path) as running:
        response = await running.post(b" " * (limit + 1), query)
        assert response.status_code == 413 and "request body too large" in response.text
        streamed = await running.client.post(
            f"{running.url}/webhook", params=query, content=chunked()
        )
        assert streamed.status_code == 413
        padded = docker_push("a/b") + b" " * (limit - len(docker_push("a/b")))
        response = await running.post(padded, query)  # exactly the limit is still fine
        assert response.status_code == 200
        await running.dispatcher.drain()
        assert len(running.recorder.events) == 1


# --------------------------------------------------------------------------- limits


async def test_hourly_rate_limit_answers_429_after_n_events(tmp_path: Path) -> None:
    async with serving(tmp_path, rate_limit_per_hour=3) as running:
        statuses = [(await running.push(f"team/app{i}")).status_code for i in range(3)]
        assert statuses == [200, 200, 200]
        refused = await running.push("team/app4")
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1100  # a token every 1200 s
        await running.dispatcher.drain()
        assert len(running.recorder.events) == 3


async def test_per_source_limit(tmp_path: Path) -> None:
    async with serving(tmp_path, per_source_per_minute=2) as running:
        first = [(await running.push("team/app")).status_code for _ in range(2)]
        refused = await running.push("team/app")
        assert first == [200, 200] and refused.status_code == 429
        assert refused.headers["Retry-After"] == "30"
        assert (await running.client.get(f"{running.url}/healthz")).status_code == 200


def test_rate_limiter_buckets_refill_and_forget_old_sources() -> None:
    now = [0.0]
    limiter = WebhookRateLimiter(2, 1, max_sources=2, clock=lambda: now[0])
    assert [limiter.admit_event() for _ in range(2)] == [0.0, 0.0]
    assert limiter.admit_event() == pytest.approx(1800.0)
    now[0] = 1800.0
    assert limiter.admit_event() == 0.0
    assert limiter.admit_source("a") == 0.0 and limiter.admit_source("a") == pytest.approx(60.0)
    limiter.admit_source("b")
    limiter.admit_source("c")
    assert limiter.tracked_sources == 2
    assert WebhookRateLimiter(0, 0).admit_event() == 0.0
    assert retry_after(0.2) == "1" and retry_after(1199.5) == "1200"
    bucket = TokenBucket(1, 1.0, 0.0)
    assert bucket.take(0.0) == 0.0 and bucket.take(0.5) == pytest.approx(0.5)


# --------------------------------------------------------------------------- coalescing


async def test_a_burst_for_one_repository_makes_one_handler_call(tmp_path: Path) -> None:
    coalesced = metric(
        "argocd_image_updater_webhook_events_total", type="docker.io", result="coalesced"
    )
    handled = metric("argocd_image_updater_webhook_event_handling_seconds_count")
    async with serving(tmp_path) as running:
        for i in range(20):
            assert (await running.push("team/app", f"v{i}")).status_code == 200
        await running.dispatcher.drain()
        assert [(e.repository, e.tag) for e in running.recorder.events] == [("team/app", "v19")]
        await running.push("nginx", "a")
        await running.push("library/nginx", "b")  # the same Docker Hub repository
        await running.push("team/other", "c")
        await running.dispatcher.drain()
        tags = sorted(e.tag for e in running.recorder.events[1:])
        assert tags == ["b", "c"]
    after = metric(
        "argocd_image_updater_webhook_events_total", type="docker.io", result="coalesced"
    )
    assert after - coalesced == 20
    assert metric("argocd_image_updater_webhook_event_handling_seconds_count") - handled == 3


async def test_the_window_closes_by_itself(tmp_path: Path) -> None:
    async with serving(tmp_path, coalesce_window=0.05) as running:
        await running.push("team/app")
        await until(lambda: len(running.recorder.events) == 1)


def _event(repository: str, tag: str) -> RegistryEvent:
    return RegistryEvent("ghcr.io", repository, tag, source_type="ghcr.io")


async def test_events_during_a_running_call_make_one_follow_up_call() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate=gate)
    dispatcher = EventDispatcher(recorder, coalesce_window=0.0)
    assert dispatcher.submit(_event("o/app", "1"))
    await until(lambda: recorder.active == 1)
    for tag in ("2", "3", "4"):
        assert dispatcher.submit(_event("o/app", tag))
    gate.set()
    await dispatcher.drain()
    assert [e.tag for e in recorder.events] == ["1", "4"]


async def test_distinct_repositories_run_concurrently_up_to_the_limit() -> None:
    gate = asyncio.Event()
    recorder = Recorder(gate=gate)
    dispatcher = EventDispatcher(recorder, coalesce_window=0.0, max_concurrency=2)
    for name in ("a", "b", "c"):
        assert dispatcher.submit(_event(f"o/{name}", "1"))
    await until(lambda: recorder.active == 2)
    gate.set()
    await dispatcher.drain()
    assert recorder.most_active == 2
    assert sorted(e.repository for e in recorder.events) == ["o/a", "o/b", "o/c"]


async def test_a_failing_handler_does_not_stop_the_dispatcher() -> None:
    recorder = Recorder(fail_first=True)
    dispatcher = EventDispatcher(recorder, coalesce_window=0.0)
    with captured_logs() as logs:
        dispatcher.submit(_event("o/a", "1"))
        await dispatcher.drain()
    dispatcher.submit(_event("o/a", "2"))
    await dispatcher.drain()
    assert [e.tag for e in recorder.events] == ["1", "2"] and dispatcher.calls == 2
    assert "handler failure" in logs.getvalue()


async def test_accepted_calls_are_passed_on_and_events_passed_on_are_not_counted_again() -> None:
    recorder = Recorder()
    forwarded: list[RegistryEvent] = []
    dispatcher = EventDispatcher(recorder, coalesce_window=0.0, forward=forwarded.append)
    accepted = {"type": "ghcr.io", "result": "accepted"}
    before = REGISTRY.get_sample_value("argocd_image_updater_webhook_events_total", accepted)
    assert dispatcher.submit(_event("o/a", "1"))  # a webhook call: handled here and passed on
    await dispatcher.drain()
    assert dispatcher.submit(_event("o/b", "1"), forwarded=True)  # from another replica
    await dispatcher.drain()
    assert [e.repository for e in recorder.events] == ["o/a", "o/b"]
    assert [e.repository for e in forwarded] == ["o/a"]
    after = REGISTRY.get_sample_value("argocd_image_updater_webhook_events_total", accepted)
    assert (after or 0.0) - (before or 0.0) == 1


async def test_too_many_pending_keys_and_shutdown_answer_503(tmp_path: Path) -> None:
    async with serving(tmp_path, max_pending=1) as running:
        assert (await running.push("team/one")).status_code == 200
        assert (await running.push("team/one")).status_code == 200  # coalesces, no new key
        full = await running.push("team/two")
        assert (full.status_code, full.text) == (503, "too many pending events")
        running.dispatcher.close()
        closed = await running.push("team/one")
        assert closed.status_code == 503
        assert running.recorder.events == []


# --------------------------------------------------------------------------- leadership


async def test_a_follower_answers_503_and_dispatches_nothing(tmp_path: Path) -> None:
    leader = [False]
    async with serving(tmp_path, is_leader=lambda: leader[0]) as running:
        response = await running.push("team/app")
        assert (response.status_code, response.text) == (
            503,
            "not the leader; retry against the leader",
        )
        await running.dispatcher.drain()
        assert running.recorder.events == []
        leader[0] = True
        assert (await running.push("team/app")).status_code == 200
        await running.dispatcher.drain()
        assert len(running.recorder.events) == 1


async def test_unknown_secret_types_are_a_configuration_error() -> None:
    async def handler(_: RegistryEvent) -> None:
        return None

    dispatcher = EventDispatcher(handler)
    with pytest.raises(ValueError, match="'dockerhub'"):
        WebhookServer(
            port=0,
            secrets={"dockerhub": "x"},
            require_secret=True,
            ssl_context=None,
            rate_limit_per_hour=0,
            dispatcher=dispatcher,
        )
