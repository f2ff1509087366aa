"""Kubernetes API adapter: connection, Applications, ImageUpdaters, Secrets, Events."""
