"""The BEIR evaluation harness (`quarry eval`, the quality benches): loading a BEIR collection
(datasets.py), running every strategy over it (evaluation.py), reporting the run (report.py), and the
on-disk embedding cache the runs share (embedding_cache.py). Local only: none of it ships in the Lambda
artifact (deploy/lambda_artifact.py)."""
