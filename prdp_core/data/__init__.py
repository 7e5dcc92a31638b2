"""Data intake: schemas, loading and its limits, datasets, samples, profiles and the memory budget.

Above the privacy core and the file helpers, below the engines (docs/architecture.md, *Layers*). The dataset
module's public names are the package's too: ``from prdp_core.data import Dataset`` reads as it always did.
"""

from __future__ import annotations

from .dataset import (
    GENERATED_ID,
    MISSING_GROUP,
    SUPPORTED_EXTENSIONS,
    Dataset,
    MeasureIssue,
    Preparation,
    Schema,
    TableCheck,
    as_measure_array,
    check_table,
    dataset_from_frame,
    guess_schema,
    load_table,
    numeric_columns,
    prepare_dataset,
    preview,
    shift_text,
    strictly_increasing,
    validate_roles,
    validate_schema,
)

__all__ = ["GENERATED_ID", "MISSING_GROUP", "SUPPORTED_EXTENSIONS", "Dataset", "MeasureIssue", "Preparation", "Schema",
           "TableCheck", "as_measure_array", "check_table", "dataset_from_frame", "guess_schema", "load_table",
           "numeric_columns", "prepare_dataset", "preview", "shift_text", "strictly_increasing", "validate_roles",
           "validate_schema"]
