"""Stage "report": tables and summaries of stored results for people and scripts."""
