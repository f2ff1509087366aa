"""What ``argocd-image-updater test IMAGE`` does: which tag would be chosen, without any cluster.

The command line (options and help) is :mod:`argocd_image_updater.cli.test_cmd`, which imports
this module only when the command runs, so that ``test --help`` stays instant.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.config.registries_file import RegistriesConfError, load_registries_conf
from argocd_image_updater.model.image import ImageRef, ImageRefError
from argocd_image_updater.model.platform import Platform, PlatformFilter, runtime_platform
from argocd_image_updater.model.registry import RegistryEndpoint
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.observe import log as logging_setup
from argocd_image_updater.observe.log import Logger, get_logger
from argocd_image_updater.policy.filters import parse_allow_tags
from argocd_image_updater.policy.min_age import TagAges, waiting_message
from argocd_image_updater.policy.select import (
    Policy,
    PolicyError,
    Selection,
    TagVerdict,
    choose,
    needs_metadata,
)
from argocd_image_updater.policy.strategies import parse_strategy
from argocd_image_updater.registry.cloud.detect import detect
from argocd_image_updater.registry.cloud.hosts import registry_host
from argocd_image_updater.registry.credentials.errors import CredentialsError
from argocd_image_updater.registry.errors import RegistryError
from argocd_image_updater.registry.scanner import Scanner, ScanRequest

# Loaded where they are used: credentials with a configured or detected login only, the verdict
# list with --explain only, and the signature checks with --verify-* only (cryptography).
if TYPE_CHECKING:
    from argocd_image_updater.config.secrets import SecretReader
    from argocd_image_updater.registry.credentials import EndpointCredentials
    from argocd_image_updater.verify.policy import TrustPolicy
    from argocd_image_updater.verify.verifier import Verdict

DEFAULT_REGISTRIES_CONF: Final = Path("/app/config/registries.conf")
EXIT_ERROR: Final = 1
EXIT_NO_CANDIDATE: Final = 3
EXIT_NOT_VERIFIED: Final = 5


class TestFailed(Exception):
    pass


def is_chart_reference(text: str) -> bool:
    """Whether ``text`` names a Helm chart (see :func:`argocd_image_updater.model.chart.
    is_chart_reference`); an image reference never contains ``://``, so only a text that does
    needs the chart module."""
    if "://" not in text:
        return False
    from argocd_image_updater.model.chart import is_chart_reference as names_a_chart

    return names_a_chart(text)


@dataclasses.dataclass(frozen=True, slots=True)
class TestOptions:
    """The options of one ``test`` run (see :mod:`argocd_image_updater.cli.test_cmd`)."""

    image: str
    semver_constraint: str = ""
    update_strategy: str = "semver"
    allow_tags: str = ""
    ignore_tags: tuple[str, ...] = ()
    platforms: tuple[str, ...] = ()
    registries_conf_path: str = ""
    credentials: str = ""
    rate_limit: float | None = None
    kubeconfig: str = ""
    secrets_dir: str = ""
    explain: bool = False
    cloud_credentials_auto: bool = True
    plain_http: bool = False
    verify_key: str = ""
    verify_cosign_repository: str = ""
    verify_identity: str = ""
    verify_issuer: str = ""
    verify_trusted_root: str = ""
    pin_digest: bool = False
    min_age: str = ""
    min_age_from: str = "seen"

    @property
    def verifies(self) -> bool:
        return bool(
            self.verify_key
            or self.verify_identity
            or self.verify_issuer
            or self.verify_trusted_root
        )


def load_registries(path: str, log: Logger) -> RegistryConfig:
    """The original's rule: an explicit path must load; otherwise the default path if present."""
    if path:
        return load_registries_conf(Path(path), missing_ok=False).config
    result = load_registries_conf(DEFAULT_REGISTRIES_CONF, missing_ok=True)
    if not result.missing:
        log.debug("loaded registry configuration from %s", str(DEFAULT_REGISTRIES_CONF))
    return result.config


async def secret_reader(opts: TestOptions) -> tuple[SecretReader | None, Any]:
    """A reader for ``secret:``/``pullsecret:`` references: files, or the Kubernetes API."""
    if opts.secrets_dir:
        from argocd_image_updater.config.secrets import FileSecretReader

        return FileSecretReader(opts.secrets_dir), None
    from argocd_image_updater.controller.secrets import KubeSecretReader
    from argocd_image_updater.kube.client import KubeClient

    kube = await KubeClient.connect(opts.kubeconfig)
    return KubeSecretReader(kube), kube


