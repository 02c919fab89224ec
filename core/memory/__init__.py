"""Memories with a lifecycle (docs/conformance.md#memory): supersession, decayed relevance with
reinforcement, integrity and trust — each an indexed attribute or a pure rule the search, assembly and
write use cases apply."""
