"""Prometheus metrics of one gateway (a registry of its own, so tests can run several)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class Metrics:
    def __init__(self) -> None:
        self.registry = reg = CollectorRegistry()
        self.requests = Counter("catp_serve_requests", "Requests, by route and outcome", ["route", "outcome"],
                                registry=reg)
        self.prune_seconds = Histogram("catp_serve_prune_seconds", "Time to plan and prune one request "
                                       "(queue wait excluded)", buckets=LATENCY_BUCKETS, registry=reg)
        self.tokens_before = Counter("catp_serve_prompt_tokens_before", "Prompt tokens of pruned requests, "
                                     "before pruning", registry=reg)
        self.tokens_after = Counter("catp_serve_prompt_tokens_after", "Prompt tokens of pruned requests, "
                                    "after pruning", registry=reg)
        self.dropped_protected = Counter("catp_serve_dropped_protected_spans", "Protected spans the budget "
                                         "forced out", registry=reg)
        self.upstream_seconds = Histogram("catp_serve_upstream_seconds", "Upstream time to response headers",
                                          ["route"], buckets=LATENCY_BUCKETS, registry=reg)
        self.in_flight = Gauge("catp_serve_requests_in_flight", "Requests being handled", registry=reg)
        self.queue_depth = Gauge("catp_serve_prune_queue_depth", "Pruning jobs waiting or running",
                                 registry=reg)
        self.reprunes = Counter("catp_serve_reprunes", "Requests pruned again after an upstream "
                                "400-for-length", registry=reg)
