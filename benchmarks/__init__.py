"""claimwatch performance benchmarks: one runnable module per benchmark.

Run from the repository root, each prints its headline figure on its LAST line::

    python -m benchmarks.app_overhead      # RagTraceProcessor vs BatchSpanProcessor on the app thread
    python -m benchmarks.worker_throughput # records/s per worker, time outside the judge, 1 vs 2 processes
    python -m benchmarks.freshness         # span end -> Prometheus counter visible, p50/p95
    python -m benchmarks.judge_economy     # LLM calls and tokens per answer vs Ragas-style / per-claim
    python -m benchmarks.memory            # collector and worker memory under a 10x burst
    python -m benchmarks.receiver_load     # OTLP receiver under load and hostile load: spans/s, RSS, resets, codes

Results and how to read them: docs/performance.md.
"""
