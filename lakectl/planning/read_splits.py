"""How a merge-on-read is cut into Spark tasks, as a pure function of the files and their sizes.

Each task reads whole partition directories (a :class:`SplitGroup`): it loads the directory's
delete events once and applies them while it reads the bases and deltas, so a directory's
delete deltas must travel with its files. Directories are spread over tasks by weight, as Spark weighs
files (each costs its size plus an "open cost"); a directory larger than a task's share is
cut between its files, each piece carrying all of the directory's delete deltas.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Open costs may add tasks up to this many per core, no more. Past a few tasks per core, more
# tasks do not open files on more cores at once; each only adds its own cost (scheduling, the
# task's deserialization, per-task set-up). A 10M-row table with 10 CDC deltas in 40
# directories (840 files) was cut into 40 tasks for 2 cores; its first read in a new process
# took 4.4-5.9 s, in 8 tasks 4.0-4.7 s.
OPEN_COST_TASKS_PER_CORE = 4


@dataclass(frozen=True)
class SplitFile:
    """A file to read: its path, its length as listed, and whether it is in a base directory
    (whose events are all visible) or a delta (whose events are filtered by write id)."""

    path: str
    size: int
    base: bool = False


@dataclass(frozen=True)
class SplitGroup:
    """One partition directory's share of a task: partition values, data files, delete files."""

    values: tuple[object, ...]
    files: tuple[SplitFile, ...]
    deletes: tuple[SplitFile, ...]


def pack_splits(
    groups: Sequence[SplitGroup], max_bytes: int, open_cost: int, cores: int
) -> list[list[SplitGroup]]:
    """The tasks of a read: each a list of groups; every data file of ``groups`` is in exactly
    one task, with its directory's delete files.

    A directory is cut between its files only where its data files hold more than
    ``max_bytes``: each piece loads the directory's delete events again. The pieces go to a
    number of tasks that is a multiple of ``cores`` (so that no core is left with the last
    task alone; fewer where there are fewer pieces) and gives each at most about
    ``max_bytes``, largest piece first to the lightest task. A piece's weight counts
    ``open_cost`` bytes per file, delete files included, as Spark weighs files: many small
    files are not as cheap as their bytes say. Open costs raise the task count above what the
    bytes alone need to at most :data:`OPEN_COST_TASKS_PER_CORE` tasks per core; they still
    weigh in the balance.
    """

    def cost(files: Sequence[SplitFile]) -> int:
        return sum(f.size + open_cost for f in files)

    pieces: list[tuple[int, SplitGroup]] = []
    for group in groups:
        current: list[SplitFile] = []
        data = 0
        for f in group.files:
            if current and data + f.size > max_bytes:
                pieces.append((cost(current) + cost(group.deletes), _piece(group, current)))
                current, data = [], 0
            current.append(f)
            data += f.size
        if current:
            pieces.append((cost(current) + cost(group.deletes), _piece(group, current)))
    if not pieces:
        return []
    cores = max(cores, 1)
    by_bytes = _ceil(sum(f.size for g in groups for f in (*g.files, *g.deletes)), max_bytes)
    by_weight = _ceil(sum(weight for weight, _ in pieces), max_bytes)
    wanted = max(by_bytes, min(by_weight, OPEN_COST_TASKS_PER_CORE * cores))
    count = min(len(pieces), _ceil(wanted, cores) * cores)
    splits: list[list[SplitGroup]] = [[] for _ in range(count)]
    loads = [0] * count
    # Largest first (stable: equal weights keep the listing's order), each to the lightest.
    for weight, piece in sorted(pieces, key=lambda p: -p[0]):
        lightest = min(range(count), key=loads.__getitem__)
        splits[lightest].append(piece)
        loads[lightest] += weight
    return splits


def _ceil(amount: int, unit: int) -> int:
    return -(-amount // max(unit, 1))


def _piece(group: SplitGroup, files: list[SplitFile]) -> SplitGroup:
    return SplitGroup(group.values, tuple(files), group.deletes)


__all__ = ["OPEN_COST_TASKS_PER_CORE", "SplitFile", "SplitGroup", "pack_splits"]
