"""Prometheus metrics, with the original's names and labels plus our own additions.

All metrics live in :data:`REGISTRY` (not the global default registry) so that the endpoint serves
exactly these plus process metrics. Names with the original's meaning fit its Grafana dashboard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from argocd_image_updater.observe import metrics_off

if TYPE_CHECKING or not metrics_off.off:
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
else:  # the one-shot ``test`` command: see metrics_off
    from argocd_image_updater.observe.metrics_off import (
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        ProcessCollector,
    )

REGISTRY: Final = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)

_P = "argocd_image_updater_"

# --- the original's metrics -------------------------------------------------------------------
REGISTRY_REQUESTS: Final = Counter(
    _P + "registry_requests",
    "Number of HTTP requests made to a container registry",
    ["registry"],
    registry=REGISTRY,
)
REGISTRY_REQUESTS_FAILED: Final = Counter(
    _P + "registry_requests_failed",
    "Number of failed HTTP requests to a container registry (transport errors and 4xx/5xx "
    "other than expected challenges)",
    ["registry"],
    registry=REGISTRY,
)
K8S_API_REQUESTS: Final = Counter(
    _P + "k8s_api_requests", "Number of Kubernetes API requests", registry=REGISTRY
)
K8S_API_ERRORS: Final = Counter(
    _P + "k8s_api_errors", "Number of failed Kubernetes API requests", registry=REGISTRY
)
ARGOCD_API_REQUESTS: Final = Counter(
    _P + "argocd_api_requests",
    "Number of Argo CD API requests",
    ["argocd_server"],
    registry=REGISTRY,
)
ARGOCD_API_ERRORS: Final = Counter(
    _P + "argocd_api_errors",
    "Number of failed Argo CD API requests",
    ["argocd_server"],
    registry=REGISTRY,
)

# --- additions --------------------------------------------------------------------------------
K8S_API_RETRIES: Final = Counter(
    _P + "k8s_api_retries",
    "Kubernetes API requests sent again, by what the previous attempt met: an HTTP status "
    "(429, 500, 502, 503, 504) or 'connection' (a reset connection)",
    ["reason"],
    registry=REGISTRY,
)
REGISTRY_RESPONSES: Final = Counter(
    _P + "registry_responses",
    "Registry HTTP responses by request kind and status code ('error' for transport errors)",
    ["registry", "kind", "status"],
    registry=REGISTRY,
)
REGISTRY_REQUEST_DURATION: Final = Histogram(
    _P + "registry_request_duration_seconds",
    "Latency of registry HTTP requests",
    ["registry", "kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
REGISTRY_RATE_LIMIT_WAITS: Final = Counter(
    _P + "registry_rate_limit_waits",
    "Number of registry requests delayed by the per-registry rate limit",
    ["registry"],
    registry=REGISTRY,
)
REGISTRY_RATE_LIMIT_WAIT_SECONDS: Final = Counter(
    _P + "registry_rate_limit_wait_seconds",
    "Time spent waiting for the per-registry rate limit",
    ["registry"],
    registry=REGISTRY,
)
CACHE_HITS: Final = Counter(
    _P + "cache_hits",
    "Cache hits by cache (tags, metadata, token, credentials)",
    ["cache"],
    registry=REGISTRY,
)
CACHE_MISSES: Final = Counter(
    _P + "cache_misses", "Cache misses by cache", ["cache"], registry=REGISTRY
)
LAST_SUCCESSFUL_CYCLE: Final = Gauge(
    _P + "last_successful_cycle_timestamp_seconds",
    "Unix time at which the last update cycle completed without a cycle-level error",
    registry=REGISTRY,
)
CYCLE_DURATION: Final = Histogram(
    _P + "cycle_duration_seconds",
    "Duration of one update cycle",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
    registry=REGISTRY,
)

# --- sharding (run --sharding) ----------------------------------------------------------------
SHARD_KEYS: Final = Gauge(
    _P + "shard_keys",
    "Shard keys (ImageUpdaters, annotated Applications) this replica processed last cycle",
    registry=REGISTRY,
)
SHARD_OWNERSHIP_CHANGES: Final = Counter(
    _P + "shard_ownership_changes",
    "Shard keys this replica took over or handed over",
    registry=REGISTRY,
)
FLEET_EVENTS_FORWARDED: Final = Counter(
    _P + "webhook_events_forwarded",
    "Registry events passed to the other replicas through the events ConfigMap: sent "
    "(received as a webhook call here, or a change found in a repository this replica lists "
    "for the fleet), received (from another replica)",
    ["direction"],
    registry=REGISTRY,
)
FLEET_BACKOFFS_SHARED: Final = Counter(
    _P + "registry_backoffs_shared",
    "Registry back-offs (after a 429) passed to the other replicas through the events "
    "ConfigMap: sent (learned here), received (from another replica, making this one wait)",
    ["direction"],
    registry=REGISTRY,
)
FLEET_TAG_LISTS: Final = Counter(
    _P + "fleet_tag_lists",
    "Tag lists of a sharded fleet's repositories: reused (this replica's copy used again "
    "because the repository's owner vouched for it, no request), changed (a repository this "
    "replica lists for the fleet changed or failed: the others list it again)",
    ["outcome"],
    registry=REGISTRY,
)
FLEET_EVENTS_ERRORS: Final = Counter(
    _P + "fleet_events_errors",
    "Events ConfigMap entries left out: malformed when read, or not written (what: read, write)",
    ["what"],
    registry=REGISTRY,
)
