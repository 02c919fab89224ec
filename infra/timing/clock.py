"""The system clock behind core's Clock port."""

from __future__ import annotations

import time


class SystemClock:
    """Wall time and a monotonic timer from the operating system."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.perf_counter()
