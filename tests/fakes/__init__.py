"""In-memory fakes of the ports (core/ports.py) for fast use-case tests through the composition root
(infra/wiring.py `Container(settings, overrides=...)`), in the manner of cosmicpython's unit tests: the
fakes hold state the tests assert on, and each one passes its port's contract suite in tests/adapters."""
