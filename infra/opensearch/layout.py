"""How a new index generation is laid out on the cluster: primaries, replicas, routing by tenant.

Defaults fit the domain `template.yaml` creates (two data nodes in two Availability Zones) and are argued
with figures in docs/scaling.md:

- 2 primaries, replicas auto-expanding 0-1: one copy of every shard in each zone, so losing a node or a
  zone loses no acknowledged write and every search still completes; both nodes take writes; and the index
  can spread over four nodes later without a reindex. On one node (a laptop, `make opensearch-up`) the
  replica is not asked for, so the index is green.
- Routing by tenant (`_routing` = tenant id, required by the mapping so no write can go without it): a
  tenant's documents live on one shard and its searches, reads and writes touch that shard only.
  `routing_partition_size` > 1 spreads each tenant over that many shards instead (large tenants: no
  single shard has to hold one; a search then touches that many).

The layout is decided when a generation is created and read back from a live index (a generation made
before routing is read and written without it), so changing these settings takes effect at the next
`quarry reindex`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_SHARDS = 2
DEFAULT_REPLICAS = "0-1"  # a number, or an auto-expand range "min-max" ("0-all")


@dataclass(frozen=True, slots=True)
class Layout:
    """Shards, replicas and routing of the index generations this process creates."""

    shards: int = DEFAULT_SHARDS
    replicas: str = DEFAULT_REPLICAS
    routed: bool = True
    partition_size: int = 1

    def index_settings(self) -> dict[str, Any]:
        """The `index.*` settings these choices set."""
        out: dict[str, Any] = {"number_of_shards": self.shards}
        if "-" in self.replicas:
            out["auto_expand_replicas"] = self.replicas
        else:
            out["number_of_replicas"] = int(self.replicas)
        if self.routed and self.partition_size > 1:
            out["routing_partition_size"] = self.partition_size
            # A partition is consecutive routing hashes; with the default routing shards (many per shard,
            # so the index can be split later) consecutive hashes land on the same shard and the
            # partition spreads nothing (measured: a search touched 1 shard of 3, not 2).
            out["number_of_routing_shards"] = self.shards
        return out

    def mapping(self) -> dict[str, Any]:
        """The mapping's `_routing` entry: required when routed."""
        return {"_routing": {"required": True}} if self.routed else {}


def is_routed(live_mappings: dict[str, Any]) -> bool:
    """True when an index (its GET `_mapping` entry) requires a routing value on every document."""
    routing = (live_mappings.get("mappings") or {}).get("_routing") or {}
    return bool(routing.get("required"))


def check(shards: int, replicas: str, routed: bool, partition_size: int) -> str | None:
    """Why these settings cannot make an index, or None."""
    if partition_size > 1 and not routed:
        return "a routing partition size above 1 needs routing by tenant"
    if partition_size > 1 and partition_size >= shards:
        return f"the routing partition size ({partition_size}) must be below the shard count ({shards})"
    low, _, high = replicas.partition("-")
    if high and high != "all" and int(high) < int(low):
        return f"the replica range {replicas} is empty"
    return None
