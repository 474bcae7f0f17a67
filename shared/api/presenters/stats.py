"""Usage statistics as the management API shows them: the service's figures, field for field."""

from __future__ import annotations

from shared.api.schemas.stats import ConsumerStatsResponse, EngineStatsResponse, TenantStatsResponse
from shared.services.stats import ConsumerStats, EngineStats, TenantStats


def tenant_stats(stats: TenantStats) -> TenantStatsResponse:
    return TenantStatsResponse.model_validate(stats, from_attributes=True)


def engine_stats(stats: EngineStats) -> EngineStatsResponse:
    return EngineStatsResponse.model_validate(stats, from_attributes=True)


def consumer_stats(stats: ConsumerStats) -> ConsumerStatsResponse:
    return ConsumerStatsResponse.model_validate(stats, from_attributes=True)
