//! Block formats (placeholder; being written).
