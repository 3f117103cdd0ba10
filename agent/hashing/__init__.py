"""Static-drift hashes: NodePool and EC2NodeClass hashed exactly as Karpenter hashes them (Go
values and hashstructure, gohash.py and hashtypes.py), the stamps on a NodeClaim (stamps.py) and
the report of ``driftwave agent hash`` (report.py)."""
