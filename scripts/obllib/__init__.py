# SPDX-License-Identifier: MIT
"""Shared code of the obl benchmark-suite scripts.

The scripts measure nothing: obl-bench measures, these modules read what it
wrote (its JSONL records, the run wrapper's full-run logs, REPORT lines from
any implementation's logs) and turn it into tables, fits and figures.

  parse    REPORT lines, obl-bench JSONL, full-run logs -> normalised records
  stats    quantiles, spreads, number formatting
  plan     case identities, editable case lists, bulk edits
  runner   one process per case, timeouts, memory check, full-run log
  results  results/ (JSON, CSV, per-benchmark CSV)
  tables   Markdown tables and the README refresh
  fits     least-squares decompositions with standard errors (DERIVED)
  loc      lines-of-code table
  figures  PNG figures (matplotlib, Agg)
"""
