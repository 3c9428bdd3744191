"""S3 settings for lakectl: where the endpoint and credentials come from, and how to hide them.

Options are resolved once, in the process that parses the command line, into plain s3fs keyword
arguments. They are then carried inside :class:`lakectl.storage.fs.Storage` (picklable), so Spark
executors on other machines build the same filesystem without relying on their own environment.

Precedence, highest first: ``[storage]`` options in ``lakectl.toml`` (``endpoint_url``, ``region``,
``access_key_id``, ``secret_access_key``, ``session_token``; s3fs's own ``key``/``secret``/``token``
are accepted too), then the usual AWS environment variables (``AWS_ENDPOINT_URL_S3``,
``AWS_ENDPOINT_URL``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), then botocore's own chain (profiles, instance
roles). Other ``[storage]`` keys are passed to s3fs unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

S3_SCHEMES = frozenset({"s3", "s3a"})

# lakectl.toml name -> (s3fs keyword, environment variables in decreasing precedence)
_SETTINGS: dict[str, tuple[str, tuple[str, ...]]] = {
    "access_key_id": ("key", ("AWS_ACCESS_KEY_ID",)),
    "secret_access_key": ("secret", ("AWS_SECRET_ACCESS_KEY",)),
    "session_token": ("token", ("AWS_SESSION_TOKEN",)),
    "endpoint_url": ("endpoint_url", ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")),
}
_REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION")
# Keys whose values are never shown; matched as substrings of option names, at any depth.
_SECRET_HINTS = ("secret", "token", "password")
# Shorter "secrets" (test placeholders) would match random parts of URLs; real ones are far longer.
_MIN_SCRUBBED = 6
# Network behaviour: fail within seconds when the endpoint is down, not after minutes of retries.
_TIMEOUTS = {"connect_timeout": 5, "read_timeout": 60, "max_attempts": 3}


def s3fs_options(
    options: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """s3fs keyword arguments from ``[storage]`` options and the AWS environment variables."""
    env = os.environ if environ is None else environ
    rest = dict(options)
    out: dict[str, Any] = {}
    for name, (keyword, env_names) in _SETTINGS.items():
        value = rest.pop(name, None) or rest.pop(keyword, None)
        value = value or next((env[e] for e in env_names if env.get(e)), None)
        if value:
            out[keyword] = str(value)
    region = rest.pop("region", None) or next((env[e] for e in _REGION_ENV if env.get(e)), None)
    client_kwargs = dict(rest.pop("client_kwargs", {}) or {})
    if region:
        client_kwargs["region_name"] = str(region)
    out["client_kwargs"] = client_kwargs
    timeouts = {k: rest.pop(k, default) for k, default in _TIMEOUTS.items()}
    config_kwargs = dict(rest.pop("config_kwargs", {}) or {})
    config_kwargs.setdefault("connect_timeout", int(timeouts["connect_timeout"]))
    config_kwargs.setdefault("read_timeout", int(timeouts["read_timeout"]))
    config_kwargs.setdefault(
        "retries", {"max_attempts": int(timeouts["max_attempts"]), "mode": "standard"}
    )
    out["config_kwargs"] = config_kwargs
    # The log is found by listing: a cached listing would hide other writers' commits.
    out["use_listings_cache"] = False
    out.update(rest)
    return out


def is_secret_option(name: str) -> bool:
    """Whether an option's value must never be shown (secrets, tokens, passwords)."""
    return any(hint in name.lower() for hint in _SECRET_HINTS)


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``options`` fit for display: secret values replaced by ``****``."""
    return {
        k: "****" if is_secret_option(k) else (redact(v) if isinstance(v, Mapping) else v)
        for k, v in options.items()
    }


def secret_values(options: Mapping[str, Any]) -> list[str]:
    """Every secret value in ``options`` (at any depth), to scrub from messages."""
    found: list[str] = []
    for k, v in options.items():
        if isinstance(v, Mapping):
            found.extend(secret_values(v))
        elif is_secret_option(k) and isinstance(v, str) and v:
            found.append(v)
    return found


def scrub(text: str, options: Mapping[str, Any]) -> str:
    """``text`` with every secret value of ``options`` replaced by ``****``."""
    for value in secret_values(options):
        if len(value) >= _MIN_SCRUBBED:
            text = text.replace(value, "****")
    return text


def is_precondition_failed(exc: BaseException) -> bool:
    """Whether an s3fs/botocore error says ``If-None-Match: *`` found the key taken (HTTP 412)."""
    return _error_code(exc) in ("PreconditionFailed", "412")


def is_conditional_conflict(exc: BaseException) -> bool:
    """Whether S3 answered 409 ConditionalRequestConflict (a concurrent conditional write is in
    flight on the same key; AWS asks the client to retry)."""
    return _error_code(exc) in ("ConditionalRequestConflict", "409")


def _error_code(exc: BaseException) -> str | None:
    """The S3 error code (or HTTP status) of an error, looking through s3fs's wrapping."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        response = getattr(current, "response", None)
        if isinstance(response, Mapping):
            code = response.get("Error", {}).get("Code")
            if code:
                return str(code)
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status:
                return str(status)
        current = current.__cause__ or current.__context__
    return None
