"""Reusable engines the product uses and that know nothing of it: each kit imports only the
standard library, third-party libraries and other kits."""
