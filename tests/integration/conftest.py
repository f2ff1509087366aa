"""Real registries for integration tests: one set of servers per pytest(-xdist) worker.

* ``registry`` — plain HTTP, anonymous;
* ``basic_registry`` — htpasswd (bcrypt) Basic auth, user :data:`USER` / :data:`PASSWORD`;
* ``tls_registry`` — HTTPS with a certificate from a ``trustme`` CA (``.tls.ca`` is the CA PEM);
* ``token_registry`` — Bearer token auth backed by a :class:`TokenServer` (same user);
* ``proxy`` — factory for a :class:`FaultyProxy` in front of any of them (per test);
* ``repo`` — a fresh repository name (tests share the servers); ``endpoint_for`` — endpoints.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import trustme

from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater_testing.faulty_proxy import FaultyProxy
from argocd_image_updater_testing.registry import RegistryServer, TlsFiles, TokenAuth
from argocd_image_updater_testing.token_server import TokenServer

USER = "alice"
PASSWORD = "wonderland-Pa55word"
TOKEN_SERVICE = "test-registry"
TOKEN_ISSUER = "test-issuer"


def _endpoint_for(target: str | RegistryServer | FaultyProxy, **settings: Any) -> RegistryEndpoint:
    url = target if isinstance(target, str) else target.url
    host = url.split("://", 1)[1]
    return replace(RegistryEndpoint(prefix=host, name=host, api_url=url), **settings)


EndpointFactory = Callable[..., RegistryEndpoint]


@pytest.fixture
def endpoint_for() -> EndpointFactory:
    """``endpoint_for(server_or_proxy_or_url, **fields)`` → a registries.conf-like endpoint."""
    return _endpoint_for


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def repo() -> str:
    """A repository name no other test uses (the servers are shared)."""
    return f"test/r{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class TokenRegistry:
    registry: RegistryServer
    tokens: TokenServer

    @property
    def url(self) -> str:
        return self.registry.url


@pytest.fixture(scope="session")
def registry() -> Iterator[RegistryServer]:
    with RegistryServer() as server:
        yield server


@pytest.fixture(scope="session")
def basic_registry() -> Iterator[RegistryServer]:
    with RegistryServer(users={USER: PASSWORD}) as server:
        yield server


@pytest.fixture(scope="session")
def tls_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    directory: Path = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(directory / "server.crt", directory / "server.key", directory / "ca.pem")
    cert.private_key_pem.write_to_path(str(files.key))
    cert.cert_chain_pems[0].write_to_path(str(files.certificate))
    ca.cert_pem.write_to_path(str(files.ca))
    with RegistryServer(tls=files) as server:
        yield server


@pytest.fixture(scope="session")
def token_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TokenRegistry]:
    directory: Path = tmp_path_factory.mktemp("token")
    with TokenServer({USER: PASSWORD}, service=TOKEN_SERVICE, issuer=TOKEN_ISSUER) as tokens:
        auth = TokenAuth(
            realm=tokens.realm,
            service=TOKEN_SERVICE,
            issuer=TOKEN_ISSUER,
            rootcertbundle=tokens.write_rootcertbundle(directory / "token-signing.crt"),
        )
        with RegistryServer(token=auth) as server:
            yield TokenRegistry(server, tokens)


ProxyFactory = Callable[[str | RegistryServer], Awaitable[FaultyProxy]]


@pytest.fixture
async def proxy() -> AsyncIterator[ProxyFactory]:
    """``await proxy(upstream)`` starts a fresh :class:`FaultyProxy`; all are stopped after."""
    started: list[FaultyProxy] = []

    async def make(upstream: str | RegistryServer) -> FaultyProxy:
        url = upstream if isinstance(upstream, str) else upstream.url
        started.append(await FaultyProxy(url).start())
        return started[-1]

    yield make
    for p in started:
        await p.stop()
