"""The one error tree of Quarry. Adapters translate SDK errors into it; one handler module maps it to HTTP.

QuarryError
├── InvalidInputError        fields: {path: message}          → 400
│   └── PayloadTooLargeError limit: bytes                      → 413
├── UnauthorizedError        missing or unknown credentials    → 401
├── ForbiddenError           scope: the scope that was needed  → 403
├── NotFoundError            kind, key                         → 404 (also for another tenant's object)
├── TenantErasedError        the tenant is fenced by its erase → 410
├── ConflictError            a write that cannot apply          → 409
│   ├── StaleVersionError    stored_version, given_version     (reported, never applied)
│   ├── VersionSchemeError   stored_version, given_version     (explicit and clock versions mixed)
│   ├── VersionConflictError version                           (same version, other content)
│   ├── RepeatedItemError    first: the earlier position        (an id twice in one request)
│   └── CursorExpiredError   a page cursor of an older index generation, or whose snapshot lapsed
├── UnavailableError         backend, retry_after seconds      → 503 with Retry-After
│   └── CallerVectorsError   a tenant whose vectors come from its callers has no embedder (never raised
│                            to a caller: the paths that embed query text fall back to keywords)
└── ConfigurationError       variables: {VAR: problem}          → 500, logged (the server's fault)
"""

from __future__ import annotations

from collections.abc import Mapping


class QuarryError(Exception):
    """Base of every error Quarry raises on purpose; `code` is stable and machine-readable."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInputError(QuarryError):
    """The request is malformed; `fields` maps each bad field's path to what is wrong with it."""

    code = "invalid_input"

    def __init__(self, message: str, fields: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields: dict[str, str] = dict(fields or {})


class PayloadTooLargeError(InvalidInputError):
    """The body (or a batch) is bigger than the configured limit."""

    code = "payload_too_large"

    def __init__(self, message: str, limit: int) -> None:
        super().__init__(message, {"body": f"must be at most {limit} bytes"})
        self.limit = limit


class UnauthorizedError(QuarryError):
    """No credentials, or credentials nobody issued."""

    code = "unauthorized"


class ForbiddenError(QuarryError):
    """The caller is known but lacks the scope the operation needs."""

    code = "forbidden"

    def __init__(self, message: str, scope: str) -> None:
        super().__init__(message)
        self.scope = scope
        self.fields = {"authorization": f"the token lacks the '{scope}' scope"}


class NotFoundError(QuarryError):
    """The object does not exist for this tenant (whether or not another tenant has it)."""

    code = "not_found"

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"{kind} '{key}' not found")
        self.kind = kind
        self.key = key


class TenantErasedError(QuarryError):
    """The tenant was erased (DELETE /tenant): its requests are refused, and a write that raced the erase
    was undone, until the tenant is reopened (POST /tenant/reopen)."""

    code = "tenant_erased"

    def __init__(self) -> None:
        super().__init__(
            "this tenant was erased; nothing is stored for it and nothing is accepted until it is reopened "
            "(POST /tenant/reopen)"
        )


class ConflictError(QuarryError):
    """The write conflicts with stored state; `fields` names what conflicts when one field does."""

    code = "conflict"

    def __init__(self, message: str, fields: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.fields: dict[str, str] = dict(fields or {})


class StaleVersionError(ConflictError):
    """A write older than what is stored: ignored and reported, never applied."""

    code = "stale_version"

    def __init__(self, key: str, stored_version: int, given_version: int) -> None:
        super().__init__(
            f"version {given_version} of '{key}' is older than the stored version {stored_version}; ignored"
        )
        self.key = key
        self.stored_version = stored_version
        self.given_version = given_version


class VersionSchemeError(ConflictError):
    """A write whose version is of another kind than the stored one (a sequence number against a time in
    milliseconds, or the reverse): applying or refusing it silently would strand one of the two forever."""

    code = "version_scheme_mismatch"

    def __init__(self, key: str, stored_version: int, given_version: int, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.stored_version = stored_version
        self.given_version = given_version
        self.fields = {"version": message}


class VersionConflictError(ConflictError):
    """A write at the stored version with other content: applying it would make one version mean two
    things, dropping it would lose a change silently."""

    code = "version_conflict"

    def __init__(self, key: str, version: int) -> None:
        super().__init__(
            f"version {version} of '{key}' is already stored with other content; send the change with a "
            "higher version"
        )
        self.key = key
        self.version = version
        self.fields = {"version": f"{version} is already stored with other content"}


class RepeatedItemError(ConflictError):
    """An entity named twice in one request: the later occurrence is refused, never silently dropped."""

    code = "duplicate_item"

    def __init__(self, key: str, first: int, unit: str = "item") -> None:
        super().__init__(
            f"'{key}' repeats {unit} {first} of this request; an entity may appear once per request (send the "
            "later change in a request of its own)"
        )
        self.key = key
        self.first = first
        self.fields = {"id": f"repeats {unit} {first}"}


class CursorExpiredError(ConflictError):
    """A paging cursor that can no longer continue: issued before the tenant's index changed (a cursor
    without a snapshot), or its snapshot's lifetime lapsed. Start again from the first page."""

    code = "cursor_expired"

    def __init__(self, lapsed_snapshot: bool = False) -> None:
        if lapsed_snapshot:
            super().__init__(
                "the search snapshot behind this cursor lapsed (its keep_alive passed without a page being "
                "read, or the tenant was erased); start again from the first page"
            )
            self.fields = {"cursor": "its snapshot's lifetime lapsed"}
            return
        super().__init__(
            "the tenant's index changed since this cursor was issued; search again without a cursor "
            "(send keep_alive on the first page to page over a snapshot that writes do not change)"
        )
        self.fields = {"cursor": "was issued for an older index generation"}


class UnavailableError(QuarryError):
    """A backend (index, embedder, state store) cannot be reached; retry later."""

    code = "unavailable"

    def __init__(self, backend: str, message: str, retry_after: int = 5) -> None:
        super().__init__(f"{backend} unavailable: {message}")
        self.backend = backend
        self.retry_after = retry_after

    @property
    def public_message(self) -> str:
        """What a caller may read: which backend and when to retry; never the SDK's text (hosts, ARNs)."""
        return f"{self.backend} is temporarily unavailable; retry in {self.retry_after} s"


class CallerVectorsError(UnavailableError):
    """Query or passage text cannot be embedded for a tenant whose vectors come from its callers
    (core/indexing/caller_vectors.py): not an outage, so it says so rather than "retry later"."""

    def __init__(self, tenant_id: str) -> None:
        super().__init__("embedder", f"tenant {tenant_id!r} brings its own vectors", retry_after=0)

    @property
    def public_message(self) -> str:
        return "this tenant's vectors come from its callers: no text is embedded"


class ConfigurationError(QuarryError):
    """A wrong or missing setting: the deployment's fault, never the caller's; `variables` names each."""

    code = "configuration_error"

    def __init__(self, message: str, variables: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.variables: dict[str, str] = dict(variables or {})
