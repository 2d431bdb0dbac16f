"""What the collector and the evaluator worker share, and nothing else.

- :mod:`contract.record`  the wire record (``RagTrace``), its size limits and slice labels
- :mod:`contract.failures`  the failure taxonomy (the kind of unfaithfulness every flagged claim carries)
- :mod:`contract.judge_ids`  the judge id's format (``kind:model+model@digest``) and how to read it back
- :mod:`contract.families`  model families (a judge that shares the generator's family flatters it)
- :mod:`contract.kafka`   how to reach a Kafka cluster (``KafkaConnection``)
- :mod:`contract.errors`  the base error hierarchy both packages raise
- :mod:`contract.logs`    structlog set-up and the secret-masking processor

It imports neither side; an import-boundary test keeps it so.
"""
