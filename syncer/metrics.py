"""Prometheus metrics with controller-runtime's names, in a registry owned by one syncer instance
(no process-global collectors, so several syncers can run in one process, as the tests do)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    """The syncer's metrics.

    controller-runtime names: `controller_runtime_reconcile_total{controller,result}`,
    `controller_runtime_reconcile_errors_total{controller}`,
    `controller_runtime_reconcile_time_seconds{controller}`; client-go workqueue names:
    `workqueue_depth{name}`, `workqueue_adds_total{name}`, `workqueue_retries_total{name}`; and the
    syncer's own `runtimeclass_syncer_pods_synced_total{runtime_class}` /
    `runtimeclass_syncer_pods_refused_total{runtime_class}` (runtime_class "" = none named); with a runtime
    policy, `runtimeclass_syncer_pods_refused_by_policy_total{reason}` and
    `runtimeclass_syncer_pods_defaulted_total{runtime_class}` and
    `runtimeclass_syncer_policy_reloads_total{result}`; `runtimeclass_syncer_token_renewals_total{result}`
    (service-account token renewals, result "renewed" or "failed").
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.reconcile_total = Counter("controller_runtime_reconcile_total", "Total number of reconciliations",
                                       ["controller", "result"], registry=r)
        self.reconcile_errors = Counter("controller_runtime_reconcile_errors_total",
                                        "Total number of reconciliation errors", ["controller"], registry=r)
        self.reconcile_time = Histogram("controller_runtime_reconcile_time_seconds",
                                        "Length of time per reconciliation", ["controller"], registry=r)
        self.workqueue_depth = Gauge("workqueue_depth", "Current depth of workqueue", ["name"], registry=r)
        self.workqueue_adds = Counter("workqueue_adds_total", "Total number of adds handled by workqueue",
                                      ["name"], registry=r)
        self.workqueue_retries = Counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                                         ["name"], registry=r)
        self.pods_synced = Counter("runtimeclass_syncer_pods_synced_total",
                                   "Virtual pods created or updated on the host, by runtime class",
                                   ["runtime_class"], registry=r)
        self.pods_refused_by_policy = Counter(
            "runtimeclass_syncer_pods_refused_by_policy_total",
            "Virtual pods held back by the runtime policy, by reason (no_class, handler, default)", ["reason"],
            registry=r)
        self.pods_defaulted = Counter("runtimeclass_syncer_pods_defaulted_total",
                                      "Virtual pods synced with the runtime policy's default class, by class",
                                      ["runtime_class"], registry=r)
        self.policy_reloads = Counter("runtimeclass_syncer_policy_reloads_total",
                                      "Changes of the runtime policy file, by result (applied, invalid)", ["result"],
                                      registry=r)
        self.token_renewals = Counter("runtimeclass_syncer_token_renewals_total",
                                      "Renewals of host pods' service-account tokens, by result (renewed, failed)",
                                      ["result"], registry=r)
        self.pods_refused = Counter("runtimeclass_syncer_pods_refused_total",
                                    "Virtual pods held back by the RuntimeClass gate, by runtime class (<unknown>: "
                                    "one the host does not have)",
                                    ["runtime_class"], registry=r)
