"""Prometheus metrics of one app: requests and latency per route, jobs stored, estimate age and refits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from ._observer import RequestObserver

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The metrics of one service instance, in a registry of their own (tests build many apps)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "iosets_http_requests", "HTTP requests.", ["route", "method", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "iosets_http_request_seconds",
            "HTTP request latency.",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.jobs_stored = Gauge("iosets_jobs_stored", "Jobs in the store.", registry=self.registry)
        self.estimate_age = Gauge(
            "iosets_estimate_age_seconds", "Seconds since the recommender was last fitted.", registry=self.registry
        )
        self.refit_seconds = Histogram("iosets_refit_seconds", "Recommender refit duration.", registry=self.registry)
        self.refits = Counter("iosets_refits", "Recommender refits.", registry=self.registry)

    def watch_estimate(self, fitted_at: Callable[[], float | None]) -> None:
        """Report the estimate's age from ``fitted_at()`` (None: never fitted, age 0)."""
        self.estimate_age.set_function(lambda: 0.0 if (t := fitted_at()) is None else time.time() - t)

    def text(self) -> bytes:
        """The Prometheus exposition text."""
        return generate_latest(self.registry)


class MetricsMiddleware(RequestObserver):
    """Pure ASGI middleware counting each request and timing it under its route's path template."""

    def __init__(self, app: Any, metrics: Metrics):
        super().__init__(app)
        self.metrics = metrics
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}  # labels() costs a lookup under a lock

    def observe(self, scope: dict, route: str, status: int, seconds: float) -> None:
        key = (route, scope["method"], status)  # routes are templates, methods those HTTP parsers know: few
        series = self._series.get(key)
        if series is None:
            requests = self.metrics.requests.labels(route, key[1], str(status))
            series = self._series[key] = (requests, self.metrics.latency.labels(route))
        series[0].inc()
        series[1].observe(seconds)
