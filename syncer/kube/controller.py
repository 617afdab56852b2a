"""Runs a reconciler over a work queue with N workers (controller-runtime's controller).

A reconcile takes a key, compares desired with actual state and writes the difference. It returns
None when done, or a number of seconds after which the key should be looked at again (replacing the wake-up an
earlier reconcile of the key asked for: level-triggered, the last one saw the whole state; client-go's delaying
queue keeps the earliest instead, which reconciles a key whose wait has ended for nothing); it raises to
ask for a retry with per-key exponential backoff (at least the server's Retry-After on 429/503, up to the rate
limiter's cap: a Retry-After of hours must not park a key for hours; client-go's workqueue retries a failed key
after at most its rate limiter's maxDelay, `ItemExponentialFailureRateLimiter` in
k8s.io/client-go/util/workqueue/default_rate_limiters.go, and its REST client honours a Retry-After only within
one request's at most 10 retries, rest/with_retry.go). A failing key never stops the other keys. A 403 (missing
RBAC) is logged once per verb, resource and cluster, at error level, naming the group, instead of on every retry; a
403 that names another cause (a ResourceQuota, a terminating namespace, a webhook's denial) is not the syncer's RBAC
and is retried as any refusal. A worker outlives what a reconcile raises (a CancelledError the reconcile raises
itself, not a cancel of the worker, is that reconcile's failure; an ApiError's reason and message are strings
whatever built it); one that ends all the same is logged and makes `healthy` false.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from syncer.kube.client import PERSISTENT_RETRIES, ApiError
from syncer.kube.workqueue import ShutDown, WorkQueue
from syncer.metrics import Metrics

log = logging.getLogger(__name__)

Reconcile = Callable[[str], Awaitable[float | None]]

# What kube-apiserver's 403s that are not an authorization decision say (their admission plugins' messages):
# ResourceQuota (`exceeded quota: <name>, requested: ...`), NamespaceLifecycle (`unable to create new content in
# namespace <ns> because it is being terminated`, cause NamespaceTerminating) and an admission webhook's denial
# (`admission webhook "<name>" denied the request`, a webhook may answer 403), and a ValidatingAdmissionPolicy's
# (`ValidatingAdmissionPolicy '<name>' with binding '<binding>' denied request: ...`, reason Forbidden by default:
# k8s.io/apiserver pkg/admission/plugin/policy/validating/dispatcher.go).
_REFUSALS = (("exceeded quota", "exceeded quota"), ("because it is being terminated", "namespace terminating"),
             ("denied the request", "admission webhook denial"),
             ("ValidatingAdmissionPolicy '", "admission policy denial"))


def _cancelling() -> bool:
    """Whether the running task has been asked to stop (`Task.cancel`), rather than only met a CancelledError."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def refusal_cause(e: ApiError) -> str | None:
    """The cause an API refusal names that is the tenant's or the cluster's, not the syncer's permissions: "exceeded
    quota", "namespace terminating", "admission webhook denial"; None for any other."""
    return next((cause for words, cause in _REFUSALS if words in e.message), None)


def rbac_denial(e: ApiError) -> bool:
    """A 403 that is the syncer's missing RBAC: any 403 that names no other cause (`refusal_cause`)."""
    return e.status == 403 and refusal_cause(e) is None


def note_forbidden(forbidden: dict[tuple[str, str, str], str], e: ApiError, who: str,
                   logger: logging.Logger = log) -> tuple[str, str, str]:
    """Keep the RBAC refusal `e` (`rbac_denial`) in `forbidden`, (cluster, verb, resource) -> the API server's
    message, which readiness shows; the first time a cause is kept it is logged at error on `logger`, naming the
    group, for `who` (a controller or an event recorder). Returns the cause."""
    cause = (e.cluster, e.verb, e.resource)
    if cause not in forbidden:
        group = e.resource.split(".", 1)[1] if "." in e.resource else "core"
        logger.error("%s: forbidden to %s %s (group %s) on the %s cluster; check the RBAC of the syncer: %s",
                     who, e.verb, e.resource.split(".", 1)[0], group, e.cluster, e.message)
    forbidden[cause] = e.message
    return cause


class ReconcileError(Exception):
    """An expected failure that needs a retry with backoff; logged as one line, without a traceback,
    or only at debug level when `quiet` (the reconciler reports it itself, once per cause)."""

    quiet = False


