"""``lakectl stream``: a landing directory, watched by Spark Structured Streaming, loaded as one
transaction per micro-batch with ``load``'s semantics (:func:`lakectl.ops.load.load_frame`).

Exactly once: each micro-batch's commit record names the landing files it applied
(``info.stream``). Before applying files, the stream reads the log and drops every file a
committed record already names; at start it also lists the landing directory itself and applies
what the log lacks. So Spark's checkpoint may be ahead of the log (a batch Spark marked done that
never committed) or behind it (a batch committed, Spark killed before it noted so): the log
decides, and a kill at any moment neither loses nor repeats a file.

Bad files: each file is read with ``load``'s readers; when a micro-batch fails validation, its
files are checked one by one and the bad ones stop the stream (``fail``: nothing of the batch is
committed) or are moved to ``SOURCE_DIR/_bad/`` with the error beside them (``skip``) while the
rest of the batch commits.

Maintenance: after a commit, ``compact --auto`` runs in a background thread (one at a time) on
the same Spark session, so deltas stay near the table's ``compactor.delta.num.threshold`` while
ingestion goes on; compactions never conflict with loads.

Engines: with the Arrow engine (``--engine arrow``) no JVM starts: lakectl lists the landing
directory every trigger itself, reads each file with pyarrow (:mod:`lakectl.ops.stream_arrow`),
loads each micro-batch with ``load --engine arrow``'s transaction
(:func:`lakectl.ops.load_arrow.load_table_arrow`) and compacts with ``compact --engine arrow``.
With ``auto`` the stream runs so too, and each micro-batch over the table's
``engine.auto.max-bytes`` (or one the Arrow engine cannot load) is read again and loaded by Spark.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import hashlib
import os
import signal
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lakectl.engine import Engine, EngineChoice, parse_engine
from lakectl.errors import (
    BadInputError,
    CommitConflictError,
    LakectlError,
    SourceNotFoundError,
    UsageError,
)
from lakectl.ops.context import Context
from lakectl.ops.load import (
    LoadOptions,
    LoadResult,
    check_mode_options,
    check_table_options,
    parse_op_values,
)
from lakectl.ops.results import iso_time
from lakectl.planning.compaction_plan import Thresholds
from lakectl.planning.stream_plan import (
    BAD_DIR,
    LandingFile,
    applied_files,
    is_landing_name,
    pending,
    relative_name,
    stream_info,
)
from lakectl.storage.fs import storage_for
from lakectl.table.log import LoadMode
from lakectl.table.metadata import TableMetadata
from lakectl.table.store import META_DIR, now_millis
from lakectl.times import utc

STREAMS_DIR = f"{META_DIR}/streams"
BAD_FILE_ACTIONS = ("fail", "skip")
CONFLICT_RETRIES = 5
# Deltas (and delete deltas) a partition may hold beyond compactor.delta.num.threshold before
# the next micro-batch waits for the running compaction: ingestion pauses only when compaction
# falls behind. A CDC micro-batch adds at most two directories per partition.
DELTA_MARGIN = 4
COMPACTION_WAIT = 120.0  # seconds
# Below the delta-count threshold, `compact --auto` (which may still choose a major compaction by
# size) runs at most this often: on a small machine every compaction takes CPU from ingestion.
COMPACT_EVERY = 30.0  # seconds

Event = Callable[[str], None]


@dataclass(frozen=True)
class StreamOptions:
    """What to watch and how to load it (``load`` holds mode, key, op and order options)."""

    load: LoadOptions
    trigger_seconds: float = 5.0
    on_bad_file: str = "fail"
    max_batches: int | None = None  # stop after this many committed micro-batches
    stop_after: float | None = None  # stop after this many seconds
    max_files_per_batch: int = 1000
    compact: bool = True


@dataclass
class StreamStatus:
    """What the status line shows; updated by the micro-batches, read by the CLI."""

    state: str = "starting"
    batches: int = 0
    files: int = 0
    rows: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    last_version: int | None = None
    last_commit_at: dt.datetime | None = None  # UTC
    lag_seconds: float | None = None  # oldest file of the last batch: arrival -> commit
    lags: list[float] = field(default_factory=list)
    bad_files: list[dict[str, str]] = field(default_factory=list)
    compactions: int = 0
    compacting: bool = False
    compaction_error: str | None = None
    max_deltas_per_partition: int = 0  # most delta + delete-delta dirs a reader saw in one
    already_applied_files_skipped: int = 0  # handed over again, but a committed record named
    engines: dict[str, int] = field(default_factory=dict)  # committed micro-batches per engine
    engine_reason: str | None = None
    """Why the latest committed micro-batch ran in its engine (as ``load``'s ``engine_reason``)."""
    fallback_reason: str | None = None
    """Under ``auto``: why the latest micro-batch handed to Spark went there (its size, or what
    the Arrow engine could not do); ``None`` while every micro-batch ran in Arrow."""

    @property
    def lag_seconds_median(self) -> float | None:
        """The median lag over the batches so far."""
        return _round(statistics.median(self.lags)) if self.lags else None

    @property
    def lag_seconds_max(self) -> float | None:
        """The longest lag over the batches so far."""
        return _round(max(self.lags)) if self.lags else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "batches": self.batches,
            "files": self.files,
            "rows": self.rows,
            "counts": dict(self.counts),
            "last_version": self.last_version,
            "last_commit_at": iso_time(self.last_commit_at),
            "lag_seconds": _round(self.lag_seconds),
            "lag_seconds_median": self.lag_seconds_median,
            "lag_seconds_max": self.lag_seconds_max,
            "bad_files": list(self.bad_files),
            "compactions": self.compactions,
            "compacting": self.compacting,
            "compaction_error": self.compaction_error,
            "max_deltas_per_partition": self.max_deltas_per_partition,
            "already_applied_files_skipped": self.already_applied_files_skipped,
            "engines": dict(self.engines),
            "engine_reason": self.engine_reason,
            "fallback_reason": self.fallback_reason,
        }


