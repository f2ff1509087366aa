"""Argo CD API adapter (REST gateway of argocd-server)."""