class Controller:
    """Workers that take keys from `queue` and call `reconcile(key)`.

    Args:
        name: the controller label in metrics and logs ("runtimeclass", "pod").
        queue: the work queue the event handlers feed.
        reconcile: the level-triggered reconcile function.
        workers: how many keys are reconciled concurrently (never the same key twice at once).
        metrics: where reconcile counts and durations go.
    """

    def __init__(self, name: str, queue: WorkQueue, reconcile: Reconcile, metrics: Metrics,
                 workers: int = 2) -> None:
        self.name = name
        self.queue = queue
        self.reconcile = reconcile
        self.metrics = metrics
        self.workers = workers
        self.first_pass: set[str] = set()
        self.first_pass_done = asyncio.Event()
        self._running: list[asyncio.Task[None]] = []  # the workers of `run`
        self.forbidden: dict[tuple[str, str, str], str] = {}  # (cluster, verb, resource) -> message
        self._forbidden_keys: dict[tuple[str, str, str], set[str]] = {}  # cleared as those keys succeed
        metrics.workqueue_depth.labels(name=queue.name).set_function(lambda: len(queue))
        # the labelled series, looked up once (a lookup per reconcile costs more than the increment)
        self._results = {r: metrics.reconcile_total.labels(name, r) for r in ("success", "requeue_after", "error")}
        self._errors = metrics.reconcile_errors.labels(name)
        self._retries = metrics.workqueue_retries.labels(queue.name)
        self._time = metrics.reconcile_time.labels(name)

    def start_first_pass(self, keys: set[str]) -> None:
        """Track the keys queued at start-up; `first_pass_done` is set once each was reconciled once
        (successfully or not), which is what readiness waits for."""
        self.first_pass = set(keys)
        if not self.first_pass:
            self.first_pass_done.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then shut the queue down and give in-flight reconciles up to 5 s to finish (a
        clean stop). Cancelled (a lost lease), it cancels in-flight reconciles at once: controller-runtime's
        manager sets gracefulShutdownTimeout to 0 when leadership is lost (pkg/manager/internal.go)."""
        tasks = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}") for i in range(self.workers)]
        self._running = tasks
        for t in tasks:
            t.add_done_callback(self._ended)
        grace = 5.0
        try:
            await stop.wait()
        except asyncio.CancelledError:
            grace = 0.0  # in-flight reconciles are abandoned: they must not write any more
            raise
        finally:
            self.queue.shutdown()
            try:
                if grace:
                    await asyncio.wait(tasks, timeout=grace)
            finally:  # cancelled during the graceful wait too
                for t in tasks:
                    t.cancel()
                await asyncio.wait(tasks)

    @property
    def healthy(self) -> bool:
        """False once a worker of `run` has ended (while running, its keys would wait for ever)."""
        return not any(t.done() for t in self._running)

    @staticmethod
    def _ended(task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s ended with an error", task.get_name(), exc_info=task.exception())

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except ShutDown:
                return
            start = time.perf_counter()
            try:
                requeue_after = await self.reconcile(key)
            except asyncio.CancelledError as e:
                if _cancelling():  # this worker is being cancelled: a lost lease or the stop's deadline
                    raise
                self._failed(key, e)  # raised by the reconcile itself: its failure, retried
            except Exception as e:
                self._failed(key, e)
            else:
                self.queue.forget(key)
                self._clear_forbidden(key)
                # The reconcile saw the key's whole state and says when it needs to look again: a wake-up an
                # earlier reconcile asked for (a wait since ended, a retry since done) would find nothing to do
                self.queue.cancel_delayed(key)
                if requeue_after is not None:
                    self._results["requeue_after"].inc()
                    self.queue.add_after(key, requeue_after)
                else:
                    self._results["success"].inc()
            finally:
                self._time.observe(time.perf_counter() - start)
                # whatever happened, also in `_failed`: a key left processing is never handed out again
                # (client-go's processNextWorkItem: `defer c.queue.Done(obj)`)
                self.queue.done(key)
            if self.first_pass:
                self.first_pass.discard(key)
                if not self.first_pass:
                    self.first_pass_done.set()

    def _clear_forbidden(self, key: str) -> None:
        for cause in [c for c, keys in self._forbidden_keys.items() if key in keys]:
            self._forbidden_keys[cause].discard(key)
            if not self._forbidden_keys[cause]:
                del self._forbidden_keys[cause]
                self.forbidden.pop(cause, None)
                log.info("%s: %s %s on the %s cluster is allowed again", self.name, cause[1], cause[2], cause[0])

    def _failed(self, key: str, e: BaseException) -> None:
        """Count and log the failure `e` of `key`'s reconcile and queue its retry after the rate limiter's delay, or
        the error's Retry-After when longer, up to the rate limiter's cap."""
        self._results["error"].inc()
        self._errors.inc()
        self._retries.inc()
        retries = self.queue.num_requeues(key)
        if isinstance(e, ApiError) and rbac_denial(e):
            cause = note_forbidden(self.forbidden, e, self.name)
            self._forbidden_keys.setdefault(cause, set()).add(key)
        elif isinstance(e, ReconcileError) and e.quiet:
            log.debug("%s %s: %s (retry %d)", self.name, key, e, retries + 1)  # the reconciler logged it once
        elif isinstance(e, (ApiError, ReconcileError)):
            # A conflict, throttling or an API server that is briefly away is routine and retried: info. It
            # becomes something to act on (warning) only when it persists.
            transient = isinstance(e, ApiError) and e.transient
            log.log(logging.WARNING if not transient or retries + 1 >= PERSISTENT_RETRIES else logging.INFO,
                    "%s %s: %s (retry %d)", self.name, key, e, retries + 1)
        else:
            log.exception("%s %s: reconcile failed (retry %d)", self.name, key, retries + 1)
        delay = self.queue.rate_limiter.when(key)
        if isinstance(e, ApiError) and e.retry_after:
            delay = max(delay, min(e.retry_after, self.queue.rate_limiter.cap))
        self.queue.add_after(key, delay)
