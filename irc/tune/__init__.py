"""Auto-tuning (docstring completed below)."""

from .builder import LocalBuilder
from .database import (
    Database,
    JSONDatabase,
    LoadReport,
    SQLiteDatabase,
    distill,
    open_database,
)
from .measure import (
    Builder,
    BuildResult,
    MeasureInput,
    MeasureResult,
    ProgramMeasurer,
    RecordToDatabase,
    Runner,
    RunResult,
    apply_trace,
)
from .record import MeasureErrorKind, TuningRecord, Workload, trace_key, workload_key
from .runner import LocalRunner
