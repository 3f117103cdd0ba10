"""Test servers and helpers of the project's own (loopback HTTP stubs, process runners)."""
