"""The ground floor every layer may use: logging (levels, structured fields, secret masking),
the Prometheus registry and its process-wide metrics, and the ``/metrics`` ``/healthz``
``/readyz`` endpoints with the liveness state behind them."""
