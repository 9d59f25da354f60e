"""The streaming benchmark: workload, client, metrics, thresholds, baseline, reports."""
