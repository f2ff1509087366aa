"""``argocd-image-updater test IMAGE``: which tag would be chosen, without any cluster.

Only the options are defined here; the work is in :mod:`argocd_image_updater.cli.test_run`,
imported when the command runs, so that ``test --help`` loads no HTTP client, YAML parser or
model library.
"""

from __future__ import annotations

from typing import Any

import click

from argocd_image_updater.cli import collector


class _StrategyOption(click.Option):
    """``--update-strategy``, whose help lists the registered strategies when help is shown."""

    @property
    def help(self) -> str:
        from argocd_image_updater.policy.strategies import listed_names

        return listed_names()

    @help.setter
    def help(self, value: str | None) -> None:
        pass


@click.command("test", help="Test the behaviour of argocd-image-updater for IMAGE")
@click.argument("image")
@click.option("--semver-constraint", default="", help="only consider tags matching this constraint")
@click.option("--update-strategy", cls=_StrategyOption, default="semver")
@click.option(
    "--allow-tags", default="", help="only consider tags matching: regexp:<expression> or any"
)
@click.option("--ignore-tags", multiple=True, help="ignore tags matching this glob (repeatable)")
@click.option(
    "--platforms",
    multiple=True,
    help="platforms to consider, os/arch[/variant] (repeatable or comma-separated) "
    "[default: this machine's platform]",
)
@click.option(
    "--registries-conf-path", "--registries-conf", default="", help="path to registries.conf"
)
@click.option("--credentials", default="", help="credentials reference for the registry")
@click.option("--rate-limit", type=float, default=None, help="requests per second to the registry")
@click.option("--loglevel", default="debug", help="trace, debug, info, warn or error")
@click.option("--kubeconfig", default="", help="kubeconfig, only needed for secret: credentials")
@click.option(
    "--secrets-dir", default="", help="read secret:/pullsecret: from <dir>/<ns>/<name>/<field>"
)
@click.option(
    "--min-age",
    default="",
    metavar="DURATION",
    help="only consider tags at least this old (minAge, a Go duration such as 72h); tags count "
    "as first seen now unless --min-age-from created",
)
@click.option(
    "--min-age-from",
    type=click.Choice(["seen", "created"]),
    default="seen",
    help="where the age of --min-age counts from: first seen (now), or the image's creation time",
)
@click.option(
    "--explain",
    is_flag=True,
    help="print the credential source, and every tag with its verdict and reason",
)
@click.option(
    "--pin-digest",
    is_flag=True,
    help="print the chosen tag with the digest the registry serves for it, tag@sha256:... "
    "(pinDigest; one manifest HEAD request)",
)
@click.option(
    "--plain-http",
    is_flag=True,
    help="talk plain HTTP to the registry (as 'api_url: http://<host>' in registries.conf); "
    "loopback registries fall back to it by themselves",
)
@click.option(
    "--verify-key",
    default="",
    metavar="FILE",
    help="verify the chosen tag's cosign signature with this PEM public key; the result "
    "carries the verified digest (exit 5 when it does not verify)",
)
@click.option(
    "--verify-identity",
    default="",
    metavar="IDENTITY",
    help="verify the chosen tag's keyless signature: the certificate identity (email or URI; "
    "exact or regexp:<expression>), with --verify-issuer (exit 5 when it does not verify)",
)
@click.option(
    "--verify-issuer",
    default="",
    metavar="ISSUER",
    help="with --verify-identity: the certificate's OIDC issuer (exact or regexp:<expression>)",
)
@click.option(
    "--verify-trusted-root",
    default="",
    metavar="FILE",
    help="with --verify-identity: a Sigstore trusted_root.json [default: the public Sigstore "
    "trusted root]",
)
@click.option(
    "--verify-cosign-repository",
    default="",
    metavar="REGISTRY/REPOSITORY",
    help="with --verify-key or --verify-identity: read signatures from this repository "
    "(cosignRepository)",
)
@click.option(
    "--cloud-credentials-auto/--no-cloud-credentials-auto",
    default=True,
    help="log in to ECR, Artifact Registry/GCR and ACR hosts with the cloud identity when no "
    "credentials are configured",
)
def test_command(image: str, loglevel: str, **kwargs: Any) -> None:
    from argocd_image_updater.cli.test_run import run_test_command
    from argocd_image_updater.policy.strategies import strategies

    strategies()  # the strategy modules, which the name lookup imports, with the rest
    collector.resume()
    run_test_command(image, loglevel, **kwargs)


__all__ = ["test_command"]