@dataclass(frozen=True)
class StreamResult:
    table: str
    source: str
    stopped_by: str
    status: StreamStatus
    seconds: float
    engine: str = "spark"
    """The stream's engine: ``spark``, ``arrow`` or ``auto`` (``status.engines`` counts the
    micro-batches each engine loaded)."""

    @property
    def engine_reason(self) -> str:
        """Why micro-batches ran where they did: under ``auto`` the latest reason one went to
        Spark, else the latest micro-batch's reason (empty before any committed)."""
        return self.status.fallback_reason or self.status.engine_reason or ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "source": self.source,
            "stopped_by": self.stopped_by,
            "seconds": round(self.seconds, 3),
            "engine": self.engine,
            "engine_reason": self.engine_reason or None,
            "status": self.status.to_dict(),
        }


class StreamStopped(Exception):
    """Raised inside a micro-batch abandoned by a second Ctrl-C (nothing of it commits)."""


def stream(
    ctx: Context,
    table_ref: str | None,
    options: StreamOptions,
    on_event: Event | None = None,
    on_tick: Callable[[StreamStatus], None] | None = None,
    handle_signals: bool = True,
) -> StreamResult:
    """Run the stream in the foreground until a stop condition or SIGINT/SIGTERM."""
    runner = StreamRunner(ctx, table_ref, options, on_event or (lambda _: None))
    return runner.run(on_tick, handle_signals)


