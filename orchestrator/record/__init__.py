"""Record stage: the result record contract and its idempotent ingestion."""
