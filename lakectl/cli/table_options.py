"""The options that lay out a new table: ``create`` takes them, ``load --create`` too."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def schema_option(*, required: bool, help: str) -> Decorator:
    """``--schema "col type, ..."`` (``schema_text``)."""
    return click.option("--schema", "schema_text", required=required, help=help)


def primary_key_option(help: str = "Key columns (comma-separated).") -> Decorator:
    """``--primary-key COLS``."""
    return click.option("--primary-key", metavar="COLS", help=help)


def partition_by_option(help: str = "Partition columns (comma-separated).") -> Decorator:
    """``--partition-by COLS``."""
    return click.option("--partition-by", metavar="COLS", help=help)


def buckets_option(
    help: str = "Bucket files per partition, hashed by key (0: no bucketing).",
) -> Decorator:
    """``--buckets N``."""
    return click.option("--buckets", type=int, default=0, show_default=True, help=help)
