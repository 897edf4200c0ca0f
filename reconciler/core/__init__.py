"""The pure scheduling core: quantities, quota tree, queue order, admission,
preemption, gang fit and the reconcile cycle.

Nothing here touches git, YAML, Jinja2, Kubernetes clients, files or the clock:
every function takes values and returns values.
"""
