"""TenantGate (core/tenancy/fencing.py) on fakes: admission reads a copy at most a TTL old, the check at the
end of a unit is fresh and purges when an erase came meanwhile — also when the unit failed — and work from
before an erase stays refused after a reopen."""

from __future__ import annotations

import pytest

from core.errors import TenantErasedError
from core.state import TenantFence
from core.tenancy.fencing import TenantGate


class FakeFences:
    def __init__(self) -> None:
        self.fences: dict[str, TenantFence] = {}
        self.reads = 0

    def fence(self, tenant_id: str, at: float) -> None:
        self.fences[tenant_id] = TenantFence(at)

    def fence_of(self, tenant_id: str) -> TenantFence | None:
        self.reads += 1
        return self.fences.get(tenant_id)

    def reopen(self, tenant_id: str, at: float) -> None:
        self.fences[tenant_id] = TenantFence(self.fences[tenant_id].erased_at, at)


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def parts() -> tuple[TenantGate, FakeFences, FakeClock, list[str]]:
    fences, clock, purged = FakeFences(), FakeClock(), []
    return TenantGate(fences, purged.append, clock, ttl_seconds=1.0), fences, clock, purged


def test_admission_reads_a_copy_at_most_a_ttl_old(
    parts: tuple[TenantGate, FakeFences, FakeClock, list[str]],
) -> None:
    gate, fences, clock, _ = parts
    gate.admit("t")
    fences.fence("t", clock.t)  # erased by another process
    gate.admit("t")  # its copy is fresh enough: admitted (the end of the unit will catch it)
    assert fences.reads == 1
    clock.t += 1.5
    with pytest.raises(TenantErasedError):
        gate.admit("t")


def test_a_unit_an_erase_raced_purges_again_even_when_it_failed(
    parts: tuple[TenantGate, FakeFences, FakeClock, list[str]],
) -> None:
    gate, fences, clock, purged = parts
    with pytest.raises(TenantErasedError), gate.unit("t"):
        fences.fence("t", clock.t)  # the erase lands while the unit writes
    assert purged == ["t"]
    gate.forget("t")
    fences.fences.clear()
    with pytest.raises(TenantErasedError), gate.unit("u"):
        fences.fence("u", clock.t)
        raise ValueError("the unit failed after writing")
    assert purged == ["t", "u"]
    with gate.unit("v"):  # never erased: nothing purged
        pass
    assert purged == ["t", "u"]


def test_after_a_reopen_only_work_from_before_the_erase_is_refused(
    parts: tuple[TenantGate, FakeFences, FakeClock, list[str]],
) -> None:
    gate, fences, clock, purged = parts
    fences.fence("t", 500.0)
    fences.reopen("t", 900.0)
    gate.admit("t")  # a request
    gate.admit("t", since=600.0)  # a change sent after the erase
    with pytest.raises(TenantErasedError):
        gate.admit("t", since=400.0)  # a change queued before it
    with gate.unit("t"):
        pass
    assert purged == []


def test_a_retry_refused_while_the_tenant_is_erased_purges_it_first_and_never_after_a_reopen(
    parts: tuple[TenantGate, FakeFences, FakeClock, list[str]],
) -> None:
    gate, fences, clock, purged = parts
    sent = clock.t  # a change sent, delivered, cut off after writing; then the erase
    clock.t += 1
    fences.fence("t", clock.t)
    with pytest.raises(TenantErasedError):
        gate.admit("t", since=sent)  # a first delivery: it wrote nothing, so nothing to purge
    assert purged == []
    with pytest.raises(TenantErasedError):
        gate.admit("t", since=sent, retried=True)  # its redelivery: the cut-off run's writes go
    assert purged == ["t"]
    fences.reopen("t", clock.t + 1000)
    with pytest.raises(TenantErasedError):
        gate.admit("t", since=sent, retried=True)  # still refused; the reopened tenant's data is kept
    assert purged == ["t"]
