"""Plain value types shared by every stage of the pipeline (no I/O)."""
