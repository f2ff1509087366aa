"""Notifications: what changed or failed in a cycle, sent to chat channels and webhooks.

* :mod:`.events` — the event model (:class:`~.events.Event`, per-cycle :class:`~.events.Batch`)
  and the events of a cycle's outcomes;
* :mod:`.targets` — one module per receiver type (``slack``, ``teams``, ``webhook``,
  ``cloudevents``): the payload and headers of a batch, found by :mod:`.registry`;
* :mod:`.signing` — the HMAC-SHA256 signature headers;
* :mod:`.dispatcher` — routing to the targets of each ImageUpdater (or the ConfigMap default),
  filters, one bounded queue per target, delivery in the background with retries;
* :mod:`.metrics` — sent, failed and dropped counters.
"""
