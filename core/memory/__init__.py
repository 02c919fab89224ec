"""Memories as TheFold keeps them (docs/conformance.md, Memory): supersession, decayed relevance with
reinforcement, integrity and trust — each an indexed attribute or a pure rule the search, assembly and
write use cases apply."""
