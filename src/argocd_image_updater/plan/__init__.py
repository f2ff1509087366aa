"""Pure planning: which images of an Application to scan (:mod:`.jobs`), what to change once the
scans are in (:mod:`.decide`), the exact parameter edits (:mod:`.params`) and the JSON patch for
the ``argocd`` writer (:mod:`.patch`). The values passed on are in :mod:`.model`."""
