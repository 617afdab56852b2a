"""runtimeclass-syncer: a vcluster sidecar that mirrors host RuntimeClasses into a virtual cluster
and syncs virtual Pods to the host only when their RuntimeClass passes a label selector."""

__version__ = "0.1.0"
