"""Process settings: one table of every option with its flag, environment variable and ConfigMap key.

Precedence: command-line flag > environment variable > ConfigMap key > default. The ConfigMap is
``argocd-image-updater-config`` as the original ships it; the Deployment maps its keys to the
environment variables below, and a mounted copy of it can also be read directly (``--config-dir``:
one file per key, as Kubernetes mounts a ConfigMap).

Unlike the original, which silently falls back to the default for an unparsable or out-of-range
environment value, every invalid value is a startup error that names the source and the option.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from argocd_image_updater.config.durations import DurationError, parse_go_duration
from argocd_image_updater.model.webhook_types import WEBHOOK_TYPES


class SettingsError(ValueError):
    pass


Parser = Callable[[str], Any]


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "yes"):
        return True
    if value in ("false", "0", "no", ""):
        return False
    raise ValueError(f"'{text}' is not a boolean (use true or false)")


def _int_range(lo: int, hi: int) -> Parser:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"'{text}' is not an integer") from None
        if not lo <= value <= hi:
            raise ValueError(f"{value} is out of range {lo}..{hi}")
        return value

    return parse


def _duration(text: str) -> timedelta:
    try:
        return parse_go_duration(text.strip())
    except DurationError as err:
        raise ValueError(str(err)) from None


def _choice(*choices: str) -> Parser:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"'{text}' is not one of {', '.join(choices)}")
        return value

    return parse


def _str(text: str) -> str:
    return text


def _tls_version(text: str) -> str:
    value = text.strip().lower().removeprefix("tls")
    if value not in ("1.1", "1.2", "1.3"):
        raise ValueError(f"'{text}' is not a TLS version (use 1.1, 1.2 or 1.3)")
    return value


def _list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


@dataclass(frozen=True, slots=True)
class Option:
    """One process setting and every place it can come from."""

    name: str
    """Attribute name in :class:`Settings`."""
    flag: str
    default: Any
    parse: Parser = _str
    env: tuple[str, ...] = ()
    configmap: str = ""
    help: str = ""
    commands: frozenset[str] = frozenset({"run"})
    is_flag: bool = False
    multiple: bool = False
    aliases: tuple[str, ...] = ()
    secret: bool = False


RUN: Final = frozenset({"run"})
RUN_WEBHOOK: Final = frozenset({"run", "webhook"})

OPTIONS: Final[tuple[Option, ...]] = (
    # --- scheduling and scope ---------------------------------------------------------------
    Option("interval", "--interval", timedelta(minutes=2), _duration, ("IMAGE_UPDATER_INTERVAL",), "interval",
           "interval between update cycles, Go duration (2m, 30s); 0 = run once"),
    Option("once", "--once", False, _bool, help="run one cycle and exit (= --interval 0, no health server)", is_flag=True),
    Option("dry_run", "--dry-run", False, _bool, help="compute every update but write nothing", is_flag=True),
    Option("exit_zero_on_error", "--exit-zero-on-error", False, _bool,
           help="with --once: exit 0 even when an application, a manifest file or an object had an error (default: exit code 4)", is_flag=True),
    Option("warmup_cache", "--warmup-cache", True, _bool, help="fill the registry caches before the first write (accepted for compatibility; the first cycle warms them)"),
    Option("max_concurrent_apps", "--max-concurrent-apps", 10, _int_range(1, 100), ("MAX_CONCURRENT_APPS",), "max_concurrent_apps",
           "applications processed in parallel", RUN_WEBHOOK, aliases=("--max-concurrency",)),
    Option("max_concurrent_reconciles", "--max-concurrent-reconciles", 1, _int_range(1, 10), ("MAX_CONCURRENT_RECONCILES",),
           "max_concurrent_reconciles", "ImageUpdater resources reconciled in parallel"),
    Option("max_concurrent_updaters", "--max-concurrent-updaters", 1, _int_range(1, 10), ("MAX_CONCURRENT_UPDATERS",),
           help="webhook events processed in parallel", commands=frozenset({"webhook"})),
    Option("argocd_namespace", "--argocd-namespace", "", env=("ARGOCD_NAMESPACE",), configmap="argocd.namespace",
           help="namespace where Argo CD runs (repository secrets); default: the controller's namespace", commands=RUN_WEBHOOK),
    Option("watch_namespaces", "--watch-namespaces", "", env=("IMAGE_UPDATER_WATCH_NAMESPACES",), configmap="watch.namespaces",
           help="namespaces to watch: empty = own namespace, '*' = all, or a comma-separated list"),
    Option("application_namespace", "--application-namespace", "", help="(v0.x) namespace of the Applications to process; empty = all namespaces"),
    Option("match_application_name", "--match-application-name", (), help="(v0.x) only process Applications whose name matches this glob (repeatable)", multiple=True),
    Option("match_application_label", "--match-application-label", "", help="(v0.x) only process Applications matching this label selector"),
    Option("legacy_annotations", "--legacy-annotations", True, _bool, ("IMAGE_UPDATER_LEGACY_ANNOTATIONS",), "legacy.annotations",
           "process Applications carrying the v0.x image-list annotation when no ImageUpdater selects them"),
    # --- where Applications come from ---------------------------------------------------------
    Option("applications_api", "--applications-api", "kubernetes", _choice("kubernetes", "argocd", "local"), ("APPLICATIONS_API",),
           "applications_api", "where Applications are read and updated: kubernetes, argocd (Argo CD's API) or local (manifest files, see --local-path)"),
    Option("local_path", "--local-path", "", env=("IMAGE_UPDATER_LOCAL_PATH",),
           help="applications_api=local: directory (e.g. a Git checkout) holding the Application and ImageUpdater manifests; with --local-repo, the path inside that repository"),
    Option("local_repo", "--local-repo", "", env=("IMAGE_UPDATER_LOCAL_REPO",),
           help="applications_api=local: read the manifests from this Git repository (cloned and kept up to date) instead of a local directory"),
    Option("local_revision", "--local-revision", "HEAD", env=("IMAGE_UPDATER_LOCAL_REVISION",),
           help="applications_api=local with --local-repo: the branch to read and push to (HEAD = the default branch)"),
    Option("secrets_dir", "--secrets-dir", "", env=("IMAGE_UPDATER_SECRETS_DIR",),
           help="applications_api=local: read Secrets and ConfigMaps (credentials, Argo CD repository secrets, known hosts, TLS certificates) from <dir>/<namespace>/<name>/<key>"),
    Option("state_dir", "--state-dir", "", env=("IMAGE_UPDATER_STATE_DIR",),
           help="directory of the file state.json that remembers the tags written (rollback holds) and when tags were first seen (minAge) across restarts; default: applications_api=local keeps it in memory, a cluster in the ConfigMap argocd-image-updater-state of the controller's namespace"),
    Option("argocd_server_addr", "--argocd-server-addr", "", env=("ARGOCD_SERVER",), configmap="argocd.server_addr",
           help="address of the Argo CD API server (applications_api=argocd)"),
    Option("argocd_grpc_web", "--argocd-grpc-web", False, _bool, ("ARGOCD_GRPC_WEB",), "argocd.grpc_web",
           "accepted for compatibility; the REST API is used"),
    Option("argocd_insecure", "--argocd-insecure", False, _bool, ("ARGOCD_INSECURE",), "argocd.insecure",
           "do not verify the Argo CD API server's TLS certificate"),
    Option("argocd_plaintext", "--argocd-plaintext", False, _bool, ("ARGOCD_PLAINTEXT",), "argocd.plaintext",
           "talk plain HTTP to the Argo CD API server"),
    Option("argocd_auth_token", "--argocd-auth-token", "", env=("ARGOCD_TOKEN",), help="Argo CD API token (prefer the ARGOCD_TOKEN environment variable: argv is visible to other processes)", secret=True),
    Option("kubeconfig", "--kubeconfig", "", env=("KUBECONFIG",), help="kubeconfig file; default: in-cluster, then ~/.kube/config", commands=RUN_WEBHOOK),
    Option("disable_kubernetes", "--disable-kubernetes", False, _bool, help="(v0.x) do not use the Kubernetes API (applications_api=argocd only)", is_flag=True),
    # --- logging, health, metrics, HA ---------------------------------------------------------
    Option("loglevel", "--loglevel", "info", _choice("trace", "debug", "info", "warn", "warning", "error"),
           ("IMAGE_UPDATER_LOGLEVEL", "ARGOCD_LOGLEVEL"), "log.level", "trace, debug, info, warn or error", RUN_WEBHOOK),
    Option("logformat", "--logformat", "text", _choice("text", "json"), ("IMAGE_UPDATER_LOGFORMAT",), "log.format",
           "text or json", RUN_WEBHOOK),
    Option("metrics_bind_address", "--metrics-bind-address", "0", help="address of the Prometheus /metrics endpoint; 0 disables"),
    Option("metrics_port", "--metrics-port", None, _int_range(0, 65535), help="(v0.x) port of the /metrics endpoint; overrides --metrics-bind-address"),
    Option("metrics_secure", "--metrics-secure", False, _bool, help="serve metrics over HTTPS with a self-signed certificate (the original defaults to HTTPS with Kubernetes authn/authz; here the default is plain HTTP)"),
    Option("health_probe_bind_address", "--health-probe-bind-address", ":8081", help="address of /healthz and /readyz; 0 disables"),
    Option("health_port", "--health-port", None, _int_range(0, 65535), help="(v0.x) port of /healthz; overrides --health-probe-bind-address"),
    Option("enable_http2", "--enable-http2", False, _bool, help="allow HTTP/2 on the metrics and webhook servers", commands=RUN_WEBHOOK),
    Option("leader_election", "--leader-election", True, _bool, help="elect a leader through a Lease so that only one replica scans and writes"),
    Option("leader_election_namespace", "--leader-election-namespace", "", help="namespace of the leader election Lease; default: the controller's namespace"),
    Option("leader_election_lease_duration", "--leader-election-lease-duration", timedelta(seconds=15), _duration,
           help="how long the leader election Lease is valid after its last renewal; others take over only after it (Go duration)"),
    Option("leader_election_renew_deadline", "--leader-election-renew-deadline", timedelta(seconds=10), _duration,
           help="a leader that could not renew the Lease for this long stops leading and cancels its writes in flight; must be shorter than the lease duration"),
    Option("leader_election_retry_period", "--leader-election-retry-period", timedelta(seconds=2), _duration,
           help="how often the leader renews the Lease and the others try to acquire it; must be shorter than the renew deadline"),
    Option("sharding", "--sharding", False, _bool,
           help="share the work with the other replicas: each holds a member Lease and processes the ImageUpdaters (and annotated Applications) rendezvous hashing gives it; without it one leader does all"),
    Option("shard_selector", "--shard-selector", "",
           help="only process the ImageUpdaters (and annotated Applications) labelled argocd-image-updater.argoproj.io/shard=VALUE; '!' only those without that label; default: every object"),
    Option("disable_kube_events", "--disable-kube-events", False, _bool, ("IMAGE_UPDATER_KUBE_EVENTS",), "kube.events",
           "do not create Kubernetes events (note: the ConfigMap key kube.events=true DISABLES events, as in the original)", RUN_WEBHOOK),
    # --- registries and git ---------------------------------------------------------------------
    Option("registries_conf_path", "--registries-conf-path", "/app/config/registries.conf",
           help="path to registries.conf", commands=RUN_WEBHOOK, aliases=("--registries-conf",)),
    Option("notifications_config_path", "--notifications-config-path", "/app/config/notifications.yaml",
           help="the default notification targets (the ConfigMap key notifications.yaml; docs/notifications.md); a missing file means none", commands=RUN_WEBHOOK),
    Option("cloud_credentials_auto", "--cloud-credentials-auto", True, _bool, ("IMAGE_UPDATER_CLOUD_CREDENTIALS_AUTO",), "cloud.credentials-auto",
           "a registry without credentials whose host is ECR, Artifact Registry/GCR or ACR logs in with the pod's cloud identity (when the SDK extra is installed); false = anonymous", RUN_WEBHOOK),
    Option("git_commit_user", "--git-commit-user", "argocd-image-updater", env=("GIT_COMMIT_USER",), configmap="git.user",
           help="git commit author name", commands=RUN_WEBHOOK),
    Option("git_commit_email", "--git-commit-email", "noreply@argoproj.io", env=("GIT_COMMIT_EMAIL",), configmap="git.email",
           help="git commit author e-mail", commands=RUN_WEBHOOK),
    Option("git_commit_signing_key", "--git-commit-signing-key", "", env=("GIT_COMMIT_SIGNING_KEY",), configmap="git.commit-signing-key",
           help="GPG key id, or path to an SSH private key, to sign commits with", commands=RUN_WEBHOOK),
    Option("git_commit_signing_method", "--git-commit-signing-method", "openpgp", _choice("openpgp", "ssh"), ("GIT_COMMIT_SIGNING_METHOD",),
           "git.commit-signing-method", "openpgp or ssh", RUN_WEBHOOK),
    Option("git_commit_sign_off", "--git-commit-sign-off", False, _bool, ("GIT_COMMIT_SIGN_OFF",), "git.commit-sign-off",
           "add a Signed-off-by trailer", RUN_WEBHOOK),
    Option("git_commit_message_path", "--git-commit-message-path", "/app/config/commit.template",
           help="commit message template (Go text/template)", commands=RUN_WEBHOOK),
    Option("git_commit_method", "--git-commit-method", "git", _choice("git", "api"), ("GIT_COMMIT_METHOD",),
           help="git (commit with the git CLI); api (GitHub API commits) is accepted and falls back to git", commands=RUN_WEBHOOK),
    Option("git_commit_grouping", "--git-commit-grouping", "repository", _choice("repository", "application"), ("GIT_COMMIT_GROUPING",),
           "git.commit-grouping", "repository: one commit per repository and branch per cycle; application: one commit per application", RUN_WEBHOOK),
    Option("git_cache_dir", "--git-cache-dir", "", env=("GIT_CACHE_DIR",),
           help="directory for the local clones kept across cycles; default: a private temporary directory", commands=RUN_WEBHOOK),
    Option("pr_api_url", "--pr-api-url", "", env=("IMAGE_UPDATER_PR_API_URL",),
           help="API base URL for pull/merge requests (e.g. a GitHub Enterprise .../api/v3, a GitLab instance URL, a Gitea .../api/v1, a Bitbucket Data Center .../rest/api/1.0); a gitConfig.pullRequest.<host>.apiURL takes precedence; default: derived from the repository URL", commands=RUN_WEBHOOK),
    # --- webhook ------------------------------------------------------------------------------
    Option("enable_webhook", "--enable-webhook", False, _bool, ("ENABLE_WEBHOOK",), "webhook.enable", "serve registry webhooks"),
    Option("webhook_require_secret", "--webhook-require-secret", True, _bool, ("WEBHOOK_REQUIRE_SECRET",), "webhook.require-secret",
           "only accept webhook types with a configured secret", RUN_WEBHOOK),
    Option("webhook_port", "--webhook-port", 8082, _int_range(0, 65535), ("WEBHOOK_PORT",), "webhook.port",
           "webhook server port (8082 in run, 8080 for the webhook command)", RUN_WEBHOOK),
    Option("webhook_ratelimit_allowed", "--webhook-ratelimit-allowed", 0, _int_range(0, 1_000_000), ("WEBHOOK_RATELIMIT_ALLOWED",),
           "webhook.ratelimit-allowed", "webhook events processed per hour; 0 = unlimited", RUN_WEBHOOK),
    Option("webhook_ratelimit_per_source", "--webhook-ratelimit-per-source", 60, _int_range(0, 1_000_000), ("WEBHOOK_RATELIMIT_PER_SOURCE",),
           "webhook.ratelimit-per-source", "webhook requests per minute from one client address; 0 = unlimited", RUN_WEBHOOK),
    Option("disable_tls", "--disable-tls", False, _bool, ("DISABLE_TLS",), "disable-tls", "serve webhooks over plain HTTP", RUN_WEBHOOK),
    Option("tls_min_version", "--tlsminversion", "1.3", _tls_version, ("TLS_MIN_VERSION",), "tls.min-version", "minimum TLS version", RUN_WEBHOOK),
    Option("tls_max_version", "--tlsmaxversion", "1.3", _tls_version, ("TLS_MAX_VERSION",), "tls.max-version", "maximum TLS version", RUN_WEBHOOK),
    Option("tls_ciphers", "--tlsciphers", "", env=("TLS_CIPHERS",), configmap="tls.ciphers", help="colon-separated TLS 1.2 cipher names", commands=RUN_WEBHOOK),
    # one secret per webhook type (model/webhook_types.py), named after the type's setting
    *(
        Option(t.option, t.flag, "", env=(t.env,), help=f"secret of {t.label} webhooks (prefer the environment variable or the Secret)",
               commands=RUN_WEBHOOK, secret=True)
        for t in WEBHOOK_TYPES
    ),
)  # fmt: skip

# ConfigMap keys that are files, not settings (mounted next to the settings in the original).
FILE_KEYS: Final = frozenset(
    {"registries.conf", "git.commit-message-template", "notifications.yaml"}
)
KNOWN_CONFIGMAP_KEYS: Final = frozenset(o.configmap for o in OPTIONS if o.configmap) | FILE_KEYS


@dataclass(frozen=True, slots=True)
class Settings:
    """The resolved settings and where each one came from (for the startup log and errors)."""

    values: Mapping[str, Any]
    sources: Mapping[str, str] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None

    def given(self, name: str) -> bool:
        return self.sources.get(name, "default") != "default"


def read_configmap_dir(path: Path) -> dict[str, str]:
    """Read a ConfigMap mounted as a directory (one file per key); unknown keys are an error."""
    values: dict[str, str] = {}
    for entry in sorted(path.iterdir()):
        if entry.name.startswith(".") or not entry.is_file():
            continue  # Kubernetes' ..data symlink farm
        if entry.name not in KNOWN_CONFIGMAP_KEYS:
            raise SettingsError(
                f"ConfigMap {path}: unknown key '{entry.name}'; known keys: "
                + ", ".join(sorted(KNOWN_CONFIGMAP_KEYS))
            )
        if entry.name not in FILE_KEYS:
            values[entry.name] = entry.read_text(encoding="utf-8").strip()
    return values


def resolve(
    command: str,
    flags: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    configmap: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every option of ``command``. ``flags`` holds only the flags given on the command line."""
    env = os.environ if env is None else env
    configmap = configmap or {}
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for option in OPTIONS:
        if command not in option.commands:
            continue
        value, source = option.default, "default"
        if flags.get(option.name) is not None:
            value, source = flags[option.name], f"flag {option.flag}"
        else:
            raw: str | None = None
            for var in option.env:
                if env.get(var):
                    raw, source = env[var], f"environment variable {var}"
                    break
            if raw is None and option.configmap and option.configmap in configmap:
                raw, source = configmap[option.configmap], f"ConfigMap key {option.configmap}"
            if raw is not None:
                try:
                    value = option.parse(raw)
                except ValueError as err:
                    raise SettingsError(
                        f"invalid value for {option.flag} from {source}: {err}"
                    ) from None
        values[option.name] = value
        sources[option.name] = source
    return Settings(values, sources)


def options_for(command: str) -> Sequence[Option]:
    return [o for o in OPTIONS if command in o.commands]
