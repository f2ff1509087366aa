"""Secrets read once a round (:mod:`argocd_image_updater.controller.round_secrets`): the scans of
one cycle sharing a pull secret read it once, the next round reads it again, and a view
restricted to its tenant's namespace never gets another namespace's Secret from the shared
round."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping

import pytest

from argocd_image_updater.config.secrets import SecretError, SecretNotFound
from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.round_secrets import RoundSecrets
from argocd_image_updater.model.registry import Credentials, RegistryEndpoint
from argocd_image_updater.registry.credentials.errors import CredentialsError


class Secrets:
    """A reader over plain values, counting its reads; restricted as ``KubeSecretReader``."""

    def __init__(self, allowed: frozenset[str] | None = None, parent: Secrets | None = None):
        self.data: dict[tuple[str, str], dict[str, bytes]] = parent.data if parent else {}
        self.reads: list[tuple[str, str]] = parent.reads if parent else []
        self.allowed = allowed

    def restricted_to(self, *namespaces: str) -> Secrets:
        return Secrets(frozenset(namespaces), self)

    async def read(self, namespace: str, name: str) -> Mapping[str, bytes]:
        if self.allowed is not None and namespace not in self.allowed:
            raise SecretError(f"secret '{namespace}/{name}' is outside the allowed namespace(s)")
        self.reads.append((namespace, name))
        await asyncio.sleep(0)  # concurrent first reads overlap
        try:
            return self.data[(namespace, name)]
        except KeyError:
            raise SecretNotFound(namespace, name) from None


async def test_a_secret_is_read_once_a_round_by_concurrent_and_later_readers() -> None:
    reader = Secrets()
    reader.data[("apps", "pull")] = {"creds": b"a:b"}
    secrets = RoundSecrets(reader)

    def view() -> RoundSecrets:  # each provider has its own
        return secrets.restricted_to("apps")

    found = await asyncio.gather(*(view().read("apps", "pull") for _ in range(50)))
    assert found == [{"creds": b"a:b"}] * 50
    assert await view().read("apps", "pull") == {"creds": b"a:b"}
    assert reader.reads == [("apps", "pull")]
    reader.data[("apps", "pull")] = {"creds": b"a:rotated"}
    secrets.new_round()
    assert await view().read("apps", "pull") == {"creds": b"a:rotated"}
    assert reader.reads == [("apps", "pull")] * 2


async def test_a_failure_is_kept_for_the_round_only() -> None:
    reader = Secrets()
    secrets = RoundSecrets(reader)
    for _ in range(3):
        with pytest.raises(SecretNotFound):
            await secrets.restricted_to("apps").read("apps", "missing")
    assert reader.reads == [("apps", "missing")]
    reader.data[("apps", "missing")] = {"creds": b"a:b"}
    secrets.new_round()
    assert await secrets.restricted_to("apps").read("apps", "missing") == {"creds": b"a:b"}


async def test_a_view_asked_again_reads_fresh_and_the_round_keeps_that() -> None:
    """A provider reads again only after the registry refused what it read: then the Secret
    is read from the API, once for the providers asking at that moment, and kept."""
    reader = Secrets()
    reader.data[("apps", "pull")] = {"creds": b"a:old"}
    secrets = RoundSecrets(reader)
    refused = [secrets.restricted_to("apps") for _ in range(5)]
    for provider in refused:
        assert await provider.read("apps", "pull") == {"creds": b"a:old"}
    reader.data[("apps", "pull")] = {"creds": b"a:new"}  # rotated; the registry refuses a:old
    again = await asyncio.gather(*(provider.read("apps", "pull") for provider in refused))
    assert again == [{"creds": b"a:new"}] * 5
    assert await secrets.restricted_to("apps").read("apps", "pull") == {"creds": b"a:new"}
    assert reader.reads == [("apps", "pull")] * 2


async def test_a_view_never_gets_a_secret_its_restriction_refuses() -> None:
    reader = Secrets()
    reader.data[("team-a", "pull")] = {"creds": b"a:b"}
    secrets = RoundSecrets(reader)
    team_a, team_b = secrets.restricted_to("team-a"), secrets.restricted_to("team-b")
    assert await team_a.read("team-a", "pull") == {"creds": b"a:b"}
    with pytest.raises(SecretError, match="outside the allowed"):
        await team_b.read("team-a", "pull")  # read this round by team-a's view: still refused
    assert await secrets.restricted_to("team-a").read("team-a", "pull")  # shared under a's
    assert reader.reads == [("team-a", "pull")]


async def test_the_pull_secret_of_many_scans_is_read_once_a_cycle() -> None:
    reader = Secrets()
    auths = {"auths": {"registry.example": {"auth": base64.b64encode(b"robot:pw").decode()}}}
    reader.data[("apps", "pull")] = {".dockerconfigjson": json.dumps(auths).encode()}
    cache = CredentialsCache(reader)
    endpoint = RegistryEndpoint("registry.example", "private", "https://registry.example")

    async def scans() -> list[Credentials | None]:  # a provider per scan, as a cycle makes them
        providers = [cache.for_job(endpoint, "pullsecret:apps/pull", "apps") for _ in range(20)]
        return list(await asyncio.gather(*(provider.get() for provider in providers)))

    cache.new_round()
    assert await scans() == [Credentials("robot", "pw")] * 20
    assert reader.reads == [("apps", "pull")]
    cache.new_round()  # the next cycle: read again (a rotated Secret is used)
    assert await scans() == [Credentials("robot", "pw")] * 20
    assert reader.reads == [("apps", "pull")] * 2
    other = cache.for_job(endpoint, "pullsecret:apps/pull", "tenant-b")
    with pytest.raises(CredentialsError, match="outside the allowed"):
        await other.get()  # another tenant's scan: refused, though read this round