class StreamRunner:
    """One running stream: the micro-batch function, the Spark query and the compaction thread."""

    def __init__(
        self, ctx: Context, table_ref: str | None, options: StreamOptions, on_event: Event
    ):
        lo = options.load
        check_mode_options(lo)
        if options.on_bad_file not in BAD_FILE_ACTIONS:
            raise UsageError(f"--on-bad-file {options.on_bad_file!r}: use fail or skip")
        self.ctx = ctx
        self.options = options
        self.engine = parse_engine(lo.engine or ctx.config.engine)
        self.arrow = self.engine is not Engine.SPARK  # no JVM unless a micro-batch needs one
        self.event = on_event
        self.store = ctx.table(table_ref)
        self.store.require_log()
        state = self.store.read_state()
        check_table_options(state.metadata, lo)
        self.source_storage, self.source_path = storage_for(lo.source, ctx.config.storage_options)
        if not self.source_storage.isdir(self.source_path):
            raise SourceNotFoundError(f"landing directory {lo.source} does not exist")
        self.source_url = self.source_storage.url(self.source_path)
        self.fmt = (lo.format or "").lower() or _guess_format(lo.source, ctx.config.storage_options)
        self.status = StreamStatus()
        self._skipped: set[str] = set()  # bad or vanished files, this run
        self._skipped_unrecorded: list[str] = []
        self._batch_lock = threading.Lock()
        self._stop_reason: str | None = None
        self._abandon = False
        self._error: BaseException | None = None
        self._compaction: threading.Thread | None = None
        self._last_deltas = 0
        self._started = time.time()
        self._delta_threshold = Thresholds.from_metadata(state.metadata).delta_num
        self._delta_limit = self._delta_threshold + DELTA_MARGIN
        self._last_compaction = 0.0

    # --- stopping --------------------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        """Stop after the running micro-batch (a second request abandons it)."""
        if self._stop_reason is not None and reason == "signal":
            self._abandon = True
            if self.arrow:
                return  # the running micro-batch sees the flag before it commits
            with contextlib.suppress(Exception):
                spark = self.ctx.spark()
                if self.ctx.config.remote:
                    spark.interruptAll()
                else:
                    spark.sparkContext.cancelAllJobs()
            return
        if self._stop_reason is None:
            self._stop_reason = reason
            self.status.state = "stopping"

    @contextlib.contextmanager
    def _signals(self, enabled: bool) -> Iterator[None]:
        if not enabled or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def handler(signum: int, _frame: Any) -> None:
            self.request_stop("signal")

        for sig in previous:
            signal.signal(sig, handler)
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    # --- the run ----------------------------------------------------------------------------
    def run(
        self, on_tick: Callable[[StreamStatus], None] | None = None, handle_signals: bool = True
    ) -> StreamResult:
        """Catch up with the landing directory, then follow it (with Spark Structured Streaming,
        or, with the Arrow engine, by listing it every trigger) until stopped."""
        started = self._started = time.time()
        tick = on_tick or (lambda _: None)
        # First: starting Spark installs its own SIGINT handler.
        spark = None if self.arrow else self.ctx.spark()
        with self._signals(handle_signals):
            self._abort_dead_writers()
            self.status.state = "catching up"
            tick(self.status)
            self._apply_listing()
            self._check_limits()
            query = None
            # Over Spark Connect, foreachBatch would run inside the server, away from this
            # process's log and status; and Spark's file source cannot watch a scheme its Hadoop
            # has no filesystem for (s3:// without hadoop-aws). There the trigger loop is
            # lakectl's own listing, and the files are read through fsspec (as always with the
            # Arrow engine).
            polling = spark is None or self._polls(spark)
            if spark is not None and not polling and self._stop_reason is None and not self._error:
                from lakectl.spark.stream_source import start_file_stream

                query = start_file_stream(
                    spark,
                    self.source_url,
                    self.store.storage.url(self._checkpoint_path()),
                    self.options.trigger_seconds,
                    self.options.max_files_per_batch,
                    self._on_spark_batch,
                )
            self.status.state = "waiting for files"
            last_poll = time.time()
            try:
                while self._stop_reason is None and self._error is None:
                    self._check_limits()
                    if polling and time.time() - last_poll >= self.options.trigger_seconds:
                        self._apply_listing()
                        last_poll = time.time()
                    if query is not None and not query.isActive:
                        self._error = self._error or _query_error(query)
                        break
                    tick(self.status)
                    time.sleep(0.2)
                tick(self.status)
                # Let the running micro-batch finish (or see the abandon flag); a later one sees
                # the stop request and applies nothing. Then stop Spark.
                with self._batch_lock:
                    pass
                if query is not None:
                    query.stop()
            finally:
                self._wait_for_compaction()
            self.status.state = "stopped"
            tick(self.status)
        if self._error is not None and not self._abandon:
            raise self._error
        if self._abandon:
            self._stop_reason = "signal (running micro-batch abandoned)"
        return StreamResult(
            table=self.store.name or self.store.url,
            source=self.source_url,
            stopped_by=self._stop_reason or "error",
            status=self.status,
            seconds=time.time() - started,
            engine=self.engine.value,
        )

    def _polls(self, spark: Any) -> bool:
        """Whether lakectl's own listing, not Spark's file source, triggers micro-batches."""
        from lakectl.spark.fsspec_orc import hadoop_url

        return bool(self.ctx.config.remote) or (
            hadoop_url(spark, self.source_storage, self.source_path) is None
        )

    def _apply_listing(self) -> None:
        """Apply what the landing directory holds and the log lacks (catch-up, Connect polls)."""
        try:
            self._apply(self._list_landing())
        except BaseException as exc:  # raised by run() once the stream has stopped
            self._error = self._error or exc

    def _check_limits(self) -> None:
        if self.options.max_batches is not None and self.status.batches >= self.options.max_batches:
            self.request_stop("max-batches")
        elif (
            self.options.stop_after is not None
            and time.time() - self._started >= self.options.stop_after
        ):
            self.request_stop("stop-after")

    def _checkpoint_path(self) -> str:
        digest = hashlib.sha1(self.source_url.encode()).hexdigest()[:12]
        return self.store.path(STREAMS_DIR, digest, "checkpoint")

    def _on_spark_batch(self, arrived: list[tuple[str, int]], batch_id: int) -> None:
        files = []
        for url, mtime in arrived:
            name = relative_name(url, self.source_path)
            if name is not None:
                files.append(LandingFile(name, 0, mtime))
        try:
            self._apply(files, from_spark=True)
        except BaseException as exc:
            # run() raises it in the main thread and stops the query. Returning normally lets
            # Spark mark the batch done although nothing committed: the next run's catch-up
            # applies those files (the log decides, not the checkpoint).
            self._error = self._error or exc

    # --- micro-batches -----------------------------------------------------------------------
    def _file_url(self, name: str) -> str:
        return self.source_storage.url(self.source_storage.join(self.source_path, name))

    def _list_landing(self) -> list[LandingFile]:
        out = []
        for entry in self.source_storage.fs.ls(self.source_path, detail=True):
            if entry.get("type") != "file":
                continue
            name = os.path.basename(str(entry["name"]).rstrip("/"))
            out.append(LandingFile(name, int(entry.get("size") or 0), _mtime_ms(entry)))
        return out

    def _apply(self, files: list[LandingFile], from_spark: bool = False) -> None:
        """Apply what of ``files`` the log does not name yet, in arrival order, in batches."""
        with self._batch_lock:
            if self._stop_reason is not None or self._error is not None:
                return  # not started: a later run's catch-up applies these files
            state = self.store.read_state()
            done = applied_files(state.records, self.source_url) | self._skipped
            todo = pending(files, done)
            if from_spark:  # Spark handed over files the log already has (a replayed batch)
                self.status.already_applied_files_skipped += len({f.name for f in files} & done)
            size = max(1, self.options.max_files_per_batch)
            for i in range(0, len(todo), size):
                self._check_limits()
                if self._stop_reason is not None:
                    return
                self._apply_batch(todo[i : i + size])

    def _apply_batch(self, files: list[LandingFile]) -> None:
        if self._last_deltas >= self._delta_limit and self._compaction is not None:
            self.status.state = "waiting for compaction"
            self._compaction.join(COMPACTION_WAIT)
        self.status.state = f"loading {len(files)} file(s)"
        conflicts = 0
        while files:
            frames, files = self._read(files)
            if not frames:
                break
            try:
                result = self._commit(frames)
            except BadInputError:
                bad, empty = self._diagnose(frames)
                if bad:  # empty files stay: they commit with the rest, adding no rows
                    self._handle_bad(bad)
                    dropped = set(bad)
                elif empty:  # rows of no file: nothing to commit for them
                    self._skipped.update(empty)
                    dropped = empty
                elif len(frames) == 1:
                    raise
                else:  # each file passes alone, only the union is refused: one at a time
                    for name, frame in frames:
                        self._after_commit(self._commit([(name, frame)]), [name], files)
                    break
                files = [f for f in files if f.name not in dropped]
                continue
            except CommitConflictError:
                conflicts += 1
                if conflicts > CONFLICT_RETRIES:
                    raise
                self.event(f"commit conflict, retrying ({conflicts}/{CONFLICT_RETRIES})")
                continue
            self._after_commit(result, [n for n, _ in frames], files)
            break
        self.status.state = "waiting for files"

    def _read(self, files: list[LandingFile]) -> tuple[list[tuple[str, Any]], list[LandingFile]]:
        """Read each file as ``load`` would; bad ones are handled, vanished ones dropped."""
        read = self._read_arrow if self.arrow else self._read_spark()
        frames: list[tuple[str, Any]] = []
        bad: dict[str, str] = {}
        kept: list[LandingFile] = []
        for f in files:
            url = self._file_url(f.name)
            try:
                frames.append((f.name, read(f.name, url)))
                kept.append(f)
            except SourceNotFoundError:
                self._skipped.add(f.name)
                self.event(f"{f.name}: vanished before it was read; skipped")
            except BadInputError as exc:
                if _is_empty_file(exc):
                    self._skipped.add(f.name)
                    continue
                bad[f.name] = exc.message
        if bad:
            self._handle_bad(bad)
        return frames, kept

    def _read_arrow(self, name: str, url: str) -> Any:
        """One file as ``load --engine arrow`` reads it."""
        from lakectl.ops.stream_arrow import read_file_arrow

        return read_file_arrow(url, self.fmt, self.source_storage.options)

    def _read_spark(self) -> Callable[[str, str], Any]:
        """How Spark reads one file (``name``, ``url``) of a micro-batch."""
        from lakectl.spark.sources import read_source

        spark = self.ctx.spark()
        return lambda name, url: self._read_one(spark, name, url, read_source)

    def _read_one(self, spark: Any, name: str, url: str, read_source: Any) -> Any:
        """A CSV file on a Hadoop filesystem with its header parsed here; anything else as
        ``load`` reads it."""
        from lakectl.spark.stream_source import read_csv_with_header

        if self.fmt != "csv" or self.source_storage.scheme not in ("file", "hdfs"):
            return read_source(
                spark, url, self.fmt, False, storage_options=self.source_storage.options
            )
        path = self.source_storage.join(self.source_path, name)
        try:
            with self.source_storage.fs.open(path, "rb") as handle:
                first = handle.readline().decode("utf-8-sig").rstrip("\r\n")
        except FileNotFoundError as exc:
            raise SourceNotFoundError(f"source {url} does not exist") from exc
        header = next(csv.reader([first]), []) if first else []
        if not header:
            raise BadInputError(f"{url}: the batch is empty (no columns, no rows)")
        return read_csv_with_header(spark, url, header)

    def _commit(self, frames: list[tuple[str, Any]]) -> LoadResult:
        self._unless_abandoned()
        state = self.store.read_state()
        names = [n for n, _ in frames]
        info = stream_info(self.source_url, self.fmt, names, self._skipped_unrecorded)
        # Errors name the file when there is one, else the landing directory.
        label = self._file_url(names[0]) if len(names) == 1 else self.source_url
        options = dataclasses.replace(self.options.load, source=label)
        if self.arrow:
            result = self._commit_arrow(state, frames, options, info, label)
        else:
            result = self._commit_spark(state, frames, options, info)
        self._skipped_unrecorded = []
        return result

    def _commit_spark(
        self, state: Any, frames: list[tuple[str, Any]], options: LoadOptions, info: dict[str, Any]
    ) -> LoadResult:
        from lakectl.ops.load import load_frame

        raw = _union(state.metadata, [frame for _, frame in frames])
        return load_frame(
            self.ctx,
            self.store,
            state,
            raw,
            options,
            fmt=self.fmt,
            info=info,
            before_commit=self._unless_abandoned,
        )

    def _commit_arrow(
        self,
        state: Any,
        frames: list[tuple[str, Any]],
        options: LoadOptions,
        info: dict[str, Any],
        label: str,
    ) -> LoadResult:
        """Load the micro-batch as ``load --engine arrow`` does; ``auto`` hands a micro-batch
        over the size limit, or one the Arrow engine finds it cannot load, to Spark, which reads
        its files again."""
        from lakectl.engine import with_spark_fallback
        from lakectl.ops.load_arrow import load_table_arrow
        from lakectl.ops.stream_arrow import union_arrow

        def in_spark(choice: EngineChoice) -> LoadResult:
            spark_read = self._read_spark()
            spark_frames = [(n, spark_read(n, self._file_url(n))) for n, _ in frames]
            result = self._commit_spark(self.store.read_state(), spark_frames, options, info)
            return dataclasses.replace(
                result, engine=choice.engine.value, engine_reason=choice.reason
            )

        def in_arrow() -> LoadResult:
            raw = union_arrow(state.metadata, [frame for _, frame in frames], label)
            return load_table_arrow(
                self.ctx,
                self.store,
                state,
                raw,
                options,
                self.engine,
                fmt=self.fmt,
                info=info,
                in_spark=in_spark,
                before_commit=self._unless_abandoned,
            )

        return with_spark_fallback(self.engine, in_arrow, in_spark)

    def _unless_abandoned(self) -> None:
        """Abort the micro-batch, before its load and again at its commit, if a second stop
        request came (its Spark jobs may all have finished before the request could cancel
        them)."""
        if self._abandon:
            raise StreamStopped("stopped before the micro-batch committed")

    def _diagnose(self, frames: list[tuple[str, Any]]) -> tuple[dict[str, str], set[str]]:
        """Check each file of a refused micro-batch alone: the bad ones (name -> error) and the
        empty ones (a header, no rows)."""
        if self.arrow:
            return self._diagnose_arrow(frames)
        from lakectl.spark.batch import BatchOptions, first_line, shape_batch

        lo = self.options.load
        meta = self.store.read_state().metadata
        op_values = parse_op_values(lo.op_values) if lo.mode is LoadMode.CDC else None
        op_column = lo.op_column or ("op_code" if lo.mode is LoadMode.CDC else None)
        batch_opts = BatchOptions(lo.mode, op_column, op_values, lo.order_by)
        bad: dict[str, str] = {}
        empty: set[str] = set()
        for name, frame in frames:
            label = self._file_url(name)
            try:
                if not frame.limit(1).collect():
                    empty.add(name)  # not an error: it adds nothing
                    continue
                shape_batch(frame, meta, batch_opts, label)
            except BadInputError as exc:
                bad[name] = exc.message
            except Exception as exc:  # Spark's FAILFAST parse error, from limit(1)
                bad[name] = f"{label}: cannot be parsed: {first_line(exc)}"
        return bad, empty

    def _diagnose_arrow(self, frames: list[tuple[str, Any]]) -> tuple[dict[str, str], set[str]]:
        from lakectl.ops.stream_arrow import check_file_arrow

        meta = self.store.read_state().metadata
        bad: dict[str, str] = {}
        empty: set[str] = set()
        for name, table in frames:
            try:
                if not check_file_arrow(meta, self.options.load, table, self._file_url(name)):
                    empty.add(name)
            except BadInputError as exc:
                bad[name] = exc.message
        return bad, empty

    def _handle_bad(self, bad: dict[str, str]) -> None:
        if self.options.on_bad_file == "fail":
            name, message = next(iter(bad.items()))
            more = f" (and {len(bad) - 1} more bad file(s))" if len(bad) > 1 else ""
            raise BadInputError(
                f"{message}{more}; the stream stopped and nothing of this micro-batch was committed",
                hint=f"fix or remove {name} from the landing directory and restart, "
                "or run with --on-bad-file skip",
            )
        for name, message in bad.items():
            src = self.source_storage.join(self.source_path, name)
            target = self.source_storage.join(self.source_path, BAD_DIR, name)
            with contextlib.suppress(FileNotFoundError):
                self.source_storage.move(src, target)
                self.source_storage.write_bytes(target + ".error.txt", message.encode())
            self._skipped.add(name)
            self._skipped_unrecorded.append(name)
            self.status.bad_files.append(
                {"file": name, "moved_to": f"{BAD_DIR}/{name}", "error": message}
            )
            self.event(f"skipped bad file {name} (moved to {BAD_DIR}/): {message}")

    def _after_commit(self, result: LoadResult, names: list[str], files: list[LandingFile]) -> None:
        now = now_millis()
        arrivals = [f.mtime_ms for f in files if f.name in set(names) and f.mtime_ms]
        st = self.status
        st.batches += 1
        st.engines[result.engine] = st.engines.get(result.engine, 0) + 1
        st.engine_reason = result.engine_reason or "asked for"
        if self.engine is Engine.AUTO and result.engine == Engine.SPARK.value:
            st.fallback_reason = st.engine_reason
            self.event(f"version {result.write_id} loaded by Spark ({st.engine_reason})")
        st.files += len(names)
        st.rows += sum(result.counts.values())  # every row of the batch, whatever it did
        for key, value in result.counts.items():
            st.counts[key] = st.counts.get(key, 0) + value
        st.last_version = result.write_id
        st.last_commit_at = utc(now)
        if arrivals:
            st.lag_seconds = (now - min(arrivals)) / 1000
            st.lags.append(st.lag_seconds)
        self._last_deltas = self._deltas_per_partition(result)
        st.max_deltas_per_partition = max(st.max_deltas_per_partition, self._last_deltas)
        self.event(
            f"version {result.write_id}: {len(names)} file(s), "
            + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in result.counts.items())
            + f" (load {result.seconds:.1f}s"
            + (f", lag {st.lag_seconds:.1f}s)" if arrivals else ")")
        )
        self._maybe_compact()

    def _deltas_per_partition(self, result: LoadResult) -> int:
        from lakectl.scan.target import plan_lakectl

        touched = {a.rsplit("/", 1)[0] if "/" in a else "" for a in result.added}
        state = self.store.read_state()
        only = touched if state.metadata.partition_by else None
        _, plans, _ = plan_lakectl(self.store, state, only)
        return max((len(p.deltas) + len(p.delete_deltas) for p in plans), default=0)

    # --- maintenance -------------------------------------------------------------------------
    def _maybe_compact(self) -> None:
        if not self.options.compact:
            return
        if self._compaction is not None and self._compaction.is_alive():
            return
        if (
            self._last_deltas <= self._delta_threshold
            and time.time() - self._last_compaction < COMPACT_EVERY
        ):
            return
        self._last_compaction = time.time()
        self._compaction = threading.Thread(
            target=self._compact_once, name="lakectl-stream-compact", daemon=True
        )
        self._compaction.start()

    def _compact_once(self) -> None:
        from lakectl.ops.compact import CompactOptions, compact

        self.status.compacting = True
        try:
            ctx = dataclasses.replace(self.ctx)
            ctx.progress = lambda _: None
            options = CompactOptions(kind="auto", engine=self.engine.value)
            result = compact(ctx, self.store.url, options)
            if result.log_seq is not None:
                self.status.compactions += 1
                kinds = sorted({p.kind for p in result.chosen if p.kind})
                self.event(
                    f"compacted ({', '.join(kinds)}) {len(result.chosen)} partition(s) "
                    f"in {result.seconds:.1f}s"
                )
        except Exception as exc:  # a failed compaction never stops ingestion
            self.status.compaction_error = f"{type(exc).__name__}: {exc}"[:300]
            self.event(f"compaction failed: {self.status.compaction_error}")
        finally:
            self.status.compacting = False

    def _wait_for_compaction(self, timeout: float = COMPACTION_WAIT) -> None:
        if self._compaction is not None:
            self._compaction.join(timeout)

    def _abort_dead_writers(self) -> None:
        """Recover crashed writers (write ids and compactions) as ``clean`` would.

        A stream killed between allocating a write id and committing leaves it open, and
        compaction never folds anything at or above an open write id.
        """
        from lakectl.table.open_writers import recover_gone_writers

        recover_gone_writers(self.store, self.store.read_state(), "stream")


