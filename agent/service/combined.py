"""The agent's combined calls: a status with a wave's document in it, and a wave applied for a
fleet whose release is checked first, answered with the status after it; each one call and one
pass over the cluster where a fleet would otherwise make two or three
(:class:`common.wire.version.Capability` ``status-with-wave`` and ``checked-apply``)."""

from __future__ import annotations

from typing import Any

from agent.service.errors import FleetRefused, InvalidRequest, WaveNotFound
from agent.service.service import AgentService
from common.wire.status import StatusDocument
from common.wire.version import VERSION, drivable
from common.wire.waves import StatusWithWave, WaveDocument


def with_wave(status: StatusDocument, wave: WaveDocument | None) -> StatusWithWave:
    """``status`` (the fields it was built with) with ``wave`` in it."""
    values = {name: getattr(status, name) for name in status.model_fields_set}
    return StatusWithWave.model_validate({**values, "wave": wave})


def status_with_wave(service: AgentService, wave_id: str) -> StatusWithWave:
    """``GET /v1/status?wave={id}``: the status and wave ``wave_id``'s document, read under the
    service's lock in one go (``wave`` None when the agent does not know the wave)."""
    with service.lock:
        status = service.status()
        try:
            wave: WaveDocument | None = service.wave(wave_id)
        except WaveNotFound:
            wave = None
        return with_wave(status, wave)


def apply_checked(
    service: AgentService, wave_id: str, request: Any, fleet_version: str
) -> tuple[bool, StatusWithWave]:
    """``PUT /v1/waves/{id}/checked?fleet={version}``: :meth:`AgentService.apply_wave` for a
    fleet of release ``fleet_version``, refused with :class:`FleetRefused` (nothing applied)
    when the fleet's promise (:func:`common.wire.version.drivable`: the same major, one minor
    either side) does not cover this agent's release; (created, the status after it with the
    wave in it). Raises as ``apply_wave`` does, and InvalidRequest for a version that is not
    one."""
    try:
        refused = drivable(VERSION, fleet_version)
    except ValueError as exc:
        raise InvalidRequest(f"applying wave {wave_id[:80]!r}", [("fleet", str(exc))]) from exc
    if refused is not None:
        raise FleetRefused(str(refused.code), refused.reason)
    with service.lock:
        created, wave = service.apply_wave(wave_id, request)
        return created, with_wave(service.status(), wave)
