"""Which credentials to push with: Argo CD's repository settings or a Secret of the tenant.

* ``repocreds`` (default): Argo CD repository Secrets (label
  ``argocd.argoproj.io/secret-type: repository``, the same URL by Argo CD's rules) or credential
  templates (``repo-creds``, the longest covering URL prefix) in the Argo CD namespace; see
  :mod:`argocd_image_updater.model.repo_url`.
* ``secret:<name>`` / ``secret:<namespace>/<name>``: a Secret in the ImageUpdater's namespace —
  another namespace is refused, so tenants cannot reach each other's Secrets.

Host keys come from Argo CD's ``argocd-ssh-known-hosts-cm`` (key ``ssh_known_hosts``) and custom
CAs from ``argocd-tls-certs-cm`` (key = host name). Unlike the original, a Secret reference never
turns TLS verification or host key checking off; only an explicit ``insecure: "true"`` does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

from argocd_image_updater.kube.errors import KubeError
from argocd_image_updater.model.repo_url import (
    host_of,
    is_ssh_url,
    normalize_git_url,
    same_repository,
    template_covers,
)
from argocd_image_updater.observe.log import register_secret
from argocd_image_updater.writeback.git.auth import (
    GitCredentials,
    HttpsCredentials,
    NoCredentials,
    SshCredentials,
    SshOptions,
    TlsOptions,
)

SECRET_TYPE_LABEL: Final = "argocd.argoproj.io/secret-type"
KNOWN_HOSTS_CM: Final = "argocd-ssh-known-hosts-cm"
TLS_CERTS_CM: Final = "argocd-tls-certs-cm"

GitHubAppTokenFn = Callable[[str, str, str, str], Awaitable[str]]
"""(app id, installation id, private key PEM, API base URL or "") → installation token."""


class GitCredentialsError(Exception):
    pass


class ClusterObjects(Protocol):
    """The Secret and ConfigMap reads credentials need (the Kubernetes API, or a directory in
    local mode); a missing object raises :class:`KubeError` with status 404."""

    async def read_secret(self, namespace: str, name: str) -> dict[str, bytes]: ...

    async def list_secrets(
        self, namespace: str, label_selector: str = ""
    ) -> list[dict[str, Any]]: ...

    async def read_configmap(self, namespace: str, name: str) -> dict[str, str]: ...


def _text(data: Mapping[str, bytes], key: str) -> str:
    return data.get(key, b"").decode().strip()


class GitCredentialsResolver:
    def __init__(
        self,
        kube: ClusterObjects | None,
        argocd_namespace: str,
        github_app_token: GitHubAppTokenFn | None = None,
    ) -> None:
        self._kube = kube
        self._namespace = argocd_namespace
        self._github_app_token = github_app_token

    async def _configmap(self, name: str) -> dict[str, str]:
        if self._kube is None:
            return {}
        try:
            return await self._kube.read_configmap(self._namespace, name)
        except KubeError as err:
            if err.is_not_found:
                return {}
            raise GitCredentialsError(
                f"cannot read ConfigMap {self._namespace}/{name}: {err}"
            ) from None

    async def _options(self, url: str, insecure: bool) -> tuple[TlsOptions, SshOptions]:
        if is_ssh_url(url):
            known = (await self._configmap(KNOWN_HOSTS_CM)).get("ssh_known_hosts", "")
            return TlsOptions(), SshOptions(known_hosts=known, insecure_ignore_host_key=insecure)
        ca = (await self._configmap(TLS_CERTS_CM)).get(host_of(url), "")
        return TlsOptions(ca_pem=ca, insecure=insecure), SshOptions()

    async def _from_data(self, url: str, data: Mapping[str, bytes], origin: str) -> GitCredentials:
        insecure = _text(data, "insecure").lower() == "true"
        tls, ssh = await self._options(url, insecure)
        if is_ssh_url(url):
            key = data.get("sshPrivateKey", b"").decode()
            if not key.strip():
                raise GitCredentialsError(f"{origin} has no sshPrivateKey for SSH repository {url}")
            return SshCredentials(private_key=key, ssh=ssh)
        if url.startswith("http://") and not insecure:
            raise GitCredentialsError(
                f"refusing to send credentials over plain http:// to {url}; use https "
                '(or set insecure: "true" in the repository Secret)'
            )
        tls = TlsOptions(
            ca_pem=tls.ca_pem,
            insecure=tls.insecure,
            client_cert_pem=_text(data, "tlsClientCertData"),
            client_key_pem=data.get("tlsClientCertKey", b"").decode(),
        )
        app_id = _text(data, "githubAppID")
        if app_id:
            if self._github_app_token is None:
                raise GitCredentialsError(
                    f"{origin}: GitHub App credentials are not supported here"
                )
            token = await self._github_app_token(
                app_id,
                _text(data, "githubAppInstallationID"),
                data.get("githubAppPrivateKey", b"").decode(),
                _text(data, "githubAppEnterpriseBaseUrl"),
            )
            register_secret(token)
            return HttpsCredentials("x-access-token", token, tls)
        password = data.get("password", b"").decode()
        if password:
            register_secret(password)
            return HttpsCredentials(_text(data, "username"), password, tls)
        return NoCredentials(tls=tls, ssh=ssh)

    async def resolve(self, ref: str, repo_url: str, app_namespace: str) -> GitCredentials:
        """Credentials for pushing to ``repo_url`` on behalf of an app in ``app_namespace``."""
        if repo_url.startswith("file://") or repo_url.startswith("/"):
            return NoCredentials()
        if ref.startswith("secret:"):
            return await self._from_secret_ref(ref.removeprefix("secret:"), repo_url, app_namespace)
        if ref not in ("", "repocreds"):
            raise GitCredentialsError(
                f"invalid git credentials reference '{ref}': use repocreds, secret:<name> or "
                "secret:<namespace>/<name>"
            )
        return await self._from_repocreds(repo_url)

    async def _from_secret_ref(self, target: str, url: str, app_namespace: str) -> GitCredentials:
        namespace, _, name = target.rpartition("/")
        namespace = namespace or app_namespace
        if namespace != app_namespace:
            raise GitCredentialsError(
                f"git credentials secret '{namespace}/{name}' must be in the ImageUpdater's "
                f"namespace '{app_namespace}'"
            )
        if self._kube is None:
            raise GitCredentialsError("git:secret: credentials need the Kubernetes API")
        try:
            data = await self._kube.read_secret(namespace, name)
        except KubeError as err:
            raise GitCredentialsError(
                f"cannot read git credentials secret {namespace}/{name}: {err}"
            ) from None
        return await self._from_data(url, data, f"secret {namespace}/{name}")

    async def _from_repocreds(self, url: str) -> GitCredentials:
        if self._kube is None:
            return NoCredentials(*(await self._options(url, False)))
        try:
            secrets = await self._kube.list_secrets(self._namespace, SECRET_TYPE_LABEL)
        except KubeError as err:
            raise GitCredentialsError(f"cannot list Argo CD repository secrets: {err}") from None
        best: tuple[int, dict[str, bytes], str] | None = None
        for secret in secrets:
            kind = secret["labels"].get(SECRET_TYPE_LABEL, "")
            data: dict[str, bytes] = secret["data"]
            candidate = data.get("url", b"").decode()
            if not candidate.strip():
                continue
            if kind == "repository" and same_repository(candidate, url):
                return await self._from_data(url, data, f"repository secret {secret['name']}")
            length = len(normalize_git_url(candidate))
            longer = best is None or length > best[0]
            if kind == "repo-creds" and template_covers(candidate, url) and longer:
                best = (length, data, secret["name"])
        if best is not None:
            return await self._from_data(url, best[1], f"repository credentials {best[2]}")
        raise GitCredentialsError(
            f"credentials for '{url}' are not configured in Argo CD settings: add a repository "
            f"Secret in namespace {self._namespace}, or use git:secret:<name>"
        )
