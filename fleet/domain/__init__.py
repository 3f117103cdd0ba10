"""The fleet's domain, pure (no I/O, no database): the ``Fleet`` and ``Release`` manifests
(:mod:`.fleet`, :mod:`.release`, read by :mod:`.manifests`), the plain data the scheduler works
on (:mod:`.model`), maintenance windows and freezes (:mod:`.windows`), wave sizing
(:mod:`.waves`), gate evaluation (:mod:`.gates`), the rollout planner (:mod:`.planner`,
:mod:`.plan`) and the rollout state machine (:mod:`.machine`)."""
