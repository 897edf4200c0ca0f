"""The only Kubernetes client I/O (observe, apply)."""
