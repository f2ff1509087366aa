"""A cycle's scans of many repositories behind one pull secret read the Secret once: the real
registry with htpasswd, the Secret served by the Kubernetes API fake (requests counted)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from argocd_image_updater.controller.credentials import CredentialsCache
from argocd_image_updater.controller.secrets import KubeSecretReader
from argocd_image_updater.kube.client import KubeClient
from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.scanner import Scanner, ScanRequest
from argocd_image_updater_testing import objects
from argocd_image_updater_testing.kube import KubeApiServer
from argocd_image_updater_testing.push import ImagePusher
from argocd_image_updater_testing.registry import RegistryServer

NS = "apps"
CREATED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def test_a_cycle_reads_a_shared_pull_secret_once_and_the_next_cycle_again(
    basic_registry: RegistryServer, endpoint_for: object, repo: str, tmp_path: Path
) -> None:
    (user, password), *_ = basic_registry.users.items()
    repos = [f"{repo}-{n}" for n in range(12)]
    async with ImagePusher(basic_registry.url, credentials=Credentials(user, password)) as pusher:
        for name in repos:
            await pusher.push_image(name, "1.0", created=CREATED)
    host = basic_registry.url.removeprefix("http://").removeprefix("https://")
    config = objects.dockerconfig_json({host: (user, password)})
    async with KubeApiServer() as api:
        api.store.put(objects.secret("pull", NS, {".dockerconfigjson": config}))
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig", namespace=NS)
        async with await KubeClient.connect(str(kubeconfig)) as kube:
            cache = CredentialsCache(KubeSecretReader(kube))
            endpoint = endpoint_for(basic_registry)  # type: ignore[operator]
            scanner = Scanner()

            async def cycle() -> list[list[str]]:
                cache.new_round()
                scan_round = scanner.new_round()
                results = await asyncio.gather(
                    *(
                        scanner.scan(
                            ScanRequest(
                                endpoint,
                                name,
                                credentials=cache.for_job(endpoint, f"pullsecret:{NS}/pull", NS),
                            ),
                            scan_round,
                        )
                        for name in repos
                    )
                )
                return [[info.name for info in result.tags] for result in results]

            try:
                assert await cycle() == [["1.0"]] * len(repos)
                assert api.request_count("get", "secrets") == 1  # not one per repository
                assert await cycle() == [["1.0"]] * len(repos)
                assert api.request_count("get", "secrets") == 2  # the next cycle reads it again
            finally:
                await scanner.aclose()
