"""Fault injection for the embedded API server, driven in-process by tests.

A fault matches requests by Kubernetes verb (get, list, watch, create, update, patch, delete,
deletecollection), resource plural and, optionally, a substring of the client's user agent (None
matches any), and either fails them with an HTTP status (optionally with `Retry-After`), delays
them, or holds them until the test releases them, for the next `times` matching requests.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from kubesim.status import StatusError


@dataclass
class Fault:
    """One armed fault. `status` 0 means only `latency` (seconds) is added."""

    verb: str | None
    resource: str | None
    status: int
    times: int
    latency: float = 0.0
    retry_after: int | None = None
    message: str = ""
    agent: str | None = None
    hits: int = 0
    held: bool = False
    _hit: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _released: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    def release(self) -> None:
        """Let the requests a `held` fault holds (and any later match) go on."""
        self._released.set()

    async def wait_hits(self, n: int) -> None:
        """Wait until this fault has been applied at least `n` times."""
        while self.hits < n:
            self._hit.clear()
            await self._hit.wait()

    def matches(self, verb: str, resource: str, agent: str = "") -> bool:
        """True when this fault applies to a request of `verb` on `resource` from a client whose user
        agent is `agent`, and is not used up."""
        return (self.times > 0 and self.verb in (None, verb) and self.resource in (None, resource)
                and (self.agent is None or self.agent in agent))

    async def apply(self) -> None:
        """Hold until released (a `held` fault), delay, then fail if a status is set. Raises StatusError with the
        configured status."""
        self.times -= 1
        self.hits += 1
        self._hit.set()
        if self.held:
            await self._released.wait()
        if self.latency:
            await asyncio.sleep(self.latency)
        if self.status:
            headers = {"Retry-After": str(self.retry_after)} if self.retry_after is not None else None
            raise StatusError(self.status, self.message or f"injected fault: HTTP {self.status}",
                              details={"headers": headers} if headers else None)


class FaultInjector:
    """The faults armed on one server, checked in order for every resource request."""

    def __init__(self) -> None:
        self.armed: list[Fault] = []

    def fail(self, status: int, *, verb: str | None = None, resource: str | None = None, times: int = 1,
             retry_after: int | None = None, message: str = "", agent: str | None = None) -> Fault:
        """Fail the next `times` matching requests with HTTP `status`."""
        fault = Fault(verb, resource, status, times, retry_after=retry_after, message=message, agent=agent)
        self.armed.append(fault)
        return fault

    def delay(self, seconds: float, *, verb: str | None = None, resource: str | None = None,
              times: int = 1, agent: str | None = None) -> Fault:
        """Delay the next `times` matching requests by `seconds`."""
        fault = Fault(verb, resource, 0, times, latency=seconds, agent=agent)
        self.armed.append(fault)
        return fault

    def hold(self, *, verb: str | None = None, resource: str | None = None, times: int = 1,
             agent: str | None = None) -> Fault:
        """Hold the next `times` matching requests, before they touch storage, until `Fault.release()`: a test
        makes another client's write land while a controller's write is on its way."""
        fault = Fault(verb, resource, 0, times, held=True, agent=agent)
        self.armed.append(fault)
        return fault

    def clear(self) -> None:
        """Disarm every fault."""
        self.armed.clear()

    def match(self, verb: str, resource: str, agent: str = "") -> Fault | None:
        """The first armed fault for this request, if any (used-up faults are dropped)."""
        self.armed = [f for f in self.armed if f.times > 0]
        return next((f for f in self.armed if f.matches(verb, resource, agent)), None)