def choose_credentials(
    opts: TestOptions, endpoint: RegistryEndpoint, secrets: SecretReader | None
) -> tuple[EndpointCredentials | None, str]:
    """The credential provider for ``endpoint`` and a line saying where it comes from and why."""
    if endpoint.credentials:
        from argocd_image_updater.config.credentials import parse_credential_ref
        from argocd_image_updater.registry.credentials import EndpointCredentials

        ref = parse_credential_ref(endpoint.credentials)
        where = "--credentials" if opts.credentials else f"registries.conf entry '{endpoint.name}'"
        return EndpointCredentials(endpoint, secrets=secrets), f"{ref.key} (from {where})"
    if not opts.cloud_credentials_auto:
        return None, "none (anonymous; cloud login auto-detection is switched off)"
    found = detect(registry_host(endpoint.prefix, endpoint.host))
    if not found.reference:
        return None, found.reason
    from argocd_image_updater.registry.credentials import EndpointCredentials

    auto = dataclasses.replace(endpoint, credentials=found.reference)
    return EndpointCredentials(auto, auto_detected=True), found.reason


async def registry_access(
    opts: TestOptions, registries: RegistryConfig, registry: str, repository: str
) -> tuple[RegistryEndpoint, EndpointCredentials | None, Any]:
    """The endpoint serving ``repository`` with the command's overrides (``--credentials``,
    ``--rate-limit``, ``--plain-http``), its credentials (where they come from is printed with
    ``--explain``) and the Kubernetes client opened to read a Secret, if one was (the caller
    closes it after the scan)."""
    endpoint = registries.endpoint_for(registry, repository)
    if opts.credentials:
        endpoint = dataclasses.replace(endpoint, credentials=opts.credentials)
    if opts.rate_limit is not None:
        endpoint = dataclasses.replace(endpoint, limit=opts.rate_limit)
    if opts.plain_http:
        endpoint = dataclasses.replace(
            endpoint, api_url="http://" + endpoint.api_url.split("://", 1)[-1]
        )
    secrets: SecretReader | None = None
    kube: Any = None
    if endpoint.credentials:
        from argocd_image_updater.config.credentials import (
            CredentialKind,
            CredentialRefError,
            parse_credential_ref,
        )

        try:
            ref = parse_credential_ref(endpoint.credentials)
        except CredentialRefError as err:
            raise TestFailed(f"invalid credentials reference: {err}") from None
        if ref.kind in (CredentialKind.SECRET, CredentialKind.PULLSECRET):
            secrets, kube = await secret_reader(opts)
    credentials, source = choose_credentials(opts, endpoint, secrets)
    if opts.explain:
        click.echo(f"credentials: {source}")
    return endpoint, credentials, kube


def build_policy(opts: TestOptions, image: ImageRef, log: Logger) -> Policy:
    strategy, warning = parse_strategy(opts.update_strategy)
    allow = parse_allow_tags(opts.allow_tags)
    for flag, problem in (("--update-strategy", warning), ("--allow-tags", allow.error)):
        if problem:
            log.warning(problem, field=flag)
            if opts.explain:
                click.echo(f"warning: {flag}: {problem}")
    platforms: list[Platform | str] = list(opts.platforms) or [runtime_platform()]
    try:
        min_age = parse_go_duration(opts.min_age) if opts.min_age else None
    except DurationError as err:
        raise PolicyError(f"--min-age: {err}") from None
    policy = Policy(
        strategy=strategy,
        constraint=opts.semver_constraint,
        allow=allow,
        ignore=opts.ignore_tags,
        platforms=PlatformFilter(platforms),
        min_age=min_age,
        min_age_from_created=opts.min_age_from == "created",
    )
    policy.validate(image.original or str(image))
    return policy


@dataclasses.dataclass(frozen=True, slots=True)
class Explained:
    """The choice with what it was made from (``--explain`` orders the tags by the policy)."""

    selection: Selection
    policy: Policy
    tags: tuple[TagInfo, ...]
    order_hint: Mapping[str, int] | None
    verdict: Verdict | None = None
    """The signature check of the chosen tag (``--verify-key``, ``--verify-identity``)."""
    trust: TrustPolicy | None = None
    pinned: str = ""
    """``--pin-digest``: the digest the registry serves for the chosen tag."""


async def run_test(opts: TestOptions, log: Logger) -> Selection:
    """The tag ``opts`` would choose (see :func:`run_test_explained`)."""
    return (await run_test_explained(opts, log)).selection


