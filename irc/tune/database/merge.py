"""``merge``: several databases of one machine into one (``irc records merge``).

Records keep their workloads; a candidate the output already holds for the same
hardware is skipped (:func:`~irc.tune.database.base.copy_records`), so merging twice
writes nothing new. Records measured on other hardware do not mix in silently: unless
``allow_mixed``, every record (of the inputs and of an existing output) must carry the
hardware fingerprint of the first input's first record.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from ...core.diagnostics import TuningError
from .base import Database, copy_records
from .distill import open_database
from .json_db import JSONDatabase
from .reader import open_for_reading


@dataclass(frozen=True)
class MergeReport:
    """What :func:`merge` did: records read from the inputs, records written, and the
    hardware fingerprints seen."""

    output: str
    inputs: int
    read: int
    written: int
    fingerprints: tuple[str, ...]

    @property
    def duplicates(self) -> int:
        """Records not written because the output already had them."""
        return self.read - self.written

    def __str__(self) -> str:
        return (f"merged {self.read} records of {self.inputs} databases into {self.output}: "
                f"{self.written} written, {self.duplicates} duplicates skipped")


def merge(output: str, sources: Sequence[Database], allow_mixed: bool = False) -> MergeReport:
    """Copy the records of ``sources`` (open databases) into the database at ``output``
    (a record file or a work directory; created when missing); see the module
    docstring."""
    output = os.fspath(output)
    for src in sources:
        if src.location and os.path.abspath(src.location) in (
                os.path.abspath(output), os.path.abspath(_record_file(output))):
            raise TuningError(f"cannot merge {src.location} into itself",
                              hint="write the merged records to a new file")
    inputs = [(src.location, src.get_all_records()) for src in sources]
    if os.path.exists(_record_file(output)):
        # The output must hold records already (not a damaged file), of the same machine.
        with open_for_reading(output) as existing:
            inputs.append((existing.location, existing.get_all_records()))
    fingerprints: dict[str, str] = {}  # fingerprint -> the first file holding it
    for location, records in inputs:
        for r in records:
            fingerprints.setdefault(r.fingerprint, location)
    if len(fingerprints) > 1 and not allow_mixed:
        (first, first_at), (other, other_at) = list(fingerprints.items())[:2]
        raise TuningError(
            f"{other_at} holds records measured on {other!r} but {first_at} on {first!r}; "
            "merging would mix the timings of different hardware",
            hint="merge the records of one machine, or pass --allow-mixed to keep both")
    dst = JSONDatabase.from_work_dir(output) if os.path.isdir(output) \
        else open_database(output)
    written = 0
    try:
        for src, (_, records) in zip(sources, inputs):
            written += copy_records(src, dst, records)
    finally:
        dst.close()
    read = sum(len(records) for _, records in inputs[:len(sources)])
    return MergeReport(output=output, inputs=len(sources), read=read, written=written,
                       fingerprints=tuple(fingerprints))


def _record_file(path: str) -> str:
    return os.path.join(path, "database_tuning_record.json") if os.path.isdir(path) else path


__all__ = ["MergeReport", "merge"]
