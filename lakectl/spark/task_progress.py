"""How far the running Spark job is: done and total tasks of its active stages, for the status
line a terminal shows during long work."""

from __future__ import annotations

import sys


def active_tasks() -> str | None:
    """``stage 3: 12/200 tasks`` while a job runs in this process's Spark (``2 stages: ...``
    when several run at once), else None: no Spark started (none is started here), a Spark
    Connect session (no tracker on this side), or no stage running."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return None
    tracker = context.statusTracker()
    done = total = 0
    stages = []
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            stages.append(stage_id)
            done += info.numCompletedTasks
            total += info.numTasks
    if not total:
        return None
    where = f"stage {stages[0]}" if len(stages) == 1 else f"{len(stages)} stages"
    return f"{where}: {done}/{total} tasks"