async def run_test_explained(opts: TestOptions, log: Logger) -> Explained:
    if is_chart_reference(opts.image):
        from argocd_image_updater.cli.test_chart import run_chart_test

        return await run_chart_test(opts, log)
    try:
        image = ImageRef.parse(opts.image)
    except ImageRefError as err:
        raise TestFailed(str(err)) from None
    log = log.bind(image_name=image.name, image_registry=image.registry or "docker.io")
    try:
        registries = load_registries(opts.registries_conf_path, log)
    except (RegistriesConfError, OSError) as err:
        raise TestFailed(f"could not load registries configuration: {err}") from None
    try:
        policy = build_policy(opts, image, log)
    except PolicyError as err:
        raise TestFailed(str(err)) from None
    trust: TrustPolicy | None = None
    if opts.verifies:
        from argocd_image_updater.verify.explain import policy_from_files
        from argocd_image_updater.verify.policy import PolicyProblem

        try:
            trust = policy_from_files(
                opts.verify_key,
                opts.verify_cosign_repository,
                identity=opts.verify_identity,
                issuer=opts.verify_issuer,
                trusted_root_file=opts.verify_trusted_root,
            )
        except PolicyProblem as err:
            raise TestFailed(str(err)) from None

    endpoint, credentials, kube = await registry_access(
        opts, registries, image.registry, image.name
    )
    try:
        log.info("retrieving information about image", image_tag=image.tag or "")
        request = ScanRequest(
            endpoint=endpoint,
            repository=image.name,
            metadata=needs_metadata(policy, time_sorted=endpoint.tag_sort_mode.is_time_sorted),
            platforms=tuple(p for p in policy.platforms.platforms),
            only_tags=frozenset(policy.strategy.only_tags(policy.constraint)) or None,
            credentials=credentials,
        )
        log.info("Fetching available tags and metadata from registry")
        pinned = ""
        async with Scanner() as scanner:
            result = await scanner.scan(request)
            ages = TagAges(datetime.now(UTC)) if policy.min_age is not None else None
            selection = choose(policy, result.tags, result.order_hint, ages)
            if opts.pin_digest and not policy.strategy.pins_digest and selection.chosen:
                pinned = await scanner.tag_digest(
                    endpoint, image.name, selection.chosen.name, credentials
                )
    except (RegistryError, CredentialsError) as err:
        raise TestFailed(str(err)) from None
    finally:
        if opts.explain and credentials is not None and credentials.last_error:
            click.echo(f"credentials: login failed: {credentials.last_error}")
        if kube is not None:
            await kube.close()
    log.info("Found %d tags in registry", result.listed)
    verdict = None
    if trust is not None and selection.chosen is not None:
        from argocd_image_updater.verify.explain import verify_chosen

        chosen = selection.chosen
        digest = chosen.digest if policy.strategy.pins_digest else pinned
        verdict = await verify_chosen(
            endpoint,
            endpoint.repository_path(image.name),
            chosen.name,
            digest,
            credentials,
            trust,
            registries.endpoint_for,
            image.full_name,
        )
    return Explained(
        selection, policy, tuple(result.tags), result.order_hint, verdict, trust, pinned
    )


def print_explain(explained: Explained) -> None:
    """Every tag with its verdict: chosen first, grouped by verdict, in the strategy's order."""
    from argocd_image_updater.cli.explain import explain_lines, ordered_verdicts

    verdicts = ordered_verdicts(
        explained.selection,
        explained.policy.strategy,
        explained.tags,
        explained.policy.platforms,
        explained.order_hint,
    )
    for line in explain_lines(verdicts):
        click.echo(line)
    waiting = waiting_message(explained.selection.eligible)
    if waiting:
        click.echo(waiting)
    if explained.verdict is not None and explained.trust is not None:
        from argocd_image_updater.verify.explain import verdict_lines

        for line in verdict_lines(explained.verdict, explained.trust):
            click.echo(line)


def run_test_command(image: str, loglevel: str, **kwargs: Any) -> None:
    """What ``test IMAGE`` does once its options are parsed (exits with the documented status)."""
    try:
        logging_setup.setup(loglevel, "text")
    except logging_setup.LogConfigError as err:
        raise click.BadParameter(str(err), param_hint="--loglevel") from None
    platforms = tuple(p.strip() for item in kwargs.pop("platforms") for p in item.split(",") if p)
    opts = TestOptions(
        image=image, platforms=platforms, ignore_tags=tuple(kwargs.pop("ignore_tags")), **kwargs
    )
    log = get_logger("test", command="test")
    try:
        explained = asyncio.run(run_test_explained(opts, log))
    except TestFailed as err:
        log.error(str(err))
        sys.exit(EXIT_ERROR)
    if opts.explain:
        print_explain(explained)
    selection = explained.selection
    if selection.chosen is None:
        log.info("no newer version of image found: %s", selection.summary)
        sys.exit(EXIT_NO_CANDIDATE)
    chosen = selection.chosen
    if is_chart_reference(image):
        from argocd_image_updater.cli.test_chart import chart_result

        log.info("latest image according to constraint is %s", chart_result(image, chosen.name))
        return
    parsed = ImageRef.parse(image)
    tag = chosen.name
    digest = chosen.digest if explained.policy.strategy.pins_digest else explained.pinned
    verdict = explained.verdict
    if verdict is not None:
        if not verdict.passed:
            log.error("signature verification failed: %s", verdict.error)
            sys.exit(EXIT_NOT_VERIFIED)
        digest = verdict.digest
    result = parsed.with_tag(tag, digest)
    log.info("latest image according to constraint is %s", result.full_name_with_tag)


__all__ = [
    "Explained",
    "TagVerdict",
    "TestOptions",
    "run_test",
    "run_test_command",
    "run_test_explained",
]
