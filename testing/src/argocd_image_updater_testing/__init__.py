"""Test doubles and the demo's machinery for argocd-image-updater, a separate distribution that the
product never imports: a real registry process, a token server, a faulty proxy, a forward proxy
(``HTTP_PROXY``-style), a Referrers API
front, cosign-style signing, git servers, Kubernetes, Argo CD, GitHub and GitLab API fakes,
notification receivers (``receivers.py``), and the
``demo`` command (registered through the ``argocd_image_updater.commands`` entry point)."""
