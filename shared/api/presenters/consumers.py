"""Consumers as the management API shows them: masked keys, except the once-only new key."""

from __future__ import annotations

from shared.api.schemas.consumers import (
    ConsumerCreateResponse,
    ConsumerDeleteResponse,
    ConsumerListItem,
    ConsumerUpdateResponse,
)
from shared.db.models import Consumer
from shared.services.consumers import CreatedConsumer


def consumer_created(created: CreatedConsumer) -> ConsumerCreateResponse:
    consumer = created.consumer
    return ConsumerCreateResponse(id=consumer.id, name=consumer.name, api_key=created.api_key, created_at=consumer.created_at)


def consumer_list_item(consumer: Consumer) -> ConsumerListItem:
    return ConsumerListItem(
        id=consumer.id, name=consumer.name, api_key=consumer.api_key_hint, created_at=consumer.created_at,
        last_used_at=consumer.last_used_at, is_active=consumer.is_active,
    )


def consumer_updated(consumer: Consumer) -> ConsumerUpdateResponse:
    return ConsumerUpdateResponse(id=consumer.id, name=consumer.name, is_active=consumer.is_active)


def consumer_deleted(consumer: Consumer) -> ConsumerDeleteResponse:
    return ConsumerDeleteResponse(message=f"Consumer '{consumer.name}' deleted")
