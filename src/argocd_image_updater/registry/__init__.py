"""The registry scan adapter: an async client for the Docker Registry HTTP API v2 / OCI
distribution (``client``), its caches, limits and errors, and the scan stage (``scanner``) that
turns (endpoint, repository, what is needed) into :class:`~argocd_image_updater.model.tags.TagInfo`
values for the policy."""
