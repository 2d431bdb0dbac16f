"""claimwatch evaluator worker: Kafka consumer-group workers that judge RAG answers claim by claim."""
