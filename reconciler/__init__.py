"""fleetq: a GitOps reconciler for multi-cluster, gang-scheduled training jobs.

Layers (imports only point downwards):
  cli -> gitops, kube, render, fleet -> jobkinds -> core
``core`` is pure: values in, decisions out.
"""

__version__ = "0.1.0"
