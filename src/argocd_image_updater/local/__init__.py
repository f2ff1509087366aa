"""Local mode (``--applications-api local``): Applications and ImageUpdaters from YAML files.

No cluster is needed. The manifests are read from a directory (typically a Git checkout of an
app-of-apps repository); the images Argo CD would report as live are read from where the
write-back writes them; the ``argocd`` write-back method edits the Application manifest file and
commits it when the directory is a Git work tree.

* :mod:`.manifests` — find and parse the manifests (bad files are reported and skipped);
* :mod:`.store` — the :class:`~argocd_image_updater.controller.sources.ApplicationStore`;
* :mod:`.current` — (pure) the current image of each configured image, from the write-back
  target or the Application's own parameters;
* :mod:`.prepare` — reads the write-back targets and fills in what Argo CD would report;
* :mod:`.writer` — writes plans into the manifest files and commits them.
"""
