"""The fleet↔agent contract across versions: golden documents per version (``v0.1/``,
``v0.2/``), the recorder that writes them (:mod:`tests.contract.record`) and the tests that
replay each version's documents against the other version's readers."""
