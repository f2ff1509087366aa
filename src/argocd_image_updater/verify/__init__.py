"""Signature verification before any write: cosign keys and keyless certificates, Rekor
entries, trusted roots, and the gate the cycle asks before it writes a chosen tag."""