def _union(meta: TableMetadata, frames: list[Any]) -> Any:
    """The files of a micro-batch as one frame. A file may lack a column another one has: it
    reads what a load of that file alone would (the table's rule for absent columns,
    :meth:`~lakectl.table.metadata.TableMetadata.may_be_absent`: the default, or NULL)."""
    from functools import reduce

    from lakectl.spark.batch import absent_column

    types = {f.name.lower(): f.dataType for frame in frames for f in frame.schema.fields}
    names = {f.name.lower(): f.name for frame in frames for f in frame.schema.fields}
    filled = []
    for frame in frames:
        have = {c.lower() for c in frame.columns}
        for lowered, name in names.items():
            column = meta.schema.find(name)
            if lowered not in have and column is not None and meta.may_be_absent(name):
                frame = frame.withColumn(name, absent_column(column).cast(types[lowered]))
        filled.append(frame)
    return reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), filled)


def _guess_format(source: str, storage_options: dict[str, Any]) -> str:
    from lakectl.spark.sources import guess_format

    try:
        return guess_format(source, storage_options)
    except UsageError as exc:
        raise UsageError(
            f"cannot tell the format of the files in {source} (none has a known extension yet)",
            hint="pass --format csv|json|parquet|orc|avro",
        ) from exc


def _mtime_ms(entry: dict[str, Any]) -> int:
    value = entry.get("mtime") or entry.get("LastModified") or entry.get("last_modified")
    if value is None:
        return 0
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)


def _is_empty_file(exc: BadInputError) -> bool:
    return "the batch is empty" in exc.message


def _query_error(query: Any) -> BaseException:
    exc = query.exception()
    text = str(exc).strip().splitlines()[0] if exc else "the streaming query stopped"
    return LakectlError(f"the streaming query failed: {text[:500]}")


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


__all__ = [
    "StreamOptions",
    "StreamResult",
    "StreamRunner",
    "StreamStatus",
    "is_landing_name",
    "stream",
]
