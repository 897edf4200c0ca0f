"""Manifests and text out of decisions: cluster folders, overlays, tables, messages."""
