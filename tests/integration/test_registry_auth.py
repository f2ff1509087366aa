"""Authentication against real registries: anonymous, htpasswd Basic, Bearer tokens."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.observe import log
from argocd_image_updater.registry.client import RegistryClient
from argocd_image_updater.registry.credentials import (
    EndpointCredentials,
)
from argocd_image_updater.registry.errors import RegistryAuthError
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

CREATED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


class SequenceCredentials:
    """A credential source that moves on to the next credentials after each invalidation."""

    def __init__(self, *sequence: Credentials, key: str = "test:sequence") -> None:
        self._sequence = sequence
        self._index = 0
        self._key = key
        self.invalidations = 0

    @property
    def key(self) -> str:
        return self._key

    async def get(self) -> Credentials | None:
        return self._sequence[self._index]

    def invalidate(self) -> bool:
        self.invalidations += 1
        if self._index + 1 < len(self._sequence):
            self._index += 1
            return True
        return False


def creds_of(
    server: RegistryServer | None = None, users: dict[str, str] | None = None
) -> Credentials:
    (user, password), *_ = (users or dict(server.users if server else {})).items()
    return Credentials(user, password)


@pytest.fixture
def trace_log() -> Iterator[io.StringIO]:
    """Everything the package logs at trace level during the test."""
    root = logging.getLogger(log.ROOT)
    saved = (root.handlers[:], root.level, root.propagate)
    out = io.StringIO()
    log.setup("trace", "text", out)
    try:
        yield out
    finally:
        root.handlers[:], root.level, root.propagate = saved


async def test_anonymous_registry_ping_and_list(registry, endpoint_for, repo):
    async with ImagePusher(registry.url) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    async with RegistryClient(endpoint_for(registry)) as client:
        await client.ping()
        assert await client.list_tags(repo) == ["1.0"]


async def test_basic_auth_ping_accepts_challenge_and_credentials_list_tags(
    basic_registry, endpoint_for, repo
):
    creds = creds_of(basic_registry)
    async with ImagePusher(basic_registry.url, credentials=creds) as pusher:
        await pusher.push_image(repo, "1.0", created=CREATED)
    provider = SequenceCredentials(creds)
    async with RegistryClient(endpoint_for(basic_registry)) as client:
        await client.ping()  # 401 is a valid v2 answer
        assert await client.list_tags(repo, provider) == ["1.0"]
        assert await client.list_tags(repo, provider) == ["1.0"]
        # The challenge was learned once: the second listing went out authorized up front.
        assert client.stats.snapshot() == {"ping": 1, "tags": 2}
    assert provider.invalidations == 0


async def test_basic_auth_without_credentials_is_a_clear_auth_error(
    basic_registry, endpoint_for, repo
):
    async with RegistryClient(endpoint_for(basic_registry)) as client:
        with pytest.raises(RegistryAuthError) as err:
            await client.list_tags(repo)
    message = str(err.value)
    assert basic_registry.host in message
    assert repo in message
    assert "requires credentials and none are configured" in message
    assert err.value.registry == basic_registry.host
    assert err.value.repository == repo


async def test_basic_auth_wrong_password_is_auth_error_without_leaking_it(
    basic_registry, endpoint_for, repo, trace_log
):
    user = creds_of(basic_registry).username
    wrong = SequenceCredentials(Credentials(user, "not-the-Password-123"))
    async with RegistryClient(endpoint_for(basic_registry)) as client:
        with pytest.raises(RegistryAuthError) as err:
            await client.list_tags(repo, wrong)
    assert err.value.status == 401
    assert "check the credentials" in str(err.value)
    assert wrong.invalidations == 1  # asked once whether refetching could help; it could not
    assert "not-the-Password-123" not in str(err.value) + repr(err.value)
    logged = trace_log.getvalue()
    assert "Registry HTTP request" in logged
    assert "not-the-Password-123" not in logged


async def test_bearer_token_flow_requests_pull_scope_and_reuses_token(
    token_registry, endpoint_for, repo, trace_log
):
    creds = creds_of(users=token_registry.tokens.users)
    async with ImagePusher(token_registry.url, credentials=creds) as pusher:
        digest = await pusher.push_image(repo, "1.0", created=CREATED)
    tokens = token_registry.tokens
    before = tokens.requests
    provider = SequenceCredentials(creds)
    async with RegistryClient(endpoint_for(token_registry.registry)) as client:
        assert await client.list_tags(repo, provider) == ["1.0"]
        manifest = await client.get_manifest(repo, "1.0", provider)
        assert manifest.digest == digest
        assert await client.head_digest(repo, "1.0", provider) == digest
        assert manifest.config is not None
        config = await client.get_config(repo, manifest.config.digest, provider)
    assert config.created == CREATED
    assert tokens.requests - before == 1  # one token for the repository, then from the cache
    assert tokens.granted[-1] == (creds.username, f"repository:{repo}:pull")
    logged = trace_log.getvalue()
    assert creds.password not in logged
    assert "eyJ" not in logged  # no JWT in any line


async def test_bearer_wrong_password_is_auth_error_naming_token_server(
    token_registry, endpoint_for, repo
):
    creds = creds_of(users=token_registry.tokens.users)
    wrong = SequenceCredentials(Credentials(creds.username, "wrong-password-xyz"))
    async with RegistryClient(endpoint_for(token_registry.registry)) as client:
        with pytest.raises(RegistryAuthError) as err:
            await client.list_tags(repo, wrong)
    assert "token server 127.0.0.1" in str(err.value)
    assert "refused the credentials" in str(err.value)


async def test_bearer_anonymous_refused_by_token_server(token_registry, endpoint_for, repo):
    async with RegistryClient(endpoint_for(token_registry.registry)) as client:
        with pytest.raises(RegistryAuthError):
            await client.list_tags(repo)


@pytest.mark.parametrize("kind", ["basic", "token"])
async def test_refused_credentials_are_refetched_and_retried_exactly_once(
    kind, basic_registry, token_registry, endpoint_for, repo
):
    server = basic_registry if kind == "basic" else token_registry.registry
    users = basic_registry.users if kind == "basic" else token_registry.tokens.users
    good = creds_of(users=dict(users))
    async with ImagePusher(server.url, credentials=good) as pusher:
        await pusher.push_image(repo, "2.0", created=CREATED)
    provider = SequenceCredentials(Credentials(good.username, "stale-password-1"), good)
    async with RegistryClient(endpoint_for(server)) as client:
        assert await client.list_tags(repo, provider) == ["2.0"]
        stats = client.stats.snapshot()
    assert provider.invalidations == 1
    if kind == "basic":
        # anonymous → challenge, stale creds → 401, refetched creds → 200
        assert stats == {"tags": 3}
    else:
        # anonymous → challenge, token refused, token with refetched creds, listing
        assert stats == {"tags": 2, "token": 2}


async def test_rotated_registry_credentials_are_picked_up_after_refusal(
    basic_registry, endpoint_for, repo, tmp_path
):
    """registries.conf ``credentials: ext:<script>``: the first answer is outdated."""
    good = creds_of(basic_registry)
    async with ImagePusher(basic_registry.url, credentials=good) as pusher:
        await pusher.push_image(repo, "3.0", created=CREATED)
    calls = tmp_path / "calls"
    script = tmp_path / "registry-creds.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"echo call >> '{calls}'\n"
        f"if [ \"$(wc -l < '{calls}')\" -eq 1 ]; then echo '{good.username}:rotated-away'; "
        f"else echo '{good.username}:{good.password}'; fi\n"
    )
    script.chmod(0o755)
    endpoint = endpoint_for(
        basic_registry, credentials=f"ext:{script}", creds_expire=timedelta(hours=1)
    )
    async with Scanner() as scanner:
        result = await scanner.scan(
            ScanRequest(endpoint, repo, credentials=EndpointCredentials(endpoint))
        )
    assert [t.name for t in result.tags] == ["3.0"]
    assert calls.read_text().count("call") == 2
