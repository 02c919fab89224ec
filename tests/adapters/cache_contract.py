"""The Cache contract: every adapter's test module subclasses `CacheContract` and provides a `cache`
fixture returning a fresh, empty cache. Time is injected (`now`), never read from the clock."""

from __future__ import annotations

import threading

NOW = 1_900_000_000.0
THREADS = 8
INCREMENTS = 25


class CacheContract:
    """Behaviour every Cache adapter must show."""

    def test_values_round_trip_as_json(self, cache):
        value = {"results": [{"id": "t-1", "score": 0.8125, "tags": ["a", "b"]}], "total": 1, "ok": True}
        cache.set("search:1", value, 300, NOW)
        assert cache.get("search:1", NOW + 1) == value
        cache.set("text", "héllo ✓", 300, NOW)
        assert cache.get("text", NOW) == "héllo ✓"

    def test_a_missing_key_is_none(self, cache):
        assert cache.get("never-set", NOW) is None

    def test_entries_expire_exactly_at_their_ttl(self, cache):
        cache.set("k", [1, 2], 10, NOW)
        assert cache.get("k", NOW + 9.999) == [1, 2]
        assert cache.get("k", NOW + 10) is None
        assert cache.get("k", NOW + 3600) is None

    def test_an_expired_entry_stays_gone_even_if_read_earlier_again(self, cache):
        cache.set("k", "v", 10, NOW)
        assert cache.get("k", NOW + 11) is None
        cache.set("k", "fresh", 10, NOW + 20)
        assert cache.get("k", NOW + 25) == "fresh"

    def test_set_replaces_the_value_and_its_ttl(self, cache):
        cache.set("k", "old", 5, NOW)
        cache.set("k", "new", 60, NOW + 1)
        assert cache.get("k", NOW + 30) == "new"

    def test_mutating_a_returned_value_does_not_change_the_cache(self, cache):
        cache.set("k", {"ids": [1]}, 60, NOW)
        cache.get("k", NOW)["ids"].append(2)
        assert cache.get("k", NOW) == {"ids": [1]}

    def test_counters_start_at_zero_and_count_up(self, cache):
        assert cache.counter("gen:tenant-a") == 0
        assert [cache.incr("gen:tenant-a") for _ in range(3)] == [1, 2, 3]
        assert cache.counter("gen:tenant-a") == 3
        assert cache.counter("gen:tenant-b") == 0

    def test_counters_do_not_collide_with_values(self, cache):
        cache.set("gen:t", "cached", 60, NOW)
        assert cache.incr("gen:t") == 1
        assert cache.get("gen:t", NOW) == "cached"

    def test_concurrent_increments_are_never_lost(self, cache):
        barrier = threading.Barrier(THREADS)

        def bump():
            barrier.wait()
            for _ in range(INCREMENTS):
                cache.incr("hits")

        threads = [threading.Thread(target=bump) for _ in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert cache.counter("hits") == THREADS * INCREMENTS
