"""Many journals: the database as partitioned Parquet, and the same parsers and queries on Apache Spark."""
